"""JsonConverter: byte-exact envelopes, round trips for every type, Kafka's error cases."""

from __future__ import annotations

import datetime
import decimal
import json
import math
import re
import sys
from collections.abc import Callable

import pytest
from copycat_converters import JsonConverter, __version__
from copycat_converters._jsontext import java_double, java_float

from plugin_api import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    ConfigException,
    DataException,
    Date,
    Decimal,
    SchemaBuilder,
    SchemaBuilderException,
    Struct,
    Time,
    Timestamp,
    converter_round_trip,
    java_string,
)

UTC = datetime.UTC


def make(**config: object) -> JsonConverter:
    converter = JsonConverter()
    converter.configure({k.replace("_", "."): v for k, v in config.items()}, False)
    return converter


def envelope(converter: JsonConverter, schema, value) -> str:
    data = converter.from_connect_data("topic", schema, value)
    assert data is not None
    return data.decode("utf-8")


# -- byte-exact output --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        (INT32_SCHEMA, 42, '{"schema":{"type":"int32","optional":false},"payload":42}'),
        (STRING_SCHEMA, "foo", '{"schema":{"type":"string","optional":false},"payload":"foo"}'),
        (BOOLEAN_SCHEMA, True, '{"schema":{"type":"boolean","optional":false},"payload":true}'),
        (FLOAT64_SCHEMA, 12.5, '{"schema":{"type":"double","optional":false},"payload":12.5}'),
        (FLOAT64_SCHEMA, 1e10, '{"schema":{"type":"double","optional":false},"payload":1.0E10}'),
        (FLOAT64_SCHEMA, 0.0001, '{"schema":{"type":"double","optional":false},"payload":1.0E-4}'),
        (FLOAT64_SCHEMA, 3, '{"schema":{"type":"double","optional":false},"payload":3.0}'),
        (FLOAT32_SCHEMA, 0.1, '{"schema":{"type":"float","optional":false},"payload":0.1}'),
        (FLOAT64_SCHEMA, math.nan, '{"schema":{"type":"double","optional":false},"payload":"NaN"}'),
        (
            BYTES_SCHEMA,
            b"\x00\x01\xff",
            '{"schema":{"type":"bytes","optional":false},"payload":"AAH/"}',
        ),
        (
            OPTIONAL_STRING_SCHEMA,
            None,
            '{"schema":{"type":"string","optional":true},"payload":null}',
        ),
        (None, "schemaless", '{"schema":null,"payload":"schemaless"}'),
        (
            SchemaBuilder.array(INT8_SCHEMA).optional().build(),
            [1, 2],
            '{"schema":{"type":"array","items":{"type":"int8","optional":false},"optional":true},"payload":[1,2]}',
        ),
        (
            SchemaBuilder.map(STRING_SCHEMA, INT16_SCHEMA).build(),
            {"a": 1},
            '{"schema":{"type":"map","keys":{"type":"string","optional":false},'
            '"values":{"type":"int16","optional":false},"optional":false},"payload":{"a":1}}',
        ),
        (
            SchemaBuilder.map(INT32_SCHEMA, STRING_SCHEMA).build(),
            {1: "x", 2: "y"},
            '{"schema":{"type":"map","keys":{"type":"int32","optional":false},'
            '"values":{"type":"string","optional":false},"optional":false},"payload":[[1,"x"],[2,"y"]]}',
        ),
        (
            Decimal.schema(2),
            decimal.Decimal("1.56"),
            '{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal",'
            '"version":1,"parameters":{"scale":"2"}},"payload":"AJw="}',
        ),
        (
            SchemaBuilder.string().optional().default_value("default").build(),
            None,
            '{"schema":{"type":"string","optional":true,"default":"default"},"payload":"default"}',
        ),
        (
            SchemaBuilder.int64().name("n").version(3).doc("d").parameter("p", "v").build(),
            7,
            '{"schema":{"type":"int64","optional":false,"name":"n","version":3,"doc":"d",'
            '"parameters":{"p":"v"}},"payload":7}',
        ),
    ],
)
def test_envelope_bytes_match_kafka(schema, value, expected: str) -> None:
    assert envelope(make(), schema, value) == expected


