"""What runs on an executor: one connector task, for as long as the worker wants it to.

The worker submits each task as a Spark job of one partition holding an :class:`Assignment`;
:func:`run_task` runs in the executor's Python worker (``PYSPARK_PYTHON``, which has Copycat
installed and never imports a plugin) and drives the same task runtime the local worker drives
on its threads: :func:`core.runtime.build.build_task` with executor services (hosts from
environments built here from the shipped wheelhouses, offsets through the worker), then the
:class:`core.runtime.loop.TaskLoop` lifecycle until the worker says stop.

Spark runs a failed task again (``spark.task.maxFailures``) when its executor is lost. Such a
later attempt returns at once (``retried``) and leaves the decision to the worker, which submits
a new job if it still wants the task: so the worker, never Spark, decides where and whether a
task runs again, and one task's trouble never aborts another's job.

Threads in the Python worker: the task's own (Spark's, running :func:`run_task`) drives the loop
and commits offsets; a heartbeat thread reports status and applies the target state; isolation's
launcher thread starts the plugin hosts.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from plugin_api.connector import freeze_partition

from core.offsets import WriteWaiter
from core.runtime.build import build_task
from core.runtime.counters import TAKE_EVERY_S, SnapshotsSince
from core.runtime.loop import TaskLoop
from core.runtime.services import TaskServices
from core.runtime.spec import TaskSpec
from core.spark.control import ControlClient, ControlError, Fenced
from core.spark.envcache import ExecutorHosts, resolve_cache_dir
from core.status import failure_trace
from isolation import allocator

__all__ = ["Assignment", "ExecutorTask", "RemoteOffsets", "run_task"]

log = logging.getLogger("copycat.spark.executor")

# What a task sleeps after an iteration that moved nothing (as the local worker's threads).
IDLE_BACKOFF_S = 0.01
# Longest a report after a new target waits for the loop to act on it (a pause or resume
# takes the loop milliseconds; one that takes longer is reported with a later heartbeat).
APPLY_WAIT_S = 2.0
# Outcomes a task's job returns to the worker.
STOPPED, FAILED, FENCED, RETRIED = "stopped", "failed", "fenced", "retried"
# Target states the worker gives.
RUNNING, PAUSED, STOP = "RUNNING", "PAUSED", "STOP"


@dataclass(frozen=True)
class Assignment:
    """One attempt of one task, as the worker hands it to Spark (picklable)."""

    spec: TaskSpec
    attempt: int
    control_host: str
    control_port: int
    token: str
    archives: Mapping[str, str]  # env hash -> shipped archive name
    heartbeat_interval_s: float
    heartbeat_timeout_s: float
    env_cache_dir: str | None = None
    paused: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)


class RemoteOffsets:
    """The task's :class:`core.offsets.OffsetStore`: the worker's store, over the control
    channel. ``put`` keeps entries until ``flush``, which returns once the worker has made them
    durable; so the source loop's rule (offsets stored only after their records' acks) holds
    exactly as locally."""

    def __init__(self, control: ControlClient) -> None:
        self._control = control
        self._pending: dict[Any, tuple[Mapping[str, Any], Any]] = {}
        self._lock = threading.Lock()  # the loop thread and the host's callback thread

    def get(self, connector: str, partitions: Iterable[Mapping[str, Any]]) -> dict[Any, Any]:
        wanted = [dict(p) for p in partitions]
        with self._lock:
            answer = self._control.request("offsets.get", partitions=wanted)
        return {freeze_partition(p): o for p, o in answer["offsets"]}

    def put(self, connector: str, entries: Iterable[tuple[Mapping[str, Any], Any]]) -> WriteWaiter:
        with self._lock:
            for partition, offset in entries:
                self._pending[freeze_partition(partition)] = (dict(partition), offset)
        return self.flush

    def flush(self) -> None:
        with self._lock:
            if not self._pending:
                return
            entries = [[p, o] for p, o in self._pending.values()]
            self._control.request("offsets.commit", entries=entries)
            self._pending.clear()

    def connector_offsets(self, connector: str) -> list[tuple[dict[str, Any], Any]]:
        raise NotImplementedError("a task reads only the offsets of its own partitions")


class _Heartbeat(threading.Thread):
    """Reports the task's state and applies the target the worker answers with."""

    def __init__(
        self, task: ExecutorTask, client: Callable[[Callable[[], float]], ControlClient]
    ) -> None:
        super().__init__(name=f"copycat-heartbeat-{task.spec.name}", daemon=True)
        self.task = task
        self.control = client(self.deadline)
        self.target = PAUSED if task.assignment.paused else RUNNING
        self.stop_requested = threading.Event()
        # Set when the target changes or a stop is asked: ends a paused loop's wait.
        self.wakeup = threading.Event()
        self.fenced = False
        self.done = threading.Event()
        self.last_contact = time.monotonic()
        # Targets received (``changes``) and how many of them the task's loop has acted on
        # (``applied``): after a new target the next report waits for the loop, so that it
        # carries the new state (the worker holds a report for up to the heartbeat interval).
        self._changes = 0
        self._applied = 0
        self._awaited = 0  # the last change a report waited for
        self._loop_caught_up = threading.Condition()

    def deadline(self) -> float:
        """When the worker counts as lost: the last answer plus the heartbeat timeout. No
        request to the worker (a heartbeat, an offsets commit) waits past it, so a frozen
        worker's task stops then, as the worker gives the attempt up then too."""
        return self.last_contact + self.task.assignment.heartbeat_timeout_s

    def run(self) -> None:
        assignment = self.task.assignment
        while not self.done.is_set():
            self._await_loop(assignment.heartbeat_interval_s)
            try:
                answer = self.control.request(
                    "heartbeat",
                    timeout_s=assignment.heartbeat_interval_s,
                    known_target=self.target,
                    wait_s=assignment.heartbeat_interval_s,
                    **self.task.report(),
                )
            except Fenced:
                self._stop(fenced=True)
                return
            except ControlError as exc:
                if time.monotonic() - self.last_contact > assignment.heartbeat_timeout_s:
                    log.error("task %s lost the worker: %s; stopping", self.task.spec.name, exc)
                    self._stop(fenced=True)
                    return
                self.done.wait(min(1.0, assignment.heartbeat_interval_s))
                continue
            self.last_contact = time.monotonic()
            resets = int(answer.get("topic_resets", 0))
            loop = self.task.loop
            if resets != self.task.topic_resets:
                if loop is not None:  # (none yet: nothing recorded before the reset)
                    loop.forget_topics()
                self.task.topic_resets = resets
            target = str(answer["target"])
            if target != self.target:
                self.target = target
                self._changes += 1  # after the target: a loop that reads this count sees it
                self._wake()
            if answer.get("fenced"):
                self._stop(fenced=True)
                return
            if self.target == STOP:
                self.stop_requested.set()
                self._wake()

    def changes(self) -> int:
        """How many targets were received so far (read before :attr:`target`)."""
        return self._changes

    def applied(self, changes: int) -> None:
        """The loop thread: it has acted on the target as of ``changes`` (:meth:`changes`).
        Once per loop iteration: the lock is taken only when there is news."""
        if changes <= self._applied:
            return
        with self._loop_caught_up:
            if changes > self._applied:
                self._applied = changes
                self._loop_caught_up.notify_all()

    def _await_loop(self, interval_s: float) -> None:
        """Once per new target, until the loop has acted on it: at most half the interval
        and :data:`APPLY_WAIT_S` (the worker counts the silence against the heartbeat
        timeout), and not for a stop (the task reports it with its final heartbeat)."""
        changes = self._changes
        if self.target == STOP or changes == self._awaited:
            return
        self._awaited = changes
        limit_s = min(interval_s / 2, APPLY_WAIT_S)
        with self._loop_caught_up:
            self._loop_caught_up.wait_for(
                lambda: self._applied >= self._changes or self.done.is_set(), limit_s
            )

    def _stop(self, fenced: bool) -> None:
        self.fenced = fenced
        self.stop_requested.set()
        self._wake()

    def _wake(self) -> None:
        """The driver has a change to act on: end its paused wait, and a hosted loop's idle
        iterating in its host (core/runtime/in_host.py)."""
        self.wakeup.set()
        loop = self.task.loop
        if loop is not None:
            loop.wake()

    def final(self, state: str, trace: str | None) -> None:
        """One last report (stopped or failed) before the job returns."""
        self.done.set()
        self.task.state, self.task.trace = state, trace
        if self.fenced:
            return
        try:
            self.control.request("heartbeat", known_target=STOP, wait_s=0, **self.task.report())
        except ControlError as exc:
            log.warning("task %s could not report its end: %s", self.task.spec.name, exc)


