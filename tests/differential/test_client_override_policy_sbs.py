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

import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import (
    Peer,
    create_refusal,
    validation_errors,
)
from tests.support.jvm import run_owner_pid
from tests.support.kafka_connect import KafkaConnect
from tests.support.rest import RestWorker

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
    kafka = KafkaConnect(
        tmp_path_factory.mktemp("kafka-connect"),
        apache_kafka.bootstrap_servers,
        overrides={**POLICY, "consumer.group.id": groups["Kafka Connect"]},
    ).start(run_owner_pid())
    extra = {
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "offset.flush.interval.ms": "1000",
        **POLICY,
        "consumer.group.id": groups["Copycat"],
    }
    try:
        with RestWorker(
            tmp_path_factory.mktemp("copycat"),
            apache_kafka.bootstrap_servers,
            bundled_plugin_path,
            extra,
        ) as copycat:
            yield {
                "Kafka Connect": (Peer("Kafka Connect", kafka.url), groups["Kafka Connect"]),
                "Copycat": (Peer("Copycat", copycat.url), groups["Copycat"]),
            }
    finally:
        kafka.stop()


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
