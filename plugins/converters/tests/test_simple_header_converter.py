"""SimpleHeaderConverter: Kafka's Values.convertToString / Values.parseString text format."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import pytest
from copycat_converters import SimpleHeaderConverter, simple_header
from copycat_converters._values import convert_to_string
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_api.values import _Parser, _ValueParser, parse_string

from plugin_api import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    STRING_SCHEMA,
    Date,
    Decimal,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
)

UTC = datetime.UTC


@pytest.fixture
def converter() -> SimpleHeaderConverter:
    c = SimpleHeaderConverter()
    c.configure({})
    return c


# (schema, value, text Kafka writes)
WRITE_VECTORS = [
    (STRING_SCHEMA, "hello", "hello"),
    (STRING_SCHEMA, 'with "quotes"', 'with "quotes"'),
    (BOOLEAN_SCHEMA, True, "true"),
    (INT8_SCHEMA, -5, "-5"),
    (INT64_SCHEMA, 2**40, "1099511627776"),
    (FLOAT64_SCHEMA, 1.0, "1.0"),
    (FLOAT64_SCHEMA, 1e10, "1.0E10"),
    (FLOAT64_SCHEMA, 0.001, "0.001"),
    (FLOAT64_SCHEMA, 1e-4, "1.0E-4"),
    (FLOAT32_SCHEMA, 0.1, "0.1"),
    (BYTES_SCHEMA, b"\x00\x01\xff", "AAH/"),
    (Decimal.schema(2), decimal.Decimal("12.34"), "12.34"),
    (SchemaBuilder.array(STRING_SCHEMA).build(), ["a", 'b"c', "d\\e"], '["a","b\\"c","d\\\\e"]'),
    (SchemaBuilder.array(INT32_SCHEMA).build(), [1, 2, 3], "[1,2,3]"),
    (SchemaBuilder.map(STRING_SCHEMA, INT32_SCHEMA).build(), {"a": 1, "b": 2}, '{"a":1,"b":2}'),
    (SchemaBuilder.map(INT32_SCHEMA, BOOLEAN_SCHEMA).build(), {1: True}, "{1:true}"),
    (SchemaBuilder.array(BYTES_SCHEMA).build(), [b"\x01"], '["AQ=="]'),
    (Date.SCHEMA, datetime.date(2024, 3, 5), "2024-03-05"),
    (Time.SCHEMA, datetime.time(13, 4, 5, 678000), "13:04:05.678Z"),
    (
        Timestamp.SCHEMA,
        datetime.datetime(2024, 3, 5, 13, 4, 5, 678000, tzinfo=UTC),
        "2024-03-05T13:04:05.678Z",
    ),
    # Kafka's dateFormatFor picks the format from the epoch millis: midnight prints as a date.
    (Timestamp.SCHEMA, datetime.datetime(2024, 3, 5, tzinfo=UTC), "2024-03-05"),
]


@pytest.mark.parametrize(("schema", "value", "text"), WRITE_VECTORS)
def test_written_text_matches_kafka(
    converter: SimpleHeaderConverter, schema, value, text: str
) -> None:  # noqa: ANN001
    assert converter.from_connect_header("t", "h", schema, value) == text.encode()


def test_struct_is_written_with_quoted_field_names(converter: SimpleHeaderConverter) -> None:
    schema = SchemaBuilder.struct().field("id", INT32_SCHEMA).field("name", STRING_SCHEMA).build()
    value = Struct(schema).put("id", 7).put("name", "x")
    assert converter.from_connect_header("t", "h", schema, value) == b'{"id":7,"name":"x"}'


def test_null_both_ways(converter: SimpleHeaderConverter) -> None:
    assert converter.from_connect_header("t", "h", None, None) is None
    assert converter.to_connect_header("t", "h", None) == (None, None)
    assert converter.to_connect_header("t", "h", b"null") == (None, None)


# (text, schema inferred, value)
PARSE_VECTORS = [
    ("", STRING_SCHEMA, ""),
    ("hello world", STRING_SCHEMA, "hello world"),
    ("true", BOOLEAN_SCHEMA, True),
    ("false", BOOLEAN_SCHEMA, False),
    ("true}", STRING_SCHEMA, "true}"),
    ("1", INT8_SCHEMA, 1),
    ("-128", INT8_SCHEMA, -128),
    ("128", INT16_SCHEMA, 128),
    ("40000", INT32_SCHEMA, 40000),
    ("3000000000", INT64_SCHEMA, 3000000000),
    ("1.0", INT8_SCHEMA, 1),
    ("1.5", FLOAT32_SCHEMA, 1.5),
    ("1e300", FLOAT64_SCHEMA, 1e300),
    ("99999999999999999999", Decimal.schema(0), decimal.Decimal("99999999999999999999")),
    ("12abc", STRING_SCHEMA, "12abc"),
    ("-", STRING_SCHEMA, "-"),
    ("2024-03-05", Date.SCHEMA, datetime.date(2024, 3, 5)),
    ("13:04:05.678Z", Time.SCHEMA, datetime.time(13, 4, 5, 678000)),
    (
        "2024-03-05T13:04:05.678Z",
        Timestamp.SCHEMA,
        datetime.datetime(2024, 3, 5, 13, 4, 5, 678000, tzinfo=UTC),
    ),
    ("[1,2,3]", SchemaBuilder.array(INT8_SCHEMA).build(), [1, 2, 3]),
    ("[1, 300, 2.5]", SchemaBuilder.array(FLOAT32_SCHEMA).build(), [1.0, 300.0, 2.5]),
    ('["a", "b"]', SchemaBuilder.array(STRING_SCHEMA).build(), ["a", "b"]),
    ("[true,false]", SchemaBuilder.array(BOOLEAN_SCHEMA).build(), [True, False]),
    ('{"a":1,"b":2}', SchemaBuilder.map(STRING_SCHEMA, INT8_SCHEMA).build(), {"a": 1, "b": 2}),
    ("{1:true}", SchemaBuilder.map(INT8_SCHEMA, BOOLEAN_SCHEMA).build(), {1: True}),
    (
        "[[1,2],[3]]",
        SchemaBuilder.array(SchemaBuilder.array(INT8_SCHEMA).build()).build(),
        [[1, 2], [3]],
    ),
    # Kafka quirks kept for compatibility.
    ("[1,2", STRING_SCHEMA, "[1,2"),
    ("[1,null]", STRING_SCHEMA, "[1,null]"),
    ("12:34", INT8_SCHEMA, 12),
]


@pytest.mark.parametrize(("text", "schema", "value"), PARSE_VECTORS)
def test_parsing_infers_schema_like_kafka(
    converter: SimpleHeaderConverter, text: str, schema, value
) -> None:  # noqa: ANN001
    assert converter.to_connect_header("t", "h", text.encode()) == (schema, value)


def test_containers_without_common_schema_have_no_schema() -> None:
    assert parse_string("[]") == (None, [])
    assert parse_string('[1,"a"]') == (None, [1, "a"])
    assert parse_string("{}") == (None, {})


def test_round_trip_through_text() -> None:
    cases = [
        (INT32_SCHEMA, 123456),
        (BOOLEAN_SCHEMA, False),
        (SchemaBuilder.array(STRING_SCHEMA).build(), ["x", "y z"]),
        (
            SchemaBuilder.map(STRING_SCHEMA, SchemaBuilder.array(INT16_SCHEMA).build()).build(),
            {"k": [1000, 2000]},
        ),
        (Timestamp.SCHEMA, datetime.datetime(2001, 2, 3, 4, 5, 6, 7000, tzinfo=UTC)),
        (Date.SCHEMA, datetime.date(1999, 12, 31)),
    ]
    for schema, value in cases:
        text = convert_to_string(schema, value)
        assert parse_string(text).value == value, text


def test_invalid_utf8_still_decodes(converter: SimpleHeaderConverter) -> None:
    assert converter.to_connect_header("t", "h", b"\xff\xfe") == (STRING_SCHEMA, "\ufffd\ufffd")


# Header-like text: Kafka's delimiters and literals mixed with anything, so the parser meets
# unterminated arrays and maps, bad numbers and temporals, and plain text.
_HEADER_TEXT = st.lists(
    st.sampled_from(["[", "]", "{", "}", ":", ",", '"', "\\", "1", "-", "e9", "true", "null"])
    | st.text(max_size=4),
    max_size=12,
).map("".join)


KNOWN_TYPES = {"STRING", "BOOLEAN", "INT8", "INT16", "INT32", "INT64", "FLOAT32", "FLOAT64"}
KNOWN_TYPES |= {"BYTES", "ARRAY", "MAP", "STRUCT"}


@settings(max_examples=400, deadline=None)
@given(data=st.binary(max_size=40) | _HEADER_TEXT.map(str.encode))
def test_reading_a_header_never_fails(data: bytes) -> None:
    # to_connect_header_never_fails lets a sink's runtime convert headers only when a task
    # reads a record: any input must have an answer.
    converter = SimpleHeaderConverter()
    assert converter.to_connect_header_never_fails is True
    schema, value = converter.to_connect_header("t", "h", data)
    assert schema is None or schema.type.name in KNOWN_TYPES


def test_an_unexpected_parser_error_gives_the_bytes(
    converter: SimpleHeaderConverter, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(text: str) -> Any:
        raise TypeError("a parser bug")

    monkeypatch.setattr(simple_header, "parse_string", broken)
    assert converter.to_connect_header("t", "h", b"[1,") == (BYTES_SCHEMA, b"[1,")


# Text without delimiters (one token): numbers, dates, times, literals, words, whitespace.
_TOKEN_TEXT = st.lists(
    st.sampled_from(["1", "0", "9", "-", "+", ".", "e", "E", "T", "Z", "2024-03-05", "null"])
    | st.sampled_from(["true", "false", " ", "\t", "\\", "x", "NaN", "Infinity", "_", "é"])
    | st.text(max_size=3),
    max_size=8,
).map("".join)


@settings(max_examples=600, deadline=None)
@given(text=_TOKEN_TEXT | _HEADER_TEXT)
def test_parsing_without_the_tokenizer_gives_what_the_tokenizer_gives(text: str) -> None:
    by_tokenizer = _ValueParser(_Parser(text)).parse(embedded=False) if text else None
    expected = (STRING_SCHEMA, text) if not text else by_tokenizer or (None, None)
    parsed = parse_string(text)
    assert parsed == expected
    assert parsed.schema == expected[0]  # Schema equality, and INT8 is not INT16
    assert type(parsed.value) is type(expected[1])


@settings(max_examples=400, deadline=None)
@given(
    number=st.integers(-(2**70), 2**70)
    | st.integers(-(2**15), 2**15)
    | st.integers(2**63 - 2, 10**19).flatmap(lambda n: st.sampled_from([n, -n])),
    sign=st.sampled_from(["", "+"]),
    zeros=st.sampled_from(["", "0", "000"]),
)
def test_an_integer_gets_the_narrowest_schema_that_holds_it(
    number: int, sign: str, zeros: str
) -> None:
    text = ("-" if number < 0 else sign) + zeros + str(abs(number))
    schema, value = parse_string(text)
    widths = [(INT8_SCHEMA, 8), (INT16_SCHEMA, 16), (INT32_SCHEMA, 32), (INT64_SCHEMA, 64)]
    fitting = [s for s, bits in widths if -(2 ** (bits - 1)) <= number < 2 ** (bits - 1)]
    if fitting:
        assert (schema, value, type(value)) == (fitting[0], number, int)
    else:  # beyond a long: a Decimal of scale 0, as Kafka's BigDecimal
        assert (schema, value) == (Decimal.schema(0), decimal.Decimal(number))


# Kafka 4.1.1: SimpleHeaderConverter's bytes for the header InsertHeader makes of a literal,
# Values.parseString then Values.convertToString (None: no value is written).
@pytest.mark.parametrize(
    ("literal", "written"),
    [
        ('[1, 2.5, "x"]', b'[1,2.5,"x"]'),
        ('{"a": 1}', b'{"a":1}'),
        ("[[1, 2], [3]]", b"[[1,2],[3]]"),
        ('{"a":[1, 2]}', b'{"a":[1,2]}'),
        ("null", None),
        ("1e3", b"1000"),
        ("12:34:56.789", b"12"),
        ("2024-13-01", b"2025-01-01"),
    ],
)
def test_a_parsed_literal_is_written_as_kafka_writes_it(
    converter: SimpleHeaderConverter, literal: str, written: bytes | None
) -> None:
    schema, value = parse_string(literal)
    assert converter.from_connect_header("t", "h", schema, value) == written
