"""A task loop's counters: what its metrics are made of, counted where the loop runs.

The loop (:mod:`core.runtime.source`, :mod:`core.runtime.sink`) and its error reporter
(:mod:`core.errors`) add to a :class:`TaskCounters` once per batch, never per record: a few
integer additions per poll or put. Whoever drives the loop takes a :meth:`TaskCounters.take`
snapshot now and then (the worker's driver thread after each iteration when the loop runs in
the worker; the plugin host with each answer to the worker when it runs there,
:mod:`core.runtime.in_host`) and the worker turns the differences between snapshots into its
metrics (:mod:`core.task_metrics`). Snapshots are cumulative, so one that is never read loses
nothing; the maxima are "since the last snapshot" and start again after each.

Imports: standard library only (it runs in plugin hosts too).
"""

from __future__ import annotations

import threading

__all__ = [
    "FIELDS",
    "MAXIMA",
    "MINIMA",
    "MONOTONIC",
    "TAKE_EVERY_S",
    "SnapshotsSince",
    "TaskCounters",
]

# How often a driver takes a loop's counters (a snapshot costs a few microseconds to turn into
# metrics: after every iteration it would be measurable on the data path). Counters are
# cumulative and maxima kept until taken, so taking less often loses nothing.
TAKE_EVERY_S = 0.1

# The snapshot's fields, in order (see TaskCounters for their meaning).
FIELDS = (
    "batches",
    "batch_records",
    "batch_max",
    "records_in",
    "records_out",
    "records_done",
    "op_count",
    "op_ms",
    "op_max_ms",
    "commits_ok",
    "commits_failed",
    "commit_ms",
    "commit_max_ms",
    "commit_skips",
    "commit_seq",
    "partitions",
    "record_errors",
    "records_skipped",
    "errors_logged",
    "dlq_requests",
    "dlq_failures",
    "last_error_ms",
    "polls",
    "poll_ms",
    "poll_max_ms",
    "active",
    "active_count",
    "active_sum",
    "active_max",
    "record_failures",
    "retries",
    "transactions",
    "transaction_records",
    "transaction_min",
    "transaction_max",
)


# Fields that are maxima (minima) since the last snapshot, and fields that never decrease (within
# one instance of a task: a counter that went back means a new instance, e.g. a new Spark
# attempt). A minimum of -1 means none since the last snapshot.
MAXIMA = tuple(
    FIELDS.index(name)
    for name in ("batch_max", "op_max_ms", "commit_max_ms", "poll_max_ms", "active_max")
    + ("transaction_max",)
)
MINIMA = tuple(FIELDS.index(name) for name in ("transaction_min",))
MONOTONIC = tuple(
    FIELDS.index(name)
    for name in (
        "batches",
        "batch_records",
        "records_in",
        "records_out",
        "records_done",
        "op_count",
        "commits_ok",
        "commits_failed",
        "record_errors",
        "dlq_requests",
        "polls",
        "active_count",
        "record_failures",
        "retries",
        "transactions",
    )
)


