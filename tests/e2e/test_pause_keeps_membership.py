"""Pause means pause: a sink paused through REST keeps its group membership however long.

A paused sink used to stop iterating altogether, so its consumer stopped polling; paused for
longer than ``max.poll.interval.ms`` it left its group, and resuming meant a rebalance (its
partitions closed and opened again). Now the framework pauses the consumer's partitions and
the loop keeps polling.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.faulty import install_faulty
from tests.support.kafka import produce
from tests.support.processes import wait_until
from tests.support.rest import RestWorker

pytestmark = pytest.mark.integration

# librdkafka wants max.poll.interval.ms >= session.timeout.ms; both as low as allowed, so
# that a pause of a few times that is long enough to prove the point.
SESSION_TIMEOUT_MS = 6_000
MAX_POLL_INTERVAL_MS = 7_000
PAUSE_S = 3 * MAX_POLL_INTERVAL_MS / 1000


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
