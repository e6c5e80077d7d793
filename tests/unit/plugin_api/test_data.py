"""Schemas, the builder, structs and validation messages."""

from __future__ import annotations

import pytest
from plugin_api.data import (
    NULL_SCHEMA_AND_VALUE,
    Field,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    Struct,
    Type,
)
from plugin_api.errors import DataException, SchemaBuilderException

from plugin_api import data


def user_schema() -> Schema:
    address = SchemaBuilder.struct().name("Address").field("city", Schema.STRING_SCHEMA).build()
    return (
        SchemaBuilder.struct()
        .name("com.example.User")
        .version(2)
        .doc("A user")
        .field("id", Schema.INT64_SCHEMA)
        .field("email", SchemaBuilder.string().optional())
        .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).optional())
        .field("scores", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).optional())
        .field("address", address)
        .field("active", SchemaBuilder.bool_().default_value(True))
        .build()
    )


def test_type_values_and_primitive() -> None:
    assert Type.INT8.value == "int8"
    assert Type.STRUCT.value == "struct"
    assert Type.BOOLEAN.is_primitive and Type.BYTES.is_primitive
    assert not any(t.is_primitive for t in (Type.ARRAY, Type.MAP, Type.STRUCT))
    assert len(Type) == 12


def test_constants_on_module_and_class() -> None:
    assert Schema.INT8_SCHEMA is data.INT8_SCHEMA
    assert Schema.OPTIONAL_STRING_SCHEMA is data.OPTIONAL_STRING_SCHEMA
    assert data.BOOLEAN_SCHEMA.type is Type.BOOLEAN and not data.BOOLEAN_SCHEMA.optional
    assert data.OPTIONAL_BYTES_SCHEMA.optional
    for kind in (
        "INT8",
        "INT16",
        "INT32",
        "INT64",
        "FLOAT32",
        "FLOAT64",
        "BOOLEAN",
        "STRING",
        "BYTES",
    ):
        assert getattr(Schema, f"{kind}_SCHEMA").type is Type[kind]
        assert getattr(Schema, f"OPTIONAL_{kind}_SCHEMA").optional


def test_builder_equality_and_hash_by_content() -> None:
    a, b = user_schema(), user_schema()
    assert a == b and hash(a) == hash(b)
    assert a is not b
    assert {a: 1}[b] == 1
    assert SchemaBuilder.int32().build() == Schema.INT32_SCHEMA
    assert SchemaBuilder.int32().optional().build() != Schema.INT32_SCHEMA
    assert SchemaBuilder.string().name("x").build() != SchemaBuilder.string().name("y").build()


def test_schema_accessors() -> None:
    schema = user_schema()
    assert schema.name == "com.example.User" and schema.version == 2 and schema.doc == "A user"
    assert [f.name for f in schema.fields] == ["id", "email", "tags", "scores", "address", "active"]
    assert schema.field("email") == Field("email", 1, Schema.OPTIONAL_STRING_SCHEMA)
    assert schema.field("nope") is None
    scores = schema.field("scores").schema
    assert scores.key_schema == Schema.STRING_SCHEMA and scores.value_schema == Schema.INT32_SCHEMA
    assert schema.field("tags").schema.value_schema == Schema.STRING_SCHEMA
    assert schema.field("active").schema.default_value is True
    with pytest.raises(DataException):
        Schema.STRING_SCHEMA.field("x")


def test_schema_is_immutable() -> None:
    schema = user_schema()
    with pytest.raises(AttributeError):
        schema.name = "other"  # type: ignore[misc]
    schema.fields.clear()
    assert len(schema.fields) == 6
    params = SchemaBuilder.string().parameter("k", "v").build()
    params.parameters["k"] = "changed"  # type: ignore[index]
    assert params.parameters == {"k": "v"}


def test_builder_rejects_conflicting_and_duplicate_settings() -> None:
    with pytest.raises(SchemaBuilderException, match="name"):
        SchemaBuilder.string().name("a").name("b")
    SchemaBuilder.string().name("a").name("a")  # same value is fine
    with pytest.raises(SchemaBuilderException, match="optional"):
        SchemaBuilder.string().optional().required()
    # Kafka's SchemaBuilder.field words (InsertField's DLQ message carries them).
    with pytest.raises(
        SchemaBuilderException, match="^Cannot create field because of field name duplication id$"
    ):
        SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).field("id", Schema.INT64_SCHEMA)
    with pytest.raises(SchemaBuilderException, match="^Cannot create fields on type INT32$"):
        SchemaBuilder.int32().field("x", Schema.INT32_SCHEMA)
    with pytest.raises(SchemaBuilderException, match=r"^fieldName cannot be null\.$"):
        SchemaBuilder.struct().field("", Schema.INT32_SCHEMA)