def test_struct_envelope_field_order_matches_kafka() -> None:
    schema = (
        SchemaBuilder.struct()
        .field("content", STRING_SCHEMA)
        .field("the_timestamp", Timestamp.builder().optional().build())
        .build()
    )
    value = (
        Struct(schema)
        .put("content", "hi")
        .put("the_timestamp", datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC))
    )
    assert envelope(make(), schema, value) == (
        '{"schema":{"type":"struct","fields":[{"type":"string","optional":false,"field":"content"},'
        '{"type":"int64","optional":true,"name":"org.apache.kafka.connect.data.Timestamp","version":1,'
        '"field":"the_timestamp"}],"optional":false},"payload":{"content":"hi","the_timestamp":1000}}'
    )


def test_schemas_disabled_writes_bare_payload_and_tombstones() -> None:
    converter = make(schemas_enable="false")
    assert converter.from_connect_data("t", INT32_SCHEMA, 42) == b"42"
    assert converter.from_connect_data("t", None, {"a": [1, 2.5, None]}) == b'{"a":[1,2.5,null]}'
    assert converter.from_connect_data("t", None, None) is None
    assert make().from_connect_data("t", None, None) is None
    assert converter.from_connect_data("t", OPTIONAL_STRING_SCHEMA, None) == b"null"


def test_unicode_and_control_characters_are_written_like_jackson() -> None:
    assert make(schemas_enable="false").from_connect_data("t", STRING_SCHEMA, "é\x01\n\\u0001") == (
        '"é\\u0001\\n\\\\u0001"'.encode()
    )


def test_characters_outside_the_bmp_are_escaped_surrogate_pairs_like_jackson() -> None:
    # Kafka 4.x's Jackson writes U+1F984 as "\uD83E\uDD84", not as 4 UTF-8 bytes; the
    # differential test against Kafka Connect compares the bytes.
    expected = '"a \\uD83E\\uDD84 \u00e9 \\uD834\\uDD1E"'.encode()
    for schemas in ("false", "true"):
        for value in ("a \U0001f984 \u00e9 \U0001d11e",):
            out = make(schemas_enable=schemas).from_connect_data("t", STRING_SCHEMA, value)
            assert out is not None and out.endswith(
                expected if schemas == "false" else expected + b"}"
            )
    structured = make(schemas_enable="false").from_connect_data(
        "t", None, {"k\U0001f984": ["\U0001f984"]}
    )
    assert structured == b'{"k\\uD83E\\uDD84":["\\uD83E\\uDD84"]}'


def test_decimal_numeric_format() -> None:
    converter = make(decimal_format="numeric")
    text = envelope(converter, Decimal.schema(3), decimal.Decimal("-12.345"))
    assert text.endswith(',"payload":-12.345}')
    assert converter.to_connect_data("t", text.encode()).value == decimal.Decimal("-12.345")


def test_logical_types_encode_as_integers() -> None:
    converter = make(schemas_enable="false")
    assert converter.from_connect_data("t", Date.SCHEMA, datetime.date(1970, 1, 11)) == b"10"
    assert converter.from_connect_data("t", Time.SCHEMA, datetime.time(0, 0, 1, 500_000)) == b"1500"
    stamp = datetime.datetime(2001, 9, 9, 1, 46, 40, tzinfo=UTC)
    assert converter.from_connect_data("t", Timestamp.SCHEMA, stamp) == b"1000000000000"


# -- round trips --------------------------------------------------------------------------

