"""Sink task failure semantics on a real broker: FAILED with the trace, then redelivery."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from core.offsets import MemoryOffsetStore
from core.plugins import PluginCatalogue
from core.status import State
from core.worker import Worker
from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import committed, wait_for
from tests.support.plugins import catalogue_with, one_task_sink

pytestmark = pytest.mark.integration

SINK = """
from plugin_api import SinkConnector, SinkTask, ConfigDef

class RecordingSinkTask(SinkTask):
    def start(self, props):
        self.out = open(props["file"], "a")
        self.fail_on = props.get("fail.on")
    def put(self, records):
        for r in records:
            if r.value == self.fail_on:
                raise RuntimeError(f"poison record at offset {r.kafka_offset}")
            self.out.write(f"{r.kafka_offset}:{r.value}\\n")
    def flush(self, offsets):
        self.out.flush()
    def stop(self):
        self.out.close()
""" + one_task_sink("RecordingSink", "RecordingSinkTask")


@pytest.fixture(scope="module")
def catalogue(
    bundled_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> PluginCatalogue:
    return catalogue_with(
        bundled_plugin_path,
        tmp_path_factory.mktemp("sink-plugins"),
        "recording-sink",
        {"recording_sink.py": SINK},
        {"RecordingSink": "recording_sink:RecordingSink"},
    )


def _worker(
    catalogue: PluginCatalogue, bootstrap: str, flush_ms: int = 200, data_path: str = "auto"
) -> Worker:
    return Worker(
        "w1",
        {
            "key.converter": "StringConverter",
            "value.converter": "StringConverter",
            "offset.flush.interval.ms": str(flush_ms),
            "consumer.session.timeout.ms": "6000",
            "consumer.heartbeat.interval.ms": "1000",
            "task.data.path": data_path,
        },
        catalogue,
        MemoryOffsetStore(),
        client_props={"bootstrap.servers": bootstrap},
    )


@pytest.mark.also_on_dev_broker
def test_failing_put_marks_task_failed_and_uncommitted_records_are_redelivered(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
) -> None:
    broker.create_topic(topic_name, partitions=1)
    producer = Producer({"bootstrap.servers": bootstrap_servers})
    for i in range(500):
        producer.produce(topic_name, f"ok-{i}".encode())
    producer.flush(10)
    out = tmp_path / "sink.out"
    name = f"rec-{topic_name}"
    props = {
        "name": name,
        "connector.class": "RecordingSink",
        "topics": topic_name,
        "file": str(out),
        "fail.on": "boom",
    }
    worker = _worker(catalogue, bootstrap_servers)
    worker.start_connector(name, props)
    assert worker.start_task(name, 0, worker.task_configs(name)[0]).wait_started(60)
    try:
        wait_for(
            lambda: committed(bootstrap_servers, f"connect-{name}", topic_name) == 500,
            60,
            "the first 500 records committed",
        )
        for value in ["boom"] + [f"late-{i}" for i in range(99)]:
            producer.produce(topic_name, value.encode())
        producer.flush(10)
        wait_for(lambda: worker.status.task(name, 0).state is State.FAILED, 60, "task FAILED")
        trace = worker.status.task(name, 0).trace
        assert "RuntimeError: poison record at offset 500" in trace
        assert "recording_sink.py" in trace  # the plugin's own frames, from its host
        assert worker.status.connector(name).state is State.RUNNING
        time.sleep(1)
        assert committed(bootstrap_servers, f"connect-{name}", topic_name) == 500
    finally:
        worker.stop()

    # Restart without the poison rule: everything after the last commit comes again.
    restarted = _worker(catalogue, bootstrap_servers)
    props.pop("fail.on")
    restarted.start_connector(name, props)
    restarted.start_task(name, 0, restarted.task_configs(name)[0])
    try:
        wait_for(
            lambda: committed(bootstrap_servers, f"connect-{name}", topic_name) == 600,
            60,
            "redelivered records committed",
        )
    finally:
        restarted.stop()
    rows = out.read_text().splitlines()
    assert rows[:500] == [f"{i}:ok-{i}" for i in range(500)]
    assert rows[500:] == ["500:boom"] + [f"{501 + i}:late-{i}" for i in range(99)]


def test_stop_connector_stops_its_tasks_and_flushes_what_they_wrote(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
) -> None:
    broker.create_topic(topic_name, partitions=1)
    producer = Producer({"bootstrap.servers": bootstrap_servers})
    for i in range(3000):
        producer.produce(topic_name, f"v-{i}".encode())
    producer.flush(10)
    out = tmp_path / "out.txt"
    name = f"stop-{topic_name}"
    worker = _worker(catalogue, bootstrap_servers, flush_ms=600_000)  # no periodic commit
    worker.start_connector(
        name,
        {"name": name, "connector.class": "FileStreamSink", "topics": topic_name, "file": str(out)},
    )
    assert worker.start_task(name, 0, worker.task_configs(name)[0]).wait_started(60)
    runner = worker.connectors[name].tasks[0]
    wait_for(lambda: runner.loop.records_moved >= 3000, 60, "all records put")
    worker.stop_connector(name)
    assert not runner.is_alive()
    assert out.read_text().splitlines() == [f"v-{i}" for i in range(3000)]
    assert committed(bootstrap_servers, f"connect-{name}", topic_name) == 3000
    assert name not in worker.connectors


def test_records_are_put_without_waiting_to_fill_a_batch(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """librdkafka's batch consume waits for the whole count; the loop must not, or a burst's
    last records (and a lone record on a quiet topic) wait out the consume timeout."""
    from core.runtime import sink as sink_task

    monkeypatch.setattr(sink_task, "CONSUME_TIMEOUT_S", 30.0)  # far beyond the waits below
    broker.create_topic(topic_name, partitions=1)
    producer = Producer({"bootstrap.servers": bootstrap_servers})
    for i in range(sink_task.MAX_RECORDS_PER_PUT + 500):  # a full batch and a partial one
        producer.produce(topic_name, f"v-{i}".encode())
    producer.flush(10)
    out = tmp_path / "out.txt"
    name = f"prompt-{topic_name}"
    # The loop is patched in this process: its data path must run here, not in its host.
    worker = _worker(catalogue, bootstrap_servers, data_path="worker")
    worker.start_connector(
        name,
        {"name": name, "connector.class": "FileStreamSink", "topics": topic_name, "file": str(out)},
    )
    assert worker.start_task(name, 0, worker.task_configs(name)[0]).wait_started(60)
    loop = worker.connectors[name].tasks[0].loop
    try:
        total = sink_task.MAX_RECORDS_PER_PUT + 500
        wait_for(lambda: loop.records_moved == total, 15, "the partial batch put and settled")
        producer.produce(topic_name, b"lone")
        producer.flush(10)
        wait_for(lambda: loop.records_moved == total + 1, 10, "the lone record put")
    finally:
        monkeypatch.setattr(sink_task, "CONSUME_TIMEOUT_S", 0.2)
        producer.produce(topic_name, b"wake")  # ends a poll still waiting on the long timeout
        producer.flush(10)
        worker.stop()
    rows = out.read_text().splitlines()
    assert rows[: total + 1] == [f"v-{i}" for i in range(total)] + ["lone"]
