"""TimestampConverter: convert timestamps between strings, epoch numbers and Date/Time/Timestamp."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from copycat_transforms._datefmt import JavaDateFormat, epoch_datetime
from copycat_transforms._util import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    KeySide,
    NullPointerException,
    SchemaCache,
    SideAware,
    ValueSide,
    VersionedPlugin,
    config_error,
    copy_schema_basics,
    define_replace_null_with_default,
    field_value,
    java_class,
    require_map_or_null,
    require_struct_or_null,
    struct_fields,
)
from plugin_api import (
    INT64_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    AbstractConfig,
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectException,
    ConnectRecord,
    DataException,
    Date,
    Importance,
    Schema,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
    Transformation,
    Type,
    ValidString,
)

__all__ = ["TimestampConverter", "TimestampConverterKey", "TimestampConverterValue"]

FIELD_CONFIG = "field"
TARGET_TYPE_CONFIG = "target.type"
FORMAT_CONFIG = "format"
UNIX_PRECISION_CONFIG = "unix.precision"
# Kafka's TimestampConverter parses a string with its format unchecked: without one (a
# target type that needs none), the JVM's helpful NullPointerException message is what its
# DLQ and task trace carry.
NO_FORMAT_TO_PARSE_MESSAGE = (
    'Cannot invoke "java.text.SimpleDateFormat.parse(String)" because "config.format" is null'
)
PURPOSE = "converting timestamp formats"

TYPE_STRING = "string"
TYPE_UNIX = "unix"
TYPE_DATE = "Date"
TYPE_TIME = "Time"
TYPE_TIMESTAMP = "Timestamp"

# unix.precision -> (epoch units per millisecond as (multiplier, divisor)).
_PRECISIONS = {
    "seconds": (1, 1000),
    "milliseconds": (1, 1),
    "microseconds": (1000, 1),
    "nanoseconds": (1_000_000, 1),
}
_MS_PER_DAY = 86_400_000


def _check_format(name: str, value: object) -> None:
    if value:
        try:
            JavaDateFormat(str(value))
        except ValueError as exc:
            raise ConfigException(
                name,
                value,
                "TimestampConverter requires a SimpleDateFormat-compatible pattern for string "
                f"timestamps: {value} ({exc})",
            ) from None


CONFIG_DEF = define_replace_null_with_default(
    ConfigDef()
    .define(
        FIELD_CONFIG,
        ConfigType.STRING,
        "",
        importance=Importance.HIGH,
        documentation="The field containing the timestamp, or empty if the entire value "
        "is a timestamp",
    )
    .define(
        TARGET_TYPE_CONFIG,
        ConfigType.STRING,
        validator=ValidString.in_(TYPE_STRING, TYPE_UNIX, TYPE_DATE, TYPE_TIME, TYPE_TIMESTAMP),
        importance=Importance.HIGH,
        documentation="The desired timestamp representation: string, unix, Date, Time, or "
        "Timestamp",
    )
    .define(
        FORMAT_CONFIG,
        ConfigType.STRING,
        "",
        _check_format,
        Importance.MEDIUM,
        "A SimpleDateFormat-compatible format for the timestamp. Used to generate the "
        "output when type=string or used to parse the input if the input is a string.",
    )
    .define(
        UNIX_PRECISION_CONFIG,
        ConfigType.STRING,
        "milliseconds",
        ValidString.in_("nanoseconds", "microseconds", "milliseconds", "seconds"),
        Importance.LOW,
        "The desired Unix precision for the timestamp: seconds, milliseconds, microseconds, "
        "or nanoseconds. Used to generate the output when type=unix or used to parse the "
        "input if the input is a Long.",
    )
)


def _trunc_div(value: int, divisor: int) -> int:
    """Integer division truncating toward zero, as Java's ``/`` and ``TimeUnit`` do."""
    quotient = abs(value) // divisor
    return quotient if value >= 0 else -quotient


def _schema_for(target: str, optional: bool) -> Schema:
    if target == TYPE_STRING:
        return OPTIONAL_STRING_SCHEMA if optional else STRING_SCHEMA
    if target == TYPE_UNIX:
        return OPTIONAL_INT64_SCHEMA if optional else INT64_SCHEMA
    if target == TYPE_DATE:
        builder, schema = Date.builder(), Date.SCHEMA
    elif target == TYPE_TIME:
        builder, schema = Time.builder(), Time.SCHEMA
    else:
        builder, schema = Timestamp.builder(), Timestamp.SCHEMA
    return builder.optional().build() if optional else schema


