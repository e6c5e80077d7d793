"""The dead letter queue for the same poison input, on Copycat and on Apache Kafka Connect.

One input topic holds good JSON values and poison ones (not JSON, truncated JSON, invalid
UTF-8), some with keys and headers. A FileStreamSink with JsonConverter and
``errors.tolerance=all`` runs on each worker, each with its own DLQ topic. The DLQ records
(original key, value and headers, then Kafka's ``__connect.errors.*`` headers) and the sink's
output file must be the same. Normalised, because they cannot be equal: the connector name
(each worker has its own) and the stack trace (Java's frames vs Python's). The class name
headers are compared exactly: ours name Kafka's classes (the JsonConverter configured by
its Kafka name, Kafka's DataException), as DLQ tooling filters on them. Normalised as a
deliberate deviation (docs/architecture.md, "Differential checks"): our exception message
may add the parser's reason after Kafka's own message.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Producer

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import (
    Peer,
    Record,
    create,
    delete,
    differences,
    dlq_sink_config,
    normalised,
    read_records,
    reconcile_messages,
    run_dlq_sink,
    written,
)
from tests.support.kafka import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

# (key, value, headers): good values of every JSON type FileStreamSink writes as text, and
# poison between them.
INPUT: list[tuple[bytes | None, bytes, list[tuple[str, str | bytes | None]]]] = [
    (None, b'"hello"', []),
    (b"k1", b"not json", [("trace-id", b"abc")]),
    (None, b"42", []),
    (None, b'{"unterminated": ', []),
    (b"k2", b"true", [("h", b"1")]),
    (None, b"\xff\xfe invalid utf-8", []),
    (None, b"1.5", []),
    (None, b"null", []),
    (b"k3", b"[1, 2", [("a", b"x"), ("b", b"y")]),
    (None, b'[1, true, "a", null, [2]]', []),
    (None, b'"the end"', []),
]
POISON = 4
GOOD = len(INPUT) - POISON


def _run(
    peer: Peer, broker: KafkaCluster, topic: str, tmp: Path, tolerance: str = "all"
) -> tuple[list[Record], str]:
    """The DLQ records and the output file; with ``tolerance`` none, the DLQ's one record and
    the task's state once it failed."""
    settings = {
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    }
    if tolerance == "all":
        return run_dlq_sink(
            peer, broker.bootstrap_servers, topic, tmp, "dlq", settings, POISON, GOOD
        )
    name = f"dlq-{peer.name.split()[0].lower()}-{uuid.uuid4().hex[:8]}"
    dlq = f"{name}-dlq"
    with peer.client() as client:
        create(
            client,
            name,
            {**dlq_sink_config(topic, tmp / f"{name}.out", dlq, tolerance), **settings},
        )
        try:
            state = wait_for(
                lambda: _task_state(client, name) == "FAILED" and "FAILED",
                90,
                f"{peer.name} failing the task",
            )
            dead = read_records(broker.bootstrap_servers, dlq, 1)
        finally:
            delete(client, name)
    return normalised(dead, name), state


def _task_state(client: httpx.Client, name: str) -> str | None:
    response = client.get(f"/connectors/{name}/status")
    tasks = response.json().get("tasks") if response.status_code == 200 else None
    return tasks[0]["state"] if tasks else None


def test_with_tolerance_none_the_first_poison_record_reaches_the_dlq_before_the_task_fails(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    """Kafka's RetryWithToleranceOperator reports the record (DLQ, with its headers) and only
    then fails the task with "Tolerance exceeded in error handler"."""
    topic = f"dlq-none-in-{uuid.uuid4().hex[:8]}"
    apache_kafka.create_topic(topic, 1)
    producer = Producer({"bootstrap.servers": apache_kafka.bootstrap_servers})
    for key, value, headers in INPUT:
        producer.produce(topic, value, key, headers=headers)
    assert producer.flush(30) == 0

    ours, our_state = _run(copycat, apache_kafka, topic, tmp_path, "none")
    theirs, their_state = _run(kafka_connect, apache_kafka, topic, tmp_path, "none")

    assert our_state == their_state == "FAILED"
    assert [value for _, value, _ in theirs] == [b"not json"]
    assert differences(reconcile_messages(ours, theirs), theirs) == []


def test_poison_records_reach_the_dlq_with_the_same_headers(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    topic = f"dlq-in-{uuid.uuid4().hex[:8]}"
    apache_kafka.create_topic(topic, 1)
    producer = Producer({"bootstrap.servers": apache_kafka.bootstrap_servers})
    for key, value, headers in INPUT:
        producer.produce(topic, value, key, headers=headers)
    assert producer.flush(30) == 0

    ours, our_lines = _run(copycat, apache_kafka, topic, tmp_path)
    theirs, their_lines = _run(kafka_connect, apache_kafka, topic, tmp_path)

    assert len(theirs) == POISON
    assert differences(reconcile_messages(ours, theirs), theirs) == []
    assert our_lines == their_lines


def test_a_float32_beyond_a_float_is_infinity_and_the_batch_poison_still_reaches_the_dlq(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    """A FLOAT32 payload of 1e39 is a Java float's Infinity: FileStreamSink writes it and the
    task runs on. Copycat's sink failed printing it (decimal.InvalidOperation), and lost the
    poison record before it in the same batch, never sent to the DLQ."""
    topic = f"dlq-f32-in-{uuid.uuid4().hex[:8]}"
    apache_kafka.create_topic(topic, 1)
    values = [
        b'{"schema":{"type":"int32"},"payload":1}',
        b"not json",
        b'{"schema":{"type":"float"},"payload":1e39}',
        b'{"schema":{"type":"float"},"payload":-1e39}',
        b'{"schema":{"type":"float"},"payload":3.5}',
    ]
    producer = Producer({"bootstrap.servers": apache_kafka.bootstrap_servers})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0

    def run(peer: Peer) -> tuple[list[Record], str, str | None]:
        name = f"dlq-f32-{peer.name.split()[0].lower()}-{uuid.uuid4().hex[:8]}"
        output = tmp_path / f"{name}.out"
        config = {
            **dlq_sink_config(topic, output, f"{name}-dlq"),
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        }
        with peer.client() as client:
            create(client, name, config)
            try:
                dead = read_records(apache_kafka.bootstrap_servers, f"{name}-dlq", 1)
                lines = written(output, 4, peer.name)
                state = _task_state(client, name)
            finally:
                delete(client, name)
        return normalised(dead, name), lines, state

    ours, our_lines, our_state = run(copycat)
    theirs, their_lines, their_state = run(kafka_connect)

    assert their_lines.splitlines() == ["1", "Infinity", "-Infinity", "3.5"]
    assert our_lines == their_lines
    assert our_state == their_state == "RUNNING"
    assert [value for _, value, _ in theirs] == [b"not json"]
    assert differences(reconcile_messages(ours, theirs), theirs) == []
