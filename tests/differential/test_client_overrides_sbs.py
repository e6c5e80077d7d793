"""Connector client overrides (``producer.override.*``, ``consumer.override.*``,
``admin.override.*``) on Copycat and on Apache Kafka Connect side by side, both with Kafka
4.1's default policy (All).

Kafka parses the value of each override whose key its client knows with the key's type before
it asks the policy: a value that is no number for a numeric key, or no boolean for a boolean
one, fails validation, create and config update with a 500 carrying the parse error (no
validation error on the key). A value of the right type that the client's own validator
refuses (``auto.offset.reset=sometimes``) and keys the client does not know pass, as in Kafka:
the first fails the task when its client is made, the second is ignored.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.differential import SCENARIO_TIMEOUT_S, Peer, create, create_refusal, delete
from tests.support.kafka import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"

# case -> (connector class, override key, value): each a value Kafka's type parse refuses.
BAD_TYPES = {
    "sink-int": (SINK, "consumer.override.max.poll.records", "lots"),
    "sink-boolean": (SINK, "consumer.override.enable.auto.commit", "maybe"),
    "source-long": (SOURCE, "producer.override.linger.ms", "soon"),
    "source-int-out-of-range": (SOURCE, "producer.override.batch.size", "99999999999"),
    "source-boolean": (SOURCE, "producer.override.enable.idempotence", "yes"),
    "source-admin-int": (SOURCE, "admin.override.request.timeout.ms", "1.5"),
}


def _validate_path(connector_class: str) -> str:
    return f"/connector-plugins/{connector_class}/config/validate"


def _config(connector_class: str, tmp: Path, name: str) -> dict[str, str]:
    config = {"connector.class": connector_class, "file": str(tmp / f"{name}.txt"), "topic": name}
    if connector_class == SINK:
        config = {**config, "topics": name}
        del config["topic"]
    else:
        # A source uses its admin client (and so its admin overrides) when it creates topics.
        config |= {
            "topic.creation.default.replication.factor": "1",
            "topic.creation.default.partitions": "1",
        }
    return config


@pytest.mark.parametrize("case", sorted(BAD_TYPES))
@pytest.mark.parametrize("put", [False, True], ids=["create", "put"])
def test_a_value_of_the_wrong_type_fails_the_request_as_in_kafka(
    copycat: Peer, kafka_connect: Peer, tmp_path: Path, case: str, put: bool
) -> None:
    connector_class, key, value = BAD_TYPES[case]
    answers = {}
    for peer in (kafka_connect, copycat):
        name = f"ovr-type-{peer.name.split()[0].lower()}-{uuid.uuid4().hex[:8]}"
        config = {**_config(connector_class, tmp_path, name), key: value}
        answers[peer.name] = create_refusal(peer, name, config, put=put)
    theirs = answers["Kafka Connect"]
    assert theirs[0] == 500, theirs
    assert answers["Copycat"] == theirs


@pytest.mark.parametrize("case", sorted(BAD_TYPES))
def test_validation_of_a_value_of_the_wrong_type_is_kafkas_500(
    copycat: Peer, kafka_connect: Peer, tmp_path: Path, case: str
) -> None:
    """Kafka's validate answers 500 with the parse error; its message names Java's exception
    class too, Copycat's is the message alone (as for a failing config provider)."""
    connector_class, key, value = BAD_TYPES[case]
    answers = {}
    for peer in (kafka_connect, copycat):
        name = f"ovr-validate-{uuid.uuid4().hex[:8]}"
        config = {**_config(connector_class, tmp_path, name), key: value, "name": name}
        with peer.client() as client:
            response = client.put(_validate_path(connector_class), json=config)
        answers[peer.name] = (response.status_code, response.json().get("message"))
    status, message = answers["Kafka Connect"]
    assert status == 500
    prefix = "org.apache.kafka.common.config.ConfigException: "
    assert message.startswith(prefix)
    assert answers["Copycat"] == (500, message[len(prefix) :])


# Values Kafka's type parse takes (trimmed numbers, booleans in any case), values only the
# client's validator refuses, keys no client knows: no validation error on either worker.
ACCEPTED = {
    "trimmed-int": (SINK, "consumer.override.max.poll.records", " 5 "),
    "boolean-any-case": (SINK, "consumer.override.check.crcs", "TRUE"),
    "validator-only": (SINK, "consumer.override.auto.offset.reset", "sometimes"),
    "unknown-key": (SOURCE, "producer.override.no.such.key", "x"),
    "double": (SOURCE, "producer.override.buffer.memory", "33554432"),
    "string-key": (SOURCE, "producer.override.acks", "maybe"),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_values_kafkas_type_parse_takes_pass_validation(
    copycat: Peer, kafka_connect: Peer, tmp_path: Path, case: str
) -> None:
    connector_class, key, value = ACCEPTED[case]
    answers = {}
    for peer in (kafka_connect, copycat):
        name = f"ovr-ok-{uuid.uuid4().hex[:8]}"
        config = {**_config(connector_class, tmp_path, name), key: value, "name": name}
        with peer.client() as client:
            response = client.put(_validate_path(connector_class), json=config)
        assert response.status_code == 200, f"{peer.name}: {response.text}"
        answers[peer.name] = response.json()["error_count"]
    assert answers == {"Kafka Connect": 0, "Copycat": 0}


INVALID_GROUP_ID = "The configured group.id should not be an empty string or whitespace."


@pytest.mark.parametrize("group", ["", " \t"], ids=["empty", "whitespace"])
def test_an_empty_group_id_override_fails_the_task_as_in_kafka(
    copycat: Peer, kafka_connect: Peer, tmp_path: Path, group: str
) -> None:
    """``consumer.override.group.id`` empty or blank: both accept the config and fail the
    sink's task with Kafka's InvalidGroupIdException text (librdkafka's consumer aborted the
    process that made it, which took the plugin host down, or the worker itself when the task's
    data path runs there), and the worker answers on."""
    traces = {}
    for peer in (kafka_connect, copycat):
        name = f"ovr-group-{peer.name.split()[0].lower()}-{uuid.uuid4().hex[:8]}"
        config = {**_config(SINK, tmp_path, name), "consumer.override.group.id": group}
        with peer.client() as client:
            create(client, name, config)
            try:
                status = _wait_failed(client, name)
            finally:
                delete(client, name)
            assert client.get("/connectors").status_code == 200
        traces[peer.name] = status["trace"]
    assert INVALID_GROUP_ID in traces["Kafka Connect"]
    assert INVALID_GROUP_ID in traces["Copycat"]
    assert "PluginHostCrashed" not in traces["Copycat"]


def _wait_failed(client: httpx.Client, name: str) -> dict[str, Any]:
    """The connector's first task's status once FAILED."""

    def failed() -> dict[str, Any] | None:
        response = client.get(f"/connectors/{name}/status")
        if response.status_code != 200:
            return None
        tasks = response.json()["tasks"]
        return next((t for t in tasks if t["state"] == "FAILED"), None)

    task: dict[str, Any] = wait_for(failed, SCENARIO_TIMEOUT_S, f"{name} FAILED")
    return task
