"""Record batches stay usable as the lists tasks were handed and returned before."""

from __future__ import annotations

import pytest
from plugin_api.records import SinkRecord, SourceRecord

from plugin_api import SinkRecordBatch, SourceRecordBatch


def _sink_records(values: list[str]) -> list[SinkRecord]:
    return [SinkRecord("t", 0, None, None, None, v, i) for i, v in enumerate(values)]


def test_a_sink_batch_concatenates_with_lists_either_way_into_lists() -> None:
    batch = SinkRecordBatch(("a", "b"), lambda: _sink_records(["a", "b"]))
    extra = _sink_records(["c"])
    combined = batch + extra
    assert type(combined) is list and [r.value for r in combined] == ["a", "b", "c"]
    before = extra + batch
    assert type(before) is list and [r.value for r in before] == ["c", "a", "b"]


def test_a_source_batch_concatenates_with_lists_into_lists() -> None:
    batch = SourceRecordBatch(
        source_partition={"f": "x"},
        source_offsets=[{"p": 1}, {"p": 2}],
        topic="t",
        values=["a", "b"],
    )
    more = [SourceRecord({"f": "x"}, {"p": 3}, "t", value="c")]
    assert [r.value for r in batch + more] == ["a", "b", "c"]
    assert [r.source_offset for r in more + batch] == [{"p": 3}, {"p": 1}, {"p": 2}]


def test_a_batch_does_not_concatenate_with_text() -> None:
    batch = SinkRecordBatch(("a",), lambda: _sink_records(["a"]))
    with pytest.raises(TypeError):
        _ = batch + "a"  # type: ignore[operator]
