"""A source task whose topic does not exist, on a broker that does not create topics: it stays
RUNNING and sends nothing until the topic is created, as Kafka Connect's (whose producer blocks
send() for ever, max.block.ms=Long.MAX_VALUE), then delivers every record without a restart;
and a stop while it waits is prompt and commits no offset of a record never sent."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.plugins import PluginCatalogue
from tests.support.apache_kafka import KafkaCluster, needs_own_apache_kafka, own_apache_kafka
from tests.support.kafka import read_all
from tests.support.workers import in_process_worker, start_connector

pytestmark = [
    pytest.mark.integration,
    needs_own_apache_kafka(
        "starts an Apache Kafka of its own (one that does not auto-create topics)"
    ),
]

# librdkafka fails records queued for a topic it has not seen after
# topic.metadata.propagation.max.ms, 30 s by default: the wait must outlast it.
PAST_PROPAGATION_S = 35.0
RECORDS = 100


@pytest.fixture(scope="module")
def no_auto_create(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """Its own broker: the run's shared one auto-creates topics (tests rely on that)."""
    with own_apache_kafka(
        tmp_path_factory.mktemp("no-auto-create"), {"auto.create.topics.enable": "false"}
    ) as kafka:
        yield KafkaCluster(kafka.bootstrap_servers)


def _state(worker: object, name: str) -> str:
    return worker.status.task(name, 0).state.value  # type: ignore[attr-defined]


def test_a_source_waits_for_its_missing_topic_and_delivers_once_it_is_created(
    no_auto_create: KafkaCluster,
    bundled_plugin_path: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="copycat.source")
    catalogue = PluginCatalogue.scan([bundled_plugin_path])
    bootstrap = no_auto_create.bootstrap_servers
    # (b) a default worker, the connector without topic.creation.*: delivered once created.
    waits = in_process_worker(catalogue, bootstrap, **{"task.shutdown.graceful.timeout.ms": "5000"})
    # (a) topic.creation.enable=false: stopped while it waits.
    stops = in_process_worker(
        catalogue,
        bootstrap,
        **{"topic.creation.enable": "false", "task.shutdown.graceful.timeout.ms": "5000"},
    )
    data = tmp_path / "in.txt"
    data.write_text("".join(f"line {i}\n" for i in range(RECORDS)))
    source = {"connector.class": "FileStreamSource", "file": str(data)}
    try:
        start_connector(waits, "waits", {**source, "topic": "missing-then-created"})
        start_connector(stops, "stops", {**source, "topic": "missing-then-stopped"})
        time.sleep(PAST_PROPAGATION_S)
        assert _state(waits, "waits") == "RUNNING"
        assert _state(stops, "stops") == "RUNNING"
        # Logged after 5 s, then every 30 s, counting the wait (the task runs in its plugin
        # host, whose driver ends each wait after a second: the count goes on across them).
        warned = [
            r.getMessage()
            for r in caplog.records
            if "'missing-then-created' does not exist" in r.getMessage()
        ]
        assert 1 <= len(warned) <= 2, warned
        assert warned[0].endswith(("(waiting 5 s so far)", "(waiting 6 s so far)")), warned
        assert waits.offsets.connector_offsets("waits") == []
        assert stops.offsets.connector_offsets("stops") == []

        runner = stops.connectors["stops"].tasks[0]
        started = time.monotonic()
        stops.stop_connector("stops")
        took = time.monotonic() - started
        assert took < 5, f"a stop while waiting for the topic took {took:.1f} s"
        assert not runner.is_alive()
        assert stops.offsets.connector_offsets("stops") == []  # nothing was sent

        no_auto_create.create_topic("missing-then-created", 1)
        values = [m.value() for m in read_all(bootstrap, "missing-then-created", RECORDS)]
        assert values == [f"line {i}".encode() for i in range(RECORDS)]
        assert any("'missing-then-created' exists now" in r.getMessage() for r in caplog.records)
        assert _state(waits, "waits") == "RUNNING"
        deadline = time.monotonic() + 30
        expected = [({"filename": str(data)}, {"position": data.stat().st_size})]
        while waits.offsets.connector_offsets("waits") != expected:
            assert time.monotonic() < deadline, waits.offsets.connector_offsets("waits")
            time.sleep(0.1)
    finally:
        waits.stop()
        stops.stop()
