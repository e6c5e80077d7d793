"""A sink created before its topics exist waits for them, as Kafka Connect's does.

Real dev broker, real plugin host (the bundled FileStreamSink). Before the fix the task failed
within a second of starting, with ``SystemError: <method 'count' of 'list' objects> returned a
result with an exception set`` (comparing librdkafka's UNKNOWN_TOPIC_OR_PART error with None).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from core.offsets import MemoryOffsetStore
from core.plugins import PluginCatalogue
from core.status import State
from core.worker import Worker
from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import produce, wait_for

pytestmark = pytest.mark.integration

# The task used to fail on its first consume(), well under a second after start. Waiting this
# long before the topic exists leaves room for the consumer's group join (about half of
# session.timeout.ms on the dev broker) and several metadata lookups.
WAIT_BEFORE_TOPIC_S = 8.0
RECORDS = 500


def _worker(catalogue: PluginCatalogue, bootstrap: str) -> Worker:
    return Worker(
        "w1",
        {
            "key.converter": "StringConverter",
            "value.converter": "StringConverter",
            "offset.flush.interval.ms": "500",
            "consumer.session.timeout.ms": "6000",
            "consumer.heartbeat.interval.ms": "1000",
        },
        catalogue,
        MemoryOffsetStore(),
        client_props={"bootstrap.servers": bootstrap},
    )


def _sink_before_topic(
    catalogue: PluginCatalogue,
    bootstrap: str,
    broker: KafkaCluster,
    topic: str,
    subscription: dict[str, str],
    out: Path,
) -> None:
    name = f"early-{topic}"
    worker = _worker(catalogue, bootstrap)
    worker.start_connector(
        name,
        {"name": name, "connector.class": "FileStreamSink", "file": str(out), **subscription},
    )
    assert worker.start_task(name, 0, worker.task_configs(name)[0]).wait_started(60)
    try:
        deadline = time.monotonic() + WAIT_BEFORE_TOPIC_S
        while time.monotonic() < deadline:  # RUNNING throughout, not only at the end
            status = worker.status.task(name, 0)
            assert status is not None and status.state is State.RUNNING, status
            time.sleep(0.2)
        broker.create_topic(topic, 1)
        produce(bootstrap, topic, (f"value-{i}".encode() for i in range(RECORDS)))
        wait_for(
            lambda: out.exists() and out.read_text().count("\n") >= RECORDS,
            60,
            f"{RECORDS} records in {out}",
        )
        assert out.read_text().splitlines() == [f"value-{i}" for i in range(RECORDS)]
        status = worker.status.task(name, 0)
        assert status is not None and status.state is State.RUNNING, status
    finally:
        worker.stop()


def test_sink_on_a_topic_created_later_receives_every_record(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    broker: KafkaCluster,
    topic_name: str,
    tmp_path: Path,
) -> None:
    _sink_before_topic(
        catalogue,
        bootstrap_servers,
        broker,
        topic_name,
        {"topics": topic_name},
        tmp_path / "out.txt",
    )


def test_regex_sink_picks_up_a_matching_topic_created_later(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    broker: KafkaCluster,
    topic_name: str,
    tmp_path: Path,
) -> None:
    # No consumer override: the default metadata refresh of sink consumers must find it.
    _sink_before_topic(
        catalogue,
        bootstrap_servers,
        broker,
        topic_name,
        {"topics.regex": topic_name + ".*"},
        tmp_path / "out.txt",
    )
