"""Consumer settings a sink connector overrides mean what they mean on Kafka Connect:
``max.poll.records`` bounds each put(), ``auto.offset.reset=none`` fails a task only for a
partition without a committed offset, and any ``fetch.max.bytes`` is accepted and still
delivers a 1 MB record. On Apache Kafka, with real plugin hosts."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from core.plugins import PluginCatalogue
from core.status import State
from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import produce, wait_for
from tests.support.plugins import catalogue_with, one_task_sink
from tests.support.workers import in_process_worker, start_connector

pytestmark = pytest.mark.integration

SINK = '''
from plugin_api import SinkConnector, SinkTask, ConfigDef

class CountingSinkTask(SinkTask):
    """Writes each value (its length, past 100 characters) to ``file``, and the size of each
    put() to ``sizes``."""
    def start(self, props):
        self.out = open(props["file"], "a")
        self.sizes = open(props["sizes"], "a")
    def put(self, records):
        if records:
            self.sizes.write(f"{len(records)}\\n")
        for r in records:
            value = r.value
            self.out.write(f"{value if len(value) <= 100 else len(value)}\\n")
    def flush(self, offsets):
        self.out.flush()
        self.sizes.flush()
    def stop(self):
        self.out.close()
        self.sizes.close()
''' + one_task_sink("CountingSink", "CountingSinkTask")


@pytest.fixture(scope="module")
def catalogue(
    bundled_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> PluginCatalogue:
    return catalogue_with(
        bundled_plugin_path,
        tmp_path_factory.mktemp("counting-plugins"),
        "counting-sink",
        {"counting_sink.py": SINK},
        {"CountingSink": "counting_sink:CountingSink"},
    )


def _sink(topic: str, out: Path, **overrides: str) -> dict[str, str]:
    return {
        "connector.class": "CountingSink",
        "topics": topic,
        "file": str(out / "out.txt"),
        "sizes": str(out / "sizes.txt"),
        **overrides,
    }


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.parametrize("data_path", ["host", "worker"])
def test_max_poll_records_bounds_every_put(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
    data_path: str,
) -> None:
    """As Kafka Connect, whose put() gets what one poll() returned: at most 10 records each
    with consumer.override.max.poll.records=10 (it was ignored: puts of 2,000 and 1,000)."""
    broker.create_topic(topic_name, 1)
    produce(bootstrap_servers, topic_name, [str(i).encode() for i in range(3_000)])
    worker = in_process_worker(catalogue, bootstrap_servers, **{"task.data.path": data_path})
    name = f"poll-records-{topic_name}"
    start_connector(
        worker, name, _sink(topic_name, tmp_path, **{"consumer.override.max.poll.records": "10"})
    )
    try:
        wait_for(lambda: len(_lines(tmp_path / "out.txt")) >= 3_000, 120, "every record put")
        assert worker.status.task(name, 0).state is State.RUNNING
    finally:
        worker.stop()
    assert _lines(tmp_path / "out.txt") == [str(i) for i in range(3_000)]
    sizes = [int(n) for n in _lines(tmp_path / "sizes.txt")]
    assert sum(sizes) == 3_000
    assert max(sizes) <= 10, sorted(set(sizes))


def _commit(bootstrap: str, group: str, topic: str, offsets: list[int]) -> None:
    """Commits ``offsets[p]`` for each partition ``p`` of ``topic`` as ``group``."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        tps = [TopicPartition(topic, p, offset) for p, offset in enumerate(offsets)]
        consumer.commit(offsets=tps, asynchronous=False)
    finally:
        consumer.close()


def test_auto_offset_reset_none_fails_only_a_partition_without_a_committed_offset(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
) -> None:
    """Kafka's ``none`` (librdkafka's ``error``): a group with committed offsets consumes from
    them; one without fails its task naming every partition it lacks an offset for, as
    NoOffsetForPartitionException does (librdkafka reports them one by one: the failure named
    only the first). It failed every task: "Invalid value "none" for configuration property"."""
    broker.create_topic(topic_name, 3)
    producer = Producer({"bootstrap.servers": bootstrap_servers})
    for i in range(5):
        producer.produce(topic_name, str(i).encode(), partition=0)
    assert producer.flush(30) == 0
    committed_name, fresh_name = f"reset-none-{topic_name}", f"reset-none-fresh-{topic_name}"
    _commit(bootstrap_servers, f"connect-{committed_name}", topic_name, [2, 0, 0])
    worker = in_process_worker(catalogue, bootstrap_servers)
    none = {"consumer.override.auto.offset.reset": "none"}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    try:
        start_connector(worker, committed_name, _sink(topic_name, tmp_path / "a", **none))
        wait_for(lambda: len(_lines(tmp_path / "a" / "out.txt")) >= 3, 60, "records put")
        assert worker.status.task(committed_name, 0).state is State.RUNNING
        start_connector(worker, fresh_name, _sink(topic_name, tmp_path / "b", **none))
        wait_for(lambda: worker.status.task(fresh_name, 0).state is State.FAILED, 60, "task FAILED")
        trace = worker.status.task(fresh_name, 0).trace
    finally:
        worker.stop()
    assert _lines(tmp_path / "a" / "out.txt") == ["2", "3", "4"]
    partitions = ", ".join(f"{topic_name}-{p}" for p in range(3))
    assert f"Undefined offset with no reset policy for partitions: [{partitions}]" in trace
    assert "auto.offset.reset=none" in trace
    assert _lines(tmp_path / "b" / "out.txt") == []


@pytest.mark.parametrize("fetch_max_bytes", ["500", "65536"])
def test_any_fetch_max_bytes_is_accepted_and_a_1_mb_record_still_arrives(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
    fetch_max_bytes: str,
) -> None:
    """Kafka accepts any fetch.max.bytes and returns a record larger than it (KIP-74); the
    task failed: "`fetch.max.bytes` must be >= `message.max.bytes`", a key never set."""
    broker.create_topic(topic_name, 1)
    big = b"x" * 1_000_000
    producer = Producer({"bootstrap.servers": bootstrap_servers, "message.max.bytes": 1_048_576})
    for value in (b"small-0", big, b"small-2"):
        producer.produce(topic_name, value)
    assert producer.flush(30) == 0
    worker = in_process_worker(catalogue, bootstrap_servers)
    name = f"fetch-max-{topic_name}"
    start_connector(
        worker,
        name,
        _sink(topic_name, tmp_path, **{"consumer.override.fetch.max.bytes": fetch_max_bytes}),
    )
    try:
        wait_for(lambda: len(_lines(tmp_path / "out.txt")) >= 3, 60, "every record put")
        assert worker.status.task(name, 0).state is State.RUNNING
    finally:
        worker.stop()
    assert _lines(tmp_path / "out.txt") == ["small-0", "1000000", "small-2"]
