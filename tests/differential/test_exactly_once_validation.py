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
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import Peer, create_refusal, validation_errors
from tests.support.distributed import DistributedCluster
from tests.support.jvm import run_owner_pid
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


@pytest.fixture(scope="module")
def peers(
    apache_kafka: KafkaCluster, bundled_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Peer, Peer]]:
    """(Copycat, Kafka Connect): one distributed worker each, exactly-once support off."""
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
        yield Peer("Copycat", copycat.urls[0]), Peer("Kafka Connect", connect.url)
    finally:
        copycat.stop()
        connect.stop()


@pytest.mark.parametrize("case", CASES)
def test_validation_errors_are_kafkas(peers: tuple[Peer, Peer], case: str) -> None:
    ours, theirs = peers
    config = {"name": "eos-validation", **CASES[case]}
    assert validation_errors(ours, PLUGIN, config) == validation_errors(theirs, PLUGIN, config)


@pytest.mark.parametrize("put", [False, True], ids=["post", "put"])
@pytest.mark.parametrize("case", CASES)
def test_create_refusals_are_kafkas(peers: tuple[Peer, Peer], case: str, put: bool) -> None:
    ours, theirs = peers
    name = f"eos-{case.replace(' ', '-').replace(',', '').replace('(', '').replace(')', '')}"
    config = {"name": name, **CASES[case]}
    assert create_refusal(ours, name, config, put) == create_refusal(theirs, name, config, put)
