"""What a sink commits of the offsets its task returns from ``pre_commit()`` and asks for
with ``context.offset()``, as Kafka Connect 4.1.1's WorkerSinkTask does.

* ``commitOffsets``: an offset the task returns past what it was given (not consumed yet) is
  ignored with a warning: its partition keeps its last committed offset. Copycat cut it to
  the consumed position and committed that. One for a partition not assigned is ignored with
  a warning.
* ``rewind()``: a partition the task rewinds takes the offset as its current *and* last
  committed offset, so the next commit that has anything new commits it even when
  ``pre_commit()`` leaves that partition out. Copycat kept the older last committed offset.

A test plugin in a real plugin host, a real broker; the group's committed offsets are read
from the broker.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from confluent_kafka import Producer

from core.plugins import PluginCatalogue
from core.worker import Worker
from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import committed, wait_for
from tests.support.plugins import catalogue_with, one_task_sink
from tests.support.workers import in_process_worker

pytestmark = pytest.mark.integration

SINK = """
from pathlib import Path
from plugin_api import ConfigDef, SinkConnector, SinkTask, TopicPartition

class OffsetsSinkTask(SinkTask):
    '''mode "beyond": pre_commit() returns partition 0's offsets as given, partition 1's
    100 past them, and an offset for a partition not assigned.
    mode "rewind": the first put() with records of partition 1 rewinds it to offset 3 (and
    writes the file "marker"); pre_commit() returns partition 0's offsets only.'''

    def start(self, props):
        self.mode = props["mode"]
        self.marker = Path(props["marker"])
        self.rewound = False

    def put(self, records):
        if self.mode == "rewind" and not self.rewound:
            mine = [r for r in records if r.kafka_partition == 1]
            if mine:
                self.context.offset(TopicPartition(mine[0].topic, 1), 3)
                self.rewound = True
                self.marker.write_text("rewound")

    def pre_commit(self, offsets):
        if self.mode == "beyond":
            out = {tp: o + (100 if tp.partition == 1 else 0) for tp, o in offsets.items()}
            out[TopicPartition("not-assigned", 0)] = 1
            return out
        return {tp: o for tp, o in offsets.items() if tp.partition == 0}

    def stop(self):
        pass
""" + one_task_sink("OffsetsSink", "OffsetsSinkTask")


@pytest.fixture(scope="module")
def catalogue(
    bundled_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> PluginCatalogue:
    return catalogue_with(
        bundled_plugin_path,
        tmp_path_factory.mktemp("offsets-sink-plugins"),
        "offsets-sink",
        {"offsets_sink.py": SINK},
        {"OffsetsSink": "offsets_sink:OffsetsSink"},
    )


def _produce(bootstrap: str, topic: str, partition: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, f"p{partition}-{i}".encode(), partition=partition)
    assert producer.flush(30) == 0


def _start(worker: Worker, name: str, topic: str, mode: str, marker: Path) -> None:
    props = {
        "name": name,
        "connector.class": "OffsetsSink",
        "topics": topic,
        "mode": mode,
        "marker": str(marker),
    }
    worker.start_connector(name, props)
    assert worker.start_task(name, 0, worker.task_configs(name)[0]).wait_started(60)


def test_an_offset_past_what_was_consumed_is_ignored_not_cut_to_the_position(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    broker: KafkaCluster,
    topic_name: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Partition 1's offsets come back 100 past the position: Kafka ignores them, so the
    group keeps its position at assignment (0) there, while partition 0 commits 5. Before,
    Copycat committed 5 for partition 1 too (the offset cut to the position)."""
    broker.create_topic(topic_name, partitions=2)
    _produce(bootstrap_servers, topic_name, 0, 5)
    _produce(bootstrap_servers, topic_name, 1, 5)
    name = f"beyond-{topic_name}"
    group = f"connect-{name}"
    worker = in_process_worker(catalogue, bootstrap_servers)
    caplog.set_level(logging.WARNING, logger="copycat")
    try:
        _start(worker, name, topic_name, "beyond", tmp_path / "marker")
        wait_for(
            lambda: committed(bootstrap_servers, group, topic_name, 0) == 5,
            60,
            "partition 0 committed at 5",
        )
        assert committed(bootstrap_servers, group, topic_name, 1) == 0
    finally:
        worker.stop()
    assert committed(bootstrap_servers, group, topic_name, 1) == 0  # the closing commit too
    assert f"partition {topic_name}-1: not consumed yet (returned 105, consumed up to 5)" in (
        caplog.text
    )
    assert "partition not-assigned-0: not assigned to this task" in caplog.text


def test_a_rewind_becomes_the_last_committed_offset_of_its_partition(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    broker: KafkaCluster,
    topic_name: str,
    tmp_path: Path,
) -> None:
    """The task rewinds partition 1 to 3 in put() and never returns partition 1 from
    pre_commit(): as Kafka's rewind() made 3 its last committed offset, the next commit
    (partition 0 moved on) commits 3 for it. Before, Copycat committed partition 1's
    position at assignment (0) instead."""
    broker.create_topic(topic_name, partitions=2)
    _produce(bootstrap_servers, topic_name, 0, 5)
    _produce(bootstrap_servers, topic_name, 1, 5)
    name = f"rewind-{topic_name}"
    group = f"connect-{name}"
    marker = tmp_path / "marker"
    worker = in_process_worker(catalogue, bootstrap_servers)
    try:
        _start(worker, name, topic_name, "rewind", marker)
        wait_for(marker.exists, 60, "the task's rewind of partition 1")
        _produce(bootstrap_servers, topic_name, 0, 5)  # something new to commit after it
        wait_for(
            lambda: committed(bootstrap_servers, group, topic_name, 0) == 10,
            60,
            "partition 0 committed at 10",
        )
        assert committed(bootstrap_servers, group, topic_name, 1) == 3
    finally:
        worker.stop()
