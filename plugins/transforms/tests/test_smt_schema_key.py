"""SetSchemaMetadata and ValueToKey."""

from __future__ import annotations

import pytest
from copycat_transforms import SetSchemaMetadataKey, SetSchemaMetadataValue, ValueToKey
from plugin_api.testing import apply_transform

from plugin_api import ConfigException, DataException, Schema, SchemaBuilder, SinkRecord, Struct

SCHEMA = (
    SchemaBuilder.struct()
    .name("old")
    .version(1)
    .field("a", Schema.INT32_SCHEMA)
    .field("b", Schema.STRING_SCHEMA)
    .build()
)


def rec(value, schema=None, key=None, key_schema=None) -> SinkRecord:
    return SinkRecord("topic", 0, key_schema, key, schema, value, 0)


def test_set_schema_metadata_struct() -> None:
    value = Struct(SCHEMA).put("a", 1).put("b", "x")
    config = {"schema.name": "foo", "schema.version": "42"}
    out = apply_transform(SetSchemaMetadataValue, config, rec(value, SCHEMA))
    assert (out.value_schema.name, out.value_schema.version) == ("foo", 42)
    assert out.value.schema is out.value_schema
    assert out.value.to_dict() == {"a": 1, "b": "x"}


def test_set_schema_metadata_struct_key_name_only() -> None:
    key = Struct(SCHEMA).put("a", 1).put("b", "x")
    out = apply_transform(
        SetSchemaMetadataKey, {"schema.name": "k"}, rec("v", key=key, key_schema=SCHEMA)
    )
    assert (out.key_schema.name, out.key_schema.version) == ("k", 1)
    assert out.key.to_dict() == {"a": 1, "b": "x"} and out.value == "v"


@pytest.mark.parametrize(
    "schema",
    [
        SchemaBuilder.string().version(3).build(),
        SchemaBuilder.array(Schema.INT32_SCHEMA).build(),
        SchemaBuilder.string().optional().build(),
    ],
)
def test_set_schema_metadata_refuses_a_schema_that_is_no_struct(schema) -> None:
    # Kafka 4.1.1 copies schema.fields(), which a non-struct ConnectSchema refuses.
    value = None if schema.optional else ("id" if schema.type.name == "STRING" else [1])
    with pytest.raises(DataException, match="^Cannot list fields on non-struct type$"):
        apply_transform(SetSchemaMetadataKey, {"schema.name": "k"}, rec("v", None, value, schema))


def test_set_schema_metadata_lets_a_schemaless_tombstone_through() -> None:
    # As Kafka 4.1.1: a null value without a schema passes; a schemaless value still fails.
    r = rec(None)
    assert apply_transform(SetSchemaMetadataValue, {"schema.name": "x"}, r) is r
    r = rec("v", key=None)
    assert apply_transform(SetSchemaMetadataKey, {"schema.name": "x"}, r) is r


def test_set_schema_metadata_errors() -> None:
    with pytest.raises(DataException, match=r"Schema required for \[updating schema metadata\]"):
        apply_transform(SetSchemaMetadataValue, {"schema.name": "x"}, rec({"a": 1}))
    with pytest.raises(ConfigException, match="Neither schema name nor version configured"):
        SetSchemaMetadataValue().configure({})
    with pytest.raises(ConfigException) as info:
        SetSchemaMetadataValue().configure({"schema.version": "one"})
    assert info.value.name == "schema.version"


def test_value_to_key_schemaless() -> None:
    out = apply_transform(ValueToKey, {"fields": "a,b"}, rec({"a": 1, "b": 2, "c": 3}, key="old"))
    assert out.key == {"a": 1, "b": 2} and out.key_schema is None
    assert out.value == {"a": 1, "b": 2, "c": 3}


def test_value_to_key_schemaful() -> None:
    value = Struct(SCHEMA).put("a", 1).put("b", "x")
    out = apply_transform(ValueToKey, {"fields": "b"}, rec(value, SCHEMA))
    assert out.key_schema == SchemaBuilder.struct().field("b", Schema.STRING_SCHEMA).build()
    assert out.key.get("b") == "x"
    assert out.value is value


def test_value_to_key_errors() -> None:
    value = Struct(SCHEMA).put("a", 1).put("b", "x")
    with pytest.raises(DataException, match="Field does not exist: nope"):
        apply_transform(ValueToKey, {"fields": "nope"}, rec(value, SCHEMA))
    with pytest.raises(
        DataException,
        match=r"Only Map objects supported in absence of schema for \[copying fields from value to key\], found: null",  # noqa: E501
    ):
        apply_transform(ValueToKey, {"fields": "a"}, rec(None))
    with pytest.raises(
        DataException,
        match=r"Only Struct objects supported for \[copying fields from value to key\]",
    ):
        apply_transform(ValueToKey, {"fields": "a"}, rec({"a": 1}, SCHEMA))
    with pytest.raises(ConfigException) as info:
        ValueToKey().configure({"fields": ""})
    assert info.value.name == "fields"
