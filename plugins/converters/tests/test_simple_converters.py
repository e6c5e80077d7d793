"""StringConverter and ByteArrayConverter."""

from __future__ import annotations

import datetime

import pytest
from copycat_converters import ByteArrayConverter, StringConverter, __version__
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin_api import (
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    INT32_SCHEMA,
    OPTIONAL_BYTES_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    ConfigException,
    DataException,
    Schema,
    SchemaBuilder,
    Struct,
    Timestamp,
    Utf8Texts,
    converter_round_trip,
)


def string_converter(**config: str) -> StringConverter:
    converter = StringConverter()
    converter.configure({k.replace("_", "."): v for k, v in config.items()}, True)
    return converter


def test_string_round_trip_and_null() -> None:
    assert converter_round_trip(StringConverter, {}, "t", STRING_SCHEMA, "héllo") == (
        OPTIONAL_STRING_SCHEMA,
        "héllo",
    )
    converter = string_converter()
    assert converter.from_connect_data("t", None, None) is None
    assert converter.to_connect_data("t", None) == (OPTIONAL_STRING_SCHEMA, None)


def test_string_converts_ints_and_bytes() -> None:
    converter = string_converter()
    assert converter.from_connect_data("t", INT32_SCHEMA, 42) == b"42"
    assert converter.from_connect_data("t", None, b"raw") == b"raw"


_LINE = (
    SchemaBuilder.struct()
    .field("line", STRING_SCHEMA)
    .field("src", STRING_SCHEMA)
    .field("ts", Timestamp.SCHEMA)
    .build()
)


@pytest.mark.parametrize(
    ("schema", "value", "text"),
    [
        # Kafka's StringConverter writes value.toString(): Struct.toString, Date.toString,
        # Double.toString, Boolean.toString, AbstractMap/AbstractCollection.toString.
        (
            _LINE,
            Struct(_LINE)
            .put("line", "hello")
            .put("src", "file")
            .put("ts", datetime.datetime(2026, 11, 28, 18, 59, 56, tzinfo=datetime.UTC)),
            "Struct{line=hello,src=file,ts=Sat Nov 28 18:59:56 UTC 2026}",
        ),
        (
            Timestamp.SCHEMA,
            datetime.datetime(2026, 11, 28, 18, 59, 56, tzinfo=datetime.UTC),
            "Sat Nov 28 18:59:56 UTC 2026",
        ),
        (None, 1e7, "1.0E7"),
        (FLOAT32_SCHEMA, 0.1, "0.1"),
        (None, False, "false"),
        (None, {"n": 1e7, "ok": True, "l": ["a", None]}, "{n=1.0E7, ok=true, l=[a, null]}"),
    ],
)
def test_string_writes_other_values_as_java_to_string(
    schema: Schema | None, value: object, text: str
) -> None:
    converter = string_converter()
    assert converter.from_connect_data("t", schema, value) == text.encode()
    assert converter.from_connect_header("t", "h", schema, value) == text.encode()
    # A batch reaches the same text, each value with its own schema.
    batch = converter.from_connect_data_batch("t", [schema, None], [value, "x"], [None, None])
    assert list(batch) == [text.encode(), b"x"]


def test_string_decodes_invalid_utf8_with_replacement_characters() -> None:
    converter = string_converter()
    result = converter.to_connect_data("t", b"ok \xff\xfe end")
    assert result == (OPTIONAL_STRING_SCHEMA, "ok \ufffd\ufffd end")
    assert type(result).__name__ == "SchemaAndValue" and result.schema is OPTIONAL_STRING_SCHEMA
    assert converter.to_connect_data("t", bytearray(b"h\xc3\xa9")).value == "hé"
    assert converter.to_connect_data("t", memoryview(b"\xc3")).value == "\ufffd"


def test_string_encoding_config() -> None:
    converter = string_converter(converter_encoding="ISO-8859-1")
    assert converter.from_connect_data("t", STRING_SCHEMA, "é") == b"\xe9"
    assert converter.to_connect_data("t", b"\xe9").value == "é"
    # Unmappable characters become '?', as Java's String.getBytes does.
    assert string_converter(converter_encoding="US-ASCII").from_connect_data("t", None, "é") == b"?"


def test_string_bad_encoding_names_the_key() -> None:
    with pytest.raises(ConfigException, match="converter.encoding"):
        string_converter(converter_encoding="no-such-charset")
    errors = {
        v.name: v.error_messages
        for v in StringConverter()
        .config()
        .validate({"converter.encoding": "nope", "converter.type": "value"})
    }
    assert errors["converter.encoding"]


def test_string_header_converter() -> None:
    converter = StringConverter()
    converter.configure({})
    assert converter.from_connect_header("t", "h", None, "v") == b"v"
    assert converter.to_connect_header("t", "h", b"v") == (OPTIONAL_STRING_SCHEMA, "v")


def test_bytearray_pass_through() -> None:
    assert converter_round_trip(ByteArrayConverter, {}, "t", BYTES_SCHEMA, b"\x00\xff") == (
        OPTIONAL_BYTES_SCHEMA,
        b"\x00\xff",
    )
    converter = ByteArrayConverter()
    converter.configure({}, False)
    assert converter.from_connect_data("t", None, bytearray(b"ab")) == b"ab"
    assert converter.from_connect_data("t", OPTIONAL_BYTES_SCHEMA, None) is None
    assert converter.to_connect_data("t", None) == (OPTIONAL_BYTES_SCHEMA, None)


