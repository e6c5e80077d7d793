from __future__ import annotations

import pytest
from copycat_transforms import FlattenKey, FlattenValue
from plugin_api.testing import apply_transform

from plugin_api import (
    ConfigException,
    DataException,
    Schema,
    SchemaBuilder,
    SinkRecord,
    Struct,
    Type,
)


def rec(value, schema=None, key=None, key_schema=None) -> SinkRecord:
    return SinkRecord("topic", 0, key_schema, key, schema, value, 0)


def test_schemaless_nested_maps() -> None:
    value = {"A": {"B": {"int8": 8, "arr": [1, 2]}, "s": "x"}, "top": None}
    out = apply_transform(FlattenValue, {}, rec(value))
    assert out.value == {"A.B.int8": 8, "A.B.arr": [1, 2], "A.s": "x", "top": None}


def test_schemaless_custom_delimiter_and_key() -> None:
    out = apply_transform(FlattenKey, {"delimiter": "#"}, rec("v", key={"a": {"b": 1}}))
    assert out.key == {"a#b": 1}
    assert out.value == "v"


def test_schemaful_nested_structs() -> None:
    inner = (
        SchemaBuilder.struct()
        .field("int16", Schema.INT16_SCHEMA)
        .field("opt", SchemaBuilder.string().optional().build())
        .build()
    )
    optional_inner = SchemaBuilder.struct().optional().field("x", Schema.INT32_SCHEMA).build()
    schema = (
        SchemaBuilder.struct()
        .name("outer")
        .field("A", inner)
        .field("O", optional_inner)
        .field("arr", SchemaBuilder.array(Schema.INT32_SCHEMA).build())
        .build()
    )
    value = Struct(schema).put("A", Struct(inner).put("int16", 16)).put("arr", [1])
    out = apply_transform(FlattenValue, {"delimiter": "_"}, rec(value, schema))
    s = out.value_schema
    assert s.name == "outer"
    assert [f.name for f in s.fields] == ["A_int16", "A_opt", "O_x", "arr"]
    assert s.field("A_int16").schema == Schema.INT16_SCHEMA
    assert s.field("O_x").schema == Schema.OPTIONAL_INT32_SCHEMA  # optional parent
    assert out.value.get("A_int16") == 16
    assert out.value.get("O_x") is None
    assert out.value.get("arr") == [1]


def test_tombstone_passes_through() -> None:
    r = rec(None)
    assert apply_transform(FlattenValue, {}, r) is r


def test_data_errors() -> None:
    with pytest.raises(
        DataException,
        match=r"Only Map objects supported in absence of schema for \[flattening\], found: java\.lang\.String",  # noqa: E501
    ):
        apply_transform(FlattenValue, {}, rec("x"))
    schema = SchemaBuilder.struct().field("a", Schema.INT8_SCHEMA).build()
    with pytest.raises(
        DataException,
        match=r"Only Struct objects supported for \[flattening\], found: java\.util\.HashMap",
    ):
        apply_transform(FlattenValue, {}, rec({"a": 1}, schema))
    with pytest.raises(
        DataException,
        match=r"^Flatten transformation was passed a value of type class java\.util\.HashSet which "
        r"is not supported by Connect's data API$",
    ):
        apply_transform(FlattenValue, {}, rec({"a": {"b": {1}}}))
    # A Struct inside a schemaless map: Kafka names its class.
    inner = Struct(SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).build()).put("x", 1)
    with pytest.raises(
        DataException,
        match=r"^Flatten transformation does not support class org\.apache\.kafka\.connect\.data"
        r"\.Struct for record without schemas \(for field a\.b\)\.$",
    ):
        apply_transform(FlattenValue, {}, rec({"a": {"b": inner}}))


def test_bad_config() -> None:
    with pytest.raises(ConfigException) as info:
        FlattenValue().configure({"delimiter": 5})
    assert info.value.name == "delimiter"


def test_a_map_with_schemas_is_refused_and_an_array_kept() -> None:
    # Kafka's Flatten keeps ARRAY fields as they are and refuses MAP fields with schemas (at
    # any depth); a MAP was kept as a leaf.
    attrs = SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build()
    schema = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).field("attrs", attrs).build()
    value = Struct(schema).put("id", 1).put("attrs", {"k": 1})
    with pytest.raises(
        DataException,
        match=r"^Flatten transformation does not support MAP for record with schemas "
        r"\(for field attrs\)\.$",
    ):
        apply_transform(FlattenValue, {}, rec(value, schema))
    outer = SchemaBuilder.struct().field("a", schema).build()
    with pytest.raises(DataException, match=r"\(for field a\.attrs\)\.$"):
        apply_transform(FlattenValue, {}, rec(Struct(outer).put("a", value), outer))
    listed = SchemaBuilder.array(Schema.INT32_SCHEMA).build()
    inner = SchemaBuilder.struct().field("l", listed).build()
    outer = SchemaBuilder.struct().field("a", inner).build()
    out = apply_transform(
        FlattenValue, {}, rec(Struct(outer).put("a", Struct(inner).put("l", [1, 2])), outer)
    )
    assert out.value.get("a.l") == [1, 2]
    assert out.value_schema.field("a.l").schema.type is Type.ARRAY
