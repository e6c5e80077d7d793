"""A distributed cluster whose broker goes away and comes back (Kafka's
ConnectWorkerIntegrationTest.testBrokerCoordinator).

A worker that cannot reach its group coordinator for heartbeat.interval.ms gives up all its
work (Kafka Connect's WorkerCoordinator.poll()): cut off, it cannot know whether the group
has already moved its work elsewhere. Copycat's workers kept theirs: when the broker came back
after a few minutes, the new leader started a sink task that the other worker still ran
(revoked only 15 s later), and after a 30 s outage a source task ran on both workers; the
topic got 37 duplicated lines. And /health answered 200 throughout.

Its own broker, which the test stops and restarts on the same port and data directory.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from core.rest.app import HEALTH_CHECK_TIMEOUT_S
from tests.support.apache_kafka import ApacheKafka, KafkaCluster
from tests.support.distributed import DistributedCluster
from tests.support.processes import host_pids, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        os.environ.get("COPYCAT_TEST_BROKER") == "dev-broker"
        or "COPYCAT_TEST_BOOTSTRAP" in os.environ,
        reason="stops and restarts an Apache Kafka of its own",
    ),
]

# The coordinator noticed gone (a refused connection, else a session timeout of 6 s), a
# heartbeat interval looking for it, the tasks stopped within their graceful timeout (5 s).
REVOKED_WITHIN_S = 30.0
# A worker that gave up its work for want of a coordinator is unhealthy after the health
# check's timeout (Kafka's check times out behind its blocked herder thread), not after
# rebalance.timeout.ms (60 s here); the slack is for a busy machine.
UNHEALTHY_WITHIN_S = HEALTH_CHECK_TIMEOUT_S + 10
# The broker back, the group rejoined, the lost work held back for the scheduled delay (5 s),
# the tasks started and the sink's consumer in its group again; on a busy machine.
BACK_WITHIN_S = 120.0


@pytest.fixture
def outage(
    tmp_path: Path, bundled_plugin_path: Path
) -> Iterator[tuple[ApacheKafka, DistributedCluster]]:
    kafka = ApacheKafka(tmp_path / "kafka").start(watch_pid=os.getpid())
    cluster = DistributedCluster(tmp_path, kafka.bootstrap_servers, bundled_plugin_path, 2)
    try:
        yield kafka, cluster.start()
    finally:
        cluster.stop()
        kafka.stop()


def _health(cluster: DistributedCluster) -> list[tuple[int, str]]:
    answers = []
    for url in cluster.urls:
        response = httpx.get(url + "/health", timeout=30)
        answers.append((response.status_code, response.json()["message"]))
    return answers


def _health_if(cluster: DistributedCluster, code: int) -> list[tuple[int, str]] | None:
    """Every worker's /health answer, once all of them answer ``code``."""
    answers = _health(cluster)
    return answers if all(c == code for c, _ in answers) else None


def _placement(connectors: list[str]) -> dict[str, int]:
    """How many plugin hosts, on any worker, run each connector's instance and its task 0."""
    return {
        what: len(host_pids(prefix))
        for name in connectors
        for what, prefix in ((name, f"{name}:"), (f"{name}-0", f"{name}-0"))
    }


def test_workers_cut_off_from_the_coordinator_stop_their_work_and_resume_it_once(
    outage: tuple[ApacheKafka, DistributedCluster], tmp_path: Path
) -> None:
    kafka, cluster = outage
    name = f"outage-{uuid.uuid4().hex[:8]}"
    source, sink = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("".join(f"line {i}\n" for i in range(100)))
    KafkaCluster(kafka.bootstrap_servers).create_topic(name, 1)
    connectors = [f"{name}-src", f"{name}-sink"]
    cluster.create(
        connectors[0], {"connector.class": "FileStreamSource", "file": str(source), "topic": name}
    )
    cluster.create(
        connectors[1], {"connector.class": "FileStreamSink", "file": str(sink), "topics": name}
    )
    for connector in connectors:
        cluster.wait_running(connector, 1)
    everywhere_once = dict.fromkeys(_placement(connectors), 1)
    assert _placement(connectors) == everywhere_once
    wait_until(lambda: len(set(sink.read_text().splitlines())) == 100, 60, "100 lines copied")

    kafka.stop()
    wait_until(
        lambda: set(_placement(connectors).values()) == {0},
        REVOKED_WITHIN_S,
        "every connector and task stopped on every worker",
    )
    unhealthy = wait_until(
        lambda: _health_if(cluster, 500),
        UNHEALTHY_WITHIN_S,
        "/health to answer 500 on every worker",
    )
    for _, message in unhealthy:
        assert message.startswith("Worker was unable to handle this request"), message
        assert f"group {cluster.group}: the group coordinator is unreachable" in message

    kafka.restart(watch_pid=os.getpid())
    wait_until(
        lambda: _health_if(cluster, 200),
        BACK_WITHIN_S,
        "/health to answer 200 on every worker",
    )
    for connector in connectors:
        cluster.wait_running(connector, 1, BACK_WITHIN_S)
    wait_until(
        lambda: _placement(connectors) == everywhere_once,
        BACK_WITHIN_S,
        "each connector and task running on exactly one worker",
    )
    with source.open("a") as fh:
        fh.write("".join(f"line {i}\n" for i in range(100, 200)))
    wait_until(lambda: len(set(sink.read_text().splitlines())) == 200, 60, "200 lines copied after")
    assert _placement(connectors) == everywhere_once
