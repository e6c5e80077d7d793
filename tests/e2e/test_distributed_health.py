"""``GET /health`` of a distributed worker that cannot be in its group (KIP-1017).

A worker's requests need its group (a leader to write configs, an assignment to run work).
Kafka runs the health check on its herder thread, which blocks while the worker joins: a
worker that never joined is still starting (503), and one that was in its group and cannot
get back in is unhealthy (500). Copycat's worker answered 200 all the while: with Kafka
Connect workers (or anything of another protocol) in the group, the broker refuses its join
(INCONSISTENT_GROUP_PROTOCOL) every 2 s, every write answers 409, and orchestrator probes
passed.

The group is held by a plain Kafka consumer here: another protocol, as Kafka Connect's
workers are to the broker, and it joins in a second.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer

from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import SESSION_TIMEOUT_MS, DistributedCluster
from tests.support.processes import CliWorker, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.apache_kafka_only(reason="distributed mode reads Kafka's high watermarks"),
]

# The worker's bound for being out of its group before it is unhealthy: rebalance.timeout.ms,
# short here so the test need not wait Kafka's default minute.
REBALANCE_TIMEOUT_MS = 10_000


@pytest.fixture
def cluster(
    broker: KafkaCluster, bundled_plugin_path: Path, tmp_path: Path
) -> Iterator[DistributedCluster]:
    cluster = DistributedCluster(
        tmp_path,
        broker.bootstrap_servers,
        bundled_plugin_path,
        1,
        extra={"rebalance.timeout.ms": str(REBALANCE_TIMEOUT_MS)},
    )
    try:
        yield cluster
    finally:
        cluster.stop()


def _hold_group(broker: KafkaCluster, group: str) -> Consumer:
    """A consumer in ``group`` (protocol type "consumer"), once it has its assignment."""
    topic = f"{group}-held"
    broker.create_topic(topic, 1)
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": group,
            "session.timeout.ms": SESSION_TIMEOUT_MS,
        }
    )
    consumer.subscribe([topic])

    def assigned() -> bool:
        consumer.poll(0.2)
        return bool(consumer.assignment())

    wait_until(assigned, 60, "the consumer to hold the group")
    return consumer


def _health(worker: CliWorker) -> tuple[int, dict[str, Any]]:
    response = httpx.get(worker.url + "/health", timeout=30)
    return response.status_code, response.json()


def _refused(health: tuple[int, dict[str, Any]]) -> tuple[int, dict[str, Any]] | None:
    return health if "INCONSISTENT_GROUP_PROTOCOL" in health[1].get("message", "") else None


def _unless_healthy(health: tuple[int, dict[str, Any]]) -> tuple[int, dict[str, Any]] | None:
    return health if health[0] != 200 else None


def _polling(consumer: Consumer, until: Any, timeout_s: float, what: str) -> Any:
    """``until()`` once true, polling the consumer meanwhile (it must stay in its group)."""

    def check() -> Any:
        consumer.poll(0.2)
        return until()

    return wait_until(check, timeout_s, what)


def test_a_worker_that_never_joined_its_group_is_starting_until_it_joins(
    cluster: DistributedCluster, broker: KafkaCluster
) -> None:
    consumer = _hold_group(broker, cluster.group)
    worker = cluster.workers[0].spawn()
    try:
        worker.wait_listening()
        code, body = _polling(
            consumer,
            lambda: _refused(_health(worker)),
            60,
            "the refused join in /health",
        )
        assert code == 503, body
        assert body["status"] == "starting"
        assert body["message"].startswith("Worker is still starting up.")
        assert f"group {cluster.group}" in body["message"]
        refused = httpx.post(
            worker.url + "/connectors",
            json={"name": "x", "config": {"connector.class": "FileStreamSource", "topic": "t"}},
            timeout=30,
        )
        assert refused.status_code == 409  # no leader: what the probe now tells
    finally:
        consumer.close()
    wait_until(lambda: _health(worker)[0] == 200, 60, "the worker to join once the group is free")
    assert _health(worker)[1]["status"] == "healthy"


def test_a_worker_out_of_its_group_longer_than_the_rebalance_timeout_is_unhealthy(
    cluster: DistributedCluster, broker: KafkaCluster
) -> None:
    cluster.start()
    worker = cluster.workers[0]
    assert _health(worker)[0] == 200
    # Frozen past its session timeout, the worker is evicted; the group, empty, is taken by a
    # member of another protocol before the worker comes back and tries to rejoin.
    assert worker.proc is not None
    worker.proc.send_signal(signal.SIGSTOP)
    try:
        time.sleep(SESSION_TIMEOUT_MS / 1000 + 1)
        consumer = _hold_group(broker, cluster.group)
    finally:
        worker.proc.send_signal(signal.SIGCONT)
    back = time.monotonic()
    try:
        code, body = _polling(
            consumer,
            lambda: _unless_healthy(_health(worker)),
            60,
            "/health to stop saying healthy",
        )
        out_s = time.monotonic() - back
        assert code == 500, body
        assert body["status"] == "unhealthy"
        assert f"group {cluster.group}" in body["message"]
        assert "INCONSISTENT_GROUP_PROTOCOL" in body["message"]
        # Not at once: a worker briefly out of its group (a rebalance) is healthy.
        assert out_s >= REBALANCE_TIMEOUT_MS / 1000 - 1, out_s
    finally:
        consumer.close()
    wait_until(lambda: _health(worker)[0] == 200, 60, "the worker to rejoin once the group is free")
