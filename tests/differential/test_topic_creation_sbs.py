"""Source topic creation (KIP-158 ``topic.creation.*``), on Copycat and on Kafka Connect 4.1.1.

A FileStreamSource on each worker writes to a topic that does not exist yet (a name of its
own per side); the topic each one created is described on the shared broker and compared.
Found by an exploratory comparison:

* an include regex in Java's syntax (``\\p{Alnum}``) was refused by Copycat's validation
  (Python's ``re``: "bad escape \\p"), where Kafka Connect creates the topic with the group's
  settings; the default group's include/exclude, which Kafka ignores, were checked too;
* ``topic.creation.groups`` alone (no ``topic.creation.default.*``) turned topic creation
  off on Copycat (the broker auto-created the topic), where Kafka refuses the connector for
  the missing default replication factor;
* an invalid replication factor or partition count was refused with words of Copycat's own.

Kafka Connect 4.1.1 checks ``topic.creation.*`` only once the connector is stored (a 500 on
create, the connector left behind in standalone); Copycat refuses it at validation (400, see
docs/rest.md), so only the message is compared.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import Peer, create, delete, wait_running
from tests.support.kafka import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
DEFAULTS = {
    "topic.creation.default.replication.factor": "1",
    "topic.creation.default.partitions": "3",
}


def _partitions(bootstrap: str, topic: str) -> int | None:
    """The topic's partition count once it exists (listing every topic: asking for one by
    name could have the broker auto-create it)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    found = admin.list_topics(timeout=10).topics.get(topic)
    return None if found is None or found.error is not None else len(found.partitions)


def _created_partitions(
    peer: Peer, bootstrap: str, tmp: Path, topic: str, config: dict[str, str]
) -> int:
    name = f"tc-{uuid.uuid4().hex[:8]}"
    source = tmp / f"{name}.txt"
    source.write_text("a\n")
    full = {"connector.class": SOURCE, "file": str(source), "topic": topic, "tasks.max": "1"}
    with peer.client() as client:
        create(client, name, {**full, **config})
        try:
            wait_running(client, name)
            count: int = wait_for(lambda: _partitions(bootstrap, topic), 60, f"topic {topic}")
        finally:
            delete(client, name)
    return count


def _refusal(peer: Peer, config: dict[str, str]) -> tuple[int, str]:
    """POST a config expected to be refused: its status and message (Kafka Connect's
    standalone worker stores the connector before it fails: it is deleted again)."""
    name = f"tc-refused-{uuid.uuid4().hex[:8]}"
    full = {"connector.class": SOURCE, "file": "/nonexistent", "topic": "t", "tasks.max": "1"}
    with peer.client() as client:
        response = client.post("/connectors", json={"name": name, "config": {**full, **config}})
        delete(client, name)
    body: dict[str, Any] = response.json() if response.status_code != 201 else {}
    return response.status_code, str(body.get("message"))


@pytest.mark.parametrize(
    "config",
    [
        {
            **DEFAULTS,
            "topic.creation.groups": "g",
            "topic.creation.g.include": r"tc-\p{Alnum}+-\p{Alnum}+-posix",
            "topic.creation.g.partitions": "5",
        },
        {
            **DEFAULTS,
            "topic.creation.groups": "g",
            "topic.creation.g.include": r"\Qtc-\E.*(?i)-POSIX",
            "topic.creation.g.partitions": "5",
        },
        # Kafka drops the default group's include and exclude without reading them.
        {
            **DEFAULTS,
            "topic.creation.default.include": "a[",
            "topic.creation.default.exclude": ".*",
        },
    ],
    ids=["posix-class", "quoting-and-inline-flag", "default-group-regexes"],
)
def test_java_regexes_pick_the_same_group(
    copycat: Peer,
    kafka_connect: Peer,
    apache_kafka: KafkaCluster,
    tmp_path: Path,
    config: dict[str, str],
) -> None:
    tag = uuid.uuid4().hex[:6]
    counts = {
        peer.name: _created_partitions(
            peer, apache_kafka.bootstrap_servers, tmp_path, f"tc-{side}{tag}-x-posix", config
        )
        for peer, side in ((copycat, "cc"), (kafka_connect, "kc"))
    }
    assert counts["Copycat"] == counts["Kafka Connect"], counts


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"topic.creation.groups": "g"}, "topic.creation.default.replication.factor"),
        (
            {**DEFAULTS, "topic.creation.default.replication.factor": "0"},
            "topic.creation.default.replication.factor",
        ),
        (
            {**DEFAULTS, "topic.creation.default.replication.factor": "-2"},
            "topic.creation.default.replication.factor",
        ),
        (
            {**DEFAULTS, "topic.creation.default.partitions": "0"},
            "topic.creation.default.partitions",
        ),
        (
            {**DEFAULTS, "topic.creation.groups": "g", "topic.creation.g.partitions": "-3"},
            "topic.creation.g.partitions",
        ),
    ],
    ids=["groups-without-defaults", "rf-0", "rf-minus-2", "partitions-0", "group-partitions"],
)
def test_invalid_settings_are_refused_with_kafkas_reason(
    copycat: Peer, kafka_connect: Peer, config: dict[str, str], key: str
) -> None:
    theirs = _refusal(kafka_connect, config)
    ours = _refusal(copycat, config)
    assert theirs[0] == 500, theirs
    assert ours[0] == 400, ours
    # Kafka names the key without its prefix (``replication.factor``) when the value is
    # invalid, the whole key when it is missing; Copycat always names the whole key.
    reason = theirs[1].split(": ", 1)[1] if theirs[1].startswith("Invalid") else theirs[1]
    assert reason in ours[1], (ours, theirs)
    assert key in ours[1], ours


def _failed_trace(client: Any, name: str) -> str:
    def failed() -> str | None:
        response = client.get(f"/connectors/{name}/status")
        tasks = response.json().get("tasks", []) if response.status_code == 200 else []
        return next((t["trace"] for t in tasks if t["state"] == "FAILED"), None)

    trace: str = wait_for(failed, 90, f"{name} task FAILED")
    return trace


def test_a_topic_the_broker_refuses_fails_the_task_with_kafkas_words(
    copycat: Peer, kafka_connect: Peer, tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:6]
    reasons = {}
    for peer, side in ((copycat, "cc"), (kafka_connect, "kc")):
        name = f"tc-refused-topic-{side}{tag}"
        source = tmp_path / f"{name}.txt"
        source.write_text("a\n")
        config = {
            "connector.class": SOURCE,
            "file": str(source),
            "topic": f"tc-{side}{tag}-bogus",
            "tasks.max": "1",
            **DEFAULTS,
            "topic.creation.default.cleanup.policy": "bogus",
        }
        with peer.client() as client:
            create(client, name, config)
            try:
                first_line = _failed_trace(client, name).splitlines()[0]
            finally:
                delete(client, name)
        # The exception's class differs (Java's ConnectException, Copycat's own); the words
        # after it are compared, with the side's topic name made the same.
        reasons[peer.name] = first_line.split(": ", 1)[1].replace(f"tc-{side}", "tc-XX")
    assert reasons["Copycat"] == reasons["Kafka Connect"], reasons
