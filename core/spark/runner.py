"""The worker's driver of one task that runs on Spark: a thread that keeps its job running.

:class:`SparkTaskRunner` stands where the local runtime's task thread stands (the worker
starts, pauses, stops and restarts both the same way, and the herder cannot tell them apart),
but the task loop runs on an executor (:mod:`core.spark.executor`). The thread:

1. holds an executor slot for the task (the one its connector reserved in standalone mode, a
   free one in distributed mode, where each worker runs the tasks the group assigned it: a
   task that does not fit fails, saying why) and ships the task's plugin environments (once per
   Spark application);
2. submits the task as a one-partition Spark job under the task's job group and waits for it:
   the job runs until the task is told to stop (gracefully, with a final offset commit) or
   fails;
3. when the job ends without the task having stopped or failed, or the attempt is given up
   (Spark removed the executor it ran on, or it stopped reporting for
   ``task.spark.heartbeat.timeout.ms``: its job is cancelled), submits it again: a new
   *attempt*. Each attempt has a number; the worker answers only the current one, so an
   attempt given up for lost that comes back is told to stop and can commit nothing.

Status follows the local runtime's: UNASSIGNED (or a RUNNING it starts over) until the
executor reports the task started, then RUNNING (or PAUSED) with ``worker_id`` naming the
executor, its host (as Spark's UI names it), the task's Spark job group and the worker that
drives it (the group's member, in distributed mode); FAILED with the executor's trace;
UNASSIGNED again (with a trace saying why, which applies over its RUNNING)
from the moment an attempt is known lost while it is being replaced (an executor Spark removed
is noticed on the watchdog's next tick, not after the heartbeat timeout).

Threads: the runner's own thread submits and waits; the control server's threads call
:meth:`on_heartbeat`; the worker's threads set ``paused``/``stopping`` and call
:meth:`kill_host`; the driver's watchdog calls :meth:`check_alive`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from core.runtime.counters import FIELDS
from core.runtime.spec import TaskSpec
from core.spark.driver import Placement, SparkDriver
from core.spark.executor import FAILED, PAUSED, RETRIED, RUNNING, STOP, STOPPED, Assignment
from core.status import State
from core.worker import UNRECOVERABLE, _TaskRunner, kafka_task_name
from plugin_api import ConfigException

if TYPE_CHECKING:
    from core.worker import RestartPolicy, Worker

__all__ = ["SparkTaskRunner"]

log = logging.getLogger("copycat.spark")

# Pause between a lost attempt and its replacement: Spark needs a moment to notice a lost
# executor's slot, and a task that cannot run anywhere must not spin.
RESUBMIT_BACKOFF_S = 1.0
# How often a held heartbeat (long poll) looks whether the target state changed.
TARGET_POLL_S = 0.05
# Longest failure text kept from a job that Spark failed (its Java stack is long).
JOB_FAILURE_CHARS = 2_000


class SparkTaskRunner(_TaskRunner):
    """One task on Spark (see the module docstring)."""

    def __init__(
        self,
        worker: Worker,
        spec: TaskSpec,
        paused: bool,
        driver: SparkDriver,
        restart_policy: RestartPolicy | None = None,
    ) -> None:
        super().__init__(worker, spec, paused, restart_policy=restart_policy)
        self.name = f"spark-task-{spec.name}"
        self.driver = driver
        self.group = driver.job_group(spec)
        self.attempt = 0  # the attempt the worker answers; 0 while none is running
        self.attempts = 0  # attempts submitted so far
        self.placement: Placement | None = None
        self.remote: Mapping[str, Any] = {}  # the last heartbeat's report
        self.records_moved = 0
        self._topics: set[str] = set()
        # Active topic resets asked so far: each answer says how many, the executor's loop
        # forgets its topics when that grows, and its reports count again once they say it has.
        self._resets = 0
        self._topics_lock = threading.Lock()  # a report's topics are not added past a reset
        self._beating = False  # the current attempt has reported at least once
        self._reported_start = False
        # Whether the worker's task-startup metrics have this task: once, as the local
        # runner's start (its first attempt that started, or the failure before any did).
        self._start_counted = False
        self._last_beat = time.monotonic()
        self._lost: str | None = None  # why the current attempt was given up, if it was

    # -- what the worker asks of every task runner --------------------------------------------

    def topics(self) -> set[str]:
        return set(self._topics)

    def forget_topics(self) -> None:
        with self._topics_lock:
            self._resets += 1
            self._topics.clear()

    def kill_host(self, reason: str) -> None:
        """Reclaim a task that does not stop in time: cancel its Spark job (Spark kills its
        Python worker, whose plugin hosts die with it)."""
        log.error(
            "task %s: %s; cancelling its Spark job group %s", self.spec.name, reason, self.group
        )
        self.attempt = 0
        self.driver.cancel(self.group)

    @property
    def where(self) -> str:
        """The task's ``worker_id`` in REST status: executor, host and Spark job group (the
        status topic's readers find the driving worker in it: core/distributed/status_store.py
        ``_SPARK_WORKER``)."""
        placement, driver = self.placement, self.worker.worker_id
        if placement is None:
            return f"{driver} (Spark job group {self.group})"
        return (
            f"executor {placement.executor_id} on {placement.host} "
            f"(Spark job group {self.group}, driver {driver})"
        )

    # -- the thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        """The thread's work (``run()``, inherited, logs the task's start and end around it)."""
        driver, spec = self.driver, self.spec
        driver.register(self)
        try:
            try:
                _refuse_exactly_once_source(spec)
                driver.reserve_task(spec.connector, spec.task_id, self, self.stopping.is_set)
                archives = driver.ship(spec)
            except BaseException as exc:  # noqa: BLE001 - the task fails, never the worker
                self._failed_before_start(exc)
                return
            self._keep_running(archives)
        finally:
            driver.release_task(spec.connector, spec.task_id, self)
            driver.unregister(self)
            self.started.set()
            if not self.failed:
                self._report(State.UNASSIGNED, generation=self.stop_generation)
        if self.failed and not self.stopping.is_set():
            self.worker.task_failed(self)

    def _failed_before_start(self, exc: BaseException) -> None:
        from core.status import failure_trace

        self.started.set()
        if self.stopping.is_set():
            return
        self.failed = True
        trace = failure_trace(exc)
        log.error("%s %s (on Spark)\n%s", kafka_task_name(self.spec), UNRECOVERABLE, trace)
        self._count_start(ok=False)
        self._report(State.FAILED, trace, version=self.spec.version)

    def _count_start(self, ok: bool) -> None:
        """The task's start in the worker's task-startup metrics (Kafka's WorkerMetricsGroup
        counts a success at onStartup, a failure when the task fails before it started)."""
        if not self._start_counted:
            self._start_counted = True
            self.worker.worker_metrics.task_started(ok=ok)

    def _keep_running(self, archives: dict[str, str]) -> None:
        driver, spec = self.driver, self.spec
        settings = driver.settings
        while not self.stopping.is_set():
            if driver.stopped:
                self.failed = True
                self._report(State.FAILED, f"the Spark application {driver.sc.applicationId} ended")
                return
            self.attempts += 1
            self._beating = self._reported_start = False
            self.placement = None
            self._lost = None
            self.attempt = self.attempts
            assignment = Assignment(
                spec=spec,
                attempt=self.attempt,
                control_host=driver.control.host,
                control_port=driver.control.port,
                token=driver.token,
                archives=archives,
                heartbeat_interval_s=settings.heartbeat_interval_s,
                heartbeat_timeout_s=settings.heartbeat_timeout_s,
                env_cache_dir=settings.env_cache_dir,
                paused=self.paused.is_set(),
            )
            description = f"Copycat task {spec.name}, attempt {self.attempt}"
            try:
                [(outcome, detail)] = driver.submit(self.group, description, assignment)
            except Exception as exc:  # noqa: BLE001 - Spark failed or cancelled the job
                outcome, detail = "lost", str(exc)[:JOB_FAILURE_CHARS]
            self.attempt = 0
            lost, self._lost = self._lost, None
            if outcome == RETRIED and lost is None and self.placement is not None:
                # Spark ran the task again before the watchdog saw it fail: say why it did.
                lost = self.driver.task_failure(self.placement)
            if outcome == STOPPED:
                return
            if outcome == FAILED:
                self.failed = True
                log.error("%s %s (on Spark)\n%s", kafka_task_name(spec), UNRECOVERABLE, detail)
                self._count_start(ok=False)  # no effect once it had started
                self._report(State.FAILED, detail, version=spec.version)
                return
            if self.stopping.is_set():
                return
            if lost is not None and outcome == "lost":
                # The watchdog gave the attempt up and cancelled its job: the job's error is
                # that cancellation (Py4J's "An error occurred while calling ...", Spark's
                # SPARK_JOB_CANCELLED), not why the attempt was lost, which ``lost`` says.
                log.debug("task %s: attempt %d's job ended: %s", spec.name, self.attempts, detail)
                detail = ""
            first_line = detail.splitlines()[0] if detail else ""
            log.warning(
                "task %s: attempt %d on Spark ended without stopping (%s); submitting it again",
                spec.name,
                self.attempts,
                f"{outcome}: {first_line}" if first_line else outcome,
            )
            self._report(
                State.UNASSIGNED,
                f"attempt {self.attempts} of this task on Spark was lost ({lost or outcome}); "
                "submitting it again" + (f"\n{detail}" if detail else ""),
            )
            self.stopping.wait(RESUBMIT_BACKOFF_S)

    # -- control requests (the control server's threads) ---------------------------------------

    def target(self) -> str:
        if self.stopping.is_set():
            return STOP
        return PAUSED if self.paused.is_set() else RUNNING

    def may_commit(self) -> bool:
        """Whether the current attempt may still store offsets (also while it stops)."""
        return self.attempt != 0

    def on_heartbeat(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Take a task's report; hold the answer until its target changes or the heartbeat
        interval passes."""
        self._last_beat = time.monotonic()
        self._beating = True
        state = body.get("state")
        if state != self.remote.get("state"):
            self._paused_or_resumed(state)
        self.remote = body
        self.records_moved = int(body.get("records", 0))
        counters = body.get("counters")
        if isinstance(counters, list) and len(counters) == len(FIELDS):
            self.metrics.absorb(tuple(counters))
        with self._topics_lock:
            resets = self._resets
            if body.get("topic_resets", 0) == resets:
                self._topics.update(body.get("topics", ()))
        if state in (RUNNING, PAUSED) and not self._reported_start:
            self._task_started(body)
        if state == "FAILED" and body.get("trace") and not self.stopping.is_set():
            self.failed = True  # the job's outcome follows; status shows it at once
            self._count_start(ok=False)  # no effect once it had started
            self._report(State.FAILED, str(body["trace"]), version=self.spec.version)
        known = body.get("known_target")
        wait = min(float(body.get("wait_s", 0)), self.driver.settings.heartbeat_interval_s)
        deadline = time.monotonic() + wait
        while self.target() == known and self._resets == resets and time.monotonic() < deadline:
            time.sleep(TARGET_POLL_S)
        return {"target": self.target(), "topic_resets": self._resets}

    def _paused_or_resumed(self, state: Any) -> None:
        """The executor says its loop has paused or resumed: the task's status follows (as a
        local task reports it from its own thread, core/worker.py), before the new state is
        visible in ``remote``."""
        if state not in (RUNNING, PAUSED) or not self._reported_start or self.stopping.is_set():
            return
        # A fresh status of this worker's present generation, as Kafka's onPause/onResume.
        self._report(State.PAUSED if state == PAUSED else State.RUNNING, version=self.spec.version)

    def _task_started(self, body: Mapping[str, Any]) -> None:
        self._reported_start = True
        self.placement = self.driver.locate(self.group) or self._placement_reported(body)
        log.info("task %s runs on Spark: %s", self.spec.name, self.where)
        self._count_start(ok=True)
        if not self.stopping.is_set():
            state = State.PAUSED if self.paused.is_set() else State.RUNNING
            self._report(state, version=self.spec.version)
        self.started.set()

    def _placement_reported(self, body: Mapping[str, Any]) -> Placement:
        """Where the executor says the attempt runs, while Spark's status API does not list the
        attempt yet: its executor id, and that executor's host as Spark names it (the
        executor's own host name only if Spark does not list the executor)."""
        where = body.get("where", {})
        executor_id = str(where.get("executor_id", "?"))
        hosts = self.driver.executors() or {}
        return Placement(executor_id, hosts.get(executor_id) or str(where.get("host", "?")))

    def check_alive(self, now: float, lost_executors: Collection[str] = ()) -> None:
        """The driver's watchdog: the current attempt is given up (fenced) and its job
        cancelled, so that it is submitted again, when Spark removed the executor it runs on
        (``lost_executors``: ids Spark listed before and no longer does), when it has been
        silent for longer than the heartbeat timeout (a hung executor, a cut network), or when
        Spark failed its task (its Python worker exited, the executor living on)."""
        attempt, placement = self.attempt, self.placement
        if not attempt:
            return
        if placement is not None and placement.executor_id in lost_executors:
            self._give_up(
                attempt,
                f"Spark lost executor {placement.executor_id} on {placement.host}, where it ran",
            )
        elif self._beating and now - self._last_beat > self.driver.settings.heartbeat_timeout_s:
            self._give_up(attempt, f"no heartbeat for {now - self._last_beat:.0f} s")
        elif placement is not None and (failure := self.driver.task_failure(placement)):
            self._give_up(attempt, failure)

    def _give_up(self, attempt: int, reason: str) -> None:
        """Fence ``attempt`` (its heartbeats are told it is not current, its commits refused),
        say so in the task's status at once, and cancel its job: the runner's thread then
        submits the next attempt."""
        if self.attempt != attempt:
            return
        log.error(
            "task %s: attempt %d given up (%s); cancelling its Spark job group %s",
            self.spec.name,
            attempt,
            reason,
            self.group,
        )
        self._lost = reason
        self.attempt = 0
        if not self.stopping.is_set():
            self._report(
                State.UNASSIGNED,
                f"attempt {attempt} of this task on Spark was lost ({reason}); submitting it again",
            )
        self.driver.cancel(self.group)

    def _reporter(self, state: State) -> str:
        """Where the task runs (its executor), or this worker once it runs nowhere."""
        return self.where if state is not State.UNASSIGNED else self.worker.worker_id


def _refuse_exactly_once_source(spec: TaskSpec) -> None:
    """Exactly-once source tasks (KIP-618) are not wired on Spark: their offsets are written
    in the task's producer transaction, which the offsets channel through the worker
    (:class:`core.spark.executor.RemoteOffsets`) cannot join. Refused rather than run
    at-least-once unannounced.

    Raises:
        ConfigException: ``spec`` is a source task the worker runs exactly-once
            (``exactly.once.source.support=enabled``).
    """
    if spec.exactly_once is not None:
        raise ConfigException(
            "task.runtime",
            "spark",
            f"task {spec.name} is an exactly-once source task (the worker has "
            "exactly.once.source.support=enabled), which the Spark runtime does not support "
            "yet (docs/spark.md); run this connector with task.runtime=local",
        )
