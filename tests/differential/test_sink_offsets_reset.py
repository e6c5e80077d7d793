"""A sink offsets PATCH that sets some partitions and resets others, on Copycat and on Apache
Kafka Connect: the same offsets afterwards, and the partitions left out of the request keep
their committed offsets untouched (their commit metadata, which only an outside commit
writes, is still there on both), as Kafka Connect's per-partition OffsetDelete leaves them.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions
from confluent_kafka import TopicPartition as KafkaTopicPartition

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import Peer
from tests.support.kafka import group_offsets

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

PARTITIONS = 4


def _offsets(body: dict[str, Any]) -> dict[int, int]:
    return {o["partition"]["kafka_partition"]: o["offset"]["kafka_offset"] for o in body["offsets"]}


def _run(peer: Peer, broker: KafkaCluster, topic: str, tmp: Path) -> dict[str, Any]:
    name = f"reset-{peer.name.split()[0].lower()}-{uuid.uuid4().hex[:8]}"
    group = f"connect-{name}"
    with peer.client() as client:
        created = client.post(
            "/connectors",
            json={
                "name": name,
                "config": {
                    "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
                    "topics": topic,
                    "file": str(tmp / f"{name}.out"),
                },
                "initial_state": "STOPPED",
            },
        )
        assert created.status_code == 201, created.text
        committed = [
            KafkaTopicPartition(topic, p, 10 + p, metadata="outside") for p in range(PARTITIONS)
        ]
        broker.admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, committed)])[
            group
        ].result(30)

        def tp(p: int) -> dict[str, Any]:
            return {"kafka_topic": topic, "kafka_partition": p}

        patched = client.patch(
            f"/connectors/{name}/offsets",
            json={
                "offsets": [
                    {"partition": tp(1), "offset": None},
                    {"partition": tp(2), "offset": {"kafka_offset": 4}},
                ]
            },
        )
        read = client.get(f"/connectors/{name}/offsets")
        client.delete(f"/connectors/{name}")
    listed = group_offsets(broker.bootstrap_servers, group)
    return {
        "patch": (patched.status_code, patched.json()),
        "offsets": _offsets(read.json()),
        "metadata": {tp.partition: tp.metadata for tp in listed if tp.offset >= 0},
    }


def test_a_partial_reset_leaves_the_other_partitions_as_kafka_connect_does(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    topic = f"partial-reset-{uuid.uuid4().hex[:8]}"
    apache_kafka.create_topic(topic, PARTITIONS)
    ours = _run(copycat, apache_kafka, topic, tmp_path)
    theirs = _run(kafka_connect, apache_kafka, topic, tmp_path)
    assert ours == theirs
    assert theirs["offsets"] == {0: 10, 2: 4, 3: 13}
    assert theirs["metadata"] == {0: "outside", 2: None, 3: "outside"}