def _type_of_schema(schema: Schema) -> str:
    if schema.name == Timestamp.LOGICAL_NAME:
        return TYPE_TIMESTAMP
    if schema.name == Date.LOGICAL_NAME:
        return TYPE_DATE
    if schema.name == Time.LOGICAL_NAME:
        return TYPE_TIME
    if schema.type is Type.STRING:
        return TYPE_STRING
    if schema.type is Type.INT64:
        return TYPE_UNIX
    # Kafka names the schema by ConnectSchema.toString: Schema{name:TYPE}, or Schema{TYPE}.
    shown = schema.type.name if schema.name is None else f"{schema.name}:{schema.type.name}"
    raise ConnectException(
        f"Schema Schema{{{shown}}} does not correspond to a known timestamp type format"
    )


def _type_of_value(value: object) -> str:
    if isinstance(value, datetime.datetime):
        return TYPE_TIMESTAMP
    if isinstance(value, datetime.date):
        return TYPE_DATE
    if isinstance(value, datetime.time):
        return TYPE_TIME
    if isinstance(value, int) and not isinstance(value, bool):
        return TYPE_UNIX
    if isinstance(value, str):
        return TYPE_STRING
    raise DataException(
        f"TimestampConverter does not support {java_class(value)} objects as timestamps"
    )


