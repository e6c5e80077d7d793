"""The ``None`` client config override policy, and worker-wide ``consumer.*`` keys, on Copycat
and on Apache Kafka Connect side by side: one worker of each with the same policy.

A refused ``*.override.*`` key is an error on that key in ``config/validate`` (the same
errors, counted the same) and a 400 with the same message on create and config update; only
the clients a connector uses are checked. A worker's ``consumer.group.id`` renames every
sink's consumer group, as Kafka's worker puts its ``consumer.*`` keys over the
``connect-<name>`` default: the offsets API reads and resets that group.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import (
    Peer,
    create,
    create_refusal,
    delete,
    standalone_peers,
    validation_errors,
    wait_running,
)
from tests.support.kafka import group_offsets, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
STRING = "org.apache.kafka.connect.storage.StringConverter"
POLICY = {"connector.client.config.override.policy": "None"}


@pytest.fixture(scope="module")
def workers(
    apache_kafka: KafkaCluster, bundled_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, tuple[Peer, str]]]:
    """Per implementation: its worker (policy None) and the worker's ``consumer.group.id``."""
    groups = {name: f"wg-{name.split()[0].lower()}-{uuid.uuid4().hex[:8]}" for name in NAMES}
    with standalone_peers(
        apache_kafka.bootstrap_servers,
        bundled_plugin_path,
        tmp_path_factory,
        POLICY,
        copycat={"offset.flush.interval.ms": "1000", "consumer.group.id": groups["Copycat"]},
        kafka_connect={"consumer.group.id": groups["Kafka Connect"]},
    ) as (copycat, kafka):
        yield {
            "Kafka Connect": (kafka, groups["Kafka Connect"]),
            "Copycat": (copycat, groups["Copycat"]),
        }


NAMES = ("Kafka Connect", "Copycat")
# case -> (connector class, config): overrides the None policy refuses on some clients.
CASES: dict[str, tuple[str, dict[str, str]]] = {
    "source-producer": (
        SOURCE,
        {
            "topic": "t",
            "file": "/tmp/in.txt",
            "producer.override.linger.ms": "5",
            "producer.override.sasl.mechanism": "PLAIN",
            # Not used by a source without topic creation, nor a consumer: not checked.
            "admin.override.request.timeout.ms": "1000",
            "consumer.override.fetch.min.bytes": "5",
        },
    ),
    "source-topic-creation-admin": (
        SOURCE,
        {
            "topic": "t",
            "file": "/tmp/in.txt",
            "topic.creation.default.partitions": "1",
            "topic.creation.default.replication.factor": "1",
            "admin.override.request.timeout.ms": "1000",
        },
    ),
    "sink-consumer": (
        SINK,
        {
            "topics": "t",
            "file": "/tmp/out.txt",
            "consumer.override.max.poll.records": "5",
            "producer.override.linger.ms": "5",
            "admin.override.retries": "1",
        },
    ),
    "sink-dead-letter-queue": (
        SINK,
        {
            "topics": "t",
            "file": "/tmp/out.txt",
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": "dlq",
            "consumer.override.max.poll.records": "5",
            "producer.override.linger.ms": "5",
            "admin.override.retries": "1",
        },
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_validation_errors_are_kafkas(workers: dict[str, tuple[Peer, str]], case: str) -> None:
    connector_class, config = CASES[case]
    answers = {
        name: validation_errors(
            peer, connector_class, {"connector.class": connector_class, **config, "name": case}
        )
        for name, (peer, _) in workers.items()
    }
    assert answers["Kafka Connect"]["error_count"] > 0
    assert answers["Copycat"] == answers["Kafka Connect"]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("put", [False, True], ids=["create", "put"])
def test_create_refusals_are_kafkas(
    workers: dict[str, tuple[Peer, str]], case: str, put: bool
) -> None:
    connector_class, config = CASES[case]
    name = f"pol-{case}-{uuid.uuid4().hex[:8]}"
    answers = {
        peer_name: create_refusal(peer, name, {"connector.class": connector_class, **config}, put)
        for peer_name, (peer, _) in workers.items()
    }
    assert answers["Kafka Connect"][0] == 400
    assert answers["Copycat"] == answers["Kafka Connect"]


def test_a_workers_consumer_group_id_is_the_group_the_offsets_api_uses(
    workers: dict[str, tuple[Peer, str]], apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    seen: dict[str, Any] = {}
    for peer_name, (peer, group) in workers.items():
        topic = f"wgroup-{uuid.uuid4().hex[:8]}"
        apache_kafka.create_topic(topic, 1)
        producer = Producer({"bootstrap.servers": apache_kafka.bootstrap_servers})
        for i in range(3):
            producer.produce(topic, value=f"v{i}".encode())
        producer.flush(30)
        name = f"wgroup-{uuid.uuid4().hex[:8]}"
        with peer.client() as client:
            create(
                client,
                name,
                {
                    "connector.class": SINK,
                    "topics": topic,
                    "file": str(tmp_path / f"{name}.txt"),
                    "value.converter": STRING,
                },
            )
            try:
                wait_running(client, name)

                def committed(group: str = group, topic: str = topic) -> list[Any] | None:
                    listed = group_offsets(apache_kafka.bootstrap_servers, group, [topic])
                    found = [(tp.topic, tp.offset) for tp in listed]
                    return found if (topic, 3) in found else None

                wait_for(committed, 90, f"{peer_name}: offsets committed in {group}")
                offsets = client.get(f"/connectors/{name}/offsets")
                seen[peer_name] = (offsets.status_code, offsets.json())
            finally:
                delete(client, name)
        for entry in seen[peer_name][1].get("offsets", []):
            entry["partition"]["kafka_topic"] = "<topic>"
    assert seen["Kafka Connect"] == (
        200,
        {
            "offsets": [
                {
                    "partition": {"kafka_partition": 0, "kafka_topic": "<topic>"},
                    "offset": {"kafka_offset": 3},
                }
            ]
        },
    )
    assert seen["Copycat"] == seen["Kafka Connect"]