NESTED = (
    SchemaBuilder.struct()
    .name("com.example.Outer")
    .field("id", INT64_SCHEMA)
    .field("tags", SchemaBuilder.array(STRING_SCHEMA).build())
    .field("scores", SchemaBuilder.map(STRING_SCHEMA, FLOAT64_SCHEMA).optional().build())
    .field("by_id", SchemaBuilder.map(INT32_SCHEMA, BOOLEAN_SCHEMA).build())
    .field(
        "inner",
        SchemaBuilder.struct()
        .field("b", BYTES_SCHEMA)
        .field("n", SchemaBuilder.int8().optional().build())
        .build(),
    )
    .field("price", Decimal.builder(2).optional().build())
    .field("day", Date.SCHEMA)
    .field("at", Time.SCHEMA)
    .field("ts", Timestamp.SCHEMA)
    .field("f32", FLOAT32_SCHEMA)
    .field("i16", INT16_SCHEMA)
    .build()
)


def nested_value() -> Struct:
    inner = Struct(NESTED.field("inner").schema).put("b", b"\x01\x02")
    return (
        Struct(NESTED)
        .put("id", 2**40)
        .put("tags", ["a", "b"])
        .put("scores", {"x": 1.5, "y": 1e-9})
        .put("by_id", {1: True, -5: False})
        .put("inner", inner)
        .put("price", decimal.Decimal("-10.05"))
        .put("day", datetime.date(2024, 2, 29))
        .put("at", datetime.time(23, 59, 59, 999_000))
        .put("ts", datetime.datetime(2024, 2, 29, 12, 0, 0, 123_000, tzinfo=UTC))
        .put("f32", 0.25)
        .put("i16", -300)
    )


@pytest.mark.parametrize("decimal_format", ["BASE64", "NUMERIC"])
@pytest.mark.parametrize(
    ("schema", "value"),
    [
        (INT8_SCHEMA, -128),
        (INT16_SCHEMA, 32767),
        (INT32_SCHEMA, -(2**31)),
        (INT64_SCHEMA, 2**63 - 1),
        (FLOAT32_SCHEMA, 1.5),
        (FLOAT64_SCHEMA, -1.25e300),
        (FLOAT64_SCHEMA, math.inf),
        (BOOLEAN_SCHEMA, False),
        (STRING_SCHEMA, "üñí\u2603"),
        (BYTES_SCHEMA, bytes(range(256))),
        (OPTIONAL_STRING_SCHEMA, None),
        (SchemaBuilder.array(SchemaBuilder.array(INT32_SCHEMA).build()).build(), [[1], [], [2, 3]]),
        (SchemaBuilder.map(STRING_SCHEMA, STRING_SCHEMA).build(), {"k": "v"}),
        (Decimal.schema(0), decimal.Decimal("123456789012345678901234567890")),
        (Date.SCHEMA, datetime.date(1969, 12, 31)),
        (Time.SCHEMA, datetime.time(0, 0)),
        (Timestamp.SCHEMA, datetime.datetime(1960, 1, 1, tzinfo=UTC)),
        (NESTED, nested_value()),
    ],
)
def test_round_trip_every_type(schema, value, decimal_format: str) -> None:
    config = {"decimal.format": decimal_format}
    result = converter_round_trip(JsonConverter, config, "t", schema, value)
    assert result.schema == schema
    assert result.value == value


def test_round_trip_nan() -> None:
    result = converter_round_trip(JsonConverter, {}, "t", FLOAT64_SCHEMA, math.nan)
    assert math.isnan(result.value)


def test_round_trip_is_stable_on_second_pass() -> None:
    converter = make()
    first = converter.from_connect_data("t", NESTED, nested_value())
    again = converter.to_connect_data("t", first)
    assert converter.from_connect_data("t", again.schema, again.value) == first


def test_schema_cache_hits_return_equal_results() -> None:
    converter = make()
    data = converter.from_connect_data("t", NESTED, nested_value())
    assert converter.to_connect_data("t", data) == converter.to_connect_data("t", data)
    # Same envelope with spaces goes through the general parser and agrees.
    spaced = json.dumps(json.loads(data), indent=1).encode()
    assert converter.to_connect_data("t", spaced) == converter.to_connect_data("t", data)