class TimestampConverter(VersionedPlugin, SideAware, Transformation[ConnectRecord]):
    """Convert timestamps between Unix epoch numbers, strings and Connect Date/Time/Timestamp types.

    Applies to individual fields or to the entire value. Strings are formatted
    and parsed in UTC with a Java SimpleDateFormat pattern (``format``). Between
    types the instant is kept to the millisecond; Date drops the time of day and
    Time drops the date. Tombstones pass through unchanged.
    """

    def __init__(self) -> None:
        """Create an unconfigured transform."""
        self._field = ""
        self._target = TYPE_TIMESTAMP
        self._format: JavaDateFormat | None = None
        self._precision = "milliseconds"
        self._replace_null_with_default = True
        self._cache = SchemaCache()

    def config(self) -> ConfigDef:
        """Return the timestamp-converter settings (field, target.type, format, ...)."""
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, object]) -> None:
        """Read the target type and format.

        Raises:
            ConfigException: Naming the key; ``format`` when ``target.type=string`` has none.
        """
        conf = AbstractConfig(CONFIG_DEF, configs)
        self._field = conf.get_string(FIELD_CONFIG) or ""
        self._target = conf.get_string(TARGET_TYPE_CONFIG) or ""
        pattern = conf.get_string(FORMAT_CONFIG) or ""
        self._precision = conf.get_string(UNIX_PRECISION_CONFIG) or "milliseconds"
        self._replace_null_with_default = bool(conf.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))
        if self._target == TYPE_STRING and not pattern:
            raise config_error(
                FORMAT_CONFIG,
                pattern,
                "TimestampConverter requires format option to be specified when using string "
                "timestamps",
            )
        self._format = JavaDateFormat(pattern) if pattern else None
        self._cache = SchemaCache()

    # -- conversion ------------------------------------------------------------------------

    def _to_millis(self, value: Any, source: str) -> int:
        if source == TYPE_STRING:
            if not isinstance(value, str):
                raise DataException(
                    f"Expected string timestamp to be a String, but found {java_class(value)}"
                )
            if self._format is None:
                raise NullPointerException(NO_FORMAT_TO_PARSE_MESSAGE)
            try:
                return self._format.parse(value)
            except (ValueError, OverflowError) as exc:
                raise DataException(
                    f"Could not parse timestamp: value ({value}) does not match pattern "
                    f"({self._format.pattern})"
                ) from exc
        if source == TYPE_UNIX:
            if not isinstance(value, int) or isinstance(value, bool):
                raise DataException(
                    f"Expected Unix timestamp to be a Long, but found {java_class(value)}"
                )
            per_ms, ms_per = _PRECISIONS[self._precision]
            return value * ms_per if per_ms == 1 else _trunc_div(value, per_ms)
        if source == TYPE_TIMESTAMP:
            if not isinstance(value, datetime.datetime):
                raise DataException(
                    "Expected Timestamp to be a java.util.Date, but found "
                    f"{java_class(value, Timestamp.SCHEMA)}"
                )
            return Timestamp.from_logical(Timestamp.SCHEMA, value)
        if source == TYPE_DATE:
            if not isinstance(value, datetime.date):
                raise DataException(
                    "Expected Date to be a java.util.Date, but found "
                    f"{java_class(value, Date.SCHEMA)}"
                )
            if isinstance(value, datetime.datetime):
                return Timestamp.from_logical(Timestamp.SCHEMA, value)
            return Date.from_logical(Date.SCHEMA, value) * _MS_PER_DAY
        if not isinstance(value, datetime.time):
            raise DataException(
                f"Expected Time to be a java.util.Date, but found {java_class(value, Time.SCHEMA)}"
            )
        return Time.from_logical(Time.SCHEMA, value)

    def _from_millis(self, millis: int) -> Any:
        target = self._target
        if target == TYPE_STRING:
            assert self._format is not None
            return self._format.format(millis)
        if target == TYPE_UNIX:
            per_ms, ms_per = _PRECISIONS[self._precision]
            return millis * per_ms if ms_per == 1 else _trunc_div(millis, ms_per)
        if target == TYPE_TIMESTAMP:
            return epoch_datetime(millis)
        if target == TYPE_DATE:
            return Date.to_logical(Date.SCHEMA, millis // _MS_PER_DAY)
        return Time.to_logical(Time.SCHEMA, millis % _MS_PER_DAY)

    def convert(self, value: Any, source: str | None = None) -> Any:
        """Convert one timestamp (of type ``source``, inferred if ``None``) to the target type."""
        if value is None:
            return None
        return self._from_millis(self._to_millis(value, source or _type_of_value(value)))

    # -- records ---------------------------------------------------------------------------

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the record with the timestamp converted.

        Raises:
            DataException: For values that are not timestamps of the expected kind.
        """
        raw = self.operating_value(record)
        schema = self.operating_schema(record)
        if schema is None:
            if raw is None or not self._field:
                return self.new_record(record, None, self.convert(raw))  # type: ignore[no-any-return]
            value = require_map_or_null(raw, PURPOSE)
            assert value is not None
            updated = dict(value)
            updated[self._field] = self.convert(value.get(self._field))
            return self.new_record(record, None, updated)  # type: ignore[no-any-return]
        # A null with a schema still gets the converted schema, as in Kafka (no tombstone
        # shortcut): a JsonConverter with schemas writes it in the envelope.
        if not self._field:
            return self.new_record(  # type: ignore[no-any-return]
                record,
                _schema_for(self._target, schema.optional),
                self.convert(raw, _type_of_schema(schema)),
            )
        struct = require_struct_or_null(raw, PURPOSE)
        updated_schema = self._cache.get(schema) or self._cache.put(
            schema, self._updated_schema(schema)
        )
        return self.new_record(  # type: ignore[no-any-return]
            record, updated_schema, self._convert_struct(struct, updated_schema)
        )

    def _updated_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in struct_fields(schema):
            if field.name == self._field:
                builder.field(field.name, _schema_for(self._target, field.schema.optional))
            else:
                builder.field(field.name, field.schema)
        if schema.optional:
            builder.optional()
        if isinstance(schema.default_value, Struct):
            builder.default_value(self._convert_struct(schema.default_value, builder.build()))
        return builder.build()

    def _convert_struct(self, value: Struct | None, updated_schema: Schema) -> Struct | None:
        if value is None:
            return None
        converted = Struct(updated_schema)
        for field in value.schema.fields:
            if field.name == self._field:
                new = self.convert(value.get(field.name), _type_of_schema(field.schema))
            else:
                new = field_value(value, field.name, self._replace_null_with_default)
            converted.put(field.name, new)
        return converted


class TimestampConverterKey(KeySide, TimestampConverter):
    """TimestampConverter on the record key."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.TimestampConverter$Key",)


class TimestampConverterValue(ValueSide, TimestampConverter):
    """TimestampConverter on the record value."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.TimestampConverter$Value",)
