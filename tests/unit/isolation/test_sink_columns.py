"""The sink runner's column path gives the task exactly what the per-record path gives it.

A batch of one topic (without headers, unless no converter reads them and the header converter
cannot fail) is converted column by column and its SinkRecords are built without the
constructor (isolation/_hostside/copycat_pipeline.py); everything else, and any batch a
converter refuses, goes record by record. These tests run the host-side runner in
this process with the bundled converters.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import pytest
from copycat_converters.json_converter import JsonConverter
from copycat_converters.simple import ByteArrayConverter, StringConverter

from isolation import SinkActions
from isolation.host import HOSTSIDE_DIR
from plugin_api import ConnectException, DataException, SinkRecord, SinkTask, Transformation

sys.path.insert(0, str(HOSTSIDE_DIR))  # the host-side modules, as a plugin host imports them
from copycat_batch import ConsumedBatch  # noqa: E402
from copycat_errors import ErrorPolicy  # noqa: E402
from copycat_pipeline import HostSinkTaskContext, Pipeline, SinkRunner, TransformStage  # noqa: E402

SLOTS = sorted(
    {slot for klass in SinkRecord.__mro__ for slot in klass.__dict__.get("__slots__", ())}
)


class KeepingTask(SinkTask):
    def __init__(self) -> None:
        self.records: list[SinkRecord] = []

    def version(self) -> str:
        return "1"

    def start(self, props: Any) -> None:
        pass

    def put(self, records: Sequence[SinkRecord]) -> None:
        self.records.extend(records)

    def stop(self) -> None:
        pass


def _converter(cls: type, **configs: Any) -> Any:
    converter = cls()
    converter.configure(configs, False)
    return converter


def _runner(
    key: Any,
    value: Any,
    stages: Sequence[TransformStage] = (),
    errors: dict[str, str] | None = None,
) -> tuple[SinkRunner, KeepingTask]:
    task = KeepingTask()
    runner = SinkRunner(
        task,
        Pipeline(key, value, None, stages),
        HostSinkTaskContext({}, False),
        ErrorPolicy(errors),
    )
    return runner, task


def _slots(record: SinkRecord) -> dict[str, Any]:
    return {slot: getattr(record, slot) for slot in SLOTS}


def _rows(count: int, *, keys: bool = False, partitions: int = 1) -> list[tuple]:
    return [
        (
            "orders",
            i % partitions,
            100 + i,
            1_700_000_000_000 + i,
            1,
            b"key-%d" % (i % 4) if keys else None,
            b"value %d \xc3\xa9" % i,
            None,
        )
        for i in range(count)
    ]


@pytest.mark.parametrize("keys", [False, True])
@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("converter", [StringConverter, ByteArrayConverter])
def test_records_match_the_constructor_slot_for_slot(
    keys: bool, partitions: int, converter: type
) -> None:
    rows = _rows(50, keys=keys, partitions=partitions)
    runner, task = _runner(_converter(converter), _converter(converter))
    runner.put(ConsumedBatch.from_rows(rows).wire())
    by_constructor = [runner._convert(row) for row in rows]  # the per-record path
    assert len(task.records) == 50
    assert [_slots(r) for r in task.records] == [_slots(r) for r in by_constructor]
    assert all(type(r) is SinkRecord for r in task.records)
    assert task.records[0].value == (
        "value 0 é" if converter is StringConverter else b"value 0 \xc3\xa9"
    )


def test_records_do_not_share_a_mutable_key() -> None:
    rows = [("t", 0, i, None, 0, b'{"id": 1}', b"%d" % i, None) for i in range(3)]
    runner, task = _runner(
        _converter(JsonConverter, **{"schemas.enable": "false"}), _converter(StringConverter)
    )
    runner.put(ConsumedBatch.from_rows(rows).wire())
    assert [r.key for r in task.records] == [{"id": 1}] * 3
    key = task.records[0].key
    assert isinstance(key, dict)
    key["id"] = 2
    assert task.records[1].key == {"id": 1}


def test_a_converter_without_a_batch_method_is_called_per_record() -> None:
    class PlainConverter:  # duck-typed: not derived from plugin_api.Converter
        calls = 0

        def to_connect_data(self, topic: str, data: bytes | None, headers: Any = None) -> Any:
            PlainConverter.calls += 1
            return (None, data.upper() if data else data)

    runner, task = _runner(None, PlainConverter())
    runner.put(ConsumedBatch.from_rows(_rows(5)).wire())
    assert PlainConverter.calls == 5
    assert task.records[4].value == b"VALUE 4 \xc3\xa9"


def test_a_batch_method_returning_too_few_results_fails_the_put() -> None:
    class ShortConverter(StringConverter):
        def to_connect_data_column(self, topic: str, data: Any, headers: Any) -> Any:
            return None  # cannot say: the runtime asks to_connect_data_batch

        def to_connect_data_batch(self, topic: str, data: Any, headers: Any) -> Any:
            return super().to_connect_data_batch(topic, data[:-1], headers[:-1])

    runner, _ = _runner(None, _converter(ShortConverter))
    with pytest.raises(
        ConnectException,
        match="ShortConverter.to_connect_data_batch returned 4 "
        "results for 5 records of topic orders",
    ):
        runner.put(ConsumedBatch.from_rows(_rows(5)).wire())


def test_a_column_method_returning_too_few_values_fails_the_put() -> None:
    class ShortColumn(StringConverter):
        def to_connect_data_column(self, topic: str, data: Any, headers: Any) -> Any:
            schema, values = super().to_connect_data_column(topic, data, headers)
            return schema, values[:-2]

    runner, task = _runner(None, _converter(ShortColumn))
    with pytest.raises(
        ConnectException,
        match="ShortColumn.to_connect_data_column returned 3 results for 5 records of topic orders",
    ):
        runner.put(ConsumedBatch.from_rows(_rows(5)).wire())
    assert task.records == []


def test_a_bad_record_in_a_column_is_reported_against_its_offset() -> None:
    rows = _rows(6)
    rows[3] = rows[3][:6] + (b"\xff not json",) + rows[3][7:]
    runner, task = _runner(
        None,
        _converter(JsonConverter, **{"schemas.enable": "false"}),
        errors={"errors.tolerance": "all"},
    )
    good = [(r[:6] + (b'"%d"' % i,) + r[7:]) if i != 3 else r for i, r in enumerate(rows)]
    actions = runner.put(ConsumedBatch.from_rows(good).wire())
    assert [r.kafka_offset for r in task.records] == [100, 101, 102, 104, 105]
    [(topic, partition, offset, stage, *_)] = SinkActions(*actions).failed
    assert (topic, partition, offset, stage) == ("orders", 0, 103, "VALUE_CONVERTER")


class DropEvenFailOnFive(Transformation):
    """Drops records with an even offset, raises on offset 105."""

    def configure(self, configs: Any) -> None:
        pass

    def apply(self, record: Any) -> Any:
        if record.kafka_offset == 105:
            raise DataException("offset 105 is poison")
        return None if record.kafka_offset % 2 == 0 else record

    def config(self) -> Any:
        return None

    def close(self) -> None:
        pass


def test_a_failing_transform_names_the_record_even_after_dropped_ones() -> None:
    runner, task = _runner(
        None,
        _converter(StringConverter),
        [TransformStage("t", DropEvenFailOnFive())],
        errors={"errors.tolerance": "all"},
    )
    actions = runner.put(ConsumedBatch.from_rows(_rows(8)).wire())
    assert [r.kafka_offset for r in task.records] == [101, 103, 107]
    assert [(f[2], f[3], f[6]) for f in SinkActions(*actions).failed] == [
        (105, "TRANSFORMATION", "offset 105 is poison")
    ]


def test_without_tolerance_a_failing_transform_stops_the_batch_and_is_reported() -> None:
    """Nothing of the batch is put; the failing record comes back for the worker to report
    (log, dead letter queue) before it fails the task."""
    runner, task = _runner(
        None, _converter(StringConverter), [TransformStage("t", DropEvenFailOnFive())]
    )
    actions = runner.put(ConsumedBatch.from_rows(_rows(8)).wire())
    assert task.records == []
    assert [(f[2], f[3], f[6]) for f in SinkActions(*actions).failed] == [
        (105, "TRANSFORMATION", "offset 105 is poison")
    ]


@pytest.mark.parametrize("value", [StringConverter, JsonConverter])
def test_headers_without_a_header_converter_keep_their_bytes(value: type) -> None:
    rows = [r[:7] + ([("trace", b"abc")],) for r in _rows(3)]
    rows = [(*r[:6], b'"v"', r[7]) for r in rows]
    runner, task = _runner(None, _converter(value, **{"schemas.enable": "false"}))
    runner.put(ConsumedBatch.from_rows(rows).wire())
    by_constructor = [runner._convert(row) for row in rows]  # the per-record path
    assert [_slots(r) for r in task.records] == [_slots(r) for r in by_constructor]
    assert [h.key for h in task.records[2].headers] == ["trace"]
    assert task.records[2].headers.last_with_name("trace").value == b"abc"
