"""Shared internal topics (``../shared/seeds/kip-share-internal-topics.txt``) with real
``copycat distributed`` processes on Apache Kafka.

Three Copycat clusters, one worker process each, use one set of config, offset and status
topics: ``a`` and ``b`` with ``connect.management.topic.sharing.support=enabled`` (the KIP's
"new" clients, two clusters sharing), ``plain`` without it (an "old" client). The KIP's
compatibility table says old/new, new/old and new/new pairs can share the topics; this test
has all three pairs at once. (Old/old cannot: two clusters without sharing read each other's
records, as two Kafka Connect clusters on one set of topics always did.)

Each cluster runs a connector named ``same`` (and one of its own) and must see only its own
connectors, configs, statuses and offsets, through REST and after every worker was replaced
by a new process that rebuilt its state from the shared topics alone; a deletion in one
cluster (a tombstone) touches no other's connector.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import DistributedCluster
from tests.support.kafka import read_all
from tests.support.processes import wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.apache_kafka_only(reason="distributed mode reads Kafka's high watermarks"),
]

# Cluster name -> topic sharing enabled.
CLUSTERS = {"a": True, "b": True, "plain": False}
# Lines in each cluster's file before and after the workers are replaced: different counts per
# cluster, so that one cluster's offsets can never pass for another's.
LINES_BEFORE = {"a": 100, "b": 200, "plain": 300}
LINES_AFTER = 50
# Reading an internal topic to its end.
READ_TIMEOUT_S = 30.0
# A connector's first offset commit: offset.flush.interval.ms (500 ms here) on a busy machine.
COMMIT_TIMEOUT_S = 30.0


def _line(cluster: str, i: int) -> str:
    return f"{cluster} line {i:05d}\n"


@pytest.fixture
def clusters(
    broker: KafkaCluster, bundled_plugin_path: Path, tmp_path: Path
) -> Iterator[dict[str, DistributedCluster]]:
    shared = f"shared-{uuid.uuid4().hex[:8]}"
    topics = {
        "config.storage.topic": f"{shared}-configs",
        "offset.storage.topic": f"{shared}-offsets",
        "status.storage.topic": f"{shared}-status",
    }
    started: dict[str, DistributedCluster] = {}
    for name, sharing in CLUSTERS.items():
        extra = dict(topics)
        if sharing:
            extra["connect.management.topic.sharing.support"] = "enabled"
        started[name] = DistributedCluster(
            tmp_path / name,
            broker.bootstrap_servers,
            bundled_plugin_path,
            1,
            group=f"{shared}-{name}",
            extra=extra,
        )
    try:
        for cluster in started.values():
            cluster.start()
        yield started
    finally:
        for cluster in started.values():
            cluster.stop()


def _keys(bootstrap: str, topic: str) -> list[str]:
    """Every record key in partition 0 of ``topic``, up to its end now. Read until the
    consumer's position reaches the end offset, not until a record at ``end - 1`` is seen: the
    config topic's last offset may be a transaction marker (the leader writes
    transactionally), which no consumer ever sees."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"keys-{uuid.uuid4()}"})
    partition = TopicPartition(topic, 0, 0)
    try:
        _low, end = consumer.get_watermark_offsets(partition, timeout=30)
        consumer.assign([partition])
        keys: list[str] = []
        deadline = time.monotonic() + READ_TIMEOUT_S
        while consumer.position([partition])[0].offset < end:
            assert time.monotonic() < deadline, f"{topic}: not read to offset {end}"
            for message in consumer.consume(1000, 0.5):
                if message.error() is None:
                    keys.append((message.key() or b"").decode())
        return keys
    finally:
        consumer.close()


def _offsets(cluster: DistributedCluster, name: str) -> list[dict[str, object]]:
    response = cluster.request("GET", f"/connectors/{name}/offsets")
    assert response.status_code == 200, response.text
    offsets: list[dict[str, object]] = response.json()["offsets"]
    return offsets


