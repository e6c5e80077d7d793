"""A source record's timestamp reaches the producer as Kafka Connect hands it to its own.

Kafka's ConnectUtils.checkAndConvertTimestamp runs on every transformed source record: -1
(RecordBatch.NO_TIMESTAMP) means "no timestamp" (the producer stamps the record with its
clock), and any other negative timestamp fails the task with InvalidRecordException, whatever
errors.tolerance says. Copycat wrote both to the topic as they were (a consumer saw records
stamped -1 or -5). These tests run the host-side runner in this process.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import pytest
from copycat_converters.simple import StringConverter

from isolation.host import HOSTSIDE_DIR
from plugin_api import STRING_SCHEMA, SourceRecord, SourceRecordBatch, SourceTask

sys.path.insert(0, str(HOSTSIDE_DIR))  # the host-side modules, as a plugin host imports them
from copycat_batch import ProducedBatch  # noqa: E402
from copycat_errors import ContractViolation, ErrorPolicy  # noqa: E402
from copycat_pipeline import Pipeline, SourceRunner  # noqa: E402

# The column path (no transforms) and the record-by-record one (forced here) must agree.
PATHS = ["by column", "by record"]


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


def _string(is_key: bool) -> StringConverter:
    converter = StringConverter()
    converter.configure({}, is_key)
    return converter


def _runner(records: Any, path: str, errors: dict[str, str] | None = None) -> SourceRunner:
    runner = SourceRunner(
        ListSource(records), Pipeline(_string(True), _string(False), None), ErrorPolicy(errors)
    )
    runner._by_column = path == "by column"
    return runner


def _timestamps(records: Any, path: str) -> list[Any]:
    batch = ProducedBatch.from_wire(_runner(records, path).poll()[0])
    return [row[-1] for row in batch.rows()]


def _record(i: int, timestamp: int | None) -> SourceRecord:
    value = f"v{i}"
    return SourceRecord({"f": 1}, {"p": i}, "t", None, None, None, STRING_SCHEMA, value, timestamp)


@pytest.mark.parametrize("path", PATHS)
def test_minus_one_means_no_timestamp(path: str) -> None:
    assert _timestamps([_record(i, -1) for i in range(3)], path) == [None, None, None]
    mixed = [_record(0, -1), _record(1, 5), _record(2, None), _record(3, 0), _record(4, -1)]
    assert _timestamps(mixed, path) == [None, 5, None, 0, None]


def test_minus_one_in_a_batch_poll_means_no_timestamp() -> None:
    batch = SourceRecordBatch({"f": 1}, [{"p": 0}, {"p": 1}], "t", ["a", "b"], timestamp=-1)
    runner = _runner(batch, "by column")
    assert ProducedBatch.from_wire(runner.poll()[0]).timestamps is None


@pytest.mark.parametrize("path", PATHS)
def test_non_negative_timestamps_are_kept(path: str) -> None:
    records = [_record(0, 0), _record(1, 1_700_000_000_000), _record(2, None)]
    assert _timestamps(records, path) == [0, 1_700_000_000_000, None]


@pytest.mark.parametrize("tolerance", ["none", "all"])
@pytest.mark.parametrize("path", PATHS)
def test_another_negative_timestamp_fails_the_task_whatever_the_tolerance(
    path: str, tolerance: str
) -> None:
    records = [_record(0, None), _record(1, -5), _record(2, 7)]
    runner = _runner(records, path, {"errors.tolerance": tolerance})
    with pytest.raises(ContractViolation, match="^Invalid record timestamp -5$"):
        runner.poll()
    batch = SourceRecordBatch({"f": 1}, [{"p": 0}], "t", ["a"], timestamp=-2)
    with pytest.raises(ContractViolation, match="^Invalid record timestamp -2$"):
        _runner(batch, "by column", {"errors.tolerance": tolerance}).poll()


@pytest.mark.parametrize("path", PATHS)
def test_a_timestamp_that_is_no_number_fails_the_task_saying_so(path: str) -> None:
    records = [_record(0, 5), _record(1, "5")]  # type: ignore[arg-type]
    with pytest.raises(
        ContractViolation, match="must be epoch milliseconds .* got \\['int', 'str'\\]"
    ):
        _runner(records, path).poll()
