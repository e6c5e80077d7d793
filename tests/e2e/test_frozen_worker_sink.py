"""A sink task whose worker is frozen gives its partitions up within about the session timeout.

With the data path in the plugin host (``task.data.path=host``) the task's consumer lives in
the host, which is not frozen with its worker (hosts run in a session of their own). The host
sat idle waiting for the worker's next request while librdkafka's background thread went on
heartbeating, so the member kept its partitions until ``max.poll.interval.ms`` (300 s by
default): the group's other members waited in PREPARING_REBALANCE, or kept only their own
partitions, and nothing of the frozen task's partitions was written anywhere. In Kafka Connect a
frozen JVM freezes its consumer too, and the coordinator drops it after ``session.timeout.ms``.
Now the host leaves the group once its worker has made no request for that long, and rejoins
(from the committed offsets: at-least-once) when the worker drives it again.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import group_offsets
from tests.support.processes import CliWorker, host_pids, wait_until
from tests.support.rest import RestWorker

pytestmark = pytest.mark.integration

SESSION_TIMEOUT_MS = 6_000
# How long after the freeze the frozen task's partitions must be consumed by the other member:
# the session timeout (the host's patience, as the coordinator's for a frozen Java consumer),
# then a rebalance of the group (its other member rejoins at its next poll), a first fetch and
# a commit that writes the file out; took 6.8-7.8 s here, with room for a loaded machine. Before,
# the frozen task kept its partitions until max.poll.interval.ms (300 s).
MOVE_BOUND_S = SESSION_TIMEOUT_MS / 1000 + 24
# How long after the freeze the records that must move are produced. The request the frozen
# worker had in flight still completes in the host: one iteration of the sink's loop, whose
# consume() waits up to CONSUME_TIMEOUT_S (0.2 s) for records, then a put() and a commit when
# due. A frozen worker's driver is idle most of the time in that wait, so records produced at
# once after SIGSTOP were often consumed, written and committed by the frozen task itself, and
# its partition then moved with nothing left for the other worker to write (2 failures in 20
# runs; the group was STABLE with the other member owning both partitions, committed offsets
# at the end). In Kafka the JVM stops at once; here the host finishes what it was asked, well
# within this, and a Kafka consumer's last poll before the freeze could equally have returned
# them.
IN_FLIGHT_S = 2.0
PARTITIONS = 2
RECORDS_PER_PHASE = 5


def _worker_props(tmp: Path, bootstrap: str, plugin_path: Path) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "offset.storage.file.filename": str(tmp / "connect.offsets"),
        "offset.flush.interval.ms": "500",  # the file sink writes its lines out on commit
        "plugin.path": str(plugin_path),
        "listeners": "http://127.0.0.1:0",
        "consumer.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "consumer.heartbeat.interval.ms": "1000",
        "task.shutdown.graceful.timeout.ms": "5000",
        "task.data.path": "host",
    }


def _produce(bootstrap: str, topic: str, phase: str) -> set[str]:
    """RECORDS_PER_PHASE records to each partition; returns their values."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    values = set()
    for partition in range(PARTITIONS):
        for i in range(RECORDS_PER_PHASE):
            value = f"{phase} p{partition} {i}"
            producer.produce(topic, value.encode(), partition=partition)
            values.add(value)
    assert producer.flush(30) == 0
    return values


