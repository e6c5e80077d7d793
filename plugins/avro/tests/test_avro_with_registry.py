"""AvroConverter against the real dev Schema Registry (and the test run's broker)."""

from __future__ import annotations

import base64
import datetime
import decimal
import uuid

import httpx
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from copycat_avro import AvroConverter, SchemaRegistryClient

from plugin_api import (
    INT64_SCHEMA,
    STRING_SCHEMA,
    DataException,
    Decimal,
    SchemaBuilder,
    Struct,
    Timestamp,
)

pytestmark = pytest.mark.integration


def converter(url: str, is_key: bool = False, **config: object) -> AvroConverter:
    conv = AvroConverter()
    conv.configure({"schema.registry.url": url, **config}, is_key)
    return conv


def user_v1() -> SchemaBuilder:
    return (
        SchemaBuilder.struct()
        .name("com.example.User")
        .field("id", INT64_SCHEMA)
        .field("balance", Decimal.schema(2))
        .field("created", Timestamp.SCHEMA)
    )


def test_round_trip_through_registry_and_broker(schema_registry, broker, topic_name: str) -> None:  # noqa: ANN001
    schema = user_v1().build()
    value = (
        Struct(schema)
        .put("id", 42)
        .put("balance", decimal.Decimal("10.50"))
        .put("created", datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.UTC))
    )
    writer = converter(schema_registry.url)
    data = writer.from_connect_data(topic_name, schema, value)
    assert data is not None and data[0] == 0
    schema_id = int.from_bytes(data[1:5], "big")
    registered = httpx.get(
        f"{schema_registry.url}/subjects/{topic_name}-value/versions/latest"
    ).json()
    assert registered["id"] == schema_id and registered["version"] == 1

    broker.create_topic(topic_name, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce(topic_name, value=data)
    producer.flush(10)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": uuid.uuid4().hex,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic_name, 0, OFFSET_BEGINNING)])  # no group join wait
    try:
        msg = None
        for _ in range(100):
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                break
        assert msg is not None and msg.value() == data
    finally:
        consumer.close()

    # A fresh converter knows nothing: it fetches the writer schema by id.
    reader = converter(schema_registry.url)
    result = reader.to_connect_data(topic_name, msg.value())
    assert result.value.get("balance") == decimal.Decimal("10.50")
    assert result.value.get("created") == datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.UTC)
    # Like Confluent's converter, the registry version becomes the Connect schema version.
    assert result.schema.version == 1
    assert result.schema.fields == schema.fields and result.schema.name == schema.name


def test_compatible_evolution_accepted_incompatible_rejected(
    schema_registry, topic_name: str
) -> None:  # noqa: ANN001
    conv = converter(schema_registry.url)
    v1 = user_v1().build()
    v2 = user_v1().field("email", SchemaBuilder.string().optional().build()).build()
    v3 = user_v1().field("email", STRING_SCHEMA).field("phone", STRING_SCHEMA).build()
    now = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
    base = {"id": 1, "balance": decimal.Decimal("1.00"), "created": now}

    first = conv.from_connect_data(topic_name, v1, Struct.from_dict(v1, base))
    second = conv.from_connect_data(topic_name, v2, Struct.from_dict(v2, {**base, "email": "a@b"}))
    assert first[1:5] != second[1:5]  # a new schema id for the evolved schema
    with pytest.raises(DataException) as caught:
        conv.from_connect_data(
            topic_name, v3, Struct.from_dict(v3, {**base, "email": "a", "phone": "1"})
        )
    message = str(caught.value)
    assert f"{topic_name}-value" in message
    assert "incompatible" in message and "409" in message
    versions = httpx.get(f"{schema_registry.url}/subjects/{topic_name}-value/versions").json()
    assert versions == [1, 2]


def test_lookup_only_mode_fails_for_unregistered_schema(schema_registry, topic_name: str) -> None:  # noqa: ANN001
    conv = converter(schema_registry.url, **{"auto.register.schemas": "false"})
    with pytest.raises(DataException, match="40401"):
        conv.from_connect_data(topic_name, STRING_SCHEMA, "x")
    converter(schema_registry.url).from_connect_data(topic_name, STRING_SCHEMA, "x")
    assert conv.from_connect_data(topic_name, STRING_SCHEMA, "y")[5:] == b"\x02y"


def test_basic_auth_user_info_is_sent() -> None:
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json={"id": 7})

    client = SchemaRegistryClient(
        ["http://registry:8081"], auth=("alice", "s3cret"), transport=httpx.MockTransport(handler)
    )
    assert client.register("s", '"string"') == 7
    assert client.register("s", '"string"') == 7  # cached: one request only
    assert seen == ["Basic " + base64.b64encode(b"alice:s3cret").decode()]

    url_seen: list[str | None] = []
    url_client = SchemaRegistryClient(
        ["http://bob:pw@registry:8081"],
        transport=httpx.MockTransport(
            lambda r: (
                url_seen.append(r.headers.get("authorization"))
                or httpx.Response(200, json={"schema": '"int"'})
            )
        ),
    )
    url_client.schema_by_id(3)
    assert url_seen == ["Basic " + base64.b64encode(b"bob:pw").decode()]


def test_unreachable_registry_is_retriable() -> None:
    from plugin_api import RetriableException

    conv = converter("http://127.0.0.1:9")  # discard port: nothing listens
    with pytest.raises(RetriableException, match="Could not reach the schema registry"):
        conv.from_connect_data("t", STRING_SCHEMA, "x")
