"""A sink's active topics (KIP-558), on Copycat and on Apache Kafka Connect 4.1.1.

Kafka's WorkerSinkTask records a topic as active when it consumes a record from it (once the
record is converted), not when the task is assigned the topic's partitions: a sink on an
empty topic lists no topic, and a ``topics.regex`` sink lists only the topics it consumed
records from. A reset while the task runs empties the list; the task records the topic again
with its next record. Copycat listed the topics of the assigned partitions.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import (
    FILE_SINK,
    STRING_CONVERTERS,
    Peer,
    create,
    delete,
    file_lines,
    wait_running,
)
from tests.support.kafka import produce
from tests.support.rest import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]


def _delivered(path: Path, count: int) -> None:
    wait_for(lambda: len(file_lines(path)) >= count, 60, f"{count} records in {path}")


def _assigned(broker: KafkaCluster, group: str, partitions: int) -> None:
    """Until the sink's consumer holds ``partitions`` partitions."""

    def held() -> bool:
        [described] = broker.admin.describe_consumer_groups([group]).values()
        members = described.result(30).members
        return sum(len(m.assignment.topic_partitions) for m in members) == partitions

    wait_for(held, 60, f"group {group}: {partitions} partitions assigned")


def _topics(client: httpx.Client, name: str, names: dict[str, str]) -> list[str]:
    """The connector's active topics, each named by its role in the scenario."""
    response = client.get(f"/connectors/{name}/topics")
    assert response.status_code == 200, response.text
    return [names.get(t, t) for t in response.json()[name]["topics"]]


def _run(peer: Peer, broker: KafkaCluster, tmp: Path) -> dict[str, Any]:
    tag = f"{peer.name.split()[0].lower()}-{uuid.uuid4().hex[:8]}"
    empty, used, unused = f"active-{tag}", f"rx-{tag}-used", f"rx-{tag}-unused"
    names = {empty: "empty", used: "used", unused: "unused"}
    for topic in names:
        broker.create_topic(topic)
    produce(broker.bootstrap_servers, used, [b"a", b"b"])
    seen: dict[str, Any] = {}
    plain, regex = f"{tag}-plain", f"{tag}-regex"
    plain_out, regex_out = tmp / f"{plain}.out", tmp / f"{regex}.out"
    with peer.client() as client:
        create(
            client,
            plain,
            {
                "connector.class": FILE_SINK,
                "topics": empty,
                "file": str(plain_out),
                **STRING_CONVERTERS,
            },
        )
        create(
            client,
            regex,
            {
                "connector.class": FILE_SINK,
                "topics.regex": f"rx-{tag}-.*",
                "file": str(regex_out),
                **STRING_CONVERTERS,
            },
        )
        try:
            wait_running(client, plain)
            wait_running(client, regex)
            _assigned(broker, f"connect-{plain}", 1)
            _delivered(regex_out, 2)
            _assigned(broker, f"connect-{regex}", 2)
            seen["regex, records in one topic"] = _topics(client, regex, names)
            seen["assigned, nothing consumed"] = _topics(client, plain, names)

            produce(broker.bootstrap_servers, empty, [b"x"])
            _delivered(plain_out, 1)
            seen["after a record"] = _topics(client, plain, names)

            reset = client.put(f"/connectors/{plain}/topics/reset")
            seen["reset"] = reset.status_code
            seen["reset while running"] = _topics(client, plain, names)
            produce(broker.bootstrap_servers, empty, [b"y"])
            _delivered(plain_out, 2)
            seen["reset, then a record"] = _topics(client, plain, names)
        finally:
            delete(client, plain)
            delete(client, regex)
    return seen


def test_a_sink_lists_the_topics_it_consumed_from_as_kafka_connect_does(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    ours = _run(copycat, apache_kafka, tmp_path)
    theirs = _run(kafka_connect, apache_kafka, tmp_path)
    assert ours == theirs
    assert theirs == {
        "assigned, nothing consumed": [],
        "regex, records in one topic": ["used"],
        "after a record": ["empty"],
        "reset": 202,
        "reset while running": [],
        "reset, then a record": ["empty"],
    }
