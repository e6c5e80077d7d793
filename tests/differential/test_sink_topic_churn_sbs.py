"""Sink connectors while their topics come and go, on Copycat and on Apache Kafka Connect 4.1.1.

Kafka Connect's sink consumer keeps the Java consumer's ``allow.auto.create.topics=true``: on a
broker with ``auto.create.topics.enable=true`` (Apache Kafka's default, and the test broker's)
a topic named in ``topics`` that does not exist is created by the consumer's metadata request,
and one deleted while the task runs comes back at once, empty. A ``topics.regex`` sink never
creates a topic (a pattern subscription names none). Copycat's sinks keep librdkafka's false by
default (docs/operator-guide.md says why); given ``true``, librdkafka's subscription still never
asked the broker for the topic, so Copycat's sink waited for someone else to create it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicCollection

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import (
    FILE_SINK,
    STRING_CONVERTERS,
    DistributedPeers,
    Peer,
    create,
    delete,
    file_lines,
    wait_running,
)
from tests.support.kafka import group_offsets, produce
from tests.support.rest import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]


def _partitions(broker: KafkaCluster, topic: str) -> int | None:
    """The partition count of ``topic``, None while it does not exist."""
    meta = broker.admin.list_topics(timeout=10).topics.get(topic)
    if meta is None or meta.error is not None:
        return None
    return len(meta.partitions)


def _committed(broker: KafkaCluster, group: str) -> dict[str, int]:
    """What ``group`` committed, by topic (one partition each)."""
    return {tp.topic: tp.offset for tp in group_offsets(broker.bootstrap_servers, group)}


T = TypeVar("T")


def _wait_seen(get: Callable[[], T], ok: Callable[[T], bool], timeout_s: float, what: str) -> T:
    """Wait until ``ok(get())``; a time-out says what ``get`` returned last."""
    seen: list[T] = []

    def done() -> bool:
        seen[:] = [get()]
        return ok(seen[0])

    try:
        wait_for(done, timeout_s, what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last seen: {seen[0] if seen else None!r}") from None
    return seen[0]


def _wait_committed(
    broker: KafkaCluster, group: str, wanted: dict[str, int], timeout_s: float
) -> None:
    """Wait until ``group`` committed ``wanted`` for its topics (others it may still list)."""
    _wait_seen(
        lambda: _committed(broker, group),
        lambda got: {topic: got.get(topic) for topic in wanted} == wanted,
        timeout_s,
        f"{group} committed {wanted}",
    )


def _wait_lines(out: Path, wanted: set[str], timeout_s: float, what: str) -> None:
    """Wait until ``out`` holds every line of ``wanted``; a time-out shows what it held."""
    _wait_seen(lambda: file_lines(out), lambda lines: set(lines) >= wanted, timeout_s, what)


def _tag(peer: Peer) -> str:
    return f"{peer.name.split()[0].lower()}-{uuid.uuid4().hex[:8]}"


def _missing_topic(peer: Peer, broker: KafkaCluster, tmp: Path) -> dict[str, Any]:
    tag = _tag(peer)
    topic, name, out = f"churn-missing-{tag}", f"churn-missing-{tag}", tmp / f"{tag}.out"
    seen: dict[str, Any] = {}
    with peer.client() as client:
        config = {
            "connector.class": FILE_SINK,
            "topics": topic,
            "file": str(out),
            **STRING_CONVERTERS,
        }
        # Kafka Connect's default, Copycat's only when given.
        create(client, name, {**config, "consumer.override.allow.auto.create.topics": "true"})
        try:
            wait_running(client, name)
            seen["created by the sink, partitions"] = wait_for(
                lambda: _partitions(broker, topic), 60, f"{topic} created by {peer.name}'s sink"
            )
            produce(broker.bootstrap_servers, topic, [b"x1", b"x2"])
            wait_for(lambda: len(file_lines(out)) >= 2, 60, f"2 lines in {out}")
            seen["lines"] = file_lines(out)
        finally:
            delete(client, name)
    return seen


def test_a_sink_allowed_to_create_its_missing_topic_does_as_kafka_connects_consumer(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    ours = _missing_topic(copycat, apache_kafka, tmp_path)
    theirs = _missing_topic(kafka_connect, apache_kafka, tmp_path)
    assert ours == theirs
    assert theirs == {"created by the sink, partitions": 1, "lines": ["x1", "x2"]}


def _regex_topic_deleted(peer: Peer, broker: KafkaCluster, tmp: Path) -> dict[str, Any]:
    """topics.regex matching a and b; a deleted while the task runs; then c created."""
    tag = _tag(peer)
    a, b, c = (f"churn-rx-{tag}-{x}" for x in "abc")
    name, out = f"churn-rx-{tag}", tmp / f"{tag}.out"
    broker.create_topic(a)
    broker.create_topic(b)
    produce(broker.bootstrap_servers, a, [b"a1"])
    produce(broker.bootstrap_servers, b, [b"b1"])
    config = {
        "connector.class": FILE_SINK,
        "topics.regex": f"churn-rx-{tag}-.*",
        "file": str(out),
        # Kafka Connect's consumer looks for new topics at this interval (5 min by default).
        "consumer.override.metadata.max.age.ms": "2000",
        **STRING_CONVERTERS,
    }
    seen: dict[str, Any] = {}
    with peer.client() as client:
        create(client, name, config)
        try:
            wait_running(client, name)
            wait_for(lambda: len(file_lines(out)) >= 2, 60, f"2 lines in {out}")
            broker.delete_topics([a])
            wait_for(lambda: _partitions(broker, a) is None, 60, f"{a} deleted")
            produce(broker.bootstrap_servers, b, [b"b2"])
            broker.create_topic(c)
            produce(broker.bootstrap_servers, c, [b"c1"])
            # c1 arrives once the sink listed the topics again, after a was gone. Kafka
            # Connect's first: its commit of the revoked partitions, a's among them, waits
            # default.api.timeout.ms (60 s) for a's coordinator answer before it rebalances.
            _wait_lines(out, {"c1"}, 120, f"c1 in {out}")
            seen["lines"] = sorted(file_lines(out))
            # Commits go on without a: nothing is delivered again after a restart. Kafka
            # Connect's took more than 60 s after c1 once on a loaded machine (2026-12-01).
            _wait_committed(broker, f"connect-{name}", {b: 2, c: 1}, 150)
            seen["a after"] = _partitions(broker, a)
            seen["status"] = client.get(f"/connectors/{name}/status").json()["tasks"][0]["state"]
        finally:
            delete(client, name)
    return seen


def test_a_topics_regex_sink_goes_on_without_a_deleted_topic_as_kafka_connect_and_never_creates_it(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    """Lines, commits and task state as Kafka Connect's. The deleted topic stays deleted on
    Copycat; Kafka Connect's sink (its consumer has allow.auto.create.topics=true) mostly
    leaves it deleted too, but brought it back, with one partition, in two of four loaded CI
    runs (2026-12-01/02), so its side of that one field is recorded, not compared."""
    ours = _regex_topic_deleted(copycat, apache_kafka, tmp_path)
    theirs = _regex_topic_deleted(kafka_connect, apache_kafka, tmp_path)
    assert ours == {"lines": ["a1", "b1", "b2", "c1"], "a after": None, "status": "RUNNING"}
    assert theirs["a after"] in (None, 1), theirs
    assert ours == {**theirs, "a after": None}


# How soon a topic created while a topics.regex sink runs must reach its file when the
# connector sets metadata.max.age.ms to METADATA_MAX_AGE_MS: the refresh, a rebalance and a
# fetch, on a loaded machine. Copycat refreshed every 10 s whatever the setting.
METADATA_MAX_AGE_MS = 1000
NEW_TOPIC_BOUND_S = 6.0


def _new_regex_topic(peer: Peer, broker: KafkaCluster, tmp: Path) -> dict[str, Any]:
    tag = _tag(peer)
    first, second = f"churn-new-{tag}-1", f"churn-new-{tag}-2"
    name, out = f"churn-new-{tag}", tmp / f"{tag}.out"
    broker.create_topic(first)
    produce(broker.bootstrap_servers, first, [b"x1"])
    config = {
        "connector.class": FILE_SINK,
        "topics.regex": f"churn-new-{tag}-.*",
        "file": str(out),
        "consumer.override.metadata.max.age.ms": str(METADATA_MAX_AGE_MS),
        **STRING_CONVERTERS,
    }
    with peer.client() as client:
        create(client, name, config)
        try:
            wait_running(client, name)
            wait_for(lambda: file_lines(out) == ["x1"], 60, f"x1 in {out}")
            broker.create_topic(second)
            produce(broker.bootstrap_servers, second, [b"y1"])
            wait_for(
                lambda: "y1" in file_lines(out),
                NEW_TOPIC_BOUND_S,
                f"{peer.name}: y1 of a new topic within {NEW_TOPIC_BOUND_S} s",
            )
            return {"lines": file_lines(out)}
        finally:
            delete(client, name)


def test_a_regex_sink_sees_new_topics_at_its_metadata_max_age_as_kafka_connect_does(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    theirs = _new_regex_topic(kafka_connect, apache_kafka, tmp_path)
    ours = _new_regex_topic(copycat, apache_kafka, tmp_path)
    assert ours == theirs == {"lines": ["x1", "y1"]}


# How long the records produced to a re-created topic may take to reach the sink's file. Kafka
# Connect's consumer fetches by topic ID: the first fetch after the re-create fails, its
# metadata update brings the new ID, and it resets to the new log start (0.3 s here). Copycat's
# librdkafka consumer kept the old position and never delivered the records below it; it now
# looks the topic IDs up at the consumer's metadata refresh interval (RECREATED_MAX_AGE_MS
# here, 10 s by default).
RECREATED_BOUND_S = 30.0
RECREATED_MAX_AGE_MS = 1000


def _topic_id(broker: KafkaCluster, topic: str) -> str | None:
    """The topic ID of ``topic``, None while the cluster does not have it."""
    future = broker.admin.describe_topics(TopicCollection([topic]))[topic]
    try:
        return str(future.result(timeout=10).topic_id)
    except KafkaException as exc:
        if exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return None
        raise


def _create_again(broker: KafkaCluster, topic: str, old_id: str | None) -> None:
    """Create ``topic`` as soon as the cluster lets us (it refuses while the deletion is in
    progress), unless someone else created it again first: Kafka Connect's sink consumer
    (allow.auto.create.topics=true) re-creates a deleted topic with its next metadata
    request, and the broker then refuses ours for good."""

    def created() -> bool:
        try:
            broker.create_topic(topic)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
            return _topic_id(broker, topic) not in (None, old_id)
        return True

    wait_for(created, 60, f"{topic} created again")


def _recreated_topic(
    peer: Peer, broker: KafkaCluster, tmp: Path, *, settle_s: float
) -> dict[str, Any]:
    """A sink that consumed its topic to offset 2; the topic deleted, created again at once
    with the same name and partition count, and ``settle_s`` later five records produced to
    it (offsets 0-4: librdkafka went on at the old position, 2, and skipped those below
    it)."""
    tag = _tag(peer)
    topic, name, out = f"churn-re-{tag}", f"churn-re-{tag}", tmp / f"{tag}.out"
    group = f"connect-{name}"
    broker.create_topic(topic)
    produce(broker.bootstrap_servers, topic, [b"x1", b"x2"])
    config = {
        "connector.class": FILE_SINK,
        "topics": topic,
        "file": str(out),
        "consumer.override.metadata.max.age.ms": str(RECREATED_MAX_AGE_MS),
        **STRING_CONVERTERS,
    }
    seen: dict[str, Any] = {}
    with peer.client() as client:
        create(client, name, config)
        try:
            wait_running(client, name)
            wait_for(lambda: len(file_lines(out)) >= 2, 60, f"2 lines in {out}")
            _wait_committed(broker, group, {topic: 2}, 60)
            old_id = _topic_id(broker, topic)
            broker.delete_topics([topic])
            _create_again(broker, topic, old_id)
            time.sleep(settle_s)
            produce(broker.bootstrap_servers, topic, [f"y{i}".encode() for i in range(1, 6)])
            wanted = {"x1", "x2"} | {f"y{i}" for i in range(1, 6)}
            _wait_lines(
                out,
                wanted,
                RECREATED_BOUND_S,
                f"{peer.name}: y1-y5 of the re-created {topic} within {RECREATED_BOUND_S} s",
            )
            _wait_committed(broker, group, {topic: 5}, 60)
            produce(broker.bootstrap_servers, topic, [b"y6"])
            wait_for(lambda: "y6" in file_lines(out), 60, f"y6 in {out}")
            # Copycat notices the new topic only at its next look-up of the topic IDs: the
            # records at or past the old position it fetched before then are delivered twice
            # (at-least-once), never lost. Kafka Connect delivers each once.
            seen["lines"] = sorted(set(file_lines(out)))
            _wait_committed(broker, group, {topic: 6}, 60)
            seen["status"] = client.get(f"/connectors/{name}/status").json()["tasks"][0]["state"]
        finally:
            delete(client, name)
    return seen


RECREATED_EXPECTED = {
    "lines": sorted(["x1", "x2"] + [f"y{i}" for i in range(1, 7)]),
    "status": "RUNNING",
}


# Kafka Connect's sink, its records written to the re-created topic at once, missed y1-y5
# for 30 s in one CI run of several (2026-12-01; 20 runs here, some under CPU load, all read
# them), as it did in one run of four when the topic was created again only once the cluster
# no longer listed it. Our reading of its consumer, not seen directly: it goes back to the
# start only when it finds its old position past the end of the new topic, so records
# written before it looks hide the change. The side-by-side runs give both sinks SETTLE_S,
# several metadata refreshes, to see the new topic first; Copycat alone is held to records
# written at once.
SETTLE_S = 5 * RECREATED_MAX_AGE_MS / 1000


def test_a_sink_reads_a_re_created_topic_from_its_start_as_kafka_connect_does(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    theirs = _recreated_topic(kafka_connect, apache_kafka, tmp_path, settle_s=SETTLE_S)
    ours = _recreated_topic(copycat, apache_kafka, tmp_path, settle_s=SETTLE_S)
    assert ours == theirs == RECREATED_EXPECTED


def test_a_sink_reads_a_re_created_topic_written_to_at_once_from_its_start(
    copycat: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    """Records written before the sink can have seen the new topic: Copycat looks the topic
    IDs up again and goes back to the start (see SETTLE_S for Kafka Connect)."""
    assert _recreated_topic(copycat, apache_kafka, tmp_path, settle_s=0) == RECREATED_EXPECTED


def test_a_distributed_sink_reads_a_re_created_topic_from_its_start_as_kafka_connect_does(
    distributed_pair: DistributedPeers, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    ours, theirs = (
        _recreated_topic(peer, apache_kafka, tmp_path, settle_s=SETTLE_S)
        for peer in distributed_pair.both()
    )
    assert ours == theirs == RECREATED_EXPECTED


def _recreated_by_two_tasks(peer: Peer, broker: KafkaCluster, tmp: Path) -> dict[str, Any]:
    """tasks.max=2 and allow.auto.create.topics=true: the topic deleted, created again by the
    sink's own metadata request, then written to."""
    tag = _tag(peer)
    topic, name, out = f"churn-two-{tag}", f"churn-two-{tag}", tmp / f"{tag}.out"
    group = f"connect-{name}"
    broker.create_topic(topic)
    produce(broker.bootstrap_servers, topic, [b"x1", b"x2"])
    config = {
        "connector.class": FILE_SINK,
        "topics": topic,
        "file": str(out),
        "tasks.max": "2",
        "consumer.override.allow.auto.create.topics": "true",
        "consumer.override.metadata.max.age.ms": str(RECREATED_MAX_AGE_MS),
        **STRING_CONVERTERS,
    }
    seen: dict[str, Any] = {}
    with peer.client() as client:
        create(client, name, config)
        try:
            wait_running(client, name, tasks=2)
            wait_for(lambda: len(file_lines(out)) >= 2, 60, f"2 lines in {out}")
            _wait_committed(broker, group, {topic: 2}, 60)
            broker.delete_topics([topic])
            seen["created again, partitions"] = wait_for(
                lambda: _partitions(broker, topic), 60, f"{topic} created again by the sink"
            )
            produce(broker.bootstrap_servers, topic, [f"y{i}".encode() for i in range(1, 6)])
            wanted = {"x1", "x2"} | {f"y{i}" for i in range(1, 6)}
            _wait_lines(
                out,
                wanted,
                RECREATED_BOUND_S,
                f"{peer.name}: y1-y5 of {topic} created again within {RECREATED_BOUND_S} s",
            )
            _wait_committed(broker, group, {topic: 5}, 60)
            seen["lines"] = sorted(set(file_lines(out)))
            status = client.get(f"/connectors/{name}/status").json()
            seen["states"] = sorted(task["state"] for task in status["tasks"])
        finally:
            delete(client, name)
    return seen


def test_two_sink_tasks_read_the_topic_their_consumer_created_again_as_kafka_connect_does(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    theirs = _recreated_by_two_tasks(kafka_connect, apache_kafka, tmp_path)
    ours = _recreated_by_two_tasks(copycat, apache_kafka, tmp_path)
    assert (
        ours
        == theirs
        == {
            "created again, partitions": 1,
            "lines": sorted(["x1", "x2"] + [f"y{i}" for i in range(1, 6)]),
            "states": ["RUNNING", "RUNNING"],
        }
    )
