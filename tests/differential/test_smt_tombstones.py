"""A tombstone through MaskField, on Copycat and on Apache Kafka Connect 4.1.1.

Kafka's MaskField has no tombstone shortcut (unlike ReplaceField, Cast, InsertField and
Flatten): its requireMap refuses the null, so with ``errors.tolerance=all`` the tombstone
goes to the DLQ and the sink never sees it. Copycat let it through and wrote ``null``.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import Peer, Record, differences, reconcile_messages, run_dlq_sink

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

INPUT: list[bytes | None] = [b'{"a": 1, "b": "x"}', None, b'{"a": 2, "b": "y"}']
GOOD = 2


def _run(peer: Peer, broker: KafkaCluster, topic: str, tmp: Path) -> tuple[list[Record], str]:
    settings = {
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "transforms": "mask",
        "transforms.mask.type": "org.apache.kafka.connect.transforms.MaskField$Value",
        "transforms.mask.fields": "a",
    }
    return run_dlq_sink(peer, broker.bootstrap_servers, topic, tmp, "mask", settings, 1, GOOD)


def test_mask_field_sends_a_tombstone_to_the_dlq_as_kafka_does(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    topic = f"mask-in-{uuid.uuid4().hex[:8]}"
    apache_kafka.create_topic(topic, 1)
    producer = Producer({"bootstrap.servers": apache_kafka.bootstrap_servers})
    for value in INPUT:
        producer.produce(topic, value)
    assert producer.flush(30) == 0

    ours, our_lines = _run(copycat, apache_kafka, topic, tmp_path)
    theirs, their_lines = _run(kafka_connect, apache_kafka, topic, tmp_path)
    # Class names are Kafka's too (MaskField$Value), as docs/rest.md says.
    assert len(theirs) == 1 and theirs[0][1] is None
    found = differences(reconcile_messages(ours, theirs), theirs)
    assert found == [], "\n".join(found)
    assert our_lines == their_lines
