"""JsonConverter edge inputs through FileStreamSink, on Copycat and on Kafka Connect 4.1.1.

An empty or whitespace-only value with ``schemas.enable=true`` is Kafka's missing-envelope
DataException (Copycat said "Expecting value: line 1 column 1"); schemaless numbers at a
long's limits are written alike (one beyond a long is not: docs/operator-guide.md); a -0.0
under a FLOAT64/FLOAT32 schema reads as 0.0, as Kafka's BigDecimal parsing has it (Copycat
wrote -0.0).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import Peer, Record, differences, run_dlq_sink

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]


_FLOAT_FIELDS = (
    '[{"field":"d","type":"double","optional":true},{"field":"f","type":"float","optional":true}'
)
_DECIMAL_FIELD = (
    ',{"field":"n","type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal",'
    '"parameters":{"scale":"1"}}'
)
# Several records of one schema, so that Copycat's compiled readers meet them too.
_FLOAT_PAYLOADS = [
    '{"d":-0.0,"f":-0.0}',
    '{"d":-0,"f":-0}',
    '{"d":-1e-400,"f":-1e-50}',
    '{"d":-0.0e10,"f":0.0}',
    '{"d":1.5,"f":-0.0}',
    '{"d":-2.5,"f":-0.25}',
]


def _floats(payload: str) -> bytes:
    return (
        f'{{"schema":{{"type":"struct","fields":{_FLOAT_FIELDS}]}},"payload":{payload}}}'.encode()
    )


def _exact(payload: str) -> bytes:
    """The same with a Decimal field, which the exact (Decimal) number path reads."""
    fields = _FLOAT_FIELDS + _DECIMAL_FIELD
    return f'{{"schema":{{"type":"struct","fields":{fields}]}},"payload":{payload}}}'.encode()


def _run(
    peer: Peer, broker: KafkaCluster, topic: str, tmp: Path, schemas: bool, dead: int, lines: int
) -> tuple[list[Record], str]:
    settings = {
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": str(schemas).lower(),
    }
    return run_dlq_sink(peer, broker.bootstrap_servers, topic, tmp, "json", settings, dead, lines)


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
        # Kafka reads JSON numbers as BigDecimal, which has no negative zero: -0.0 is 0.0,
        # while a negative number too small for a double still rounds to -0.0 (schemaless,
        # Copycat keeps orjson's -0.0: docs/operator-guide.md)
        pytest.param(
            [_floats(p) for p in _FLOAT_PAYLOADS] + [_exact(p) for p in _FLOAT_PAYLOADS],
            True,
            0,
            2 * len(_FLOAT_PAYLOADS),
            id="negative-zero",
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
