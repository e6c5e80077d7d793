"""The worker: starts connectors and tasks in plugin hosts and drives task loops on threads.

The worker owns every Kafka client (one producer per source task, one consumer per sink task,
as Kafka Connect does); plugin hosts see only bytes. A failing task is marked FAILED with its
trace and never takes the worker or other tasks down.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, Producer

from core.errors import ErrorReporter
from core.kafka import SINK_CONSUMER_DEFAULTS, SOURCE_PRODUCER_DEFAULTS, client_config
from core.offsets import OffsetStore
from core.plugins import PluginCatalogue
from core.sink_task import SinkTaskLoop
from core.source_task import SourceTaskLoop
from core.status import State, Status, StatusBoard, failure_trace
from core.topics import TopicCreator
from isolation import (
    DEFAULT_CALL_TIMEOUT_S,
    SHUTDOWN_GRACE_S,
    ConnectorEvent,
    HostClient,
    PluginHostCrashed,
    RemotePluginError,
    allocator,
)
from isolation.environment import PluginDescriptor
from isolation.errors import remote_error
from isolation.protocol import RAISE_ERROR, REQUEST_TASK_RECONFIGURATION
from plugin_api import ConfigException, ConnectException

log = logging.getLogger("copycat.worker")

CONVERTER_KEYS = ("key.converter", "value.converter", "header.converter")
# Seconds a task loop sleeps after an iteration that moved nothing, when the task's poll()
# returned at once: keeps an idle source from spinning a core.
IDLE_BACKOFF_S = 0.01


@dataclass(frozen=True)
class RestartPolicy:
    """``task.restart.*``: automatic restarts of failed tasks with bounded exponential backoff."""

    max_attempts: int
    initial_backoff_ms: int
    max_backoff_ms: int

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> RestartPolicy | None:
        policy = props.get("task.restart.policy", "none").strip().lower()
        if policy == "none":
            return None
        if policy != "on-failure":
            raise ConfigException("task.restart.policy", policy, "must be none or on-failure")
        return cls(
            int(props.get("task.restart.max.attempts", "5")),
            int(props.get("task.restart.backoff.initial.ms", "1000")),
            int(props.get("task.restart.backoff.max.ms", "60000")),
        )

    def delay_ms(self, attempt: int) -> int:
        return min(self.initial_backoff_ms << (attempt - 1), self.max_backoff_ms)


def prefixed(props: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix) :]: v for k, v in props.items() if k.startswith(prefix)}


@dataclass
class _Connector:
    name: str
    props: dict[str, str]
    plugin: PluginDescriptor
    host: HostClient
    handle: int
    version: str
    tasks: dict[int, _TaskRunner] = field(default_factory=dict)
    stopping: bool = False


class _TaskRunner(threading.Thread):
    """A thread that starts one task in its plugin host and drives its loop until stopped.

    The task's host is spawned and the task's ``start()`` called on this thread, as Kafka's
    WorkerTask does, so a task that hangs in ``start()`` holds up nothing but itself: its
    call's deadline (plugin.call.timeout.ms) or a stop reclaims it by killing its host.
    """

    def __init__(
        self,
        worker: Worker,
        connector: _Connector,
        task_id: int,
        task_props: Mapping[str, str],
        commit_interval_s: float,
        paused: bool,
    ) -> None:
        super().__init__(name=f"task-{connector.name}-{task_id}", daemon=True)
        self.worker = worker
        self.connector = connector.name
        self.task_id = task_id
        self.task_props: dict[str, str] = dict(task_props)
        self._plugin = connector.plugin
        self._props = connector.props
        self._version = connector.version
        self.commit_interval_s = commit_interval_s
        self.host: HostClient | None = None
        self.loop: SourceTaskLoop | SinkTaskLoop | None = None
        self.reporter: ErrorReporter | None = None
        self.stopping = threading.Event()
        self.paused = threading.Event()
        if paused:
            self.paused.set()
        self.started = threading.Event()  # set once start() returned (or failed)
        self.failed = False
        self.started_at = time.monotonic()

    def run(self) -> None:
        worker, name = self.worker, self.connector
        try:
            self.loop = worker._build_task(self, self._plugin, self._props)
        except BaseException as exc:  # noqa: BLE001 - a task failure must not kill the worker
            self._close_quietly()
            self.started.set()
            if self.stopping.is_set():
                return  # stopped (its host killed) while starting: not a failure
            self.failed = True
            log.error("task %s-%d failed to start: %s", name, self.task_id, exc)
            worker.status.set_task(
                name, self.task_id, Status(State.FAILED, worker.worker_id, trace=failure_trace(exc))
            )
            worker.task_failed(self)
            return
        if not self.stopping.is_set():
            state = State.PAUSED if self.paused.is_set() else State.RUNNING
            worker.status.set_task(
                name, self.task_id, Status(state, worker.worker_id, version=self._version)
            )
        self.started.set()
        self._run_loop(self.loop)

    def _run_loop(self, loop: SourceTaskLoop | SinkTaskLoop) -> None:
        try:
            if isinstance(loop, SinkTaskLoop):
                loop.start()
            next_commit = time.monotonic() + self.commit_interval_s
            while not self.stopping.is_set():
                if self.paused.is_set():
                    self.stopping.wait(0.1)
                    continue
                moved = loop.iteration()
                if isinstance(loop, SourceTaskLoop):
                    if time.monotonic() >= next_commit:
                        loop.commit_offsets()
                        next_commit = time.monotonic() + self.commit_interval_s
                    if not moved:
                        self.stopping.wait(IDLE_BACKOFF_S)
        except BaseException as exc:  # noqa: BLE001 - a task failure must not kill the worker
            self.failed = True
            log.error("task %s-%d failed: %s", self.connector, self.task_id, exc)
            self.worker.status.set_task(
                self.connector,
                self.task_id,
                Status(State.FAILED, self.worker.worker_id, trace=failure_trace(exc)),
            )
        finally:
            self._shut_down(loop)
        if self.failed and not self.stopping.is_set():
            self.worker.task_failed(self)

    def _shut_down(self, loop: SourceTaskLoop | SinkTaskLoop) -> None:
        timeout = self.worker.graceful_timeout_s
        try:
            if isinstance(loop, SinkTaskLoop):
                loop.stop(commit=not self.failed)
            else:
                # Even when the task failed, what the broker acknowledged is safe to commit:
                # wait for outstanding acks (up to the graceful timeout) and store them.
                loop.stop(timeout)
        except Exception as exc:  # noqa: BLE001
            log.warning("task %s-%d did not stop cleanly: %s", self.connector, self.task_id, exc)
        finally:
            self._close_quietly()
            if not self.failed:
                self.worker.status.set_task(
                    self.connector, self.task_id, Status(State.UNASSIGNED, self.worker.worker_id)
                )

    def _close_quietly(self) -> None:
        try:
            if self.host is not None:
                self.host.close(self.worker.graceful_timeout_s)
        finally:
            if self.reporter is not None:
                self.reporter.close()

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
        worker_props: Mapping[str, str],
        catalogue: PluginCatalogue,
        offsets: OffsetStore,
        *,
        client_props: Mapping[str, Any],
        status: StatusBoard | None = None,
    ) -> None:
        self.worker_id = worker_id
        self.props = dict(worker_props)
        self.catalogue = catalogue
        self.offsets = offsets
        self.client_props = dict(client_props)
        self.status = status or StatusBoard()
        self.connectors: dict[str, _Connector] = {}
        self.graceful_timeout_s = (
            int(self.props.get("task.shutdown.graceful.timeout.ms", 5000)) / 1000
        )
        self.call_timeout_s = (
            int(self.props.get("plugin.call.timeout.ms", DEFAULT_CALL_TIMEOUT_S * 1000)) / 1000
        )
        self.memory_limit_bytes = int(self.props.get("plugin.host.memory.max.bytes", 0))
        self.commit_interval_s = int(self.props.get("offset.flush.interval.ms", 60000)) / 1000
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
        """Start the connector instance in a host of its own; blocks (deadlines apply)."""
        plugin = self.resolve_connector(props)
        host = self._spawn_connector_host(name, plugin, props)
        try:
            handle = host.new(plugin.target)
            host.call(handle, "start", dict(props))
            version = str(host.call(handle, "version"))
        except BaseException as exc:
            self._starting.pop(name, None)
            host.close(self.graceful_timeout_s)
            self.status.set_connector(
                name, Status(State.FAILED, self.worker_id, trace=failure_trace(exc))
            )
            raise
        with self._lock:
            self._starting.pop(name, None)
            self.connectors[name] = _Connector(name, dict(props), plugin, host, handle, version)
        self.status.set_connector(name, Status(State.RUNNING, self.worker_id, version=version))
        log.info("connector %s started (%s %s)", name, plugin.class_name, version)
        return version

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
                name, Status(State.FAILED, self.worker_id, trace=failure_trace(error))
            )

    def _connector_host_died(self, name: str, host: HostClient, crash: PluginHostCrashed) -> None:
        """A connector's host exited between calls (killed, crashed): the connector FAILED."""
        connector = self.connectors.get(name)
        if connector is None or connector.host is not host or connector.stopping:
            return
        log.error("connector %s failed: %s", name, crash)
        self.status.set_connector(
            name, Status(State.FAILED, self.worker_id, trace=failure_trace(crash))
        )

    def task_configs(self, name: str) -> list[dict[str, str]]:
        connector = self.connectors[name]
        max_tasks = int(connector.props.get("tasks.max", "1"))
        configs = connector.host.call(connector.handle, "task_configs", max_tasks)
        enforce = connector.props.get("tasks.max.enforce", "true").lower() != "false"
        if enforce and len(configs) > max_tasks:
            raise ConnectException(
                f"connector {name} generated {len(configs)} task configs, "
                f"more than tasks.max={max_tasks}"
            )
        return [{str(k): str(v) for k, v in c.items()} for c in configs]

    def stop_connector(self, name: str) -> None:
        """Stop the connector's tasks, then itself, each within the graceful timeout."""
        if name not in self.connectors:
            return
        self.connectors[name].stopping = True
        self.stop_tasks(name)
        with self._lock:
            connector = self.connectors.pop(name)
        self._stop_connector_instance(connector)
        self.status.set_connector(name, Status(State.UNASSIGNED, self.worker_id))

    def _stop_connector_instance(self, connector: _Connector) -> None:
        connector.stopping = True
        try:
            if connector.host.alive:
                connector.host.call(connector.handle, "stop", timeout_s=self.graceful_timeout_s)
        except Exception as exc:  # noqa: BLE001
            log.warning("connector %s did not stop cleanly: %s", connector.name, exc)
        finally:
            connector.host.close(self.graceful_timeout_s)

    def reclaim(self, name: str, reason: str) -> None:
        """Kill the host of a connector start that is still in progress (it hangs)."""
        with self._lock:
            host = self._starting.pop(name, None)
        if host is not None:
            log.error("connector %s: %s; killing its plugin host", name, reason)
            host.kill(reason)

    # -- tasks -------------------------------------------------------------------------------

    def start_task(self, name: str, task_id: int, task_props: Mapping[str, str]) -> _TaskRunner:
        """Start a task on its own thread and return at once; its status becomes RUNNING (or
        PAUSED) when its ``start()`` returns, FAILED if that fails."""
        connector = self.connectors[name]
        paused = self.status.connector(name) is not None and (
            self.status.connector(name).state is State.PAUSED  # type: ignore[union-attr]
        )
        runner = _TaskRunner(self, connector, task_id, task_props, self.commit_interval_s, paused)
        previous = connector.tasks.get(task_id)
        if previous is not None and previous.is_alive():
            raise ConnectException(f"task {name}-{task_id} is already running")
        connector.tasks[task_id] = runner
        self.status.set_task(name, task_id, Status(State.UNASSIGNED, self.worker_id))
        runner.start()
        return runner

    def _build_task(
        self, runner: _TaskRunner, plugin: PluginDescriptor, props: Mapping[str, str]
    ) -> SourceTaskLoop | SinkTaskLoop:
        """On the task's thread: its host, pipeline, clients and loop, with the task started."""
        name, task_id, task_props = runner.connector, runner.task_id, runner.task_props
        env = self.catalogue.environment(plugin)
        host = self.start_host(
            plugin,
            f"{name}-{task_id}",
            props,
            callbacks={"offsets": lambda partitions: self.offsets.get(name, partitions)},
        )
        runner.host = host
        if runner.stopping.is_set():
            raise ConnectException(f"task {name}-{task_id} was stopped while it started")
        task_target = host.task_class(host.new(plugin.target))
        pipeline = self._pipeline(host, str(env.location), props)
        pipeline["errors"] = {k: v for k, v in props.items() if k.startswith("errors.")}
        handle = host.next_handle()
        reporter = ErrorReporter(
            name,
            task_id,
            props,
            producer_config=client_config(
                self.client_props,
                {
                    "acks": "all",
                    "enable.idempotence": True,
                    "client.id": f"connector-dlq-producer-{name}-{task_id}",
                },
                prefixed(self.props, "producer."),
                prefixed(props, "producer.override."),
            ),
            admin_config=client_config(
                self.client_props,
                prefixed(self.props, "admin."),
                prefixed(props, "admin.override."),
            ),
        )
        runner.reporter = reporter
        if plugin.kind == "source":
            started = host.start_source_task(handle, task_target, task_props, pipeline)
            producer = Producer(
                client_config(
                    self.client_props,
                    SOURCE_PRODUCER_DEFAULTS,
                    {"client.id": f"connector-producer-{name}-{task_id}"},
                    prefixed(self.props, "producer."),
                    prefixed(props, "producer.override."),
                )
            )
            creator = TopicCreator(
                client_config(
                    self.client_props,
                    prefixed(self.props, "admin."),
                    prefixed(props, "admin.override."),
                ),
                props,
                enabled=self.props.get("topic.creation.enable", "true").lower() == "true",
            )
            source_loop = SourceTaskLoop(
                name,
                task_id,
                host,
                handle,
                producer,
                self.offsets,
                creator,
                wants_acks=started.wants_acks,
                errors=reporter,
            )
            source_loop.should_stop = runner.stopping.is_set
            return source_loop
        errant = (
            bool(props.get("errors.deadletterqueue.topic.name"))
            or props.get("errors.tolerance", "none") == "all"
        )
        host.start_sink_task(handle, task_target, task_props, pipeline, errant)

        def on_commit(error: Any, partitions: Any) -> None:
            sink_loop.on_commit(error, partitions)  # bound below, before any consume()

        consumer = Consumer(
            client_config(
                self.client_props,
                SINK_CONSUMER_DEFAULTS,
                {
                    "group.id": f"connect-{name}",
                    "client.id": f"connector-consumer-{name}-{task_id}",
                    "on_commit": on_commit,
                },
                prefixed(self.props, "consumer."),
                prefixed(props, "consumer.override."),
            )
        )
        topics = [t.strip() for t in props.get("topics", "").split(",") if t.strip()]
        sink_loop = SinkTaskLoop(
            name,
            task_id,
            host,
            handle,
            consumer,
            topics=topics,
            topics_regex=props.get("topics.regex") or None,
            commit_interval_ms=int(self.commit_interval_s * 1000),
            errors=reporter,
        )
        return sink_loop

    def stop_tasks(self, name: str, timeout_s: float | None = None) -> None:
        """Stop every task of ``name``: signal all, then wait (the timeout is shared)."""
        connector = self.connectors.get(name)
        if connector is None:
            return
        runners = list(connector.tasks.values())
        self._stop_runners(name, runners, timeout_s)
        connector.tasks.clear()

    def _stop_runners(self, name: str, runners: list[_TaskRunner], timeout_s: float | None) -> None:
        for runner in runners:
            runner.stopping.set()
        timeout = timeout_s if timeout_s is not None else self.graceful_timeout_s
        deadline = time.monotonic() + timeout
        for runner in runners:
            runner.join(max(0.0, deadline - time.monotonic()))
            if runner.is_alive():
                log.error(
                    "task %s-%d did not stop within the graceful timeout (%g s); killing its "
                    "plugin host",
                    name,
                    runner.task_id,
                    timeout,
                )
                runner.kill_host(f"task did not stop within {timeout:g} s")
                runner.join(SHUTDOWN_GRACE_S)

    def pause(self, name: str, paused: bool) -> None:
        connector = self.connectors.get(name)
        if connector is None:
            return
        state = State.PAUSED if paused else State.RUNNING
        for task_id, runner in list(connector.tasks.items()):
            (runner.paused.set if paused else runner.paused.clear)()
            if runner.started.is_set() and not runner.failed:
                self.status.update_task(name, task_id, state=state)
        self.status.set_connector(name, Status(state, self.worker_id, version=connector.version))

    def stop(self) -> None:
        for name in list(self.connectors):
            self.stop_tasks(name)
        for name in list(self.connectors):
            self.stop_connector(name)
        self.offsets.flush()

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
        policy = RestartPolicy.from_props(connector.props)
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
                ),
            )
            return
        self._restart_attempts[key] = attempt
        delay_ms = policy.delay_ms(attempt)
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
            self.start_task(name, task_id, runner.task_props)

        timer = threading.Timer(delay_ms / 1000, restart)
        timer.daemon = True
        timer.start()

    # -- used by the herder for REST operations (restart, task configs, active topics) ----------

    def task_class(self, name: str) -> str:
        """The dotted name of the connector's task class (Kafka's ``task.class`` task key)."""
        connector = self.connectors[name]
        target = connector.host.task_class(connector.handle)
        return target.replace(":", ".")

    def stop_task(self, name: str, task_id: int, timeout_s: float | None = None) -> None:
        """Stop one task of ``name`` (gracefully, then by killing its host)."""
        connector = self.connectors.get(name)
        runner = connector.tasks.pop(task_id, None) if connector is not None else None
        if runner is not None:
            self._stop_runners(name, [runner], timeout_s)

    def restart_connector_instance(self, name: str) -> None:
        """Stop and start the connector object only (KIP-745 restart); its tasks keep running."""
        connector = self.connectors[name]
        self._stop_connector_instance(connector)
        host = self._spawn_connector_host(name, connector.plugin, connector.props)
        try:
            handle = host.new(connector.plugin.target)
            host.call(handle, "start", dict(connector.props))
        except BaseException as exc:
            self._starting.pop(name, None)
            host.close(self.graceful_timeout_s)
            self.status.set_connector(
                name, Status(State.FAILED, self.worker_id, trace=failure_trace(exc))
            )
            raise
        self._starting.pop(name, None)
        connector.host, connector.handle, connector.stopping = host, handle, False
        self.status.set_connector(
            name, Status(State.RUNNING, self.worker_id, version=connector.version)
        )

    def task_topics(self, name: str) -> set[str]:
        """Topics the connector's current tasks produced to or are assigned (KIP-558)."""
        connector = self.connectors.get(name)
        topics: set[str] = set()
        if connector is None:
            return topics
        for runner in list(connector.tasks.values()):
            loop = runner.loop
            for _ in range(3):  # the task thread may add to the set while it is copied
                try:
                    if isinstance(loop, SourceTaskLoop):
                        topics.update(set(loop._topics_seen))
                    elif isinstance(loop, SinkTaskLoop):
                        topics.update(t for t, _p in set(loop._assigned))
                    break
                except RuntimeError:
                    continue
        return topics

    # -- converters and transforms -----------------------------------------------------------

    def _attach(self, host: HostClient, plugin: PluginDescriptor, home: str, key: str) -> None:
        if plugin.location == home:
            return
        try:
            host.attach(str(self.catalogue.environment(plugin).import_path))
        except RemotePluginError as exc:
            raise ConfigException(
                key,
                plugin.class_name,
                f"cannot load {plugin.distribution} into the task's plugin host: "
                f"{exc.remote_message}",
            ) from exc

    def _pipeline(self, host: HostClient, home: str, props: Mapping[str, str]) -> dict[str, Any]:
        spec: dict[str, Any] = {}
        for which in CONVERTER_KEYS:
            source = props if props.get(which) else self.props
            class_name = source.get(which)
            if not class_name:
                continue
            kind = "header_converter" if which == "header.converter" else "converter"
            plugin = self.catalogue.resolve(
                kind, class_name, source.get(f"{which}.plugin.version"), key=which
            )
            self._attach(host, plugin, home, which)
            sub = prefixed(source, which + ".")
            sub.pop("plugin.version", None)
            sub.setdefault("converter.type", which.split(".")[0])
            spec[which.replace(".", "_")] = (plugin.target, sub)
        spec["transforms"] = self._transforms(host, home, props)
        return spec

    def _transforms(
        self, host: HostClient, home: str, props: Mapping[str, str]
    ) -> list[tuple[Any, ...]]:
        stages = []
        aliases = [a.strip() for a in props.get("transforms", "").split(",") if a.strip()]
        for alias in aliases:
            prefix = f"transforms.{alias}."
            sub = prefixed(props, prefix)
            type_name = sub.pop("type", None)
            if not type_name:
                raise ConfigException(prefix + "type", None, "Missing required configuration")
            plugin = self.catalogue.resolve(
                "transformation", type_name, sub.pop("plugin.version", None), key=prefix + "type"
            )
            self._attach(host, plugin, home, prefix + "type")
            predicate_alias = sub.pop("predicate", None)
            negate = sub.pop("negate", "false").lower() == "true"
            predicate = None
            if predicate_alias:
                pprefix = f"predicates.{predicate_alias}."
                psub = prefixed(props, pprefix)
                ptype = psub.pop("type", None)
                if not ptype:
                    raise ConfigException(
                        pprefix + "type",
                        None,
                        f"predicate {predicate_alias!r} used by transform {alias!r} is not defined",
                    )
                pplugin = self.catalogue.resolve(
                    "predicate", ptype, psub.pop("plugin.version", None), key=pprefix + "type"
                )
                self._attach(host, pplugin, home, pprefix + "type")
                predicate = (pplugin.target, psub)
            stages.append((alias, (plugin.target, sub), predicate, negate))
        return stages
