"""SMT failures and conversions on Copycat and on Apache Kafka Connect 4.1.1, side by side.

Each case runs a FileStreamSink with a JsonConverter (schemas on), one transform and
``errors.tolerance=all`` into a DLQ on each worker: the DLQ records (Kafka's
``__connect.errors.*`` headers, the exception class and message included) and the written
lines must be the same. Found by an exploratory comparison: Copycat's messages named Python
types (``found: str``, ``Cannot mask value of type: Struct``), ExtractField's unknown field
was a DataException (Kafka: java.lang.IllegalArgumentException), Flatten kept a MAP with
schemas, MaskField could not take ``12.5`` for an INT64, Cast widened a FLOAT32 as the
double Python holds and wrote pre-1970 dates in full. A randomized comparison (records over
all Connect types through chains of Kafka's SMTs) then found that a schema which is no struct
failed ExtractField and Cast in other words than Kafka's and TimestampConverter not at all,
that Cast refused BYTES in its own words, and that TimestampConverter printed a schema as
Python does and failed a string without a format as a DataException (Kafka: the
NullPointerException of its null format); a field name twice (InsertField, JsonConverter)
was refused in words other than Kafka's SchemaBuilder's.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import Peer, Record, differences, run_dlq_sink

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

T = "org.apache.kafka.connect.transforms."


def _envelope(schema: object, payload: object) -> bytes:
    return json.dumps({"schema": schema, "payload": payload}).encode()


_INNER = {"type": "struct", "fields": [{"field": "x", "type": "int32"}]}
NESTED = [
    _envelope({"type": "struct", "fields": [{"field": "n", **_INNER}]}, {"n": {"x": 1}}),
    _envelope({"type": "string"}, "plain"),
]
_NUMBERS = {
    "type": "struct",
    "fields": [
        {"field": "big", "type": "int64", "optional": True},
        {"field": "f32", "type": "float", "optional": True},
        {"field": "s", "type": "string", "optional": True},
    ],
}
NUMBERS = [_envelope(_NUMBERS, {"big": 5, "f32": 0.1, "s": "x"})]
_MAPPED = {
    "type": "struct",
    "fields": [
        {"field": "id", "type": "int32"},
        {
            "field": "attrs",
            "type": "map",
            "keys": {"type": "string"},
            "values": {"type": "int32"},
            "optional": True,
        },
    ],
}
MAPPED = [_envelope(_MAPPED, {"id": 1, "attrs": {"k": 1}})]
_DATES = {
    "type": "struct",
    "fields": [
        {
            "field": "ts",
            "type": "int64",
            "name": "org.apache.kafka.connect.data.Timestamp",
            "optional": True,
        },
        {
            "field": "d",
            "type": "int32",
            "name": "org.apache.kafka.connect.data.Date",
            "optional": True,
        },
    ],
}
DATES = [
    _envelope(_DATES, {"ts": -1, "d": -1}),
    _envelope(_DATES, {"ts": 86_399_999, "d": 0}),
    _envelope(_DATES, {"ts": 86_400_001, "d": 1}),
]

# A struct, then a null under an optional string schema (its value passes requireStructOrNull).
NULL_STRING = [
    NESTED[0],
    _envelope({"type": "string", "optional": True}, None),
]
_BYTES = {"type": "struct", "fields": [{"field": "b", "type": "bytes"}]}
BYTES = [_envelope(_BYTES, {"b": "aGk="})]
_NAMED = {"type": "struct", "name": "rec", "fields": [{"field": "x", "type": "int32"}]}
_TWICE = {"type": "struct", "fields": [{"field": "x", "type": "int32"}] * 2}
DUPLICATES = [_envelope(_INNER, {"x": 1}), _envelope(_TWICE, {"x": 1})]
NOT_TIMESTAMPS = [_envelope(_NAMED, {"x": 1}), _envelope({"type": "int32"}, 7)]

# (case, input, transform config, DLQ records, written lines)
CASES = [
    (
        "extract-v2-missing",
        NESTED,
        {"type": T + "ExtractField$Value", "field": "n.zz", "field.syntax.version": "V2"},
        2,
        0,
    ),
    ("mask-a-struct", NESTED, {"type": T + "MaskField$Value", "fields": "n"}, 2, 0),
    (
        "insert-into-a-string",
        NESTED,
        {"type": T + "InsertField$Value", "static.field": "s", "static.value": "v"},
        1,
        1,
    ),
    ("flatten-a-map", MAPPED, {"type": T + "Flatten$Value"}, 1, 0),
    (
        "mask-int64-with-12.5",
        NUMBERS,
        {"type": T + "MaskField$Value", "fields": "big", "replacement": "12.5"},
        0,
        1,
    ),
    ("cast-float32-to-float64", NUMBERS, {"type": T + "Cast$Value", "spec": "f32:float64"}, 0, 1),
    ("cast-dates-to-string", DATES, {"type": T + "Cast$Value", "spec": "ts:string,d:string"}, 0, 3),
    # Found by the randomized comparison (copycat-transforms 0.1.9): Kafka looks the field up
    # on the null's STRING schema ('Cannot look up fields on non-struct type'); Copycat said
    # 'Unknown field: n' as an IllegalArgumentException.
    (
        "extract-from-a-null-string",
        NULL_STRING,
        {"type": T + "ExtractField$Value", "field": "n"},
        1,
        1,
    ),
    # Kafka builds the cast schema from a STRING schema's fields before it checks the value;
    # Copycat said 'Only Struct objects supported for [cast types], found: STRING'.
    ("cast-fields-of-a-string", NESTED, {"type": T + "Cast$Value", "spec": "x:int8"}, 1, 1),
    # Kafka takes BYTES in and fails in castToInt32 (copycat-transforms 0.1.10); Copycat said
    # 'binary values can only be cast to string'.
    ("cast-bytes-to-int32", BYTES, {"type": T + "Cast$Value", "spec": "b:int32"}, 1, 0),
    # Kafka lists the fields of the null's STRING schema; Copycat wrote the null on.
    (
        "timestamp-converter-field-of-a-null-string",
        NULL_STRING,
        {"type": T + "TimestampConverter$Value", "target.type": "unix", "field": "x"},
        1,
        1,
    ),
    # Kafka parses a string with its null format (copycat-transforms 0.1.11): its DLQ says
    # NullPointerException with the JVM's message; Copycat raised a DataException in the
    # words of Kafka's config check.
    (
        "timestamp-converter-string-without-format",
        [_envelope({"type": "string"}, "2021-01-03")],
        {"type": T + "TimestampConverter$Value", "target.type": "Date"},
        1,
        0,
    ),
    # Kafka names the schema as ConnectSchema.toString (Schema{rec:STRUCT}, Schema{INT32});
    # Copycat wrote Python's repr of it.
    (
        "timestamp-converter-no-timestamp",
        NOT_TIMESTAMPS,
        {"type": T + "TimestampConverter$Value", "target.type": "unix"},
        2,
        0,
    ),
    # A field name twice (plugin_api 0.1.11, copycat-converters 0.1.13): InsertField's schema
    # and JsonConverter's envelope fail in SchemaBuilder.field, SchemaBuilderException 'Cannot
    # create field because of field name duplication x'; Copycat quoted the name ("x") and
    # its JsonConverter raised a DataException.
    (
        "field-name-twice",
        DUPLICATES,
        {"type": T + "InsertField$Value", "static.field": "x", "static.value": "v"},
        2,
        0,
    ),
]


def _run(
    peer: Peer,
    broker: KafkaCluster,
    topic: str,
    tmp: Path,
    transform: dict[str, str],
    dead: int,
    lines: int,
) -> tuple[list[Record], str]:
    settings = {
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "transforms": "x",
        **{f"transforms.x.{k}": v for k, v in transform.items()},
    }
    return run_dlq_sink(peer, broker.bootstrap_servers, topic, tmp, "smt", settings, dead, lines)


@pytest.mark.parametrize(
    ("values", "transform", "dead", "lines"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_an_smt_fails_or_converts_as_kafkas_does(
    copycat: Peer,
    kafka_connect: Peer,
    apache_kafka: KafkaCluster,
    tmp_path: Path,
    values: list[bytes],
    transform: dict[str, str],
    dead: int,
    lines: int,
) -> None:
    topic = f"smt-in-{uuid.uuid4().hex[:8]}"
    apache_kafka.create_topic(topic, 1)
    producer = Producer({"bootstrap.servers": apache_kafka.bootstrap_servers})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0

    ours, our_text = _run(copycat, apache_kafka, topic, tmp_path, transform, dead, lines)
    theirs, their_text = _run(kafka_connect, apache_kafka, topic, tmp_path, transform, dead, lines)

    assert len(theirs) == dead
    assert len(their_text.splitlines()) == lines
    assert differences(ours, theirs) == []
    assert our_text == their_text
