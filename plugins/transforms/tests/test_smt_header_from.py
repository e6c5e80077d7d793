from __future__ import annotations

import pytest
from copycat_transforms import HeaderFromKey, HeaderFromValue
from copycat_transforms._util import NullPointerException
from plugin_api.testing import apply_transform

from plugin_api import (
    ConfigException,
    DataException,
    Header,
    Schema,
    SchemaBuilder,
    SinkRecord,
    Struct,
)

SCHEMA = (
    SchemaBuilder.struct()
    .name("s")
    .field("a", Schema.STRING_SCHEMA)
    .field("b", Schema.INT32_SCHEMA)
    .build()
)


def rec(value, schema=None, key=None, key_schema=None) -> SinkRecord:
    return SinkRecord("topic", 0, key_schema, key, schema, value, 0, headers=[("existing", "x")])


def test_schemaful_copy_and_move() -> None:
    value = Struct(SCHEMA).put("a", "A").put("b", 2)
    config = {"fields": "a,b", "headers": "ha,hb", "operation": "copy"}
    out = apply_transform(HeaderFromValue, config, rec(value, SCHEMA))
    assert out.value is value and out.value_schema is SCHEMA
    assert list(out.headers) == [
        Header("existing", "x"),
        Header("ha", "A", Schema.STRING_SCHEMA),
        Header("hb", 2, Schema.INT32_SCHEMA),
    ]
    out = apply_transform(
        HeaderFromValue,
        {**config, "operation": "move", "fields": "a", "headers": "ha"},
        rec(value, SCHEMA),
    )
    assert [f.name for f in out.value_schema.fields] == ["b"]
    assert out.value_schema.name == "s"
    assert out.value.get("b") == 2
    assert out.headers.last_with_name("ha").value == "A"


def test_schemaless_key_move() -> None:
    config = {"fields": "id,missing", "headers": "h_id,h_missing", "operation": "move"}
    out = apply_transform(HeaderFromKey, config, rec("v", key={"id": 7, "other": 1}))
    assert out.key == {"other": 1}
    assert out.headers.last_with_name("h_id").value == 7
    assert out.headers.last_with_name("h_missing").value is None
    assert out.value == "v"


def test_data_errors() -> None:
    config = {"fields": "a", "headers": "h", "operation": "copy"}
    with pytest.raises(
        DataException,
        match=r"Only Map objects supported in absence of schema for \[header copy\], found: java\.lang\.String",  # noqa: E501
    ):
        apply_transform(HeaderFromValue, config, rec("x"))
    with pytest.raises(DataException, match=r"Only Struct objects supported for \[header copy\]"):
        apply_transform(HeaderFromValue, config, rec({"a": 1}, SCHEMA))
    with pytest.raises(NullPointerException) as missing:
        apply_transform(
            HeaderFromValue,
            {**config, "fields": "nope"},
            rec(Struct(SCHEMA).put("a", "A").put("b", 1), SCHEMA),
        )
    # Kafka's HeaderFrom 4.1.1 fails there with the JVM's message, measured side by side.
    assert str(missing.value) == (
        'Cannot invoke "org.apache.kafka.connect.data.Field.schema()" because the return '
        'value of "org.apache.kafka.connect.data.Schema.field(String)" is null'
    )
    assert NullPointerException.KAFKA_CLASS_ALIASES == ("java.lang.NullPointerException",)


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"headers": "h", "operation": "copy"}, "fields"),
        ({"fields": "", "headers": "h", "operation": "copy"}, "fields"),
        ({"fields": "a", "headers": "h", "operation": "steal"}, "operation"),
        ({"fields": "a,b", "headers": "h", "operation": "copy"}, "headers"),
    ],
)
def test_bad_config(config, key) -> None:
    with pytest.raises(ConfigException) as info:
        HeaderFromValue().configure(config)
    assert info.value.name == key
