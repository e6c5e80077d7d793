"""Java client keys, as Kafka Connect users write them, under librdkafka's names."""

from __future__ import annotations

import confluent_kafka
import pytest

from core.kafka import SOURCE_PRODUCER_DEFAULTS, consumer_keys, librdkafka_keys
from core.runtime.sink import MAX_RECORDS_PER_PUT, max_records_per_put
from plugin_api import ConnectException


def test_java_keys_are_renamed_and_converted() -> None:
    assert librdkafka_keys(
        {
            "max.request.size": "2000000",
            "buffer.memory": "33554432",
            "fetch.max.wait.ms": "250",
            "receive.buffer.bytes": "-1",
            "send.buffer.bytes": "131072",
            "linger.ms": "7",  # the same name in both clients: untouched
        }
    ) == {
        "message.max.bytes": 2_000_000,
        "queue.buffering.max.kbytes": 32_768,
        "fetch.wait.max.ms": 250,
        "socket.receive.buffer.bytes": 0,
        "socket.send.buffer.bytes": 131_072,
        "linger.ms": "7",
    }


def test_the_java_key_wins_over_a_default_under_the_librdkafka_name() -> None:
    settings = librdkafka_keys({"message.max.bytes": 1_048_576, "max.request.size": "3000000"})
    assert settings == {"message.max.bytes": 3_000_000}


def test_java_assignor_class_names_become_librdkafka_assignors() -> None:
    strategy = (
        "org.apache.kafka.clients.consumer.RangeAssignor, "
        "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
    )
    settings = librdkafka_keys({"partition.assignment.strategy": strategy})
    assert settings["partition.assignment.strategy"] == "range,cooperative-sticky"
    assert librdkafka_keys({"partition.assignment.strategy": "roundrobin"}) == {
        "partition.assignment.strategy": "roundrobin"
    }


@pytest.mark.parametrize(
    "java",
    [
        {"partitioner.class": "org.apache.kafka.clients.producer.RoundRobinPartitioner"},
        {"partitioner.ignore.keys": "true"},
        {"partitioner.ignore.keys": " TRUE "},
    ],
)
def test_a_java_partitioner_that_leaves_keys_out_leaves_them_out(java: dict[str, str]) -> None:
    # Dropped as keys librdkafka does not know, they left keyed records on their key's
    # partition (murmur2, SOURCE_PRODUCER_DEFAULTS), where Kafka Connect spreads them.
    settings = librdkafka_keys({**SOURCE_PRODUCER_DEFAULTS, **java})
    assert settings["partitioner"] == "random"
    assert not {"partitioner.class", "partitioner.ignore.keys"} & set(settings)
    confluent_kafka.Producer(settings)  # librdkafka takes it


def test_keyed_partitioning_stays_when_java_keeps_keys() -> None:
    kept = librdkafka_keys({**SOURCE_PRODUCER_DEFAULTS, "partitioner.ignore.keys": "false"})
    assert kept["partitioner"] == "murmur2_random" and "partitioner.ignore.keys" not in kept
    custom = {**SOURCE_PRODUCER_DEFAULTS, "partitioner.class": "com.example.MyPartitioner"}
    assert librdkafka_keys(custom)["partitioner"] == "murmur2_random"


def test_a_value_that_is_no_number_names_its_key() -> None:
    with pytest.raises(ConnectException, match="'2MB'.*'max.request.size'"):
        librdkafka_keys({"max.request.size": "2MB"})


def test_source_producers_retry_for_ever_unless_a_connector_bounds_delivery_timeout_ms() -> None:
    # Kafka Connect's delivery.timeout.ms=Integer.MAX_VALUE; librdkafka's 0 is no limit.
    assert SOURCE_PRODUCER_DEFAULTS["message.timeout.ms"] == 0
    overridden = librdkafka_keys({**SOURCE_PRODUCER_DEFAULTS, "delivery.timeout.ms": "120000"})
    assert overridden["message.timeout.ms"] == 120_000
    assert "delivery.timeout.ms" not in overridden


def test_auto_offset_reset_none_is_librdkafkas_error() -> None:
    assert librdkafka_keys({"auto.offset.reset": "none"}) == {"auto.offset.reset": "error"}
    assert librdkafka_keys({"auto.offset.reset": "latest"}) == {"auto.offset.reset": "latest"}


@pytest.mark.parametrize("fetch_max_bytes", ["0", "500", "65536", "2147483647"])
def test_any_fetch_max_bytes_makes_a_consumer_librdkafka_accepts(fetch_max_bytes: str) -> None:
    settings = consumer_keys({"group.id": "g", "fetch.max.bytes": fetch_max_bytes})
    confluent_kafka.Consumer(settings).close()
    assert settings.get("message.max.bytes", 1_000_000) <= settings["fetch.max.bytes"]


def test_a_negative_fetch_max_bytes_names_its_key() -> None:
    with pytest.raises(ConnectException, match="-1 for configuration fetch.max.bytes"):
        consumer_keys({"fetch.max.bytes": "-1"})


def test_max_poll_records_bounds_a_put() -> None:
    assert max_records_per_put({}) == MAX_RECORDS_PER_PUT
    assert max_records_per_put({"max.poll.records": "10"}) == 10
    # As Java's ConfigDef reads an INT: leading zeros and a sign are fine.
    assert max_records_per_put({"max.poll.records": " 05 "}) == 5
    assert max_records_per_put({"max.poll.records": "+7"}) == 7
    for bad in ("0", "ten", "1.5", "1_000"):
        with pytest.raises(ConnectException, match=f"{bad} for configuration max.poll.records"):
            max_records_per_put({"max.poll.records": bad})
