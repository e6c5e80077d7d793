"""Cast: change the type of fields, or of the whole key/value (``spec=age:int32,id:string``)."""

from __future__ import annotations

import base64
import datetime
import decimal
import re
from collections.abc import Mapping
from typing import Any

from copycat_transforms._datefmt import JavaDateFormat
from copycat_transforms._javanum import (
    INT_BITS,
    java_decimal_str,
    java_float_str,
    to_float32,
    to_java_int,
)
from copycat_transforms._util import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    KeySide,
    SchemaCache,
    SideAware,
    ValueSide,
    VersionedPlugin,
    config_error,
    copy_schema_basics,
    define_replace_null_with_default,
    field_value,
    java_class,
    java_split,
    java_text,
    require_map,
    require_struct,
    struct_fields,
)
from plugin_api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectRecord,
    DataException,
    Date,
    Importance,
    LambdaValidator,
    Schema,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
    Transformation,
    Type,
)

__all__ = ["Cast", "CastKey", "CastValue"]

SPEC_CONFIG = "spec"
PURPOSE = "cast types"

SUPPORTED_INPUT_TYPES = (
    Type.INT8,
    Type.INT16,
    Type.INT32,
    Type.INT64,
    Type.FLOAT32,
    Type.FLOAT64,
    Type.BOOLEAN,
    Type.STRING,
    Type.BYTES,
)
SUPPORTED_OUTPUT_TYPES = SUPPORTED_INPUT_TYPES[:-1]
# Kafka prints these sets as Java's EnumSet.toString.
_INPUT_NAMES = "[" + ", ".join(t.name for t in SUPPORTED_INPUT_TYPES) + "]"
_OUTPUT_NAMES = "[" + ", ".join(t.name for t in SUPPORTED_OUTPUT_TYPES) + "]"
WHOLE_VALUE = ""  # spec key of a whole-value cast: no field can have an empty name

_JAVA_INTEGER = re.compile(r"[+-]?\d+")
_MS_PER_DAY = 86_400_000
# Values.dateFormatFor: how Kafka renders a java.util.Date as a string.
_TIME_FORMAT = JavaDateFormat("HH:mm:ss.SSS'Z'")
_DATE_FORMAT = JavaDateFormat("yyyy-MM-dd")
_TIMESTAMP_FORMAT = JavaDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_LOGICAL_NAMES = frozenset(
    (
        Date.LOGICAL_NAME,
        Time.LOGICAL_NAME,
        Timestamp.LOGICAL_NAME,
        "org.apache.kafka.connect.data.Decimal",
    )
)


# What Java's String.trim() removes: every character up to U+0020 (a no-break space stays,
# so Kafka names the type "\u00a0" where str.strip() would leave nothing).
_JAVA_TRIMMED = "".join(map(chr, range(0x21)))


def parse_spec(name: str, mappings: list[str]) -> dict[str, Type]:
    """Parse ``field:type,...`` or a single ``type``.

    Raises:
        ConfigException: Naming ``name`` for a malformed entry or unsupported type.
    """
    if not mappings:
        raise config_error(name, mappings, "Must specify at least one field to cast.")
    casts: dict[str, Type] = {}
    for mapping in mappings:
        # Java's split: "a:" is the whole value cast to type "a"; ":" has no part at all
        # (Kafka's Cast then fails the request with an ArrayIndexOutOfBoundsException, a 500;
        # here it is the empty type name's error)
        parts = java_split(mapping, ":") or [""]
        if len(parts) > 2:
            # Kafka's Cast names ReplaceField's key and words here (a copy in its source)
            raise config_error(
                name,
                mappings,
                f"Invalid value {java_text(mappings)} for configuration renames: "
                f"Invalid rename mapping: {mapping}",
            )
        field, type_name = (WHOLE_VALUE, parts[0]) if len(parts) == 1 else parts
        type_name = type_name.strip(_JAVA_TRIMMED)
        try:
            target = Type(type_name.lower())
        except ValueError:
            # Kafka's words: Schema.Type.valueOf's exception passed as the value, and the
            # sentence as the key, of ConfigException(name, value)
            raise config_error(
                name,
                mappings,
                "Invalid value java.lang.IllegalArgumentException: No enum constant "
                f"org.apache.kafka.connect.data.Schema.Type.{type_name.upper()} for "
                f"configuration Invalid type found in casting spec: {type_name}",
            ) from None
        if target not in SUPPORTED_OUTPUT_TYPES:
            raise config_error(
                name,
                mappings,
                f"Cast transformation does not support casting to {target.name}; "
                f"supported types are {_OUTPUT_NAMES}",
            )
        casts[field.strip(_JAVA_TRIMMED)] = target
    if WHOLE_VALUE in casts and len(mappings) > 1:
        raise config_error(
            name,
            mappings,
            "Cast transformations that specify a type to cast the entire value to may only "
            "specify a single cast in their spec",
        )
    return casts