def test_builder_validates_default() -> None:
    with pytest.raises(DataException, match="expected int32"):
        SchemaBuilder.int32().default_value("nope")
    with pytest.raises(DataException, match="out of range"):
        SchemaBuilder.int8().default_value(1000)
    assert SchemaBuilder.float64().default_value(1).build().default_value == 1


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        (Schema.INT8_SCHEMA, [-128, 127], [128, -129, True, 1.0, "1"]),
        (Schema.INT16_SCHEMA, [-(2**15), 2**15 - 1], [2**15, -(2**15) - 1]),
        (Schema.INT32_SCHEMA, [-(2**31), 2**31 - 1], [2**31, -(2**31) - 1]),
        (Schema.INT64_SCHEMA, [-(2**63), 2**63 - 1], [2**63, -(2**63) - 1]),
        (Schema.FLOAT32_SCHEMA, [1.5, 2], ["1.5", False]),
        (Schema.FLOAT64_SCHEMA, [1e300, -3], [None]),
        (Schema.BOOLEAN_SCHEMA, [True, False], [1, "true"]),
        (Schema.STRING_SCHEMA, ["", "x"], [b"x", 1]),
        (Schema.BYTES_SCHEMA, [b"x", bytearray(b"y"), memoryview(b"z")], ["x", [1]]),
    ],
)
def test_primitive_validation(schema: Schema, good: list[object], bad: list[object]) -> None:
    for value in good:
        schema.validate_value(value)
    for value in bad:
        with pytest.raises(DataException):
            schema.validate_value(value)


def test_int_range_error_names_field_and_range() -> None:
    with pytest.raises(DataException) as info:
        Schema.INT16_SCHEMA.validate_value(40000, field_path="order.qty")
    message = str(info.value)
    assert 'field "order.qty"' in message and "int16" in message and "32767" in message


def test_none_allowed_only_if_optional_or_default() -> None:
    Schema.OPTIONAL_INT32_SCHEMA.validate_value(None)
    SchemaBuilder.int32().default_value(3).build().validate_value(None)
    with pytest.raises(DataException, match="required int32"):
        Schema.INT32_SCHEMA.validate_value(None)


def test_nested_array_and_map_errors_name_the_path() -> None:
    schema = SchemaBuilder.map(
        Schema.STRING_SCHEMA, SchemaBuilder.array(Schema.INT8_SCHEMA)
    ).build()
    schema.validate_value({"a": [1, 2], "b": []})
    with pytest.raises(DataException, match=r"scores\['b'\]\[1\].*out of range"):
        schema.validate_value({"a": [1], "b": [0, 300]}, field_path="scores")
    with pytest.raises(DataException, match="key 1"):
        schema.validate_value({1: []}, field_path="scores")
    with pytest.raises(DataException, match="expected array"):
        SchemaBuilder.array(Schema.INT8_SCHEMA).build().validate_value({1, 2})


def test_struct_put_get_defaults_and_equality() -> None:
    schema = user_schema()
    address = Struct(schema.field("address").schema).put("city", "Oslo")
    user = Struct(schema).put("id", 7).put("address", address).put("tags", ["a"])
    assert user.get("id") == 7
    assert user.get("email") is None
    assert user.get("active") is True  # schema default
    assert user.get_without_default("active") is None
    user.validate()
    twin = (
        Struct(schema)
        .put("id", 7)
        .put("address", Struct(address.schema).put("city", "Oslo"))
        .put("tags", ["a"])
    )
    assert user == twin
    assert user != twin.put("email", "x@example.com")
    assert repr(user).startswith("Struct{") and "id=7" in repr(user)


