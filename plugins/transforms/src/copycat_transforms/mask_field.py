"""MaskField: replace field values with a type-appropriate empty value or a configured one."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable, Mapping
from typing import Any

from copycat_transforms._javanum import big_decimal_long, java_big_decimal, to_float32, wrap
from copycat_transforms._structcode import MASK_ZEROS, compile_struct_function, prelude
from copycat_transforms._util import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    SCHEMA_CACHE_SIZE,
    KeySide,
    SideAware,
    StructPlan,
    ValueSide,
    VersionedPlugin,
    define_replace_null_with_default,
    field_value,
    java_class,
    non_empty_list,
    require_map,
    require_struct,
)
from plugin_api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectRecord,
    DataException,
    Importance,
    NonEmptyString,
    Schema,
    Struct,
    Transformation,
    Type,
)

__all__ = ["MaskField", "MaskFieldKey", "MaskFieldValue"]

FIELDS_CONFIG = "fields"
REPLACEMENT_CONFIG = "replacement"
PURPOSE = "mask fields"

CONFIG_DEF = define_replace_null_with_default(
    ConfigDef()
    .define(
        FIELDS_CONFIG,
        ConfigType.LIST,
        validator=non_empty_list,
        importance=Importance.HIGH,
        documentation="Names of fields to mask.",
    )
    .define(
        REPLACEMENT_CONFIG,
        ConfigType.STRING,
        None,
        NonEmptyString(),
        Importance.LOW,
        "Custom value replacement, that will be applied to all 'fields' values "
        "(numeric or non-empty string values only).",
    )
)

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _empty_of(value: object) -> object:
    """The value Kafka masks with when no replacement is configured (Java's zero values)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        return 0.0
    if isinstance(value, decimal.Decimal):
        return decimal.Decimal(0)
    if isinstance(value, str):
        return ""
    # java.util.Date(0), whichever logical type (Timestamp, Date, Time) holds it.
    if isinstance(value, datetime.datetime):
        return _EPOCH
    if isinstance(value, datetime.date):
        return _EPOCH.date()
    if isinstance(value, datetime.time):
        return datetime.time(0)
    if isinstance(value, (list, tuple)):
        return []
    if isinstance(value, Mapping):
        return {}
    raise DataException(f"Cannot mask value of type: {java_class(value)}")


# Exact types whose masked value is an immutable constant (the common case, no isinstance
# chain); everything else goes through _empty_of.
_IMMUTABLE_EMPTY: dict[type, object] = {bool: False, int: 0, float: 0.0, str: ""}
_NO_EMPTY = object()
# A compiled function: (the struct's values, the maker of its schema) -> masked struct or None
_Fast = Callable[[list[Any], Callable[[list[Any]], Struct] | None], Struct | None]


_INT_BITS = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}


def _java_number(text: str) -> decimal.Decimal:
    """The replacement as Kafka's Values.convertToLong/Double read a string (a BigDecimal),
    with their error."""
    try:
        return java_big_decimal(text)
    except ValueError as exc:
        raise DataException(
            f"Unable to convert {text} (class java.lang.String) to a number"
        ) from exc


def _replacement_parser(value: object, schema: Schema | None) -> Callable[[str], object] | None:
    """How Kafka's MaskField converts the replacement for ``value`` (of ``schema``, the
    field's, if any: an int without one is a Long): Values.convertToByte/Short/Integer/Long
    (a BigDecimal's long, narrowed as a cast does: ``12.5`` is 12, ``300`` a byte 44),
    convertToFloat/Double, ``new BigDecimal``; None for a type it cannot replace."""
    if isinstance(value, bool):
        return None
    kind = schema.type if schema is not None else Type.INT64
    if isinstance(value, int):
        bits = _INT_BITS.get(kind, 64)
        return lambda text: wrap(big_decimal_long(_java_number(text)), bits)
    if isinstance(value, float):
        if kind is Type.FLOAT32:
            return lambda text: to_float32(float(_java_number(text)))
        return lambda text: float(_java_number(text))
    if isinstance(value, decimal.Decimal):
        return java_big_decimal
    if isinstance(value, str):
        return str
    return None