class ExecutorTask:
    """One attempt of one task on this executor (see the module docstring)."""

    def __init__(self, assignment: Assignment) -> None:
        self.assignment = assignment
        self.spec = assignment.spec
        self.state = "STARTING"
        self.trace: str | None = None
        self.loop: TaskLoop | None = None
        self.hosts: ExecutorHosts | None = None
        # The loop's counters, taken after each iteration, sent with the next heartbeat (the
        # worker makes the task's metrics of them, core/connect_metrics.py).
        self.counters = SnapshotsSince()
        # The worker's active topic resets the loop has applied (see SparkTaskRunner).
        self.topic_resets = 0
        self.where = {"host": socket.gethostname(), "pid": os.getpid(), **_executor_hints()}

    def _client(self, deadline: Callable[[], float]) -> ControlClient:
        a = self.assignment
        return ControlClient(
            a.control_host,
            a.control_port,
            a.token,
            self.spec.connector,
            self.spec.task_id,
            a.attempt,
            deadline,
        )

    def report(self) -> dict[str, Any]:
        """What a heartbeat carries."""
        loop, hosts = self.loop, self.hosts
        body: dict[str, Any] = {
            "state": self.state,
            "where": self.where,
            "records": loop.records_moved if loop is not None else 0,
            "topics": sorted(loop.topics()) if loop is not None else [],
            "topic_resets": self.topic_resets,
            "host_pids": hosts.pids() if hosts is not None else [],
        }
        if hosts is not None:
            # Proof for operators (and tests) that this process never imported plugin code.
            body["plugin_modules_here"] = sorted(hosts.top_level_modules() & set(sys.modules))
            body["env_cache"] = str(hosts.cache_dir)
            body["built_s"] = hosts.built
        if self.trace:
            body["trace"] = self.trace
        counters = self.counters.take()
        if counters is not None:
            body["counters"] = counters
        return body

    def run(self) -> tuple[str, str]:
        a = self.assignment
        _log_to_stderr()
        allocator.tune_gc()
        heartbeat = _Heartbeat(self, self._client)
        heartbeat.start()
        control = self._client(heartbeat.deadline)
        try:
            self.hosts = ExecutorHosts(a.archives, resolve_cache_dir(a.env_cache_dir))
            services = TaskServices(hosts=self.hosts, offsets=RemoteOffsets(control))
            try:
                loop = build_task(self.spec, services, should_stop=heartbeat.stop_requested.is_set)
            except BaseException as exc:  # noqa: BLE001 - reported to the worker
                if heartbeat.stop_requested.is_set():
                    heartbeat.final("STOPPED", None)
                    return (FENCED if heartbeat.fenced else STOPPED), ""
                trace = failure_trace(exc)
                heartbeat.final("FAILED", trace)
                return FAILED, trace
            self.loop = loop
            failed = self._drive(loop, heartbeat)
            if failed is not None:
                heartbeat.final("FAILED", failed)
                return FAILED, failed
            heartbeat.final("STOPPED", None)
            return (FENCED if heartbeat.fenced else STOPPED), ""
        finally:
            heartbeat.done.set()
            for host in self.hosts.started if self.hosts is not None else ():
                host.close(self.spec.settings.graceful_timeout_s)  # already closed: a no-op
            control.close()

    def _drive(self, loop: TaskLoop, heartbeat: _Heartbeat) -> str | None:
        """The TaskLoop lifecycle (as the local worker's threads); the failure trace or None."""
        failure: str | None = None
        paused = False
        take_at = 0.0  # when the loop's counters are next taken (TAKE_EVERY_S)
        wakeup = heartbeat.wakeup
        try:
            loop.start()
            self.state = "RUNNING"
            while True:
                wakeup.clear()  # before the target is read: a change after it ends the wait
                if heartbeat.stop_requested.is_set():
                    break
                changes = heartbeat.changes()
                want_paused = heartbeat.target == PAUSED
                if want_paused != paused:
                    paused = want_paused
                    (loop.pause if paused else loop.resume)()
                    self.state = "PAUSED" if paused else "RUNNING"
                heartbeat.applied(changes)  # its next report says so at once
                moved = loop.iteration()
                now = time.monotonic()
                if now >= take_at:
                    take_at = now + TAKE_EVERY_S
                    self.counters.add(loop.take_counters())
                if not moved:
                    if paused:  # as the local worker's driver (core/worker.py)
                        wakeup.wait(max(IDLE_BACKOFF_S, loop.paused_wait_s))
                    else:
                        heartbeat.stop_requested.wait(IDLE_BACKOFF_S)
        except BaseException as exc:  # noqa: BLE001 - reported to the worker
            failure = failure_trace(exc)
            self.state, self.trace = "FAILED", failure
            log.error("task %s failed: %s", self.spec.name, exc)
        finally:
            try:
                # A fenced attempt (replaced by a newer one) commits nothing: a source's
                # commit is refused by the worker anyway, and a sink's could take the new
                # attempt's group offsets back.
                loop.stop(
                    failed=failure is not None,
                    fenced=heartbeat.fenced,
                    timeout_s=self.spec.settings.graceful_timeout_s,
                )
                self.counters.add(loop.take_counters())  # the final commit's, with the last beat
            except Exception as exc:  # noqa: BLE001
                log.warning("task %s did not stop cleanly: %s", self.spec.name, exc)
        return failure


