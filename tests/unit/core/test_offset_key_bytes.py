"""Source offset keys and values in the bytes Kafka Connect's JsonConverter (Jackson) writes.

Kafka Connect looks a source offset up by its key's bytes (KafkaOffsetBackingStore keeps a
map of ByteBuffer keys), so a key Copycat writes must be byte for byte Jackson's to be found
after a migration back. Jackson writes text beyond ASCII as UTF-8, except code points beyond
the BMP (escaped surrogate pairs), and escapes in upper-case hex; Python's json escaped all
of it in lower case. The expected bytes below are what a Kafka Connect 4.1.1 worker wrote to
its offsets topic for the same partition (seen side by side by an exploratory tester).
"""

from __future__ import annotations

import json

import pytest

from core.stores.offsets import canonical_offset_key, connect_json, offset_key


def test_a_key_beyond_ascii_is_the_bytes_kafka_connect_writes() -> None:
    key = offset_key("src-\u00fc\u20ac\U0001f600", {"filename": "/tmp/f-\u00e9\U0001f600.txt"})
    assert key == (
        b'["src-\xc3\xbc\xe2\x82\xac\\uD83D\\uDE00",'
        b'{"filename":"/tmp/f-\xc3\xa9\\uD83D\\uDE00.txt"}]'
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("tab\there", b'"tab\\there"'),
        ("unit\x1fsep", b'"unit\\u001Fsep"'),
        ("a literal \\u00ff stays", b'"a literal \\\\u00ff stays"'),
        ("lone \ud83d", b'"lone \\uD83D"'),
        ({"position": 42, "ok": True, "none": None}, b'{"position":42,"ok":true,"none":null}'),
    ],
)
def test_escapes_are_jacksons_and_the_text_reads_back(value: object, expected: bytes) -> None:
    assert connect_json(value) == expected
    assert json.loads(expected) == value


def test_an_older_copycat_key_and_kafka_connects_field_order_find_the_same_offset() -> None:
    ours = offset_key("c", {"a": "\u00fc", "b": 1})
    older = b'["c",{"a":"\\u00fc","b":1}]'  # Copycat before: ASCII escapes, sorted
    java = '["c",{"b":1,"a":"\u00fc"}]'.encode()  # Kafka Connect: its HashMap order
    assert canonical_offset_key(older) == canonical_offset_key(java) == ours
    assert canonical_offset_key(b"not json") == b"not json"
