"""Kafka Connect's metrics of a worker, its connectors and tasks (ConnectMetricsRegistry's
names, groups and tags), made from what the worker sees and what the task loops count.

* ``connect-worker-metrics``: connector and task counts, start-up attempts and results of
  this worker; per connector with tasks here, its tasks' counts by status.
* ``connector-metrics`` (tag ``connector``): status, type, class and version of a connector
  this worker holds: its instance runs here, failed here, or it is STOPPED here.
* ``connector-task-metrics``, ``source-task-metrics`` / ``sink-task-metrics`` and
  ``task-error-metrics`` (tags ``connector``, ``task``): a task running here, from its loop's
  counters (:mod:`core.runtime.counters`), taken by the task's driver after each iteration
  (the loop in the worker) or from each answer of the plugin host (the loop in the host).
* ``connect-worker-rebalance-metrics``: distributed mode (:class:`RebalanceMetrics`).

Groups are closed (their metrics removed) when the connector or task is stopped or dropped
here, as Kafka's: a task that failed keeps its groups (status ``failed``, its error counts)
until it is restarted, deleted or rebalanced away.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable
from typing import Any

from core.metrics import MetricGroup, Metrics, MetricValue, Sensor
from core.runtime.counters import FIELDS, MONOTONIC

__all__ = [
    "CONNECTOR_GROUP",
    "REBALANCE_GROUP",
    "SINK_TASK_GROUP",
    "SOURCE_TASK_GROUP",
    "TASK_ERROR_GROUP",
    "TASK_GROUP",
    "WORKER_GROUP",
    "ConnectorMetrics",
    "RebalanceMetrics",
    "TaskMetrics",
    "WorkerMetrics",
    "metrics_from_config",
]

WORKER_GROUP = "connect-worker-metrics"
REBALANCE_GROUP = "connect-worker-rebalance-metrics"
CONNECTOR_GROUP = "connector-metrics"
TASK_GROUP = "connector-task-metrics"
SOURCE_TASK_GROUP = "source-task-metrics"
SINK_TASK_GROUP = "sink-task-metrics"
TASK_ERROR_GROUP = "task-error-metrics"

_I = {name: index for index, name in enumerate(FIELDS)}
# The task states a connector's per-worker task counts are broken down by (Kafka's).
_TASK_COUNT_STATES = ("running", "paused", "failed", "unassigned", "destroyed", "restarting")


def _lower(state: object) -> str:
    value = getattr(state, "value", state)
    return str(value).lower()


class WorkerMetrics:
    """``connect-worker-metrics`` of one worker.

    ``connectors()`` lists the connectors whose instance runs here; ``tasks()`` maps each
    connector with tasks here to their ids; ``task_state(connector, task)`` is a task's status.
    """

    def __init__(
        self,
        metrics: Metrics,
        connectors: Callable[[], Iterable[str]],
        tasks: Callable[[], dict[str, list[int]]],
        task_state: Callable[[str, int], str | None],
    ) -> None:
        self.metrics = metrics
        self._connectors = connectors
        self._tasks = tasks
        self._task_state = task_state
        self._lock = threading.Lock()
        self._per_connector: dict[str, MetricGroup] = {}
        group = self.group = metrics.group(WORKER_GROUP)
        group.gauge(
            "connector-count",
            "The number of connectors run in this worker.",
            lambda: float(len(list(self._connectors()))),
        )
        group.gauge(
            "task-count",
            "The number of tasks run in this worker.",
            lambda: float(sum(len(ids) for ids in self._tasks().values())),
        )
        self.connector_startups = self._startups(group, "connector")
        self.task_startups = self._startups(group, "task")

    @staticmethod
    def _startups(group: MetricGroup, what: str) -> tuple[Sensor, Sensor, Sensor, Sensor]:
        attempts, successes, failures = group.sensor(), group.sensor(), group.sensor()
        results = group.sensor()  # 1.0 a success, 0.0 a failure: windowed fractions
        group.total(
            f"{what}-startup-attempts-total",
            f"The total number of {what} startups that this worker has attempted.",
            attempts,
        )
        group.total(
            f"{what}-startup-success-total",
            f"The total number of {what} starts that succeeded.",
            successes,
        )
        group.total(
            f"{what}-startup-failure-total",
            f"The total number of {what} starts that failed.",
            failures,
        )
        group.add(
            f"{what}-startup-success-percentage",
            f"The average fraction of this worker's {what} starts that succeeded.",
            lambda now: _fraction(results, now, success=True),
        )
        group.add(
            f"{what}-startup-failure-percentage",
            f"The average fraction of this worker's {what} starts that failed.",
            lambda now: _fraction(results, now, success=False),
        )
        return attempts, successes, failures, results

    def connector_started(self, ok: bool) -> None:
        self._count(self.connector_startups, ok)

    def task_started(self, ok: bool) -> None:
        self._count(self.task_startups, ok)

    @staticmethod
    def _count(sensors: tuple[Sensor, Sensor, Sensor, Sensor], ok: bool) -> None:
        attempts, successes, failures, results = sensors
        attempts.record(1.0)
        results.record(1.0 if ok else 0.0)
        (successes if ok else failures).record(1.0)

    def close(self) -> None:
        with self._lock:
            groups = list(self._per_connector.values())
            self._per_connector.clear()
        for group in [*groups, self.group]:
            self.metrics.close_group(group)

    # -- per connector with tasks here ---------------------------------------------------------

    def sync_connectors(self) -> None:
        """Open a task-count group for each connector with tasks here, close the others (as
        Kafka's ConnectorStatusMetricsGroup, on each task added or removed)."""
        present = set(self._tasks())
        with self._lock:
            gone = [name for name in self._per_connector if name not in present]
            closing = [self._per_connector.pop(name) for name in gone]
            new = [name for name in present if name not in self._per_connector]
            for name in new:
                self._per_connector[name] = self._connector_group(name)
        for group in closing:
            self.metrics.close_group(group)

    def _connector_group(self, name: str) -> MetricGroup:
        group = self.metrics.group(WORKER_GROUP, connector=name)
        group.gauge(
            "connector-total-task-count",
            "The number of tasks of the connector on this worker.",
            lambda: float(len(self._tasks().get(name, []))),
        )
        for state in _TASK_COUNT_STATES:
            group.gauge(
                f"connector-{state}-task-count",
                f"The number of {state} tasks of the connector on this worker.",
                lambda state=state: float(self._count_state(name, state)),  # type: ignore[misc]
            )
        return group

    def _count_state(self, name: str, state: str) -> int:
        return sum(
            1 for task in self._tasks().get(name, []) if self._task_state(name, task) == state
        )


def _fraction(results: Sensor, now: float, *, success: bool) -> float:
    """The windowed fraction of results that were successes (or failures); 0.0 without any
    (Kafka's Frequencies answer 0 for an empty window)."""
    count = results.windowed_count(now)
    if not count:
        return 0.0
    ok = results.windowed_sum(now) / count
    return ok if success else 1.0 - ok


class ConnectorMetrics:
    """``connector-metrics`` of a connector this worker holds: its instance runs here, or
    failed here, or it is STOPPED here (Kafka's ConnectorMetricsGroup lives as long as the
    WorkerConnector). ``version`` is the installed plugin's until the instance tells its own.
    """

    def __init__(
        self,
        metrics: Metrics,
        name: str,
        kind: str,
        class_name: str,
        version: str,
        status: Callable[[], str | None],
    ) -> None:
        self.metrics = metrics
        self.version = version
        group = self.group = metrics.group(CONNECTOR_GROUP, connector=name)
        group.gauge(
            "status",
            "The status of the connector: unassigned, running, paused, failed, restarting "
            "or stopped.",
            lambda: status() or "unassigned",
        )
        group.gauge("connector-type", "The type of the connector: source or sink.", lambda: kind)
        group.gauge("connector-class", "The name of the connector class.", lambda: class_name)
        group.gauge(
            "connector-version", "The version of the connector class.", lambda: self.version
        )

    def close(self) -> None:
        self.metrics.close_group(self.group)


class _StateTimes:
    """How long a task has been in each state (Kafka's StateTracker), for its ratios."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.started = clock()
        self.state = "unassigned"
        self._since = self.started
        self._spent: dict[str, float] = {}

    def change(self, state: str) -> None:
        with self._lock:
            now = self._clock()
            self._spent[self.state] = self._spent.get(self.state, 0.0) + now - self._since
            self.state, self._since = state, now

    def ratio(self, state: str, now: float) -> float:
        with self._lock:
            total = now - self.started
            spent = self._spent.get(state, 0.0)
            if self.state == state:
                spent += now - self._since
        return spent / total if total > 0 else 0.0


class TaskMetrics:
    """A task's groups. ``counted``: its loop's counters reach :meth:`absorb` (a task on the
    local runtime); without them only its status and ratios exist (a task on Spark)."""

    def __init__(
        self,
        metrics: Metrics,
        connector: str,
        task_id: int,
        kind: str,
        *,
        counted: bool = True,
        transactional: bool = False,
    ) -> None:
        """``transactional``: an exactly-once source task (transaction-size metrics)."""
        self.metrics = metrics
        self.kind = kind
        self.transactional = transactional
        tags = {"connector": connector, "task": str(task_id)}
        self._times = _StateTimes(metrics.clock)
        task = self.task_group = metrics.group(TASK_GROUP, **tags)
        self.groups: list[MetricGroup] = [task]
        task.gauge(
            "status",
            "The status of the connector task: unassigned, running, paused, failed or restarting.",
            lambda: self._times.state,
        )
        task.add(
            "running-ratio",
            "The fraction of time this task has spent in the running state.",
            lambda now: self._times.ratio("running", now),
        )
        task.add(
            "pause-ratio",
            "The fraction of time this task has spent in the paused state.",
            lambda now: self._times.ratio("paused", now),
        )
        self._last: tuple[float, ...] = tuple(0 for _ in FIELDS)
        self._lock = threading.Lock()
        if not counted:
            return
        self._batch = task.sensor()
        task.avg(
            "batch-size-avg",
            "The average number of records in the batches the task has processed.",
            self._batch,
        )
        task.max(
            "batch-size-max",
            "The number of records in the largest batch the task has processed.",
            self._batch,
        )
        self._commit_time = task.sensor()
        task.avg(
            "offset-commit-avg-time-ms",
            "The average time in milliseconds taken by this task to commit offsets.",
            self._commit_time,
        )
        task.max(
            "offset-commit-max-time-ms",
            "The maximum time in milliseconds taken by this task to commit offsets.",
            self._commit_time,
        )
        self._commit_results = task.sensor()
        task.add(
            "offset-commit-success-percentage",
            "The average fraction of this task's offset commit attempts that succeeded.",
            lambda now: _fraction(self._commit_results, now, success=True),
        )
        task.add(
            "offset-commit-failure-percentage",
            "The average fraction of this task's offset commit attempts that failed.",
            lambda now: _fraction(self._commit_results, now, success=False),
        )
        self._in = task.sensor()
        self._out = task.sensor()
        if kind == "source":
            source = metrics.group(SOURCE_TASK_GROUP, **tags)
            self._source(source)
            if transactional:
                self._transactions(source)
        else:
            self._sink(metrics.group(SINK_TASK_GROUP, **tags))
        self._errors(metrics.group(TASK_ERROR_GROUP, **tags))

    def _value(self, field: str) -> Callable[[], MetricValue]:
        index = _I[field]
        return lambda: float(self._last[index])

    def _counted(self, field: str) -> Callable[[], float]:
        index = _I[field]
        return lambda: float(self._last[index])

    def _source(self, group: MetricGroup) -> None:
        self.groups.append(group)
        group.rate(
            "source-record-poll-rate",
            "The average per-second number of records produced/polled (before "
            "transformation) by this task.",
            self._in,
        )
        group.total(
            "source-record-poll-total",
            "The total number of records produced/polled (before transformation) by this task.",
            self._in,
        )
        group.rate(
            "source-record-write-rate",
            "The average per-second number of records written to Kafka for this task (after "
            "transformations, not counting records dropped or skipped).",
            self._out,
        )
        group.total(
            "source-record-write-total",
            "The number of records written to Kafka for this task (after transformations, "
            "not counting records dropped or skipped).",
            self._out,
        )
        self._active = group.sensor()
        in_, done = _I["records_in"], _I["records_done"]
        group.gauge(
            "source-record-active-count",
            "The number of records polled by the task but not yet written to Kafka.",
            lambda: float(self._last[in_] - self._last[done]),
        )
        group.max(
            "source-record-active-count-max",
            "The maximum number of records polled by the task but not yet written to Kafka.",
            self._active,
        )
        group.avg(
            "source-record-active-count-avg",
            "The average number of records polled by the task but not yet written to Kafka.",
            self._active,
        )

        self._poll_time = group.sensor()
        group.max(
            "poll-batch-max-time-ms",
            "The maximum time in milliseconds taken by this task to poll for a batch of "
            "source records.",
            self._poll_time,
        )
        group.avg(
            "poll-batch-avg-time-ms",
            "The average time in milliseconds taken by this task to poll for a batch of "
            "source records.",
            self._poll_time,
        )

    def _transactions(self, group: MetricGroup) -> None:
        """Kafka's TransactionMetricsGroup (ExactlyOnceWorkerSourceTask): records per
        committed transaction; in the source task's group, as Kafka's."""
        self._transaction = group.sensor()
        group.avg(
            "transaction-size-avg",
            "The average number of records in the transactions the task has committed.",
            self._transaction,
        )
        group.add(
            "transaction-size-min",
            "The number of records in the smallest transaction the task has committed.",
            self._transaction.min,
        )
        group.max(
            "transaction-size-max",
            "The number of records in the largest transaction the task has committed.",
            self._transaction,
        )

    def _sink(self, group: MetricGroup) -> None:
        self.groups.append(group)
        group.rate(
            "sink-record-read-rate",
            "The average per-second number of records read from Kafka for this task (before "
            "transformations).",
            self._in,
        )
        group.total(
            "sink-record-read-total",
            "The total number of records read from Kafka by this task (before transformations).",
            self._in,
        )
        group.rate(
            "sink-record-send-rate",
            "The average per-second number of records handed to the task's put() (after "
            "transformations).",
            self._out,
        )
        group.total(
            "sink-record-send-total",
            "The total number of records handed to the task's put() (after transformations).",
            self._out,
        )
        self._put_time = group.sensor()
        group.avg(
            "put-batch-avg-time-ms",
            "The average time in milliseconds taken by this task to put a batch of records.",
            self._put_time,
        )
        group.max(
            "put-batch-max-time-ms",
            "The maximum time in milliseconds taken by this task to put a batch of records.",
            self._put_time,
        )
        self._active_sink = group.sensor()
        group.gauge(
            "sink-record-active-count",
            "The number of records that have been read from Kafka but not yet completely "
            "committed/flushed/acknowledged by the sink task.",
            self._value("active"),
        )
        group.max(
            "sink-record-active-count-max",
            "The maximum number of records that have been read from Kafka but not yet "
            "completely committed/flushed/acknowledged by the sink task.",
            self._active_sink,
        )
        group.avg(
            "sink-record-active-count-avg",
            "The average number of records that have been read from Kafka but not yet "
            "completely committed/flushed/acknowledged by the sink task.",
            self._active_sink,
        )
        group.gauge(
            "partition-count",
            "The number of topic partitions assigned to this task.",
            self._value("partitions"),
        )
        group.gauge(
            "offset-commit-seq-no",
            "The current sequence number for offset commits.",
            self._value("commit_seq"),
        )
        self._completions = group.sensor()
        group.rate(
            "offset-commit-completion-rate",
            "The average per-second number of offset commit completions that succeeded.",
            self._completions,
        )
        group.total(
            "offset-commit-completion-total",
            "The total number of offset commit completions that succeeded.",
            self._completions,
        )
        self._skips = group.sensor()
        group.rate(
            "offset-commit-skip-rate",
            "The average per-second number of offset commit completions that arrived too "
            "late (after a newer commit had started) and were skipped.",
            self._skips,
        )
        group.total(
            "offset-commit-skip-total",
            "The total number of offset commit completions that arrived too late and were skipped.",
            self._skips,
        )

    def _errors(self, group: MetricGroup) -> None:
        self.groups.append(group)
        for name, field, description in (
            (
                "total-record-errors",
                "record_errors",
                "The number of record processing errors in this task (records that failed "
                "for good).",
            ),
            (
                "total-record-failures",
                "record_failures",
                "The number of record processing failures in this task (each failed attempt "
                "of an operation, retried or not).",
            ),
            (
                "total-retries",
                "retries",
                "The number of operations retried (errors.retry.timeout).",
            ),
            (
                "total-records-skipped",
                "records_skipped",
                "The number of records skipped due to errors (errors.tolerance=all).",
            ),
            (
                "total-errors-logged",
                "errors_logged",
                "The number of errors that were logged (errors.log.enable=true).",
            ),
            (
                "deadletterqueue-produce-requests",
                "dlq_requests",
                "The number of attempted writes to the dead letter queue.",
            ),
            (
                "deadletterqueue-produce-failures",
                "dlq_failures",
                "The number of failed writes to the dead letter queue.",
            ),
        ):
            # Kafka's CumulativeSum stats: Prometheus counters.
            group.counter(name, description, self._counted(field))
        group.gauge(
            "last-error-timestamp",
            "The epoch timestamp (ms) when this task last encountered an error.",
            self._value("last_error_ms"),
        )

    # -- what the driver tells ----------------------------------------------------------------

    def state(self, state: object) -> None:
        """The task's status changed (running, paused, failed, unassigned, ...)."""
        self._times.change(_lower(state))

    def absorb(self, snapshot: tuple[float, ...] | None) -> None:
        """A snapshot of the loop's counters (:meth:`TaskCounters.take`): the differences
        since the last one are recorded. Per batch at most; nothing when nothing changed."""
        if snapshot is None or len(self.groups) == 1:
            return
        with self._lock:
            last, self._last = self._last, snapshot
        if snapshot == last:
            return
        if any(snapshot[index] < last[index] for index in MONOTONIC):
            last = tuple(0 for _ in FIELDS)  # a new instance of the task (a Spark attempt)
        now = self.metrics.clock()
        i = _I
        batches = snapshot[i["batches"]] - last[i["batches"]]
        if batches > 0:
            self._batch.record_many(
                int(batches),
                snapshot[i["batch_records"]] - last[i["batch_records"]],
                snapshot[i["batch_max"]],
                now,
            )
        _delta(self._in, snapshot, last, i["records_in"], now)
        _delta(self._out, snapshot, last, i["records_out"], now)
        ok = snapshot[i["commits_ok"]] - last[i["commits_ok"]]
        failed = snapshot[i["commits_failed"]] - last[i["commits_failed"]]
        if ok > 0:
            self._commit_time.record_many(
                int(ok),
                snapshot[i["commit_ms"]] - last[i["commit_ms"]],
                snapshot[i["commit_max_ms"]],
                now,
            )
        if ok > 0 or failed > 0:
            self._commit_results.record_many(int(ok + failed), float(ok), 1.0 if ok else 0.0, now)
        if self.kind == "source":
            if snapshot[i["records_in"]] != last[i["records_in"]] or (
                snapshot[i["records_done"]] != last[i["records_done"]]
            ):
                self._active.record(snapshot[i["records_in"]] - snapshot[i["records_done"]], now)
            polls = snapshot[i["polls"]] - last[i["polls"]]
            if polls > 0:
                self._poll_time.record_many(
                    int(polls),
                    snapshot[i["poll_ms"]] - last[i["poll_ms"]],
                    snapshot[i["poll_max_ms"]],
                    now,
                )
            transactions = snapshot[i["transactions"]] - last[i["transactions"]]
            if transactions > 0 and self.transactional:
                self._transaction.record_many(
                    int(transactions),
                    snapshot[i["transaction_records"]] - last[i["transaction_records"]],
                    snapshot[i["transaction_max"]],
                    now,
                    minimum=snapshot[i["transaction_min"]],
                )
            return
        actives = snapshot[i["active_count"]] - last[i["active_count"]]
        if actives > 0:
            self._active_sink.record_many(
                int(actives),
                snapshot[i["active_sum"]] - last[i["active_sum"]],
                snapshot[i["active_max"]],
                now,
            )
        puts = snapshot[i["op_count"]] - last[i["op_count"]]
        if puts > 0:
            self._put_time.record_many(
                int(puts), snapshot[i["op_ms"]] - last[i["op_ms"]], snapshot[i["op_max_ms"]], now
            )
        if ok > 0:
            self._completions.record_many(int(ok), float(ok), 1.0, now)
        _delta(self._skips, snapshot, last, i["commit_skips"], now)

    def close(self) -> None:
        for group in self.groups:
            self.metrics.close_group(group)


def _delta(
    sensor: Sensor, now_: tuple[float, ...], last: tuple[float, ...], index: int, at: float
) -> None:
    change = now_[index] - last[index]
    if change > 0:
        sensor.record_many(1, float(change), float(change), at)


class RebalanceMetrics:
    """``connect-worker-rebalance-metrics`` of a distributed worker (Kafka's
    WorkerCoordinator and DistributedHerder's), told of each rebalance by the herder."""

    def __init__(
        self,
        metrics: Metrics,
        protocol: Callable[[], str] | None = None,
        rebalancing: Callable[[], bool] | None = None,
    ) -> None:
        """``protocol``: the group's Connect protocol now; ``rebalancing``: whether the
        member is between rebalances now (else: between a start and a success told)."""
        self.metrics = metrics
        self._rebalancing = rebalancing
        self._lock = threading.Lock()
        self.leader = ""
        self.generation = -1
        self.rebalancing = False
        self._started: float | None = None
        self._completed_at: float | None = None
        group = self.group = metrics.group(REBALANCE_GROUP)
        self._completed = group.sensor()
        self._time = group.sensor()
        if protocol is not None:
            group.gauge("connect-protocol", "The Connect protocol used by this cluster.", protocol)
        group.gauge("leader-name", "The name of the group leader.", lambda: self.leader)
        group.gauge(
            "epoch",
            "The epoch or generation number of this worker.",
            lambda: float(self.generation),
        )
        group.total(
            "completed-rebalances-total",
            "The total number of rebalances completed by this worker.",
            self._completed,
        )
        group.gauge(
            "rebalancing",
            "Whether this worker is currently rebalancing (1.0) or not (0.0).",
            lambda: 1.0 if self._is_rebalancing() else 0.0,
        )
        group.max(
            "rebalance-max-time-ms",
            "The maximum time in milliseconds spent by this worker to rebalance.",
            self._time,
        )
        group.avg(
            "rebalance-avg-time-ms",
            "The average time in milliseconds spent by this worker to rebalance.",
            self._time,
        )
        group.add(
            "time-since-last-rebalance-ms",
            "The time in milliseconds since this worker completed the most recent rebalance "
            "(+Inf before the first).",
            self._since_last,
        )

    def _is_rebalancing(self) -> bool:
        if self._rebalancing is not None:
            return self._rebalancing()
        return self.rebalancing

    def _since_last(self, now: float) -> float:
        at = self._completed_at
        return math.inf if at is None else now - at

    def rebalance_started(self) -> None:
        with self._lock:
            self.rebalancing = True
            if self._started is None:
                self._started = self.metrics.clock()

    def rebalance_succeeded(self, generation: int, leader: str) -> None:
        now = self.metrics.clock()
        with self._lock:
            started, self._started = self._started, None
            self.rebalancing = False
            self.generation = generation
            self.leader = leader
            self._completed_at = now
        self._completed.record(1.0, now)
        if started is not None:
            self._time.record(now - started, now)

    def close(self) -> None:
        self.metrics.close_group(self.group)


def metrics_from_config(config: Any) -> Metrics:
    """The worker's registry, with ``metrics.sample.window.ms``, ``metrics.num.samples`` and
    the ``metrics.context.*`` values of its config."""
    window = int(config.get("metrics.sample.window.ms") or 30_000)
    samples = int(config.get("metrics.num.samples") or 2)
    context = {
        key[len("metrics.context.") :]: str(value)
        for key, value in config.originals_strings().items()
        if key.startswith("metrics.context.")
    }
    return Metrics(sample_window_ms=window, num_samples=samples, context=context)