def run_task(partition: Iterable[Assignment]) -> Iterator[tuple[str, str]]:
    """The function of a task's Spark job (``mapPartitions``): one outcome per job.

    ``(stopped|failed|fenced|retried, detail)``: ``failed`` carries the failure trace.
    """
    from pyspark import TaskContext

    [assignment] = list(partition)
    context = TaskContext.get()
    if context is not None and context.attemptNumber() > 0:
        # The first attempt died with its executor; the worker decides what happens now.
        yield RETRIED, f"Spark attempt {context.attemptNumber()} of this job's task"
        return
    yield ExecutorTask(assignment).run()


def _executor_hints() -> dict[str, str]:
    """What the executor's environment says about it (Spark sets different variables on each
    cluster manager); the worker also asks Spark's status API."""
    hints = {}
    if os.environ.get("SPARK_EXECUTOR_ID"):  # Kubernetes, some others
        hints["executor_id"] = os.environ["SPARK_EXECUTOR_ID"]
    log_url = os.environ.get("SPARK_LOG_URL_STDERR", "")  # standalone: ...executorId=N&...
    if "executorId=" in log_url:
        hints["executor_id"] = log_url.split("executorId=", 1)[1].split("&", 1)[0]
    if os.environ.get("CONTAINER_ID"):  # YARN
        hints["container"] = os.environ["CONTAINER_ID"]
    return hints


def _log_to_stderr() -> None:
    """Copycat's log lines go to the executor's stderr log (the Python worker has none set)."""
    logger = logging.getLogger("copycat")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
