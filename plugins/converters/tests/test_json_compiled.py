"""The compiled readers and writers of JsonConverter give exactly the bytes, values and errors
of the straightforward path, for generated schemas and values (and bad payloads)."""

from __future__ import annotations

import json
from decimal import Decimal as Dec
from typing import Any

import orjson
import pytest
from connect_strategies import outcome, schemas, struct_schemas, values
from copycat_converters import JsonConverter
from copycat_converters._jsoncompiled import compile_reader, compile_writer
from copycat_converters._jsontext import jackson_escapes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin_api import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp

CONFIGS = st.fixed_dictionaries(
    {
        "schemas.enable": st.sampled_from(["true", "false"]),
        "decimal.format": st.sampled_from(["BASE64", "NUMERIC"]),
        "replace.null.with.default": st.sampled_from(["true", "false"]),
    }
)
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Any JSON tree, with the numbers JSON parsers disagree on (beyond 64 bits, exponents).
JSON_TREES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text("abcdefxyz_", max_size=3), inner, max_size=4)
    ),
    max_leaves=12,
)


def converter(config: dict[str, str]) -> JsonConverter:
    found = JsonConverter()
    found.configure(config, False)
    return found


@SETTINGS
@given(st.data(), CONFIGS)
def test_writes_the_bytes_and_errors_of_the_exact_path(data: st.DataObject, config: Any) -> None:
    schema = data.draw(schemas())
    value = data.draw(values(schema))
    conv = converter(config)
    expected = outcome(lambda: conv._from_connect_exact("t", schema, value))
    assert outcome(lambda: conv.from_connect_data("t", schema, value)) == expected
    assert outcome(lambda: conv.from_connect_data("t", schema, value)) == expected  # cached


@SETTINGS
@given(st.data(), CONFIGS)
def test_writes_wrong_values_as_the_exact_path_does(data: st.DataObject, config: Any) -> None:
    """Values of another schema: whatever the exact path does (error or bytes), so does the
    compiled one."""
    schema = data.draw(schemas())
    value = data.draw(values(data.draw(schemas())))
    conv = converter(config)
    expected = outcome(lambda: conv._from_connect_exact("t", schema, value))
    assert outcome(lambda: conv.from_connect_data("t", schema, value)) == expected


@SETTINGS
@given(st.data(), CONFIGS)
def test_reads_the_values_of_the_exact_path(data: st.DataObject, config: Any) -> None:
    config = {**config, "schemas.enable": "true"}
    schema = data.draw(schemas())
    value = data.draw(values(schema))
    writer = converter(config)
    try:
        document = writer._from_connect_exact("t", schema, value)
    except Exception:  # noqa: BLE001 - not writable: nothing to read
        return
    assert document is not None
    conv = converter(config)
    expected = outcome(lambda: conv._to_connect_exact(document))  # remembers the reader
    assert outcome(lambda: conv.to_connect_data("t", document)) == expected
    batch = outcome(lambda: [tuple(p) for p in conv.to_connect_data_batch("t", [document], [None])])
    assert batch == outcome(lambda: [tuple(conv._to_connect_exact(document))])


@SETTINGS
@given(st.data(), CONFIGS, JSON_TREES)
def test_reads_bad_payloads_as_the_exact_path_does(
    data: st.DataObject, config: Any, payload: object
) -> None:
    """Any JSON in a known envelope: the compiled reader gives the exact path's value or
    error (wrong types, floats for ints, ints beyond 64 bits, missing fields, ...)."""
    config = {**config, "schemas.enable": "true"}
    schema = data.draw(struct_schemas())
    conv = converter(config)
    value = data.draw(values(schema))
    try:
        head = b'{"schema":' + conv._schema_text(schema).encode() + b',"payload":'
        valid = conv._from_connect_exact("t", schema, value)
        assert valid is not None
        conv._to_connect_exact(valid)  # (remembers the compiled reader of this head)
    except Exception:  # noqa: BLE001 - a schema or value the exact path cannot write
        return
    document = head + json.dumps(payload, ensure_ascii=False).encode() + b"}"
    expected = outcome(lambda: conv._to_connect_exact(document))
    assert outcome(lambda: conv.to_connect_data("t", document)) == expected
    pairs = outcome(lambda: [tuple(p) for p in conv.to_connect_data_batch("t", [document], [None])])
    assert pairs == (
        ("ok", outcome(lambda: [tuple(conv._to_connect_exact(document))])[1])
        if expected[0] == "ok"
        else pairs  # a failing batch raises; the runtime then converts record by record
    )


ALL_TYPES = (
    SchemaBuilder.struct()
    .name("com.example.All")
    .field("i8", SchemaBuilder.int8().build())
    .field("i16", SchemaBuilder.int16().build())
    .field("i32", SchemaBuilder.int32().build())
    .field("i64", SchemaBuilder.int64().optional().build())
    .field("f32", SchemaBuilder.float32().build())
    .field("f64", SchemaBuilder.float64().build())
    .field("flag", SchemaBuilder.bool_().default_value(True).build())
    .field("text", Schema.STRING_SCHEMA)
    .field("raw", Schema.BYTES_SCHEMA)
    .field("day", Date.SCHEMA)
    .field("clock", Time.SCHEMA)
    .field("at", Timestamp.SCHEMA)
    .field("price", Decimal.schema(2))
    .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
    .field("attrs", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT64_SCHEMA).build())
    .field(
        "inner",
        SchemaBuilder.struct().field("x", Schema.OPTIONAL_FLOAT64_SCHEMA).optional().build(),
    )
    .build()
)