def test_struct_errors_name_the_field() -> None:
    schema = user_schema()
    with pytest.raises(DataException, match='Unknown field "nmae"'):
        Struct(schema).put("nmae", "x")
    with pytest.raises(DataException, match='field "id".*expected int64, got str'):
        Struct(schema).put("id", "7")
    with pytest.raises(DataException, match='Missing required field "id"'):
        Struct(schema).validate()
    inner_missing = (
        Struct(schema).put("id", 1).put("address", Struct(schema.field("address").schema))
    )
    with pytest.raises(DataException, match='"address.city"'):
        inner_missing.validate()
    with pytest.raises(DataException, match="struct schema"):
        other = SchemaBuilder.struct().name("Other").field("city", Schema.STRING_SCHEMA).build()
        Struct(schema).put("address", Struct(other).put("city", "x"))
    with pytest.raises(DataException):
        Struct(Schema.STRING_SCHEMA)


def test_struct_from_dict_builds_nested_structs() -> None:
    schema = user_schema()
    user = Struct.from_dict(schema, {"id": 1, "address": {"city": "Rome"}, "scores": {"x": 1}})
    assert user.get("address").get("city") == "Rome"
    assert user.to_dict()["address"] == {"city": "Rome"}
    with pytest.raises(DataException, match='"address"'):
        Struct.from_dict(schema, {"id": 1})


def test_struct_from_values_and_field_values() -> None:
    schema = user_schema()
    address = Struct(schema.field("address").schema).put("city", "Oslo")
    user = Struct(schema).put("id", 7).put("address", address).put("tags", ["a"])
    values = user.field_values()
    assert values == [7, None, ["a"], None, address, None]  # unset fields None, no defaults
    values[0] = 8  # a copy: the struct is untouched
    assert user.get("id") == 7
    rebuilt = Struct.from_values(schema, values)
    assert rebuilt == Struct(schema).put("id", 8).put("address", address).put("tags", ["a"])
    assert rebuilt.get("active") is True  # defaults still apply on get()
    assert Struct.from_values(schema, tuple(values)) == rebuilt  # any iterable


def test_struct_from_values_checks_what_put_checks_unless_told_not_to() -> None:
    schema = user_schema()
    address = Struct(schema.field("address").schema).put("city", "Oslo")
    bad = ["7", None, None, None, address, None]
    with pytest.raises(DataException, match='field "id".*expected int64, got str'):
        Struct.from_values(schema, bad)
    unchecked = Struct.from_values(schema, bad, validate=False)
    with pytest.raises(DataException, match='field "id".*expected int64, got str'):
        unchecked.validate()  # the wrong value surfaces when the struct is validated
    with pytest.raises(DataException, match="6 fields, 2 values"):
        Struct.from_values(schema, [1, None], validate=False)
    with pytest.raises(DataException, match="struct schema, got string"):
        Struct.from_values(Schema.STRING_SCHEMA, [])


def test_struct_maker_builds_what_from_values_builds_unchecked() -> None:
    schema = user_schema()
    make = Struct.maker(schema)
    address = Struct(schema.field("address").schema).put("city", "Oslo")
    values: list[object] = [7, None, ["a"], None, address, None]
    made = make(values)
    assert made == Struct.from_values(schema, values, validate=False)
    assert made.schema is schema and made.get("active") is True  # defaults on get()
    assert made.field_values() == values and made.field_values() is not values
    assert make(tuple(values)) == made  # type: ignore[arg-type]  # any iterable, as a list
    unchecked = make(["7", None, None, None, address, None])  # not checked: as validate=False
    with pytest.raises(DataException, match='field "id".*expected int64, got str'):
        unchecked.validate()
    with pytest.raises(DataException, match="6 fields, 2 values"):
        make([1, None])
    with pytest.raises(DataException, match="struct schema, got string"):
        Struct.maker(Schema.STRING_SCHEMA)


def test_struct_schema_is_read_only() -> None:
    struct = Struct(user_schema())
    assert struct.schema == user_schema()
    with pytest.raises(AttributeError):
        struct.schema = Schema.STRING_SCHEMA  # type: ignore[misc]


def test_schema_and_value() -> None:
    sv = SchemaAndValue(Schema.STRING_SCHEMA, "x")
    assert sv.schema is Schema.STRING_SCHEMA and sv.value == "x"
    assert NULL_SCHEMA_AND_VALUE == SchemaAndValue(None, None)
    assert SchemaAndValue.NULL is NULL_SCHEMA_AND_VALUE  # type: ignore[attr-defined]