def test_schemaless_reads_keep_ints_and_floats_apart() -> None:
    converter = make(schemas_enable="false")
    result = converter.to_connect_data("t", b'{"i":1,"f":1.0,"l":[true,null,"s"],"o":{}}')
    assert result.schema is None
    assert result.value == {"i": 1, "f": 1.0, "l": [True, None, "s"], "o": {}}
    assert isinstance(result.value["i"], int) and isinstance(result.value["f"], float)
    assert converter.to_connect_data("t", None) == (None, None)
    assert converter.to_connect_data("t", b"") == (None, None)
    enveloped = make().to_connect_data("t", b'{"schema":null,"payload":{"x":2.5,"y":[1]}}')
    assert enveloped == (None, {"x": 2.5, "y": [1]})


@pytest.mark.parametrize("data", [b"", b" ", b"\n\t \r\n"])
def test_empty_input_is_a_missing_envelope_with_schemas_and_null_without(data: bytes) -> None:
    # Jackson reads empty (or whitespace-only) input as a missing node: not the envelope
    # Kafka's JsonConverter requires with schemas.enable=true, null without it.
    with pytest.raises(DataException) as raised:
        make().to_connect_data("t", data)
    assert str(raised.value) == (
        'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not '
        "contain additional fields. If you are trying to deserialize plain JSON data, set "
        "schemas.enable=false in your converter configuration."
    )
    assert make(schemas_enable="false").to_connect_data("t", data) == (None, None)
    assert list(make().to_connect_data_batch("t", [b'{"schema":null,"payload":1}'], [None])) == [
        (None, 1)
    ]
    with pytest.raises(DataException, match="requires .schema. and .payload."):
        make().to_connect_data_batch("t", [data], [None])


def test_only_jsons_own_whitespace_counts_as_empty_input() -> None:
    # Jackson skips space, tab, CR and LF only; a vertical tab is an unexpected character.
    with pytest.raises(DataException, match="serialization error"):
        make(schemas_enable="false").to_connect_data("t", b"\x0b")


def test_schemaless_non_string_keys_become_pairs() -> None:
    converter = make(schemas_enable="false")
    assert converter.from_connect_data("t", None, {1: "a"}) == b'[[1,"a"]]'


def test_defaults_and_replace_null_with_default() -> None:
    schema = (
        SchemaBuilder.struct()
        .field("f", SchemaBuilder.string().optional().default_value("dflt").build())
        .build()
    )
    data = (
        b'{"schema":{"type":"struct","fields":[{"type":"string","optional":true,"default":"dflt","field":"f"}],'
        b'"optional":false},"payload":{"f":null}}'
    )
    assert make().to_connect_data("t", data).value.get_without_default("f") == "dflt"
    assert (
        make(replace_null_with_default="false")
        .to_connect_data("t", data)
        .value.get_without_default("f")
        is None
    )
    assert envelope(make(replace_null_with_default="false"), schema, Struct(schema)).endswith(
        '"payload":{"f":null}}'
    )
    assert envelope(make(), schema, Struct(schema)).endswith('"payload":{"f":"dflt"}}')