def test_bytearray_rejects_other_schemas_and_values() -> None:
    converter = ByteArrayConverter()
    with pytest.raises(DataException, match="Invalid schema type for ByteArrayConverter: STRING"):
        converter.from_connect_data("t", STRING_SCHEMA, b"x")
    with pytest.raises(DataException, match="not compatible with objects of type str"):
        converter.from_connect_data("t", None, "x")


def test_aliases_and_versions() -> None:
    assert StringConverter.KAFKA_CLASS_ALIASES == (
        "org.apache.kafka.connect.storage.StringConverter",
    )
    assert ByteArrayConverter.KAFKA_CLASS_ALIASES == (
        "org.apache.kafka.connect.converters.ByteArrayConverter",
    )
    assert StringConverter().version() == ByteArrayConverter().version() == __version__


def test_entry_points_are_declared() -> None:
    from importlib.metadata import entry_points

    converters = {ep.name: ep.value for ep in entry_points(group="copycat.converters")}
    assert converters["JsonConverter"] == "copycat_converters:JsonConverter"
    assert {"StringConverter", "ByteArrayConverter"} <= converters.keys()


BATCH_INPUTS = [
    b"plain",
    "héllo".encode(),
    b"",
    None,
    b"\xff\xfe bad",
    bytearray(b"ba"),
    memoryview(b"mv"),
]


@pytest.mark.parametrize(
    "data", [BATCH_INPUTS, BATCH_INPUTS[:3], [None, None]], ids=["mixed", "valid", "nulls"]
)
@pytest.mark.parametrize("encoding", ["UTF-8", "latin-1"])
def test_string_batch_gives_what_each_record_gives(data: list, encoding: str) -> None:
    converter = string_converter(converter_encoding=encoding)
    expected = [converter.to_connect_data("t", value) for value in data]
    result = converter.to_connect_data_batch("t", data, [None] * len(data))
    assert [tuple(pair) for pair in result] == [tuple(pair) for pair in expected]
    assert all(
        type(value) is type(pair.value) for (_, value), pair in zip(result, expected, strict=True)
    )


def test_bytearray_batch_gives_what_each_record_gives() -> None:
    converter = ByteArrayConverter()
    data = [b"a", None, b""]
    assert [tuple(pair) for pair in converter.to_connect_data_batch("t", data, [None] * 3)] == [
        tuple(converter.to_connect_data("t", value)) for value in data
    ]


FROM_CONNECT_INPUTS: list[object] = ["plain", "é and ü", None, 42, b"raw \xc3\xa9", "\ud800 lone"]


@pytest.mark.parametrize(
    "values",
    [FROM_CONNECT_INPUTS, ["a", "b"], [None, None], ["a", None], ["\ud800"]],
    ids=["mixed", "strings", "nulls", "string and null", "surrogate"],
)
@pytest.mark.parametrize("encoding", ["UTF-8", "latin-1"])
def test_string_batch_encodes_what_each_record_encodes(values: list, encoding: str) -> None:
    converter = string_converter(converter_encoding=encoding)
    expected = [converter.from_connect_data("t", None, value) for value in values]
    nothing = [None] * len(values)
    assert list(converter.from_connect_data_batch("t", nothing, values, nothing)) == expected


# -- Utf8Texts: a column of text that keeps its UTF-8 bytes --------------------------------

column_data = st.lists(
    st.one_of(
        st.none(),
        st.binary(max_size=8),
        st.text(max_size=8).map(str.encode),
        st.sampled_from([b"\xc3", b"\xff", "\u20ac".encode()]),
    ),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(data=column_data, encoding=st.sampled_from(["UTF-8", "latin-1", "UTF-16"]))
def test_a_string_column_gives_what_each_record_gives(data: list, encoding: str) -> None:
    """A column of UTF-8 bytes comes back as Utf8Texts holding the very bytes consumed; every
    value equals the per-record one, and anything else (nulls, invalid UTF-8, another
    encoding) is left to to_connect_data_batch."""
    converter = string_converter(converter_encoding=encoding)
    expected = [converter.to_connect_data("t", value).value for value in data]
    answer = converter.to_connect_data_column("t", data, [None] * len(data))
    utf8 = encoding == "UTF-8"
    all_valid = all(value is not None and _is_utf8(value) for value in data)
    if not (utf8 and all_valid):
        assert answer is None
        return
    assert answer is not None
    schema, values = answer
    assert schema == OPTIONAL_STRING_SCHEMA
    assert type(values) is Utf8Texts and values.encoded == data
    assert list(values) == expected


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(st.text(max_size=8), max_size=12), encoding=st.sampled_from(["UTF-8", "latin-1"])
)
def test_utf8_texts_are_produced_as_each_text_is_encoded(texts: list[str], encoding: str) -> None:
    """StringConverter takes Utf8Texts' bytes as they are when it encodes UTF-8; in any other
    encoding it encodes each text as from_connect_data does."""
    converter = string_converter(converter_encoding=encoding)
    column = Utf8Texts([text.encode() for text in texts])
    nothing = [None] * len(texts)
    expected = [converter.from_connect_data("t", STRING_SCHEMA, text) for text in texts]
    assert list(converter.from_connect_data_batch("t", nothing, column, nothing)) == expected


def _is_utf8(value: bytes) -> bool:
    try:
        value.decode()
    except UnicodeDecodeError:
        return False
    return True