CONFIG_DEF = define_replace_null_with_default(
    ConfigDef().define(
        SPEC_CONFIG,
        ConfigType.LIST,
        validator=LambdaValidator(
            lambda n, v: parse_spec(n, list(v or ())),  # type: ignore[call-overload]
            "list of colon-delimited pairs, e.g. <code>foo:bar,abc:xyz</code>",
        ),
        importance=Importance.HIGH,
        documentation="List of fields and the type to cast them to of the form "
        "field1:type,field2:type to cast fields of Maps or Structs. A single type to cast the "
        "entire value. Valid types are int8, int16, int32, int64, float32, float64, boolean, "
        "and string. Note that binary fields can only be cast to string.",
    )
)


def _schemaless_type(value: object) -> Type | None:
    """Connect's type for a schemaless Python value (``ConnectSchema.schemaType``)."""
    if isinstance(value, bool):
        return Type.BOOLEAN
    if isinstance(value, int):
        return Type.INT64
    if isinstance(value, float):
        return Type.FLOAT64
    if isinstance(value, str):
        return Type.STRING
    if isinstance(value, (bytes, bytearray, memoryview)):
        return Type.BYTES
    if isinstance(value, (list, tuple)):
        return Type.ARRAY
    if isinstance(value, Mapping):
        return Type.MAP
    if isinstance(value, Struct):
        return Type.STRUCT
    return None


def _encode_logical(schema: Schema, value: Any) -> Any:
    if schema.name == Date.LOGICAL_NAME:
        return Date.from_logical(schema, value)
    if schema.name == Time.LOGICAL_NAME:
        return Time.from_logical(schema, value)
    if schema.name == Timestamp.LOGICAL_NAME:
        return Timestamp.from_logical(schema, value)
    return value


def _date_string(value: datetime.date | datetime.time) -> str:
    if isinstance(value, datetime.datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=datetime.UTC)
        millis = (moment - _EPOCH) // datetime.timedelta(milliseconds=1)
    elif isinstance(value, datetime.date):
        millis = (value - _EPOCH.date()).days * _MS_PER_DAY
    else:
        millis = Time.from_logical(Time.SCHEMA, value)
    if millis < _MS_PER_DAY:  # negatives too, as Kafka's Values.dateFormatFor
        return _TIME_FORMAT.format(millis)
    if millis % _MS_PER_DAY == 0:
        return _DATE_FORMAT.format(millis)
    return _TIMESTAMP_FORMAT.format(millis)


def _to_string(value: Any, schema: Schema | None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_float_str(value, schema is not None and schema.type is Type.FLOAT32)
    if isinstance(value, decimal.Decimal):
        return java_decimal_str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (datetime.date, datetime.time)):
        return _date_string(value)
    return str(value)


def _parse_java_int(text: str, bits: int) -> int:
    if not _JAVA_INTEGER.fullmatch(text):
        raise ValueError(text)
    number = int(text)
    if not -(1 << (bits - 1)) <= number < (1 << (bits - 1)):
        raise ValueError(text)
    return number


def _parse_java_float(text: str) -> float:
    stripped = text.strip()
    if stripped[-1:] in ("f", "F", "d", "D"):
        stripped = stripped[:-1]
    if stripped.lstrip("+-") in ("NaN", "Infinity"):
        return float(stripped.replace("Infinity", "inf"))
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", stripped):
        raise ValueError(text)
    return float(stripped)


def cast_value(schema: Schema | None, value: Any, target: Type) -> Any:
    """Cast one value (described by ``schema``, or schemaless) to ``target``.

    Raises:
        DataException: For unsupported source types or values out of the target's range.
    """
    if value is None:
        return None
    source = _schemaless_type(value) if schema is None else schema.type
    if source is None:
        raise DataException(
            f"Cast transformation was passed a value of type {java_class(value)} which is "
            "not supported by Connect's data API"
        )
    if source not in SUPPORTED_INPUT_TYPES:
        raise DataException(
            f"Cast transformation does not support casting from {source.name}; supported "
            f"types are {_INPUT_NAMES}"
        )
    if (
        source is Type.BYTES
        and target is not Type.STRING
        and not isinstance(value, decimal.Decimal)
    ):
        # Kafka accepts BYTES as input and only its castTo<type> finds no number in a byte[].
        raise DataException(f"Unexpected type in Cast transformation: {java_class(value)}")
    if schema is not None and schema.name is not None and target is not Type.STRING:
        value = _encode_logical(schema, value)
    if source is Type.FLOAT32 and isinstance(value, float):
        # Kafka holds a Float: widened to a double it is 0.10000000149011612 for 0.1, and
        # the integer casts see the float.
        value = to_float32(value)
    try:
        if target is Type.STRING:
            return _to_string(value, schema)
        if target is Type.BOOLEAN:
            if isinstance(value, str):
                return value.lower() == "true"
            if isinstance(value, bool):
                return value
            return to_java_int(value, 64) != 0
        if target in (Type.FLOAT32, Type.FLOAT64):
            if isinstance(value, str):
                number = _parse_java_float(value)
            else:
                number = float(value)
            return to_float32(number) if target is Type.FLOAT32 else number
        bits = INT_BITS[target.value]
        if isinstance(value, str):
            return _parse_java_int(value, bits)
        if isinstance(value, bool):
            return int(value)
        return to_java_int(value, bits)
    except (ValueError, ArithmeticError) as exc:
        raise DataException(f"Value ({value}) was out of range for requested data type") from exc


