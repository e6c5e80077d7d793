"""The source runner's column path answers exactly what the record-by-record path answers.

A poll without transforms, of one topic and no headers, is converted a column at a time
(``Converter.from_connect_data_batch``) into a ProducedBatch (isolation/_hostside/
copycat_pipeline.py); everything else, and any batch a converter refuses, goes record by record.
These tests run the host-side runner in this process with the bundled converters.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from copycat_converters.json_converter import JsonConverter
from copycat_converters.simple import StringConverter

from isolation.host import HOSTSIDE_DIR
from plugin_api import (
    INT32_SCHEMA,
    STRING_SCHEMA,
    Converter,
    DataException,
    SchemaAndValue,
    SourceRecord,
    SourceRecordBatch,
    SourceTask,
)

sys.path.insert(0, str(HOSTSIDE_DIR))  # the host-side modules, as a plugin host imports them
from copycat_batch import ProducedBatch  # noqa: E402
from copycat_errors import ErrorPolicy  # noqa: E402
from copycat_pipeline import Pipeline, SourceRunner  # noqa: E402


class ListSource(SourceTask):
    """Returns the records it was given, once."""

    def __init__(self, records: list[SourceRecord]) -> None:
        self.records = records

    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def poll(self) -> list[SourceRecord]:
        records, self.records = self.records, []
        return records

    def stop(self) -> None:
        pass


class RefusingConverter(Converter):
    """StringConverter's bytes, but refuses the value "bad" (a per-record DataException)."""

    def from_connect_data(
        self, topic: str, schema: Any, value: object, headers: Any = None
    ) -> bytes | None:
        if value == "bad":
            raise DataException("bad value")
        return None if value is None else str(value).encode()

    def to_connect_data(self, topic: str, data: bytes | None, headers: Any = None) -> Any:
        return SchemaAndValue(None, data)


class ShortBatchConverter(RefusingConverter):
    """A batch method that loses a record: the runner must not trust it."""

    def from_connect_data_batch(
        self, topic: str, schemas: Sequence[Any], values: Sequence[object], headers: Any
    ) -> Sequence[bytes | None]:
        return list(super().from_connect_data_batch(topic, schemas, values, headers))[:-1]


def _string(is_key: bool) -> StringConverter:
    converter = StringConverter()
    converter.configure({}, is_key)
    return converter


def _poll(
    records: list[SourceRecord],
    *,
    by_column: bool,
    key: Converter | None = None,
    value: Converter | None = None,
    errors: dict[str, str] | None = None,
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, Any]], int]:
    """``(rows, failures, offsets, size)`` of one poll; ``by_column`` False forces the
    record-by-record path on the same batch."""
    runner = SourceRunner(
        ListSource(records),
        Pipeline(key or _string(True), value or _string(False), None),
        ErrorPolicy(errors),
    )
    runner._by_column = by_column
    wire, failures, offsets, *_ = runner.poll()
    batch = ProducedBatch.from_wire(wire)
    return list(batch.rows()), failures, offsets, batch.size


def _records(count: int, **fields: Any) -> list[SourceRecord]:
    partition = {"file": "f"}
    return [
        SourceRecord(
            partition,
            {"position": i},
            fields.get("topic", "t"),
            fields.get("partition"),
            None,
            fields.get("key"),
            STRING_SCHEMA,
            f"line {i} é" if i % 5 else None,
            1_700_000_000_000,
        )
        for i in range(count)
    ]