# -- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [b'{"payload":1}', b'{"schema":null}', b'{"schema":null,"payload":1,"extra":2}', b"[1]", b"42"],
)
def test_schemas_enable_requires_exact_envelope(data: bytes) -> None:
    with pytest.raises(
        DataException, match='requires "schema" and "payload" fields and may not contain additional'
    ):
        make().to_connect_data("t", data)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json", "serialization error"),
        (b'{"schema":{"optional":true},"payload":1}', "Schema must contain 'type' field"),
        (b'{"schema":{"type":"uuid"},"payload":1}', "Unknown schema type: uuid"),
        (
            b'{"schema":{"type":"array"},"payload":[]}',
            "Array schema did not specify the element type",
        ),
        (
            b'{"schema":{"type":"struct","fields":{}},"payload":{}}',
            'Struct schema\'s "fields" argument is not an array',
        ),
        (
            b'{"schema":{"type":"int32"},"payload":null}',
            "Invalid null value for required INT32 field",
        ),
        (b'{"schema":{"type":"int8"},"payload":300}', "out of range"),
        (b'{"schema":{"type":"string"},"payload":5}', "Invalid JSON NUMBER for STRING"),
        (b'{"schema":{"type":"bytes"},"payload":"@@@"}', "Invalid bytes field"),
        (
            b'{"schema":{"type":"map","keys":{"type":"int32"},"values":{"type":"int32"}},"payload":{}}',
            "Maps with non-string fields should be encoded as JSON array of tuples",
        ),
        (
            b'{"schema":{"type":"int32","parameters":{"a":1}},"payload":1}',
            "Schema parameters must have string values",
        ),
        (b"NaN", "serialization error"),
    ],
)
def test_malformed_input_raises_data_exception(data: bytes, message: str) -> None:
    schemas = b"schema" in data
    with pytest.raises(DataException, match=message):
        make(schemas_enable=str(schemas).lower()).to_connect_data("t", data)


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["a", "a"], "^Cannot create field because of field name duplication a$"),
        (["a", ""], r"^fieldName cannot be null\.$"),
    ],
)
def test_struct_field_names_are_refused_as_kafkas_schema_builder_does(names, message) -> None:
    # Kafka's JsonConverter builds the struct with SchemaBuilder.field: its DLQ names a
    # SchemaBuilderException with SchemaBuilder's words.
    fields = [{"field": name, "type": "int32"} for name in names]
    data = json.dumps({"schema": {"type": "struct", "fields": fields}, "payload": {}}).encode()
    with pytest.raises(SchemaBuilderException, match=message):
        make().to_connect_data("t", data)


def test_required_null_and_wrong_types_fail_on_write() -> None:
    with pytest.raises(DataException, match="null value for field that is required"):
        make().from_connect_data("t", INT32_SCHEMA, None)
    with pytest.raises(DataException, match="^Invalid type for INT32: class java.lang.String$"):
        make().from_connect_data("t", INT32_SCHEMA, "1")
    with pytest.raises(
        DataException,
        match="^Invalid type for Decimal, expected BigDecimal but was class java.lang.Double$",
    ):
        make().from_connect_data("t", Decimal.schema(2), 1.5)
    other = SchemaBuilder.struct().field("x", INT32_SCHEMA).build()
    with pytest.raises(DataException, match="Mismatching schema"):
        make().from_connect_data("t", NESTED, Struct(other).put("x", 1))
    with pytest.raises(DataException, match="does not have corresponding schema type"):
        make().from_connect_data("t", None, object())
    # Kafka's message names the Java class (a Decimal is a BigDecimal, which has no schema
    # type of its own).
    with pytest.raises(
        DataException,
        match=r"^Java class class java\.math\.BigDecimal does not have corresponding schema type\.$",  # noqa: E501
    ):
        make().from_connect_data("t", None, {"d": decimal.Decimal("1.5")})


def test_invalid_config_names_the_key() -> None:
    with pytest.raises(ConfigException, match="decimal.format"):
        make(decimal_format="HEX")
    with pytest.raises(ConfigException, match="schemas.enable"):
        make(schemas_enable="maybe")


def test_version_and_aliases() -> None:
    assert JsonConverter().version() == __version__
    assert JsonConverter.KAFKA_CLASS_ALIASES == ("org.apache.kafka.connect.json.JsonConverter",)


def test_header_converter_uses_the_same_format() -> None:
    converter = JsonConverter()
    converter.configure({})
    data = converter.from_connect_header("t", "h", INT32_SCHEMA, 5)
    assert data == b'{"schema":{"type":"int32","optional":false},"payload":5}'
    assert converter.to_connect_header("t", "h", data) == (INT32_SCHEMA, 5)