def _builder_for(target: Type) -> SchemaBuilder:
    return SchemaBuilder(target)


class Cast(VersionedPlugin, SideAware, Transformation[ConnectRecord]):
    """Cast fields or the entire key or value to a specific type.

    For example, to force an integer field to a smaller width. Cast from
    integers, floats, boolean and string to any other type, and cast binary to
    string (base64 encoded). Only top-level fields can be cast. Tombstones pass
    through unchanged.
    """

    def __init__(self) -> None:
        """Create an unconfigured transform."""
        self._casts: dict[str, Type] = {}
        self._whole: Type | None = None
        self._replace_null_with_default = True
        self._cache = SchemaCache()

    def config(self) -> ConfigDef:
        """Return ``spec`` and ``replace.null.with.default``."""
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, object]) -> None:
        """Parse the cast spec.

        Raises:
            ConfigException: Naming ``spec``.
        """
        conf = AbstractConfig(CONFIG_DEF, configs)
        self._casts = parse_spec(SPEC_CONFIG, conf.get_list(SPEC_CONFIG) or [])
        self._whole = self._casts.get(WHOLE_VALUE)
        self._replace_null_with_default = bool(conf.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))
        self._cache = SchemaCache()

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the record with the casts applied.

        Raises:
            DataException: For values that cannot be cast.
        """
        raw = self.operating_value(record)
        if raw is None:
            return record
        schema = self.operating_schema(record)
        if schema is None:
            if self._whole is not None:
                return self.new_record(record, None, cast_value(None, raw, self._whole))  # type: ignore[no-any-return]
            value = require_map(raw, PURPOSE)
            updated = dict(value)
            for name, target in self._casts.items():
                updated[name] = cast_value(None, value.get(name), target)
            return self.new_record(record, None, updated)  # type: ignore[no-any-return]
        updated_schema = self._cache.get(schema) or self._cache.put(
            schema, self._updated_schema(schema)
        )
        if self._whole is not None:
            return self.new_record(  # type: ignore[no-any-return]
                record, updated_schema, cast_value(schema, raw, self._whole)
            )
        struct = require_struct(raw, PURPOSE, schema)
        cast_struct = Struct(updated_schema)
        for field in struct.schema.fields:
            original = field_value(struct, field.name, self._replace_null_with_default)
            cast_struct.put(field.name, self._cast_field(field.name, field.schema, original))
        return self.new_record(record, updated_schema, cast_struct)  # type: ignore[no-any-return]

    def _updated_schema(self, schema: Schema) -> Schema:
        if self._whole is not None:
            builder = _builder_for(self._whole)
            # A logical type's name would claim the cast value is still e.g. a Timestamp.
            if schema.name not in _LOGICAL_NAMES:
                copy_schema_basics(schema, builder)
        else:
            builder = copy_schema_basics(schema, SchemaBuilder.struct())
            # Kafka's getOrBuildSchema lists the fields before it looks at the value.
            for field in struct_fields(schema):
                target = self._casts.get(field.name)
                if target is None:
                    builder.field(field.name, field.schema)
                    continue
                field_builder = _builder_for(target)
                if field.schema.optional:
                    field_builder.optional()
                if field.schema.default_value is not None:
                    field_builder.default_value(
                        cast_value(field.schema, field.schema.default_value, target)
                    )
                builder.field(field.name, field_builder.build())
        if schema.optional:
            builder.optional()
        if schema.default_value is not None:
            builder.default_value(self._cast_default(schema, builder))
        return builder.build()

    def _cast_default(self, schema: Schema, builder: SchemaBuilder) -> Any:
        if self._whole is not None:
            return cast_value(schema, schema.default_value, self._whole)
        default = schema.default_value
        if not isinstance(default, Struct):
            return None
        # A struct is valid for its schema's optional/defaulted forms, so build it on the
        # schema as it stands before the default is set.
        built = Struct(builder.build())
        for field in default.schema.fields:
            built.put(
                field.name, self._cast_field(field.name, field.schema, default.get(field.name))
            )
        return built

    def _cast_field(self, name: str, schema: Schema, value: Any) -> Any:
        target = self._casts.get(name)
        return value if target is None else cast_value(schema, value, target)


class CastKey(KeySide, Cast):
    """Cast the record key (or its fields)."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.Cast$Key",)


class CastValue(ValueSide, Cast):
    """Cast the record value (or its fields)."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.Cast$Value",)
