"""How soon a new connector's tasks run on every worker, with real ``copycat distributed``
workers on Apache Kafka.

A new connector, and the task configs it generates, each need a rebalance. In Kafka Connect
every worker rejoins the group as it reads such a record from the config topic
(DistributedHerder.ConfigUpdateListener sets ``needsReconfigRebalance``), so the rebalance
completes as soon as every worker has read it. Copycat's followers used to wait for their next
heartbeat to hear that the leader had rejoined: a new connector's tasks started up to two
``heartbeat.interval.ms`` later on a follower (~3.5 s with the 3 s default, 0.5 s in Kafka
Connect; found side by side with Kafka Connect 4.1.1 by an exploratory tester).

The workers here heartbeat every 20 s, so waiting for heartbeats (two of them, uniformly up
to 20 s each) shows plainly against the few seconds a rebalance takes when every worker
rejoins.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import DistributedCluster
from tests.support.processes import wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.apache_kafka_only(reason="distributed mode reads Kafka's high watermarks"),
]

HEARTBEAT_MS = 20_000
# A worker out of the group after three missed heartbeats, as Kafka's defaults (3 s / 10 s).
SESSION_MS = 3 * HEARTBEAT_MS
# From POST /connectors to both tasks RUNNING on both workers when every worker rejoins on
# reading the config topic: two rebalances and two plugin host starts, 2.0-3.5 s on an idle
# machine (the bound leaves room for a loaded one). Followers that wait for heartbeats took
# 40-60 s here (three tries of three).
START_BOUND_S = 12.0
CONNECTORS = 3


@pytest.fixture
def cluster(
    broker: KafkaCluster, bundled_plugin_path: Path, tmp_path: Path
) -> Iterator[DistributedCluster]:
    extra = {
        "heartbeat.interval.ms": str(HEARTBEAT_MS),
        "session.timeout.ms": str(SESSION_MS),
        "consumer.heartbeat.interval.ms": "1000",
        "consumer.session.timeout.ms": "6000",
    }
    cluster = DistributedCluster(
        tmp_path, broker.bootstrap_servers, bundled_plugin_path, 2, extra=extra
    )
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _sink(name: str, topic: str, tmp_path: Path) -> dict[str, str]:
    return {
        "connector.class": "FileStreamSink",
        "tasks.max": "2",
        "topics": topic,
        "file": str(tmp_path / f"{name}.txt"),
    }


def test_a_new_connectors_tasks_start_on_every_worker_without_waiting_for_heartbeats(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    topic = f"new-tasks-{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic, 2)
    # The second worker joined after the first had formed the group: the first hears of it
    # at a heartbeat, or when it rejoins itself (it leads, and a new connector makes it).
    cluster.create(f"{topic}-warmup", _sink(f"{topic}-warmup", topic, tmp_path))
    cluster.wait_running(f"{topic}-warmup", 2, timeout_s=3 * HEARTBEAT_MS / 1000 + 60)
    workers = {cluster.worker_id(0), cluster.worker_id(1)}

    took: list[float] = []
    for i in range(CONNECTORS):
        name = f"{topic}-{i}"
        began = time.monotonic()
        cluster.create(name, _sink(name, topic, tmp_path), via=i % 2)

        def running_everywhere(name: str = name) -> bool:
            seen = [cluster.status(name, via=w) for w in (0, 1)]
            return all(
                s and [t["state"] for t in s["tasks"]] == ["RUNNING", "RUNNING"] and s == seen[0]
                for s in seen
            )

        wait_until(running_everywhere, 3 * HEARTBEAT_MS / 1000 + 60, f"{name}: tasks running")
        took.append(round(time.monotonic() - began, 2))
        placed = {t["worker_id"] for t in cluster.status(name)["tasks"]}
        assert placed == workers, f"{name}: tasks not spread over both workers: {placed}"
    assert all(t < START_BOUND_S for t in took), (
        f"seconds from POST to tasks RUNNING on both workers: {took}; a follower that waits "
        f"for its heartbeat ({HEARTBEAT_MS} ms) to rejoin takes up to two of them"
    )
