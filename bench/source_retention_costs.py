"""What holding a source task's polls past their conversion costs the polls after them.

Run from the repository root:

    uv run python bench/source_retention_costs.py [--kept N] [--lines]

Builds 400 polls of 2,000 ``plugin_api.SourceRecord`` (100 B values, an offset dict each), as a
task that returns lists does, and hands each to a deque that keeps the last ``--kept`` polls
(0: none, as the host does; 2: what SourceRunner.offsets_before would need). With ``--lines``
the polls are 5,000 ``bytes`` lines of 1 KiB instead (a SourceRecordBatch's values column).
Prints ns per record, best of 5. Run the two settings alternately: the machine's spread is
larger than one run's.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plugin_api import SourceRecord  # noqa: E402

POLLS = 400
REPEATS = 5


def _records(poll: int, size: int) -> list[SourceRecord]:
    value = b"x" * 100
    return [
        SourceRecord(
            source_partition={"filename": "f"},
            source_offset={"position": poll * size + n},
            topic="t",
            value=value,
        )
        for n in range(size)
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kept", type=int, default=0, help="polls kept after their own")
    parser.add_argument("--lines", action="store_true", help="1 KiB bytes lines, not records")
    args = parser.parse_args()
    size = 5_000 if args.lines else 2_000
    data = os.urandom(1024 * size)

    def lines(_poll: int, count: int) -> list[bytes]:
        return [data[n * 1024 : (n + 1) * 1024] for n in range(count)]

    build = lines if args.lines else _records
    kept: collections.deque[object] = collections.deque(maxlen=args.kept or None)
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        for poll in range(POLLS):
            polled = build(poll, size)
            if args.kept:
                kept.append(polled)
            del polled
        times.append((time.perf_counter() - started) / POLLS / size * 1e9)
    what = "1 KiB lines" if args.lines else "SourceRecords"
    runs = " ".join(f"{t:.0f}" for t in times)
    print(f"{what}, {args.kept} polls kept: {min(times):.0f} ns a record (runs: {runs})")


if __name__ == "__main__":
    main()