class SnapshotsSince:
    """Snapshots taken by one thread (a Spark executor's driving loop, after each iteration),
    handed on by another (its heartbeat) as one: the latest, its maxima the largest since the
    last hand-over."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[float] | None = None

    def add(self, snapshot: tuple[float, ...] | None) -> None:
        if snapshot is None:
            return
        with self._lock:
            merged = list(snapshot)
            if self._pending is not None:
                for index in MAXIMA:
                    merged[index] = max(merged[index], self._pending[index])
                for index in MINIMA:
                    merged[index] = _min(merged[index], self._pending[index])
            self._pending = merged

    def take(self) -> list[float] | None:
        """The merged snapshot (None if none came since the last take)."""
        with self._lock:
            pending, self._pending = self._pending, None
        return pending


def _min(a: float, b: float) -> float:
    """The smaller of two minima, -1 standing for none."""
    if a < 0:
        return b
    if b < 0:
        return a
    return min(a, b)


class TaskCounters:
    """Cumulative counts of one task loop (plain attributes, added to by the loop's thread).

    * ``batches``/``batch_records``/``batch_max``: batches processed (a source's polls that
      returned records, a sink's puts), their records, the largest since the last snapshot.
    * ``records_in``: records a source's ``poll()`` returned (before transforms), or records a
      sink read from Kafka.
    * ``records_out``: a source's records written to Kafka (acknowledged, not skipped or
      dropped by a transform); a sink's records handed to ``put()`` (after transforms).
    * ``records_done``: a source's records settled either way (written, dropped or skipped):
      ``records_in - records_done`` are in flight.
    * ``op_count``/``op_ms``/``op_max_ms``: a sink's ``put()`` calls and their duration.
    * ``commits_*``: offset commits that succeeded or failed, and the successful ones' time.
    * ``commit_skips``/``commit_seq``: a sink's asynchronous commits that completed after a
      newer one had started, and the number of its latest commit (Kafka's commitSeqno).
    * ``partitions``: a sink's assigned partitions now.
    * ``record_errors``/``records_skipped``/``errors_logged``/``dlq_*``/``last_error_ms``:
      records that failed for good, those skipped (``errors.tolerance=all``), failures
      logged, dead letter queue writes and their failures, and the wall clock (ms) of the
      last failure.
    * ``polls``/``poll_ms``/``poll_max_ms``: a source's ``poll()`` calls that returned a list
      (empty or not; not None) and their duration (Kafka's poll-batch-time).
    * ``active``/``active_count``/``active_sum``/``active_max``: a sink's records consumed past
      its last committed offsets, now, and each value it took (one per batch put and per
      commit, rebalance or seek, as Kafka's SinkTaskMetricsGroup records it).
    * ``record_failures``/``retries``: failed attempts and retries of operations under
      errors.retry.* (converters, transforms) and other failed operations Kafka counts there
      (records a sink task reports errant, records the producer refused under
      errors.tolerance=all), as Kafka's ErrorHandlingMetrics.
    * ``transactions``/``transaction_records``/``transaction_min``/``transaction_max``: an
      exactly-once source's committed transactions and their records (the minimum -1 for none
      since the last snapshot).
    """

    __slots__ = FIELDS

    def __init__(self) -> None:
        self.batches = 0
        self.batch_records = 0
        self.batch_max = 0
        self.records_in = 0
        self.records_out = 0
        self.records_done = 0
        self.op_count = 0
        self.op_ms = 0.0
        self.op_max_ms = 0.0
        self.commits_ok = 0
        self.commits_failed = 0
        self.commit_ms = 0.0
        self.commit_max_ms = 0.0
        self.commit_skips = 0
        self.commit_seq = 0
        self.partitions = 0
        self.record_errors = 0
        self.records_skipped = 0
        self.errors_logged = 0
        self.dlq_requests = 0
        self.dlq_failures = 0
        self.last_error_ms = 0
        self.polls = 0
        self.poll_ms = 0.0
        self.poll_max_ms = 0.0
        self.active = 0
        self.active_count = 0
        self.active_sum = 0
        self.active_max = 0
        self.record_failures = 0
        self.retries = 0
        self.transactions = 0
        self.transaction_records = 0
        self.transaction_min = -1
        self.transaction_max = 0

    def batch(self, size: int) -> None:
        """One batch of ``size`` records processed."""
        self.batches += 1
        self.batch_records += size
        if size > self.batch_max:
            self.batch_max = size

    def operation(self, elapsed_ms: float) -> None:
        self.op_count += 1
        self.op_ms += elapsed_ms
        if elapsed_ms > self.op_max_ms:
            self.op_max_ms = elapsed_ms

    def commit(self, elapsed_ms: float, ok: bool) -> None:
        if not ok:
            self.commits_failed += 1
            return
        self.commits_ok += 1
        self.commit_ms += elapsed_ms
        if elapsed_ms > self.commit_max_ms:
            self.commit_max_ms = elapsed_ms

    def poll(self, elapsed_ms: float) -> None:
        """One ``poll()`` that returned a list, in ``elapsed_ms``."""
        self.polls += 1
        self.poll_ms += elapsed_ms
        if elapsed_ms > self.poll_max_ms:
            self.poll_max_ms = elapsed_ms

    def active_records(self, active: int) -> None:
        """A sink's records consumed past its last committed offsets are ``active`` now."""
        self.active = active
        self.active_count += 1
        self.active_sum += active
        if active > self.active_max:
            self.active_max = active

    def transaction(self, size: int) -> None:
        """An exactly-once source committed a transaction of ``size`` records."""
        self.transactions += 1
        self.transaction_records += size
        if size > self.transaction_max:
            self.transaction_max = size
        if size < self.transaction_min or self.transaction_min < 0:
            self.transaction_min = size

    def take(self) -> tuple[float, ...]:
        """A snapshot (values in :data:`FIELDS` order); the maxima start again."""
        snapshot = (
            self.batches,
            self.batch_records,
            self.batch_max,
            self.records_in,
            self.records_out,
            self.records_done,
            self.op_count,
            self.op_ms,
            self.op_max_ms,
            self.commits_ok,
            self.commits_failed,
            self.commit_ms,
            self.commit_max_ms,
            self.commit_skips,
            self.commit_seq,
            self.partitions,
            self.record_errors,
            self.records_skipped,
            self.errors_logged,
            self.dlq_requests,
            self.dlq_failures,
            self.last_error_ms,
            self.polls,
            self.poll_ms,
            self.poll_max_ms,
            self.active,
            self.active_count,
            self.active_sum,
            self.active_max,
            self.record_failures,
            self.retries,
            self.transactions,
            self.transaction_records,
            self.transaction_min,
            self.transaction_max,
        )
        self.batch_max = 0
        self.op_max_ms = 0.0
        self.commit_max_ms = 0.0
        self.poll_max_ms = 0.0
        self.active_max = 0
        self.transaction_min = -1
        self.transaction_max = 0
        return snapshot
