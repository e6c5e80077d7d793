from __future__ import annotations

import datetime
import decimal

import pytest
from copycat_transforms import MaskFieldKey, MaskFieldValue
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
    Time,
    Timestamp,
)

SCHEMA = (
    SchemaBuilder.struct()
    .field("magic", Schema.INT32_SCHEMA)
    .field("bool", Schema.BOOLEAN_SCHEMA)
    .field("int8", Schema.INT8_SCHEMA)
    .field("float64", Schema.FLOAT64_SCHEMA)
    .field("string", Schema.STRING_SCHEMA)
    .field("date", Date.SCHEMA)
    .field("time", Time.SCHEMA)
    .field("ts", Timestamp.SCHEMA)
    .field("decimal", Decimal.schema(2))
    .field("array", SchemaBuilder.array(Schema.INT32_SCHEMA).build())
    .field("map", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA).build())
    .field("withDefault", SchemaBuilder.string().optional().default_value("default").build())
    .build()
)
FIELDS = "bool,int8,float64,string,date,time,ts,decimal,array,map"


def struct_value() -> Struct:
    return Struct.from_dict(
        SCHEMA,
        {
            "magic": 42,
            "bool": True,
            "int8": 42,
            "float64": 42.0,
            "string": "blabla",
            "date": datetime.date(2020, 1, 2),
            "time": datetime.time(10, 0),
            "ts": datetime.datetime(2020, 1, 2, 3, 4, tzinfo=datetime.UTC),
            "decimal": decimal.Decimal("42.00"),
            "array": [1, 2],
            "map": {"k": "v"},
        },
    )


def record(value, schema=None, key=None, key_schema=None) -> SinkRecord:
    return SinkRecord("topic", 0, key_schema, key, schema, value, 0)


def test_schemaful_masks_with_java_zero_values() -> None:
    out = apply_transform(MaskFieldValue, {"fields": FIELDS}, record(struct_value(), SCHEMA))
    v = out.value
    assert out.value_schema is SCHEMA
    assert v.get("magic") == 42
    assert v.get("bool") is False
    assert v.get("int8") == 0
    assert v.get("float64") == 0.0
    assert v.get("string") == ""
    assert v.get("date") == datetime.date(1970, 1, 1)
    assert v.get("time") == datetime.time(0)
    assert v.get("ts") == datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    assert v.get("decimal") == decimal.Decimal(0)
    assert v.get("array") == []
    assert v.get("map") == {}
    # Unlisted fields keep their value; the null-with-default field takes its default.
    assert v.get_without_default("withDefault") == "default"


def test_schemaless_masks_and_adds_missing_fields_as_null() -> None:
    value = {"magic": 42, "email": "a@b.c", "phone": 12345, "nested": {"x": 1}}
    out = apply_transform(MaskFieldValue, {"fields": "email,phone,nested,absent"}, record(value))
    assert out.value == {"magic": 42, "email": "", "phone": 0, "nested": {}, "absent": None}


def test_custom_replacement() -> None:
    value = {"email": "a@b.c", "phone": 12345, "score": 1.5, "flag": True}
    out = apply_transform(
        MaskFieldValue, {"fields": "email,phone,score", "replacement": "123"}, record(value)
    )
    assert out.value == {"email": "123", "phone": 123, "score": 123.0, "flag": True}
    with pytest.raises(
        DataException,
        match=r"^Unable to convert \*\*\* \(class java\.lang\.String\) to a number$",
    ):
        apply_transform(MaskFieldValue, {"fields": "phone", "replacement": "***"}, record(value))
    with pytest.raises(
        DataException,
        match=r"Cannot mask value of type class java\.lang\.Boolean with custom replacement\.",
    ):
        apply_transform(MaskFieldValue, {"fields": "flag", "replacement": "x"}, record(value))