def _sees_only_its_own(
    name: str, cluster: DistributedCluster, connectors: list[str], source: Path
) -> None:
    assert sorted(cluster.request("GET", "/connectors").json()) == connectors, name
    for other in CLUSTERS:
        if other != name:
            assert cluster.request("GET", f"/connectors/only-{other}").status_code == 404
    if "same" not in connectors:
        assert cluster.request("GET", "/connectors/same").status_code == 404
        return
    config = cluster.request("GET", "/connectors/same/config").json()
    assert config["file"] == str(source), name
    cluster.wait_running("same", 1)
    here = cluster.worker_id(0)

    def run_here() -> dict[str, Any] | None:
        # After every worker was replaced, the task's RUNNING of the old process stays until
        # the new one's: the old one's stop wrote UNASSIGNED in the generation of that RUNNING,
        # which readers ignore (KAFKA-12525's rule, as Kafka's readTaskStatus). A CI run read
        # it in between.
        status = cluster.status("same")
        ids = [status["connector"]["worker_id"], *(t["worker_id"] for t in status["tasks"])]
        return status if ids == [here, here] else None

    wait_until(run_here, 60, f"{name}'s connector and task running on {here}")

    def committed() -> list[dict[str, object]] | None:
        offsets = _offsets(cluster, "same")
        return (
            offsets
            if offsets and offsets[-1]["offset"] == {"position": source.stat().st_size}
            else None
        )

    offsets = wait_until(committed, COMMIT_TIMEOUT_S, f"{name}'s offset of its whole file")
    assert offsets == [  # its own file's partition only, at its own position
        {"partition": {"filename": str(source)}, "offset": {"position": source.stat().st_size}}
    ], name


def test_clusters_sharing_internal_topics_see_only_their_own_work(
    clusters: dict[str, DistributedCluster], broker: KafkaCluster, tmp_path: Path
) -> None:
    sources = {name: tmp_path / f"{name}.txt" for name in CLUSTERS}
    topics = {name: f"{cluster.group}-lines" for name, cluster in clusters.items()}
    for name, cluster in clusters.items():
        sources[name].write_text("".join(_line(name, i) for i in range(LINES_BEFORE[name])))
        broker.create_topic(topics[name], 1)
        cluster.create(
            "same",
            {
                "connector.class": "FileStreamSource",
                "file": str(sources[name]),
                "topic": topics[name],
            },
        )
        idle = tmp_path / f"only-{name}.txt"
        idle.touch()
        cluster.create(
            f"only-{name}",
            {"connector.class": "FileStreamSource", "file": str(idle), "topic": topics[name]},
        )
    for name, cluster in clusters.items():
        _sees_only_its_own(name, cluster, sorted([f"only-{name}", "same"]), sources[name])
        records = read_all(broker.bootstrap_servers, topics[name], LINES_BEFORE[name])
        assert [m.value().decode() + "\n" for m in records] == [
            _line(name, i) for i in range(LINES_BEFORE[name])
        ]

    # The records themselves: the sharing clusters' keys carry their group id, the other
    # cluster's are Kafka Connect's plain keys.
    bootstrap = broker.bootstrap_servers
    props = clusters["a"].props
    config_keys = set(_keys(bootstrap, props["config.storage.topic"]))
    status_keys = set(_keys(bootstrap, props["status.storage.topic"]))
    offset_keys = set(_keys(bootstrap, props["offset.storage.topic"]))
    for name, cluster in clusters.items():
        prefix = f"{cluster.group}." if CLUSTERS[name] else ""
        assert f"{prefix}connector-same" in config_keys, name
        assert f"{prefix}connector-only-{name}" in config_keys, name
        assert f"{prefix}status-task-same-0" in status_keys, name
        assert f'{prefix}["same",{{"filename":"{sources[name]}"}}]' in offset_keys, name

    # A deletion in one sharing cluster is its own tombstone: the others' `same` run on.
    assert clusters["b"].request("DELETE", "/connectors/same").status_code == 204
    wait_until(
        lambda: clusters["b"].request("GET", "/connectors").json() == ["only-b"],
        30,
        "b without its `same`",
    )
    expected = {
        "a": ["only-a", "same"],
        "b": ["only-b"],
        "plain": ["only-plain", "same"],
    }

    # Every worker replaced: each new process rebuilds its cluster from the shared topics.
    for cluster in clusters.values():
        cluster.stop()
    for cluster in clusters.values():
        cluster.restart(0)
    for name, cluster in clusters.items():
        _sees_only_its_own(name, cluster, expected[name], sources[name])
    for name in ("a", "plain"):  # each resumes at its own offset: nothing twice, nothing lost
        total = LINES_BEFORE[name] + LINES_AFTER
        with sources[name].open("a") as fh:
            fh.write("".join(_line(name, i) for i in range(LINES_BEFORE[name], total)))
        records = read_all(broker.bootstrap_servers, topics[name], total)
        assert [m.value().decode() + "\n" for m in records] == [
            _line(name, i) for i in range(total)
        ], name
