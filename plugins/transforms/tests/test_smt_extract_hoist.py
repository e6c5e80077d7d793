from __future__ import annotations

import pytest
from copycat_transforms import ExtractFieldKey, ExtractFieldValue, HoistFieldKey, HoistFieldValue
from copycat_transforms._fieldpath import parse_steps
from plugin_api.testing import apply_transform

from plugin_api import ConfigException, DataException, Schema, SchemaBuilder, SinkRecord, Struct


def rec(value, schema=None, key=None, key_schema=None) -> SinkRecord:
    return SinkRecord("topic", 0, key_schema, key, schema, value, 0)


# -- ExtractField -------------------------------------------------------------------------------


def test_extract_schemaless() -> None:
    out = apply_transform(ExtractFieldKey, {"field": "magic"}, rec("v", key={"magic": 42}))
    assert out.key == 42 and out.key_schema is None and out.value == "v"
    out = apply_transform(ExtractFieldValue, {"field": "nope"}, rec({"magic": 42}))
    assert out.value is None
    out = apply_transform(ExtractFieldValue, {"field": "magic"}, rec(None))
    assert out.value is None


def test_extract_schemaful() -> None:
    schema = SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).build()
    out = apply_transform(
        ExtractFieldValue, {"field": "magic"}, rec(Struct(schema).put("magic", 42), schema)
    )
    assert out.value == 42 and out.value_schema == Schema.INT32_SCHEMA


def test_extract_nested_v2() -> None:
    inner = SchemaBuilder.struct().field("b.c", Schema.STRING_SCHEMA).build()
    schema = SchemaBuilder.struct().field("a", inner).build()
    value = Struct(schema).put("a", Struct(inner).put("b.c", "deep"))
    config = {"field": "a.`b.c`", "field.syntax.version": "V2"}
    out = apply_transform(ExtractFieldValue, config, rec(value, schema))
    assert out.value == "deep" and out.value_schema == Schema.STRING_SCHEMA
    out = apply_transform(ExtractFieldValue, config, rec({"a": {"b.c": "deep"}}))
    assert out.value == "deep"
    # V1 treats the dotted name as one top-level field.
    out = apply_transform(ExtractFieldValue, {"field": "a.b"}, rec({"a.b": 1, "a": {"b": 2}}))
    assert out.value == 1


@pytest.mark.parametrize(
    ("config", "schema"),
    [
        ({"field": "a"}, Schema.OPTIONAL_STRING_SCHEMA),
        ({"field": "a.b", "field.syntax.version": "V2"}, Schema.OPTIONAL_STRING_SCHEMA),
        (
            {"field": "a.b", "field.syntax.version": "V2"},
            SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).optional().build(),
        ),
    ],
)
def test_extract_looks_fields_up_on_a_schema_that_is_no_struct(config, schema) -> None:
    # Kafka's SingleFieldPath.fieldFrom asks the schema for the field (a null value passes
    # requireStructOrNull): ConnectSchema.field() refuses, a DataException, not 'Unknown field'.
    with pytest.raises(DataException, match="^Cannot look up fields on non-struct type$"):
        apply_transform(ExtractFieldValue, config, rec(None, schema))


@pytest.mark.parametrize(
    ("path", "steps"),
    [
        ("a.b.c", ["a", "b", "c"]),
        ("`a.b`.c", ["a.b", "c"]),
        ("a.`b.c`", ["a", "b.c"]),
        ("`a`b`.c", ["a`b", "c"]),
        ("`a\\`.b`.c", ["a`.b", "c"]),
        ("a.", ["a", ""]),
    ],
)
def test_field_path_v2(path, steps) -> None:
    assert parse_steps(path, "V2") == steps


def test_extract_errors() -> None:
    schema = SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).build()
    # Kafka throws java.lang.IllegalArgumentException (not a DataException): the DLQ's
    # __connect.errors.exception.class.name header names it (KAFKA_CLASS_ALIASES).
    with pytest.raises(ValueError, match="^Unknown field: nope$") as raised:
        apply_transform(
            ExtractFieldValue, {"field": "nope"}, rec(Struct(schema).put("magic", 1), schema)
        )
    assert not isinstance(raised.value, DataException)
    assert type(raised.value).KAFKA_CLASS_ALIASES == ("java.lang.IllegalArgumentException",)
    nested = SchemaBuilder.struct().field("n", schema).build()
    with pytest.raises(ValueError, match="^Unknown field: n.zz$") as raised:
        apply_transform(
            ExtractFieldValue,
            {"field": "n.zz", "field.syntax.version": "V2"},
            rec(Struct(nested).put("n", Struct(schema).put("magic", 1)), nested),
        )
    assert type(raised.value).KAFKA_CLASS_ALIASES == ("java.lang.IllegalArgumentException",)
    # A value that is not a struct names the Java class its schema says Kafka holds.
    with pytest.raises(
        DataException,
        match=r"^Only Struct objects supported for \[field extraction\], found: java\.lang\.Integer$",  # noqa: E501
    ):
        apply_transform(ExtractFieldValue, {"field": "magic"}, rec(7, Schema.INT32_SCHEMA))
    with pytest.raises(
        DataException,
        match=r"Only Map objects supported in absence of schema for \[field extraction\], found: java\.lang\.Long",  # noqa: E501
    ):
        apply_transform(ExtractFieldValue, {"field": "a"}, rec(5))
    with pytest.raises(
        DataException,
        match=r"Only Struct objects supported for \[field extraction\], found: java\.util\.HashMap",
    ):
        apply_transform(ExtractFieldValue, {"field": "magic"}, rec({"magic": 1}, schema))
    for config, key in [
        ({}, "field"),
        ({"field": "a", "field.syntax.version": "V3"}, "field.syntax.version"),
        ({"field": "`a.b", "field.syntax.version": "V2"}, "field"),
    ]:
        with pytest.raises(ConfigException) as info:
            ExtractFieldValue().configure(config)
        assert info.value.name == key


# -- HoistField ---------------------------------------------------------------------------------


def test_hoist_schemaless() -> None:
    out = apply_transform(HoistFieldKey, {"field": "magic"}, rec("v", key=42))
    assert out.key == {"magic": 42} and out.key_schema is None and out.value == "v"


def test_hoist_schemaful() -> None:
    out = apply_transform(HoistFieldValue, {"field": "magic"}, rec(42, Schema.INT32_SCHEMA))
    assert out.value_schema == SchemaBuilder.struct().field("magic", Schema.INT32_SCHEMA).build()
    assert out.value.get("magic") == 42


def test_hoist_errors() -> None:
    with pytest.raises(DataException):
        apply_transform(HoistFieldValue, {"field": "magic"}, rec(None, Schema.INT32_SCHEMA))
    with pytest.raises(DataException):
        apply_transform(HoistFieldValue, {"field": "magic"}, rec("not an int", Schema.INT32_SCHEMA))
    with pytest.raises(ConfigException) as info:
        HoistFieldValue().configure({})
    assert info.value.name == "field"
