"""DropHeaders, InsertHeader and Filter."""

from __future__ import annotations

import datetime

import pytest
from copycat_transforms import DropHeaders, Filter, InsertHeader
from plugin_api.testing import apply_transform

from plugin_api import ConfigException, Header, Schema, SinkRecord, Timestamp


def rec(value="v", headers=None) -> SinkRecord:
    return SinkRecord("topic", 0, None, "k", None, value, 0, headers=headers)


def test_drop_headers() -> None:
    record = rec(headers=[("a", 1), ("b", 2), ("a", 3), ("c", 4)])
    out = apply_transform(DropHeaders, {"headers": "a,c"}, record)
    assert [(h.key, h.value) for h in out.headers] == [("b", 2)]
    assert out.value == "v" and out.key == "k"
    with pytest.raises(ConfigException) as info:
        DropHeaders().configure({"headers": ""})
    assert info.value.name == "headers"


@pytest.mark.parametrize(
    ("literal", "schema", "value"),
    [
        ("hello", Schema.STRING_SCHEMA, "hello"),
        ("42", Schema.INT8_SCHEMA, 42),
        ("70000", Schema.INT32_SCHEMA, 70000),
        ("true", Schema.BOOLEAN_SCHEMA, True),
        ("1.5", Schema.FLOAT32_SCHEMA, 1.5),
        (
            "2020-01-02T03:04:05.006Z",
            Timestamp.SCHEMA,
            datetime.datetime(2020, 1, 2, 3, 4, 5, 6000, tzinfo=datetime.UTC),
        ),
    ],
)
def test_insert_header_types_literal(literal, schema, value) -> None:
    record = rec(headers=[("existing", "x")])
    out = apply_transform(InsertHeader, {"header": "h", "value.literal": literal}, record)
    assert list(out.headers) == [Header("existing", "x"), Header("h", value, schema)]


def test_insert_header_config() -> None:
    for config, key in [({"value.literal": "x"}, "header"), ({"header": "h"}, "value.literal")]:
        with pytest.raises(ConfigException) as info:
            InsertHeader().configure(config)
        assert info.value.name == key


def test_filter_drops_everything() -> None:
    assert apply_transform(Filter, {}, rec()) is None
    assert apply_transform(Filter, {}, rec(None)) is None
    assert len(Filter().config()) == 0
