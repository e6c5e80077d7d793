"""The per-batch cost of the task metrics counted on the data path, in one tree of the repo.

Run from a repository root (or give one), once per tree to compare, alternating:

    uv run --no-sync python bench/metrics_batch_cost.py [ROOT]

Times, with ``timeit`` (best of 5 runs), the per-batch code the metrics touch, each on its
own with the rest stubbed (no broker, no plugin host process):

* ``host source poll``: the host's ``SourceRunner.poll()`` of a task returning one record
  (StringConverter), where poll() is timed and the answer carries the time and error counts;
* ``host sink put``: the host's ``SinkRunner.put()`` of one consumed record to a task that
  does nothing, whose answer carries the error counts;
* ``worker source collect``: the worker loop's ``_collect`` of a poll's answer (its records
  queued by a no-op), where the poll time and error counts are added to the counters;
* ``worker sink settle``: the worker loop's ``_settle`` + ``_account`` of a put's answer for
  a batch of 2,000 records of one partition, where sink-record-active-count is kept.

Prints ns per call for each.
"""

from __future__ import annotations

import sys
import timeit
import types
from pathlib import Path
from typing import Any

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]).resolve()
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "isolation" / "_hostside"))

import core  # noqa: E402

assert Path(core.__file__).resolve().is_relative_to(ROOT), core.__file__

from copycat_batch import ConsumedBatch  # noqa: E402
from copycat_converters.simple import StringConverter  # noqa: E402
from copycat_pipeline import HostSinkTaskContext, Pipeline, SinkRunner, SourceRunner  # noqa: E402

from core.runtime.counters import TaskCounters  # noqa: E402
from core.runtime.sink import SinkTaskLoop  # noqa: E402
from core.runtime.source import SourceTaskLoop  # noqa: E402
from isolation import PollResult, SinkActions  # noqa: E402
from plugin_api import STRING_SCHEMA, SinkTask, SourceRecord, SourceTask  # noqa: E402

NUMBER = 200_000
BATCH = 2_000


class OneRecord(SourceTask):
    def __init__(self) -> None:
        self.records = [SourceRecord({"p": 1}, {"o": 1}, "t", None, None, None, STRING_SCHEMA, "v")]

    def version(self) -> str:
        return "1"

    def start(self, props: Any) -> None:
        pass

    def poll(self) -> Any:
        return self.records

    def stop(self) -> None:
        pass


class Nothing(SinkTask):
    def version(self) -> str:
        return "1"

    def start(self, props: Any) -> None:
        pass

    def put(self, records: Any) -> None:
        pass

    def stop(self) -> None:
        pass


def best_ns(stmt: Any, number: int = NUMBER) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=5)) / number * 1e9


def main() -> None:
    key, value = StringConverter(), StringConverter()
    key.configure({}, True)
    value.configure({}, False)
    source = SourceRunner(OneRecord(), Pipeline(key, value, None))
    sink = SinkRunner(Nothing(), Pipeline(key, value, None), HostSinkTaskContext({}, False))
    one = ConsumedBatch(1, "t", 0, [5], [1], [1], None, [b"v"], None).wire()

    # The worker's source loop: one poll's answer collected.
    answer = source.poll()
    worker_source = types.SimpleNamespace(
        host=types.SimpleNamespace(pending=True, poll_result=lambda: PollResult(*answer)),
        counters=TaskCounters(),
        _queue=lambda result: None,
    )
    collect = types.MethodType(SourceTaskLoop._collect, worker_source)

    # The worker's sink loop: a put's answer settled and its batch accounted.
    put_answer = sink.put(one)
    batch = ConsumedBatch(
        BATCH, "t", 0, list(range(BATCH)), [1] * BATCH, [1] * BATCH, None, [b"v"] * BATCH, None
    )
    loop: Any = types.SimpleNamespace(
        host=types.SimpleNamespace(put_result=lambda: SinkActions(*put_answer)),
        counters=TaskCounters(),
        errors=None,
        _unaccounted=None,
        _recent=__import__("collections").deque(maxlen=0),
        _first_put={},
        _current={},
        _committed={("t", 0): 0},
        _active=0,
        records_put=0,
        progress=(0, 0.0),
        _clock=lambda: 0.0,
        _retry_started=None,
        _retry_attempt=0,
        _apply=lambda actions: None,
    )
    loop._account = types.MethodType(SinkTaskLoop._account, loop)
    settle = types.MethodType(SinkTaskLoop._settle, loop)

    def sink_settle() -> None:
        loop._inflight = batch
        settle()

    for name, stmt in (
        ("host source poll", source.poll),
        ("host sink put", lambda: sink.put(one)),
        ("worker source collect", collect),
        ("worker sink settle", sink_settle),
    ):
        print(f"{name:24s} {best_ns(stmt):8.1f} ns")


if __name__ == "__main__":
    main()
