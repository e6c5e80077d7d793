"""The worker: starts connectors and tasks in plugin hosts and drives task loops on threads.

A connector whose ``task.runtime`` is ``spark`` has its tasks driven on Spark executors instead
(:mod:`core.spark`): the same task runtime, started, paused and stopped the same way.

The worker owns every Kafka client (one producer per source task, one consumer per sink task,
as Kafka Connect does); plugin hosts see only bytes. A failing task is marked FAILED with its
trace and never takes the worker or other tasks down.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.client_overrides import ConnectorClientConfigOverridePolicy
from core.connect_metrics import ConnectorMetrics, TaskMetrics, WorkerMetrics, metrics_from_config
from core.connector_config import ConnectorConfig
from core.metrics import Metrics
from core.offsets import OffsetStore
from core.plugins import LocalHosts, PluginCatalogue
from core.runtime.build import build_task
from core.runtime.counters import TAKE_EVERY_S
from core.runtime.loop import TaskLoop
from core.runtime.services import ConfluentClients, KafkaClients, TaskFencing, TaskServices
from core.runtime.spec import DATA_PATH_WORKER, TaskSpec
from core.status import State, Status, StatusBoard, failure_trace
from core.stores.status import ScrubbingStatusStore, StatusStore
from core.stores.task_offsets import TaskOffsetStore
from core.task_specs import TaskSpecFactory
from core.worker_config import WorkerConfig
from isolation import (
    SHUTDOWN_GRACE_S,
    TASK_SETUP_FAILED,
    ConnectorEvent,
    HostClient,
    PluginHostCrashed,
    PluginHostTimeout,
    allocator,
)
from isolation.environment import PluginDescriptor
from isolation.errors import remote_error
from isolation.protocol import RAISE_ERROR, REQUEST_TASK_RECONFIGURATION
from plugin_api import ConfigException, ConnectException

if TYPE_CHECKING:
    from core.spark.driver import SparkDriver

log = logging.getLogger("copycat.worker")

# Seconds a task loop sleeps after an iteration that moved nothing, when the task's poll()
# returned at once: keeps an idle source from spinning a core.
IDLE_BACKOFF_S = 0.01
# A task whose start has not returned after this long (or half its plugin.call.timeout.ms, if
# shorter) is reported once, with where its driver thread is and, asked by signal, its plugin
# host's threads (isolation/stacks.py): a start may wait up to plugin.call.timeout.ms (5
# minutes by default) and would say nothing meanwhile. A healthy start takes well under a
# second, a loaded machine's a few.
SLOW_START_REPORT_S = 30.0
# Connector config keys the runtime copies into every task config (Kafka's SinkTask
# TOPICS_CONFIG and TOPICS_REGEX_CONFIG): which topics a sink task reads is the runtime's.
_RUNTIME_TASK_KEYS = ("topics", "topics.regex")


# What Kafka's WorkerTask logs when a task fails, after the task's name (kafka_task_name).
UNRECOVERABLE = (
    "Task threw an uncaught and unrecoverable exception. Task is being killed and will not "
    "recover until manually restarted"
)


# Set (True) on the exception of a connector whose own start() raised, as opposed to a failure
# to load or instantiate it: Kafka logs the two differently (see WorkerHerder._fail_connector).
CONNECTOR_START_THREW = "_copycat_connector_start_threw"


def kafka_task_name(spec: TaskSpec) -> str:
    """A task as Kafka's WorkerTask subclasses name themselves in their logs
    (``WorkerSinkTask{id=name-0}``)."""
    if spec.kind == "sink":
        kind = "WorkerSinkTask"
    elif spec.exactly_once is not None:
        kind = "ExactlyOnceWorkerSourceTask"
    else:
        kind = "WorkerSourceTask"
    return f"{kind}{{id={spec.name}}}"


@dataclass(frozen=True)
class RestartPolicy:
    """``task.restart.*``: automatic restarts of failed tasks with bounded exponential backoff
    (beyond Kafka Connect, opt-in per connector; parsed once, from the connector ConfigDef)."""

    max_attempts: int
    initial_backoff_ms: int
    max_backoff_ms: int

    @classmethod
    def of(cls, config: ConnectorConfig) -> RestartPolicy | None:
        if config.task_restart_policy == "none":
            return None
        return cls(
            config.task_restart_max_attempts,
            config.task_restart_backoff_initial_ms,
            config.task_restart_backoff_max_ms,
        )

    def delay_ms(self, attempt: int) -> int:
        return min(self.initial_backoff_ms << (attempt - 1), self.max_backoff_ms)


def prefixed(props: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix) :]: v for k, v in props.items() if k.startswith(prefix)}


def _wrong_task_configs(configs: object) -> str | None:
    """What is wrong with what a connector's ``task_configs()`` returned (None if nothing is):
    a string would otherwise count as one task per character."""
    if not isinstance(configs, list | tuple):
        return type(configs).__name__
    for index, config in enumerate(configs):
        if not isinstance(config, Mapping):
            return f"{type(configs).__name__} holding {type(config).__name__} at index {index}"
    return None


class TaskConfigsReturnError(ConnectException):
    """A connector's ``task_configs()`` returned something other than a list of dicts: a bug
    in the connector, which fails it (asked again, it would answer the same)."""


class TooManyTasksException(ConnectException):
    """A connector generated more task configs than its ``tasks.max`` (KIP-1004), with
    ``tasks.max.enforce`` true: the connector is FAILED, and so is each of its tasks started
    while more task configs than that are stored (Kafka's TooManyTasksException)."""

    def __init__(self, connector: str, num_tasks: int, max_tasks: int) -> None:
        super().__init__(
            f"The connector {connector} has generated {num_tasks} tasks, which is greater "
            f"than {max_tasks}, the maximum number of tasks it is configured to create. This "
            "behaviour should be considered a bug and is disallowed. If necessary, it can be "
            "permitted by reconfiguring the connector with 'tasks.max.enforce' set to false; "
            "however, this option will be removed in a future release of Kafka Connect."
        )


def check_tasks_max(connector: str, num_tasks: int, props: Mapping[str, str]) -> None:
    """Kafka's Worker.checkTasksMax: ``num_tasks`` task configs of ``connector`` (generated,
    or stored when one of its tasks starts) against the ``tasks.max`` of its config ``props``.

    Raises:
        TooManyTasksException: more than ``tasks.max``, and ``tasks.max.enforce`` is true
            (without it, a warning is logged, as Kafka does).
    """
    max_tasks = int(props.get("tasks.max", "1"))
    if num_tasks <= max_tasks:
        return
    if props.get("tasks.max.enforce", "true").strip().lower() != "false":
        raise TooManyTasksException(connector, num_tasks, max_tasks)
    log.warning(
        "The connector %s has generated %d tasks, which is greater than %d, the maximum "
        "number of tasks it is configured to create. This behavior should be considered a bug "
        "and will be disallowed in future releases of Kafka Connect. Please report this to "
        "the maintainers of the connector and request that they adjust their connector's "
        "taskConfigs() method to respect the maxTasks parameter.",
        connector,
        num_tasks,
        max_tasks,
    )


def _with_topics(task_config: dict[str, str], connector_props: Mapping[str, str]) -> dict[str, str]:
    """``task_config`` with the connector config's ``topics`` and ``topics.regex`` (those it
    has), as Kafka's Worker.connectorTaskConfigs copies them into every task config whatever
    the connector returned: a new topic list then changes the task configs, so the tasks
    restart on it even when the connector hands them the same config (or an empty one), and
    ``GET /connectors/{name}/tasks`` shows what each task reads."""
    for key in _RUNTIME_TASK_KEYS:
        if key in connector_props:
            task_config[key] = connector_props[key]
    return task_config


@dataclass
class _Connector:
    """A connector as this worker knows it: its instance (``host``; None when the instance
    runs on another worker, distributed mode) and the tasks of it that run here.

    ``props``, ``plugin`` and ``version`` are the instance's (or, with no instance here, the
    config the last task started here was given). A task never takes its config from them
    when it is started with a config of its own: each task runs the connector config it was
    started with (its spec), as Kafka's Worker builds every task from the connector config
    it is handed, so tasks started before a config change run on with theirs until restarted.
    """

    name: str
    props: dict[str, str]
    plugin: PluginDescriptor
    host: HostClient | None
    handle: int
    version: str
    tasks: dict[int, _TaskRunner] = field(default_factory=dict)
    stopping: bool = False

    def instance(self) -> HostClient:
        if self.host is None:
            raise ConnectException(f"connector {self.name} does not run on this worker")
        return self.host


class _TaskRunner(threading.Thread):
    """The worker's driver of one task: a thread that builds the task from its spec
    (:func:`core.runtime.build.build_task`: host, pipeline, clients, the task's ``start()``)
    and runs its loop until stopped or failed, as Kafka's WorkerTask does.

    A task that hangs in ``start()`` holds up nothing but itself: its call's deadline
    (plugin.call.timeout.ms) or a stop reclaims it by killing its host.
    """

    def __init__(
        self,
        worker: Worker,
        spec: TaskSpec,
        paused: bool,
        fencing: TaskFencing | None = None,
        restart_policy: RestartPolicy | None = None,
    ) -> None:
        super().__init__(name=f"task-{spec.name}", daemon=True)
        self.worker = worker
        self.spec = spec
        self.fencing = fencing
        # task.restart.* of the connector config this task was started with (its spec's).
        self.restart_policy = restart_policy
        self.connector = spec.connector
        self.task_id = spec.task_id
        self.task_props: dict[str, str] = dict(spec.task_config)
        self.host: HostClient | None = None
        self.loop: TaskLoop | None = None
        self.stopping = threading.Event()
        self.paused = threading.Event()
        if paused:
            self.paused.set()
        # Set after ``stopping`` or ``paused`` changes (request_stop, request_pause): ends
        # the driver's wait between the iterations of a paused loop.
        self.wakeup = threading.Event()
        self.started = threading.Event()  # set once start() returned (or failed)
        # Set once the task has stopped: its final commit, the plugin's stop() and the
        # consumer's close are done (or it failed, or never started). What may remain is its
        # plugin host's exit, which is no part of the task's stop (Worker._stop_runners).
        self.done = threading.Event()
        self.failed = False
        self.started_at = time.monotonic()
        # The group generation the worker was in when it was told to stop: the task's last
        # UNASSIGNED carries it, as Kafka's onShutdown stamps the herder's generation then
        # (a rebalance stops revoked tasks before it adopts its new generation, so a worker
        # that rejoined late, a thawed zombie, cannot hide the new owner's status). 0 until
        # :meth:`request_stop`: the store stamps its present generation.
        self.stop_generation = 0
        # Set by a stop that gave up waiting for the task (Worker._stop_runners): from then on
        # a newer instance may run, and this one writes no status (:meth:`cancel`). Also set
        # for a task that no longer exists (:meth:`silence`): why, for the log.
        self.cancelled = False
        self._unreported_because = "was given up"
        self._status_lock = threading.Lock()
        # The task's metrics (core/connect_metrics.py): they outlive the thread of a task that
        # failed (its status, its error counts stay readable) and are closed when the worker
        # stops or drops the task (:meth:`close_metrics`), as Kafka's Worker.awaitStopTask
        # removes them, not WorkerTask.run.
        self.metrics = TaskMetrics(
            worker.metrics,
            spec.connector,
            spec.task_id,
            spec.kind,
            transactional=spec.exactly_once is not None,
        )

    def run(self) -> None:
        # One line when the task's thread begins and one when it ends, whatever the cause (as
        # Kafka's "Starting task" / "Stopping task"): operators and the distributed tests count
        # them to tell which tasks a rebalance stopped.
        log.info("task %s starting", self.spec.name)
        try:
            self._run()
        finally:
            self.done.set()
            log.info("task %s stopped", self.spec.name)

    def close_metrics(self) -> None:
        """Remove the task's metrics: the worker stopped it, or dropped it (a restart)."""
        self.metrics.close()

    def _run(self) -> None:
        """The thread's work on the local runtime (the Spark runner has its own)."""
        worker, spec = self.worker, self.spec
        report_after_s = min(SLOW_START_REPORT_S, spec.settings.call_timeout_s / 2)
        watch = threading.Timer(report_after_s, self._report_slow_start, (report_after_s,))
        watch.daemon = True
        watch.start()
        try:
            loop = build_task(
                spec,
                worker.services,
                on_host=self._set_host,
                should_stop=self.stopping.is_set,
                fencing=self.fencing,
            )
        except BaseException as exc:  # noqa: BLE001 - a task failure must not kill the worker
            watch.cancel()
            self.started.set()
            if self.stopping.is_set():
                return  # stopped (its host killed) while starting: not a failure
            self.failed = True
            trace = failure_trace(exc)
            if getattr(exc, TASK_SETUP_FAILED, False):
                # As Kafka's Worker.startTask logs a task it could not set up (its class, a
                # converter, a transform, its dead letter queue), the trace once after it.
                log.error("Failed to start task %s\n%s", spec.name, trace)
            else:
                # As Kafka's WorkerTask logs a task whose start() threw (doRun), which
                # operators' alerts match: its name, the sentence, the trace once after it.
                log.error("%s %s\n%s", kafka_task_name(spec), UNRECOVERABLE, trace)
            worker.worker_metrics.task_started(ok=False)
            self._report(State.FAILED, trace, version=spec.version)
            worker.task_failed(self)
            return
        watch.cancel()
        self.loop = loop
        worker.worker_metrics.task_started(ok=True)
        if not self.stopping.is_set():
            state = State.PAUSED if self.paused.is_set() else State.RUNNING
            self._report(state, version=spec.version)
        self.started.set()
        self._drive(loop)

    def _set_host(self, host: HostClient) -> None:
        self.host = host

    def request_pause(self, paused: bool) -> None:
        """Pause or resume the task: its driver acts on it at once, even while it waits."""
        (self.paused.set if paused else self.paused.clear)()
        self.wakeup.set()
        loop = self.loop
        if loop is not None:
            loop.wake()  # a loop idling in its host answers now

    def _report_slow_start(self, after_s: float) -> None:
        """The start watch's (its own thread): say where a start that is taking long waits."""
        if self.started.is_set() or self.stopping.is_set():
            return
        frame = sys._current_frames().get(self.ident or -1)
        where = "".join(traceback.format_stack(frame)) if frame is not None else "(unknown)\n"
        log.warning(
            "task %s is still starting after %g s (plugin.call.timeout.ms=%d bounds it); its "
            "driver thread is at:\n%s",
            self.spec.name,
            after_s,
            round(self.spec.settings.call_timeout_s * 1000),
            where.rstrip("\n"),
        )
        host = self.host
        if host is not None and host.request_stacks():
            log.warning(
                "task %s: its plugin host (pid %s) writes its threads' stacks to this log "
                "(copycat.plugin.%s)",
                self.spec.name,
                host.pid,
                host.name,
            )

    def cancel(self) -> None:
        """Give the task up: it did not stop in time, its host is being killed, and a newer
        instance of it may start at once. Whatever this thread does from now on (fail as its
        host dies, end), it writes no status over the newer instance's, as Kafka's
        ``WorkerTask.cancel()``."""
        with self._status_lock:
            self.cancelled = True

    def silence(self) -> None:
        """The task no longer exists (its connector's task count shrank, or the connector was
        deleted), and its status is being removed: nothing it does while it stops writes one
        again (an UNASSIGNED from its stop would show it once more)."""
        with self._status_lock:
            self.cancelled = True
            self._unreported_because = "no longer exists"

    def _report(
        self,
        state: State,
        trace: str | None = None,
        version: str | None = None,
        generation: int = 0,
    ) -> None:
        """Write the task's status, unless it was given up (:meth:`cancel`). ``generation``:
        the group generation it belongs to (0, the store's present one)."""
        with self._status_lock:
            if self.cancelled:
                log.info(
                    "task %s %s: its %s is not reported",
                    self.spec.name,
                    self._unreported_because,
                    state.value,
                )
                return
            self.metrics.state(state)
            self.worker.status.set_task(
                self.connector,
                self.task_id,
                Status(
                    state,
                    self._reporter(state),
                    trace=trace,
                    version=version,
                    generation=generation,
                ),
            )

    def _reporter(self, state: State) -> str:
        """The worker id a status of ``state`` names."""
        return self.worker.worker_id

    def _drive(self, loop: TaskLoop) -> None:
        """The TaskLoop protocol (core/runtime/loop.py), until stopped or failed.

        A pause or resume is reported (the task's PAUSED or RUNNING status) by this thread once
        the loop has done it: after the first iteration that follows ``pause()``, which sends
        what was already polled and polls no more (a loop in a plugin host learns it with that
        iteration's request). As Kafka's WorkerTask reports onPause from the task's own thread:
        a status of PAUSED means no record moves any more.

        While paused, an iteration that moved nothing is followed by a wait of the loop's
        ``paused_wait_s`` (as Kafka's WorkerTask.awaitUnpause waits), which a resume or a stop
        ends at once (``wakeup``): a paused source costs nothing, a paused sink still polls.
        """
        paused = reported_failure = False
        metrics = self.metrics
        take_at = 0.0  # when the loop's counters are next taken (TAKE_EVERY_S)
        wakeup = self.wakeup
        try:
            loop.start()
            while True:
                wakeup.clear()  # before the states are read: a change after it ends the wait
                if self.stopping.is_set():
                    break
                changed = self.paused.is_set() != paused
                if changed:
                    paused = self.paused.is_set()
                    (loop.pause if paused else loop.resume)()
                moved = loop.iteration()
                now = time.monotonic()
                if now >= take_at:
                    take_at = now + TAKE_EVERY_S
                    metrics.absorb(loop.take_counters())
                if changed and not self.stopping.is_set():
                    # A fresh status of this worker's present generation, as Kafka's
                    # onPause/onResume write (not the one it replaces with another state).
                    self._report(
                        State.PAUSED if paused else State.RUNNING, version=self.spec.version
                    )
                if not moved:
                    if paused:
                        wakeup.wait(max(IDLE_BACKOFF_S, loop.paused_wait_s))
                    else:
                        self.stopping.wait(IDLE_BACKOFF_S)
        except BaseException as exc:  # noqa: BLE001 - a task failure must not kill the worker
            self.failed = True
            if self.stopping.is_set():
                # Asked to stop, and failed meanwhile (its host killed by a stop that ran out
                # of time, or a crash during the stop): it stopped, as Kafka's WorkerTask says,
                # and is not FAILED (nor restarted) for it.
                log.warning("task %s failed while stopping: %s", self.spec.name, exc)
            else:
                trace = failure_trace(exc)
                # Kafka's WorkerTask words, which operators' alerts match.
                log.error("%s %s\n%s", kafka_task_name(self.spec), UNRECOVERABLE, trace)
                self._report(State.FAILED, trace, version=self.spec.version)
                reported_failure = True
        finally:
            try:
                try:
                    loop.stop(failed=self.failed, timeout_s=self.worker.graceful_timeout_s)
                    metrics.absorb(loop.take_counters())  # the final commit's
                except Exception as exc:  # noqa: BLE001
                    log.warning(
                        "task %s did not stop cleanly: %s", self.spec.name, exc, exc_info=True
                    )
                if not reported_failure:
                    self._report(State.UNASSIGNED, generation=self.stop_generation)
            finally:
                # The task has stopped, and the stop waiting for it (Worker._stop_runners) is
                # done with it; its host's exit follows (a process ending, which takes seconds
                # when dozens end at once on a loaded machine).
                self.done.set()
                if self.host is not None:
                    self.host.close(self.worker.graceful_timeout_s)
        if self.failed and not self.stopping.is_set():
            self.worker.task_failed(self)

    def topics(self) -> set[str]:
        """Topics the task produced to or consumed from since the last reset (KIP-558)."""
        loop = self.loop
        return loop.topics() if loop is not None else set()

    def forget_topics(self) -> None:
        """Any thread: the connector's active topics were reset (see TaskLoop.forget_topics)."""
        loop = self.loop
        if loop is not None:
            loop.forget_topics()

    def request_stop(self, generation: int = 0) -> None:
        """Ask the task to stop (:meth:`Worker._stop_runners` waits for it): its driver ends
        after the current iteration, and its plugin host is told at once, so that a retry of
        a record's retriable failure waiting there (errors.retry.timeout) ends now instead of
        holding the stop until the graceful timeout (the record is not delivered, its offset
        not committed), as Kafka's RetryWithToleranceOperator ends its backoff on a stop.
        A driver waiting while paused acts on it at once too (``wakeup``).

        ``generation``: the group generation its UNASSIGNED is stamped with (a rebalance
        passes the one the task was revoked in; 0: the worker's present one)."""
        if not self.stopping.is_set():
            self.stop_generation = generation or self.worker.status.generation
        self.stopping.set()
        self.wakeup.set()
        host = self.host
        if host is not None:
            host.request_stop()

    def kill_host(self, reason: str) -> None:
        """Reclaim a task that does not stop (or start) in time: kill its plugin host."""
        host = self.host
        if host is not None:
            host.kill(reason)

    def wait_started(self, timeout_s: float | None = None) -> bool:
        """Wait until the task's ``start()`` returned or failed (tests, diagnostics)."""
        return self.started.wait(timeout_s)


class Worker:
    """Runs connectors and their tasks; knows nothing of how they were assigned to it.

    Every call into plugin code has a deadline: ``plugin.call.timeout.ms`` for starts,
    validation, task configs and the data path, ``task.shutdown.graceful.timeout.ms`` for
    stops. Methods that call a connector's plugin block their caller (the herder runs them
    on that connector's own operation thread, see :mod:`core.serial`); tasks start and run on
    threads of their own.
    """

    def __init__(
        self,
        worker_id: str,
        config: WorkerConfig | Mapping[str, str],
        catalogue: PluginCatalogue,
        offsets: OffsetStore,
        *,
        client_props: Mapping[str, Any],
        status: StatusStore | None = None,
        clients: KafkaClients | None = None,
        task_offsets: Callable[[TaskSpec], TaskOffsetStore] | None = None,
        source_offsets_check: Callable[[str, Mapping[str, str]], None] | None = None,
        override_policy: ConnectorClientConfigOverridePolicy | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        """``config`` is the worker's (properties are parsed and checked); ``client_props``
        the keys every Kafka client gets (``bootstrap.servers`` resolved); ``clients`` makes
        the tasks' Kafka clients (tests, embedding), which runs every task's data path in the
        worker (``task.data.path=worker``): a plugin host makes confluent-kafka clients of its
        own. ``task_offsets`` makes a source task's offset store when it is not simply
        ``offsets`` (connectors' own offsets topics, see :mod:`core.offset_topics`);
        ``source_offsets_check`` is called with a source connector's name and config before
        its instance starts (its own offsets topic created and checked: raising fails the
        connector). ``override_policy`` is checked again when a task's clients are
        configured (default: All, see :mod:`core.client_overrides`). ``metrics``: the registry
        this worker's metrics go to (the herder's, with its reporters); else one of its own."""
        if not isinstance(config, WorkerConfig):
            config = WorkerConfig.from_properties(config)
        self.worker_id = worker_id
        self.config = config
        self.catalogue = catalogue
        self.offsets = offsets
        self._source_offsets_check = source_offsets_check
        self.client_props = dict(client_props)
        # Traces are scrubbed before any store sees them (the status topic is read by every
        # worker of the group, which cannot scrub values it never resolved).
        self.status: StatusStore = ScrubbingStatusStore(
            status if status is not None else StatusBoard()
        )
        self.connectors: dict[str, _Connector] = {}
        # Kafka Connect's metrics of this worker (core/connect_metrics.py); reporters are
        # added by whoever runs the worker (core/metric_reporters.py), GET /metrics reads it.
        self.metrics = metrics if metrics is not None else metrics_from_config(config)
        self.worker_metrics = WorkerMetrics(
            self.metrics, self._running_connectors, self._running_tasks, self._task_state
        )
        self._connector_metrics: dict[str, ConnectorMetrics] = {}
        self._stopped_topics: dict[str, set[str]] = {}  # see task_topics
        self.specs = TaskSpecFactory(
            config, catalogue, self.client_props, override_policy=override_policy
        )
        if clients is not None:
            # Clients of the caller's making exist only in this process: a task whose data
            # path ran in its plugin host would make its own there and never use them.
            self.specs.data_path_choice = DATA_PATH_WORKER
        self.services = TaskServices(
            hosts=LocalHosts(catalogue),
            offsets=offsets,
            clients=clients or ConfluentClients(),
            task_offsets=task_offsets,
        )
        settings = self.specs.settings
        self.graceful_timeout_s = settings.graceful_timeout_s
        self.call_timeout_s = settings.call_timeout_s
        self.memory_limit_bytes = settings.memory_limit_bytes
        self.commit_interval_s = settings.commit_interval_s
        self.runtime = str(config.get("task.runtime")).lower()
        self._spark: SparkDriver | None = None  # made on first use (core/spark/)
        self._spark_lock = threading.Lock()
        self._restart_attempts: dict[tuple[str, int], int] = {}
        # Hosts spawned for a connector and not yet registered (a start in progress), so a
        # delete can reclaim a start that hangs.
        self._starting: dict[str, HostClient] = {}
        self._lock = threading.Lock()
        # Set by the herder: a connector asked for its task configs to be generated again
        # (ConnectorContext.request_task_reconfiguration). Called on the host's event thread:
        # it must queue work, not do it.
        self.on_reconfiguration_requested: Callable[[str], None] = lambda name: None
        # Task loops allocate and free a batch of records at a time (isolation/allocator.py).
        allocator.tune_this_process()
        allocator.tune_gc()
        if self.runtime == "spark":  # fail at start-up, not at the first task, if Spark cannot
            self.spark()

    # -- metrics -------------------------------------------------------------------------------

    def _running_connectors(self) -> list[str]:
        """The connectors this worker holds (Kafka's Worker.connectors): running or paused
        here, failed here, or STOPPED here (:meth:`hold_stopped`)."""
        return list(self._connector_metrics)

    def _running_tasks(self) -> dict[str, list[int]]:
        return {name: sorted(c.tasks) for name, c in list(self.connectors.items()) if c.tasks}

    def _task_state(self, name: str, task_id: int) -> str | None:
        status = self.status.task(name, task_id)
        return None if status is None else status.state.value.lower()

    def _connector_state(self, name: str) -> str | None:
        status = self.status.connector(name)
        return None if status is None else status.state.value.lower()

    def _close_connector_metrics(self, name: str) -> None:
        metrics = self._connector_metrics.pop(name, None)
        if metrics is not None:
            metrics.close()

    # -- plugin hosts --------------------------------------------------------------------------

    def memory_limit(self, props: Mapping[str, str]) -> int:
        """``plugin.host.memory.max.bytes`` of a connector: its own value, else the worker's."""
        own = props.get("plugin.host.memory.max.bytes")
        return int(own) if own not in (None, "") else self.memory_limit_bytes

    def start_host(
        self,
        plugin: PluginDescriptor,
        name: str,
        props: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> HostClient:
        """A plugin host for ``plugin`` with the worker's deadlines and memory limit."""
        env = self.catalogue.environment(plugin)
        return env.start_host(
            name,
            call_timeout_s=self.call_timeout_s,
            memory_limit_bytes=self.memory_limit(props or {}),
            **kwargs,
        )

    # -- connectors ------------------------------------------------------------------------

    def resolve_connector(self, props: Mapping[str, str]) -> PluginDescriptor:
        if not props.get("connector.class"):
            raise ConfigException(
                "connector.class",
                None,
                'Missing required configuration "connector.class" which has no default value.',
            )
        return self.catalogue.resolve(
            "connector", props["connector.class"], props.get("connector.plugin.version")
        )

    def start_connector(self, name: str, props: Mapping[str, str]) -> str:
        """Start the connector instance in a host of its own; blocks (deadlines apply).

        Every attempt counts in ``connector-startup-*`` (Kafka's WorkerMetricsGroup counts a
        failure to instantiate the connector as well as one of its ``start()``). From its
        plugin host's start on, a failed connector stays held here, FAILED, with its
        ``connector-metrics``, as Kafka's WorkerConnector does, until it is stopped
        (:meth:`stop_connector`: restart, delete) or its instance goes elsewhere.
        """
        host: HostClient | None = None
        held: str | None = None  # the version of the plugin once the worker holds it
        log.info("creating connector %s of type %s", name, props.get("connector.class"))
        try:
            plugin = self.resolve_connector(props)
            # Parsed before any host starts: a bad key fails the connector's start, not its
            # tasks'.
            self._restart_policy(props, plugin)
            self._hold_connector(name, plugin, plugin.version)
            held = plugin.version
            if plugin.kind == "source" and self._source_offsets_check is not None:
                # Kafka's WorkerConnector starts a source connector's offset store before the
                # connector: a bad offsets topic of its own fails the connector.
                self._source_offsets_check(name, props)
            host = self._spawn_connector_host(name, plugin, props)
            handle = host.new(plugin.target)
            try:
                host.call(handle, "start", dict(props))
            except BaseException as exc:
                # Kafka logs a connector whose start() threw in WorkerConnector's words, any
                # other failure to start it in Worker's (the herder logs it, scrubbed).
                setattr(exc, CONNECTOR_START_THREW, True)
                raise
            version = str(host.call(handle, "version"))
        except BaseException as exc:
            self._starting.pop(name, None)
            if host is not None:
                host.close(self.graceful_timeout_s)
            self.worker_metrics.connector_started(ok=False)
            self.status.set_connector(
                name,
                Status(State.FAILED, self.worker_id, trace=failure_trace(exc), version=held),
            )
            raise
        with self._lock:
            self._starting.pop(name, None)
            existing = self.connectors.get(name)
            if existing is not None and existing.host is None:
                # Tasks of it already run here (distributed mode): the instance joins them.
                existing.props, existing.plugin, existing.version = dict(props), plugin, version
                existing.host, existing.handle, existing.stopping = host, handle, False
            else:
                self.connectors[name] = _Connector(name, dict(props), plugin, host, handle, version)
        self.status.set_connector(name, Status(State.RUNNING, self.worker_id, version=version))
        self.worker_metrics.connector_started(ok=True)
        metrics = self._connector_metrics.get(name)
        if metrics is not None:
            metrics.version = version
        log.info("connector %s started (%s %s)", name, plugin.class_name, version)
        return version

    def connector_version(self, name: str) -> str | None:
        """The version of connector ``name``'s plugin if this worker holds it (its instance
        runs here or failed here), else None: the version a FAILED status names, as Kafka's
        ``Worker.connectorVersion``."""
        metrics = self._connector_metrics.get(name)
        return metrics.version if metrics is not None else None

    def _hold_connector(self, name: str, plugin: PluginDescriptor, version: str) -> None:
        """``connector-metrics`` for a connector this worker holds (its instance runs here,
        failed here or is STOPPED here); it counts in ``connector-count``."""
        self._close_connector_metrics(name)
        self._connector_metrics[name] = ConnectorMetrics(
            self.metrics,
            name,
            plugin.kind,
            plugin.class_name,
            version,
            lambda: self._connector_state(name),
        )

    def hold_stopped(self, name: str, props: Mapping[str, str]) -> None:
        """The connector assigned here is STOPPED (KIP-875): no instance runs, but the worker
        holds it, as Kafka's WorkerConnector in state STOPPED: its ``connector-metrics`` say
        ``stopped`` and it counts in ``connector-count`` (its tasks are gone). Nothing is
        held when its plugin is not installed (Kafka could not instantiate it either)."""
        try:
            plugin = self.resolve_connector(props)
        except ConnectException as exc:
            log.debug("connector %s: no metrics held for it while stopped: %s", name, exc)
            self._close_connector_metrics(name)
            return
        self._hold_connector(name, plugin, plugin.version)

    def forget_connector(self, name: str) -> None:
        """The connector is no longer held here (deleted, or its instance assigned
        elsewhere) although no instance of it ran here (FAILED or STOPPED)."""
        if not self.instance_running(name):
            self._close_connector_metrics(name)

    def _spawn_connector_host(
        self, name: str, plugin: PluginDescriptor, props: Mapping[str, str]
    ) -> HostClient:
        holder: list[HostClient] = []

        def on_exit(crash: PluginHostCrashed) -> None:
            if holder:
                self._connector_host_died(name, holder[0], crash)

        def on_event(event: ConnectorEvent) -> None:
            if holder:
                self._connector_event(name, holder[0], event)

        host = self.start_host(
            plugin, f"{name}:connector", props, on_exit=on_exit, on_event=on_event
        )
        holder.append(host)
        with self._lock:
            self._starting[name] = host
        return host

    def _connector_event(self, name: str, host: HostClient, event: ConnectorEvent) -> None:
        """A running connector asked for something from one of its own threads."""
        connector = self.connectors.get(name)
        if connector is None or connector.host is not host or connector.stopping:
            return  # not (or no longer) running: a start regenerates task configs anyway
        if event.kind == REQUEST_TASK_RECONFIGURATION:
            log.info("connector %s requested task reconfiguration", name)
            self.on_reconfiguration_requested(name)
        elif event.kind == RAISE_ERROR and event.error is not None:
            error = remote_error(host.name, event.error)
            log.error("connector %s raised an error: %s", name, error)
            self.status.set_connector(
                name,
                Status(
                    State.FAILED,
                    self.worker_id,
                    trace=failure_trace(error),
                    version=connector.version,
                ),
            )

    def _connector_host_died(self, name: str, host: HostClient, crash: PluginHostCrashed) -> None:
        """A connector's host exited between calls (killed, crashed): the connector FAILED."""
        connector = self.connectors.get(name)
        if connector is None or connector.host is not host or connector.stopping:
            return
        log.error("connector %s failed: %s", name, crash)
        self.status.set_connector(
            name,
            Status(
                State.FAILED,
                self.worker_id,
                trace=failure_trace(crash),
                version=connector.version,
            ),
        )

    def task_configs(self, name: str) -> list[dict[str, str]]:
        connector = self.connectors[name]
        max_tasks = int(connector.props.get("tasks.max", "1"))
        configs = connector.instance().call(connector.handle, "task_configs", max_tasks)
        wrong = _wrong_task_configs(configs)
        if wrong is not None:
            raise TaskConfigsReturnError(
                f"connector {name}: task_configs() must return a list of dicts (one config per "
                f"task), got {wrong}"
            )
        check_tasks_max(name, len(configs), connector.props)
        return [
            _with_topics({str(k): str(v) for k, v in c.items()}, connector.props) for c in configs
        ]

    def stop_connector(self, name: str) -> None:
        """Stop the connector's tasks, then itself, each within the graceful timeout."""
        if name not in self.connectors:
            self._close_connector_metrics(name)  # a failed or stopped one held here
            return
        self.connectors[name].stopping = True
        self.stop_tasks(name)
        with self._lock:
            connector = self.connectors.pop(name, None)
        if connector is None or connector.host is None:
            self._close_connector_metrics(name)  # only tasks of it ran here
            return
        self._stop_connector_instance(connector)
        self.status.set_connector(name, Status(State.UNASSIGNED, self.worker_id))

    def _stop_connector_instance(
        self, connector: _Connector, deadline: float | None = None
    ) -> None:
        """Stop the instance within the graceful timeout (or by ``deadline``, one shared by
        connectors stopped together), then end its plugin host.

        One that does not stop in time is logged as Kafka's Worker.awaitStopConnector does
        ("failed to properly shut down"); its host is killed (the call's deadline), which
        Kafka, whose connector is a thread it can only abandon, cannot do.
        """
        self._close_connector_metrics(connector.name)
        connector.stopping = True
        host = connector.host
        if host is None:
            return
        timeout = self.graceful_timeout_s
        if deadline is not None:
            timeout = max(0.0, deadline - time.monotonic())
        try:
            if host.alive:
                host.call(connector.handle, "stop", timeout_s=timeout)
        except PluginHostTimeout:
            log.error(
                "Connector %s failed to properly shut down: its stop() did not return within "
                "the graceful timeout (%g s); killed its plugin host",
                connector.name,
                self.graceful_timeout_s,
            )
        except Exception as exc:  # noqa: BLE001
            log.warning("connector %s did not stop cleanly: %s", connector.name, exc)
        finally:
            host.close(self.graceful_timeout_s)

    def _stop_connectors(self, names: Iterable[str]) -> None:
        """Stop these connectors' instances together, as Kafka's
        Worker.stopAndAwaitConnectors: each is told on a thread of its own, and all are
        awaited against one shared deadline (the graceful timeout), not one after another
        with a timeout each (40 connectors took 3.5 s one by one, mostly their hosts' exits).
        Their tasks are stopped already (:meth:`_stop_tasks_of_connectors`)."""
        with self._lock:
            stopping = [c for name in names if (c := self.connectors.pop(name, None)) is not None]
        deadline = time.monotonic() + self.graceful_timeout_s
        threads: list[threading.Thread] = []
        for connector in stopping:
            connector.stopping = True
            if connector.host is None:
                self._close_connector_metrics(connector.name)  # only tasks of it ran here
                continue
            thread = threading.Thread(
                target=self._stop_connector_instance,
                args=(connector, deadline),
                name=f"stop-connector-{connector.name}",
                daemon=True,
            )
            thread.start()
            threads.append(thread)
        # A stop that timed out has its host killed at the deadline; a host's exit after its
        # stop is waited for as long again at most (HostClient.close kills one that lingers).
        exits = deadline + self.graceful_timeout_s + SHUTDOWN_GRACE_S
        for thread in threads:
            thread.join(max(0.0, exits - time.monotonic()))
        for connector in stopping:
            if connector.host is not None:
                self.status.set_connector(connector.name, Status(State.UNASSIGNED, self.worker_id))

    def instance_running(self, name: str) -> bool:
        """Whether the connector's instance runs on this worker (not only tasks of it)."""
        connector = self.connectors.get(name)
        return connector is not None and connector.host is not None

    def stop_connector_instance(self, name: str) -> None:
        """Stop the connector's instance only; its tasks here keep running (distributed mode:
        the instance was reassigned or the connector was stopped)."""
        connector = self.connectors.get(name)
        if connector is None or connector.host is None:
            self._close_connector_metrics(name)  # a failed or stopped one held here
            return
        self._stop_connector_instance(connector)
        with self._lock:
            connector.host, connector.handle, connector.stopping = None, 0, False
            if not connector.tasks:
                self.connectors.pop(name, None)

    def _forget_if_idle(self, name: str) -> None:
        with self._lock:
            connector = self.connectors.get(name)
            if connector is not None and connector.host is None and not connector.tasks:
                del self.connectors[name]

    def reclaim(self, name: str, reason: str) -> None:
        """Kill the host of a connector start that is still in progress (it hangs)."""
        with self._lock:
            host = self._starting.pop(name, None)
        if host is not None:
            log.error("connector %s: %s; killing its plugin host", name, reason)
            host.kill(reason)

    # -- tasks -------------------------------------------------------------------------------

    def start_task(
        self,
        name: str,
        task_id: int,
        task_props: Mapping[str, str],
        *,
        connector_props: Mapping[str, str] | None = None,
        paused: bool | None = None,
        exactly_once: bool = False,
        fencing: TaskFencing | None = None,
        task_count: int | None = None,
    ) -> _TaskRunner:
        """Start a task on its own thread and return at once; its status becomes RUNNING (or
        PAUSED) when its ``start()`` returns, FAILED if that fails.

        ``connector_props`` (resolved) lets a task start where its connector's instance does
        not run (distributed mode); ``paused`` overrides the connector status's say;
        ``exactly_once`` runs a source task transactionally, ``fencing`` around its
        producer's initialisation (KIP-618; the herder decides both). ``task_count`` is how
        many task configs of the connector are stored (checked against its ``tasks.max`` on
        every start, as Kafka's Worker.startTask does: configs stored before
        ``tasks.max.enforce`` was set, or by another worker, start no task beyond it).

        Raises:
            ConfigException: the task's pipeline names a plugin that is not installed, or a
                connector key is invalid (the spec could not be made).
            TooManyTasksException: more than ``tasks.max`` task configs are stored.
        """
        known = self.connectors.get(name)
        if connector_props is None and known is None:
            raise KeyError(name)
        previous = known.tasks.get(task_id) if known is not None else None
        if previous is not None and previous.is_alive():
            raise ConnectException(f"task {name}-{task_id} is already running")
        try:
            if connector_props is None and known is not None:
                props, plugin, version = dict(known.props), known.plugin, known.version
            else:
                # The config this start was given, never the entry's: with other tasks of the
                # connector still running here on an older config, the entry's is stale.
                props = dict(connector_props or {})
                plugin = self.resolve_connector(props)
                version = self._task_version(name, plugin)
            if task_count is not None:
                check_tasks_max(name, task_count, props)
            if paused is None:
                connector_status = self.status.connector(name)
                paused = connector_status is not None and connector_status.state is State.PAUSED
            spec = self.specs.make(
                name,
                task_id,
                plugin,
                props,
                task_props,
                version,
                exactly_once=exactly_once and plugin.kind == "source",
            )
            restart_policy = self._restart_policy(props, plugin)
            if previous is not None:
                previous.close_metrics()  # a failed one's, kept until it is replaced
            runner = self._runner(spec, props, paused, fencing, restart_policy)
        except Exception:
            # Kafka's Worker.startTask: a task that cannot even be built is a failed start.
            self.worker_metrics.task_started(ok=False)
            raise
        connector = self._task_group(name, props, plugin)
        connector.tasks[task_id] = runner
        current = self.status.task(name, task_id)
        if current is None or current.state not in (State.RUNNING, State.RESTARTING):
            # UNASSIGNED until its start() returns. Not over a RUNNING or a RESTARTING, which
            # stay until the task reports: Kafka's WorkerTask writes nothing before it has
            # started, so a task moved by a rebalance (or restarted) in the generation it
            # started in shows its previous instance's RUNNING meanwhile
            # (core/distributed/status_store.py), and a task restarted with its connector
            # (KIP-745: stopped, then marked RESTARTING) shows RESTARTING until RUNNING.
            self.status.set_task(name, task_id, Status(State.UNASSIGNED, self.worker_id))
        self.worker_metrics.sync_connectors()
        runner.start()
        return runner

    def _task_version(self, name: str, plugin: PluginDescriptor) -> str:
        """The version a task of ``plugin`` reports: its running instance's ``version()`` when
        that instance runs here on the same plugin, else the installed plugin's."""
        connector = self.connectors.get(name)
        if connector is not None and connector.host is not None and connector.plugin == plugin:
            return connector.version
        return plugin.version

    def _restart_policy(
        self, props: Mapping[str, str], plugin: PluginDescriptor
    ) -> RestartPolicy | None:
        return RestartPolicy.of(
            ConnectorConfig.from_properties(
                props,
                plugin.kind == "sink",
                topic_creation_enabled=self.specs.settings.topic_creation_enabled,
            )
        )

    def _task_group(
        self, name: str, props: Mapping[str, str], plugin: PluginDescriptor
    ) -> _Connector:
        """The entry holding the connector's tasks here, made if there is none. With no
        instance here, it takes the config its newest task started with (what
        :meth:`reserve_task_slots` and the plugins in use read)."""
        with self._lock:
            entry = self.connectors.get(name)
            if entry is None:
                entry = _Connector(name, dict(props), plugin, None, 0, plugin.version)
                self.connectors[name] = entry
            elif entry.host is None:
                entry.props, entry.plugin, entry.version = dict(props), plugin, plugin.version
            return entry

    def stop_tasks(self, name: str, timeout_s: float | None = None) -> None:
        """Stop every task of ``name``: signal all, then wait (the timeout is shared)."""
        self._stop_tasks_of_connectors([name], timeout_s)

    def _stop_tasks_of_connectors(self, names: Iterable[str], timeout_s: float | None) -> None:
        """Stop every task of these connectors together (one shared graceful timeout)."""
        connectors = [c for name in names if (c := self.connectors.get(name)) is not None]
        if not connectors:
            return
        self._stop_runners([r for c in connectors for r in list(c.tasks.values())], timeout_s)
        for connector in connectors:
            connector.tasks.clear()
            if self._spark is not None:
                self._spark.release(connector.name)
            self._forget_if_idle(connector.name)
        self.worker_metrics.sync_connectors()

    # -- task runtimes (local threads, Spark executors) ------------------------------------------

    def runtime_of(self, props: Mapping[str, str]) -> str:
        """A connector's ``task.runtime``: its own, else the worker's."""
        own = (props.get("task.runtime") or "").strip().lower()
        return own or self.runtime

    def spark(self) -> SparkDriver:
        """The Spark driver of this worker, made (SparkSession, control endpoint) on first use."""
        with self._spark_lock:
            if self._spark is None:
                from core.spark.driver import SparkDriver, SparkSettings

                self._spark = SparkDriver(
                    self.worker_id,
                    SparkSettings.of(self.config),
                    self.offsets,
                    lambda ref: self.catalogue.environment_at(ref.location),
                )
            return self._spark

    def reserve_task_slots(self, name: str, tasks: int) -> None:
        """Before a connector's tasks start: on Spark, hold a slot for each of them.

        Raises:
            ConnectException: the Spark application has fewer free slots than ``tasks``.
        """
        connector = self.connectors.get(name)
        if connector is not None and self.runtime_of(connector.props) == "spark":
            self.spark().reserve(name, tasks)

    def _runner(
        self,
        spec: TaskSpec,
        props: Mapping[str, str],
        paused: bool,
        fencing: TaskFencing | None = None,
        restart_policy: RestartPolicy | None = None,
    ) -> _TaskRunner:
        if self.runtime_of(props) == "spark":
            if spec.exactly_once is not None:
                raise ConfigException(
                    "task.runtime",
                    "spark",
                    f"task {spec.name}: exactly-once source tasks run on the local runtime "
                    "only (its transactional producer and fencing live in the worker)",
                )
            from core.spark.runner import SparkTaskRunner

            return SparkTaskRunner(self, spec, paused, self.spark(), restart_policy)
        return _TaskRunner(self, spec, paused, fencing, restart_policy)

    def _stop_runners(
        self, runners: list[_TaskRunner], timeout_s: float | None, generation: int = 0
    ) -> None:
        """Stop these tasks together, as Kafka's Worker.stopAndAwaitTasks: signal every one,
        then await each against one shared deadline (the graceful timeout).

        What the deadline bounds is the task's stop (its final flush and commit, the plugin's
        ``stop()``, the consumer's close), as in Kafka, where that is all a task's thread does.
        A task here also has a plugin host process to end once it has stopped; that exit (an
        interpreter ending, which takes seconds on a loaded machine when many end at once) is
        waited for after the deadline, at most as long again and not as a failed stop: the
        host's close kills a host that does not exit (HostClient.close).
        """
        for runner in runners:
            runner.request_stop(generation)
        timeout = timeout_s if timeout_s is not None else self.graceful_timeout_s
        deadline = time.monotonic() + timeout
        for runner in runners:
            runner.done.wait(max(0.0, deadline - time.monotonic()))
            if not runner.done.is_set():
                # Kafka's Worker.awaitStopTask: "Graceful stop of task ... failed", then
                # cancel() (no status of it is written any more). A task loop leaves a slow
                # Kafka client close to its own thread before the timeout (SinkTaskLoop.stop):
                # what is still running here is plugin code, so its host is killed.
                log.error(
                    "Graceful stop of task %s-%d failed: it did not stop within the graceful "
                    "timeout (%g s); cancelled it and killing its plugin host",
                    runner.connector,
                    runner.task_id,
                    timeout,
                )
                runner.cancel()
                runner.kill_host(f"task did not stop within {timeout:g} s")
        # As long again at most (SHUTDOWN_GRACE_S at the most): a stop with its connector's
        # instance stays within what the herders wait for it (twice the graceful timeout).
        exits = max(deadline, time.monotonic()) + min(timeout, SHUTDOWN_GRACE_S)
        for runner in runners:
            runner.join(max(0.0, exits - time.monotonic()))
            if runner.is_alive():
                log.info(
                    "task %s-%d stopped; its plugin host is still exiting (killed if it does "
                    "not within %g s)",
                    runner.connector,
                    runner.task_id,
                    self.graceful_timeout_s,
                )
        # A stopping task's last flush may send to a topic it had not written yet (a source
        # waiting for a new topic's metadata): its topics count once it has stopped.
        for runner in runners:
            self._stopped_topics.setdefault(runner.connector, set()).update(runner.topics())
            runner.close_metrics()  # Kafka's awaitStopTask: task.removeMetrics()

    def pause(self, name: str, paused: bool) -> None:
        connector = self.connectors.get(name)
        if connector is None:
            return
        state = State.PAUSED if paused else State.RUNNING
        for runner in list(connector.tasks.values()):
            # Each task reports its own PAUSED / RUNNING once its loop has paused or resumed
            # (_TaskRunner._drive; a task on Spark through its heartbeat), not before.
            runner.request_pause(paused)
        if connector.host is not None:  # the instance's worker reports the connector's state
            self.status.set_connector(
                name, Status(state, self.worker_id, version=connector.version)
            )

    def stop(self) -> None:
        # Every task of every connector at once, as Kafka's Worker.stop (stopAndAwaitTasks):
        # one connector after another gave each a graceful timeout of its own.
        self._stop_tasks_of_connectors(list(self.connectors), None)
        # Then every connector instance at once, as Kafka's Worker.stopAndAwaitConnectors.
        self._stop_connectors(list(self.connectors))
        try:
            self.offsets.flush()
        except (OSError, ConnectException) as exc:
            # The tasks' final commits logged it already; the stop goes on (Kafka logs
            # "Failed to commit offsets" and stops as usual).
            log.error("could not flush the source offsets at shutdown: %s", exc)
        if self._spark is not None:
            self._spark.close()
            self._spark = None
        for name in list(self._connector_metrics):
            self._close_connector_metrics(name)
        self.worker_metrics.close()

    # -- automatic restarts (beyond Kafka Connect; opt-in per connector) ---------------------

    def task_failed(self, runner: _TaskRunner) -> None:
        """Apply the connector's ``task.restart.policy`` to a task that just failed.

        ``on-failure`` restarts it after a backoff that doubles from
        ``task.restart.backoff.initial.ms`` up to ``task.restart.backoff.max.ms``, at most
        ``task.restart.max.attempts`` times in a row; meanwhile its status is RESTARTING with
        the failure's trace and the attempt in it. A task that ran longer than the maximum
        backoff before failing starts counting again from one.
        """
        name, task_id = runner.connector, runner.task_id
        connector = self.connectors.get(name)
        if connector is None or connector.tasks.get(task_id) is not runner:
            return
        policy = runner.restart_policy
        if policy is None:
            return
        key = (name, task_id)
        if time.monotonic() - runner.started_at > policy.max_backoff_ms / 1000:
            self._restart_attempts.pop(key, None)
        attempt = self._restart_attempts.get(key, 0) + 1
        status = self.status.task(name, task_id)
        trace = status.trace if status is not None else None
        if attempt > policy.max_attempts:
            self.status.set_task(
                name,
                task_id,
                Status(
                    State.FAILED,
                    self.worker_id,
                    trace=f"gave up after {policy.max_attempts} automatic restarts\n{trace}",
                    version=status.version if status is not None else None,
                ),
            )
            return
        self._restart_attempts[key] = attempt
        delay_ms = policy.delay_ms(attempt)
        runner.metrics.state(State.RESTARTING)
        self.status.set_task(
            name,
            task_id,
            Status(
                State.RESTARTING,
                self.worker_id,
                trace=f"automatic restart {attempt} of {policy.max_attempts} in {delay_ms} ms "
                f"after:\n{trace}",
            ),
        )
        log.warning(
            "task %s-%d failed; automatic restart %d of %d in %d ms",
            name,
            task_id,
            attempt,
            policy.max_attempts,
            delay_ms,
        )

        def restart() -> None:
            current = self.connectors.get(name)
            if current is None or current.tasks.get(task_id) is not runner:
                return  # stopped, deleted or restarted by hand meanwhile
            del current.tasks[task_id]
            runner.close_metrics()
            self.start_task(
                name,
                task_id,
                runner.task_props,
                connector_props=runner.spec.connector_config,  # the same task again
                exactly_once=runner.spec.exactly_once is not None,
                fencing=runner.fencing,
            )

        timer = threading.Timer(delay_ms / 1000, restart)
        timer.daemon = True
        timer.start()

    # -- used by the herder for REST operations (restart, task configs, active topics) ----------

    def task_class(self, name: str) -> str:
        """The dotted name of the connector's task class (Kafka's ``task.class`` task key)."""
        connector = self.connectors[name]
        target = connector.instance().task_class(connector.handle)
        return target.replace(":", ".")

    def forget_topics(self, name: str) -> None:
        """Forget ``name``'s active topics (a reset, a delete): what :meth:`task_topics` kept of
        its stopped tasks, and its running tasks' own, which they record again with their
        next record, as Kafka's tasks do."""
        self._stopped_topics.pop(name, None)
        connector = self.connectors.get(name)
        for runner in list(connector.tasks.values()) if connector is not None else ():
            runner.forget_topics()

    def stop_task(self, name: str, task_id: int, timeout_s: float | None = None) -> None:
        """Stop one task of ``name`` (gracefully, then by killing its host)."""
        self.stop_tasks_of(name, [task_id], timeout_s)

    def stop_tasks_of(
        self,
        name: str,
        task_ids: Iterable[int],
        timeout_s: float | None = None,
        generation: int = 0,
    ) -> None:
        """Stop these tasks of ``name`` together, as Kafka's stopAndAwaitTasks: signal all,
        then wait, the graceful timeout shared (one after another, two tasks that overran
        took twice the timeout, longer than a rebalance waits for revoked work).
        ``generation``: as :meth:`_TaskRunner.request_stop`'s."""
        connector = self.connectors.get(name)
        runners = [
            runner
            for task_id in task_ids
            if connector is not None and (runner := connector.tasks.pop(task_id, None))
        ]
        if runners:
            self._stop_runners(runners, timeout_s, generation)
        self._forget_if_idle(name)
        self.worker_metrics.sync_connectors()

    def task_topics(self, name: str) -> set[str]:
        """Topics the connector's tasks produced to or consumed from (KIP-558): its current
        ones', and those of its tasks stopped here, since :meth:`forget_topics`."""
        connector = self.connectors.get(name)
        topics: set[str] = set(self._stopped_topics.get(name, ()))
        for runner in list(connector.tasks.values()) if connector is not None else ():
            topics |= runner.topics()
        return topics
