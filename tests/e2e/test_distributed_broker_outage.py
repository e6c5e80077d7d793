"""A distributed cluster whose broker goes away and comes back (Kafka's
ConnectWorkerIntegrationTest.testBrokerCoordinator).

A worker that cannot reach its group coordinator for heartbeat.interval.ms gives up all its
work (Kafka Connect's WorkerCoordinator.poll()): cut off, it cannot know whether the group
has already moved its work elsewhere. Copycat's workers kept theirs: when the broker came back
after a few minutes, the new leader started a sink task that the other worker still ran
(revoked only 15 s later), and after a 30 s outage a source task ran on both workers; the
topic got 37 duplicated lines. And /health answered 200 throughout.

Cut off, no task is FAILED (a source task's offset commit that times out is not its failure,
as in Kafka's WorkerSourceTask: it failed the task for good), and REST calls that need the
broker say so.

The module's own broker (the run's shared one must not go away under other tests), which the
tests stop and restart on the same port and data directory. Timeouts Kafka has keys for are
set small, so an outage of seconds shows what one of minutes did.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Consumer, TopicPartition

from core.distributed.config_store import KafkaConfigStore
from core.distributed.keys import ClusterKeys
from core.rest.app import HEALTH_CHECK_TIMEOUT_S
from core.stores.config import TargetState
from plugin_api import ConnectException
from tests.support.apache_kafka import ApacheKafka, KafkaCluster, needs_own_apache_kafka
from tests.support.distributed import DistributedCluster
from tests.support.kafka import read_all
from tests.support.processes import host_pids, wait_until

pytestmark = [
    pytest.mark.integration,
    needs_own_apache_kafka("stops and restarts an Apache Kafka of its own"),
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
    own_kafka: ApacheKafka, tmp_path: Path, bundled_plugin_path: Path
) -> Iterator[tuple[ApacheKafka, DistributedCluster]]:
    cluster = DistributedCluster(tmp_path, own_kafka.bootstrap_servers, bundled_plugin_path, 2)
    try:
        yield own_kafka, cluster.start()
    finally:
        cluster.stop()


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
    try:
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
    finally:  # the module's next test needs it
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


# offset.flush.timeout.ms: a commit during the outage gives up after this.
FLUSH_TIMEOUT_MS = 1_000
# offset.flush.interval.ms: the source's first commit comes this long after its start, late
# enough for its records to be acknowledged and the broker stopped before it.
FLUSH_INTERVAL_MS = 15_000


@pytest.fixture
def cluster(
    own_kafka: ApacheKafka, bundled_plugin_path: Path, tmp_path: Path
) -> Iterator[DistributedCluster]:
    cluster = DistributedCluster(
        tmp_path,
        own_kafka.bootstrap_servers,
        bundled_plugin_path,
        1,
        extra={
            "offset.flush.timeout.ms": str(FLUSH_TIMEOUT_MS),
            "offset.flush.interval.ms": str(FLUSH_INTERVAL_MS),
            # Cut off from its coordinator, the worker gives up its work; once it rejoins, the
            # leader (itself) holds that lost work this long before assigning it again.
            "scheduled.rebalance.max.delay.ms": "3000",
        },
    )
    try:
        cluster.start()
        # Its first rebalance done: a write racing the leader's first claim of the config
        # topic can be fenced by it (a 500 to the first POST /connectors).
        wait_until(lambda: cluster.leads(0), 60, "the worker leading")
        yield cluster
    finally:
        cluster.stop()


def _end_offset(kafka: ApacheKafka, topic: str) -> int:
    """``topic``'s partition 0's high watermark: how many records were acknowledged."""
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "watermarks"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=5)[1])
    finally:
        consumer.close()


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_a_source_whose_offsets_could_not_be_committed_in_an_outage_catches_up(
    own_kafka: ApacheKafka, cluster: DistributedCluster, tmp_path: Path
) -> None:
    """The broker goes down after the source's records were acknowledged and before their
    offsets were committed. Its offset commit fails (offset.flush.timeout.ms), which is not the
    task's failure, as in Kafka's WorkerSourceTask: it failed the task for good, and the
    pipeline stayed stopped after the outage. Now the worker, cut off from its coordinator,
    stops the task without failing it, and once the broker is back the task runs again and
    its offsets catch up (the lines before the outage may be sent again: at least once)."""
    topic = f"outage-{uuid.uuid4().hex[:8]}"
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.write_text("".join(f"before {i}\n" for i in range(10)))
    KafkaCluster(own_kafka.bootstrap_servers).create_topic(topic, 1)
    cluster.create(
        "sink", {"connector.class": "FileStreamSink", "file": str(sink_file), "topics": topic}
    )
    began = time.monotonic()
    cluster.create(
        "src", {"connector.class": "FileStreamSource", "file": str(source_file), "topic": topic}
    )
    wait_until(lambda: _end_offset(own_kafka, topic) == 10, 30, "the first lines in the topic")
    assert time.monotonic() - began < FLUSH_INTERVAL_MS / 1000 - 2, "too slow to stop in time"
    assert cluster.request("GET", "/connectors/src/offsets").json() == {"offsets": []}
    worker = cluster.workers[0]
    own_kafka.stop()
    try:
        wait_until(
            lambda: (
                "revoking the previous assignment" in worker.text()
                or cluster.status("src").get("tasks", [{}])[0].get("state") == "FAILED"
            ),
            30,
            "the worker to give up its work in the outage",
        )
        assert cluster.status("src")["tasks"][0]["state"] != "FAILED", cluster.status("src")
    finally:
        own_kafka.restart(watch_pid=os.getpid())
    with source_file.open("a") as out:
        out.write("".join(f"after {i}\n" for i in range(10)))
    expected = {f"before {i}" for i in range(10)} | {f"after {i}" for i in range(10)}
    # The sink may see some again (its group's commit may have failed in the outage): at
    # least once.
    wait_until(lambda: expected <= set(_lines(sink_file)), 90, "every line after the outage")
    assert [t["state"] for t in cluster.status("src")["tasks"]] == ["RUNNING"]

    def committed() -> bool:
        offsets = cluster.request("GET", "/connectors/src/offsets").json()["offsets"]
        return bool(offsets) and offsets[0]["offset"]["position"] == source_file.stat().st_size

    wait_until(committed, FLUSH_INTERVAL_MS / 1000 + 30, "the offsets committed after the outage")


def test_rest_calls_in_an_outage_say_the_cluster_is_unreachable_and_what_became_of_the_write(
    own_kafka: ApacheKafka, cluster: DistributedCluster, tmp_path: Path
) -> None:
    """They answered librdkafka's "Local: Unknown partition" and a bare "not acknowledged";
    now 500 "Request timed out" (Kafka's words), naming the config topic, and whether the
    write was made, may still land, or was not made."""
    source_file = tmp_path / "in.txt"
    source_file.write_text("")
    config = {"connector.class": "FileStreamSource", "file": str(source_file), "topic": "t"}
    cluster.create("src", config)
    cluster.wait_running("src", 1)
    configs_topic = f"{cluster.group}-configs"
    own_kafka.stop()
    try:
        created = cluster.request("POST", "/connectors", json={"name": "new", "config": config})
        assert created.status_code == 500, created.text
        message = created.json()["message"]
        assert message.startswith("Request timed out: cannot create a connector"), message
        assert "the Kafka cluster could not be reached" in message, message
        assert configs_topic in message and "nothing was written" in message, message
        paused = cluster.request("PUT", "/connectors/src/pause")
        assert paused.status_code == 500, paused.text
        message = paused.json()["message"]
        assert message.startswith("Request timed out: the write of target-state-src"), message
        assert configs_topic in message and "still being retried" in message, message
    finally:
        own_kafka.restart(watch_pid=os.getpid())
    # What it said: the pause took effect once the broker was back; the create did not.
    cluster.wait_running("src", 1, timeout_s=90, state="PAUSED")
    assert cluster.request("GET", "/connectors").json() == ["src"]


def test_a_config_write_answered_still_being_retried_lands_after_a_long_outage(
    own_kafka: ApacheKafka,
) -> None:
    """Kafka Connect's config and offsets producers never give a record up
    (delivery.timeout.ms Integer.MAX_VALUE, whatever the worker config says), so a pause
    answered "still being retried" during an outage takes effect whenever the brokers are back.
    Copycat's kept librdkafka's 5-minute message timeout, or the worker's delivery.timeout.ms:
    a longer outage silently dropped the write. The worker here sets 2 s, so an outage of
    the 30 s the write waits shows what one of many minutes did."""
    topic = f"configs-{uuid.uuid4().hex[:8]}"
    KafkaCluster(own_kafka.bootstrap_servers).create_topic(topic, 1, {"cleanup.policy": "compact"})
    props = {"bootstrap.servers": own_kafka.bootstrap_servers, "delivery.timeout.ms": "2000"}
    store = KafkaConfigStore(topic, props, ClusterKeys(None), "connect-cluster-long-outage")
    store.start(60)
    try:
        own_kafka.stop()
        try:
            with pytest.raises(ConnectException, match="still being retried"):
                store.put_target_state("c", TargetState.PAUSED)
        finally:
            own_kafka.restart(watch_pid=os.getpid())
        # What the topic holds once the brokers are back (a snapshot shows a target state
        # only for a connector it has a config of).
        landed = read_all(own_kafka.bootstrap_servers, topic, 1, timeout_s=90)
        assert [(m.key(), json.loads(m.value())["state"]) for m in landed] == [
            (b"target-state-c", "PAUSED")
        ]
    finally:
        store.stop()
