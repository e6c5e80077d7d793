"""What checking source offsets and transform results costs per record, in one process.

Run from the repository root:

    uv run python bench/offset_check_costs.py

A plugin host refuses a poll whose offsets cannot be stored (``validate_offset_format`` on
the last partition and offset of each source partition, once per poll) and a transform whose
result is no record (a type check after each stage, per record). Measured here against the
same code without the checks, alternating, best of ``REPEATS``:

* the offsets check on its own, per poll, for FileStreamSource's shapes (partition
  ``{"filename": ...}``, offset ``{"position": n}``), and ``SourceRunner.poll()`` of a
  SourceRecordBatch of ``SOURCE_BATCH`` 100 B lines with and without it;
* a 3-stage transform chain per record with and without the result's type check.
"""

from __future__ import annotations

import sys
import timeit
from collections.abc import Callable, Mapping
from typing import Any

from copycat_converters.simple import StringConverter

from isolation.host import HOSTSIDE_DIR
from plugin_api import SourceRecord, SourceRecordBatch, SourceTask, Transformation

sys.path.insert(0, str(HOSTSIDE_DIR))  # the host-side modules, as a plugin host imports them
import copycat_pipeline  # noqa: E402
from copycat_errors import StageFailure  # noqa: E402
from copycat_pipeline import Pipeline, SourceRunner, TransformStage  # noqa: E402

REPEATS = 7
# Alternating rounds of each comparison; the best of each side counts (a shared machine's
# noise only ever adds time).
ROUNDS = 5
# FileStreamSource's records per poll() in bench/pipeline_bench.py, and a small poll.
SOURCE_BATCH = 5000
SMALL_POLL = 10
LINE = "x" * 100
PARTITION = {"filename": "/tmp/input.txt"}


class BatchSource(SourceTask):
    """Answers the same SourceRecordBatch on every poll."""

    def __init__(self, size: int) -> None:
        offsets = [{"position": 101 * (i + 1)} for i in range(size)]
        self.batch = SourceRecordBatch(PARTITION, offsets, "t", [LINE] * size)

    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def poll(self) -> Any:
        return self.batch

    def stop(self) -> None:
        pass


class Identity(Transformation[SourceRecord]):
    def apply(self, record: SourceRecord) -> SourceRecord:
        return record


def unchecked_chain(stages: list[TransformStage]) -> Callable[[Any], Any]:
    """The chain as it was before the type check (copycat_pipeline._make_chain)."""
    chain = tuple(stages)

    def transform(record: Any) -> Any:
        for stage in chain:
            try:
                record = stage.apply(record)
            except Exception as exc:
                raise StageFailure("TRANSFORMATION", stage.transform, exc) from exc
            if record is None:
                return None
        return record

    return transform


def best_ns(call: Callable[[], object], number: int) -> float:
    return min(timeit.repeat(call, number=number, repeat=REPEATS)) / number * 1e9


def main() -> None:
    checked = copycat_pipeline._check_offsets
    task = BatchSource(1)
    records = [SourceRecord(PARTITION, {"position": 101}, "t", value=LINE)]
    pairs = [(PARTITION, {"position": 101})]
    converter = StringConverter()
    converter.configure({}, is_key=False)
    print("offsets check, ns per poll of FileStreamSource's shapes (one partition):")
    print(f"  _check_offsets: {best_ns(lambda: checked(task, records, pairs), 200_000):6.0f}")

    for size in (SOURCE_BATCH, SMALL_POLL):
        runner = SourceRunner(BatchSource(size), Pipeline(None, converter, None))
        polls = max(20, 100_000 // size)
        without, with_ = [], []
        for _ in range(ROUNDS):
            copycat_pipeline._check_offsets = lambda *_: None
            without.append(best_ns(runner.poll, polls) / size)
            copycat_pipeline._check_offsets = checked
            with_.append(best_ns(runner.poll, polls) / size)
        print(
            f"SourceRunner.poll() of {size} x 100 B lines, ns per record, best of {ROUNDS} "
            f"alternating rounds: {min(without):.1f} without / {min(with_):.1f} with the "
            f"check (+{min(with_) - min(without):.2f})"
        )

    stages = [TransformStage(f"s{i}", Identity()) for i in range(3)]
    new = copycat_pipeline._make_chain(stages, SourceRecord)
    assert new is not None
    old = unchecked_chain(stages)
    record = records[0]
    before, after = [], []
    for _ in range(ROUNDS):
        before.append(best_ns(lambda: old(record), 200_000))
        after.append(best_ns(lambda: new(record), 200_000))
    added = min(after) - min(before)
    print(
        f"3-stage transform chain, ns per record, best of {ROUNDS} alternating rounds: "
        f"{min(before):.1f} unchecked / {min(after):.1f} checked (+{added:.1f}, "
        f"{added / len(stages):.1f} per stage)"
    )


if __name__ == "__main__":
    main()