def test_numeric_replacements_convert_as_kafkas_values() -> None:
    # Kafka converts the replacement with Values.convertToLong/Integer/Short/Byte (the long
    # of a BigDecimal: truncated, then narrowed by a cast) and convertToDouble/Float.
    schema = (
        SchemaBuilder.struct()
        .field("i8", Schema.INT8_SCHEMA)
        .field("i16", Schema.INT16_SCHEMA)
        .field("i32", Schema.INT32_SCHEMA)
        .field("i64", Schema.INT64_SCHEMA)
        .field("f32", Schema.FLOAT32_SCHEMA)
        .field("f64", Schema.FLOAT64_SCHEMA)
        .field("dec", Decimal.schema(2))
        .build()
    )
    value = (
        Struct(schema)
        .put("i8", 1)
        .put("i16", 1)
        .put("i32", 1)
        .put("i64", 1)
        .put("f32", 1.0)
        .put("f64", 1.0)
        .put("dec", decimal.Decimal("1.00"))
    )
    every = {"fields": "i8,i16,i32,i64,f32,f64"}

    def masked(replacement: str) -> Struct:
        return apply_transform(
            MaskFieldValue, {**every, "replacement": replacement}, record(value, schema)
        ).value

    out = masked("12.5")
    assert [out.get(n) for n in ("i8", "i16", "i32", "i64")] == [12, 12, 12, 12]
    assert out.get("f32") == 12.5 and out.get("f64") == 12.5
    out = masked("-7.9e0")
    assert [out.get(n) for n in ("i8", "i16", "i32", "i64")] == [-7, -7, -7, -7]
    out = masked("300")  # (byte) 300 == 44, (short) 70000 == 4464
    assert out.get("i8") == 44 and out.get("i16") == 300
    out = masked("70000")
    assert out.get("i16") == 4464 and out.get("i32") == 70000
    out = masked("1e19")  # BigDecimal.longValue keeps the low 64 bits
    assert out.get("i64") == 10**19 - 2**64
    out = masked("0.1")
    assert out.get("f32") == 0.10000000149011612 and out.get("f64") == 0.1
    # Schemaless, an int is a Long (what a schemaless JsonConverter reads).
    schemaless = apply_transform(
        MaskFieldValue, {"fields": "n", "replacement": "12.5"}, record({"n": 5})
    )
    assert schemaless.value == {"n": 12}
    assert masked(" 12 ").get("i64") == 12  # (a config string is trimmed, as Kafka's)
    for bad in ("1_000", "1 2", "NaN", "0x10", "+-1"):
        with pytest.raises(DataException, match="to a number$"):
            masked(bad)
    decimals = {"fields": "dec", "replacement": "1e1"}
    assert apply_transform(MaskFieldValue, decimals, record(value, schema)).value.get(
        "dec"
    ) == decimal.Decimal("1e1")
    with pytest.raises(
        DataException, match=r"^Unable to convert NaN \(class java\.lang\.String\) to number$"
    ):
        apply_transform(
            MaskFieldValue, {"fields": "dec", "replacement": "NaN"}, record(value, schema)
        )


def test_schemaful_custom_replacement() -> None:
    out = apply_transform(
        MaskFieldValue,
        {"fields": "string,int8", "replacement": "12"},
        record(struct_value(), SCHEMA),
    )
    assert out.value.get("string") == "12"
    assert out.value.get("int8") == 12


def test_key_variant() -> None:
    out = apply_transform(
        MaskFieldKey, {"fields": "id"}, record({"v": "keep"}, key={"id": "secret"})
    )
    assert out.key == {"id": ""}
    assert out.value == {"v": "keep"}


def test_unmaskable_type() -> None:
    with pytest.raises(DataException, match=r"^Cannot mask value of type: class \[B$"):
        apply_transform(MaskFieldValue, {"fields": "b"}, record({"b": b"raw"}))
    inner = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).build()
    schema = SchemaBuilder.struct().field("n", inner).build()
    with pytest.raises(
        DataException,
        match=r"^Cannot mask value of type: class org\.apache\.kafka\.connect\.data\.Struct$",
    ):
        apply_transform(
            MaskFieldValue,
            {"fields": "n"},
            record(Struct(schema).put("n", Struct(inner).put("x", 1)), schema),
        )


def test_wrong_data() -> None:
    with pytest.raises(
        DataException,
        match=r"Only Map objects supported in absence of schema for \[mask fields\], found: java\.lang\.String",  # noqa: E501
    ):
        apply_transform(MaskFieldValue, {"fields": "a"}, record("text"))
    with pytest.raises(
        DataException,
        match=r"Only Struct objects supported for \[mask fields\], found: java\.util\.HashMap",
    ):
        apply_transform(MaskFieldValue, {"fields": "a"}, record({"a": 1}, SCHEMA))


def test_a_tombstone_fails_as_in_kafka() -> None:
    # Kafka 4.1.1's MaskField has no tombstone shortcut (ReplaceField, Cast, InsertField and
    # Flatten do): requireMap / requireStruct refuse the null, so errors.tolerance decides.
    with pytest.raises(
        DataException,
        match=r"^Only Map objects supported in absence of schema for \[mask fields\], found: null$",
    ):
        apply_transform(MaskFieldValue, {"fields": "a"}, record(None))
    with pytest.raises(
        DataException, match=r"^Only Struct objects supported for \[mask fields\], found: null$"
    ):
        optional = SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).optional().build()
        apply_transform(MaskFieldValue, {"fields": "magic"}, record(None, optional))
    with pytest.raises(DataException, match="found: null"):
        apply_transform(MaskFieldKey, {"fields": "a"}, record("v"))


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({}, "fields"),
        ({"fields": ""}, "fields"),
        ({"fields": "a", "replacement": ""}, "replacement"),
    ],
)
def test_bad_config(config, key) -> None:
    with pytest.raises(ConfigException) as info:
        MaskFieldValue().configure(config)
    assert info.value.name == key
    errors = {r.name: r.error_messages for r in MaskFieldValue().config().validate(config)}
    assert errors[key]