@settings(max_examples=50, deadline=None)
@given(values(ALL_TYPES, allow_none=False))
def test_the_compiled_functions_answer_for_every_type(value: Struct) -> None:
    """Not a fallback in disguise: for every type, the compiled writer and reader produce the
    value themselves (doubles Java writes with an exponent are left out: they fall back)."""
    value.put("f32", 0.5).put("f64", 1.25)
    inner = ALL_TYPES.field("inner").schema  # type: ignore[union-attr]
    value.put("inner", Struct(inner).put("x", 2.5))
    conv = converter({})
    writer = compile_writer(
        ALL_TYPES, True, False, lambda f: conv._float_to_json(f, True), conv._default_to_json
    )
    tree = writer(value)  # no Fallback
    document = conv._from_connect_exact("t", ALL_TYPES, value)
    assert document is not None
    assert json.loads(document)["payload"] == json.loads(json.dumps(tree))
    exact = conv._to_connect_exact(document)
    assert exact.schema is not None
    read = compile_reader(exact.schema, True, True)
    node = json.loads(json.dumps(tree), parse_float=Dec)  # as the exact path parses decimals
    assert outcome(lambda: read(node)) == outcome(lambda: exact.value)


@pytest.mark.parametrize("payload", [b'{"id":1.5}', b'{"id":9223372036854775808}', b'{"id":"1"}'])
def test_a_fallback_gives_the_exact_paths_answer(payload: bytes) -> None:
    schema = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).build()
    conv = converter({})
    head = b'{"schema":' + conv._schema_text(schema).encode() + b',"payload":'
    conv._to_connect_exact(head + b'{"id":1}}')
    document = head + payload + b"}"
    assert outcome(lambda: conv.to_connect_data("t", document)) == outcome(
        lambda: conv._to_connect_exact(document)
    )


@SETTINGS
@given(st.data(), CONFIGS)
def test_a_batch_reads_as_its_records_do(data: st.DataObject, config: Any) -> None:
    """A column of documents of one or two schemas with malformed, cut and null entries among
    them: the batch method (which runs the last document's reader inline while documents
    start with its envelope head) gives each document's exact value, or fails as converting
    them in turn fails."""
    config = {**config, "schemas.enable": "true"}
    writer = converter(config)
    documents: list[bytes | None] = []
    for schema in (data.draw(schemas()), data.draw(schemas())):
        for value in data.draw(st.lists(values(schema), min_size=1, max_size=4)):
            try:
                document = writer._from_connect_exact("t", schema, value)
            except Exception:  # noqa: BLE001 - not writable: nothing to read
                continue
            if document is not None:
                documents.append(document)
    if not documents:
        return
    column: list[bytes | None] = data.draw(st.permutations(documents))
    for _ in range(data.draw(st.integers(0, 3))):
        entry = documents[data.draw(st.integers(0, len(documents) - 1))]
        assert entry is not None
        head = entry[: entry.index(b'"payload":') + len(b'"payload":')]
        bad = data.draw(
            st.sampled_from([entry[: data.draw(st.integers(0, len(entry)))], None])
            | JSON_TREES.map(lambda tree, head=head: head + json.dumps(tree).encode() + b"}")
        )
        column.insert(data.draw(st.integers(0, len(column))), bad)
    conv = converter(config)
    expected = outcome(lambda: [tuple(conv.to_connect_data("t", d)) for d in column])
    conv = converter(config)  # a fresh one: the batch meets each schema first itself
    found = outcome(
        lambda: [tuple(p) for p in conv.to_connect_data_batch("t", column, [None] * len(column))]
    )
    assert found == expected


@settings(max_examples=50, deadline=None)
@given(values(ALL_TYPES, allow_none=False), st.sampled_from(["true", "false"]))
def test_the_compiled_writer_writes_the_document_itself(value: Struct, enable: str) -> None:
    """Not a fallback in disguise: the writer compiled with the envelope (or none) writes the
    exact path's document, escapes included, without falling back."""
    value.put("f32", 0.5).put("f64", 1.25)
    inner = ALL_TYPES.field("inner").schema  # type: ignore[union-attr]
    value.put("inner", Struct(inner).put("x", 2.5))
    conv = converter({"schemas.enable": enable})
    document = conv._from_connect_exact("t", ALL_TYPES, value)
    assert document is not None
    head, tail = b"", b""
    if enable == "true":
        head = b'{"schema":' + conv._schema_text(ALL_TYPES).encode() + b',"payload":'
        tail = b"}"
    frame = (head, tail, orjson.dumps, jackson_escapes)
    writer = compile_writer(
        ALL_TYPES, True, False, lambda f: conv._float_to_json(f, True), conv._default_to_json, frame
    )
    assert writer(value) == document
