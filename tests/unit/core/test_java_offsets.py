"""Kafka Connect's standalone offsets file format (core/stores/java_offsets.py).

``KAFKA_FILE`` is what Kafka Connect 4.1.1's ``connect-standalone`` wrote for one
FileStreamSource partition (tests/differential/test_standalone_offsets_file_sbs.py moves a real
file between the two workers); these pin the reader and writer to its exact bytes.
"""

from __future__ import annotations

import pytest

from core.stores.java_offsets import (
    JavaOffsetsError,
    looks_java_serialized,
    read_offsets_map,
    write_offsets_map,
)

KAFKA_FILE = bytes.fromhex(
    "aced0005737200116a6176612e7574696c2e486173684d61700507dac1c31660d103000246000a6c6f616446"
    "6163746f724900097468726573686f6c6478703f4000000000000c77080000001000000001757200025b42ac"
    "f317f8060854e00200007870000000465b226d6967222c7b2266696c656e616d65223a222f746d702f65784a"
    "322f776f726b2f6d6967726174652f6b632d7468656e2d63632d6362316631312f696e2e747874227d5d7571"
    "007e00020000000f7b22706f736974696f6e223a33307d78"
)
KEY = b'["mig",{"filename":"/tmp/exJ2/work/migrate/kc-then-cc-cb1f11/in.txt"}]'


def test_kafka_connects_file_reads_as_its_one_entry_and_is_written_back_byte_for_byte() -> None:
    assert looks_java_serialized(KAFKA_FILE)
    entries = read_offsets_map(KAFKA_FILE)
    assert entries == {KEY: b'{"position":30}'}
    assert write_offsets_map({KEY: b'{"position":30}'}) == KAFKA_FILE


@pytest.mark.parametrize("count", [0, 1, 12, 13, 100])
def test_maps_of_any_size_round_trip(count: int) -> None:
    entries = {f'["c",{{"p":{i}}}]'.encode(): f'{{"o":{i}}}'.encode() for i in range(count)}
    assert read_offsets_map(write_offsets_map(entries)) == entries


@pytest.mark.parametrize("cut", [2, 5, 40, 100, len(KAFKA_FILE) - 1])
def test_a_file_cut_short_is_told_apart(cut: int) -> None:
    with pytest.raises(JavaOffsetsError) as raised:
        read_offsets_map(KAFKA_FILE[:cut])
    assert raised.value.truncated


def test_another_serialized_class_is_refused_without_being_read_as_offsets() -> None:
    other = KAFKA_FILE.replace(b"java.util.HashMap", b"java.util.TreeMap")
    with pytest.raises(JavaOffsetsError, match="java.util.TreeMap") as raised:
        read_offsets_map(other)
    assert not raised.value.truncated


def test_bytes_after_the_map_are_refused() -> None:
    with pytest.raises(JavaOffsetsError, match="after the map"):
        read_offsets_map(KAFKA_FILE + b"x")
