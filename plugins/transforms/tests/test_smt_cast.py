from __future__ import annotations

import datetime
import decimal

import pytest
from copycat_transforms import CastKey, CastValue
from plugin_api.testing import apply_transform

from plugin_api import (
    ConfigException,
    DataException,
    Date,
    Decimal,
    Schema,
    SchemaBuilder,
    SinkRecord,
    Struct,
    Timestamp,
    Type,
)


def rec(value, schema=None, key=None, key_schema=None) -> SinkRecord:
    return SinkRecord("topic", 0, key_schema, key, schema, value, 0)


@pytest.mark.parametrize(
    ("spec", "value", "expected"),
    [
        ("int8", 300, 44),  # Java narrowing wraps
        ("int16", 70000, 4464),
        ("int32", 2**40 + 5, 5),
        ("int64", 42.9, 42),
        ("int8", -1.9, -1),
        ("int32", 1e20, 2**31 - 1),  # (int) of a huge double saturates
        ("int32", True, 1),
        ("int32", "42", 42),
        ("float32", 1.1, 1.100000023841858),
        ("float64", 42, 42.0),
        ("float64", "1e3", 1000.0),
        ("boolean", 0, False),
        ("boolean", 2, True),
        ("boolean", "TRUE", True),
        ("boolean", "yes", False),
        ("string", 42, "42"),
        ("string", 1e10, "1.0E10"),
        ("string", 0.001, "0.001"),
        ("string", 1234567.0, "1234567.0"),
        ("string", 1e-4, "1.0E-4"),
        ("string", True, "true"),
        ("string", b"\x00\x01", "AAE="),
    ],
)
def test_schemaless_whole_value(spec, value, expected) -> None:
    out = apply_transform(CastValue, {"spec": spec}, rec(value))
    assert out.value == expected
    assert type(out.value) is type(expected)
    assert out.value_schema is None


def test_schemaless_fields() -> None:
    value = {"a": "42", "b": 1.5, "c": "keep", "d": None}
    out = apply_transform(CastValue, {"spec": "a:int32,b:string,d:int8"}, rec(value))
    assert out.value == {"a": 42, "b": "1.5", "c": "keep", "d": None}


def test_schemaful_fields_and_schema() -> None:
    schema = (
        SchemaBuilder.struct()
        .name("n")
        .version(2)
        .field("int8", Schema.INT8_SCHEMA)
        .field("optional", SchemaBuilder.int32().optional().build())
        .field("defaulted", SchemaBuilder.int64().default_value(7).build())
        .field("float32", Schema.FLOAT32_SCHEMA)
        .field("bytes", Schema.BYTES_SCHEMA)
        .field("ts", Timestamp.SCHEMA)
        .field("dec", Decimal.schema(2))
        .field("untouched", Schema.STRING_SCHEMA)
        .build()
    )
    value = Struct.from_dict(
        schema,
        {
            "int8": 8,
            "optional": None,
            "defaulted": 9,
            "float32": 1.5,
            "bytes": b"hi",
            "ts": datetime.datetime(2020, 1, 1, 12, tzinfo=datetime.UTC),
            "dec": decimal.Decimal("12.34"),
            "untouched": "x",
        },
    )
    spec = "int8:string,optional:string,defaulted:int32,float32:string,bytes:string,ts:int64,dec:float64"  # noqa: E501
    out = apply_transform(CastValue, {"spec": spec}, rec(value, schema))
    s = out.value_schema
    assert (s.name, s.version) == ("n", 2)
    assert s.field("int8").schema.type is Type.STRING
    assert s.field("optional").schema.optional
    assert s.field("defaulted").schema.default_value == 7
    assert s.field("defaulted").schema.type is Type.INT32
    assert s.field("untouched").schema == Schema.STRING_SCHEMA
    v = out.value
    assert v.get("int8") == "8"
    assert v.get("optional") is None
    assert v.get("defaulted") == 9
    assert v.get("float32") == "1.5"
    assert v.get("bytes") == "aGk="
    assert v.get("ts") == 1577880000000
    assert v.get("dec") == 12.34
    assert v.get("untouched") == "x"


def test_schemaful_whole_value_and_timestamp_to_string() -> None:
    out = apply_transform(
        CastKey, {"spec": "int32"}, rec("v", key=42, key_schema=Schema.INT64_SCHEMA)
    )
    assert out.key == 42 and out.key_schema == Schema.INT32_SCHEMA
    assert out.value == "v"
    ts = datetime.datetime(2020, 1, 1, 12, 0, 0, 5000, tzinfo=datetime.UTC)
    out = apply_transform(CastValue, {"spec": "string"}, rec(ts, Timestamp.SCHEMA))
    assert out.value == "2020-01-01T12:00:00.005Z"
    out = apply_transform(CastValue, {"spec": "int64"}, rec(ts, Timestamp.SCHEMA))
    assert out.value == 1577880000005 and out.value_schema == Schema.INT64_SCHEMA


def test_float32_schema_renders_like_java_float() -> None:
    out = apply_transform(CastValue, {"spec": "string"}, rec(0.1, Schema.FLOAT32_SCHEMA))
    assert out.value == "0.1"


