"""Credentials the brokers refuse fail the task (or the worker's start) promptly, saying so.

A real Apache Kafka with a SASL_PLAINTEXT listener (the ``sasl_kafka`` fixture), a real worker
with real plugin hosts, the worker's own clients logged in as the broker's user, and a
connector overriding its client's password (``connector.client.config.override.policy=All``).
librdkafka reports a refused login only to the client's error callback and retries it for
ever: the sink task stayed RUNNING for good, the source failed after 5 minutes with "Message
timed out" for a record to "tpsrc-None", and a worker with a wrong password waited out
default.api.timeout.ms before exiting with "Broker transport failure". Kafka Connect 4.1.1
fails both tasks within seconds with the SaslAuthenticationException in the trace.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from core.kafka import KafkaAuthenticationError, kafka_cluster_id
from core.offsets import MemoryOffsetStore
from core.plugins import PluginCatalogue
from core.status import State
from core.worker import Worker
from tests.support.apache_kafka import SASL_PASSWORD, SASL_USER, KafkaCluster
from tests.support.kafka import read_all, wait_for
from tests.support.workers import WORKER_PROPS

pytestmark = pytest.mark.integration

WRONG_PASSWORD = "WrongPw-not-in-any-trace"
# Kafka Connect fails both tasks within 20 s; librdkafka retries a refused login about every
# 300 ms, so a task sees the failure within its first second or two of polling.
FAILS_WITHIN_S = 30
# A worker start-up check given this long must not wait it out.
CLUSTER_CHECK_TIMEOUT_MS = 60_000


def sasl_client(servers: str, password: str = SASL_PASSWORD) -> dict[str, str]:
    return {
        "bootstrap.servers": servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": SASL_USER,
        "sasl.password": password,
    }


@pytest.fixture
def worker(sasl_kafka: dict[str, str], catalogue: PluginCatalogue) -> Iterator[Worker]:
    worker = Worker(
        "w1",
        {**WORKER_PROPS, "connector.client.config.override.policy": "All"},
        catalogue,
        MemoryOffsetStore(),
        client_props=sasl_client(sasl_kafka["sasl"]),
    )
    try:
        yield worker
    finally:
        worker.stop()


def start(worker: Worker, name: str, props: dict[str, str]) -> None:
    worker.start_connector(name, {"name": name, **props})
    for task_id, config in enumerate(worker.task_configs(name)):
        assert worker.start_task(name, task_id, config).wait_started(60)


def failed_trace(worker: Worker, name: str) -> str:
    started = time.monotonic()
    wait_for(
        lambda: worker.status.task(name, 0).state is State.FAILED,
        FAILS_WITHIN_S,
        f"{name}'s task FAILED",
    )
    assert time.monotonic() - started < FAILS_WITHIN_S
    trace = worker.status.task(name, 0).trace or ""
    assert "KafkaAuthenticationError" in trace, trace
    assert "Authentication failed: Invalid username or password" in trace, trace
    assert WRONG_PASSWORD not in trace
    return trace


def test_a_sink_whose_consumer_cannot_log_in_fails(
    worker: Worker, sasl_kafka: dict[str, str], tmp_path: Path
) -> None:
    topic = f"auth-sink-{uuid.uuid4().hex[:8]}"
    KafkaCluster(sasl_kafka["plaintext"]).create_topic(topic, 1)
    start(
        worker,
        "badsink",
        {
            "connector.class": "FileStreamSink",
            "topics": topic,
            "file": str(tmp_path / "out.txt"),
            "consumer.override.sasl.password": WRONG_PASSWORD,
        },
    )
    trace = failed_trace(worker, "badsink")
    assert "consumer" in trace, trace


def test_a_source_whose_producer_cannot_log_in_fails(
    worker: Worker, sasl_kafka: dict[str, str], tmp_path: Path
) -> None:
    topic = f"auth-source-{uuid.uuid4().hex[:8]}"
    data = tmp_path / "in.txt"
    data.write_text("a\nb\nc\n")
    start(
        worker,
        "badsource",
        {
            "connector.class": "FileStreamSource",
            "topic": topic,
            "file": str(data),
            "producer.override.sasl.password": WRONG_PASSWORD,
        },
    )
    trace = failed_trace(worker, "badsource")
    assert "producer" in trace, trace
    assert "None" not in trace.splitlines()[0], trace


def test_a_dead_letter_queue_producer_that_cannot_log_in_fails_its_sink(
    worker: Worker, sasl_kafka: dict[str, str], tmp_path: Path
) -> None:
    """The sink's consumer logs in; its DLQ producer, with its own password, cannot."""
    topic = f"auth-dlq-{uuid.uuid4().hex[:8]}"
    cluster = KafkaCluster(sasl_kafka["plaintext"])
    cluster.create_topic(topic, 1)
    producer = Producer({"bootstrap.servers": sasl_kafka["plaintext"]})
    producer.produce(topic, b"not json")
    producer.flush(10)
    start(
        worker,
        "baddlq",
        {
            "connector.class": "FileStreamSink",
            "topics": topic,
            "file": str(tmp_path / "out.txt"),
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": f"{topic}-dlq",
            "errors.deadletterqueue.topic.replication.factor": "1",
            "admin.override.sasl.password": SASL_PASSWORD,
            "producer.override.sasl.password": WRONG_PASSWORD,
        },
    )
    failed_trace(worker, "baddlq")


def test_right_credentials_still_copy_records(
    worker: Worker, sasl_kafka: dict[str, str], tmp_path: Path
) -> None:
    """The control: the same worker and listener, no override, every line arrives."""
    topic = f"auth-ok-{uuid.uuid4().hex[:8]}"
    data = tmp_path / "in.txt"
    data.write_text("a\nb\nc\n")
    start(
        worker,
        "goodsource",
        {"connector.class": "FileStreamSource", "topic": topic, "file": str(data)},
    )
    values = [m.value() for m in read_all(sasl_kafka["plaintext"], topic, 3)]
    assert values == [b"a", b"b", b"c"]
    assert worker.status.task("goodsource", 0).state is State.RUNNING


def test_a_worker_whose_password_is_refused_fails_its_cluster_check_at_once(
    sasl_kafka: dict[str, str],
) -> None:
    started = time.monotonic()
    with pytest.raises(KafkaAuthenticationError) as raised:
        kafka_cluster_id(
            sasl_client(sasl_kafka["sasl"], WRONG_PASSWORD),
            CLUSTER_CHECK_TIMEOUT_MS,
            "default.api.timeout.ms",
        )
    assert time.monotonic() - started < FAILS_WITHIN_S
    message = str(raised.value)
    assert "Authentication failed: Invalid username or password" in message, message
    assert WRONG_PASSWORD not in message
    assert kafka_cluster_id(sasl_client(sasl_kafka["sasl"]), 30_000, "default.api.timeout.ms")
