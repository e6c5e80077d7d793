"""TimestampRouter, TimestampConverter and SetSchemaMetadata on Copycat and on Apache Kafka
Connect 4.1.1, side by side.

Kafka's TimestampRouter and TimestampConverter format and parse with a
``java.text.SimpleDateFormat`` in UTC, in the JVM's default (en-US) locale: its weeks
start on Sunday and week 1 of a year is the one holding January 1st, so ``YYYY-'W'ww``
writes 2024-12-31 as ``2025-W01`` and 2021-01-03 as ``2021-W02`` (ISO-8601 says 2020-W53),
and parses ``2021-W02`` as that week's Sunday. It parses the zone names of its locale
(``PST`` is -08:00) and ``GMT+02:00``. Found by an exploratory comparison: Copycat used
ISO-8601 weeks for ``Y``, ``w`` and ``W``, ignored ``Y`` and ``w`` when parsing (the week
date became 1970-01-01), read ``GMT+02:00`` as GMT and refused ``PST``; it refused the
spaces Java skips before a number (`` 2021-01-03``), took a bare ``Z`` for the RFC 822
zone ``Z`` and ``UTC`` for the ISO 8601 ``X`` (Java refuses both), put day of year 400 of
2021 in 2021 (now refused, as other out-of-range fields; Kafka rolls it into 2022) and
formatted ``XXXX``, which Java refuses.

SetSchemaMetadata renames a struct key or value schema (JsonConverter writes the new name
and version), passes a record whose side is null without a schema, refuses a schemaless
value (``Schema required for [updating schema metadata]``) and, as Kafka's copies the
schema's field list, any schema that is no struct: ``Cannot list fields on non-struct
type``. Copycat renamed a string or array schema.

The routed topic is seen through InsertField's ``topic.field``: a sink's record can take any
topic name, and one FileStreamSink writes the topic each TimestampRouter of a chain made.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import (
    FILE_SINK,
    JSON_CONVERTER,
    Peer,
    Record,
    create,
    delete,
    dlq_sink_config,
    file_lines,
    file_source,
    normalised,
    run_file_source,
    task_state,
    validation_errors,
    wait_running,
)
from tests.support.kafka import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

T = "org.apache.kafka.connect.transforms."
TIMEOUT_S = 120.0

# 2021-01-03T15:04:05.678Z (a Sunday), the epoch's first millisecond, 2024-12-31 (week 1
# of 2025), 2023-12-31 (a Sunday, week 1 of 2024) and 2000-02-29.
STAMPS = [1609686245678, 1, 1735603200005, 1704067199999, 951782400000]
ROUTED = [
    "yyyy-MM-dd'T'HH",
    "''yyyy''",
    "'o''clock' h a",
    "YYYY-'W'ww W",
    "D DDD",
    "E EEE EEEE",
    "SSS S",
    "Z XXX X XX",
    "z zzz zzzz",
    "MMM MMMM MMMMM",
    "yy y yyy yyyyy",
    "G u F k K h",
    "L LLL LLLL",
    "GGGG SSSS ZZZZ EEEEE aaaa LLLLL yyyy-MM-dd HH:mm:ss.SSSSS",
]

# (pattern, text, epoch ms both parse it to)
PARSED = [
    ("yyyy-MM-dd'T'HH", "2021-01-03T15", 1609686000000),
    ("''yyyy''", "'2021'", 1609459200000),
    ("'o''clock' h a dd/MM/yyyy", "o'clock 3 PM 03/01/2021", 1609686000000),
    ("YYYY-'W'ww", "2021-W02", 1609632000000),
    ("YYYY-'W'ww", "2025-W01", 1735430400000),
    ("YYYY-'W'ww u", "2021-W02 3", 1609891200000),
    ("YYYY-'W'ww EEE", "2021-W02 Fri", 1610064000000),
    ("yyyy D", "2021 3", 1609632000000),
    ("EEE, d MMM yyyy", "Mon, 3 Jan 2021", 1609632000000),
    ("yyyy-MM-dd HH:mm:ss.SSS Z", "2021-01-03 15:04:05.678 +0130", 1609680845678),
    ("yyyy-MM-dd HH:mm XXX", "2021-01-03 15:04 -05:00", 1609704240000),
    ("yyyy-MM-dd HH:mm zzz", "2021-01-03 15:04 GMT+02:00", 1609679040000),
    ("yyyy-MM-dd HH:mm zzz", "2021-01-03 15:04 PST", 1609715040000),
    ("yyyy-MM-dd HH:mm zzz", "2021-07-03 15:04 PDT", 1625349840000),
    ("yyyy-MM-dd HH:mm zzz", "2021-01-03 15:04 EST", 1609704240000),
    ("yyyy-MM-dd HH:mm zzz", "2021-01-03 15:04 UTC", 1609686240000),
    ("MMM d yyyy", "January 3 2021", 1609632000000),
    ("yyyy-MM-dd HH:mm:ss.S", "2021-01-03 15:04:05.5", 1609686245005),
    ("yy-MM-dd", "21-01-03", 1609632000000),
    ("h:mm a", "12:30 AM", 1800000),
    ("EEEE, MMMM d, yyyy h:mm a", "Sunday, January 3, 2021 3:04 PM", 1609686240000),
    ("yyyy-MM-dd'T'HH:mm:ss.SSSX", "2021-01-03T15:04:05.678Z", 1609686245678),
    ("G yyyy", "AD 2021", 1609459200000),
    ("k:mm", "24:00", 0),
    ("yyyy-MM-dd", " 2021-01-03", 1609632000000),  # spaces and tabs before a number
    ("yyyy-MM-dd", "2021- 01-\t03", 1609632000000),
    ("yyyy-MM-dd'T'HH:mm:ss X", "2021-01-03T15:04:05 +01", 1609682645000),
    ("yyyy-MM-dd'T'HH:mm:ss Z", "2021-01-03T15:04:05 PST", 1609715045000),
    ("yyyy-MM-dd HH:mm zzz", "2021-07-03 15:04 CEST", 1625317440000),
    ("yyyy-MM-dd HH:mm zzz", "2021-01-03 15:04 Pacific Standard Time", 1609715040000),
    ("yyyy-MM-dd HH:mm zzz", "2021-01-03 15:04 pst", 1609715040000),
    ("yyyy-MM-dd HH:mm:ss.SSSSSS", "2021-01-03 15:04:05.678123", 1609686923123),
    ("EEE MMM dd HH:mm:ss zzz yyyy", "Sun Jan 03 15:04:05 UTC 2021", 1609686245000),
    ("yyyy-MM-dd K a", "2021-01-03 0 PM", 1609675200000),
]
# (pattern, text) both refuse: Could not parse timestamp
REFUSED = [
    ("yyyy-MM-dd'T'HH:mm:ssZ", "2021-01-03T15:04:05Z"),  # Z is no RFC 822 zone
    ("yyyy-MM-dd'T'HH:mm:ss X", "2021-01-03T15:04:05 UTC"),  # nor an ISO 8601 one
    ("dd MMM yyyy", "03  Jan 2021"),  # no space skipped before text
]


def _envelope(schema: object, payload: object) -> bytes:
    return json.dumps({"schema": schema, "payload": payload}).encode()


def _produce(broker: KafkaCluster, values: list[tuple[bytes | None, int]]) -> str:
    """A new one-partition topic holding ``values``, each with its timestamp."""
    topic = f"dates-in-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for value, stamp in values:
        producer.produce(topic, value, timestamp=stamp)
    assert producer.flush(30) == 0
    return topic


def _sink(
    peer: Peer, broker: KafkaCluster, topic: str, tmp: Path, settings: dict[str, str], total: int
) -> tuple[list[Record], list[str]]:
    """A FileStreamSink (JsonConverter values, tolerance all, a DLQ) with ``settings`` over
    ``topic``, once it wrote or dead-lettered ``total`` records: its DLQ records and lines."""
    name = f"dates-{peer.name.split()[0].lower()}-{uuid.uuid4().hex[:8]}"
    output = tmp / f"{name}.out"
    config = {
        **dlq_sink_config(topic, output, f"{name}-dlq"),
        "value.converter": JSON_CONVERTER,
        **settings,
    }
    dead: list[Record] = []
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"diff-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 500,
            # The DLQ, just created, may answer the first fetch at 0 OFFSET_OUT_OF_RANGE: the
            # default reset (latest) skipped the dead letter written next (seen under load).
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(f"{name}-dlq", 0, 0)])

    def handled() -> bool:
        messages: list[Any] = consumer.consume(100, 0.5)
        dead.extend(
            (m.key(), m.value(), tuple(m.headers() or ())) for m in messages if m.error() is None
        )
        return len(dead) + len(file_lines(output)) >= total

    try:
        with peer.client() as client:
            create(client, name, config)
            try:
                try:
                    wait_for(handled, TIMEOUT_S, f"{peer.name} handling {total} records")
                except AssertionError as exc:
                    status = client.get(f"/connectors/{name}/status").text
                    seen = f"{len(dead)} in the DLQ, lines {file_lines(output)}"
                    raise AssertionError(f"{exc}; {seen}; status {status}") from None
            finally:
                delete(client, name)
    finally:
        consumer.close()
    return normalised(dead, name), file_lines(output)


def _messages(dead: list[Record]) -> list[str]:
    return [
        (dict(headers).get("__connect.errors.exception.message") or b"").decode()
        for _key, _value, headers in dead
    ]


def _routed(peer: Peer, broker: KafkaCluster, topic: str, tmp: Path) -> list[str]:
    names = ["default", "default_topic"]
    settings = {
        "transforms.default.type": T + "TimestampRouter",
        "transforms.default_topic.type": T + "InsertField$Value",
        "transforms.default_topic.topic.field": "default",
    }
    for i, pattern in enumerate(ROUTED):
        names += [f"r{i}", f"t{i}"]
        settings[f"transforms.r{i}.type"] = T + "TimestampRouter"
        settings[f"transforms.r{i}.topic.format"] = "${timestamp}"
        settings[f"transforms.r{i}.timestamp.format"] = pattern
        settings[f"transforms.t{i}.type"] = T + "InsertField$Value"
        settings[f"transforms.t{i}.topic.field"] = f"p{i}"
    dead, lines = _sink(
        peer, broker, topic, tmp, {"transforms": ",".join(names), **settings}, len(STAMPS)
    )
    assert dead == []
    return [line.replace(topic, "<topic>") for line in lines]


def test_timestamp_router_formats_java_patterns_in_utc(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    """The default ``${topic}-${timestamp}`` with ``yyyyMMdd``, then each pattern of
    ``ROUTED`` as the whole topic, on records of five timestamps."""
    schema = {"type": "struct", "fields": [{"field": "v", "type": "int64"}]}
    topic = _produce(apache_kafka, [(_envelope(schema, {"v": s}), s) for s in STAMPS])
    theirs = _routed(kafka_connect, apache_kafka, topic, tmp_path)
    ours = _routed(copycat, apache_kafka, topic, tmp_path)

    assert ours == theirs
    assert theirs[0] == (
        "Struct{v=1609686245678,default=<topic>-20210103,p0=2021-01-03T15,p1='2021',"
        "p2=o'clock 3 PM,p3=2021-W02 2,p4=3 003,p5=Sun Sun Sunday,p6=678 678,p7=+0000 Z Z Z,"
        "p8=UTC UTC Coordinated Universal Time,p9=Jan January January,"
        "p10=21 2021 2021 02021,p11=AD 7 1 15 3 3,p12=1 Jan January,"
        "p13=AD 0678 +0000 Sunday PM January 2021-01-03 15:04:05.00678}"
    )
    weeks = [re.search(r"p3=([^,]*)", line).group(1) for line in theirs]  # type: ignore[union-attr]
    assert weeks == ["2021-W02 2", "1970-W01 1", "2025-W01 5", "2024-W01 6", "2000-W10 5"]


def test_timestamp_converter_parses_java_patterns(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    """Record ``i`` holds only field ``s<i>``, the text of case ``i`` (``PARSED`` then
    ``REFUSED``); a chain of one TimestampConverter (string to unix) per pattern converts
    each in its own pattern, or sends it to the DLQ."""
    values = []
    cases = [(pattern, text) for pattern, text, _ in PARSED] + REFUSED
    settings = {"transforms": ",".join(f"c{i}" for i in range(len(cases)))}
    for i, (pattern, text) in enumerate(cases):
        schema = {"type": "struct", "fields": [{"field": f"s{i}", "type": "string"}]}
        values.append((_envelope(schema, {f"s{i}": text}), 1))
        settings[f"transforms.c{i}.type"] = T + "TimestampConverter$Value"
        settings[f"transforms.c{i}.field"] = f"s{i}"
        settings[f"transforms.c{i}.format"] = pattern
        settings[f"transforms.c{i}.target.type"] = "unix"
    topic = _produce(apache_kafka, values)
    theirs = _sink(kafka_connect, apache_kafka, topic, tmp_path, settings, len(cases))
    ours = _sink(copycat, apache_kafka, topic, tmp_path, settings, len(cases))

    assert ours == theirs
    refused = [
        f"Could not parse timestamp: value ({text}) does not match pattern ({pattern})"
        for pattern, text in REFUSED
    ]
    expected = [f"Struct{{s{i}={millis}}}" for i, (_, _, millis) in enumerate(PARSED)]
    assert (_messages(theirs[0]), theirs[1]) == (refused, expected)


def test_timestamp_converter_formats_and_counts_in_unix_precision(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    """A Timestamp to a string in week and zone patterns and to unix seconds, microseconds
    and nanoseconds; unix seconds and microseconds (precision of the input long) to a
    string."""
    ts = {"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp"}
    fields = [("w", ts), ("z", ts), ("sec", ts), ("micro", ts), ("nano", ts)]
    fields += [("from_sec", {"type": "int64"}), ("from_micro", {"type": "int64"})]
    schema = {"type": "struct", "fields": [{"field": f, **s} for f, s in fields]}
    millis = 1735603200005
    payload = {f: millis for f in ("w", "z", "sec", "micro", "nano")}
    payload |= {"from_sec": -1, "from_micro": 1609686245678999}
    topic = _produce(apache_kafka, [(_envelope(schema, payload), 1)])
    steps = [
        ("w", "string", {"format": "YYYY-'W'ww EEE"}),
        ("z", "string", {"format": "yyyy-MM-dd'T'HH:mm:ss.SSSXXX zzz Z"}),
        ("sec", "unix", {"unix.precision": "seconds"}),
        ("micro", "unix", {"unix.precision": "microseconds"}),
        ("nano", "unix", {"unix.precision": "nanoseconds"}),
        ("from_sec", "string", {"unix.precision": "seconds", "format": "yyyy-MM-dd HH:mm:ss"}),
        ("from_micro", "string", {"unix.precision": "microseconds", "format": "HH:mm:ss.SSS"}),
    ]
    settings = {"transforms": ",".join(f"c{i}" for i in range(len(steps)))}
    for i, (field, target, extra) in enumerate(steps):
        settings[f"transforms.c{i}.type"] = T + "TimestampConverter$Value"
        settings[f"transforms.c{i}.field"] = field
        settings[f"transforms.c{i}.target.type"] = target
        settings |= {f"transforms.c{i}.{k}": v for k, v in extra.items()}
    theirs = _sink(kafka_connect, apache_kafka, topic, tmp_path, settings, 1)
    ours = _sink(copycat, apache_kafka, topic, tmp_path, settings, 1)

    line = (
        "Struct{w=2025-W01 Tue,z=2024-12-31T00:00:00.005Z UTC +0000,sec=1735603200,"
        "micro=1735603200005000,nano=1735603200005000000,from_sec=1969-12-31 23:59:59,"
        "from_micro=15:04:05.678}"
    )
    assert ours == theirs == ([], [line])


def _source_records(
    peer: Peer, broker: KafkaCluster, tmp: Path, settings: dict[str, str]
) -> list[Record]:
    """The records a FileStreamSource of two lines writes with ``settings`` (JsonConverter
    keys and values with schemas)."""
    converters = {"key.converter": JSON_CONVERTER, "value.converter": JSON_CONVERTER}
    source = file_source(broker, tmp, "meta", ["a", "b"], {**converters, **settings})
    records, _, _ = run_file_source(
        peer, broker, source, 2, lambda client: wait_running(client, source.name)
    )
    return records


META = T + "SetSchemaMetadata$"


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        pytest.param(
            {
                "transforms": "hoist,key,value_meta,key_meta",
                "transforms.hoist.type": T + "HoistField$Value",
                "transforms.hoist.field": "line",
                "transforms.key.type": T + "ValueToKey",
                "transforms.key.fields": "line",
                "transforms.value_meta.type": META + "Value",
                "transforms.value_meta.schema.name": "com.example.Line",
                "transforms.value_meta.schema.version": "3",
                "transforms.key_meta.type": META + "Key",
                "transforms.key_meta.schema.version": "7",
            },
            (
                b'{"schema":{"type":"struct","fields":[{"type":"string","optional":false,'
                b'"field":"line"}],"optional":false,"version":7},"payload":{"line":"a"}}',
                b'{"schema":{"type":"struct","fields":[{"type":"string","optional":false,'
                b'"field":"line"}],"optional":false,"name":"com.example.Line","version":3},'
                b'"payload":{"line":"a"}}',
            ),
            id="struct-key-and-value",
        ),
    ],
)
def test_set_schema_metadata_renames_the_schema_json_converter_writes(
    copycat: Peer,
    kafka_connect: Peer,
    apache_kafka: KafkaCluster,
    tmp_path: Path,
    settings: dict[str, str],
    expected: tuple[bytes, bytes],
) -> None:
    """The name and version set on the key and value schemas, byte for byte."""
    theirs = _source_records(kafka_connect, apache_kafka, tmp_path, settings)
    ours = _source_records(copycat, apache_kafka, tmp_path, settings)

    assert ours == theirs
    assert theirs[0][:2] == expected


STRUCT = {"type": "struct", "fields": [{"field": "a", "type": "int32"}]}


@pytest.mark.parametrize(
    ("schemas", "values", "failures", "lines"),
    [
        pytest.param(
            "true",
            [
                _envelope(
                    {"type": "struct", "fields": [{"field": "a", "type": "int32"}]}, {"a": 1}
                ),
                _envelope({"type": "string"}, "text"),
                _envelope({"type": "array", "items": {"type": "int32"}}, [1]),
                None,
            ],
            ["Cannot list fields on non-struct type"] * 2,
            ["Struct{a=1}", "null"],
            id="with-schemas",
        ),
        pytest.param(
            "false",
            [b'{"a": 1}', None, b'"text"'],
            ["Schema required for [updating schema metadata]"] * 2,
            ["null"],
            id="schemaless",
        ),
    ],
)
def test_set_schema_metadata_takes_only_a_struct_and_passes_a_tombstone(
    copycat: Peer,
    kafka_connect: Peer,
    apache_kafka: KafkaCluster,
    tmp_path: Path,
    schemas: str,
    values: list[bytes | None],
    failures: list[str],
    lines: list[str],
) -> None:
    """A struct is renamed; a string or array schema fails with Kafka's ``Cannot list
    fields on non-struct type`` (its SetSchemaMetadata copies the schema's fields); a
    schemaless value fails, ``Schema required``; a tombstone passes and is written as
    ``null``."""
    topic = _produce(apache_kafka, [(value, 1) for value in values])
    settings = {
        "value.converter.schemas.enable": schemas,
        "transforms": "meta",
        "transforms.meta.type": META + "Value",
        "transforms.meta.schema.name": "n",
    }
    theirs = _sink(kafka_connect, apache_kafka, topic, tmp_path, settings, len(values))
    ours = _sink(copycat, apache_kafka, topic, tmp_path, settings, len(values))

    assert ours == theirs
    assert (_messages(theirs[0]), theirs[1]) == (failures, lines)


def test_an_unknown_pattern_letter_is_refused_at_validation_where_kafka_fails_the_record(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    """Kafka's TimestampRouter makes its SimpleDateFormat at the first record, so ``yyyy-bb``
    is accepted and each record fails (``java.lang.IllegalArgumentException: Illegal pattern
    character 'b'``, in the DLQ here), and its TimestampConverter fails the task as it
    starts. Copycat refuses both at validation, naming the key: a deliberate deviation
    (docs/rest.md)."""
    topic = _produce(apache_kafka, [(_envelope({"type": "string"}, "x"), 1)])
    settings = {
        "transforms": "route",
        "transforms.route.type": T + "TimestampRouter",
        "transforms.route.timestamp.format": "yyyy-bb",
    }
    dead, lines = _sink(kafka_connect, apache_kafka, topic, tmp_path, settings, 1)
    assert (_messages(dead), lines) == (["Illegal pattern character 'b'"], [])
    assert dict(dead[0][2])["__connect.errors.exception.class.name"] == (
        b"java.lang.IllegalArgumentException"
    )

    config = {"connector.class": FILE_SINK, "name": "s", "topics": topic, "file": "x", **settings}
    assert validation_errors(kafka_connect, FILE_SINK, config) == {"error_count": 0}
    assert validation_errors(copycat, FILE_SINK, config) == {
        "error_count": 1,
        "transforms.route.timestamp.format": [
            "Invalid value yyyy-bb for configuration timestamp.format: "
            "Illegal pattern character 'b'"
        ],
    }

    converter = {
        "transforms": "conv",
        "transforms.conv.type": T + "TimestampConverter$Value",
        "transforms.conv.target.type": "string",
        "transforms.conv.format": "yyyy-bb",
    }
    config = {**config, **converter}
    assert validation_errors(kafka_connect, FILE_SINK, config) == {"error_count": 0}
    assert validation_errors(copycat, FILE_SINK, config) == {
        "error_count": 1,
        "transforms.conv.format": [
            "Invalid value yyyy-bb for configuration format: TimestampConverter requires a "
            "SimpleDateFormat-compatible pattern for string timestamps: yyyy-bb (Illegal "
            "pattern character 'b')"
        ],
    }
    name = f"conv-{uuid.uuid4().hex[:8]}"
    with kafka_connect.client() as client:
        create(client, name, {**config, "name": name, "file": str(tmp_path / f"{name}.out")})
        try:

            def failed() -> str | None:
                status = task_state(client, name, "FAILED")
                return status["tasks"][0].get("trace") if status else None

            trace: str = wait_for(failed, TIMEOUT_S, "Kafka Connect's task FAILED")
        finally:
            delete(client, name)
    assert "TimestampConverter requires a SimpleDateFormat-compatible pattern" in trace


def test_four_iso_zone_letters_are_refused_as_kafka_refuses_them(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    """``XXXX``: SimpleDateFormat knows ``X`` to ``XXX`` only. Kafka's TimestampRouter fails
    each record with that IllegalArgumentException; Copycat refuses the pattern at
    validation with the same words (the deviation of an unknown letter)."""
    topic = _produce(apache_kafka, [(_envelope({"type": "string"}, "x"), 1)])
    settings = {
        "transforms": "route",
        "transforms.route.type": T + "TimestampRouter",
        "transforms.route.timestamp.format": "HH XXXX",
    }
    dead, lines = _sink(kafka_connect, apache_kafka, topic, tmp_path, settings, 1)
    assert (_messages(dead), lines) == (["invalid ISO 8601 format: length=4"], [])

    config = {"connector.class": FILE_SINK, "name": "s", "topics": topic, "file": "x", **settings}
    assert validation_errors(copycat, FILE_SINK, config) == {
        "error_count": 1,
        "transforms.route.timestamp.format": [
            "Invalid value HH XXXX for configuration timestamp.format: "
            "invalid ISO 8601 format: length=4"
        ],
    }
