"""InsertField: add the record's topic, partition, offset, timestamp or a constant as a field."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from copycat_transforms._datefmt import epoch_datetime
from copycat_transforms._structcode import compile_struct_function, prelude
from copycat_transforms._util import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    SCHEMA_CACHE_SIZE,
    KeySide,
    SchemaCache,
    SideAware,
    StructPlan,
    ValueSide,
    VersionedPlugin,
    copy_schema_basics,
    define_replace_null_with_default,
    field_value,
    require_map,
    require_sink_record,
    require_struct,
)
from plugin_api import (
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    AbstractConfig,
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectRecord,
    Importance,
    Schema,
    SchemaBuilder,
    SinkRecord,
    Struct,
    Timestamp,
    Transformation,
    Type,
)

__all__ = ["InsertField", "InsertFieldKey", "InsertFieldValue"]

TOPIC_FIELD = "topic.field"
PARTITION_FIELD = "partition.field"
OFFSET_FIELD = "offset.field"
TIMESTAMP_FIELD = "timestamp.field"
STATIC_FIELD = "static.field"
STATIC_VALUE = "static.value"

PURPOSE = "field insertion"

_OPTIONALITY_DOC = (
    " Suffix with <code>!</code> to make this a required field, or <code>?</code> to keep "
    "it optional (the default)."
)

CONFIG_DEF = define_replace_null_with_default(
    ConfigDef()
    .define(
        TOPIC_FIELD,
        ConfigType.STRING,
        None,
        importance=Importance.MEDIUM,
        documentation="Field name for Kafka topic." + _OPTIONALITY_DOC,
    )
    .define(
        PARTITION_FIELD,
        ConfigType.STRING,
        None,
        importance=Importance.MEDIUM,
        documentation="Field name for Kafka partition." + _OPTIONALITY_DOC,
    )
    .define(
        OFFSET_FIELD,
        ConfigType.STRING,
        None,
        importance=Importance.MEDIUM,
        documentation="Field name for Kafka offset - only applicable to sink connectors."
        + _OPTIONALITY_DOC,
    )
    .define(
        TIMESTAMP_FIELD,
        ConfigType.STRING,
        None,
        importance=Importance.MEDIUM,
        documentation="Field name for record timestamp." + _OPTIONALITY_DOC,
    )
    .define(
        STATIC_FIELD,
        ConfigType.STRING,
        None,
        importance=Importance.MEDIUM,
        documentation="Field name for static data field." + _OPTIONALITY_DOC,
    )
    .define(
        STATIC_VALUE,
        ConfigType.STRING,
        None,
        importance=Importance.MEDIUM,
        documentation="Static field value, if field name configured.",
    )
)


_Plan = tuple[Schema, StructPlan, list[Schema]]
_Fast = Callable[[list[Any], ConnectRecord], Struct | None]
# The range of each integer field an inserted value may go into (as Struct.put checks it).
_INT_RANGES = {Type.INT32: (-(2**31), 2**31 - 1), Type.INT64: (-(2**63), 2**63 - 1)}


@dataclass(frozen=True)
class InsertionSpec:
    """A field to insert: its name and whether the new field is optional."""

    name: str
    optional: bool

    @classmethod
    def parse(cls, spec: str | None) -> InsertionSpec | None:
        """Parse ``name``, ``name?`` (optional) or ``name!`` (required); blank means none."""
        if not spec:
            return None
        if spec.endswith("?"):
            return cls(spec[:-1], True)
        if spec.endswith("!"):
            return cls(spec[:-1], False)
        return cls(spec, True)


class InsertField(VersionedPlugin, SideAware, Transformation[ConnectRecord]):
    """Insert field(s) using attributes from the record metadata or a configured static value.

    Use :class:`InsertFieldKey` or :class:`InsertFieldValue`. Tombstones (a null
    key or value) pass through unchanged. Schemaful data gets fields of type
    string (topic, static), int32 (partition), int64 (offset) and the Timestamp
    logical type (timestamp); schemaless data gets the raw values (the timestamp
    as epoch milliseconds).
    """

    def __init__(self) -> None:
        """Create an unconfigured transform."""
        self._topic: InsertionSpec | None = None
        self._partition: InsertionSpec | None = None
        self._offset: InsertionSpec | None = None
        self._timestamp: InsertionSpec | None = None
        self._static: InsertionSpec | None = None
        self._static_value: str | None = None
        self._replace_null_with_default = True
        self._cache = SchemaCache()
        self._plans: dict[Schema, tuple[_Plan, _Fast]] = {}
        self._last_timestamp: tuple[object, datetime] = (None, _EPOCH)
        self._last_schema: Schema | None = None
        self._last_plan: tuple[Schema, StructPlan, list[Schema]] = (
            Schema.STRING_SCHEMA,
            StructPlan(SchemaBuilder.struct().build(), False),
            [],
        )
        self._last_fast: _Fast = _no_fast_path
        self._last_updated: Schema = Schema.STRING_SCHEMA
        self._on_value = getattr(self, "SIDE", "value") == "value"
        # the side's copiers, read per record: an instance attribute is found faster
        self._copiers: dict[type, Callable[..., Any]] = getattr(self, "COPIERS", {})

    def config(self) -> ConfigDef:
        """Return the field-name keys and ``replace.null.with.default``."""
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, object]) -> None:
        """Parse the field specs.

        Raises:
            ConfigException: Naming the key with an invalid value; no field to insert
                ("No field insertion configured"), or a static field without a value.
        """
        conf = AbstractConfig(CONFIG_DEF, configs)
        self._topic = InsertionSpec.parse(conf.get_string(TOPIC_FIELD))
        self._partition = InsertionSpec.parse(conf.get_string(PARTITION_FIELD))
        self._offset = InsertionSpec.parse(conf.get_string(OFFSET_FIELD))
        self._timestamp = InsertionSpec.parse(conf.get_string(TIMESTAMP_FIELD))
        self._static = InsertionSpec.parse(conf.get_string(STATIC_FIELD))
        self._static_value = conf.get_string(STATIC_VALUE)
        # Kafka's configure-time checks: without them the transform ran as a silent no-op.
        fields = (self._topic, self._partition, self._offset, self._timestamp, self._static)
        if all(spec is None for spec in fields):
            raise ConfigException("No field insertion configured")
        if self._static is not None and self._static_value is None:
            raise ConfigException(
                STATIC_VALUE, None, f"No value specified for static field: {self._static.name}"
            )
        self._replace_null_with_default = bool(conf.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))
        self._cache = SchemaCache()
        self._plans = {}
        self._last_schema = None
        self._last_fast = _no_fast_path

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return a copy of ``record`` with the configured fields added."""
        if self._on_value:
            value, schema = record.value, record.value_schema
        else:
            value, schema = record.key, record.key_schema
        if value is None:
            return record
        if schema is None:
            return self._apply_schemaless(record, value)
        if type(value) is Struct:
            struct_schema = value.schema
            if struct_schema is not self._last_schema:
                self._plan(struct_schema)
            updated = self._last_fast(value.field_values(), record)
            if updated is not None:
                copy = self._copiers.get(type(record)) or self.side_copier(record)
                return copy(record, self._last_updated, updated)  # type: ignore[no-any-return]
        return self._apply_with_schema(record, value)

    def _apply_schemaless(self, record: ConnectRecord, raw: object) -> ConnectRecord:
        updated: dict[str, Any] = dict(require_map(raw, PURPOSE))
        if self._topic is not None:
            updated[self._topic.name] = record.topic
        if self._partition is not None:
            updated[self._partition.name] = record.kafka_partition
        if self._offset is not None:
            updated[self._offset.name] = require_sink_record(record, PURPOSE).kafka_offset
        if self._timestamp is not None:
            updated[self._timestamp.name] = record.timestamp
        if self._static is not None:
            updated[self._static.name] = self._static_value
        return self.new_record(record, None, updated)  # type: ignore[no-any-return]

    def _apply_with_schema(self, record: ConnectRecord, raw: object) -> ConnectRecord:
        """The input's values copied unchecked (a valid struct's), the inserted ones checked
        as put() would; see :meth:`_apply_rebuilding` for the reference behaviour."""
        value = (
            raw
            if type(raw) is Struct
            else require_struct(raw, PURPOSE, self.operating_schema(record))
        )
        schema = value.schema
        plan = self._last_plan if schema is self._last_schema else self._plan(schema)
        updated_schema, fields, inserted = plan
        values = value.field_values()
        if None in values:
            for index, default in fields.defaults:
                if values[index] is None:
                    values[index] = default
            if fields.required and any(values[index] is None for index in fields.required):
                return self._apply_rebuilding(record, raw)  # raises put()'s error
        schemas = iter(inserted)
        if self._topic is not None:
            values.append(_checked(next(schemas), self._topic.name, record.topic))
        if self._partition is not None:
            partition = record.kafka_partition
            field_schema = next(schemas)
            if partition is not None:
                _checked(field_schema, self._partition.name, partition)
            values.append(partition)
        if self._offset is not None:
            offset = require_sink_record(record, PURPOSE).kafka_offset
            values.append(_checked(next(schemas), self._offset.name, offset))
        if self._timestamp is not None:
            next(schemas)
            timestamp = record.timestamp
            if timestamp is None:
                values.append(None)
            elif type(timestamp) is int and timestamp == self._last_timestamp[0]:
                values.append(self._last_timestamp[1])  # (datetimes are immutable: shared)
            else:
                # Timestamp.to_logical(Timestamp.SCHEMA, timestamp), inlined: a datetime,
                # which is what the field takes (no check needed). Records produced in the
                # same millisecond, most of them at 100k records/s, share the last one.
                stamp = epoch_datetime(timestamp)
                self._last_timestamp = (timestamp, stamp)
                values.append(stamp)
        if self._static is not None:
            values.append(_checked(next(schemas), self._static.name, self._static_value))
        return self.new_record(  # type: ignore[no-any-return]
            record, updated_schema, Struct.from_values(updated_schema, values, validate=False)
        )

    def _plan(self, schema: Schema) -> tuple[Schema, StructPlan, list[Schema]]:
        """The updated schema, what to know of the input's fields, the inserted fields'
        schemas in insertion order; remembered for the last SCHEMA_CACHE_SIZE schemas with
        the compiled function of the schema, which apply() finds by identity."""
        found = self._plans.get(schema)
        if found is None:
            updated = self._cache.get(schema) or self._cache.put(
                schema, self._updated_schema(schema)
            )
            inserted = [field.schema for field in updated.fields[len(schema.fields) :]]
            plan = (updated, StructPlan(schema, self._replace_null_with_default), inserted)
            found = (plan, self._compile(schema, updated, inserted))
            if len(self._plans) >= SCHEMA_CACHE_SIZE:
                self._plans.clear()
            self._plans[schema] = found
        self._last_schema, self._last_plan = schema, found[0]
        self._last_fast, self._last_updated = found[1], found[0][0]
        return found[0]

    def _compile(self, schema: Schema, updated: Schema, inserted: list[Schema]) -> _Fast:
        """``f(values, record) -> the updated struct`` for the usual shapes, None otherwise
        (then :meth:`_apply_with_schema` gives the result or the error)."""
        specs = iter(inserted)

        def int_test(field_schema: Schema) -> str:
            low, high = _INT_RANGES[field_schema.type]
            return f"type(x) is not int or not {low} <= x <= {high}"

        def body(const: Callable[[object], str]) -> list[str]:
            lines = prelude(schema, self._replace_null_with_default, const)
            if self._topic is not None:
                next(specs)  # a plain STRING field: any str fits
                lines += ["x = record.topic", "if type(x) is not str:", "    return None"]
                lines += ["v.append(x)"]
            if self._partition is not None:
                test = int_test(next(specs))
                lines += ["x = record.kafka_partition", f"if x is not None and ({test}):"]
                lines += ["    return None", "v.append(x)"]
            if self._offset is not None:
                test = int_test(next(specs))
                lines += [f"if type(record) is not {const(SinkRecord)}:", "    return None"]
                lines += ["x = record.kafka_offset", f"if {test}:", "    return None"]
                lines += ["v.append(x)"]
            if self._timestamp is not None:
                next(specs)  # a datetime fits the Timestamp field: no check
                last = const([None, _EPOCH])  # records of one millisecond share the datetime
                lines += [
                    "x = record.timestamp",
                    "if x is None:",
                    "    v.append(None)",
                    "elif type(x) is not int:",
                    "    return None",
                    f"elif x == {last}[0]:",
                    f"    v.append({last}[1])",
                    "else:",
                    "    try:",
                    f"        {last}[1] = _EPOCH + _timedelta(milliseconds=x)",
                    "    except OverflowError:",  # beyond year 9999: the general path says so
                    "        return None",
                    f"    {last}[0] = x",
                    f"    v.append({last}[1])",
                ]
            if self._static is not None:
                try:  # a constant: checked once, here
                    _checked(next(specs), self._static.name, self._static_value)
                except Exception:  # noqa: BLE001 - the general path raises it per record
                    return [*lines, "return None"]
                lines += [f"v.append({const(self._static_value)})"]
            return lines

        # (the general path builds structs of the cached updated schema too: the same object)
        return compile_struct_function(
            "v, record", updated, body, {"_EPOCH": _EPOCH, "_timedelta": timedelta}
        )

    def _apply_rebuilding(self, record: ConnectRecord, raw: object) -> ConnectRecord:
        """Kafka's way: a new struct, every field put (and so checked) again. The reference
        for :meth:`_apply_with_schema`, which checks only what it adds (tests compare them)."""
        value = require_struct(raw, PURPOSE, self.operating_schema(record))
        updated_schema = self._cache.get(value.schema) or self._cache.put(
            value.schema, self._updated_schema(value.schema)
        )
        updated = Struct(updated_schema)
        for field in value.schema.fields:
            updated.put(field.name, field_value(value, field.name, self._replace_null_with_default))
        if self._topic is not None:
            updated.put(self._topic.name, record.topic)
        if self._partition is not None and record.kafka_partition is not None:
            updated.put(self._partition.name, record.kafka_partition)
        if self._offset is not None:
            updated.put(self._offset.name, require_sink_record(record, PURPOSE).kafka_offset)
        if self._timestamp is not None and record.timestamp is not None:
            updated.put(
                self._timestamp.name, Timestamp.to_logical(Timestamp.SCHEMA, record.timestamp)
            )
        if self._static is not None:
            updated.put(self._static.name, self._static_value)
        return self.new_record(record, updated_schema, updated)  # type: ignore[no-any-return]

    def _updated_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            builder.field(field.name, field.schema)
        if self._topic is not None:
            optional = self._topic.optional
            builder.field(self._topic.name, OPTIONAL_STRING_SCHEMA if optional else STRING_SCHEMA)
        if self._partition is not None:
            optional = self._partition.optional
            builder.field(self._partition.name, OPTIONAL_INT32_SCHEMA if optional else INT32_SCHEMA)
        if self._offset is not None:
            optional = self._offset.optional
            builder.field(self._offset.name, OPTIONAL_INT64_SCHEMA if optional else INT64_SCHEMA)
        if self._timestamp is not None:
            builder.field(
                self._timestamp.name,
                Timestamp.builder().optional().build()
                if self._timestamp.optional
                else Timestamp.SCHEMA,
            )
        if self._static is not None:
            optional = self._static.optional
            builder.field(self._static.name, OPTIONAL_STRING_SCHEMA if optional else STRING_SCHEMA)
        if schema.optional:
            builder.optional()
        return builder.build()


def _no_fast_path(values: list[Any], record: ConnectRecord) -> None:
    """The compiled function before the first schema is seen."""
    return None


def _checked(schema: Schema, name: str, value: object) -> object:
    """``value``, checked against its field as Struct.put checks it."""
    if type(value) is not str or schema.name is not None:  # a str always fits a STRING field
        schema.validate_value(value, name)
    return value


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class InsertFieldKey(KeySide, InsertField):
    """InsertField on the record key."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.InsertField$Key",)


class InsertFieldValue(ValueSide, InsertField):
    """InsertField on the record value."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.InsertField$Value",)
