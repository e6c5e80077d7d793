"""Pause means pause: a sink paused through REST keeps its group membership however long, and
a sink task started PAUSED fetches nothing until it is resumed.

A paused sink used to stop iterating altogether, so its consumer stopped polling; paused for
longer than ``max.poll.interval.ms`` it left its group, and resuming meant a rebalance (its
partitions closed and opened again). Now the framework pauses the consumer's partitions and
the loop keeps polling.

A partition assigned while the task is paused (a task restarted, or a rebalance, during a
pause) was paused inside the rebalance callback, before librdkafka took
the assignment, and fetched all the same: the paused loop took each fetch back and sought
again, without end.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from tests.support.apache_kafka import KafkaCluster
from tests.support.faulty import install_faulty
from tests.support.kafka import produce
from tests.support.processes import host_pids, wait_until
from tests.support.rest import RestWorker

pytestmark = pytest.mark.integration

# librdkafka wants max.poll.interval.ms >= session.timeout.ms; both as low as allowed, so
# that a pause of a few times that is long enough to prove the point.
SESSION_TIMEOUT_MS = 6_000
MAX_POLL_INTERVAL_MS = 7_000
PAUSE_S = 3 * MAX_POLL_INTERVAL_MS / 1000
# Records waiting in the topic of the sink created paused, and how long its host is watched.
WAITING_RECORDS = 20_000
IDLE_WATCH_S = 5.0


@pytest.fixture(scope="module")
def worker(
    tmp_path_factory: pytest.TempPathFactory, bootstrap_servers: str, bundled_plugin_path: Path
) -> Iterator[RestWorker]:
    tmp = tmp_path_factory.mktemp("pause")
    faulty = install_faulty(tmp / "plugins")
    extra = {"plugin.path": f"{bundled_plugin_path},{faulty}"}
    with RestWorker(tmp, bootstrap_servers, bundled_plugin_path, extra) as w:
        yield w


def test_a_sink_paused_past_max_poll_interval_resumes_without_a_rebalance(
    worker: RestWorker, broker: KafkaCluster, topic_name: str, tmp_path: Path
) -> None:
    broker.create_topic(topic_name, 2)
    log = tmp_path / "partitions.log"
    http = worker.client()
    name = f"paused-{topic_name}"
    config = {
        "connector.class": "FaultySink",
        "topics": topic_name,
        "partitions.log": str(log),
        "consumer.override.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "consumer.override.max.poll.interval.ms": str(MAX_POLL_INTERVAL_MS),
    }
    assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
    wait_until(lambda: log.exists() and log.read_text().count("open") == 2, 60, "assignment")
    assigned = sorted(log.read_text().splitlines())
    assert http.put(f"/connectors/{name}/pause").status_code == 202
    wait_until(
        lambda: http.get(f"/connectors/{name}/status").json()["tasks"][0]["state"] == "PAUSED",
        30,
        "the task to be PAUSED",
    )
    produce(broker.bootstrap_servers, topic_name, [b"while paused"] * 10)
    time.sleep(PAUSE_S)
    assert http.put(f"/connectors/{name}/resume").status_code == 202
    wait_until(
        lambda: http.get(f"/connectors/{name}/status").json()["tasks"][0]["state"] == "RUNNING",
        30,
        "the task to run again",
    )
    time.sleep(SESSION_TIMEOUT_MS / 1000)  # long enough for a rebalance to have shown
    # Never revoked, never assigned again: the same two partitions, opened once.
    assert sorted(log.read_text().splitlines()) == assigned
    assert not any("close" in line for line in log.read_text().splitlines())
    http.delete(f"/connectors/{name}")


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


_COORDINATOR_NOT_READY = {
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.NOT_COORDINATOR,
    KafkaError.GROUP_ID_NOT_FOUND,
}


def _assigned_partitions(bootstrap: str, group: str) -> int:
    """Partitions assigned to the group's members; 0 while the coordinator cannot say yet
    (COORDINATOR_LOAD_IN_PROGRESS and the like: the caller waits)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        description = admin.describe_consumer_groups([group])[group].result(10)
    except KafkaException as exc:
        if exc.args and getattr(exc.args[0], "code", lambda: None)() in _COORDINATOR_NOT_READY:
            return 0
        raise
    return sum(len(member.assignment.topic_partitions) for member in description.members)


