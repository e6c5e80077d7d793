"""A task restarted after its connector's config changed runs the new config, even while other
tasks of the connector still run here on the old one (distributed mode restarts a changed
connector's tasks one at a time). Real broker (Apache Kafka: the group's members are read
back), real plugin hosts.

Before the fix, a worker running two tasks of a connector kept the first config it saw for as
long as any task of it ran there: both tasks came back with the old transforms and the old
plugin version, though each was restarted with the new config.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from confluent_kafka import Producer

from core.plugins import PluginCatalogue
from core.status import State
from core.worker import Worker
from registry import install
from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import wait_for
from tests.support.wheels import build_wheel
from tests.support.workers import in_process_worker

pytestmark = [
    pytest.mark.integration,
    pytest.mark.apache_kafka_only(reason="describe_consumer_groups lists no members on it"),
]

HOIST = {
    "transforms": "h",
    "transforms.h.type": "org.apache.kafka.connect.transforms.HoistField$Value",
    "transforms.h.field": "line",
}

# One sink connector, two versions installed side by side: each task writes its version.
VERSIONED_SINK = """
from plugin_api import ConfigDef, SinkConnector, SinkTask

VERSION = "{version}"


class VersionedSinkTask(SinkTask):
    def version(self):
        return VERSION

    def start(self, props):
        self.out = open(props["file"], "a")

    def put(self, records):
        for r in records:
            self.out.write(f"{{VERSION}}:{{r.value}}\\n")

    def flush(self, offsets):
        self.out.flush()

    def stop(self):
        self.out.close()


class VersionedSink(SinkConnector):
    def version(self):
        return VERSION

    def start(self, props):
        self.props = dict(props)

    def task_class(self):
        return VersionedSinkTask

    def task_configs(self, n):
        return [self.props] * n

    def stop(self):
        pass

    def config(self):
        return ConfigDef()
"""


def _files(tmp_path: Path) -> list[Path]:
    return [tmp_path / "task-0.txt", tmp_path / "task-1.txt"]


def _start_both(worker: Worker, name: str, props: Mapping[str, str], files: list[Path]) -> None:
    """Tasks 0 and 1 of ``name`` here, its instance elsewhere (as a distributed worker holding
    two of its tasks), each writing its own file."""
    for task, out in enumerate(files):
        task_props = {**props, "file": str(out)}
        runner = worker.start_task(name, task, task_props, connector_props=props)
        assert runner.wait_started(60)
        assert worker.status.task(name, task).state is State.RUNNING


def _restart_one_at_a_time(
    worker: Worker, name: str, props: Mapping[str, str], files: list[Path]
) -> None:
    """What config_reactions does when the connector's task configs changed: each task
    stopped and started with the new config in turn, the other one still running."""
    for task, out in enumerate(files):
        worker.stop_task(name, task)
        runner = worker.start_task(name, task, {**props, "file": str(out)}, connector_props=props)
        assert runner.wait_started(60)


def _wait_for_two_members(broker: KafkaCluster, group: str) -> None:
    """Until each of the two tasks' consumers holds one partition: records produced from then
    on go through both tasks."""

    def settled() -> bool:
        [described] = broker.admin.describe_consumer_groups([group]).values()
        members = described.result(30).members
        held = [len(m.assignment.topic_partitions) for m in members]
        return len(members) == 2 and held == [1, 1]

    wait_for(settled, 60, f"group {group}: two members, one partition each")


def _produce(bootstrap: str, topic: str, prefix: str, per_partition: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition in (0, 1):
        for i in range(per_partition):
            producer.produce(topic, f"{prefix}-{partition}-{i}".encode(), partition=partition)
    producer.flush(10)


def _lines(files: list[Path], prefix: str) -> list[list[str]]:
    return [
        [line for line in f.read_text().splitlines() if prefix in line] if f.exists() else []
        for f in files
    ]


def _both_write_what_follows(
    broker: KafkaCluster, name: str, topic: str, files: list[Path]
) -> None:
    """Once both tasks are members of the connector's group, 50 records produced to each
    partition reach each task's file."""
    _wait_for_two_members(broker, f"connect-{name}")
    _produce(broker.bootstrap_servers, topic, "after", 50)
    wait_for(
        lambda: [len(lines) for lines in _lines(files, "after")] == [50, 50],
        60,
        "50 records written by each task",
    )


def test_two_tasks_on_one_worker_both_run_a_transform_added_to_the_config(
    bundled_plugin_path: Path, broker: KafkaCluster, topic_name: str, tmp_path: Path
) -> None:
    broker.create_topic(topic_name, 2)
    bootstrap = broker.bootstrap_servers
    worker = in_process_worker(PluginCatalogue.scan([bundled_plugin_path]), bootstrap)
    name = f"snk-{topic_name}"
    files = _files(tmp_path)
    old = {
        "name": name,
        "connector.class": "FileStreamSink",
        "topics": topic_name,
        "tasks.max": "2",
    }
    try:
        _start_both(worker, name, old, files)
        _restart_one_at_a_time(worker, name, {**old, **HOIST}, files)
        _both_write_what_follows(broker, name, topic_name, files)
    finally:
        worker.stop()
    for lines in _lines(files, "after"):
        plain = [line for line in lines if not line.startswith("Struct{line=")]
        assert plain == [], f"written without the new transform: {plain[:3]}"
    assert name not in worker.connectors  # no entry left once its tasks stopped


def test_two_tasks_on_one_worker_both_run_a_newly_pinned_plugin_version(
    bundled_plugin_path: Path, broker: KafkaCluster, topic_name: str, tmp_path: Path
) -> None:
    plugins = tmp_path / "plugins"
    for version in ("1.0", "2.0"):
        wheel = build_wheel(
            tmp_path / f"wheel-{version}",
            "versioned-sink",
            version,
            {"versioned_sink.py": VERSIONED_SINK.format(version=version)},
            entry_points={"copycat.connectors": {"VersionedSink": "versioned_sink:VersionedSink"}},
        )
        install(str(wheel), plugins, offline=True)
    broker.create_topic(topic_name, 2)
    bootstrap = broker.bootstrap_servers
    worker = in_process_worker(PluginCatalogue.scan([bundled_plugin_path, plugins]), bootstrap)
    name = f"ver-{topic_name}"
    files = _files(tmp_path)
    old = {
        "name": name,
        "connector.class": "VersionedSink",
        "connector.plugin.version": "1.0",
        "topics": topic_name,
        "tasks.max": "2",
    }
    try:
        _start_both(worker, name, old, files)
        assert [worker.status.task(name, t).version for t in (0, 1)] == ["1.0", "1.0"]
        _restart_one_at_a_time(worker, name, {**old, "connector.plugin.version": "2.0"}, files)
        assert [worker.status.task(name, t).version for t in (0, 1)] == ["2.0", "2.0"]
        _both_write_what_follows(broker, name, topic_name, files)
    finally:
        worker.stop()
    for lines in _lines(files, "after"):
        assert {line.partition(":")[0] for line in lines} == {"2.0"}
