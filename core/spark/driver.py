"""The Spark driver side of the worker: the SparkSession, the control endpoint, task slots.

One :class:`SparkDriver` per worker that runs tasks on Spark, made when the first such task
starts (or at start-up when the worker's ``task.runtime`` is ``spark``). It

* creates the SparkSession from the worker's ``spark.*`` keys, or joins the process's active
  one (an application embedding Copycat, the test suite); refuses ``spark.speculation=true``:
  a speculative copy of a task would run it twice, each copy producing and committing;
* runs the control endpoint tasks report to (:mod:`core.spark.control`) and routes each
  request to that task's :class:`core.spark.runner.SparkTaskRunner`;
* ships plugin environments (:mod:`core.spark.shipping`);
* counts task slots: every Copycat task holds one executor slot for as long as it runs, so a
  connector whose tasks do not all fit next to the running ones is refused (standalone), or a
  task that does not fit fails (distributed: each worker runs what the group assigned it),
  naming the counts, instead of leaving tasks queued forever;
* answers where a task runs from Spark's status API (job group -> job -> stage -> the
  running task attempt's executor and host);
* watches the running attempts (a thread, once a second): an attempt whose executor Spark
  removed, or that stopped reporting, is given up and submitted again.

Threads: task runner threads submit jobs and ship; REST threads (through the worker) reserve
slots; the control server's threads call :meth:`_handle`. A lock guards the registries.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import signal
import sys
import threading
import time
import urllib.request
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from plugin_api.connector import freeze_partition

from core.offsets import OffsetStore
from core.runtime.spec import PluginRef, TaskSpec
from core.spark.control import ControlServer, Request
from core.spark.gateway import launch_gateway, not_started, reason_of
from core.spark.shipping import Shipper
from core.worker_config import WorkerConfig
from isolation.environment import PluginEnvironment
from plugin_api import ConfigException, ConnectException

if TYPE_CHECKING:
    from core.spark.runner import SparkTaskRunner

__all__ = ["Placement", "SparkDriver", "SparkSettings"]

log = logging.getLogger("copycat.spark")

# Spark's monitoring REST API answers from the driver's own UI server, in milliseconds.
STATUS_API_TIMEOUT_S = 5.0
# The class name Spark puts before a failed task's reason.
SPARK_EXCEPTION = "org.apache.spark.SparkException: "
# How often the watchdog looks for tasks whose executor was lost or that stopped reporting; a
# small fraction of task.spark.heartbeat.timeout.ms.
WATCHDOG_INTERVAL_S = 1.0
# Executors of a new Spark application register with its driver some time after it starts
# (the cluster manager launches their JVMs; a local-cluster session took ~40 s to build on this
# loaded 2-core machine, YARN or Kubernetes may take longer to schedule containers). Until the
# application is this old, a reservation that does not fit waits for them instead of failing:
# a distributed worker may get its first tasks seconds after its SparkSession is made.
EXECUTOR_REGISTRATION_WAIT_S = 60.0
# How often such a reservation asks Spark's status API again.
SLOT_RETRY_S = 1.0
_TRUE = ("true", "1", "yes")
# Spark settings the worker changes unless the worker config sets them: console progress
# bars would be spliced into the worker's log lines on stderr.
SPARK_DEFAULTS = {"spark.ui.showConsoleProgress": "false"}


@dataclass(frozen=True)
class SparkSettings:
    """The worker keys the Spark runtime reads (``spark.*`` go to the SparkSession)."""

    spark_conf: Mapping[str, str]
    heartbeat_interval_s: float = 1.0
    heartbeat_timeout_s: float = 30.0
    env_cache_dir: str | None = None

    @classmethod
    def of(cls, config: WorkerConfig) -> SparkSettings:
        cache_dir = config.get("task.spark.env.cache.dir")
        return cls(
            spark_conf={
                k: v for k, v in config.originals_strings().items() if k.startswith("spark.")
            },
            heartbeat_interval_s=config.get("task.spark.heartbeat.interval.ms") / 1000,
            heartbeat_timeout_s=config.get("task.spark.heartbeat.timeout.ms") / 1000,
            env_cache_dir=str(cache_dir) if cache_dir else None,
        )


@dataclass(frozen=True)
class Placement:
    """Where an attempt of a task runs, as Spark's status API says."""

    executor_id: str
    host: str
    job_id: int | None = None
    stage_id: int | None = None
    spark_task_id: int | None = None