@pytest.mark.parametrize(
    ("value", "double", "single"),
    [
        (1.0, "1.0", "1.0"),
        (0.001, "0.001", "0.001"),
        (9999999.0, "9999999.0", "9999999.0"),
        (1e7, "1.0E7", "1.0E7"),
        (123456789.0, "1.23456789E8", "1.2345679E8"),
        (1e-5, "1.0E-5", "1.0E-5"),
        (-0.0, "-0.0", "-0.0"),
        (0.1, "0.1", "0.1"),
        (1 / 3, "0.3333333333333333", "0.33333334"),
        (1e300, "1.0E300", "Infinity"),
    ],
)
def test_java_number_formatting(value: float, double: str, single: str) -> None:
    assert java_double(value) == double
    assert java_float(value) == single


# -- nesting depth: Kafka's Jackson (StreamReadConstraints / StreamWriteConstraints) takes a
# document nested up to 1000 levels, the envelope's object included, and refuses 1001 -------

TOO_DEEP = ": Document nesting depth (1001) exceeds the maximum allowed (1000)"
READ_TOO_DEEP = re.escape(
    "Converting byte[] to Kafka Connect data failed due to serialization error" + TOO_DEEP
)
WRITE_TOO_DEEP = re.escape(
    "Converting Kafka Connect data to byte[] failed due to serialization error" + TOO_DEEP
)


