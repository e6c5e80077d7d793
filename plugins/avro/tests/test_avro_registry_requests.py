"""How often AvroConverter asks the registry: at most once per schema id / subject.

Each test runs its own dev Schema Registry (``copycat schema-registry``'s server, on a
``_schemas`` topic of its own in the test run's broker) so it can count the requests the
registry served (``SchemaRegistry.requests``) and stop it to show that cached answers keep
records flowing while the registry is down.
"""

from __future__ import annotations

import io
import json
import struct
import uuid
from collections.abc import Iterator

import fastavro
import httpx
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from copycat_avro import AvroConverter

from core.dev.schema_registry import SchemaRegistry
from plugin_api import INT64_SCHEMA, DataException, SchemaBuilder, Struct

pytestmark = pytest.mark.integration

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "com.acme",
    "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}],
}
CONTENT_TYPE = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


@pytest.fixture
def registry(broker, topic_name: str) -> Iterator[SchemaRegistry]:  # noqa: ANN001
    """A registry of this test's own, counting the requests it serves."""
    with SchemaRegistry(broker.bootstrap_servers, topic=f"_schemas-{topic_name}") as reg:
        yield reg


def converter(url: str, **config: object) -> AvroConverter:
    conv = AvroConverter()
    conv.configure({"schema.registry.url": url, **config}, False)
    return conv


def register(url: str, subject: str, schema: object) -> int:
    response = httpx.post(
        f"{url}/subjects/{subject}/versions",
        json={"schema": json.dumps(schema)},
        headers=CONTENT_TYPE,
    )
    response.raise_for_status()
    return int(response.json()["id"])


