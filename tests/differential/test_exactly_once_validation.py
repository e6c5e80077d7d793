"""KIP-618 pre-flight validation of a source connector, on Copycat and on Apache Kafka Connect
4.1.1 distributed workers side by side, with exactly-once source support off on both workers.

A distributed worker checks ``exactly.once.support=required`` and ``transaction.boundary=
connector`` whatever its own ``exactly.once.source.support``: with the support not enabled, a
connector that requires it gets "This worker does not have exactly-once source support
enabled." (before the connector's own answer), and one that asks for connector-defined
boundaries the connector cannot define is refused all the same. ``config/validate`` must give
the same ``error_count`` and errors, and ``POST /connectors`` and ``PUT .../config`` the same
refusal. Found by an exploratory comparison: Copycat skipped both checks unless the worker had
the support enabled, and worded the boundary error its own way.

FileStreamSource serves as the connector on both: with a ``file`` it supports exactly-once, on
stdin it does not, and it cannot define transaction boundaries.

The same two workers also show what a create writes to the config topic: without an
``initial_state`` Kafka writes no ``target-state-<name>`` record (a connector without one is
started); Copycat wrote a STARTED one first. Found comparing the internal topics after runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import Peer, create_refusal, validation_errors
from tests.support.distributed import DistributedCluster
from tests.support.jvm import run_owner_pid
from tests.support.kafka import read_topic
from tests.support.kafka_connect import KafkaConnect

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

PLUGIN = "FileStreamSourceConnector"
BASE = {
    "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
    "tasks.max": "1",
    "topic": "eos-validation-topic",
}
WITH_FILE = {**BASE, "file": "/tmp/eos-validation.txt"}

CASES = {
    "required, file": {**WITH_FILE, "exactly.once.support": "required"},
    "required (upper case), file": {**WITH_FILE, "exactly.once.support": "REQUIRED"},
    "required, stdin": {**BASE, "exactly.once.support": "required"},
    "connector boundary": {**WITH_FILE, "transaction.boundary": "connector"},
    "required, connector boundary, stdin": {
        **BASE,
        "exactly.once.support": "required",
        "transaction.boundary": "Connector",
    },
    "requested, interval": {**WITH_FILE, "transaction.boundary": "interval"},
}


@dataclass(frozen=True)
class Workers:
    copycat: Peer
    kafka_connect: Peer
    # Each one's config topic.
    copycat_configs: str
    kafka_connect_configs: str


@pytest.fixture(scope="module")
def workers(
    apache_kafka: KafkaCluster, bundled_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Workers]:
    """One distributed worker each, exactly-once support off."""
    off = {"exactly.once.source.support": "disabled"}
    connect = KafkaConnect(
        tmp_path_factory.mktemp("kafka-connect"),
        apache_kafka.bootstrap_servers,
        mode="distributed",
        overrides=off,
    ).start(run_owner_pid())
    copycat = DistributedCluster(
        tmp_path_factory.mktemp("copycat"),
        apache_kafka.bootstrap_servers,
        bundled_plugin_path,
        1,
        extra=off,
    )
    try:
        copycat.start()
        yield Workers(
            Peer("Copycat", copycat.urls[0]),
            Peer("Kafka Connect", connect.url),
            f"{copycat.group}-configs",
            f"{connect.group_id}-configs",
        )
    finally:
        copycat.stop()
        connect.stop()


@pytest.mark.parametrize("case", CASES)
def test_validation_errors_are_kafkas(workers: Workers, case: str) -> None:
    ours, theirs = workers.copycat, workers.kafka_connect
    config = {"name": "eos-validation", **CASES[case]}
    assert validation_errors(ours, PLUGIN, config) == validation_errors(theirs, PLUGIN, config)


@pytest.mark.parametrize("put", [False, True], ids=["post", "put"])
@pytest.mark.parametrize("case", CASES)
def test_create_refusals_are_kafkas(workers: Workers, case: str, put: bool) -> None:
    ours, theirs = workers.copycat, workers.kafka_connect
    name = f"eos-{case.replace(' ', '-').replace(',', '').replace('(', '').replace(')', '')}"
    config = {"name": name, **CASES[case]}
    assert create_refusal(ours, name, config, put) == create_refusal(theirs, name, config, put)


@pytest.mark.parametrize(
    "initial_state", [None, "RUNNING", "PAUSED"], ids=["no-initial-state", "running", "paused"]
)
def test_create_writes_kafkas_config_records(
    workers: Workers, apache_kafka: KafkaCluster, initial_state: str | None
) -> None:
    """The keys a create writes to the config topic, in order (a target state only when the
    request gives one)."""
    name = f"eos-records-{initial_state or 'none'}".lower()
    body: dict[str, object] = {"name": name, "config": {**WITH_FILE, "name": name}}
    if initial_state is not None:
        body["initial_state"] = initial_state
    written = {}
    for peer, topic in (
        (workers.copycat, workers.copycat_configs),
        (workers.kafka_connect, workers.kafka_connect_configs),
    ):
        with peer.client() as client:
            response = client.post("/connectors", json=body)
            assert response.status_code == 201, f"{peer.name}: {response.text}"
            client.delete(f"/connectors/{name}")
        # The create's records, up to the first task config or commit (which come later, from
        # the leader's reconfiguration, and not for a connector created paused).
        keys = [
            (m.key() or b"").decode()
            for m in read_topic(apache_kafka.bootstrap_servers, topic)
            if (m.key() or b"").decode().endswith(name) and m.value() is not None
        ]
        written[peer.name] = [k for k in keys if k.split("-")[0] in ("target", "connector")][:2]
    assert written["Copycat"] == written["Kafka Connect"]


def test_an_offsets_change_the_connector_refuses_is_kafkas_500(
    workers: Workers, tmp_path: Path
) -> None:
    """A connector's ``alter_offsets`` raising ConnectException (FileStreamSource: a position
    that is no number) fails the PATCH as Kafka's does: a 500 with the connector's own message,
    not wrapped. Copycat's FileStreamSource says Kafka's sentence, then which partition's
    offset it was."""
    source = tmp_path / "in.txt"
    source.write_text("a\n")
    name = "eos-offsets-refused"
    config = {**BASE, "file": str(source), "name": name}
    patch = {"offsets": [{"partition": {"filename": str(source)}, "offset": {"position": "x"}}]}
    answers = {}
    for peer in (workers.copycat, workers.kafka_connect):
        with peer.client() as client:
            created = client.post(
                "/connectors", json={"name": name, "config": config, "initial_state": "STOPPED"}
            )
            assert created.status_code == 201, f"{peer.name}: {created.text}"
            try:
                response = client.patch(f"/connectors/{name}/offsets", json=patch)
            finally:
                client.delete(f"/connectors/{name}")
        answers[peer.name] = (response.status_code, response.json()["message"])
    assert answers["Copycat"][0] == answers["Kafka Connect"][0] == 500, answers
    assert answers["Copycat"][1].startswith(answers["Kafka Connect"][1] + " ("), answers