def nested_arrays(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def nested_list(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def array_schema(depth: int):
    """An ARRAY of ARRAY ... of INT32, ``depth`` arrays: its JSON is depth + 1 objects."""
    schema = INT32_SCHEMA
    for _ in range(depth):
        schema = SchemaBuilder.array(schema).build()
    return schema


def nested_ints(depth: int) -> list:
    value: list = [1]
    for _ in range(depth - 1):
        value = [value]
    return value


def read_every_way(converter: JsonConverter, data: bytes) -> list:
    """The value read by the exact path, by a compiled reader (the second read of an
    envelope's schema), and in a batch (its compiled reader inline)."""
    first = converter.to_connect_data("t", data)
    second = converter.to_connect_data("t", data)
    batch = converter.to_connect_data_batch("t", [data, data], [None, None])
    return [first, second, *batch]


@pytest.mark.parametrize(
    ("schemas_enable", "document"),
    [
        ("false", nested_arrays),
        ("false", lambda n: b'{"a":' * n + b"1" + b"}" * n),
        ("false", lambda n: b'{"a":"[[","b":' + nested_arrays(n - 1) + b',"c":"]]]"}'),
        ("true", lambda n: b'{"schema":null,"payload":' + nested_arrays(n - 1) + b"}"),
        (
            "true",
            lambda n: (
                b'{"schema":{"type":"struct","fields":[{"field":"a","type":"int32"}]},'
                b'"payload":{"a":1,"extra":' + nested_arrays(n - 2) + b"}}"
            ),
        ),
    ],
    ids=["arrays", "objects", "inside-an-object", "envelope-payload", "struct-extra-field"],
)
def test_a_document_nested_1000_deep_is_read_and_1001_refused(
    schemas_enable: str, document: Callable[[int], bytes]
) -> None:
    converter = make(schemas_enable=schemas_enable)
    results = read_every_way(converter, document(1000))
    # (printed as Java would, without recursion: == on the values would meet Python's limit)
    printed = {java_string(value) for _, value in results}
    assert len(printed) == 1 and printed.pop() not in ("", "null")
    with pytest.raises(DataException, match=READ_TOO_DEEP):
        converter.to_connect_data("t", document(1001))
    with pytest.raises(DataException, match=READ_TOO_DEEP):  # after one its reader takes
        converter.to_connect_data_batch("t", [document(1000), document(1001)], [None, None])
    with pytest.raises(DataException, match=READ_TOO_DEEP):
        converter.to_connect_data("t", document(1024))  # within orjson's own limit


def test_a_deeply_nested_schema_and_payload_read_at_every_depth_kafka_takes() -> None:
    # {"schema": 998 array schemas + int32 = 999 objects, "payload": 998 arrays}: 1000 deep
    converter = make()
    deep = converter.from_connect_data("t", array_schema(998), nested_ints(998))
    assert deep is not None and deep.count(b"{") == 1000
    for schema, value in read_every_way(converter, deep):  # written again: the same bytes
        assert converter.from_connect_data("t", schema, value) == deep
    too_deep = b'{"schema":' + b'{"type":"array","items":' * 999 + b'{"type":"int32"}'
    too_deep += b"}" * 999 + b',"payload":' + nested_arrays(999) + b"}"
    with pytest.raises(DataException, match=READ_TOO_DEEP):
        converter.to_connect_data("t", too_deep)


def test_any_depth_is_refused_without_a_recursion_error() -> None:
    for schemas_enable in ("false", "true"):
        converter = make(schemas_enable=schemas_enable)
        for data in (nested_arrays(100_000), b"[" * 100_000, b'{"a":' * 50_000):
            with pytest.raises(DataException, match=READ_TOO_DEEP):
                converter.to_connect_data("t", data)


@pytest.mark.parametrize("schemas_enable", ["false", "true"])
def test_a_value_nested_deeper_than_pythons_stack_is_written_up_to_kafkas_limit(
    schemas_enable: str,
) -> None:
    converter = make(schemas_enable=schemas_enable)
    envelope_depth = 1 if schemas_enable == "true" else 0
    accepted = 1000 - envelope_depth
    data = converter.from_connect_data("t", None, nested_list(accepted))
    assert data is not None
    assert nested_arrays(accepted) in data
    assert (
        java_string(converter.to_connect_data("t", data).value) == "[" * accepted + "]" * accepted
    )
    with pytest.raises(DataException, match=WRITE_TOO_DEEP):
        converter.from_connect_data("t", None, nested_list(accepted + 1))
    with pytest.raises(DataException, match=WRITE_TOO_DEEP):
        converter.from_connect_data("t", None, nested_list(100_000))
    # maps with string keys are objects, other maps arrays of [key, value] pairs: two levels
    objects: object = {}
    for _ in range(accepted - 1):
        objects = {"k": objects}
    data = converter.from_connect_data("t", None, objects)
    assert data is not None and data.count(b"{") == accepted + envelope_depth
    pairs: object = 1
    for _ in range(500 - envelope_depth):
        pairs = {1: pairs}
    data = converter.from_connect_data("t", None, pairs)
    assert data is not None and data.count(b"[") == 2 * (500 - envelope_depth)
    with pytest.raises(DataException, match=WRITE_TOO_DEEP):
        converter.from_connect_data("t", None, {1: pairs})


def test_a_deep_schema_and_value_are_written_up_to_kafkas_limit() -> None:
    converter = make()
    data = converter.from_connect_data("t", array_schema(998), nested_ints(998))
    assert data is not None and data.count(b"{") == 1000 and data.count(b"[") == 998
    assert converter.from_connect_data("t", array_schema(998), nested_ints(998)) == data
    with pytest.raises(DataException, match=WRITE_TOO_DEEP):
        converter.from_connect_data("t", array_schema(999), nested_ints(999))
    with pytest.raises(DataException, match=WRITE_TOO_DEEP):  # the schema alone is too deep
        converter.from_connect_data(
            "t", SchemaBuilder.array(array_schema(999)).optional().build(), None
        )


def test_the_recursion_limit_is_left_as_it_was() -> None:
    before = sys.getrecursionlimit()
    make(schemas_enable="false").to_connect_data("t", nested_arrays(1000))
    make().from_connect_data("t", None, nested_list(999))
    assert sys.getrecursionlimit() == before


@pytest.mark.parametrize(
    ("schema", "value", "message"),
    [
        (Date.SCHEMA, 5, "Invalid type for Date, expected Date but was class java.lang.Integer"),
        (Time.SCHEMA, "x", "Invalid type for Time, expected Date but was class java.lang.String"),
        (
            Timestamp.SCHEMA,
            5,
            "Invalid type for Timestamp, expected Date but was class java.lang.Long",
        ),
    ],
)
def test_a_logical_date_of_the_wrong_type_names_javas_classes(schema, value, message) -> None:
    """Kafka's JsonConverter expects a java.util.Date for all three, and names the value's
    Java class (here, by the schema's type) rather than Python's."""
    with pytest.raises(DataException, match=f"^{re.escape(message)}$"):
        make().from_connect_data("t", schema, value)


def test_a_negative_zero_reads_as_kafkas_bigdecimal_does() -> None:
    """Kafka parses JSON numbers as BigDecimal, which has no -0: -0.0 reads as 0.0, and a
    negative too small for a double still rounds to -0.0; on every read path."""
    schemaless = make(schemas_enable="false")  # a deviation: orjson's -0.0, not checked for
    value = schemaless.to_connect_data("t", b"[-0.0, -1e-400, -0.5, 0]").value
    assert [math.copysign(1.0, v) for v in value] == [-1.0, -1.0, -1.0, 1.0]
    nulled = make().to_connect_data("t", b'{"schema":null,"payload":[-0.0,-1e-400]}').value
    assert [math.copysign(1.0, v) for v in nulled] == [1.0, -1.0]
    fields = '[{"field":"d","type":"double"}'
    exact = ',{"field":"n","type":"bytes","optional":true,"name":"' + Decimal.LOGICAL_NAME + '"}'
    for extra in ("", exact):  # float and Decimal parsing; each read twice (compiled reader)
        converter = make()
        for payload, sign in (("-0.0", 1.0), ("-0.0", 1.0), ("-1e-400", -1.0), ("-0", 1.0)):
            data = f'{{"schema":{{"type":"struct","fields":{fields}{extra}]}},'
            data += f'"payload":{{"d":{payload}}}}}'
            read = converter.to_connect_data("t", data.encode()).value.get("d")
            assert math.copysign(1.0, read) == sign, (extra, payload)


@pytest.mark.parametrize(
    ("field_type", "logical", "payload", "unit"),
    [
        ("int64", "Timestamp", 1_700_000_000_000_000, "milliseconds"),
        ("int64", "Timestamp", -62135596800001, "milliseconds"),
        ("int32", "Date", 2_147_483_647, "days"),
    ],
)
def test_a_date_beyond_pythons_datetime_fails_its_record_naming_the_value(
    field_type: str, logical: str, payload: int, unit: str
) -> None:
    """Kafka reads these (java.util.Date); Copycat cannot hold them, and says so with the
    value on every path (exact, compiled, batch), where it raised a bare OverflowError."""
    schema = {
        "type": "struct",
        "fields": [
            {"field": "id", "type": "int32"},
            {
                "field": "at",
                "type": field_type,
                "name": f"org.apache.kafka.connect.data.{logical}",
                "version": 1,
            },
        ],
    }
    converter = make()
    good = json.dumps({"schema": schema, "payload": {"id": 1, "at": 0}}).encode()
    bad = json.dumps({"schema": schema, "payload": {"id": 2, "at": payload}}).encode()
    reason = (
        f"{logical} value {payload} ({unit} since 1970-01-01) is outside the years 1 to 9999 "
        "that Copycat can represent (Python's datetime)"
    )
    for _ in range(2):  # the second read of the schema is the compiled reader's
        assert converter.to_connect_data("t", good).value.get("id") == 1
        with pytest.raises(DataException) as caught:
            converter.to_connect_data("t", bad)
        assert str(caught.value) == reason
    with pytest.raises(DataException) as in_batch:
        converter.to_connect_data_batch("t", [good, bad], [None, None])
    assert str(in_batch.value) == reason
