"""The bytes in the topic: FileStreamSource, JsonConverter and Kafka's SMTs, on both workers.

One input file goes through the same connector config (Kafka class names throughout) on
Copycat and on Apache Kafka Connect; every record's key, value and headers must be the same
bytes. Only the Kafka message timestamp (the time of the send) is left out of the comparison.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import (
    Peer,
    Record,
    create,
    delete,
    differences,
    read_records,
    wait_running,
)

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

# Lines that stress JSON string encoding: quotes, backslashes, control characters, non-ASCII
# and astral characters, HTML-ish text, an empty line, and numbers that stay strings.
TRICKY_LINES = [
    "plain ascii",
    'a "quoted" word and a back\\slash',
    "tab\there, bell\x07, escape\x1b, unit separator\x1f",
    "accents: déjà vu, ñandú, Ærøskøbing",
    "cjk 漢字 and emoji 🦄 (astral)",
    "</script><b>&amp;</b> 'single'",
    "",
    "1234567890123456789012345",
    "-0.0",
    "\u2028line separator\u2029paragraph separator",
    "delete \x7f and nbsp\u00a0",
]

# The SMT chain of issue 14, with Kafka's class names, over lines that are timestamps.
SMT_CHAIN = {
    "transforms": "hoist,origin,count,cast,key,parse,nest,flat,rename,mask,keyfield,route",
    "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
    "transforms.hoist.field": "when",
    "transforms.origin.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    "transforms.origin.static.field": "origin",
    "transforms.origin.static.value": "differential",
    "transforms.origin.timestamp.field": "ts",
    "transforms.count.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    "transforms.count.static.field": "n",
    "transforms.count.static.value": "7",
    "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value",
    "transforms.cast.spec": "n:int32",
    "transforms.key.type": "org.apache.kafka.connect.transforms.ValueToKey",
    "transforms.key.fields": "when,n",
    "transforms.parse.type": "org.apache.kafka.connect.transforms.TimestampConverter$Value",
    "transforms.parse.field": "when",
    "transforms.parse.format": "yyyy-MM-dd HH:mm:ss",
    "transforms.parse.target.type": "Timestamp",
    "transforms.nest.type": "org.apache.kafka.connect.transforms.HoistField$Value",
    "transforms.nest.field": "event",
    "transforms.flat.type": "org.apache.kafka.connect.transforms.Flatten$Value",
    "transforms.flat.delimiter": "_",
    "transforms.rename.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
    "transforms.rename.renames": "event_when:when,event_n:n",
    "transforms.rename.exclude": "event_ts",
    "transforms.mask.type": "org.apache.kafka.connect.transforms.MaskField$Value",
    "transforms.mask.fields": "event_origin",
    "transforms.mask.replacement": "***",
    "transforms.keyfield.type": "org.apache.kafka.connect.transforms.ExtractField$Key",
    "transforms.keyfield.field": "when",
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": "(.*)-in",
    "transforms.route.replacement": "$1-routed",
}

TIMESTAMP_LINES = [
    f"2024-{m:02d}-{d:02d} {h:02d}:{m * 7 % 60:02d}:{d * 3 % 60:02d}"
    for m, d, h in ((1, 1, 0), (2, 29, 12), (12, 31, 23), (6, 15, 9), (3, 10, 2))
]


def _run(
    peer: Peer,
    broker: KafkaCluster,
    tmp: Path,
    lines: list[str],
    schemas: bool,
    chain: dict[str, str],
    routed: bool,
) -> list[Record]:
    tag = f"{peer.name.split()[0].lower()}-{uuid.uuid4().hex[:8]}"
    data = tmp / f"{tag}.txt"
    data.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    topic = f"diff-{tag}-in"
    broker.create_topic(topic, 1)
    if routed:
        broker.create_topic(f"diff-{tag}-routed", 1)
    flag = "true" if schemas else "false"
    config = {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "tasks.max": "1",
        "file": str(data),
        "topic": topic,
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": flag,
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": flag,
        **chain,
    }
    with peer.client() as client:
        create(client, tag, config)
        try:
            wait_running(client, tag)
            out = f"diff-{tag}-routed" if routed else topic
            return read_records(broker.bootstrap_servers, out, len(lines))
        finally:
            delete(client, tag)


@pytest.mark.parametrize("schemas", [True, False], ids=["schemas", "schemaless"])
def test_plain_lines_become_the_same_json_bytes(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path, schemas: bool
) -> None:
    ours = _run(copycat, apache_kafka, tmp_path, TRICKY_LINES, schemas, {}, routed=False)
    theirs = _run(kafka_connect, apache_kafka, tmp_path, TRICKY_LINES, schemas, {}, routed=False)
    assert len(theirs) == len(TRICKY_LINES)
    assert differences(ours, theirs) == []


@pytest.mark.parametrize("schemas", [True, False], ids=["schemas", "schemaless"])
def test_the_smt_chain_gives_the_same_keys_values_and_topic(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path, schemas: bool
) -> None:
    ours = _run(copycat, apache_kafka, tmp_path, TIMESTAMP_LINES, schemas, SMT_CHAIN, routed=True)
    theirs = _run(
        kafka_connect, apache_kafka, tmp_path, TIMESTAMP_LINES, schemas, SMT_CHAIN, routed=True
    )
    assert len(theirs) == len(TIMESTAMP_LINES)
    # The chain really ran: Kafka Connect's first record is keyed by its line, masked, cast.
    key, value, _ = theirs[0]
    assert key is not None and TIMESTAMP_LINES[0].encode() in key
    assert value is not None and b'"event_origin":"***"' in value and b'"n":7' in value
    assert differences(ours, theirs) == []


# StringConverter writes value.toString(): Struct.toString, java.util.Date.toString,
# Double.toString, Boolean.toString (Copycat wrote Python's str() before).
TEXT_CHAIN = {
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    "transforms": "hoist,num,flag,cast,parse",
    "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
    "transforms.hoist.field": "when",
    "transforms.num.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    "transforms.num.static.field": "n",
    "transforms.num.static.value": "10000000",
    "transforms.flag.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    "transforms.flag.static.field": "ok",
    "transforms.flag.static.value": "false",
    "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value",
    "transforms.cast.spec": "n:float64,ok:boolean",
    "transforms.parse.type": "org.apache.kafka.connect.transforms.TimestampConverter$Value",
    "transforms.parse.field": "when",
    "transforms.parse.format": "yyyy-MM-dd HH:mm:ss",
    "transforms.parse.target.type": "Timestamp",
}


def test_string_converter_writes_structs_as_javas_to_string(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    ours = _run(copycat, apache_kafka, tmp_path, TIMESTAMP_LINES, True, TEXT_CHAIN, routed=False)
    theirs = _run(
        kafka_connect, apache_kafka, tmp_path, TIMESTAMP_LINES, True, TEXT_CHAIN, routed=False
    )
    assert len(theirs) == len(TIMESTAMP_LINES)
    assert theirs[0][1] == b"Struct{when=Mon Jan 01 00:07:03 UTC 2024,n=1.0E7,ok=false}"
    assert differences(ours, theirs) == []
