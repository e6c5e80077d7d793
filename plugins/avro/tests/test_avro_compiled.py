"""AvroConverter's compiled readers and writers give exactly the bytes, values and errors of
the straightforward path (fastavro plus the datum conversions), for generated schemas and
values, values of other schemas, and truncated or corrupted bodies."""

from __future__ import annotations

from typing import Any

from connect_strategies import outcome, schemas, values
from copycat_avro import AvroConverter, from_connect_schema
from copycat_avro._avrocompiled import compile_reader, compile_writer
from copycat_avro._avrodata import physical, schema_string
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_avro_converter import FakeRegistry

from plugin_api import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class VersionedRegistry(FakeRegistry):
    """FakeRegistry whose schemas have a version under every subject, as a real registry's
    registered schemas do (the converter compiles readers only for known versions)."""

    def version_of(self, subject: str, schema_id: int, schema: str) -> int | None:
        return 1


def converter(registry: Any) -> AvroConverter:
    conv = AvroConverter(client=registry)
    conv.configure({"schema.registry.url": "http://unused"}, False)
    return conv


@SETTINGS
@given(st.data())
def test_writes_the_bytes_and_errors_of_the_exact_path(data: st.DataObject) -> None:
    schema = data.draw(schemas())
    value = data.draw(values(schema))
    conv = converter(VersionedRegistry())
    expected = outcome(lambda: conv._from_connect_exact("t", schema, value))
    assert outcome(lambda: conv.from_connect_data("t", schema, value)) == expected
    assert outcome(lambda: conv.from_connect_data("t", schema, value)) == expected


@SETTINGS
@given(st.data())
def test_writes_wrong_values_as_the_exact_path_does(data: st.DataObject) -> None:
    schema = data.draw(schemas())
    good = data.draw(values(schema))
    wrong = data.draw(values(data.draw(schemas())))
    conv = converter(VersionedRegistry())
    try:
        conv._from_connect_exact("t", schema, good)  # remembers the compiled writer
    except Exception:  # noqa: BLE001 - a schema Avro cannot hold: the exact path says so below
        pass
    expected = outcome(lambda: conv._from_connect_exact("t", schema, wrong))
    assert outcome(lambda: conv.from_connect_data("t", schema, wrong)) == expected


@SETTINGS
@given(st.data())
def test_use_latest_version_writes_the_bytes_and_errors_of_the_exact_path(
    data: st.DataObject,
) -> None:
    """use.latest.version=true compiles the writer of the subject's latest version too: the
    exact path's bytes and errors, whether the latest version is the value's own schema or
    another one, for values of the schema and of others."""
    schema = data.draw(schemas())
    latest = data.draw(st.one_of(st.just(schema), schemas()))
    value = data.draw(values(schema))
    wrong = data.draw(values(data.draw(schemas())))
    try:
        avro = from_connect_schema(latest)
    except Exception:  # noqa: BLE001 - a schema Avro cannot hold: no latest version
        return
    registry = VersionedRegistry()
    registry.register("t-value", schema_string(avro))
    conv = AvroConverter(client=registry)
    conv.configure(
        {
            "schema.registry.url": "http://unused",
            "auto.register.schemas": "false",
            "use.latest.version": "true",
        },
        False,
    )
    for n, written in enumerate((value, wrong)):
        expected = outcome(lambda w=written: conv._from_connect_exact("t", schema, w))
        if n == 0 and written is not None and expected[0] == "ok":  # the writer is kept
            assert ("t", schema) in conv._fast_writers
        for _ in range(2):  # the first one may compile the writer, the second uses it
            assert outcome(lambda w=written: conv.from_connect_data("t", schema, w)) == expected


