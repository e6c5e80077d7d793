"""Exactly-once sinks on Apache Kafka: offsets kept in the target, honoured through rebalances
and a crash of a task's plugin host.

The sink is a plugin of this test (a wheel in a real plugin host): SQLite as the target, each
``put()`` one transaction holding the rows and each partition's next offset (the deep-dive
seed's Strategy B). ``pre_commit()`` returns nothing, so the group never has an offset, and
``open()`` rewinds every partition to the target's offset (0 for one it has not seen). Every
row carries its topic, partition and offset: a record put twice is a duplicate row.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
from pathlib import Path

import pytest
from confluent_kafka import Producer

from core.plugins import PluginCatalogue
from core.status import State
from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import committed, wait_for
from tests.support.plugins import catalogue_with
from tests.support.processes import host_pids
from tests.support.workers import in_process_worker

pytestmark = pytest.mark.integration

PARTITIONS = 4
# Records produced a second while the test runs: the sink is always mid-stream when the
# group rebalances or a host dies, and the run stays short.
PRODUCE_PER_S = 1_000
# put() sleeps this long, so a batch is in the host when a disturbance comes.
PUT_DELAY_MS = 20
# Rows the target must gain between disturbances: each one then falls mid-stream.
PROGRESS_ROWS = 500

SINK = """
import sqlite3, time
from plugin_api import ConfigDef, SinkConnector, SinkTask

class SqliteSinkTask(SinkTask):
    def version(self):
        return "1.0"

    def start(self, props):
        self.db = sqlite3.connect(props["db"], timeout=60, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS rows (topic, part, off, value)")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS offsets (topic, part, next, PRIMARY KEY (topic, part))"
        )
        self.delay = int(props.get("put.delay.ms", "0")) / 1000

    def open(self, partitions):
        known = {(t, p): n for t, p, n in self.db.execute("SELECT topic, part, next FROM offsets")}
        self.context.offset({tp: known.get((tp.topic, tp.partition), 0) for tp in partitions})

    def put(self, records):
        if not records:
            return
        self.db.execute("BEGIN IMMEDIATE")
        for r in records:
            self.db.execute(
                "INSERT INTO rows VALUES (?, ?, ?, ?)",
                (r.topic, r.kafka_partition, r.kafka_offset, r.value),
            )
            self.db.execute(
                "INSERT OR REPLACE INTO offsets VALUES (?, ?, ?)",
                (r.topic, r.kafka_partition, r.kafka_offset + 1),
            )
        self.db.execute("COMMIT")
        time.sleep(self.delay)

    def pre_commit(self, offsets):
        return {}

    def stop(self):
        self.db.close()

class SqliteSink(SinkConnector):
    def version(self):
        return "1.0"

    def start(self, props):
        self.props = dict(props)

    def task_class(self):
        return SqliteSinkTask

    def task_configs(self, n):
        return [dict(self.props) for _ in range(n)]

    def stop(self):
        pass

    def config(self):
        return ConfigDef()
"""


@pytest.fixture(scope="module")
def catalogue(
    bundled_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> PluginCatalogue:
    return catalogue_with(
        bundled_plugin_path,
        tmp_path_factory.mktemp("eos-sink-plugins"),
        "sqlite-sink",
        {"sqlite_sink.py": SINK},
        {"SqliteSink": "sqlite_sink:SqliteSink"},
    )


class _SteadyProducer(threading.Thread):
    """Produces ``v<n>`` round-robin over the partitions at PRODUCE_PER_S until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.topic = topic
        self.produced = 0
        self.halt = threading.Event()

    def run(self) -> None:
        tick = 0.05
        while not self.halt.wait(tick):
            for _ in range(int(PRODUCE_PER_S * tick)):
                i = self.produced
                self.producer.produce(self.topic, f"v{i}".encode(), partition=i % PARTITIONS)
                self.produced += 1
            self.producer.poll(0)

    def stop(self) -> int:
        self.halt.set()
        self.join()
        assert self.producer.flush(30) == 0
        return self.produced


def _rows(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db, timeout=60) as conn:
        try:
            return int(conn.execute("SELECT COUNT(*) FROM rows").fetchone()[0])
        except sqlite3.OperationalError:  # the task has not created the table yet
            return 0


def test_offsets_kept_in_the_target_survive_rebalances_and_a_host_crash(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    broker: KafkaCluster,
    topic_name: str,
    tmp_path: Path,
) -> None:
    broker.create_topic(topic_name, partitions=PARTITIONS)
    db = tmp_path / "target.db"
    name = f"eos-{topic_name}"
    props = {
        "name": name,
        "connector.class": "SqliteSink",
        "topics": topic_name,
        "tasks.max": "2",
        "db": str(db),
        "put.delay.ms": str(PUT_DELAY_MS),
    }
    # Offsets flushed every 200 ms: pre_commit runs often, and must commit nothing.
    worker = in_process_worker(catalogue, bootstrap_servers)
    source = _SteadyProducer(bootstrap_servers, topic_name)

    def progress(what: str) -> None:
        floor = _rows(db) + PROGRESS_ROWS
        try:
            wait_for(lambda: _rows(db) >= floor, 60, what)
        except AssertionError as exc:
            states = {t: worker.status.task(name, t) for t in (0, 1)}
            raise AssertionError(f"{exc}; rows {_rows(db)}, tasks {states}") from None

    source.start()
    worker.start_connector(name, props)
    configs = worker.task_configs(name)
    try:
        # Task 0 alone owns all four partitions.
        assert worker.start_task(name, 0, configs[0]).wait_started(60)
        progress("task 0 writing")
        # Task 1 joins: the group takes every partition away from task 0 and splits them.
        assert worker.start_task(name, 1, configs[1]).wait_started(60)
        progress("both tasks writing")
        # Task 0's plugin host dies mid-put (kill -9): nothing of it is closed or committed.
        [pid] = host_pids(f"{name}-0")
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: worker.status.task(name, 0).state is State.FAILED, 60, "task 0 FAILED")
        progress("task 1 alone after the crash")
        # Task 0 comes back: one more rebalance.
        wait_for(lambda: not worker.connectors[name].tasks[0].is_alive(), 60, "task 0's thread")
        assert worker.start_task(name, 0, configs[0]).wait_started(60)
        progress("both tasks again")
        produced = source.stop()
        wait_for(lambda: _rows(db) >= produced, 120, f"all {produced} records in the target")
    finally:
        source.stop()
        worker.stop()

    with sqlite3.connect(db) as conn:
        duplicates = conn.execute(
            "SELECT part, off, COUNT(*) FROM rows GROUP BY part, off HAVING COUNT(*) > 1 LIMIT 5"
        ).fetchall()
        values = sorted(v for (v,) in conn.execute("SELECT value FROM rows"))
    assert duplicates == []
    assert values == sorted(f"v{i}" for i in range(produced))
    # The group never committed anything: the target alone knew where each partition stood.
    assert all(
        committed(bootstrap_servers, f"connect-{name}", topic_name, p) < 0
        for p in range(PARTITIONS)
    )
