"""DropHeaders, InsertHeader and Filter."""

from __future__ import annotations

import datetime

import pytest
from copycat_transforms import DropHeaders, Filter, InsertHeader
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_api.testing import apply_transform

from plugin_api import ConfigException, Date, Header, Schema, SchemaBuilder, SinkRecord, Timestamp


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


# Kafka Connect 4.1.1's InsertHeader (Values.parseString of the trimmed config string), read
# from the connect-api-4.1.1 jar: a tester saw Copycat keep each of these a string or a float.
_ARRAY_INT8 = SchemaBuilder.array(Schema.INT8_SCHEMA).build()


@pytest.mark.parametrize(
    ("literal", "schema", "value"),
    [
        ("[1, 2]", _ARRAY_INT8, [1, 2]),
        ("[1,2]", _ARRAY_INT8, [1, 2]),
        ("[true]", SchemaBuilder.array(Schema.BOOLEAN_SCHEMA).build(), [True]),
        ('{"a": 1}', SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT8_SCHEMA).build(), {"a": 1}),
        ("[[1, 2], [3]]", SchemaBuilder.array(_ARRAY_INT8).build(), [[1, 2], [3]]),
        (
            '{"a":[1, 2]}',
            SchemaBuilder.map(Schema.STRING_SCHEMA, _ARRAY_INT8).build(),
            {"a": [1, 2]},
        ),
        ('[1, 2.5, "x"]', None, [1, 2.5, "x"]),  # Kafka: an ARRAY with no element schema
        ("null", None, None),
        ("1e3", Schema.INT16_SCHEMA, 1000),
        ("1.0", Schema.INT8_SCHEMA, 1),
        ("1.", Schema.INT8_SCHEMA, 1),
        (".5", Schema.STRING_SCHEMA, ".5"),
        ("TRUE", Schema.STRING_SCHEMA, "TRUE"),
        (" padded ", Schema.STRING_SCHEMA, "padded"),
        ("12:34:56", Schema.INT8_SCHEMA, 12),
        ("12:34:56.789", Schema.INT8_SCHEMA, 12),
        ("2024-13-01", Date.SCHEMA, datetime.date(2025, 1, 1)),
    ],
)
def test_insert_header_types_literal_as_kafka_values_parse_string(literal, schema, value) -> None:
    out = apply_transform(InsertHeader, {"header": "h0", "value.literal": literal}, rec())
    assert list(out.headers) == [Header("h0", value, schema)]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-128, 127), min_size=1, max_size=5),
    st.sampled_from(["", " ", "  "]),
)
def test_an_int8_array_literal_is_an_int8_array_header_however_spaced(items, space) -> None:
    literal = "[" + f",{space}".join(map(str, items)) + "]"
    out = apply_transform(InsertHeader, {"header": "h", "value.literal": literal}, rec())
    assert list(out.headers) == [Header("h", items, _ARRAY_INT8)]


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=12), st.sampled_from([" ", "\t", "  "]))
def test_a_literal_is_parsed_as_config_def_reads_it_trimmed(text, pad) -> None:
    padded = apply_transform(
        InsertHeader, {"header": "h", "value.literal": pad + text + pad}, rec()
    )
    # Java's String.trim, as ConfigDef: U+0000..U+0020 only (a \x85 or no-break space stays)
    java_trimmed = text.strip("".join(map(chr, range(0x21))))
    trimmed = apply_transform(InsertHeader, {"header": "h", "value.literal": java_trimmed}, rec())
    assert list(padded.headers) == list(trimmed.headers)
