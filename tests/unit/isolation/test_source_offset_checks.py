"""The source runner refuses a poll whose offsets cannot be stored, and a transform whose
result is no record, naming the record, the field and the transform's alias.

Runs the host-side runner (isolation/_hostside/copycat_pipeline.py) in this process.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import pytest
from copycat_converters.simple import StringConverter

from isolation.host import HOSTSIDE_DIR
from plugin_api import ConnectException, SourceRecord, SourceRecordBatch, SourceTask, Transformation

sys.path.insert(0, str(HOSTSIDE_DIR))  # the host-side modules, as a plugin host imports them
from copycat_errors import ErrorPolicy, StageFailure  # noqa: E402
from copycat_pipeline import Pipeline, SourceRunner, TransformStage, _make_chain  # noqa: E402


class ListSource(SourceTask):
    """Returns the records it was given, once."""

    def __init__(self, records: Any) -> None:
        self.records = records

    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def poll(self) -> Any:
        records, self.records = self.records, []
        return records

    def stop(self) -> None:
        pass


def _pipeline(*stages: TransformStage) -> Pipeline:
    converter = StringConverter()
    converter.configure({}, is_key=False)
    return Pipeline(None, converter, None, stages)


def _refusal(records: Any, *stages: TransformStage) -> str:
    with pytest.raises(ConnectException) as refused:
        SourceRunner(ListSource(records), _pipeline(*stages)).poll()
    return str(refused.value)


@pytest.mark.parametrize(
    ("partition", "offset", "what", "message"),
    [
        ({"p": 0}, 5, "source offset", "Offsets must be specified as a Map, not int"),
        ({"p": 0}, {"n": [1, 2]}, "source offset", "field n contains ARRAY"),
        ({"p": 0}, {"n": float("nan")}, "source offset", "field n contains nan"),
        ([1], {"n": 1}, "source partition", "Offsets must be specified as a Map, not list"),
        ({"p": [1]}, {"n": 1}, "source partition", "field p contains ARRAY"),
    ],
)
def test_the_last_offset_of_a_partition_that_cannot_be_stored_refuses_the_poll(
    partition: Any, offset: Any, what: str, message: str
) -> None:
    good = SourceRecord({"p": 0}, {"n": 0}, "t", value="good")
    bad = SourceRecord(partition, offset, "t", value="bad")
    for records, index in (([good, bad], 1), ([bad], 0)):
        refused = _refusal(records)
        assert "ListSource.poll() returned a source record for topic 't'" in refused
        assert f"record {index} of the batch, whose {what} cannot be stored: " in refused
        assert message in refused


def test_a_list_partition_among_others_is_named_not_an_attribute_error() -> None:
    records = [
        SourceRecord({"p": 0}, {"n": 0}, "t", value="a"),
        SourceRecord([1], {"n": 1}, "t", value="b"),  # type: ignore[arg-type]
        SourceRecord({"p": 0}, {"n": 2}, "t", value="c"),
    ]
    refused = _refusal(records)
    assert "record 1 of the batch, whose source partition cannot be stored" in refused


def test_an_offset_a_later_record_replaces_is_not_checked() -> None:
    """As Kafka, which validates at each flush what it would store: only the last offset of
    each partition in a poll is stored."""
    records = [
        SourceRecord({"p": 0}, {"n": float("nan")}, "t", value="a"),
        SourceRecord({"p": 0}, {"n": 1}, "t", value="b"),
    ]
    _batch, failures, offsets, *_ = SourceRunner(ListSource(records), _pipeline()).poll()
    assert (failures, offsets) == ([], [({"p": 0}, {"n": 1})])


def test_a_source_record_batch_is_checked_too() -> None:
    batch = SourceRecordBatch({"p": 0}, [{"n": 1}, {"n": float("inf")}], "t", values=["a", "b"])
    refused = _refusal(batch)
    assert "record 1 of the batch, whose source offset cannot be stored" in refused
    assert "field n contains inf, which is not a finite number" in refused


class _ReturnsDict(Transformation[SourceRecord]):
    def apply(self, record: SourceRecord) -> Any:
        return {"not": "a record"}


class _Identity(Transformation[SourceRecord]):
    def apply(self, record: SourceRecord) -> SourceRecord:
        return record


def test_a_transform_returning_no_record_fails_naming_its_alias() -> None:
    chain = _make_chain(
        [TransformStage("keep", _Identity()), TransformStage("shape", _ReturnsDict())],
        SourceRecord,
    )
    assert chain is not None
    with pytest.raises(StageFailure) as failed:
        chain(SourceRecord(None, None, "t", value="v"))
    stage, component, _cls, message, _trace = failed.value.info()
    assert (stage, component) == ("TRANSFORMATION", f"{__name__}._ReturnsDict")
    assert message == (
        f"transform 'shape' ({__name__}._ReturnsDict) returned dict, not a SourceRecord or None"
    )


def test_a_transform_returning_no_record_is_tolerated_as_one_that_raised() -> None:
    records = [SourceRecord({"p": 0}, {"n": i}, "t", value="v") for i in range(2)]
    runner = SourceRunner(
        ListSource(records),
        _pipeline(TransformStage("shape", _ReturnsDict())),
        ErrorPolicy({"errors.tolerance": "all"}),
    )
    _batch, failures, offsets, *_ = runner.poll()
    assert [f[0] for f in failures] == [0, 1]
    assert "returned dict, not a SourceRecord or None" in failures[0][5]
    # Skipped, so not sent: as in Kafka Connect, their source offsets are not committed.
    assert offsets == []


class _DropsX(Transformation[SourceRecord]):
    def apply(self, record: SourceRecord) -> SourceRecord | None:
        return None if record.value == "x" else record


def test_each_partitions_offset_is_its_last_record_sent() -> None:
    """As Kafka's sendRecords(), which tracks the offset of a record only once it is sent: a
    dropped record after a sent one leaves that one's offset, a partition of dropped records
    only has none."""
    records = [
        SourceRecord({"p": 0}, {"n": 0}, "t", value="a"),
        SourceRecord({"p": 0}, {"n": 1}, "t", value="x"),
        SourceRecord({"p": 1}, {"n": 0}, "t", value="x"),
    ]
    runner = SourceRunner(ListSource(records), _pipeline(TransformStage("drop", _DropsX())))
    _batch, failures, offsets, *_ = runner.poll()
    assert failures == []
    assert offsets == [({"p": 0}, {"n": 0})]


class _AddsHeader(StringConverter):
    def from_connect_data(
        self, topic: str, schema: Any, value: object, headers: Any = None
    ) -> bytes | None:
        if headers is not None:
            headers.add("added", "by-converter", None)
        return super().from_connect_data(topic, schema, value, headers)


def test_headers_a_value_converter_adds_are_sent_though_headers_convert_first() -> None:
    """Headers are converted before key and value (as Kafka's sendRecords()), and again
    when a converter added some (Converter.from_connect_data may)."""
    header_converter = StringConverter()
    header_converter.configure({}, is_key=None)
    value_converter = _AddsHeader()
    value_converter.configure({}, is_key=False)
    runner = SourceRunner(ListSource([]), Pipeline(None, value_converter, header_converter, ()))
    record = SourceRecord({"p": 0}, {"n": 0}, "t", value="v")
    record.headers.add("given", "x", None)
    row = runner._convert(record)
    assert row is not None
    assert row[4] == [("given", b"x"), ("added", b"by-converter")]


def test_the_offset_before_a_refused_record_is_the_last_one_sent_before_it() -> None:
    """offsets_before(seq) (the worker commits it when the producer refused record ``seq``
    of a SourceRecordBatch poll and the task fails): a record the SMT chain dropped before
    the refused one was never sent, so its offset is not the one committed."""
    partition = {"filename": "f"}

    class OneBatch(SourceTask):
        def version(self) -> str:
            return "1"

        def start(self, props: Mapping[str, str]) -> None:
            pass

        def poll(self) -> SourceRecordBatch:
            offsets = [{"position": n} for n in range(4)]
            return SourceRecordBatch(partition, offsets, "t", ["a", "x", "b", "x"])

        def stop(self) -> None:
            pass

    runner = SourceRunner(OneBatch(), _pipeline(TransformStage("drop", _DropsX())))
    runner.poll()  # seqs 0-3: "x" at 1 and 3 dropped
    assert runner.offsets_before(3) == [(partition, {"position": 2})]
    assert runner.offsets_before(2) == [(partition, {"position": 0})]
    assert runner.offsets_before(1) == [(partition, {"position": 0})]
    assert runner.offsets_before(0) == []