def _task_states(http: Any, name: str) -> list[str]:
    return [t["state"] for t in http.get(f"/connectors/{name}/status").json()["tasks"]]


def test_a_sink_task_started_paused_fetches_nothing_until_it_is_resumed(
    worker: RestWorker, broker: KafkaCluster, topic_name: str, tmp_path: Path
) -> None:
    broker.create_topic(topic_name, 1)
    out = tmp_path / "out.txt"
    http = worker.client()
    name = f"started-paused-{topic_name}"
    config = {"connector.class": "FileStreamSink", "topics": topic_name, "file": str(out)}
    # Created running, then paused (a connector created PAUSED has no task until resumed, as
    # in Kafka); its task restarted while paused starts PAUSED and is assigned its partition
    # then, with the records waiting.
    assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
    wait_until(lambda: _task_states(http, name) == ["RUNNING"], 30, "the task to run")
    assert http.put(f"/connectors/{name}/pause").status_code == 202
    wait_until(lambda: _task_states(http, name) == ["PAUSED"], 30, "the task to be PAUSED")
    lines = [b"%05d " % i + b"x" * 1000 for i in range(WAITING_RECORDS)]
    produce(broker.bootstrap_servers, topic_name, lines)
    assert http.post(f"/connectors/{name}/tasks/0/restart").status_code == 204
    wait_until(lambda: _task_states(http, name) == ["PAUSED"], 30, "the task to start PAUSED")
    wait_until(
        lambda: _assigned_partitions(broker.bootstrap_servers, f"connect-{name}") == 1,
        60,
        "the paused task's consumer to be assigned its partition",
    )
    (host,) = host_pids(f"{name}-0")  # the data path runs in the task's host (the default)
    before = _cpu_s(host)
    time.sleep(IDLE_WATCH_S)
    used = _cpu_s(host) - before
    # Fetching and taking back 20 MB over and over kept it at ~0.6 of a core.
    assert used < 0.1 * IDLE_WATCH_S, (
        f"the paused task's host used {used:.2f} CPU s in {IDLE_WATCH_S} s: it is fetching"
    )
    assert not out.exists() or out.stat().st_size == 0, "a paused task wrote records"
    assert http.put(f"/connectors/{name}/resume").status_code == 202
    wait_until(
        lambda: out.exists() and out.read_bytes().count(b"\n") == WAITING_RECORDS,
        60,
        "every waiting record to be written once resumed",
    )
    assert out.read_bytes().splitlines() == lines
    http.delete(f"/connectors/{name}")


def test_partitions_a_sink_task_pauses_in_open_are_not_fetched_nor_put(
    worker: RestWorker, broker: KafkaCluster, topic_name: str, tmp_path: Path
) -> None:
    """The same lost pause, asked by the task itself: ``context.pause()`` in ``open()`` came
    before librdkafka's assignment, so the partition was fetched and its records put()."""
    broker.create_topic(topic_name, 1)
    produce(broker.bootstrap_servers, topic_name, [b"%05d" % i for i in range(1_000)])
    partitions_log, put_log = tmp_path / "partitions.log", tmp_path / "put.log"
    http = worker.client()
    name = f"pauses-in-open-{topic_name}"
    config = {
        "connector.class": "FaultySink",
        "topics": topic_name,
        "pause.on.open": "true",
        "partitions.log": str(partitions_log),
        "put.log": str(put_log),
    }
    assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
    wait_until(lambda: partitions_log.exists(), 60, "the task to open its partition")
    time.sleep(IDLE_WATCH_S)
    put = put_log.read_text().split() if put_log.exists() else []
    assert put == [], f"put() got records of a partition the task paused: {put}"
    http.delete(f"/connectors/{name}")