CASES: dict[str, list[SourceRecord]] = {
    "plain": _records(20),
    "keys and a partition": _records(20, key="k", partition=2),
    "several topics": [
        SourceRecord({"f": 1}, {"p": i}, f"t{i % 2}", value=f"v{i}") for i in range(6)
    ],
    "headers": [
        SourceRecord({"f": 1}, {"p": i}, "t", value=f"v{i}", headers=[("h", "x")]) for i in range(6)
    ],
    "other values and timestamps": [
        SourceRecord({"f": 1}, {"p": 0}, "t", None, None, None, INT32_SCHEMA, 7, 5),
        SourceRecord({"f": 1}, {"p": 1}, "t", None, None, b"k", None, b"raw", None),
        SourceRecord({"f": 2}, {"p": 2}, "t", None, None, None, None, "\ud800 surrogate", 6),
    ],
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_column_path_answers_what_each_record_gives(case: str) -> None:
    records = CASES[case]
    assert _poll(records, by_column=True) == _poll(records, by_column=False)
    rows, failures, offsets, size = _poll(records, by_column=True)
    assert size == len(records) and failures == []
    assert [row[0] for row in rows] == list(range(len(records)))  # sequence numbers


def test_a_plain_batch_shares_its_uniform_columns() -> None:
    runner = SourceRunner(ListSource(_records(10)), Pipeline(_string(True), _string(False), None))
    batch = ProducedBatch.from_wire(runner.poll()[0])
    assert (batch.topics, batch.partitions, batch.keys, batch.headers) == ("t", None, None, None)
    assert batch.timestamps == 1_700_000_000_000
    assert batch.values[1] == "line 1 é".encode() and batch.values[0] is None


def test_the_last_offset_of_each_source_partition_is_reported() -> None:
    records = [SourceRecord({"f": i % 3}, {"p": i}, "t", value="v") for i in range(7)] + [
        SourceRecord(None, None, "t", value="no offset")
    ]
    _, _, offsets, _ = _poll(records, by_column=True)
    assert offsets == [({"f": 0}, {"p": 6}), ({"f": 1}, {"p": 4}), ({"f": 2}, {"p": 5})]
    _, _, offsets, _ = _poll(_records(4), by_column=True)
    assert offsets == [({"file": "f"}, {"position": 3})]


@pytest.mark.parametrize("converter", [RefusingConverter, ShortBatchConverter])
def test_a_refused_record_is_reported_against_itself(converter: type[Converter]) -> None:
    records = [SourceRecord({"f": 1}, {"p": i}, "t", value=v) for i, v in enumerate("ab")] + [
        SourceRecord({"f": 1}, {"p": 2}, "t", value="bad"),
        SourceRecord({"f": 1}, {"p": 3}, "t", value="c"),
    ]
    tolerate = {"errors.tolerance": "all"}
    rows, failures, offsets, _ = _poll(records, by_column=True, value=converter(), errors=tolerate)
    assert [(row[1], row[4]) for row in rows] == [
        ("t", b"a"),
        ("t", b"b"),
        (None, None),
        ("t", b"c"),
    ]
    assert [(f[0], f[2], f[5]) for f in failures] == [(2, "VALUE_CONVERTER", "bad value")]
    assert offsets == [({"f": 1}, {"p": 3})]  # the refused record's offset still counts
    # errors.tolerance=none: the poll stops at the refused record, reported for the worker
    # to log before it fails the task; the records before it are sent, their offsets count.
    rows, failures, offsets, _ = _poll(records, by_column=True, value=converter())
    assert [(row[1], row[4]) for row in rows] == [("t", b"a"), ("t", b"b")]
    assert [(f[0], f[2], f[5]) for f in failures] == [(2, "VALUE_CONVERTER", "bad value")]
    assert offsets == [({"f": 1}, {"p": 1})]


def test_a_json_converter_gives_the_same_bytes_by_column() -> None:
    json = JsonConverter()
    json.configure({"schemas.enable": "true"}, False)
    records = [r for r in _records(12) if r.value is not None]  # STRING_SCHEMA: required
    assert _poll(records, by_column=True, value=json) == _poll(records, by_column=False, value=json)


def test_the_offset_before_a_refused_record_is_known_for_a_batch_poll_only() -> None:
    """offsets_before(seq) (the worker asks when the producer refused record ``seq`` and the
    task fails): the offset of the record before it in its SourceRecordBatch poll, nothing for
    a poll's first record, and None for a list poll (not kept) or a poll no longer kept."""
    partition = {"filename": "f"}

    class Batches(SourceTask):
        def __init__(self) -> None:
            self.next = 0

        def version(self) -> str:
            return "1"

        def start(self, props: Mapping[str, str]) -> None:
            pass

        def poll(self) -> SourceRecordBatch:
            first, self.next = self.next, self.next + 3
            offsets = [{"position": n} for n in range(first, first + 3)]
            return SourceRecordBatch(partition, offsets, "t", [b"x"] * 3)

        def stop(self) -> None:
            pass

    runner = SourceRunner(Batches(), Pipeline(_string(True), _string(False), None))
    for _ in range(3):  # seqs 0-2, 3-5, 6-8; the last two polls are kept
        runner.poll()
    assert runner.offsets_before(7) == [(partition, {"position": 6})]
    assert runner.offsets_before(6) == []
    assert runner.offsets_before(5) == [(partition, {"position": 4})]
    assert runner.offsets_before(1) is None

    listed = SourceRunner(ListSource(_records(3)), Pipeline(_string(True), _string(False), None))
    listed.poll()
    assert listed.offsets_before(1) is None
