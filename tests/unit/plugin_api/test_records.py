"""Records are values: new_record copies, headers are an ordered multi-map."""

from __future__ import annotations

import pytest
from plugin_api.data import Schema
from plugin_api.records import (
    ConnectRecord,
    Header,
    Headers,
    SinkRecord,
    SourceRecord,
    TimestampType,
    TopicPartition,
)


def test_topic_partition_is_hashable_tuple() -> None:
    tp = TopicPartition("t", 1)
    assert tp == ("t", 1) and tp.topic == "t" and tp.partition == 1
    assert {tp: 5}[TopicPartition("t", 1)] == 5
    assert str(tp) == "t-1"


def test_headers_multimap() -> None:
    headers = Headers([("a", 1), Header("b", "x", Schema.STRING_SCHEMA)])
    headers.add("a", 2).add("c", None)
    assert len(headers) == 4
    assert [h.key for h in headers] == ["a", "b", "a", "c"]
    assert headers.last_with_name("a") == Header("a", 2)
    assert [h.value for h in headers.all_with_name("a")] == [1, 2]
    assert headers.last_with_name("zzz") is None
    assert headers.last_with_name("b").schema == Schema.STRING_SCHEMA
    copy = headers.copy()
    headers.remove("a")
    assert [h.key for h in headers] == ["b", "c"]
    assert len(copy) == 4
    copy.retain_latest()
    assert [(h.key, h.value) for h in copy] == [("b", "x"), ("a", 2), ("c", None)]
    assert Headers([("k", 1)]) == Headers([Header("k", 1)])
    assert Headers([("k", 1)]) != Headers([("k", 2)])


def test_source_record_defaults() -> None:
    record = SourceRecord({"file": "a"}, {"pos": 1}, "topic", value="line")
    assert record.kafka_partition is None and record.key is None and record.timestamp is None
    assert isinstance(record.headers, Headers) and len(record.headers) == 0
    assert record.source_partition == {"file": "a"} and record.source_offset == {"pos": 1}
    assert record == SourceRecord({"file": "a"}, {"pos": 1}, "topic", value="line")
    assert "SourceRecord(" in repr(record) and "'line'" in repr(record)


def test_new_record_copies_without_mutating() -> None:
    original = SourceRecord(
        {"p": 0}, {"o": 1}, "in", 0, None, "k", Schema.STRING_SCHEMA, "v", 123, [("h", 1)]
    )
    changed = original.new_record(topic="out", value="V")
    assert type(changed) is SourceRecord
    assert (original.topic, original.value) == ("in", "v")
    assert (changed.topic, changed.value, changed.key, changed.timestamp) == ("out", "V", "k", 123)
    assert changed.source_offset == {"o": 1}
    changed.headers.add("new", 2)
    assert len(original.headers) == 1 and len(changed.headers) == 2
    with pytest.raises(TypeError, match="nope"):
        original.new_record(nope=1)


def test_sink_record_originals_survive_new_record() -> None:
    record = SinkRecord("orders", 3, None, b"k", None, b"v", 42, 1000, TimestampType.CREATE_TIME)
    assert (
        record.original_topic,
        record.original_kafka_partition,
        record.original_kafka_offset,
    ) == ("orders", 3, 42)
    routed = record.new_record(topic="orders-2024", kafka_partition=0)
    assert routed.topic == "orders-2024" and routed.kafka_partition == 0
    assert routed.original_topic == "orders" and routed.original_kafka_partition == 3
    assert routed.original_topic_partition == TopicPartition("orders", 3)
    assert routed.kafka_offset == 42 and routed.timestamp_type is TimestampType.CREATE_TIME
    assert record.topic == "orders"
    assert record != routed


def test_base_record() -> None:
    record = ConnectRecord("t", value=1)
    assert record.new_record(value=2).value == 2 and record.value == 1


def test_copier_replaces_attributes_positionally_and_copies_headers() -> None:
    record = SinkRecord("t", 1, None, "k", None, "v", 7, 1000, headers=[("h", b"1")])
    copy = SinkRecord.copier("value_schema", "value")
    assert copy is SinkRecord.copier("value_schema", "value")  # generated once
    new = copy(record, None, "w")
    assert (new.value, new.key, new.kafka_offset, new.original_topic) == ("w", "k", 7, "t")
    assert new.headers is not record.headers and list(new.headers) == list(record.headers)
    assert new == record.new_record(value="w")


def test_copier_refuses_headers_and_unknown_attributes() -> None:
    with pytest.raises(TypeError, match="headers"):
        SinkRecord.copier("headers")
    with pytest.raises(TypeError, match="no attribute"):
        SinkRecord.copier("nope")


def test_new_record_keywords_reach_the_generated_copy() -> None:
    record = SourceRecord({"p": 1}, {"o": 2}, "t", None, None, None, None, "v")
    new = record.new_record(topic="u", kafka_partition=3)
    assert (new.topic, new.kafka_partition, new.value, new.source_offset) == ("u", 3, "v", {"o": 2})
    assert record.topic == "t"
    with pytest.raises(TypeError, match="no attribute"):
        record.new_record(kafka_offset=1)  # a sink record's attribute
