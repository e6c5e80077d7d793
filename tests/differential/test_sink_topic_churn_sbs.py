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

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import Peer, create, delete, wait_running
from tests.support.kafka import group_offsets, produce
from tests.support.rest import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
STRINGS = {
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.storage.StringConverter",
}


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _partitions(broker: KafkaCluster, topic: str) -> int | None:
    """The partition count of ``topic``, None while it does not exist."""
    meta = broker.admin.list_topics(timeout=10).topics.get(topic)
    if meta is None or meta.error is not None:
        return None
    return len(meta.partitions)


def _committed(broker: KafkaCluster, group: str) -> dict[str, int]:
    """What ``group`` committed, by topic (one partition each)."""
    return {tp.topic: tp.offset for tp in group_offsets(broker.bootstrap_servers, group)}


def _tag(peer: Peer) -> str:
    return f"{peer.name.split()[0].lower()}-{uuid.uuid4().hex[:8]}"


def _missing_topic(peer: Peer, broker: KafkaCluster, tmp: Path) -> dict[str, Any]:
    tag = _tag(peer)
    topic, name, out = f"churn-missing-{tag}", f"churn-missing-{tag}", tmp / f"{tag}.out"
    seen: dict[str, Any] = {}
    with peer.client() as client:
        config = {"connector.class": SINK, "topics": topic, "file": str(out), **STRINGS}
        # Kafka Connect's default, Copycat's only when given.
        create(client, name, {**config, "consumer.override.allow.auto.create.topics": "true"})
        try:
            wait_running(client, name)
            seen["created by the sink, partitions"] = wait_for(
                lambda: _partitions(broker, topic), 60, f"{topic} created by {peer.name}'s sink"
            )
            produce(broker.bootstrap_servers, topic, [b"x1", b"x2"])
            wait_for(lambda: len(_lines(out)) >= 2, 60, f"2 lines in {out}")
            seen["lines"] = _lines(out)
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
        "connector.class": SINK,
        "topics.regex": f"churn-rx-{tag}-.*",
        "file": str(out),
        # Kafka Connect's consumer looks for new topics at this interval (5 min by default).
        "consumer.override.metadata.max.age.ms": "2000",
        **STRINGS,
    }
    seen: dict[str, Any] = {}
    with peer.client() as client:
        create(client, name, config)
        try:
            wait_running(client, name)
            wait_for(lambda: len(_lines(out)) >= 2, 60, f"2 lines in {out}")
            broker.delete_topics([a])
            wait_for(lambda: _partitions(broker, a) is None, 60, f"{a} deleted")
            produce(broker.bootstrap_servers, b, [b"b2"])
            broker.create_topic(c)
            produce(broker.bootstrap_servers, c, [b"c1"])
            # c1 arrives once the sink listed the topics again, after a was gone. Kafka
            # Connect's first: its commit of the revoked partitions, a's among them, waits
            # default.api.timeout.ms (60 s) for a's coordinator answer before it rebalances.
            wait_for(lambda: "c1" in _lines(out), 120, f"c1 in {out}")
            seen["lines"] = sorted(_lines(out))
            # Commits go on without a: nothing is delivered again after a restart.
            wait_for(
                lambda: _committed(broker, f"connect-{name}") == {b: 2, c: 1},
                60,
                f"connect-{name} committed {b}: 2, {c}: 1",
            )
            seen["a after"] = _partitions(broker, a)
            seen["status"] = client.get(f"/connectors/{name}/status").json()["tasks"][0]["state"]
        finally:
            delete(client, name)
    return seen


def test_a_topics_regex_sink_never_creates_a_deleted_topic_again_as_in_kafka_connect(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    ours = _regex_topic_deleted(copycat, apache_kafka, tmp_path)
    theirs = _regex_topic_deleted(kafka_connect, apache_kafka, tmp_path)
    assert ours == theirs
    assert theirs == {"lines": ["a1", "b1", "b2", "c1"], "a after": None, "status": "RUNNING"}


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
        "connector.class": SINK,
        "topics.regex": f"churn-new-{tag}-.*",
        "file": str(out),
        "consumer.override.metadata.max.age.ms": str(METADATA_MAX_AGE_MS),
        **STRINGS,
    }
    with peer.client() as client:
        create(client, name, config)
        try:
            wait_running(client, name)
            wait_for(lambda: _lines(out) == ["x1"], 60, f"x1 in {out}")
            broker.create_topic(second)
            produce(broker.bootstrap_servers, second, [b"y1"])
            wait_for(
                lambda: "y1" in _lines(out),
                NEW_TOPIC_BOUND_S,
                f"{peer.name}: y1 of a new topic within {NEW_TOPIC_BOUND_S} s",
            )
            return {"lines": _lines(out)}
        finally:
            delete(client, name)


def test_a_regex_sink_sees_new_topics_at_its_metadata_max_age_as_kafka_connect_does(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    theirs = _new_regex_topic(kafka_connect, apache_kafka, tmp_path)
    ours = _new_regex_topic(copycat, apache_kafka, tmp_path)
    assert ours == theirs == {"lines": ["x1", "y1"]}
