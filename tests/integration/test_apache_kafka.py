"""What Apache Kafka does that the dev broker does not (docs/architecture.md lists these).

Distributed mode and exactly-once rest on these behaviours, so each is shown here on the
test run's Apache Kafka (or ``COPYCAT_TEST_BOOTSTRAP``). Each test names the dev broker's
shortcoming it is about and is skipped when the suite runs on the dev broker.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    ConfigResource,
    OffsetSpec,
    ResourceType,
)

from tests.support.apache_kafka import KafkaCluster, needs_own_apache_kafka, own_apache_kafka
from tests.support.kafka import read_all, wait_for

pytestmark = pytest.mark.integration

# Admin and client calls on a local single-node cluster answer in milliseconds; this bounds
# a hang, it is not a performance claim.
CLIENT_TIMEOUT_S = 30.0


def _consumer(bootstrap: str, **extra: object) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **extra,
        }
    )


def _produce_batch(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes]]) -> None:
    # A long linger puts every record into one batch: the case the dev broker miscounts.
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 100})
    for key, value in records:
        producer.produce(topic, value, key)
    assert producer.flush(CLIENT_TIMEOUT_S) == 0


@pytest.mark.apache_kafka_only(reason="the dev broker reports the last batch's base offset")
def test_high_watermark_is_the_last_offset_plus_one(broker: KafkaCluster, topic_name: str) -> None:
    broker.create_topic(topic_name, 1)
    _produce_batch(broker.bootstrap_servers, topic_name, [(None, b"x%d" % i) for i in range(100)])
    consumer = _consumer(broker.bootstrap_servers)
    try:
        low, high = consumer.get_watermark_offsets(
            TopicPartition(topic_name, 0), timeout=CLIENT_TIMEOUT_S
        )
    finally:
        consumer.close()
    assert (low, high) == (0, 100)


@pytest.mark.apache_kafka_only(reason="AdminClient.list_offsets never completes on the dev broker")
def test_list_offsets_answers_earliest_latest_and_max_timestamp(
    broker: KafkaCluster, topic_name: str
) -> None:
    broker.create_topic(topic_name, 1)
    _produce_batch(broker.bootstrap_servers, topic_name, [(None, b"v%d" % i) for i in range(7)])
    tp = TopicPartition(topic_name, 0)
    answers = {
        spec: broker.admin.list_offsets({tp: spec()}, request_timeout=CLIENT_TIMEOUT_S)[tp]
        .result(CLIENT_TIMEOUT_S)
        .offset
        for spec in (OffsetSpec.earliest, OffsetSpec.latest, OffsetSpec.max_timestamp)
    }
    assert answers[OffsetSpec.earliest] == 0
    assert answers[OffsetSpec.latest] == 7
    assert 0 <= answers[OffsetSpec.max_timestamp] <= 6


@pytest.mark.apache_kafka_only(reason="the dev broker auto-creates topics with 4 partitions")
def test_an_auto_created_topic_has_one_partition(broker: KafkaCluster, topic_name: str) -> None:
    _produce_batch(broker.bootstrap_servers, topic_name, [(None, b"first")])
    meta = broker.admin.list_topics(topic_name, timeout=CLIENT_TIMEOUT_S).topics[topic_name]
    assert len(meta.partitions) == 1


@pytest.mark.apache_kafka_only(reason="describe_consumer_groups lists no members on the dev broker")
def test_describe_consumer_groups_lists_the_members_and_their_assignment(
    broker: KafkaCluster, topic_name: str
) -> None:
    broker.create_topic(topic_name, 2)
    group = f"members-{uuid.uuid4().hex}"
    consumer = _consumer(broker.bootstrap_servers, **{"group.id": group, "client.id": "probe"})
    try:
        consumer.subscribe([topic_name])
        wait_for(lambda: consumer.poll(0.2) is None and consumer.assignment(), what="assignment")
        [described] = broker.admin.describe_consumer_groups([group]).values()
        group_info = described.result(CLIENT_TIMEOUT_S)
    finally:
        consumer.close()
    [member] = group_info.members
    assert member.client_id == "probe"
    assert sorted(p.partition for p in member.assignment.topic_partitions) == [0, 1]


@pytest.mark.apache_kafka_only(
    reason="the dev broker joins a group after ~half the session timeout"
)
def test_a_consumer_joins_its_group_without_waiting_out_the_session_timeout(
    broker: KafkaCluster, topic_name: str
) -> None:
    broker.create_topic(topic_name, 1)
    session_timeout_s = 30
    consumer = _consumer(
        broker.bootstrap_servers, **{"session.timeout.ms": session_timeout_s * 1000}
    )
    try:
        started = time.monotonic()
        consumer.subscribe([topic_name])
        wait_for(lambda: consumer.poll(0.1) is None and consumer.assignment(), what="assignment")
        took = time.monotonic() - started
    finally:
        consumer.close()
    # The dev broker takes ~15 s here; a broker that never waits for the session timeout
    # answers in well under a third of it even on a loaded machine.
    assert took < session_timeout_s / 3, f"joining took {took:.1f} s"


@pytest.mark.apache_kafka_only(reason="the dev broker shows aborted records to read_committed")
def test_read_committed_consumers_do_not_see_aborted_transactions(
    broker: KafkaCluster, topic_name: str
) -> None:
    broker.create_topic(topic_name, 1)
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": f"tx-{topic_name}"}
    )
    producer.init_transactions(CLIENT_TIMEOUT_S)
    for outcome in ("commit", "abort", "commit"):
        producer.begin_transaction()
        for i in range(3):
            producer.produce(topic_name, f"{outcome}-{i}".encode())
        producer.flush(CLIENT_TIMEOUT_S)
        if outcome == "commit":
            producer.commit_transaction(CLIENT_TIMEOUT_S)
        else:
            producer.abort_transaction(CLIENT_TIMEOUT_S)

    def values(isolation: str) -> list[bytes]:
        consumer = _consumer(broker.bootstrap_servers, **{"isolation.level": isolation})
        consumer.assign([TopicPartition(topic_name, 0, 0)])
        seen: list[bytes] = []
        try:
            deadline = time.monotonic() + CLIENT_TIMEOUT_S
            while time.monotonic() < deadline:
                batch = consumer.consume(100, 0.5)
                seen += [m.value() for m in batch if m.error() is None]
                if not batch and seen:
                    return seen
            return seen
        finally:
            consumer.close()

    assert values("read_committed") == [b"commit-0", b"commit-1", b"commit-2"] * 2
    assert values("read_uncommitted").count(b"abort-0") == 1


@pytest.mark.apache_kafka_only(reason="the dev broker never compacts")
def test_a_compacted_topic_keeps_only_the_last_value_of_each_key(
    broker: KafkaCluster, topic_name: str
) -> None:
    # Small, young segments and no dirty-ratio threshold, so the cleaner (every second, see
    # log.cleaner.backoff.ms in tests/support/apache_kafka.py) compacts at once.
    broker.create_topic(
        topic_name,
        1,
        {
            "cleanup.policy": "compact",
            "segment.ms": "100",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "100",
        },
    )
    bootstrap = broker.bootstrap_servers
    for round_ in range(3):
        _produce_batch(bootstrap, topic_name, [(b"k%d" % k, b"r%d" % round_) for k in range(5)])
    time.sleep(0.2)  # older than segment.ms: the next append rolls a new active segment
    _produce_batch(bootstrap, topic_name, [(b"tail", b"rolls the segment")])

    def compacted() -> list[tuple[bytes, bytes]] | None:
        messages = read_all(bootstrap, topic_name, 6, timeout_s=5)
        pairs = [(m.key(), m.value()) for m in messages]
        return pairs if len(pairs) == 6 else None

    pairs = wait_for(compacted, timeout_s=60, what="the log cleaner to compact the topic")
    assert pairs == [(b"k%d" % k, b"r2") for k in range(5)] + [(b"tail", b"rolls the segment")]


@pytest.mark.apache_kafka_only(reason="describe_configs returns nothing on the dev broker")
def test_describe_configs_returns_a_topics_settings(broker: KafkaCluster, topic_name: str) -> None:
    broker.create_topic(topic_name, 1, {"cleanup.policy": "compact"})
    resource = ConfigResource(ResourceType.TOPIC, topic_name)
    [future] = broker.admin.describe_configs([resource]).values()
    configs = future.result(CLIENT_TIMEOUT_S)
    assert configs["cleanup.policy"].value == "compact"
    assert configs["min.insync.replicas"].value == "1"


@pytest.mark.apache_kafka_only(reason="the dev broker cannot add partitions to a topic")
def test_partitions_can_be_added_to_a_topic(broker: KafkaCluster, topic_name: str) -> None:
    broker.create_topic(topic_name, 1)
    broker.add_partitions(topic_name, 3)
    meta = broker.admin.list_topics(topic_name, timeout=CLIENT_TIMEOUT_S).topics[topic_name]
    assert sorted(meta.partitions) == [0, 1, 2]


@needs_own_apache_kafka(
    "starts an Apache Kafka of its own (the dev broker keeps data in memory only)"
)
def test_records_survive_a_broker_restart(tmp_path: Path) -> None:
    # Its own broker: restarting the run's shared one would break the other tests.
    with own_apache_kafka(tmp_path) as kafka:
        cluster = KafkaCluster(kafka.bootstrap_servers)
        cluster.create_topic("durable", 1)
        _produce_batch(kafka.bootstrap_servers, "durable", [(b"k", b"v%d" % i) for i in range(10)])
        kafka.restart(watch_pid=os.getpid())
        values = [m.value() for m in read_all(kafka.bootstrap_servers, "durable", 10)]
    assert values == [b"v%d" % i for i in range(10)]
