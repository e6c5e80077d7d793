"""read_committed where Copycat reads topics a transactional producer writes, on Apache Kafka
(which really hides aborted records; the dev broker does not, see docs/architecture.md).

* A sink's consumer reads committed transactions only, by default; the connector's
  ``consumer.override.isolation.level`` can still ask for everything (which also shows that
  this test would see aborted records if the default let them through).
* The REST sink offsets read (``SinkOffsets.get``) does not answer while a transactional
  offset commit of the group is open, and then answers the committed offset.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from core.offsets import MemoryOffsetStore
from core.plugins import PluginCatalogue
from core.sink_offsets import SinkOffsets
from core.worker import Worker
from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import committed, wait_for

pytestmark = pytest.mark.integration

CLIENT_TIMEOUT_S = 30
# How long the transaction holding the group's offset stays open in the offsets test: long
# enough that an answer given meanwhile is told apart from one given after it.
OPEN_TRANSACTION_S = 2.0


def _write_transactions(bootstrap: str, topic: str, outcomes: list[str]) -> None:
    """One transaction of three records ``<outcome>-<n>-<i>`` per outcome, committed or aborted."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(CLIENT_TIMEOUT_S)
    for n, outcome in enumerate(outcomes):
        producer.begin_transaction()
        for i in range(3):
            producer.produce(topic, f"{outcome}-{n}-{i}".encode())
        # On the log before the abort: abort_transaction() drops what is still unsent.
        producer.flush(CLIENT_TIMEOUT_S)
        if outcome == "commit":
            producer.commit_transaction(CLIENT_TIMEOUT_S)
        else:
            producer.abort_transaction(CLIENT_TIMEOUT_S)


def _run_file_sink(
    catalogue: PluginCatalogue,
    bootstrap: str,
    topic: str,
    name: str,
    out: Path,
    overrides: dict[str, str],
    end_offset: int,
) -> list[str]:
    """The bundled FileStreamSink over the whole topic; its file's lines once its group has
    committed ``end_offset`` (everything read)."""
    worker = Worker(
        "w1",
        {
            "key.converter": "StringConverter",
            "value.converter": "StringConverter",
            "offset.flush.interval.ms": "200",
        },
        catalogue,
        MemoryOffsetStore(),
        client_props={"bootstrap.servers": bootstrap},
    )
    props = {
        "name": name,
        "connector.class": "FileStreamSink",
        "topics": topic,
        "file": str(out),
        **overrides,
    }
    try:
        worker.start_connector(name, props)
        assert worker.start_task(name, 0, worker.task_configs(name)[0]).wait_started(60)
        wait_for(
            lambda: committed(bootstrap, f"connect-{name}", topic) >= end_offset,
            60,
            f"{name} committed up to offset {end_offset}",
        )
    finally:
        worker.stop()
    return out.read_text().splitlines()


@pytest.mark.apache_kafka_only(reason="the dev broker shows aborted records to read_committed")
def test_a_sink_reads_only_committed_transactions_by_default(
    bundled_plugin_path: Path, broker: KafkaCluster, topic_name: str, tmp_path: Path
) -> None:
    broker.create_topic(topic_name, 1)
    outcomes = ["commit", "abort", "commit", "abort", "commit"]
    _write_transactions(broker.bootstrap_servers, topic_name, outcomes)
    # Transactions of 3 records, each followed by its commit or abort marker: the sink's
    # last record is the one before the last marker, and its group commits the offset after it.
    end_offset = len(outcomes) * 4 - 1
    catalogue = PluginCatalogue.scan([bundled_plugin_path])
    committed_values = [
        f"{outcome}-{n}-{i}"
        for n, outcome in enumerate(outcomes)
        if outcome == "commit"
        for i in range(3)
    ]
    everything = [f"{outcome}-{n}-{i}" for n, outcome in enumerate(outcomes) for i in range(3)]

    default = _run_file_sink(
        catalogue,
        broker.bootstrap_servers,
        topic_name,
        f"rc-{topic_name}",
        tmp_path / "default.txt",
        {},
        end_offset,
    )
    uncommitted = _run_file_sink(
        catalogue,
        broker.bootstrap_servers,
        topic_name,
        f"ru-{topic_name}",
        tmp_path / "uncommitted.txt",
        {"consumer.override.isolation.level": "read_uncommitted"},
        end_offset,
    )

    assert default == committed_values
    assert uncommitted == everything


@pytest.mark.apache_kafka_only(reason="transactional offset commits, as Apache Kafka keeps them")
def test_sink_offsets_are_read_only_once_their_transaction_is_committed(
    broker: KafkaCluster, topic_name: str
) -> None:
    broker.create_topic(topic_name, 1)
    group = f"connect-offsets-{topic_name}"
    bootstrap = broker.bootstrap_servers
    offsets = SinkOffsets({"bootstrap.servers": bootstrap}, group)
    offsets.alter({(topic_name, 0): 5})
    # A producer outside the worker commits the group's offset in a transaction (what a
    # consume-transform-produce application does), and keeps the transaction open a while.
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{group}"})
    producer.init_transactions(CLIENT_TIMEOUT_S)
    member = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        producer.begin_transaction()
        producer.produce(topic_name, b"x")
        producer.send_offsets_to_transaction(
            [KafkaTopicPartition(topic_name, 0, 42)],
            member.consumer_group_metadata(),
            CLIENT_TIMEOUT_S,
        )
        producer.flush(CLIENT_TIMEOUT_S)
        committed_at: list[float] = []

        def commit_later() -> None:
            time.sleep(OPEN_TRANSACTION_S)
            committed_at.append(time.monotonic())
            producer.commit_transaction(CLIENT_TIMEOUT_S)

        committer = threading.Thread(target=commit_later)
        started = time.monotonic()
        committer.start()
        rows = offsets.get()
        answered = time.monotonic()
        committer.join(CLIENT_TIMEOUT_S)
    finally:
        member.close()

    assert rows == [
        {
            "partition": {"kafka_topic": topic_name, "kafka_partition": 0},
            "offset": {"kafka_offset": 42},
        }
    ]
    assert committed_at and answered >= committed_at[0], (
        f"answered {answered - started:.2f} s in, before the commit at "
        f"{(committed_at or [started])[0] - started:.2f} s"
    )
