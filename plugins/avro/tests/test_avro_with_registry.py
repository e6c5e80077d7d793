"""AvroConverter against the real dev Schema Registry (and the test run's broker)."""

from __future__ import annotations

import datetime
import decimal
import json
import logging
import uuid

import httpx
import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from copycat_avro import AvroConverter

from plugin_api import (
    INT64_SCHEMA,
    STRING_SCHEMA,
    ConfigException,
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
    with pytest.raises(ConfigException) as caught:
        conv.from_connect_data(
            topic_name, v3, Struct.from_dict(v3, {**base, "email": "a", "phone": "1"})
        )
    # Confluent's converter: a registry client error (409) is a ConfigException (its
    # serializer's InvalidConfigurationException), the registry's answer in the message.
    assert type(caught.value) is ConfigException  # Kafka's class in DLQ headers and traces
    message = str(caught.value)
    assert message.startswith(f"Failed to access Avro data from topic '{topic_name}' : ")
    assert f"{topic_name}-value" in message and schema_registry.url in message
    assert "incompatible" in message and "409" in message
    versions = httpx.get(f"{schema_registry.url}/subjects/{topic_name}-value/versions").json()
    assert versions == [1, 2]


def test_lookup_only_mode_fails_for_unregistered_schema(schema_registry, topic_name: str) -> None:  # noqa: ANN001
    conv = converter(schema_registry.url, **{"auto.register.schemas": "false"})
    with pytest.raises(DataException, match="40401") as caught:
        conv.from_connect_data(topic_name, STRING_SCHEMA, "x")
    # Not a client error to Confluent's serializer (40401 // 100 is 404): a DataException.
    assert type(caught.value) is DataException
    assert str(caught.value).startswith(f"Failed to serialize Avro data from topic '{topic_name}'")
    converter(schema_registry.url).from_connect_data(topic_name, STRING_SCHEMA, "x")
    assert conv.from_connect_data(topic_name, STRING_SCHEMA, "y")[5:] == b"\x02y"


def test_registry_requests_are_not_logged_one_line_each(
    schema_registry,  # noqa: ANN001
    topic_name: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """httpx logs every request at INFO ("HTTP Request: POST .../versions "HTTP/1.1 409
    Conflict""): a plugin host printed one line per record refused (366 lines in 20 s with
    errors.tolerance=all). Confluent's client logs no line per request; the refusal is in
    the error, naming subject and registry. httpx's own logging is left as it is."""
    caplog.set_level(logging.INFO)
    httpx_logger = logging.getLogger("httpx")
    level, handlers = httpx_logger.level, list(httpx_logger.handlers)
    conv = converter(schema_registry.url)
    data = conv.from_connect_data(topic_name, STRING_SCHEMA, "x")
    assert converter(schema_registry.url).to_connect_data(topic_name, data).value == "x"
    for _ in range(3):
        with pytest.raises(ConfigException) as refused:
            conv.from_connect_data(topic_name, INT64_SCHEMA, 1)  # 409: incompatible
        message = str(refused.value)
        assert f"'{topic_name}-value'" in message and schema_registry.url in message, message
    logged = [r.getMessage() for r in caplog.records if r.name.startswith(("httpx", "httpcore"))]
    assert logged == []
    assert (httpx_logger.level, httpx_logger.handlers) == (level, handlers)
    # Other httpx requests of the process are still logged as before.
    httpx.get(f"{schema_registry.url}/subjects")
    assert any(r.name == "httpx" and "HTTP Request" in r.getMessage() for r in caplog.records)


def test_unreachable_registry_is_retriable() -> None:
    from plugin_api import RetriableException

    conv = converter("http://127.0.0.1:9")  # discard port: nothing listens
    with pytest.raises(RetriableException, match="Could not reach the schema registry"):
        conv.from_connect_data("t", STRING_SCHEMA, "x")


def flattened() -> SchemaBuilder:
    """The value schema HoistField(line), HoistField(outer), Flatten(".") make of a line."""
    return SchemaBuilder.struct().field("outer.line", STRING_SCHEMA)


def test_a_name_avro_refuses_fails_the_record_naming_it_and_registers_nothing(
    schema_registry,  # noqa: ANN001
    topic_name: str,
) -> None:
    """As Confluent's converter, whose fromConnectSchema fails in Java Avro's name check: a
    schema no Java consumer could parse is never registered."""
    conv = converter(schema_registry.url)
    schema = flattened().build()
    for _ in range(2):  # the schema is converted again (and fails again), never half-cached
        with pytest.raises(DataException) as caught:
            conv.from_connect_data(topic_name, schema, Struct(schema).put("outer.line", "a"))
        message = str(caught.value)
        assert repr(topic_name) in message and "'outer.line'" in message, message
        assert "io.confluent.connect.avro.ConnectDefault" in message, message
        assert "Illegal character in: outer.line" in message and "scrub.invalid.names" in message
    named = SchemaBuilder.struct().name("com.x.my-rec").field("a", STRING_SCHEMA).build()
    with pytest.raises(DataException, match="'com.x.my-rec'.*Illegal character in: my-rec"):
        conv.from_connect_data(topic_name, named, Struct(named).put("a", "x"))
    subjects = httpx.get(f"{schema_registry.url}/subjects").json()
    assert f"{topic_name}-value" not in subjects


def test_scrub_invalid_names_registers_valid_names_and_reads_back(
    schema_registry,  # noqa: ANN001
    topic_name: str,
) -> None:
    """scrub.invalid.names=true: Confluent's doScrubName (URL-encode, x before a leading digit,
    other invalid characters to '_'), in field, record and namespace names and in the data."""
    conv = converter(schema_registry.url, **{"scrub.invalid.names": "true"})
    inner = SchemaBuilder.struct().name("com.x.my-rec").field("a b", STRING_SCHEMA).build()
    schema = (
        flattened()
        .field("1st", SchemaBuilder.int32().optional().build())
        .field("in", inner)
        .field("ok_name", STRING_SCHEMA)
        .build()
    )
    value = (
        Struct(schema)
        .put("outer.line", "a")
        .put("1st", 7)
        .put("in", Struct(inner).put("a b", "b"))
        .put("ok_name", "c")
    )
    first = conv.from_connect_data(topic_name, schema, value)
    again = conv.from_connect_data(topic_name, schema, value)  # the compiled writer
    assert first == again
    latest = httpx.get(f"{schema_registry.url}/subjects/{topic_name}-value/versions/latest").json()
    registered = json.loads(latest["schema"])
    assert [f["name"] for f in registered["fields"]] == ["outer_line", "x1st", "in", "ok_name"]
    record = registered["fields"][2]["type"]
    assert (record["namespace"], record["name"]) == ("com.x", "my_rec")
    assert [f["name"] for f in record["fields"]] == ["a_b"]  # URL-encoded "a+b", then '_'
    read = converter(schema_registry.url).to_connect_data(topic_name, first)
    assert read.value.get("outer_line") == "a" and read.value.get("x1st") == 7
    assert read.value.get("in").get("a_b") == "b" and read.value.get("ok_name") == "c"


def test_connect_meta_data_false_registers_no_connect_properties(
    schema_registry,  # noqa: ANN001
    topic_name: str,
) -> None:
    conv = converter(schema_registry.url, **{"connect.meta.data": "false"})
    schema = (
        SchemaBuilder.struct()
        .name("com.example.Small")
        .version(3)
        .doc("a doc")
        .field("tiny", SchemaBuilder.int8().build())
        .field("when", Timestamp.SCHEMA)
        .build()
    )
    value = (
        Struct(schema)
        .put("tiny", 5)
        .put("when", datetime.datetime(2024, 5, 1, tzinfo=datetime.UTC))
    )
    data = conv.from_connect_data(topic_name, schema, value)
    latest = httpx.get(f"{schema_registry.url}/subjects/{topic_name}-value/versions/latest").json()
    assert "connect." not in latest["schema"], latest["schema"]
    assert json.loads(latest["schema"]) == {
        "type": "record",
        "name": "Small",
        "namespace": "com.example",
        "fields": [
            {"name": "tiny", "type": "int"},
            {"name": "when", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        ],
    }
    read = converter(schema_registry.url).to_connect_data(topic_name, data)
    assert read.value.get("tiny") == 5  # an int32 now: the int8 marker was not written
