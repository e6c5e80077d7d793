"""Record headers on Copycat and on Apache Kafka Connect 4.1.1, side by side.

A source's headers go through the header converter into the topic: InsertHeader literals of
every kind Kafka's ``Values.parseString`` types (numbers, booleans, arrays, maps, dates,
quoted strings, the empty string, ``null``), HeaderFrom copy and move (a non-ASCII header
key, duplicate keys), DropHeaders, each with SimpleHeaderConverter (the default),
StringConverter and JsonConverter with and without schemas: every header's bytes must be
the same. A sink reading headers its JsonConverter cannot read sends the records to the DLQ
with the same ``__connect.errors.*`` headers, and so does HeaderFrom on a sink. Found by an
exploratory comparison: HeaderFrom on a struct without the field failed with our own
DataException where Kafka's fails with a NullPointerException (fixed). Kept and documented
(docs/operator-guide.md): an empty or mixed array/map literal, which Kafka types as an
ARRAY/MAP with no element schema and Copycat with no schema; only JsonConverter with schemas
shows it, so the literals here leave it out.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import (
    Peer,
    Record,
    create,
    delete,
    differences,
    read_records,
    reconcile_messages,
    run_dlq_sink,
    wait_running,
)

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

T = "org.apache.kafka.connect.transforms."
JSON = "org.apache.kafka.connect.json.JsonConverter"

LITERALS = [
    "42",
    "true",
    "[1,2]",
    '{"a":1}',
    "3.14",
    '"quoted"',
    "",
    "null",
    "-129",
    "1e400",
    "9223372036854775808",
    "2024-01-02",
    "2024-01-02T03:04:05.678Z",
    "12:30:00",
    "[1,2.5]",
    '{"a":[1]}',
    "[1,null]",
    "   padded  ",
]

HEADER_CONVERTERS = {
    "simple": {},
    "string": {"header.converter": "org.apache.kafka.connect.storage.StringConverter"},
    "json-schemas": {"header.converter": JSON, "header.converter.schemas.enable": "true"},
    "json-schemaless": {"header.converter": JSON, "header.converter.schemas.enable": "false"},
}

# Lines become {line, n} structs; HeaderFrom copies both, then moves them under a header
# name that repeats and one that is not ASCII; DropHeaders takes the first copy and a name
# no record has; then one InsertHeader per literal.
CHAIN = {
    "transforms.hoist.type": T + "HoistField$Value",
    "transforms.hoist.field": "line",
    "transforms.n.type": T + "InsertField$Value",
    "transforms.n.static.field": "n",
    "transforms.n.static.value": "7",
    "transforms.cast.type": T + "Cast$Value",
    "transforms.cast.spec": "n:int32",
    "transforms.copy.type": T + "HeaderFrom$Value",
    "transforms.copy.fields": "line,n",
    "transforms.copy.headers": "hl,hn",
    "transforms.copy.operation": "copy",
    "transforms.move.type": T + "HeaderFrom$Value",
    "transforms.move.fields": "n,line",
    "transforms.move.headers": "hn,ключ",
    "transforms.move.operation": "move",
    "transforms.drop.type": T + "DropHeaders",
    "transforms.drop.headers": "hl,absent",
    **{f"transforms.l{i}.type": T + "InsertHeader" for i in range(len(LITERALS))},
    **{f"transforms.l{i}.header": f"lit{i}" for i in range(len(LITERALS))},
    **{f"transforms.l{i}.value.literal": literal for i, literal in enumerate(LITERALS)},
    "transforms": ",".join(
        ["hoist", "n", "cast", "copy", "move", "drop"] + [f"l{i}" for i in range(len(LITERALS))]
    ),
}

LINES = ["hello", "42", "", "déjà [1,2]"]


def _source(peer: Peer, broker: KafkaCluster, tmp: Path, converter: dict[str, str]) -> list[Record]:
    tag = f"hdr-{peer.name.split()[0].lower()}-{uuid.uuid4().hex[:8]}"
    data = tmp / f"{tag}.txt"
    data.write_text("".join(f"{line}\n" for line in LINES), encoding="utf-8")
    broker.create_topic(tag, 1)
    config = {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "tasks.max": "1",
        "file": str(data),
        "topic": tag,
        "value.converter": JSON,
        **CHAIN,
        **converter,
    }
    with peer.client() as client:
        create(client, tag, config)
        try:
            wait_running(client, tag)
            return read_records(broker.bootstrap_servers, tag, len(LINES))
        finally:
            delete(client, tag)


@pytest.mark.parametrize("converter", list(HEADER_CONVERTERS))
def test_source_headers_are_the_same_bytes(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path, converter: str
) -> None:
    ours = _source(copycat, apache_kafka, tmp_path, HEADER_CONVERTERS[converter])
    theirs = _source(kafka_connect, apache_kafka, tmp_path, HEADER_CONVERTERS[converter])
    assert len(theirs) == len(LINES)
    # The chain ran on Kafka Connect: the moved fields, the repeated key, the literals.
    names = [name for name, _ in theirs[0][2]]
    assert names[:3] == ["hn", "hn", "ключ"] and len(names) == 3 + len(LITERALS)
    assert differences(ours, theirs) == []


# Headers a sink's JsonConverter (schemas on) reads, or cannot: not JSON, not UTF-8, cut
# short, no envelope, a bad envelope; a null value, a repeated key and a non-ASCII key.
SINK_INPUT: list[tuple[bytes, list[tuple[str, str | bytes | None]]]] = [
    (b'"v1"', [("a", b'{"schema":{"type":"int32"},"payload":5}')]),
    (b'"v2"', [("a", b"not json")]),
    (b'"v3"', [("a", None)]),
    (b'"v4"', [("a", b"1"), ("a", b"2")]),
    (b'"v5"', [("ключ", b'"x"')]),
    (b'"v6"', [("a", b"\xff\xfe")]),
    (b'"v7"', [("a", b'{"schema":{"type":"struct"},"payload":1}')]),
    (b'"v8"', [("a", b"")]),
    (b'"v9"', [("a", b'{"x":1')]),
    (
        b'"v10"',
        [
            ("a", b'{"schema":{"type":"string"},"payload":"ok"}'),
            ("b", b'{"schema":null,"payload":[1]}'),
        ],
    ),
]
SINK_WRITTEN = ["v1", "v3", "v10"]


def _sink(peer: Peer, broker: KafkaCluster, topic: str, tmp: Path) -> tuple[list[Record], str]:
    settings = {
        "value.converter": JSON,
        "value.converter.schemas.enable": "false",
        "header.converter": JSON,
        "transforms": "drop,insert",
        "transforms.drop.type": T + "DropHeaders",
        "transforms.drop.headers": "a",
        "transforms.insert.type": T + "InsertHeader",
        "transforms.insert.header": "b",
        "transforms.insert.value.literal": "1",
    }
    dead = len(SINK_INPUT) - len(SINK_WRITTEN)
    return run_dlq_sink(
        peer, broker.bootstrap_servers, topic, tmp, "hdr-sink", settings, dead, len(SINK_WRITTEN)
    )


def test_headers_a_sink_cannot_read_reach_the_dlq_the_same(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    topic = f"hdr-sink-in-{uuid.uuid4().hex[:8]}"
    apache_kafka.create_topic(topic, 1)
    producer = Producer({"bootstrap.servers": apache_kafka.bootstrap_servers})
    for value, headers in SINK_INPUT:
        producer.produce(topic, value, headers=headers)
    assert producer.flush(30) == 0

    ours, our_text = _sink(copycat, apache_kafka, topic, tmp_path)
    theirs, their_text = _sink(kafka_connect, apache_kafka, topic, tmp_path)

    assert their_text == "".join(f"{v}\n" for v in SINK_WRITTEN)
    assert our_text == their_text
    assert len(theirs) == len(SINK_INPUT) - len(SINK_WRITTEN)
    # Our JSON parse errors add the parser's words after Kafka's message (kept, as for values).
    assert differences(reconcile_messages(ours, theirs), theirs) == []


_AB = {
    "type": "struct",
    "fields": [
        {"field": "a", "type": "int32", "optional": True},
        {"field": "b", "type": "string"},
    ],
}
HEADER_FROM_INPUT = [
    json.dumps({"schema": _AB, "payload": {"a": 1, "b": "x"}}).encode(),
    json.dumps({"schema": _AB, "payload": {"a": None, "b": "y"}}).encode(),
    # A schema without the field: Kafka's HeaderFrom fails on it with a NullPointerException.
    json.dumps(
        {
            "schema": {"type": "struct", "fields": [{"field": "b", "type": "string"}]},
            "payload": {"b": "q"},
        }
    ).encode(),
    json.dumps({"schema": {"type": "string"}, "payload": "str"}).encode(),
    json.dumps({"schema": None, "payload": {"a": 5, "b": "z"}}).encode(),
    json.dumps({"schema": None, "payload": {"b": "w"}}).encode(),
]
HEADER_FROM_WRITTEN = 4


def _header_from_sink(
    peer: Peer, broker: KafkaCluster, topic: str, tmp: Path, operation: str
) -> tuple[list[Record], str]:
    settings = {
        "value.converter": JSON,
        "transforms": "from",
        "transforms.from.type": T + "HeaderFrom$Value",
        "transforms.from.fields": "a",
        "transforms.from.headers": "ha",
        "transforms.from.operation": operation,
    }
    dead = len(HEADER_FROM_INPUT) - HEADER_FROM_WRITTEN
    return run_dlq_sink(
        peer, broker.bootstrap_servers, topic, tmp, "hdr-from", settings, dead, HEADER_FROM_WRITTEN
    )


@pytest.mark.parametrize("operation", ["copy", "move"])
def test_header_from_on_a_sink_writes_and_fails_the_same(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path, operation: str
) -> None:
    """What HeaderFrom leaves of each value, and the DLQ record of each it cannot take. Copycat
    refused a struct without the field with its own DataException ("Field a not found in the
    value schema"); Kafka's fails there with a java.lang.NullPointerException."""
    topic = f"hdr-from-in-{uuid.uuid4().hex[:8]}"
    apache_kafka.create_topic(topic, 1)
    producer = Producer({"bootstrap.servers": apache_kafka.bootstrap_servers})
    for value in HEADER_FROM_INPUT:
        producer.produce(topic, value)
    assert producer.flush(30) == 0

    ours, our_text = _header_from_sink(copycat, apache_kafka, topic, tmp_path, operation)
    theirs, their_text = _header_from_sink(kafka_connect, apache_kafka, topic, tmp_path, operation)

    kept = "a=1," if operation == "copy" else ""
    assert their_text.splitlines()[0] == f"Struct{{{kept}b=x}}"
    assert our_text == their_text
    assert len(theirs) == len(HEADER_FROM_INPUT) - HEADER_FROM_WRITTEN
    assert differences(ours, theirs) == []
