"""AvroConverter's compiled readers and writers, against a dev Schema Registry of each test's
own: kept per (topic, schema id) / (topic, schema) in caches of ``schemas.cache.config``
entries (Confluent's AvroData cache size, default 1000), so a topic cycling through more
schemas than the old fixed 64 does not recompile on almost every record; and with
``use.latest.version`` the latest version's writer is compiled too, for as long as the
latest-version cache holds that version."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from copycat_avro import AvroConverter
from copycat_avro import converter as converter_module

from core.dev.schema_registry import SchemaRegistry
from plugin_api import INT64_SCHEMA, STRING_SCHEMA, Schema, SchemaBuilder, Struct

pytestmark = pytest.mark.integration

RECORD_NAME_STRATEGY = "io.confluent.kafka.serializers.subject.RecordNameStrategy"


@pytest.fixture
def registry(broker, topic_name: str) -> Iterator[SchemaRegistry]:  # noqa: ANN001
    """A registry of this test's own, counting the requests it serves."""
    with SchemaRegistry(broker.bootstrap_servers, topic=f"_schemas-{topic_name}") as reg:
        yield reg


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many readers and writers the converters compile (the real compiler, counted)."""
    counts: Counter[str] = Counter()

    def counting(kind: str, compile_: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[kind] += 1
            return compile_(*args, **kwargs)

        return wrapper

    for kind in ("compile_reader", "compile_writer"):
        monkeypatch.setattr(converter_module, kind, counting(kind, getattr(converter_module, kind)))
    return counts


def converter(url: str, **config: object) -> AvroConverter:
    conv = AvroConverter()
    conv.configure(
        {"schema.registry.url": url, "value.subject.name.strategy": RECORD_NAME_STRATEGY, **config},
        False,
    )
    return conv


def schema(n: int) -> Schema:
    """A record schema of its own (a subject of its own with RecordNameStrategy)."""
    return (
        SchemaBuilder.struct()
        .name(f"com.acme.Event{n}")
        .field("id", INT64_SCHEMA)
        .field("name", STRING_SCHEMA)
        .build()
    )


def event(s: Schema, i: int) -> Struct:
    return Struct(s).put("id", i).put("name", f"e{i}")


def fields(value: object) -> tuple[object, ...]:
    assert isinstance(value, Struct)
    return value.schema.name, value.get("id"), value.get("name")


def test_a_topic_cycling_through_100_schema_ids_compiles_each_once(
    registry: SchemaRegistry, topic_name: str, compiled: Counter[str]
) -> None:
    """The compiled caches held 64 entries and were cleared when full: 100 ids cycled
    recompiled on almost every record (30,000 records of 70 ids: 23 s, of 60 ids: 9.6 s)."""
    schemas = [schema(n) for n in range(100)]
    writer = converter(registry.url)
    records = [writer.from_connect_data(topic_name, s, event(s, n)) for n, s in enumerate(schemas)]
    assert len({r[1:5] for r in records if r is not None}) == 100
    for round_ in range(5):
        for n, s in enumerate(schemas):
            written = writer.from_connect_data(topic_name, s, event(s, n))
            assert written == records[n], (round_, n)
    assert compiled["compile_writer"] == 100

    reader = converter(registry.url)
    for _ in range(5):
        for n, data in enumerate(records):
            read = reader.to_connect_data(topic_name, data)  # type: ignore[arg-type]
            assert fields(read.value) == fields(event(schemas[n], n))
        batch = reader.to_connect_data_batch(topic_name, records, [None] * len(records))  # type: ignore[arg-type]
        assert [fields(v) for _, v in batch] == [fields(event(s, n)) for n, s in enumerate(schemas)]
    assert compiled["compile_reader"] == 100
    writer.close()
    reader.close()


def test_the_compiled_caches_evict_the_oldest_schema_only(
    registry: SchemaRegistry, topic_name: str, compiled: Counter[str]
) -> None:
    """``schemas.cache.config`` bounds them; a full cache drops the entry compiled first,
    not everything (and a hit costs no bookkeeping: using an entry does not keep it)."""
    a, b, c, d = (schema(n) for n in range(4))
    writer = converter(registry.url, **{"schemas.cache.config": "3"})
    data = {s: writer.from_connect_data(topic_name, s, event(s, 1)) for s in (a, b, c)}
    assert compiled["compile_writer"] == 3
    writer.from_connect_data(topic_name, a, event(a, 2))  # a hit: nothing compiled
    data[d] = writer.from_connect_data(topic_name, d, event(d, 1))  # evicts a, the oldest
    assert compiled["compile_writer"] == 4
    for s in (b, c, d, b, c, d):
        writer.from_connect_data(topic_name, s, event(s, 3))
    assert compiled["compile_writer"] == 4  # b, c and d stayed
    writer.from_connect_data(topic_name, a, event(a, 3))
    assert compiled["compile_writer"] == 5  # a was the one dropped

    reader = converter(registry.url, **{"schemas.cache.config": "3"})
    for s in (a, b, c, a, d):  # d evicts a, compiled first
        reader.to_connect_data(topic_name, data[s])
    assert compiled["compile_reader"] == 4
    for s in (b, c, d, b, c, d):
        reader.to_connect_data(topic_name, data[s])
    assert compiled["compile_reader"] == 4
    reader.to_connect_data(topic_name, data[a])
    assert compiled["compile_reader"] == 5
    writer.close()
    reader.close()


def order(optional_note: bool = False) -> Schema:
    builder = SchemaBuilder.struct().name("com.acme.Order").field("id", INT64_SCHEMA)
    if optional_note:
        builder = builder.field("note", SchemaBuilder.string().optional().build())
    return builder.build()


def test_use_latest_version_compiles_the_latest_writer_and_picks_up_a_newer_one_after_the_ttl(
    registry: SchemaRegistry, topic_name: str, compiled: Counter[str]
) -> None:
    """The writer for the latest version is compiled (it stayed on the slow path, about 3x
    slower) and kept as long as the latest-version cache holds that version: a version
    registered later is used once ``latest.cache.ttl.sec`` has run out."""
    subject = f"{topic_name}-value"
    v1, v2 = order(), order(optional_note=True)
    registering = AvroConverter()
    registering.configure({"schema.registry.url": registry.url}, False)
    v1_id = registering.from_connect_data(topic_name, v1, Struct(v1).put("id", 0))[1:5]  # type: ignore[index]
    conv = AvroConverter()
    conv.configure(
        {
            "schema.registry.url": registry.url,
            "auto.register.schemas": "false",
            "use.latest.version": "true",
            "latest.cache.ttl.sec": "1",
        },
        False,
    )
    compiled.clear()
    registry.requests.clear()
    first = [conv.from_connect_data(topic_name, v2, Struct(v2).put("id", i)) for i in range(50)]
    assert {w[1:5] for w in first if w is not None} == {v1_id}
    # v2's Connect schema does not fit v1: not compiled, and not tried again per record
    assert compiled["compile_writer"] == 1

    # v2 registered: the cached latest (v1) stays in use until the TTL runs out, then v2 is
    # fetched and its writer compiled; the compiled writer writes the slow path's bytes.
    v2_id = registering.from_connect_data(topic_name, v2, Struct(v2).put("id", 0))[1:5]  # type: ignore[index]
    assert v2_id != v1_id
    compiled.clear()  # (registering compiled its own writer)
    started = time.monotonic()
    value = Struct(v2).put("id", 7).put("note", "n")
    while (written := conv.from_connect_data(topic_name, v2, value))[1:5] == v1_id:  # type: ignore[index]
        assert time.monotonic() - started < 10, "the newer latest version was never used"
    assert written == conv._from_connect_exact(topic_name, v2, value)
    assert compiled["compile_writer"] == 1
    fetched = registry.requests[f"GET /subjects/{subject}/versions/latest"]
    for i in range(200):
        assert conv.from_connect_data(topic_name, v2, Struct(v2).put("id", i))[1:5] == v2_id  # type: ignore[index]
    assert compiled["compile_writer"] == 1  # within the TTL: the compiled writer, no fetch
    assert registry.requests[f"GET /subjects/{subject}/versions/latest"] == fetched

    # The TTL runs out again: the latest is fetched again (one request), still v2.
    started = time.monotonic()
    while registry.requests[f"GET /subjects/{subject}/versions/latest"] == fetched:
        assert conv.from_connect_data(topic_name, v2, value) == written
        assert time.monotonic() - started < 10, "the latest version was never fetched again"
    assert registry.requests[f"GET /subjects/{subject}/versions/latest"] == fetched + 1
    registering.close()
    conv.close()


def test_use_latest_version_with_no_ttl_keeps_the_compiled_latest_writer(
    registry: SchemaRegistry, topic_name: str, compiled: Counter[str]
) -> None:
    v1 = order()
    registering = AvroConverter()
    registering.configure({"schema.registry.url": registry.url}, False)
    expected = registering.from_connect_data(topic_name, v1, Struct(v1).put("id", 3))
    conv = AvroConverter()
    conv.configure(
        {
            "schema.registry.url": registry.url,
            "auto.register.schemas": "false",
            "use.latest.version": "true",
        },
        False,
    )
    compiled.clear()
    for _ in range(100):
        assert conv.from_connect_data(topic_name, v1, Struct(v1).put("id", 3)) == expected
    assert compiled["compile_writer"] == 1
    registering.close()
    conv.close()