class MaskField(VersionedPlugin, SideAware, Transformation[ConnectRecord]):
    """Mask specified fields with a valid null value for the field type (0, false, "", ...).

    With ``replacement`` set, numeric and string fields get that value instead
    (converted to the field's type); other types cannot take a custom
    replacement. As in Kafka, a schemaless value gets every listed field, even
    ones it did not have (set to null). Tombstones pass through unchanged.
    """

    def __init__(self) -> None:
        """Create an unconfigured transform."""
        self._fields: frozenset[str] = frozenset()
        self._field_order: list[str] = []
        self._replacement: str | None = None
        # The replacement converted, per value type and field type (it is one string).
        self._replaced: dict[tuple[type, Type | None], object] = {}
        self._replace_null_with_default = True
        self._plans: dict[Schema, tuple[StructPlan, _Fast | None]] = {}
        self._last_schema: Schema | None = None
        self._last_fast: _Fast | None = None
        self._last_make: Callable[[list[Any]], Struct] | None = None
        self._on_value = getattr(self, "SIDE", "value") == "value"
        # the side's copiers, read per record: an instance attribute is found faster
        self._copiers: dict[type, Callable[..., Any]] = getattr(self, "COPIERS", {})

    def config(self) -> ConfigDef:
        """Return ``fields``, ``replacement`` and ``replace.null.with.default``."""
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, object]) -> None:
        """Read the fields to mask.

        Raises:
            ConfigException: If ``fields`` is empty or ``replacement`` is an empty string.
        """
        conf = AbstractConfig(CONFIG_DEF, configs)
        self._field_order = list(dict.fromkeys(conf.get_list(FIELDS_CONFIG) or []))
        self._fields = frozenset(self._field_order)
        self._replacement = conf.get_string(REPLACEMENT_CONFIG)
        self._replaced = {}
        self._replace_null_with_default = bool(conf.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))
        self._plans = {}
        self._last_schema = self._last_fast = self._last_make = None

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return a copy of ``record`` with the listed fields masked."""
        if self._on_value:
            raw, schema = record.value, record.value_schema
        else:
            raw, schema = record.key, record.key_schema
        # No tombstone shortcut: Kafka's MaskField requires a map or struct, so a null fails
        # ("... found: null"), tolerated and sent to the DLQ like any bad record.
        if schema is None:  # (inline, not a method of its own: as hot as the struct path)
            value = require_map(raw, PURPOSE)
            updated: dict[str, Any] = dict(value)
            if self._replacement is None:  # zero values, inlined: the common configuration
                for name in self._field_order:
                    original = value.get(name)
                    empty = _IMMUTABLE_EMPTY.get(type(original), _NO_EMPTY)
                    updated[name] = empty if empty is not _NO_EMPTY else self._masked(original)
            else:
                for name in self._field_order:
                    updated[name] = self._masked(value.get(name))
            return self.new_record(record, None, updated)  # type: ignore[no-any-return]
        if type(raw) is Struct:
            struct_schema = raw.schema
            if struct_schema is not self._last_schema:
                self._switch(struct_schema)
            fast = self._last_fast
            if fast is not None:
                masked = fast(raw.field_values(), self._last_make)
                if masked is not None:
                    copy = self._copiers.get(type(record)) or self.side_copier(record)
                    return copy(record, struct_schema, masked)  # type: ignore[no-any-return]
        return self._apply_struct(record, raw)

    def _apply_struct(self, record: ConnectRecord, raw: object) -> ConnectRecord:
        """The general path for a struct: the reference of the compiled one (which answers
        only the usual shapes), checking only what it changes; see :meth:`_apply_rebuilding`
        for Kafka's way."""
        struct = (
            raw
            if type(raw) is Struct
            else require_struct(raw, PURPOSE, self.operating_schema(record))
        )
        schema = struct.schema
        plan = self._plan(schema)[0]
        values = struct.field_values()
        if None in values:
            for index, default in plan.defaults:
                if values[index] is None:
                    values[index] = default
            if plan.required and any(values[index] is None for index in plan.required):
                return self._apply_rebuilding(record, struct)  # raises put()'s error
        inline = self._replacement is None
        for index, field in plan.masked:
            original = values[index]
            if inline:  # the zero of an int, str, bool or float is valid wherever it was
                masked = _IMMUTABLE_EMPTY.get(type(original), _NO_EMPTY)
                if masked is not _NO_EMPTY:
                    values[index] = masked
                    continue
            masked = self._masked(original, field.schema)
            field.schema.validate_value(masked, field.name)
            values[index] = masked
        return self.new_record(  # type: ignore[no-any-return]
            record, schema, Struct.from_values(schema, values, validate=False)
        )

    def _apply_rebuilding(self, record: ConnectRecord, struct: Struct) -> ConnectRecord:
        """Kafka's way: a new struct, every field put (and so checked) again. The reference
        for :meth:`apply`, which checks only what it changes (tests compare the two)."""
        masked = Struct(struct.schema)
        for field in struct.schema.fields:
            original = field_value(struct, field.name, self._replace_null_with_default)
            masked.put(
                field,
                self._masked(original, field.schema) if field.name in self._fields else original,
            )
        return self.new_record(record, struct.schema, masked)  # type: ignore[no-any-return]

    def _plan(self, schema: Schema) -> tuple[StructPlan, _Fast | None]:
        """The plan of ``schema`` and its compiled function (cached by equality)."""
        found = self._plans.get(schema)
        if found is None:
            plan = StructPlan(schema, self._replace_null_with_default, self._fields)
            found = (plan, self._compile(schema, plan))
            if len(self._plans) >= SCHEMA_CACHE_SIZE:
                self._plans.clear()
            self._plans[schema] = found
        return found

    def _switch(self, schema: Schema) -> None:
        """Make ``schema`` the one apply() finds by identity: its compiled function and the
        maker of structs of exactly this schema object (the general path builds those)."""
        fast = self._plan(schema)[1]
        self._last_schema, self._last_fast = schema, fast
        self._last_make = Struct.maker(schema) if fast is not None else None

    def _compile(self, schema: Schema, plan: StructPlan) -> _Fast | None:
        """``f(values, make) -> masked struct`` for the usual shapes (None: use the general
        path), with the zero values only; a custom replacement always takes the general
        path."""
        if self._replacement is not None:
            return None

        def body(const: Callable[[object], str]) -> list[str]:
            lines = prelude(schema, self._replace_null_with_default, const)
            for index, field in plan.masked:
                # by the value's exact type, as the general path (a Timestamp's datetime, a
                # float field's int, ... fall back to it)
                zero = MASK_ZEROS.get(field.schema.type)
                if zero is None:
                    lines += [f"if v[{index}] is not None:", "    return None"]
                    continue
                kind, value = zero
                lines += [
                    f"if type(v[{index}]) is {const(kind)}:",
                    f"    v[{index}] = {value!r}",
                    f"elif v[{index}] is not None:",
                    "    return None",
                ]
            return lines

        return compile_struct_function("v, make", None, body)

    def _masked(self, value: object, schema: Schema | None = None) -> object:
        """The masked ``value`` (of field schema ``schema``, if any)."""
        if value is None:
            return None
        if self._replacement is None:
            empty = _IMMUTABLE_EMPTY.get(type(value), _NO_EMPTY)
            return empty if empty is not _NO_EMPTY else _empty_of(value)
        key = (type(value), schema.type if schema is not None else None)
        replaced = self._replaced.get(key, _NO_EMPTY)
        if replaced is not _NO_EMPTY:
            return replaced
        parse = _replacement_parser(value, schema)
        if parse is None:
            raise DataException(
                f"Cannot mask value of type {java_class(value)} with custom replacement."
            )
        try:
            replaced = self._replaced[key] = parse(self._replacement)
            return replaced
        except (ValueError, ArithmeticError) as exc:
            raise DataException(
                f"Unable to convert {self._replacement} (class java.lang.String) to number"
            ) from exc


class MaskFieldKey(KeySide, MaskField):
    """MaskField on the record key."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.MaskField$Key",)


class MaskFieldValue(ValueSide, MaskField):
    """MaskField on the record value."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.MaskField$Value",)