class _Slots:
    """Task slots of one Spark application, shared by every driver in the process: one per
    task, held by its runner (``None`` while a standalone connector has reserved it and its
    runner has not started yet)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        # (driver id, connector, task) -> the runner holding it
        self.reserved: dict[tuple[int, str, int], object | None] = {}

    def holders(self, but: Callable[[tuple[int, str, int]], bool]) -> str:
        """``"a (2), b (1)"``: connectors holding slots, except keys ``but`` selects."""
        counts: dict[str, int] = {}
        for key in self.reserved:
            if not but(key):
                counts[key[1]] = counts.get(key[1], 0) + 1
        return ", ".join(f"{c} ({n})" for c, n in sorted(counts.items())) or "none"


_slots_by_context: weakref.WeakKeyDictionary[Any, _Slots] = weakref.WeakKeyDictionary()
_shippers_by_context: weakref.WeakKeyDictionary[Any, Shipper] = weakref.WeakKeyDictionary()
_registry_lock = threading.Lock()


def _per_context(
    table: weakref.WeakKeyDictionary[Any, Any], sc: Any, make: Callable[[], Any]
) -> Any:
    with _registry_lock:
        found = table.get(sc)
        if found is None:
            found = table[sc] = make()
        return found


class SparkDriver:
    """See the module docstring. ``offsets`` is the worker's source offset store;
    ``environment`` finds the local :class:`PluginEnvironment` of a :class:`PluginRef`."""

    def __init__(
        self,
        worker_id: str,
        settings: SparkSettings,
        offsets: OffsetStore,
        environment: Callable[[PluginRef], PluginEnvironment],
    ) -> None:
        self.worker_id = worker_id
        self.settings = settings
        self.offsets = offsets
        self.environment = environment
        self.session, self.owns_session = _session(worker_id, settings.spark_conf)
        self.sc = self.session.sparkContext
        speculation = str(self.sc.getConf().get("spark.speculation", "false")).lower()
        if speculation in _TRUE:
            self._release_session()
            raise ConfigException(
                "spark.speculation",
                speculation,
                "Copycat tasks cannot run on a Spark application with speculation on: a "
                "speculative copy would run the same connector task twice (twice the records, "
                "two members for one consumer, offsets committed by both); set "
                "spark.speculation=false",
            )
        self.uid = secrets.token_hex(4)
        self.token = secrets.token_urlsafe(24)
        self._runners: dict[tuple[str, int], SparkTaskRunner] = {}
        self._lock = threading.Lock()
        bind = str(self.sc.getConf().get("spark.driver.host", "127.0.0.1"))
        self.control = ControlServer(bind, self.token, self._handle)
        self.shipper: Shipper = _per_context(
            _shippers_by_context, self.sc, lambda: Shipper(self.sc)
        )
        self._slots: _Slots = _per_context(_slots_by_context, self.sc, _Slots)
        self._closed = threading.Event()
        threading.Thread(target=self._watch, name="copycat-spark-watchdog", daemon=True).start()
        log.info(
            "Spark runtime ready: application %s (%s), master %s, control endpoint %s:%d",
            self.sc.applicationId,
            self.sc.appName,
            self.sc.master,
            self.control.host,
            self.control.port,
        )

    # -- tasks ---------------------------------------------------------------------------------

    def job_group(self, spec: TaskSpec) -> str:
        """The Spark job group of a task's jobs (shown in its status; unique per worker)."""
        return f"copycat-{self.uid}-{spec.connector}-{spec.task_id}"

    def register(self, runner: SparkTaskRunner) -> None:
        with self._lock:
            self._runners[(runner.connector, runner.task_id)] = runner

    def unregister(self, runner: SparkTaskRunner) -> None:
        with self._lock:
            if self._runners.get((runner.connector, runner.task_id)) is runner:
                del self._runners[(runner.connector, runner.task_id)]

    def ship(self, spec: TaskSpec) -> dict[str, str]:
        return self.shipper.ship(spec, self.environment)

    def submit(self, group: str, description: str, payload: Any) -> list[tuple[str, str]]:
        """Run one task's job and wait for its outcome; on the calling thread (its job group
        is a property of that thread, see pyspark's pinned thread mode)."""
        from core.spark.executor import run_task

        self.sc.setJobGroup(group, description, interruptOnCancel=True)
        rdd = self.sc.parallelize([payload], 1).mapPartitions(run_task)
        outcome: list[tuple[str, str]] = rdd.collect()
        return outcome

    def cancel(self, group: str) -> None:
        """Cancel a task's job (its Python worker and plugin hosts are killed)."""
        self.sc.cancelJobGroup(group)

    @property
    def stopped(self) -> bool:
        return bool(self.sc._jsc is None or self.sc._jsc.sc().isStopped())

    def _watch(self) -> None:
        """Give up attempts whose executor Spark lost, or that stopped reporting (see
        SparkTaskRunner.check_alive)."""
        seen: set[str] = set()  # executors Spark listed as active on an earlier tick
        while not self._closed.wait(WATCHDOG_INTERVAL_S):
            with self._lock:
                runners = list(self._runners.values())
            lost: set[str] = set()
            if any(runner.attempt for runner in runners):
                live = self.executors()
                if live is not None:
                    lost = seen - live.keys()
                    seen = set(live)
            now = time.monotonic()
            for runner in runners:
                runner.check_alive(now, lost)

    # -- slots ---------------------------------------------------------------------------------

    def slots(self) -> int:
        """Task slots of the application's executors (cores / spark.task.cpus)."""
        executors = self._status_api("executors")
        if executors is not None:
            remote = [e for e in executors if e.get("id") != "driver" and e.get("isActive", True)]
            chosen = remote or executors  # local[N]: the driver is the only executor
            return sum(int(e.get("maxTasks", e.get("totalCores", 0))) for e in chosen)
        return int(self.sc.defaultParallelism)

    def reserve(self, connector: str, tasks: int) -> None:
        """Hold a slot for each of ``connector``'s ``tasks`` tasks (replacing what it held
        before), all or none: standalone mode, before the connector's tasks start.

        Raises:
            ConnectException: fewer free slots than ``tasks``, naming both and who holds the
                others.
        """
        mine = id(self)
        wanted = {(mine, connector, task) for task in range(tasks)}

        def own(key: tuple[int, str, int]) -> bool:
            return key[0] == mine and key[1] == connector

        def take(total: int) -> str | None:
            used = sum(1 for key in self._slots.reserved if not own(key))
            if tasks <= total - used:
                for key in [k for k in self._slots.reserved if own(k) and k not in wanted]:
                    del self._slots.reserved[key]
                for key in wanted:
                    self._slots.reserved.setdefault(key, None)
                return None
            return (
                f"connector {connector} needs {tasks} Spark task slots, but the Spark "
                f"application {self.sc.applicationId} has {total - used} free of {total} "
                f"(held by the Copycat tasks of: {self._slots.holders(own)})"
            )

        self._reserve(take)

    def reserve_task(
        self,
        connector: str,
        task: int,
        runner: object,
        gave_up: Callable[[], bool] = lambda: False,
    ) -> None:
        """Hold one slot for a task while ``runner`` runs it: the slot the connector reserved
        for it (standalone), else a free one (distributed: each worker reserves the tasks the
        group assigned it, as it starts them). ``gave_up`` ends a wait for executors (the task
        was stopped meanwhile).

        Raises:
            ConnectException: no slot is free, naming the counts and who holds them.
        """
        key = (id(self), connector, task)

        def take(total: int) -> str | None:
            if key in self._slots.reserved or len(self._slots.reserved) < total:
                self._slots.reserved[key] = runner
                return None
            used = len(self._slots.reserved)
            return (
                f"task {connector}-{task} needs a Spark task slot, but the Spark application "
                f"{self.sc.applicationId} has {total - used} free of {total} (held by the "
                f"Copycat tasks of: {self._slots.holders(lambda k: False)})"
            )

        self._reserve(take, gave_up)

    def _reserve(
        self, take: Callable[[int], str | None], gave_up: Callable[[], bool] = lambda: False
    ) -> None:
        """Run ``take(total slots)`` under the slots' lock until it returns None (taken); while
        the application is young enough for executors still to be registering, retry a
        shortage (see EXECUTOR_REGISTRATION_WAIT_S), else raise what ``take`` said."""
        while True:
            total = self.slots()
            with self._slots.lock:
                refusal = take(total)
            if refusal is None:
                return
            age_s = time.time() - self.sc.startTime / 1000
            if age_s >= EXECUTOR_REGISTRATION_WAIT_S or self._closed.is_set() or gave_up():
                raise ConnectException(
                    f"{refusal}; each task holds a slot for as long as it runs: add executors "
                    "or cores, or lower tasks.max"
                )
            log.info(
                "%s; waiting for executors to register (application %.0f s old)", refusal, age_s
            )
            self._closed.wait(SLOT_RETRY_S)

    def release(self, connector: str) -> None:
        """Free every slot of ``connector`` (its tasks stopped)."""
        with self._slots.lock:
            for key in [k for k in self._slots.reserved if k[:2] == (id(self), connector)]:
                del self._slots.reserved[key]

    def release_task(self, connector: str, task: int, runner: object) -> None:
        """Free a task's slot if ``runner`` still holds it (a runner that ends after its task
        was started again must not free its successor's slot)."""
        key = (id(self), connector, task)
        with self._slots.lock:
            if self._slots.reserved.get(key) is runner:
                del self._slots.reserved[key]

    # -- status API ----------------------------------------------------------------------------

    @cached_property
    def _status_api_root(self) -> str | None:
        """The application's status API (None without a UI), asked of the JVM once: the
        watchdog reads it every second, and each py4j call costs a round trip (see
        :meth:`task_failure`)."""
        url = self.sc.uiWebUrl
        return f"{url}/api/v1/applications/{self.sc.applicationId}" if url else None

    def _status_api(self, path: str) -> Any:
        root = self._status_api_root
        if root is None:
            return None
        full = f"{root}/{path}"
        try:
            with urllib.request.urlopen(full, timeout=STATUS_API_TIMEOUT_S) as response:
                return json.loads(response.read())
        except (OSError, ValueError) as exc:
            log.debug("Spark status API %s: %s", full, exc)
            return None

    def executors(self) -> dict[str, str] | None:
        """The application's active executors per Spark's status API: id -> host, as Spark
        names it (its UI's Executors page); None when the API does not answer. Spark drops
        an executor from this list as soon as it removes it (its JVM exited, its node was
        lost)."""
        found = self._status_api("executors")
        if found is None:
            return None
        return {
            str(e["id"]): str(e.get("hostPort", "")).rsplit(":", 1)[0]
            for e in found
            if "id" in e and e.get("isActive", True)
        }

    def locate(self, group: str) -> Placement | None:
        """Where the running attempt of ``group``'s latest job is, per Spark's status API."""
        tracker = self.sc.statusTracker()
        jobs = sorted(tracker.getJobIdsForGroup(group))
        if not jobs:
            return None
        info = tracker.getJobInfo(jobs[-1])
        if info is None:
            return None
        for stage in sorted(int(s) for s in info.stageIds):
            for attempt in self._status_api(f"stages/{stage}") or []:
                tasks = self._status_api(f"stages/{stage}/{attempt['attemptId']}/taskList")
                for task in tasks or []:
                    if task.get("status") == "RUNNING":
                        return Placement(
                            str(task["executorId"]),
                            str(task["host"]),
                            jobs[-1],
                            stage,
                            int(task["taskId"]),
                        )
        return None

    @cached_property
    def _java_status_tracker(self) -> Any:
        """The JVM's JavaSparkStatusTracker, made once (the watchdog asks it every second)."""
        return self.sc._jsc.statusTracker()

    def task_failure(self, placement: Placement) -> str | None:
        """Why Spark failed the task attempt ``placement`` names (its executor lives on: the
        Python worker running it exited, say), or None while it has not failed. Spark runs
        the task again by itself, but the attempt is over; the watchdog asks every second, so
        the task's status says so before Spark's retry comes back (which imports Copycat in a
        fresh Python worker first: seconds)."""
        if placement.stage_id is None or placement.spark_task_id is None:
            return None
        # Spark's Java tracker, asked for the one count: pyspark's getStageInfo fetches every
        # field with a py4j round trip of its own (an idle worker grew ~0.7 MB/min with two
        # tasks). The count is read through py4j's get_method, not ``stage.numFailedTasks``:
        # that attribute is cached on the JavaObject and points back at it, a reference cycle
        # per check that only a full collection frees, and an idle worker makes too few
        # objects for one to run (0.15 MB/min of garbage with two tasks, flat when collected).
        from py4j.java_gateway import get_method

        stage = self._java_status_tracker.getStageInfo(placement.stage_id)
        if stage is not None and not get_method(stage, "numFailedTasks")():
            return None  # one task per job: none failed yet (cheap, no HTTP)
        for attempt in self._status_api(f"stages/{placement.stage_id}") or []:
            path = f"stages/{placement.stage_id}/{attempt['attemptId']}/taskList"
            for task in self._status_api(path) or []:
                if task.get("taskId") == placement.spark_task_id and task.get("status") in (
                    "FAILED",
                    "KILLED",
                ):
                    error = str(task.get("errorMessage") or "").strip() or "no reason given"
                    first = error.splitlines()[0].removeprefix(SPARK_EXCEPTION)
                    return (
                        f"Spark failed its task on executor {placement.executor_id} on "
                        f"{placement.host}: {first}"
                    )
        return None

    # -- control requests ----------------------------------------------------------------------

    def _handle(self, request: Request) -> tuple[int, dict[str, Any]]:
        with self._lock:
            runner = self._runners.get((request.connector, request.task))
        if runner is None or runner.attempt != request.attempt:
            return 409, {
                "error": f"attempt {request.attempt} of task "
                f"{request.connector}-{request.task} is not the current one"
            }
        if request.op == "heartbeat":
            return 200, runner.on_heartbeat(request.body)
        if request.op == "offsets.get":
            wanted = [dict(p) for p in request.body.get("partitions", [])]
            found = self.offsets.get(request.connector, wanted)
            pairs = [
                [p, found[freeze_partition(p)]] for p in wanted if freeze_partition(p) in found
            ]
            return 200, {"offsets": pairs}
        if request.op == "offsets.commit":
            entries = [(dict(p), o) for p, o in request.body.get("entries", [])]
            if not runner.may_commit():
                return 409, {"error": "the task is no longer running here"}
            # This commit's writes, waited for alone (the store is the worker's, shared).
            self.offsets.put(request.connector, entries)()
            return 200, {"committed": len(entries)}
        return 400, {"error": f"unknown control operation {request.op!r}"}

    # -- life cycle ----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the control endpoint (tasks were stopped before) and the SparkSession if this
        driver made it."""
        self._closed.set()
        self.control.close()
        self._release_session()

    def _release_session(self) -> None:
        if not self.owns_session:
            return
        # A local-cluster application's executor working directories ($SPARK_HOME/work/<app>)
        # stay: two local-cluster masters started in the same second give their applications
        # the same id, so the directory may be another worker's, in use.
        try:
            self.session.stop()
        except Exception as exc:  # noqa: BLE001 - Py4J's errors: the JVM is gone already
            log.warning("the SparkSession could not be stopped (its driver JVM exited?): %s", exc)


def _session(worker_id: str, conf: Mapping[str, str]) -> tuple[Any, bool]:
    """The process's SparkSession: the active one, or a new one from ``conf``.

    Raises:
        ConfigException: speculation on, no ``spark.master``, no pyspark, or a Spark
            application that could not start (naming ``spark.master`` and Spark's reason).
    """
    if str(conf.get("spark.speculation", "false")).lower() in _TRUE:
        raise ConfigException(
            "spark.speculation",
            conf["spark.speculation"],
            "Copycat tasks cannot run with Spark speculation on (a speculative copy runs the "
            "same connector task twice); set spark.speculation=false",
        )
    try:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise ConfigException(
            "task.runtime",
            "spark",
            "task.runtime=spark needs pyspark in the worker's Python: pip install 'copycat[spark]'",
        ) from exc
    existed = SparkContext._active_spark_context is not None
    # An application that lends its session keeps its own settings.
    defaults = {} if existed else SPARK_DEFAULTS
    options = {"spark.app.name": f"copycat {worker_id}", **defaults, **conf}
    master = conf.get("spark.master") or os.environ.get("MASTER")
    if not existed:
        # The executors' Python workers run this interpreter unless told otherwise: it has
        # Copycat (and never a plugin) installed. pyspark reads it from the environment.
        os.environ.setdefault("PYSPARK_PYTHON", conf.get("spark.pyspark.python") or sys.executable)
        if not master:
            raise ConfigException(
                "spark.master",
                None,
                "task.runtime=spark needs spark.master in the worker config (spark://host:7077, "
                "yarn, k8s://..., local-cluster[...] or local[N])",
            )
    builder = SparkSession.builder
    for key, value in options.items():
        builder = builder.config(key, value)
    sigint = signal.getsignal(signal.SIGINT)
    try:
        if not existed:
            launch_gateway(options)
        session = builder.getOrCreate()
        stopped = session.sparkContext._jsc is None or session.sparkContext._jsc.sc().isStopped()
    except ConfigException:
        raise
    except Exception as exc:  # noqa: BLE001 - Py4J, pyspark and JVM errors alike
        raise not_started(master, reason_of(exc)) from exc
    finally:
        if threading.current_thread() is threading.main_thread():
            # A SparkContext made on the main thread replaces the SIGINT handler with one that
            # cancels every job and raises KeyboardInterrupt: a Ctrl-C would kill the tasks'
            # jobs before the herder stops them (no final offset commits). The worker's own
            # handler (a graceful stop, core/bootstrap.py) stays.
            signal.signal(signal.SIGINT, sigint)
    if stopped:  # the standalone client gave up on an unreachable master, and stopped it
        session.stop()
        raise not_started(master, "the Spark application stopped as soon as it started")
    return session, not existed
