from __future__ import annotations

import pytest
from copycat_transforms import ReplaceFieldKey, ReplaceFieldValue
from plugin_api.testing import apply_transform

from plugin_api import ConfigException, DataException, Schema, SchemaBuilder, SinkRecord, Struct


def rec(value, schema=None, key=None, key_schema=None) -> SinkRecord:
    return SinkRecord("topic", 0, key_schema, key, schema, value, 0)


VALUE = {"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"}


def test_schemaless_exclude_rename() -> None:
    config = {"exclude": "dont", "renames": "abc:xyz,foo:bar"}
    out = apply_transform(ReplaceFieldValue, config, rec(dict(VALUE)))
    assert out.value == {"xyz": 42, "bar": True, "etc": "etc"}


def test_schemaless_include() -> None:
    out = apply_transform(ReplaceFieldValue, {"include": "abc,foo"}, rec(dict(VALUE)))
    assert out.value == {"abc": 42, "foo": True}


def test_deprecated_names() -> None:
    out = apply_transform(ReplaceFieldValue, {"blacklist": "dont,etc"}, rec(dict(VALUE)))
    assert out.value == {"abc": 42, "foo": True}
    out = apply_transform(ReplaceFieldValue, {"whitelist": "abc"}, rec(dict(VALUE)))
    assert out.value == {"abc": 42}
    # The new name wins when both are given.
    out = apply_transform(
        ReplaceFieldValue, {"whitelist": "abc", "include": "foo"}, rec(dict(VALUE))
    )
    assert out.value == {"foo": True}


def test_schemaful() -> None:
    schema = (
        SchemaBuilder.struct()
        .name("n")
        .field("dont", Schema.STRING_SCHEMA)
        .field("abc", Schema.INT32_SCHEMA)
        .field("foo", Schema.BOOLEAN_SCHEMA)
        .field("etc", Schema.STRING_SCHEMA)
        .build()
    )
    value = Struct.from_dict(schema, VALUE)
    out = apply_transform(
        ReplaceFieldValue, {"exclude": "dont", "renames": "abc:xyz,foo:bar"}, rec(value, schema)
    )
    s = out.value_schema
    assert s.name == "n"
    assert [f.name for f in s.fields] == ["xyz", "bar", "etc"]
    assert out.value.to_dict() == {"xyz": 42, "bar": True, "etc": "etc"}


def test_key_variant() -> None:
    out = apply_transform(ReplaceFieldKey, {"renames": "id:key_id"}, rec("v", key={"id": 1}))
    assert out.key == {"key_id": 1}
    assert out.value == "v"


def test_tombstone_and_wrong_data() -> None:
    r = rec(None)
    assert apply_transform(ReplaceFieldValue, {"exclude": "a"}, r) is r
    with pytest.raises(
        DataException,
        match=r"Only Map objects supported in absence of schema for \[field replacement\], found: java\.lang\.Long",  # noqa: E501
    ):
        apply_transform(ReplaceFieldValue, {"exclude": "a"}, rec(1))
    schema = SchemaBuilder.struct().field("a", Schema.INT8_SCHEMA).build()
    with pytest.raises(
        DataException, match=r"Only Struct objects supported for \[field replacement\]"
    ):
        apply_transform(ReplaceFieldValue, {"exclude": "a"}, rec({"a": 1}, schema))


def test_bad_renames() -> None:
    with pytest.raises(ConfigException, match="Invalid rename mapping: abc") as info:
        ReplaceFieldValue().configure({"renames": "abc,foo:bar"})
    assert info.value.name == "renames"
    errors = {
        r.name: r.error_messages
        for r in ReplaceFieldValue().config().validate({"renames": "a:b:c"})
    }
    assert errors["renames"]


@pytest.mark.parametrize(
    ("renames", "valid"),
    # Java's String.split drops trailing empty parts, as Kafka Connect 4.1.1 reads them
    [("a:", False), (":", False), ("a::", False), ("a:b:", True), (":b", True)],
)
def test_renames_split_as_java_splits(renames: str, valid: bool) -> None:
    errors = {
        r.name: r.error_messages
        for r in ReplaceFieldValue().config().validate({"renames": renames})
    }
    reason = f"Invalid rename mapping: {renames}"
    expected = [] if valid else [f"Invalid value [{renames}] for configuration renames: {reason}"]
    assert errors["renames"] == expected
