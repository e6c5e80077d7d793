"""JsonConverter edge inputs through FileStreamSink, on Copycat and on Kafka Connect 4.1.1.

An empty or whitespace-only value with ``schemas.enable=true`` is Kafka's missing-envelope
DataException (Copycat said "Expecting value: line 1 column 1"); schemaless numbers at a
long's limits are written alike (one beyond a long is not: docs/operator-guide.md).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.differential.test_dead_letter_queue import _normalised, _written
from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import Peer, Record, create, delete, differences, read_records

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]


def _run(
    peer: Peer, broker: KafkaCluster, topic: str, tmp: Path, schemas: bool, dead: int, lines: int
) -> tuple[list[Record], str]:
    name = f"json-{peer.name.split()[0].lower()}-{uuid.uuid4().hex[:8]}"
    dlq = f"{name}-dlq"
    output = tmp / f"{name}.out"
    config = {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "tasks.max": "1",
        "topics": topic,
        "file": str(output),
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": str(schemas).lower(),
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true",
    }
    with peer.client() as client:
        create(client, name, config)
        try:
            records = read_records(broker.bootstrap_servers, dlq, dead) if dead else []
            text = _written(output, lines, peer.name)
        finally:
            delete(client, name)
    return _normalised(records, name), text


@pytest.mark.parametrize(
    ("values", "schemas", "dead", "lines"),
    [
        pytest.param(
            [b"", b" \n", b'{"schema":{"type":"int32"},"payload":7}'], True, 2, 1, id="empty"
        ),
        pytest.param(
            [b"9223372036854775807", b"-9223372036854775808", b'{"a":[1.5,7]}', b"null"],
            False,
            0,
            4,
            id="schemaless-numbers",
        ),
    ],
)
def test_json_converter_edges_as_kafkas(
    copycat: Peer,
    kafka_connect: Peer,
    apache_kafka: KafkaCluster,
    tmp_path: Path,
    values: list[bytes],
    schemas: bool,
    dead: int,
    lines: int,
) -> None:
    topic = f"json-in-{uuid.uuid4().hex[:8]}"
    apache_kafka.create_topic(topic, 1)
    producer = Producer({"bootstrap.servers": apache_kafka.bootstrap_servers})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0

    ours, our_text = _run(copycat, apache_kafka, topic, tmp_path, schemas, dead, lines)
    theirs, their_text = _run(kafka_connect, apache_kafka, topic, tmp_path, schemas, dead, lines)

    assert len(theirs) == dead
    assert differences(ours, theirs) == []
    assert our_text == their_text