@SETTINGS
@given(st.data())
def test_reads_the_values_and_errors_of_the_exact_path(data: st.DataObject) -> None:
    schema = data.draw(schemas())
    value = data.draw(values(schema))
    registry = VersionedRegistry()
    try:
        body = converter(registry)._from_connect_exact("t", schema, value)
    except Exception:  # noqa: BLE001 - not writable: nothing to read
        return
    if body is None:
        return
    conv = converter(registry)
    expected = outcome(lambda: conv._to_connect_exact("t", body))  # remembers the reader
    assert outcome(lambda: conv.to_connect_data("t", body)) == expected
    batch = outcome(lambda: [tuple(p) for p in conv.to_connect_data_batch("t", [body], [None])])
    assert batch == outcome(lambda: [tuple(conv._to_connect_exact("t", body))])
    # Bad data: cut short, or one byte changed (lengths, union branches, varints, UTF-8).
    cut = data.draw(st.integers(5, max(5, len(body) - 1)))
    at = data.draw(st.integers(5, max(5, len(body) - 1)))
    flipped = bytearray(body)
    if at < len(flipped):
        flipped[at] = data.draw(st.integers(0, 255))
    for bad in (body[:cut], bytes(flipped)):
        assert outcome(lambda bad=bad: conv.to_connect_data("t", bad)) == outcome(
            lambda bad=bad: conv._to_connect_exact("t", bad)
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
    """Not a fallback in disguise: every type is written and read by the compiled code."""
    value.put("f32", 0.5).put("f64", 1.25)  # a float32 out of range falls back, as it may
    avro = physical(from_connect_schema(ALL_TYPES))
    encode = compile_writer(avro, ALL_TYPES)
    assert encode is not None
    conv = converter(VersionedRegistry())
    body = conv._from_connect_exact("t", ALL_TYPES, value)
    assert body is not None
    assert encode(value) == body[5:]  # after the magic byte and schema id
    exact = conv._to_connect_exact("t", body)
    assert exact.schema is not None
    decode = compile_reader(avro, exact.schema)
    assert decode is not None
    assert outcome(lambda: decode(body, 5)) == outcome(lambda: exact.value)


@SETTINGS
@given(st.data())
def test_a_batch_reads_as_its_records_do(data: st.DataObject) -> None:
    """A column of records of one or two schemas, with corrupted, truncated, foreign and null
    entries among them: the batch method (which reuses the last record's reader without a
    look-up) gives each record's exact value, or fails as converting them in turn fails."""
    registry = VersionedRegistry()
    writer = converter(registry)
    bodies: list[bytes | None] = []
    for schema in (data.draw(schemas()), data.draw(schemas())):
        for value in data.draw(st.lists(values(schema), min_size=1, max_size=4)):
            try:
                body = writer._from_connect_exact("t", schema, value)
            except Exception:  # noqa: BLE001 - not writable: nothing to read
                continue
            if body is not None:
                bodies.append(body)
    if not bodies:
        return
    conv = converter(registry)
    for body in bodies:
        try:
            conv._to_connect_exact("t", body)  # remembers the readers
        except Exception:  # noqa: BLE001 - the batch below must fail as this does
            pass
    column: list[bytes | None] = data.draw(st.permutations(bodies))
    for _ in range(data.draw(st.integers(0, 3))):
        at = data.draw(st.integers(0, len(column)))
        entry = bodies[data.draw(st.integers(0, len(bodies) - 1))]
        assert entry is not None
        bad = data.draw(
            st.sampled_from(
                [entry[: data.draw(st.integers(0, len(entry)))], None, b"\x01" + entry[1:]]
            )
            | st.builds(
                lambda i, b, entry=entry: entry[:i] + bytes([b]) + entry[i + 1 :],
                st.integers(5, len(entry)),
                st.integers(0, 255),
            )
        )
        column.insert(at, bad)
    expected = outcome(
        lambda: [tuple(conv.to_connect_data("t", body)) for body in column]  # type: ignore[arg-type]
    )
    found = outcome(
        lambda: [tuple(p) for p in conv.to_connect_data_batch("t", column, [None] * len(column))]
    )
    assert found == expected


def test_scrubbed_field_names_are_compiled_and_write_the_exact_bytes() -> None:
    """scrub.invalid.names=true (Flatten's "outer.line" -> "outer_line") keeps the fast path."""
    from copycat_avro._avrodata import scrub_name

    schema = (
        SchemaBuilder.struct()
        .field("outer.line", SchemaBuilder.string().build())
        .field("n-1", SchemaBuilder.int64().optional().build())
        .build()
    )
    avro = from_connect_schema(schema, scrub_invalid_names=True)
    assert [f["name"] for f in avro["fields"]] == ["outer_line", "n_1"]
    assert compile_writer(physical(avro), schema) is None  # names differ: not compiled ...
    encode = compile_writer(physical(avro), schema, b"", scrub_name)  # ... unless mapped
    assert encode is not None
    conv = AvroConverter(client=VersionedRegistry())
    conv.configure({"schema.registry.url": "http://unused", "scrub.invalid.names": "true"}, False)
    value = Struct(schema).put("outer.line", "a line").put("n-1", 12)
    exact = conv._from_connect_exact("t", schema, value)
    assert exact is not None and encode(value) == exact[5:]
    assert conv.from_connect_data("t", schema, value) == exact
