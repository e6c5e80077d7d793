"""A source connector's own offsets topic (``offsets.storage.topic``, KIP-618) on Copycat and
Apache Kafka Connect 4.1.1 distributed workers side by side (exactly-once support off).

* The connector's topic exists and is not compacted: Kafka's WorkerConnector starts the
  connector's offset store (its ``OffsetStorageReader``) before the connector itself, so the
  *connector* is FAILED, with the ConfigException naming the topic, and it never makes task
  configs. Copycat ran the connector and failed its task instead (the connector showed
  RUNNING), and its message began ``Invalid value <topic> for configuration
  offsets.storage.topic:`` (Kafka's TopicAdmin has no such prefix, for any internal topic)
  and said "source offsets of connector <name>" where Kafka says "source connector offsets".

Found by an exploratory side-by-side run; the same run found these the same on both: the topic
created compacted with the worker's offsets partitions and replication; every offset written to
the connector's topic and copied to the worker's, byte for byte; GET, PATCH and DELETE of a
stopped connector's offsets; ``offsets.storage.topic`` empty or blank refused with the same
message; the worker's config or status topic accepted.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import (
    FILE_SOURCE,
    DistributedPeers,
    Peer,
    create,
    delete,
    wait_failed,
)

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

WORKER_KEY, CONNECTOR_KEY = "'offset.storage.topic'", "'offsets.storage.topic'"


def _source(tmp: Path, peer: Peer, name: str, offsets_topic: str) -> dict[str, str]:
    source = tmp / f"{name}-{peer.name.replace(' ', '-')}.txt"
    source.write_text("a\nb\n")
    return {
        "connector.class": FILE_SOURCE,
        "file": str(source),
        "topic": f"{name}-{uuid.uuid4().hex[:8]}",
        "tasks.max": "1",
        "offsets.storage.topic": offsets_topic,
    }


def test_a_connector_topic_that_is_not_compacted_fails_the_connector(
    distributed_pair: DistributedPeers, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    name = "own-offsets-not-compacted"
    seen = {}
    for peer in distributed_pair.both():
        topic = f"offsets-delete-{uuid.uuid4().hex[:8]}"
        apache_kafka.create_topic(topic, config={"cleanup.policy": "delete"})
        with peer.client() as client:
            create(client, name, _source(tmp_path, peer, name, topic))
            try:
                status = wait_failed(client, name)
                tasks = client.get(f"/connectors/{name}/tasks").json()
            finally:
                delete(client, name)
        trace = status["connector"].get("trace", "")
        seen[peer.name] = (
            status["connector"]["state"],
            [t["state"] for t in status["tasks"]],
            len(tasks),
            # Kafka 4.1.1 names the worker's key here (its KAFKA-20430, fixed later, names the
            # connector's): Copycat names the key the user set.
            trace.splitlines()[0].replace(topic, "<topic>").replace(WORKER_KEY, CONNECTOR_KEY),
        )
    assert seen["Copycat"] == seen["Kafka Connect"]
    assert seen["Kafka Connect"][:3] == ("FAILED", [], 0)
