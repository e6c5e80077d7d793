"""ConsumedBatch.from_messages on messages consumed from a real broker."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from core.kafka import SINK_CONSUMER_DEFAULTS
from isolation._hostside.copycat_batch import ConsumedBatch
from tests.support.apache_kafka import KafkaCluster

pytestmark = pytest.mark.integration


def _consume(bootstrap: str, topic: str, partitions: int, count: int) -> list:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", **SINK_CONSUMER_DEFAULTS}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    messages: list = []
    try:
        for _ in range(100):
            messages += [
                m for m in consumer.consume(count - len(messages), 1.0) if m.error() is None
            ]
            if len(messages) >= count:
                break
    finally:
        consumer.close()
    assert len(messages) == count
    return messages


def _row(message) -> tuple:
    ts_type, ts = message.timestamp()
    return (
        message.topic(),
        message.partition(),
        message.offset(),
        ts if ts_type else None,
        ts_type,
        message.key(),
        message.value(),
        message.headers(),
    )


@pytest.mark.also_on_dev_broker
def test_columns_of_consumed_messages_give_back_each_message(
    broker: KafkaCluster, bootstrap_servers: str, topic_name: str
) -> None:
    broker.create_topic(topic_name, 2)
    producer = Producer({"bootstrap.servers": bootstrap_servers})
    for i in range(40):
        producer.produce(
            topic_name,
            value=None if i == 7 else b"value-%d" % i,
            key=b"k%d" % (i % 3) if i % 2 else None,
            partition=i % 2,
            headers=[("n", b"%d" % i)] if i % 5 == 0 else None,
            timestamp=1_700_000_000_000 + i,
        )
    producer.flush(30)
    messages = _consume(bootstrap_servers, topic_name, 2, 40)

    batch = ConsumedBatch.from_messages(messages)

    assert list(batch.rows()) == [_row(m) for m in messages]
    assert batch.topics == topic_name  # one topic: stored once
    last = {}
    for m in messages:
        last[(m.topic(), m.partition())] = m.offset() + 1
    assert batch.positions() == last


@pytest.mark.also_on_dev_broker
def test_a_single_partition_without_keys_or_headers_shares_those_columns(
    broker: KafkaCluster, bootstrap_servers: str, topic_name: str
) -> None:
    broker.create_topic(topic_name, 1)
    producer = Producer({"bootstrap.servers": bootstrap_servers})
    for i in range(25):
        producer.produce(topic_name, value=b"line %d" % i, partition=0)
    producer.flush(30)
    messages = _consume(bootstrap_servers, topic_name, 1, 25)

    batch = ConsumedBatch.from_messages(messages)

    assert (batch.topics, batch.partitions) == (topic_name, 0)
    assert batch.keys is None and batch.headers is None
    assert batch.offsets == list(range(25))
    assert list(batch.rows()) == [_row(m) for m in messages]
    assert batch.positions() == {(topic_name, 0): 25}