def test_a_float32_value_is_a_java_float_whatever_it_is_cast_to() -> None:
    # Kafka holds a FLOAT32 as a Float: widening it to a double shows the float's binary
    # value, and the integer casts see the float, not the double Python holds.
    def cast(value: float, target: str) -> object:
        return apply_transform(CastValue, {"spec": target}, rec(value, Schema.FLOAT32_SCHEMA)).value

    assert cast(0.1, "float64") == 0.10000000149011612
    assert cast(1e39, "float64") == float("inf")
    assert cast(16777217.0, "int32") == 16777216
    assert cast(16777217.0, "int64") == 16777216
    assert cast(0.1, "float32") == 0.10000000149011612
    struct_schema = SchemaBuilder.struct().field("f", Schema.FLOAT32_SCHEMA).build()
    out = apply_transform(
        CastValue, {"spec": "f:float64"}, rec(Struct(struct_schema).put("f", 0.1), struct_schema)
    )
    assert out.value.get("f") == 0.10000000149011612


def test_dates_before_1970_01_02_cast_to_time_only_text() -> None:
    # Values.dateFormatFor picks the time-only format for any value under one day, negative
    # ones included (ts=-1 is 23:59:59.999Z); a day boundary after that is a date.
    utc = datetime.UTC

    def text(value: object, schema: Schema) -> object:
        return apply_transform(CastValue, {"spec": "string"}, rec(value, schema)).value

    epoch = datetime.datetime(1970, 1, 1, tzinfo=utc)
    assert text(epoch - datetime.timedelta(milliseconds=1), Timestamp.SCHEMA) == "23:59:59.999Z"
    assert text(epoch - datetime.timedelta(days=400), Timestamp.SCHEMA) == "00:00:00.000Z"
    assert text(datetime.date(1969, 12, 31), Date.SCHEMA) == "00:00:00.000Z"
    assert text(datetime.date(1970, 1, 1), Date.SCHEMA) == "00:00:00.000Z"
    assert text(datetime.date(1970, 1, 2), Date.SCHEMA) == "1970-01-02"
    assert (
        text(epoch + datetime.timedelta(days=1, milliseconds=5), Timestamp.SCHEMA)
        == "1970-01-02T00:00:00.005Z"
    )


def test_tombstone_passes_through() -> None:
    r = rec(None)
    assert apply_transform(CastValue, {"spec": "int8"}, r) is r


def test_data_errors() -> None:
    with pytest.raises(DataException, match=r"was out of range for requested data type"):
        apply_transform(CastValue, {"spec": "int8"}, rec("300"))
    with pytest.raises(
        DataException, match=r"Cast transformation does not support casting from MAP"
    ):
        apply_transform(CastValue, {"spec": "a:int8"}, rec({"a": {"x": 1}}))
    with pytest.raises(
        DataException,
        match=r"Only Map objects supported in absence of schema for \[cast types\], found: java\.util\.ArrayList",  # noqa: E501
    ):
        apply_transform(CastValue, {"spec": "a:int8"}, rec([1]))
    schema = SchemaBuilder.struct().field("a", Schema.INT8_SCHEMA).build()
    with pytest.raises(
        DataException,
        match=r"Only Struct objects supported for \[cast types\], found: java\.util\.HashMap",
    ):
        apply_transform(CastValue, {"spec": "a:int16"}, rec({"a": 1}, schema))
    # Kafka takes BYTES in and fails in castToInt32 (a byte[] is no Number): 'class [B'.
    with pytest.raises(DataException, match=r"^Unexpected type in Cast transformation: class \[B$"):
        apply_transform(CastValue, {"spec": "int32"}, rec(b"x"))
    bytes_schema = SchemaBuilder.struct().field("b", Schema.BYTES_SCHEMA).build()
    with pytest.raises(DataException, match=r"^Unexpected type in Cast transformation: class \[B$"):
        apply_transform(
            CastValue, {"spec": "b:boolean"}, rec(Struct(bytes_schema).put("b", b""), bytes_schema)
        )


def test_field_casts_on_a_schema_that_is_no_struct_fail_listing_its_fields() -> None:
    # Kafka builds the cast schema from valueSchema.fields() before it looks at the value:
    # a string schema fails there (DLQ message 'Cannot list fields on non-struct type').
    with pytest.raises(DataException, match="^Cannot list fields on non-struct type$"):
        apply_transform(CastValue, {"spec": "a:int16"}, rec("s", Schema.STRING_SCHEMA))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "Must specify at least one field to cast."),
        ("a:int8:x", r"configuration renames: Invalid rename mapping: a:int8:x"),
        # Java's split drops the trailing empty part: the whole value to the type "a"
        ("a:", r"Schema.Type.A for configuration Invalid type found in casting spec: a$"),
        # Java's trim keeps a no-break space, and Kafka names it
        ("\u00a0", "Type.\u00a0 for configuration Invalid type found in casting spec: \u00a0$"),
        ("a:nope", "Schema.Type.NOPE for configuration Invalid type found in casting spec: nope"),
        ("a:bytes", "does not support casting to BYTES"),
        ("a:struct", "does not support casting to STRUCT"),
        ("int8,a:int16", "may only specify a single cast"),
    ],
)
def test_bad_spec(spec, message) -> None:
    with pytest.raises(ConfigException, match=message) as info:
        CastValue().configure({"spec": spec})
    assert info.value.name == "spec"
    errors = {r.name: r.error_messages for r in CastValue().config().validate({"spec": spec})}
    assert errors["spec"]


def test_missing_spec() -> None:
    with pytest.raises(ConfigException) as info:
        CastValue().configure({})
    assert info.value.name == "spec"


def test_a_trailing_colon_is_dropped_as_javas_split_drops_it() -> None:
    assert apply_transform(CastValue, {"spec": "a:int32:"}, rec({"a": "7"})).value == {"a": 7}