def produce_and_consume(broker, topic: str, values: list[bytes]) -> list[bytes]:  # noqa: ANN001
    """Send ``values`` through the broker and read them back (as a sink task would)."""
    broker.create_topic(topic, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": uuid.uuid4().hex}
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out: list[bytes] = []
    try:
        for _ in range(300):
            for msg in consumer.consume(1000, 0.2):
                if msg.error() is None:
                    out.append(msg.value())
            if len(out) >= len(values):
                break
    finally:
        consumer.close()
    assert len(out) == len(values)
    return out


def test_data_registered_under_another_subject_costs_one_lookup_per_id_and_survives_an_outage(
    registry: SchemaRegistry,
    broker,  # noqa: ANN001
    topic_name: str,
) -> None:
    # A producer using RecordNameStrategy registered the schema under com.acme.Order; the
    # sink's converter keeps the default TopicNameStrategy (subject <topic>-value).
    schema_id = register(registry.url, "com.acme.Order", ORDER)
    parsed = fastavro.parse_schema(ORDER)
    wire = []
    for i in range(600):
        out = io.BytesIO()
        out.write(struct.pack(">bI", 0, schema_id))
        fastavro.schemaless_writer(out, parsed, {"id": i, "item": f"n{i}"})
        wire.append(out.getvalue())
    records = produce_and_consume(broker, topic_name, wire)
    registry.requests.clear()

    conv = converter(registry.url)
    # The record decodes, the schema having no version under the topic's subject.
    first = conv.to_connect_data(topic_name, records[0])
    assert first.value.get("id") == 0 and first.value.get("item") == "n0"
    assert first.schema.name == "com.acme.Order" and first.schema.version is None
    singles = [conv.to_connect_data(topic_name, r) for r in records[1:300]]
    batch = conv.to_connect_data_batch(topic_name, records[300:], [None] * 300)
    assert [v.value.get("id") for v in singles] == list(range(1, 300))
    assert [value.get("id") for _, value in batch] == list(range(300, 600))

    # One schema fetch and one "is it under <topic>-value?" lookup for the id, not per record.
    assert registry.requests == {
        f"GET /schemas/ids/{schema_id}": 1,
        f"POST /subjects/{topic_name}-value": 1,
    }

    # The registry goes away: the cached answers keep the records decoding.
    registry.stop()
    again = conv.to_connect_data(topic_name, records[7])
    assert again.value.get("item") == "n7" and again.schema.version is None
    rest = conv.to_connect_data_batch(topic_name, records, [None] * len(records))
    assert [value.get("id") for _, value in rest] == list(range(600))
    conv.close()


def order_schema(optional_note: bool = False) -> SchemaBuilder:
    builder = SchemaBuilder.struct().name("com.acme.Order").field("id", INT64_SCHEMA)
    if optional_note:
        builder = builder.field("note", SchemaBuilder.string().optional().build())
    return builder


def test_use_latest_version_fetches_the_latest_once_with_the_default_ttl(
    registry: SchemaRegistry, topic_name: str
) -> None:
    subject = f"{topic_name}-value"
    v1 = order_schema().build()
    first = converter(registry.url).from_connect_data(topic_name, v1, Struct(v1).put("id", 0))
    v1_header = first[:5]
    registry.requests.clear()

    conv = converter(
        registry.url, **{"auto.register.schemas": "false", "use.latest.version": "true"}
    )
    written = [conv.from_connect_data(topic_name, v1, Struct(v1).put("id", i)) for i in range(400)]
    assert {w[:5] for w in written} == {v1_header}
    assert registry.requests[f"GET /subjects/{subject}/versions/latest"] == 1
    assert sum(registry.requests.values()) == 1

    # latest.cache.ttl.sec=-1 (the default): a newer version is not picked up, as Confluent's.
    v2 = order_schema(optional_note=True).build()
    converter(registry.url).from_connect_data(topic_name, v2, Struct(v2).put("id", 1))
    assert conv.from_connect_data(topic_name, v1, Struct(v1).put("id", 1))[:5] == v1_header

    # ... and a registry outage does not stop the task.
    registry.stop()
    assert conv.from_connect_data(topic_name, v1, Struct(v1).put("id", 9))[:5] == v1_header
    conv.close()


def test_latest_cache_ttl_zero_fetches_the_latest_each_time(
    registry: SchemaRegistry, topic_name: str
) -> None:
    subject = f"{topic_name}-value"
    v1 = order_schema().build()
    converter(registry.url).from_connect_data(topic_name, v1, Struct(v1).put("id", 0))
    conv = converter(
        registry.url,
        **{
            "auto.register.schemas": "false",
            "use.latest.version": "true",
            "latest.cache.ttl.sec": "0",
        },
    )
    registry.requests.clear()
    for i in range(5):
        conv.from_connect_data(topic_name, v1, Struct(v1).put("id", i))
    assert registry.requests[f"GET /subjects/{subject}/versions/latest"] == 5

    # So a newer version is used as soon as it is registered.
    v2 = order_schema(optional_note=True).build()
    v2_data = converter(registry.url).from_connect_data(topic_name, v2, Struct(v2).put("id", 1))
    assert conv.from_connect_data(topic_name, v1, Struct(v1).put("id", 2))[1:5] == v2_data[1:5]
    conv.close()


def test_an_unknown_schema_id_fails_the_record_naming_the_id_and_topic(
    registry: SchemaRegistry, topic_name: str
) -> None:
    conv = converter(registry.url)
    data = b"\x00" + (987654).to_bytes(4) + b"\x02"
    for read in (
        lambda: conv.to_connect_data(topic_name, data),
        lambda: conv.to_connect_data_batch(topic_name, [data], [None]),
    ):
        with pytest.raises(DataException) as caught:
            read()
        message = str(caught.value)
        assert message.startswith(f"Failed to deserialize data for topic '{topic_name}' to Avro")
        assert "Error retrieving Avro value schema for id 987654" in message
        assert "40403" in message  # the registry's answer stays in the message
    conv.close()


def test_latest_cache_size_bounds_the_subjects_kept(
    registry: SchemaRegistry, topic_name: str
) -> None:
    v1 = order_schema().build()
    topics = [f"{topic_name}-a", f"{topic_name}-b"]
    for topic in topics:
        converter(registry.url).from_connect_data(topic, v1, Struct(v1).put("id", 0))
    lookup_only = {"auto.register.schemas": "false", "use.latest.version": "true"}
    one = converter(registry.url, **lookup_only, **{"latest.cache.size": "1"})
    both = converter(registry.url, **lookup_only)
    registry.requests.clear()
    for i in range(3):
        for topic in topics:
            one.from_connect_data(topic, v1, Struct(v1).put("id", i))
            both.from_connect_data(topic, v1, Struct(v1).put("id", i))
    # Room for one subject: alternating between two fetches each time (3 x 2); the default
    # size keeps both (1 each).
    for topic in topics:
        assert registry.requests[f"GET /subjects/{topic}-value/versions/latest"] == 3 + 1
    one.close()
    both.close()


def test_records_written_with_a_since_soft_deleted_version_still_carry_it(
    registry: SchemaRegistry, topic_name: str
) -> None:
    """Confluent's deserializer looks the version up with deleted=true: soft-deleting a
    version (its schema id lives on) does not take it from records written with it."""
    v1 = order_schema().build()
    written = converter(registry.url).from_connect_data(topic_name, v1, Struct(v1).put("id", 7))
    v2 = order_schema(optional_note=True).build()
    converter(registry.url).from_connect_data(topic_name, v2, Struct(v2).put("id", 8))
    deleted = httpx.delete(f"{registry.url}/subjects/{topic_name}-value/versions/1")
    assert deleted.status_code == 200, deleted.text

    read = converter(registry.url).to_connect_data(topic_name, written)
    assert read.value.get("id") == 7
    assert read.schema.version == 1