def _describe_group(bootstrap: str, group: str) -> str:
    """The group's state, members' assignments and committed offsets (for a failure's report)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        desc = admin.describe_consumer_groups([group], request_timeout=5)[group].result(6)
        members = [
            (m.member_id, sorted(tp.partition for tp in m.assignment.topic_partitions))
            for m in desc.members
        ]
        committed = [(tp.partition, tp.offset) for tp in group_offsets(bootstrap, group)]
        return f"group {group}: {desc.state}, members {members}, committed {committed}"
    except Exception as exc:  # noqa: BLE001 - only a report
        return f"group {group}: not described ({exc!r})"


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture(params=["topics", "topics.regex"])
def frozen_side(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    broker: KafkaCluster,
    bundled_plugin_path: Path,
    topic_name: str,
) -> Iterator[tuple[CliWorker, Path]]:
    """A worker process running sink ``snk-<topic>`` (data path in its host), writing a.txt,
    subscribed by ``topics`` or by ``topics.regex`` (the rejoin subscribes a new consumer)."""
    broker.create_topic(topic_name, PARTITIONS)
    tmp = tmp_path / "a"
    tmp.mkdir()
    out = tmp / "a.txt"
    subscription = topic_name if request.param == "topics" else re.escape(topic_name)
    connector = {
        "name": f"snk-{topic_name}",
        "connector.class": "FileStreamSink",
        request.param: subscription,
        "file": str(out),
    }
    props = _worker_props(tmp, broker.bootstrap_servers, bundled_plugin_path)
    worker = CliWorker(tmp, props, [connector])
    try:
        worker.start()
        yield worker, out
    finally:
        if worker.proc is not None and worker.proc.poll() is None:
            os.kill(worker.proc.pid, signal.SIGCONT)
        worker.close()
        print(worker.text()[-20_000:])  # shown when the test failed


@pytest.mark.apache_kafka_only(reason="the dev broker's joins are held (docs/architecture.md)")
def test_a_frozen_workers_sink_gives_its_partitions_up_and_loses_nothing(
    frozen_side: tuple[CliWorker, Path],
    broker: KafkaCluster,
    bundled_plugin_path: Path,
    topic_name: str,
    tmp_path: Path,
) -> None:
    frozen, a_out = frozen_side
    bootstrap = broker.bootstrap_servers
    name = f"snk-{topic_name}"
    expected = _produce(bootstrap, topic_name, "first")
    wait_until(lambda: len(_lines(a_out)) >= len(expected), 60, "the first records in a.txt")
    assert host_pids(f"{name}-0"), "the task's plugin host"

    # The other member: a second worker running the same sink (group connect-<name>).
    b_tmp = tmp_path / "b"
    b_tmp.mkdir()
    b_out = b_tmp / "b.txt"
    props = _worker_props(b_tmp, bootstrap, bundled_plugin_path)
    with RestWorker(b_tmp, bootstrap, bundled_plugin_path, props) as other:
        config = {"connector.class": "FileStreamSink", "topics": topic_name, "file": str(b_out)}
        http = other.client()
        assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
        # Once the group gave the second worker a partition, records of it land in b.txt.
        rounds = iter(range(1_000))

        def second_worker_writes() -> bool:
            expected.update(_produce(bootstrap, topic_name, f"second {next(rounds)}"))
            time.sleep(0.5)
            return bool(_lines(b_out))

        wait_until(second_worker_writes, 60, "the second worker's first records")
        wait_until(lambda: set(_lines(a_out) + _lines(b_out)) >= expected, 60, "second phase")
        b_partitions = {line.split()[-2] for line in _lines(b_out)}
        assert len(b_partitions) == 1, b_partitions  # one partition each

        assert frozen.proc is not None
        os.kill(frozen.proc.pid, signal.SIGSTOP)  # the worker only: its hosts run on
        frozen_at = time.monotonic()
        try:
            time.sleep(IN_FLIGHT_S)  # the request in flight at the freeze ends meanwhile
            third = _produce(bootstrap, topic_name, "third")
            expected |= third
            try:
                wait_until(
                    lambda: set(_lines(b_out)) >= third,
                    MOVE_BOUND_S - (time.monotonic() - frozen_at),
                    "the frozen task's partition to be consumed by the other worker",
                )
            except AssertionError as exc:
                where = {"a.txt": _lines(a_out), "b.txt": _lines(b_out)}
                group = _describe_group(bootstrap, f"connect-{name}")
                raise AssertionError(f"{exc}; {group}; {where}") from None
            moved_after = time.monotonic() - frozen_at
            assert not set(_lines(a_out)) & third
        finally:
            os.kill(frozen.proc.pid, signal.SIGCONT)
        print(f"the frozen task's partition moved {moved_after:.1f} s after the freeze")
        assert moved_after >= SESSION_TIMEOUT_MS / 1000 * 0.8, moved_after  # not before

        # Thawed: the frozen task rejoins its group, and nothing produced is missing.
        wait_until(
            lambda: "its worker drives it again" in frozen.text(), 60, "the thawed task's rejoin"
        )
        later = iter(range(1_000))

        def thawed_task_writes() -> bool:
            expected.update(_produce(bootstrap, topic_name, f"fourth {next(later)}"))
            time.sleep(0.5)
            return any(line.startswith("fourth") for line in _lines(a_out))

        # Rejoined, it gets a partition back and consumes it again.
        wait_until(thawed_task_writes, 60, "the thawed task's records")
        wait_until(
            lambda: set(_lines(a_out) + _lines(b_out)) >= expected, 60, "every record, once thawed"
        )
        assert frozen.proc.poll() is None
        assert "gave up its consumer group membership" in frozen.text()
        http.delete(f"/connectors/{name}")
