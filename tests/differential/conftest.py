"""Fixtures for differential tests: Copycat and Apache Kafka Connect side by side.

Both workers talk to the run's Apache Kafka. ``kafka_connect`` is one ``connect-standalone``
JVM for the whole run, shared by the xdist workers like the broker (a JVM per test module
would cost ~8 s of both cores each); ``copycat`` is an in-process standalone Copycat worker
with its REST server, one per test module. Tests give their connectors names no other test
uses, since both workers are shared.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import (
    DistributedPeers,
    Peer,
    copycat_peer,
    distributed_peers,
)
from tests.support.kafka_connect import KafkaConnect


@pytest.fixture(scope="session", autouse=True)
def _needs_java() -> None:
    """Skip (before any JVM starts) when the run was asked to stay on the dev broker."""
    if os.environ.get("COPYCAT_TEST_BROKER") == "dev-broker":
        pytest.skip("differential tests need Apache Kafka and Kafka Connect (Java)")


@pytest.fixture(scope="session")
def kafka_connect(apache_kafka: KafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> Peer:
    """The run's Apache Kafka Connect standalone worker (started on first use)."""
    from tests.support.jvm import run_owner_pid, run_root, shared

    def start(workdir: Path) -> dict[str, object]:
        worker = KafkaConnect(workdir, apache_kafka.bootstrap_servers).start(run_owner_pid())
        return {"url": worker.url, "pid": worker.pid}

    described = shared(run_root(tmp_path_factory.getbasetemp()), "kafka-connect", start)
    return Peer("Kafka Connect", str(described["url"]))


@pytest.fixture(scope="module")
def copycat(
    apache_kafka: KafkaCluster,
    tmp_path_factory: pytest.TempPathFactory,
    bundled_plugin_path: Path,
) -> Iterator[Peer]:
    """A Copycat standalone worker (REST on a free port) on the same Apache Kafka, with
    Kafka Connect's worker defaults (see tests/support/kafka_connect.py), so that a connector
    config without converters means the same on both."""
    with copycat_peer(
        apache_kafka.bootstrap_servers,
        bundled_plugin_path,
        tmp_path_factory,
        {"offset.flush.interval.ms": "1000"},
    ) as peer:
        yield peer


@pytest.fixture(scope="module")
def distributed_pair(
    apache_kafka: KafkaCluster, bundled_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DistributedPeers]:
    """One distributed worker of each implementation, for the module's tests."""
    with distributed_peers(
        apache_kafka.bootstrap_servers, bundled_plugin_path, tmp_path_factory
    ) as peers:
        yield peers
