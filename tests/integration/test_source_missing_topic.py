"""A source task whose topic does not exist, on a broker that does not create topics: it stays
RUNNING and sends nothing until the topic is created, as Kafka Connect's (whose producer blocks
send() for ever, max.block.ms=Long.MAX_VALUE), then delivers every record without a restart;
and a stop while it waits is prompt and commits no offset of a record never sent.

A topic deleted while a task writes to it is another matter: Kafka's producer waits for it to
come back (send() blocks on metadata, its delivery timeout is unbounded), so no line is lost.
librdkafka gives the queued records up once the cluster says the topic is gone ("Local:
Unknown partition"); under errors.tolerance=all Copycat skipped them as records the broker
refused and committed its offsets past them (a 90 s deletion lost 3,945 lines with the task
RUNNING, found side by side with Kafka Connect 4.1.1). Such a record is not refused, its topic
is missing: the task fails, its offsets stop at the last acknowledged record, and a restart
sends the rest."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.plugins import PluginCatalogue
from tests.support.apache_kafka import KafkaCluster, needs_own_apache_kafka, own_apache_kafka
from tests.support.differential import FILE_SOURCE, read_records, task_state
from tests.support.kafka import read_all, wait_for
from tests.support.rest import RestWorker
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


def test_records_for_a_deleted_topic_fail_the_task_under_tolerance_all(
    no_auto_create: KafkaCluster,
    bundled_plugin_path: Path,
    tmp_path: Path,
) -> None:
    broker, topic = no_auto_create, "deleted-under-source"
    broker.create_topic(topic, 1)
    source = tmp_path / "in.txt"
    source.write_text("".join(f"a{i}\n" for i in range(5)))
    with RestWorker(tmp_path, broker.bootstrap_servers, bundled_plugin_path) as worker:
        config = {
            "connector.class": FILE_SOURCE,
            "file": str(source),
            "topic": topic,
            "tasks.max": "1",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "errors.tolerance": "all",
            # librdkafka gives records for a vanished topic up after these (30 s and 5 min by
            # default, counted from the producer's first use of the topic).
            "producer.override.topic.metadata.propagation.max.ms": "1000",
            "producer.override.topic.metadata.refresh.interval.ms": "1000",
        }
        with worker.client() as client:
            response = client.post("/connectors", json={"name": "deleted", "config": config})
            assert response.status_code == 201, response.text
            assert len(read_records(broker.bootstrap_servers, topic, 5)) == 5
            broker.delete_topics([topic])
            with source.open("a") as appended:
                appended.write("".join(f"b{i}\n" for i in range(5)))

            def outcome() -> str | None:
                if task_state(client, "deleted", "FAILED") is not None:
                    return "FAILED"
                if any("failed to send" in line for line in worker.log_lines):
                    return "skipped"
                return None

            assert wait_for(outcome, 120, "the queued records given up") == "FAILED"
            status = task_state(client, "deleted", "FAILED")
            assert status is not None
            assert "Unknown partition" in status["tasks"][0]["trace"]
            offsets = client.get("/connectors/deleted/offsets").json()["offsets"]
            # Only the acknowledged lines ("a0".."a4", 3 bytes each) are committed.
            assert [o["offset"] for o in offsets] in ([], [{"position": 15}])
