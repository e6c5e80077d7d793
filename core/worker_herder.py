"""The herder logic every mode shares: a worker running connectors from a config store.

:class:`WorkerHerder` turns REST calls into config store writes and per-connector operations
(start, stop, reconfigure, restart, pause, resume, KIP-875 offsets), each run in order on that
connector's own operation thread (:mod:`core.serial`) and waited for up to Kafka's REST
request timeout. It reads configs, task configs and target states from an immutable
:class:`~core.stores.config.ClusterConfigState` snapshot; it never holds a lock across plugin
code. Subclasses decide where the stores live and what this worker runs:
:class:`core.standalone.StandaloneHerder` (memory configs, file offsets, everything local) and
the distributed herder (Kafka-backed stores, connectors assigned by the group's leader).

Process concerns (signals, the REST server, the dev broker) are the bootstrap's
(:mod:`core.bootstrap`), never a herder's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from plugin_api.connector import freeze_partition

from core.config_providers import Resolved
from core.herder import (
    AbstractHerder,
    AlreadyExistsError,
    BadRequestError,
    ConflictError,
    ForbiddenError,
    HerderError,
    NotFoundError,
    RequestTimeoutError,
)
from core.offset_topics import ConnectorOffsetStores
from core.plugins import component_locations
from core.serial import KeyedSerialExecutor
from core.sink_offsets import (
    GroupNotEmptyError,
    SinkOffsets,
    SinkOffsetsError,
    parse_sink_offsets,
    sink_group_id,
)
from core.source_offsets import check_offset_format
from core.status import State, Status, failure_trace
from core.stores.config import ConfigStore, TargetState
from core.stores.task_offsets import TaskOffsetStore
from core.worker import (
    CONNECTOR_START_THREW,
    TaskConfigsReturnError,
    TooManyTasksException,
    Worker,
)
from core.worker_config import WorkerConfig
from isolation import PluginHostCrashed, PluginHostError, RemotePluginError
from plugin_api import ConfigException, ConnectException, TopicPartition

__all__ = [
    "NOT_FOUND",
    "REST_REQUEST_TIMEOUT_S",
    "UNKNOWN_TO_RESTART",
    "UNKNOWN_TO_TARGET",
    "WorkerHerder",
    "reverse_transform",
]

log = logging.getLogger("copycat.herder")

# The error kinds of a plugin's ConnectException and its subclasses (the host's classification,
# isolation/_hostside/copycat_protocol.py).
_CONNECT_EXCEPTION_KINDS = frozenset({"retriable", "data", "config", "connect"})

T = TypeVar("T")

# How long a REST call waits for its operation on a connector (Kafka's REST request timeout).
# The operation goes on after that: the call answers 500 "Request timed out", as Kafka does.
REST_REQUEST_TIMEOUT_S = 90.0

# A connector the worker does not know, worded as Kafka's herders word it per request: most
# say NOT_FOUND; a KIP-745 restart (and, distributed, any restart) says UNKNOWN_TO_RESTART;
# pause and resume (and, distributed, stop) say UNKNOWN_TO_TARGET, without the colon.
NOT_FOUND = "Connector {name} not found"
UNKNOWN_TO_RESTART = "Unknown connector: {name}"
UNKNOWN_TO_TARGET = "Unknown connector {name}"
# Extra time a delete or stop gives a connector operation already running (e.g. a start that
# hangs) beyond the graceful timeout, before that operation's plugin host is killed.
RECLAIM_MARGIN_S = 1.0
# A connector's plugin host still being spawned when a stop signal reaches the worker's process
# group (a terminal's Ctrl-C, a service manager's SIGTERM) may get it too, before it has a
# session of its own (isolation/launcher.py); the worker's handler runs on the main thread, so
# the start's failure may be seen first: it waits this long for the worker's stop.
STOP_SIGNAL_WAIT_S = 2.0
_STOP_SIGNAL_NAMES = ("SIGTERM", "SIGINT", "SIGHUP")  # core/bootstrap.py's STOP_SIGNALS
# A connector whose task_configs() raised is asked again after this, doubling up to the
# maximum, until it answers (Kafka's DistributedHerder RECONFIGURE_CONNECTOR_TASKS_BACKOFF_*
# _INITIAL_MS and _MAX_MS): a cause that goes away (a database back up) heals the connector
# without a restart, and one that stays costs one call a minute, not a spinning thread.
TASK_CONFIGS_RETRY_INITIAL_S = 0.25
TASK_CONFIGS_RETRY_MAX_S = 60.0
# Failures of task_configs() that fail the connector instead: too many task configs (Kafka's
# TooManyTasksException, not retried either), a malformed answer (a bug that a retry would
# only repeat) and a host that died or was killed for hanging (the instance is gone).
_FAILS_CONNECTOR = (TooManyTasksException, TaskConfigsReturnError, PluginHostError)
_NOT_STOPPED = (
    "Connectors must be in the STOPPED state before their offsets can be modified. "
    "This can be done for the specified connector by issuing a 'PUT' request to the "
    "'/connectors/{name}/stop' endpoint"
)
# Kafka's message (its answer is a 500); ours goes on to name the partitions at fault.
_SINK_ALTER_FAILED = "Failed to alter consumer group offsets for connector {name}"
# Kafka's answers (500s) when the group still has a member, by operation ("alter", "reset").
_SINK_GROUP_NOT_EMPTY = (
    "Failed to {verb} consumer group offsets for connector {name} either because its tasks "
    "haven't stopped completely yet or the connector was resumed before the request to {verb} "
    "its offsets could be successfully completed. If the connector is in a stopped state, this "
    "operation can be safely retried. If it doesn't eventually succeed, the Connect cluster may "
    "need to be restarted to get rid of the zombie sink tasks."
)
_ALTERED = "The offsets for this connector have been {verb} successfully"
_ALTERED_EXTERNAL = (
    "The Connect framework-managed offsets for this connector have been {verb} "
    "successfully. However, if this connector manages offsets externally, they "
    "will need to be manually {verb} in the system that the connector uses."
)


ADMIN_OVERRIDE_PREFIX = "admin.override."


@dataclass
class _Runtime:
    """What this worker knows about one connector beyond its stored config."""

    kind: str
    resolved: Resolved | None = None
    deleted: bool = False
    # The pending retry of the connector's task_configs() after it raised (None: none).
    task_retry: _TaskRetry | None = None


@dataclass
class _TaskRetry:
    """A scheduled retry of a connector's task_configs(): for the connector config it failed
    on, its ``attempt``-th in a row (which sets its backoff)."""

    config: dict[str, str]
    attempt: int
    timer: threading.Timer | None = None

    def cancel(self) -> None:
        """Drop the scheduled retry: its timer thread ends now, not at its deadline."""
        if self.timer is not None:
            self.timer.cancel()


def _end_task_retry(deployed: _Runtime) -> None:
    """End ``deployed``'s pending retry of task_configs(), if any; the next failure starts a
    new chain from the shortest backoff (after a success, a restart or a delete)."""
    retry, deployed.task_retry = deployed.task_retry, None
    if retry is not None:
        retry.cancel()


def reverse_transform(
    task_config: Mapping[str, str], raw: Mapping[str, str], resolved: Resolved
) -> dict[str, str]:
    """Put placeholders back into a task config made from resolved values (as Kafka does)."""
    out = dict(task_config)
    for key, raw_value in raw.items():
        if "${" in raw_value and key in out and out[key] == resolved.config.get(key):
            out[key] = raw_value
    return out


class WorkerHerder(AbstractHerder):
    """Connectors from a :class:`ConfigStore`, run by this process's :class:`Worker`."""

    config: WorkerConfig
    configs: ConfigStore
    worker: Worker | None
    client_props: dict[str, Any]

    def _init_herding(self) -> None:
        # Guards the bookkeeping of ``_runtime`` only; never held across a plugin call.
        self._lock = threading.RLock()
        # Operations on one connector run in order on that connector's thread (core/serial.py).
        self._ops = KeyedSerialExecutor("connector")
        self._runtime: dict[str, _Runtime] = {}
        self.worker = None
        self.client_props = {}
        # Source connectors' own offsets topics (KIP-618), set when the worker starts.
        self.offset_stores: ConnectorOffsetStores | None = None

    # -- reads of the store ------------------------------------------------------------------

    def _config(self, name: str) -> dict[str, str]:
        return dict(self.configs.snapshot().config(name) or {})

    def _target(self, name: str) -> TargetState:
        return self.configs.snapshot().target_state(name) or TargetState.STARTED

    def _task_configs(self, name: str) -> list[dict[str, str]]:
        return [dict(c) for c in self.configs.snapshot().tasks(name)]

    def plugins_in_use(self) -> dict[str, list[str]]:
        """Plugin location -> names of the running connectors that use it (their connector
        plugin, converters, transforms and predicates); for refusing to remove a used plugin."""
        worker = self.worker
        if worker is None:
            return {}
        used: dict[str, set[str]] = {}
        worker_props = worker.config.originals_strings()
        for name, connector in list(worker.connectors.items()):
            locations = {connector.plugin.location}
            locations |= component_locations(self.catalogue, connector.props, worker_props)
            # Each task runs the config it was started with, maybe older than the entry's.
            for runner in list(connector.tasks.values()):
                locations.add(runner.spec.plugin.location)
                locations |= {ref.location for _, ref in runner.spec.pipeline.attachments()}
            for location in locations:
                used.setdefault(location, set()).add(name)
        return {location: sorted(names) for location, names in used.items()}

    # -- internals ---------------------------------------------------------------------------

    def _worker(self) -> Worker:
        if self.worker is None:
            raise ConflictError(
                "Cannot complete request because the worker is still starting up or shutting down"
            )
        return self.worker

    def _get(self, name: str, missing: str = NOT_FOUND) -> _Runtime:
        """Connector ``name``'s runtime; raises NotFoundError(``missing``, formatted with the
        name) if it does not exist."""
        runtime = self._runtime.get(name)
        if runtime is None or not self.configs.snapshot().contains(name):
            raise NotFoundError(missing.format(name=name))
        return runtime

    def _known(self, name: str, missing: str = NOT_FOUND) -> None:
        """Raises NotFoundError(``missing``) unless connector ``name`` exists."""
        self._get(name, missing)

    def _deployed_for_status(self, name: str, missing: str) -> _Runtime:
        """What this worker knows of connector ``name`` for a status read; raises
        NotFoundError(``missing``) if it knows none."""
        deployed = self._runtime.get(name)
        if deployed is None:
            raise NotFoundError(missing)
        return deployed

    def _kind(self, config: Mapping[str, str]) -> str:
        try:
            return self.catalogue.resolve(
                "connector",
                config.get("connector.class", ""),
                config.get("connector.plugin.version"),
            ).kind
        except ConfigException:
            return "unknown"

    def _plugin_version(self, config: Mapping[str, str]) -> str | None:
        try:
            return self.catalogue.resolve(
                "connector",
                config.get("connector.class", ""),
                config.get("connector.plugin.version"),
            ).version
        except ConfigException:
            return None

    def _add(self, name: str, config: Mapping[str, str], target: TargetState) -> _Runtime:
        """Store a new connector (caller holds the lock); its start is queued separately."""
        runtime = _Runtime(self._kind(config))
        self._runtime[name] = runtime
        self.configs.put_connector_config(name, config, target)
        worker = self._worker()
        if worker.status.connector(name) is None:
            worker.status.set_connector(name, Status(State.UNASSIGNED, worker.worker_id))
        return runtime

    def _run(self, name: str, what: str, fn: Callable[[], T], *, wait: bool = True) -> T | None:
        """Run ``fn`` on ``name``'s operation thread, after what is already queued there.

        Waits up to REST_REQUEST_TIMEOUT_S for it (unless ``wait`` is false); the operation
        goes on if the wait times out. Called from that thread itself, runs ``fn`` inline.
        """
        if self._ops.on_own_thread(name):
            return fn()
        future = self._ops.submit(name, what, fn)
        if wait:
            return self._wait(name, what, future)
        future.add_done_callback(partial(self._log_failure, name, what))
        return None

    @staticmethod
    def _log_failure(name: str, what: str, future: Future[Any]) -> None:
        """An operation nobody waits for: what it raised (it reports its own failures in
        the connector's status; this is for what it did not expect) is logged."""
        exc = future.exception()
        if exc is not None:
            log.error("%s of connector %s failed: %s", what, name, exc, exc_info=exc)

    @staticmethod
    def _wait(name: str, what: str, future: Future[T]) -> T:
        """The result of operation ``what`` on ``name``, waited for as :meth:`_run` does."""
        try:
            return future.result(REST_REQUEST_TIMEOUT_S)
        except FutureTimeout:
            raise RequestTimeoutError(
                f"Request timed out: {what} of connector {name} is still in progress"
            ) from None

    def _reclaim_if_stuck(self, name: str, why: str = "connector removed") -> None:
        """A delete or stop is waiting behind an operation that may hang in plugin code:
        after the graceful timeout, kill the host of a connector start still in progress."""
        worker = self.worker
        waited_for = self._ops.running(name)
        if worker is None or waited_for is None:
            return
        reason = f"abandoned after {worker.graceful_timeout_s:g} s: {why}"
        # Only the operation found running now: by the deadline the connector may have been
        # deleted and created again, and that new connector's start is no business of ours.
        timer = threading.Timer(
            worker.graceful_timeout_s + RECLAIM_MARGIN_S,
            self._ops.if_still_running,
            (name, waited_for, partial(worker.reclaim, name, reason)),
        )
        timer.daemon = True
        timer.start()

    def _fail_connector(
        self,
        name: str,
        exc: BaseException,
        scrub: Resolved | None,
        version: str | None = None,
        *,
        starting: bool = False,
    ) -> None:
        """Connector ``name`` is FAILED; its status names the version of its plugin (as
        Kafka's, KIP-891) when the worker holds it, or ``version``, the one it held before
        its instance was stopped. ``starting``: its instance failed to start, logged as
        Kafka logs it, with the trace once: ``WorkerConnector{id=<name>} Error while starting
        connector`` when its start() raised, else ``Failed to start connector <name>``."""
        trace = scrub.scrub(failure_trace(exc)) if scrub else failure_trace(exc)
        if not starting:
            message = scrub.scrub(str(exc)) if scrub else str(exc)
            log.error("connector %s failed: %s", name, message)
        elif getattr(exc, CONNECTOR_START_THREW, False):
            log.error("WorkerConnector{id=%s} Error while starting connector\n%s", name, trace)
        else:
            log.error("Failed to start connector %s\n%s", name, trace)
        worker = self._worker()
        worker.status.set_connector(
            name,
            Status(
                State.FAILED,
                worker.worker_id,
                trace=trace,
                version=version or worker.connector_version(name),
            ),
        )

    def _report_stopped(self, name: str, config: Mapping[str, str]) -> None:
        """The connector's status is STOPPED. Kafka reports the plugin's version for a STOPPED
        connector too (from its class, with nothing running); ours comes from the installed
        plugin's metadata."""
        worker = self._worker()
        worker.status.set_connector(
            name, Status(State.STOPPED, worker.worker_id, version=self._plugin_version(config))
        )
        worker.hold_stopped(name, config)  # connector-metrics say stopped; connector-count

    def _resolve_and_start(
        self, name: str, runtime: _Runtime, config: Mapping[str, str]
    ) -> Resolved | None:
        """Resolve the connector's config (config providers) and start its instance here (its
        operation thread); None when either failed, which its status then says (unless it was
        deleted meanwhile). A failed start leaves no instance behind."""
        try:
            resolved = self.resolver.resolve(config)
        except ConfigException as exc:
            self._fail_connector(name, exc, None)
            return None
        runtime.resolved = resolved
        try:
            self._worker().start_connector(name, resolved.config)
        except Exception as exc:  # noqa: BLE001 - shown as FAILED in the status, like Kafka
            if runtime.deleted:
                return None
            if self._stopped_by_signal(exc):
                # Not the connector's failure: the worker is stopping, and it stops anyway.
                log.info("connector %s not started: the worker is stopping (%s)", name, exc)
                return None
            self._fail_connector(name, exc, resolved, starting=True)
            return None
        return resolved

    def _stopped_by_signal(self, exc: BaseException) -> bool:
        """Whether a stop signal to the worker is what ended a connector's start: the worker
        is stopping, or its plugin host was killed by a stop signal and the worker's stop
        follows within :data:`STOP_SIGNAL_WAIT_S` (see there)."""
        stop = self.stop_requested
        if stop is None:
            return False
        if stop.is_set():
            return True
        reason = exc.exit_reason if isinstance(exc, PluginHostCrashed) else ""
        if any(f"killed by {signal} " in reason for signal in _STOP_SIGNAL_NAMES):
            return stop.wait(STOP_SIGNAL_WAIT_S)
        return False

    def _start(self, name: str) -> None:
        """Start the connector and its tasks per its target state (its operation thread)."""
        deployed = self._runtime.get(name)
        if deployed is None or deployed.deleted:
            return
        worker = self._worker()
        if worker.instance_running(name):
            # Started already by an operation queued before this one: a stop followed by a
            # resume queues a start, and the stop's own record of STOPPED (_stop_and_record)
            # starts the connector too once the target is STARTED again. A second start here
            # left the first instance's hosts running, owned by nothing.
            self._apply_target(name)
            return
        config = self._config(name)
        if self._target(name) is TargetState.STOPPED:
            self.configs.put_task_configs(name, [])
            worker.status.remove_connector(name)
            self._report_stopped(name, config)
            return
        resolved = self._resolve_and_start(name, deployed, config)
        if resolved is None:
            return
        if self._target(name) is not TargetState.STARTED:
            # PAUSED: the instance starts paused and its tasks are neither generated nor
            # touched (those it has run on, paused, with the configs they were given), as
            # Kafka's updateConnectorTasks skips a connector whose target is not STARTED;
            # a connector created PAUSED, or paused from STOPPED, has no task until resumed.
            worker.pause(name, True)
            self._apply_target(name)
            return
        try:
            task_class = worker.task_class(name)
            task_configs = worker.task_configs(name)
        except Exception as exc:  # noqa: BLE001 - retried, or FAILED in the status, like Kafka
            if self._retry_task_configs_later(name, exc, resolved):
                self._apply_target(name)  # a reconfigured one's tasks run on meanwhile
                return
            running = worker.connectors.get(name)
            version = worker.connector_version(name)
            if running is not None and running.tasks:  # a reconfigured one's tasks run on
                worker.stop_connector_instance(name)
            elif running is not None:
                worker.stop_connector(name)
            if not deployed.deleted:
                self._fail_connector(name, exc, resolved, version)
            return
        _end_task_retry(deployed)
        if self._tasks_current(name, task_class, task_configs, resolved):
            log.info("connector %s: task configs unchanged; tasks keep running", name)
            self._apply_target(name)
            return
        self._start_tasks(name, deployed, resolved, task_class, task_configs)

    def _tasks_current(
        self,
        name: str,
        task_class: str,
        task_configs: list[dict[str, str]],
        resolved: Resolved,
    ) -> bool:
        """Whether the connector's tasks already run from these generated configs and its
        current config (Kafka's taskConfigsChanged, negated), so nothing is written or
        restarted."""
        raw = self._config(name)
        stored = [
            reverse_transform({**tc, "task.class": task_class}, raw, resolved)
            for tc in task_configs
        ]
        connector = self._worker().connectors.get(name)
        running = set(connector.tasks) if connector is not None else set()
        return self._task_configs_current(name, stored) and running == set(range(len(stored)))

    def _task_configs_current(self, name: str, stored: list[dict[str, str]]) -> bool:
        """Whether ``stored`` (generated task configs as they would be stored) needs no
        writing: the same as the stored ones, which were stored under the connector's
        current config (Kafka's taskConfigsChanged, negated). A new config that leaves the
        task configs as they were (a converter, a transform) still restarts the tasks, which
        take those from the connector config (KAFKA-9228)."""
        snapshot = self.configs.snapshot()
        current = snapshot.config(name)
        return (
            stored == [dict(c) for c in snapshot.tasks(name)]
            and current is not None
            and snapshot.applied_config(name) == current
        )

    def _start_tasks(
        self,
        name: str,
        deployed: _Runtime,
        resolved: Resolved,
        task_class: str,
        task_configs: list[dict[str, str]],
    ) -> None:
        """Record the connector's task configs (placeholders put back) and start its tasks,
        in place of any it runs (a reconfigured connector's)."""
        worker = self._worker()
        worker.stop_tasks(name)
        task_configs = [{**tc, "task.class": task_class} for tc in task_configs]
        try:
            worker.reserve_task_slots(name, len(task_configs))  # task.runtime=spark only
        except ConnectException as exc:
            # A connector whose tasks cannot run is FAILED as one whose start failed: its
            # instance stops (left running, a pause and resume showed it RUNNING with no
            # task) and its new task configs are not stored, so a restart once slots are
            # free asks the instance for them again and starts them (_reconfigure_tasks).
            version = worker.connector_version(name)
            worker.stop_connector(name)
            if not deployed.deleted:
                self._fail_connector(name, exc, resolved, version)
            return
        config = self._config(name)
        self.configs.put_task_configs(
            name, [reverse_transform(tc, config, resolved) for tc in task_configs]
        )
        for task_id in worker.status.tasks_of(name):
            if task_id >= len(task_configs):
                worker.status.remove_task(name, task_id)
        if self._target(name) is TargetState.PAUSED:
            worker.pause(name, True)
        self._new_task_generation(name, len(task_configs))
        for task_id, task_config in enumerate(task_configs):
            try:
                worker.start_task(
                    name,
                    task_id,
                    task_config,
                    connector_props=resolved.config,
                    task_count=len(task_configs),
                    **self._task_options(name, task_id),
                )
            except Exception as exc:  # noqa: BLE001 - shown as FAILED in the status, like Kafka
                # Raised out of here, a task whose spec could not be made turned the request
                # that stored the config into an error, leaving the connector RUNNING with no
                # task status at all.
                self._task_start_failed(name, task_id, exc, resolved)
        self._apply_target(name)

    def _task_start_failed(
        self, name: str, task: int, exc: Exception, resolved: Resolved | None
    ) -> None:
        """Task ``task`` of ``name`` could not even be started: FAILED, as Kafka's Worker
        reports a task whose construction threw; resolved secrets never reach the log or
        the status."""
        worker = self._worker()
        message, trace = str(exc), failure_trace(exc)
        if resolved is not None:
            message, trace = resolved.scrub(message), resolved.scrub(trace)
        log.error("task %s-%d could not start: %s", name, task, message)
        worker.status.set_task(name, task, Status(State.FAILED, worker.worker_id, trace=trace))

    # -- exactly-once source tasks (KIP-618): what the mode decides --------------------------

    def _new_task_generation(self, name: str, tasks: int) -> None:
        """Hook: new task configs of ``name`` were written (its connector operation thread)."""

    def _task_options(self, name: str, task: int) -> dict[str, Any]:
        """Hook: how ``Worker.start_task`` runs the task (``exactly_once``, ``fencing``)."""
        return {}

    def _offsets_of(self, name: str) -> TaskOffsetStore:
        """The offsets of source connector ``name`` as its tasks see them (its own offsets
        topic merged with the worker's, if it has one); the caller closes the store."""
        stores = self.offset_stores
        if stores is None:
            return TaskOffsetStore(self._worker().offsets)
        return stores.store_for(name, self.resolver.resolve(self._config(name)).config)

    def _before_source_offsets_change(self, name: str) -> None:
        """Hook: source connector ``name``'s offsets are about to be altered or reset (its
        operation thread; the request is valid, the connector stopped, its plugin not yet
        asked). Raising here changes nothing."""

    def _write_source_offsets(
        self, name: str, store: TaskOffsetStore, entries: list[tuple[dict[str, Any], Any]]
    ) -> None:
        """Hook: write the altered or reset offsets (None: a tombstone) of source connector
        ``name`` to its store (its operation thread)."""
        store.put(name, entries)
        store.flush()

    def _reconfiguration_requested(self, name: str) -> None:
        """ConnectorContext.request_task_reconfiguration(), from the connector's host."""
        self._ops.post(name, "task reconfiguration", partial(self._reconfigure_tasks, name))

    def _reconfigure_tasks(self, name: str) -> None:
        """Ask the connector for its task configs again; restart its tasks only if they
        changed (Kafka's reconfiguration: a connector that found new tables or files)."""
        deployed, worker = self._runtime.get(name), self.worker
        if (
            deployed is None
            or worker is None
            or deployed.deleted
            or deployed.resolved is None
            or self._target(name) is not TargetState.STARTED
            or not worker.instance_running(name)
        ):
            # Kafka's updateConnectorTasks: only a running connector whose target is STARTED
            # is asked; a PAUSED one's tasks are reconfigured when it is resumed.
            return
        resolved = deployed.resolved
        generated = self._generate_task_configs(name, resolved)
        if generated is None:
            return
        task_class, task_configs, fresh = generated
        current = self._task_configs(name)
        if self._task_configs_current(name, fresh):
            log.info("connector %s: task configs unchanged; tasks keep running", name)
            return
        log.info(
            "connector %s: task configs changed (%d -> %d tasks); restarting its tasks",
            name,
            len(current),
            len(fresh),
        )
        worker.stop_tasks(name)
        self._start_tasks(name, deployed, resolved, task_class, task_configs)

    def _generate_task_configs(
        self, name: str, resolved: Resolved
    ) -> tuple[str, list[dict[str, str]], list[dict[str, str]]] | None:
        """Ask the running connector for its task class and task configs (on its operation
        thread): ``(task class, the configs as generated, as they are stored)``, stored with
        ``task.class`` and the placeholders put back. None if the connector failed to answer:
        it is asked again later, or FAILED in the status (:meth:`_retry_task_configs_later`)."""
        worker = self._worker()
        try:
            task_class = worker.task_class(name)
            task_configs = worker.task_configs(name)
        except Exception as exc:  # noqa: BLE001 - retried, or FAILED in the status, like Kafka
            if not self._retry_task_configs_later(name, exc, resolved):
                self._fail_connector(name, exc, resolved)
            return None
        deployed = self._runtime.get(name)
        if deployed is not None:
            _end_task_retry(deployed)
        raw = self._config(name)
        stored = [
            reverse_transform({**tc, "task.class": task_class}, raw, resolved)
            for tc in task_configs
        ]
        return task_class, task_configs, stored

    def _retry_task_configs_later(self, name: str, exc: Exception, resolved: Resolved) -> bool:
        """The connector's task_configs() raised ``exc`` (its operation thread): ask it again
        after a backoff, as Kafka's DistributedHerder does, and say so (True); its status and
        its tasks stay as they are meanwhile. False for what fails the connector instead
        (``_FAILS_CONNECTOR``: Kafka fails it for too many tasks only).

        The retry runs as an operation of the connector, behind any queued before it, and
        only if nothing changed meanwhile: a delete, a new config, a stop or pause (no running
        instance, or a target other than STARTED) or a newer failure's retry ends it.
        """
        if isinstance(exc, _FAILS_CONNECTOR):
            return False
        deployed = self._runtime.get(name)
        if deployed is None or deployed.deleted:
            return True  # nothing to retry, nor to fail
        config = self._config(name)
        previous = deployed.task_retry
        attempt = previous.attempt + 1 if previous and previous.config == config else 0
        if previous is not None:
            previous.cancel()  # superseded: its timer would only wake to find so
        retry = deployed.task_retry = _TaskRetry(config, attempt)
        delay_s = min(TASK_CONFIGS_RETRY_INITIAL_S * 2**attempt, TASK_CONFIGS_RETRY_MAX_S)
        log.error(
            "Failed to reconfigure connector's tasks (%s), retrying after backoff. Attempt %d "
            "in %g s: %s",
            name,
            attempt + 1,
            delay_s,
            resolved.scrub(failure_trace(exc)),
        )
        timer = threading.Timer(
            delay_s,
            self._ops.submit,
            (name, "task configs retry", partial(self._retry_task_configs, name, deployed, retry)),
        )
        timer.daemon = True
        retry.timer = timer
        timer.start()
        return True

    def _retry_task_configs(self, name: str, deployed: _Runtime, retry: _TaskRetry) -> None:
        """A retry scheduled by :meth:`_retry_task_configs_later` (its operation thread)."""
        if (
            self.worker is None
            or self._runtime.get(name) is not deployed
            or deployed.deleted
            or deployed.task_retry is not retry
            or self._config(name) != retry.config
        ):
            return  # shut down, deleted (maybe created again), reconfigured, or superseded
        self._regenerate_task_configs(name)

    def _regenerate_task_configs(self, name: str) -> None:
        """Hook: ask the running connector for its task configs again and apply them if they
        changed (only while its target state is STARTED)."""
        self._reconfigure_tasks(name)

    def _stop(self, name: str) -> None:
        worker = self._worker()
        worker.stop_connector(name)

    def _apply_target(self, name: str) -> None:
        """Bring running tasks in line with the target state (no plugin call: flags only)."""
        with self._lock:
            # Read and applied under the lock the target is written under: a pause reading
            # PAUSED could otherwise apply it after a resume that came later had applied
            # STARTED, leaving the tasks paused for good under a STARTED target.
            worker, target = self.worker, self._target(name)
            if name not in self._runtime or worker is None or target is TargetState.STOPPED:
                return
            worker.pause(name, target is TargetState.PAUSED)
        connector = worker.connectors.get(name)
        for task_id, runner in list(connector.tasks.items()) if connector else ():
            if runner.failed:  # a failed task stays FAILED through pause/resume
                worker.status.update_task(name, task_id, state=State.FAILED)

    def _restart_task(self, name: str, task: int) -> None:
        deployed = self._runtime.get(name)
        if deployed is None or deployed.deleted:
            return
        worker = self._worker()
        worker.stop_task(name, task)
        self._start_stored_task(name, task)

    def _start_stored_task(self, name: str, task: int) -> None:
        """Start task ``task`` of ``name`` from its stored config (its operation thread), as
        Kafka's standalone herder starts a restarted task from ``configState.taskConfig``:
        whether or not the connector's instance runs (its start may have failed). A task
        whose start cannot even be made (a plugin gone, a config provider failing) is
        FAILED; one without a stored config (deleted, stopped, shrunk) is left alone."""
        worker = self._worker()
        snapshot = self.configs.snapshot()
        config, tasks = snapshot.config(name), snapshot.tasks(name)
        if config is None or not 0 <= task < len(tasks):
            return
        resolved: Resolved | None = None
        try:
            resolved = self.resolver.resolve(config)
            worker.start_task(
                name,
                task,
                self.resolver.resolve(tasks[task]).config,
                connector_props=resolved.config,
                paused=snapshot.target_state(name) is TargetState.PAUSED,
                task_count=len(tasks),
                **self._task_options(name, task),
            )
        except Exception as exc:  # noqa: BLE001 - shown as FAILED in the status, like Kafka
            self._task_start_failed(name, task, exc, resolved)

    # -- Herder: connectors ---------------------------------------------------------------

    def connectors(self) -> list[str]:
        snapshot = self.configs.snapshot()
        return [n for n in snapshot.connectors() if n in self._runtime]

    def connector_info(self, name: str) -> dict[str, Any]:
        return self._info(name, self._get(name))

    def _info(
        self, name: str, deployed: _Runtime, config: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """ConnectorInfo of ``name``: its stored config, or ``config`` (what a create or update
        applied: a delete queued right behind it may have removed it from the store since)."""
        snapshot = self.configs.snapshot()
        return {
            "name": name,
            "config": dict(config if config is not None else snapshot.config(name) or {}),
            "tasks": [{"connector": name, "task": i} for i in range(len(snapshot.tasks(name)))],
            "type": deployed.kind,
        }

    def connector_config(self, name: str) -> dict[str, str]:
        self._known(name)
        return self._config(name)

    @staticmethod
    def _named(name: str, config: Mapping[str, str]) -> dict[str, str]:
        if "/" in name:
            raise BadRequestError("Connector name should not contain '/'")
        if config.get("name") is not None and config["name"] != name:
            raise BadRequestError(
                f"Connector name configuration ({config['name']}) doesn't "
                f"match connector name in the URL ({name})"
            )
        return {**config, "name": name}

    def create_connector(
        self,
        name: str,
        config: Mapping[str, str],
        initial_state: TargetState | None = None,
    ) -> dict[str, Any]:
        config = self._named(name, config)
        initial_state = initial_state or TargetState.STARTED
        if self._live(name) is not None:
            raise AlreadyExistsError(f"Connector {name} already exists")
        self.ensure_valid(config)  # plugin calls: outside any lock
        with self._lock:
            self._worker()
            if self._live(name) is not None:
                raise AlreadyExistsError(f"Connector {name} already exists")
            deployed = self._add(name, config, initial_state)
            started = self._ops.submit(name, "start", partial(self._start, name))
        self._wait(name, "start", started)
        return self._info(name, deployed, config)

    def _live(self, name: str) -> _Runtime | None:
        """Connector ``name`` unless it is absent or being deleted (caller holds the lock, or
        checks again under it): a create or config PUT after a delete creates it anew."""
        deployed = self._runtime.get(name)
        return None if deployed is None or deployed.deleted else deployed

    def put_connector_config(
        self, name: str, config: Mapping[str, str]
    ) -> tuple[bool, dict[str, Any]]:
        return self._put_config(name, config, must_exist=False)

    def _put_config(
        self, name: str, config: Mapping[str, str], *, must_exist: bool
    ) -> tuple[bool, dict[str, Any]]:
        """Create or update connector ``name`` (update only, with ``must_exist``: a PATCH).

        The choice and the queueing of its operation are one step under the lock, as is a
        delete's: the connector's operations then run in the order the calls were decided,
        as Kafka's standalone herder serialises its calls. (Decided apart, a PUT racing a
        DELETE updated the connector being deleted: 200 with an empty config, and it was
        gone.)
        """
        config = self._named(name, config)
        self.ensure_valid(config)
        with self._lock:
            self._worker()
            deployed = self._live(name)
            created = deployed is None
            if deployed is None:
                if must_exist:
                    raise NotFoundError(f"Connector {name} not found")
                deployed = self._add(name, config, TargetState.STARTED)
                what, fn = "start", partial(self._start, name)
            else:
                what, fn = "reconfigure", partial(self._reconfigure, name, deployed, config)
            queued = self._ops.submit(name, what, fn)
        self._wait(name, what, queued)
        return created, self._info(name, deployed, config)

    def _reconfigure(self, name: str, deployed: _Runtime, config: Mapping[str, str]) -> None:
        """A new config: restart the connector's instance; its tasks run on with the configs
        they were given until the new instance gives theirs (_start_tasks), as Kafka's
        standalone herder does. So a new instance that fails to start leaves them running,
        and their configs and statuses true."""
        if deployed.deleted:
            return
        self._worker().stop_connector_instance(name)
        deployed.kind = self._kind(config)
        self.configs.put_connector_config(name, config, None)
        self._start(name)

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> dict[str, Any]:
        self._known(name)
        current = self._config(name)
        merged = {k: v for k, v in {**current, **patch}.items() if v is not None}
        if "name" not in merged:
            # Kafka validates the merged config as it is (only a PUT's resource puts the URL's
            # name into the body): a patch removing the name is refused, "Missing required
            # configuration "name" ...", where _put_config would put the name back.
            self.ensure_valid(merged)
        _created, info = self._put_config(name, merged, must_exist=True)
        return info

    def delete_connector(self, name: str) -> None:
        with self._lock:
            deployed = self._get(name)
            self._worker()
            if deployed.deleted:  # a concurrent delete got there first
                raise NotFoundError(f"Connector {name} not found")
            deployed.deleted = True
            _end_task_retry(deployed)
            self._reclaim_if_stuck(name)
            queued = self._ops.submit(name, "delete", partial(self._delete, name, deployed))
        self._wait(name, "delete", queued)

    def _delete(self, name: str, deployed: _Runtime) -> None:
        worker = self._worker()
        worker.stop_connector(name)
        with self._lock:
            if self._runtime.get(name) is deployed:
                del self._runtime[name]
                worker.forget_topics(name)
                self.configs.remove_connector_config(name)
                worker.status.remove_connector(name)
            else:  # created again since (its start is queued next): only the old tasks go
                self._forget_tasks(name)

    def connector_status(self, name: str) -> dict[str, Any]:
        # The worker first: while it starts, nothing is known yet, and "not found" for a
        # connector that exists made a script polling a rolling restart think it deleted.
        worker = self._worker()
        deployed = self._deployed_for_status(name, f"No status found for connector {name}")
        return self.render_status(
            name,
            deployed.kind,
            worker.status.connector(name),
            worker.status.tasks_of(name),
            deployed.resolved,
        )

    def task_status(self, name: str, task: int) -> dict[str, Any]:
        worker = self._worker()  # first, as connector_status
        deployed = self._deployed_for_status(name, f"No status found for task {name}-{task}")
        status = worker.status.task(name, task)
        if status is None:
            raise NotFoundError(f"No status found for task {name}-{task}")
        rendered = self.render_status(
            name, deployed.kind, Status(State.RUNNING, ""), {task: status}, deployed.resolved
        )
        entry: dict[str, Any] = rendered["tasks"][0]
        return entry

    def task_configs(self, name: str) -> list[dict[str, Any]]:
        self._known(name)
        return [
            {"id": {"connector": name, "task": i}, "config": c}
            for i, c in enumerate(self._task_configs(name))
        ]

    # -- Herder: restart, pause, resume, stop -----------------------------------------------------

    def restart_connector(
        self, name: str, include_tasks: bool, only_failed: bool
    ) -> dict[str, Any] | None:
        # Kafka's standalone herder: a KIP-745 restart of an unknown connector is "Unknown
        # connector: <name>"; its legacy restart answers 500 (it goes on past the 404 into a
        # NullPointerException), where Copycat keeps the 404 of its other requests.
        self._get(name, UNKNOWN_TO_RESTART if include_tasks or only_failed else NOT_FOUND)
        self._worker()
        return self._run(
            name, "restart", partial(self._restart_connector, name, include_tasks, only_failed)
        )

    def _restart_connector(
        self, name: str, include_tasks: bool, only_failed: bool
    ) -> dict[str, Any] | None:
        deployed, worker = self._get(name), self._worker()
        _end_task_retry(deployed)  # as Kafka's: a restart's failure starts a new backoff
        if deployed.deleted or self._target(name) is TargetState.STOPPED:
            # Nothing to start again: a delete is queued right behind, or the connector is
            # STOPPED (Kafka plans it all the same, its 202 body showing the connector
            # RESTARTING, then starts it in its target state: it stays STOPPED, taskless).
            if not include_tasks and not only_failed:
                return None
            return self._restart_plan(name, include_tasks, only_failed)[0]
        if not include_tasks and not only_failed:
            # Kafka's legacy restart: the instance only; its tasks run on, and restart only
            # if the started instance gives other task configs (Kafka's standalone herder
            # requests a task reconfiguration), also when the instance had failed.
            worker.stop_connector_instance(name)
            if self._start_instance(name, deployed):
                self._reconfigure_tasks(name)
            return None
        status, restart_connector, tasks = self._restart_plan(name, include_tasks, only_failed)
        log.info(
            "restarting connector %s: %s and tasks %s",
            name,
            "its instance" if restart_connector else "not its instance",
            tasks,
        )
        # Kafka's order: stop what is planned (the tasks together, as its stopAndAwaitTasks)
        # and mark it RESTARTING, then start it again: a task's start writes no UNASSIGNED
        # over its RESTARTING (Worker.start_task), so it reads RESTARTING until RUNNING.
        if restart_connector:
            worker.stop_connector_instance(name)
            worker.status.set_connector(name, Status(State.RESTARTING, worker.worker_id))
        if tasks:
            worker.stop_tasks_of(name, tasks)
        for task in tasks:
            worker.status.set_task(name, task, Status(State.RESTARTING, worker.worker_id))
        # The planned tasks start from their stored configs whether or not the connector's
        # start succeeds, as in Kafka's restartConnectorAndTasks.
        started = restart_connector and self._start_instance(name, deployed)
        for task in tasks:
            self._start_stored_task(name, task)
        if started:
            # Then the started instance is asked for its task configs, and the tasks restart
            # again only if those changed, as Kafka's distributed restart (and its standalone
            # legacy one) does. Its standalone KIP-745 restart does not, which leaves a
            # connector whose first start failed without any task after a restart that works.
            self._reconfigure_tasks(name)
        return status

    def _start_instance(self, name: str, deployed: _Runtime) -> bool:
        """Start the connector's instance (stopped, or failed) from its stored config, in its
        target state, without asking it for task configs; whether it started."""
        if self._resolve_and_start(name, deployed, self._config(name)) is None:
            return False
        if self._target(name) is TargetState.PAUSED:
            self._worker().pause(name, True)
        return True

    def _restart_plan(
        self, name: str, include_tasks: bool, only_failed: bool
    ) -> tuple[dict[str, Any], bool, list[int]]:
        """Kafka's RestartPlan (KIP-745), from the connector's current status: the 202 body
        (planned parts shown RESTARTING, the rest as they are), whether the instance restarts,
        and the tasks that do."""
        status = self.connector_status(name)
        restart_connector = not only_failed or status["connector"]["state"] == State.FAILED.value
        tasks = [
            entry["id"]
            for entry in status["tasks"]
            if include_tasks and (not only_failed or entry["state"] == State.FAILED.value)
        ]
        if restart_connector:
            status["connector"]["state"] = State.RESTARTING.value
        for entry in status["tasks"]:
            if entry["id"] in tasks:
                entry["state"] = State.RESTARTING.value
        return status, restart_connector, tasks

    def restart_task(self, name: str, task: int) -> None:
        # Kafka's standalone wording (for an unknown connector it goes on past its 404 into a
        # NullPointerException, a 500; Copycat keeps the 404).
        self._get(name)
        if not 0 <= task < len(self._task_configs(name)):
            raise NotFoundError(f"Task {name}-{task} not found")
        self._worker()
        self._run(name, "task restart", partial(self._restart_task, name, task))

    def pause_connector(self, name: str) -> None:
        with self._lock:
            self._get(name, UNKNOWN_TO_TARGET)
            previous = self._target(name)
            self.configs.put_target_state(name, TargetState.PAUSED)
        if previous is TargetState.STOPPED:
            # Answered once the target is written, as Kafka's pauseConnector: the start
            # (the connector's start() may take long) goes on behind.
            self._run(name, "pause", partial(self._start, name), wait=False)
        else:
            self._apply_target(name)

    def resume_connector(self, name: str) -> None:
        with self._lock:
            self._get(name, UNKNOWN_TO_TARGET)
            previous = self._target(name)
            self.configs.put_target_state(name, TargetState.STARTED)
        if previous is TargetState.STOPPED:
            # Answered once the target is written, as Kafka's resumeConnector: the start
            # (the connector's start() may take long) goes on behind.
            self._run(name, "resume", partial(self._start, name), wait=False)
        elif previous is TargetState.PAUSED:
            self._apply_target(name)
            # As Kafka, a connector resumed is asked for its task configs (queued, not
            # waited for): a config changed while it was paused, or one created PAUSED or
            # paused from STOPPED (no task yet), gets its tasks now.
            self._reconfiguration_requested(name)

    def stop_connector(self, name: str) -> None:
        with self._lock:
            self._get(name)
            self.configs.put_target_state(name, TargetState.STOPPED)
        self._reclaim_if_stuck(name, "connector stopped")
        self._run(name, "stop", partial(self._stop_and_record, name))

    def _stop_and_record(self, name: str) -> None:
        self._stop(name)
        # A stop leaves no task configs, as Kafka writes them empty with the STOPPED target,
        # even when a pause or resume queued behind it has changed the target since: then
        # paused from STOPPED, the connector has no task until resumed (KIP-980).
        self._forget_tasks(name)
        self._start(name)  # records STOPPED with no tasks (KIP-875), or the newer target

    def _forget_tasks(self, name: str) -> None:
        """No task configs and no task statuses left for ``name`` (its tasks have stopped)."""
        worker = self._worker()
        self.configs.put_task_configs(name, [])
        for task in worker.status.tasks_of(name):
            worker.status.remove_task(name, task)

    # -- Herder: offsets (KIP-875) -------------------------------------------------------------

    def _sink_offsets(self, name: str) -> SinkOffsets:
        """The sink's consumer group, reached as Kafka's Worker reaches it: with the
        connector's admin client settings (the worker's, its ``admin.*`` keys, the connector's
        ``admin.override.*``), so a sink that reads another cluster, or as another principal,
        has its offsets read and altered there."""
        self._worker()
        config = self.resolver.resolve(self._config(name)).config
        admin = {
            **self.client_props,
            **self.config.admin_overrides(),
            **{
                key[len(ADMIN_OVERRIDE_PREFIX) :]: value
                for key, value in config.items()
                if key.startswith(ADMIN_OVERRIDE_PREFIX)
            },
        }
        group = sink_group_id(name, config, self.config.consumer_overrides())
        return SinkOffsets(admin, group)

    def connector_offsets(self, name: str) -> dict[str, Any]:
        deployed = self._get(name)
        if deployed.kind == "sink":
            return {"offsets": self._sink_offsets(name).get()}
        store = self._offsets_of(name)
        try:
            rows = store.connector_offsets(name)
        finally:
            store.close()
        return {"offsets": [{"partition": p, "offset": o} for p, o in rows if o is not None]}

    def _require_stopped(self, name: str) -> _Runtime:
        deployed = self._get(name)
        if not self._stopped(name):
            raise BadRequestError(_NOT_STOPPED.format(name=name))
        return deployed

    def _stopped(self, name: str) -> bool:
        """Whether connector ``name`` is stopped as KIP-875 needs before its offsets change:
        its target state is STOPPED."""
        return self._target(name) is TargetState.STOPPED

    def _connector_alter_offsets(self, name: str, offsets: Mapping[Any, Any]) -> bool:
        """Let the connector plugin see (and veto) the change, on a fresh instance, in a warm
        host (core/host_pool.py: a host started for each request made a PATCH take ~0.8 s
        where Kafka Connect takes ~0.12 s)."""
        config = self._config(name)
        plugin = self.catalogue.resolve(
            "connector",
            config["connector.class"],
            config.get("connector.plugin.version"),
        )
        resolved = self.resolver.resolve(config)
        env = self.catalogue.environment(plugin)
        with self.host_pool.lease(env, f"offsets:{plugin.name}") as host:
            handle = host.new(plugin.target)
            try:
                return bool(host.call(handle, "alter_offsets", resolved.config, dict(offsets)))
            except RemotePluginError as exc:
                # As Kafka's Worker: the plugin's ConnectException is the answer, a 500 with
                # its own message; anything else is wrapped (the trace is logged).
                log.error(
                    "Failed to modify offsets for %s connector %s: alter_offsets() raised "
                    "%s: %s\n%s",
                    plugin.kind,
                    name,
                    exc.remote_type.rsplit(".", 1)[-1],
                    resolved.scrub(exc.remote_message),
                    resolved.scrub(exc.remote_traceback),
                )
                if exc.kind in _CONNECT_EXCEPTION_KINDS:
                    raise HerderError(resolved.scrub(exc.remote_message)) from None
                raise HerderError(
                    f"Failed to modify offsets for {plugin.kind} connector {name}"
                ) from None
            finally:
                if host.alive:
                    host.drop(handle)

    def alter_connector_offsets(self, name: str, offsets: list[dict[str, Any]]) -> str:
        self._require_stopped(name)
        message = self._run(name, "alter offsets", partial(self._alter_offsets, name, offsets))
        assert message is not None
        return message

    def _alter_offsets(self, name: str, offsets: list[dict[str, Any]]) -> str:
        deployed = self._require_stopped(name)
        if not offsets:
            raise BadRequestError(
                "Partitions / offsets need to be provided for an alter offsets request"
            )
        if deployed.kind == "sink":
            parsed = parse_sink_offsets(offsets)
            group = self._sink_offsets(name)
            # All or nothing: Kafka's broker applies the partitions it has and refuses the
            # others, and Kafka Connect then answers an error for a request half applied.
            missing = group.missing_partitions(parsed)
            if missing:
                raise BadRequestError(
                    f"{_SINK_ALTER_FAILED.format(name=name)}: {'; '.join(missing)}"
                )
            handled = self._connector_alter_offsets(
                name, {TopicPartition(t, p): o for (t, p), o in parsed.items()}
            )
            try:
                group.alter(parsed)
            except SinkOffsetsError as exc:
                raise BadRequestError(f"{_SINK_ALTER_FAILED.format(name=name)}: {exc}") from exc
            except GroupNotEmptyError as exc:
                log.error("connector %s: its consumer group has a member: %s", name, exc)
                raise HerderError(_SINK_GROUP_NOT_EMPTY.format(verb="alter", name=name)) from exc
        else:
            entries = []
            for entry in offsets:
                partition, offset = entry.get("partition"), entry.get("offset")
                if not isinstance(partition, dict):
                    raise BadRequestError("Source partitions may not be null")
                if offset is not None and not isinstance(offset, dict):
                    raise BadRequestError("Source offsets must be JSON objects or null")
                check_offset_format(partition)
                check_offset_format(offset)
                entries.append((partition, offset))
            self._before_source_offsets_change(name)
            handled = self._connector_alter_offsets(
                name, {freeze_partition(p): o for p, o in entries}
            )
            store = self._offsets_of(name)
            try:
                self._write_source_offsets(name, store, entries)
            finally:
                store.close()
        return (_ALTERED if handled else _ALTERED_EXTERNAL).format(verb="altered")

    def reset_connector_offsets(self, name: str) -> str:
        self._require_stopped(name)
        message = self._run(name, "reset offsets", partial(self._reset_offsets, name))
        assert message is not None
        return message

    def _reset_offsets(self, name: str) -> str:
        deployed = self._require_stopped(name)
        if deployed.kind == "sink":
            current = self._sink_offsets(name).get()
            handled = self._connector_alter_offsets(
                name,
                {
                    TopicPartition(
                        r["partition"]["kafka_topic"], r["partition"]["kafka_partition"]
                    ): None
                    for r in current
                },
            )
            try:
                self._sink_offsets(name).reset()
            except GroupNotEmptyError as exc:
                log.error("connector %s: its consumer group has a member: %s", name, exc)
                raise HerderError(_SINK_GROUP_NOT_EMPTY.format(verb="reset", name=name)) from exc
        else:
            self._before_source_offsets_change(name)
            store = self._offsets_of(name)
            try:
                rows = store.connector_offsets(name)
                handled = self._connector_alter_offsets(
                    name, {freeze_partition(p): None for p, _ in rows}
                )
                self._write_source_offsets(name, store, [(p, None) for p, _ in rows])
            finally:
                store.close()
        return (_ALTERED if handled else _ALTERED_EXTERNAL).format(verb="reset")

    # -- Herder: active topics (KIP-558) ---------------------------------------------------------

    def active_topics(self, name: str) -> list[str]:
        if not self.config.get("topic.tracking.enable"):
            raise ForbiddenError("Topic tracking is disabled.")
        self._get(name)
        worker = self._worker()
        return sorted(worker.task_topics(name))  # its tasks' here, stopped ones' included

    def reset_active_topics(self, name: str) -> None:
        if not self.config.get("topic.tracking.enable"):
            raise ForbiddenError("Topic tracking is disabled.")
        if not self.config.get("topic.tracking.allow.reset"):
            raise ForbiddenError("Topic tracking reset is disabled.")
        with self._lock:
            self._get(name)
            self._worker().forget_topics(name)
