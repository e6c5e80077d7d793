"""The plugin host process: runs plugin code on behalf of the worker (stdlib + plugin_api only).

Started by the worker from a plugin venv's interpreter as::

    <venv>/bin/python -I -c <bootstrap> <plugin_api dir> <this dir> <memory limit> \
        <in fd> <out fd> <events fd> <stop fd> [<in region fd> <out region fd>]

The bootstrap puts the runtime's ``plugin_api`` first on ``sys.path`` (parent-first) and the
venv's site-packages stay where the interpreter put them (child-first for everything else).
It serves one request at a time; a request may call back into the worker (e.g. to read source
offsets) before it answers. Connector events (a connector asking for task reconfiguration or
reporting an error, from any of its threads) go out on a channel of their own, at once. Anything
the plugin writes to stdout goes to stderr, which the worker relays to its log and keeps the
tail of for crash reports.
The worker's request that the host's task stop arrives on a pipe of its own (``<stop fd>``),
which only a retry's backoff waits on, so that it ends at once (``copycat_errors.StopRequest``).

:class:`Host` only dispatches; how requests arrive and answers leave is its transport's
business: :func:`main` serves it over pipes, the worker's in-process twin
(``isolation.inprocess``) on a thread.
"""

from __future__ import annotations

import gc
import logging
import math
import os
import select
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import copycat_protocol as protocol
import copycat_wire as wire
from copycat_errors import (
    ContractViolation,
    ErrorPolicy,
    FailedPut,
    RetriablePut,
    StopRequest,
    describe,
    exception_trace,
    raised_at,
)
from copycat_loader import LocationRegistry, ModuleConflictError, resolve
from plugin_api.config import config_infos

import plugin_api
from plugin_api import (
    ConfigDef,
    ConfigException,
    Connector,
    ConnectorContext,
    DataException,
    RetriableException,
    SinkTask,
    SourceTask,
)

if TYPE_CHECKING:
    from copycat_pipeline import Pipeline

# What a host needs at start is imported above; what only some hosts need later is imported
# by the operation that needs it, since every connector and task start pays for a host's
# imports (~0.15 s of CPU before this rule, docs/benchmarks.md): a task's data path
# (copycat_pipeline, copycat_transactions, copycat_batch, copycat_sink_columns) when a task
# starts, json with the first log record. tests/unit/isolation/test_host_start_imports.py
# checks that a ready host has not imported them.
# An object made by ``new`` that has this method gets the host's ``callback`` (to ask the worker
# something while a request is served): how the runtime's own objects that run in a host (a
# task's data path, core/runtime/in_host.py) reach the worker. Plugin classes never need it.
BIND_HOST = "_copycat_bind_host"
# An object made by ``new`` that has these methods is told when the worker has gone quiet:
# ``_copycat_quiet_after()`` says after how many seconds without a request it wants to know
# (None: not now), and ``_copycat_on_quiet(silent_s)`` is then called on the serving thread,
# outside any request (so it must not call back into the worker). A task whose Kafka client
# runs here uses it to leave its consumer group when its worker is frozen
# (core/runtime/in_host.py), as a frozen Kafka Connect worker's consumer would be dropped.
QUIET_AFTER = "_copycat_quiet_after"
# ... and one that has this method gets the host's StopRequest (the worker's stop and wake-ups,
# copycat_errors.StopRequest): a task loop in a host waits on it while idle.
BIND_STOP = "_copycat_bind_stop"
ON_QUIET = "_copycat_on_quiet"

# The young-generation threshold of the cyclic collector: the worker's value, see
# isolation/allocator.py (this module may import only the standard library and plugin_api).
GC_YOUNG_THRESHOLD = 50_000


class HostConnectorContext(ConnectorContext):
    """Sends the connector's requests to the worker at once, from whichever thread asks."""

    def __init__(self, host: Host, obj_id: int) -> None:
        self._host = host
        self._obj_id = obj_id

    def request_task_reconfiguration(self) -> None:
        self._host.emit(
            protocol.ConnectorEvent(self._obj_id, protocol.REQUEST_TASK_RECONFIGURATION, None)
        )

    def raise_error(self, exc: BaseException) -> None:
        self._host.emit(
            protocol.ConnectorEvent(self._obj_id, protocol.RAISE_ERROR, _error_info(exc))
        )


def _error_info(exc: BaseException) -> protocol.ErrorInfo:
    setup = bool(getattr(exc, protocol.TASK_SETUP_FAILED, False))
    carried = getattr(exc, protocol.CARRIED_ERROR_INFO, None)
    if isinstance(carried, tuple) and len(carried) == len(protocol.ErrorInfo._fields):
        info = protocol.ErrorInfo(*carried)  # a plugin's error, from a host nested in this one
        return info._replace(setup=True) if setup else info
    retry_after_ms = None
    sink_actions = None
    if isinstance(exc, RetriablePut):
        retry_after_ms, exc = exc.retry_after_ms, exc.cause
    elif isinstance(exc, FailedPut):
        sink_actions, exc = exc.actions, exc.cause
    kind = protocol.OTHER
    if isinstance(exc, RetriableException):
        kind = protocol.RETRIABLE
    elif isinstance(exc, DataException):
        kind = protocol.DATA
    elif isinstance(exc, ConfigException):
        kind = protocol.CONFIG
    elif isinstance(exc, ModuleConflictError):
        kind = protocol.CONFLICT
    elif isinstance(exc, ContractViolation):
        kind = protocol.CONTRACT
    elif isinstance(exc, plugin_api.ConnectException):
        kind = protocol.CONNECT
    return protocol.ErrorInfo(
        f"{type(exc).__module__}.{type(exc).__qualname__}",
        describe(exc),
        kind,
        exception_trace(exc),
        retry_after_ms,
        sink_actions,
        setup,
    )


def _config_error_of(
    exc: plugin_api.ConfigException, prefix: str, where: str
) -> plugin_api.ConfigException:
    """``exc`` of a component's ``configure()`` as the connector's config error: its key with
    the component's prefix (``replacement`` -> ``transforms.route.replacement``), and where."""
    message, name = str(exc), exc.name
    if name is not None and prefix:
        full = prefix + name
        named = message.replace(f"for configuration {name}", f"for configuration {full}", 1)
        named = named.replace(f'"{name}"', f'"{full}"', 1)
        # A plain message ("No group 1") gets Kafka's form naming the key and the value.
        message = (
            named
            if named != message
            else f"Invalid value {exc.value} for configuration {full}: {message}"
        )
        name = full
    error = plugin_api.ConfigException(f"{where}: {message}")
    error.name, error.value = name, exc.value
    return error


_KINDS: tuple[tuple[type, str], ...] = (
    (plugin_api.SourceConnector, "source"),
    (plugin_api.SinkConnector, "sink"),
    (plugin_api.Converter, "converter"),
    (plugin_api.HeaderConverter, "header_converter"),
    (plugin_api.Transformation, "transformation"),
    (plugin_api.Predicate, "predicate"),
    (plugin_api.ConfigProvider, "config_provider"),
)


def _plugin_kinds(cls: type) -> list[str]:
    """Every plugin interface ``cls`` implements (a converter is often a header converter too)."""
    return [kind for base, kind in _KINDS if issubclass(cls, base)]


def _config_definitions(instance: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """A component's config definitions as REST shows them (KIP-769), and what is wrong with
    them: ``config()`` raising or returning something other than a ConfigDef, a key without a
    usable name or without documentation."""
    if not hasattr(instance, "config"):
        return [], []
    name = type(instance).__qualname__
    try:
        definition = instance.config()
    except Exception as exc:  # noqa: BLE001 - reported as the plugin's fault
        return [], [f"{name}.config() raised {type(exc).__name__}: {describe(exc)}"]
    if not isinstance(definition, ConfigDef):
        return [], [f"{name}.config() returned {type(definition).__name__}, not a ConfigDef"]
    errors = []
    for key in definition.keys.values():
        if not isinstance(key.name, str) or not key.name.strip() or key.name != key.name.strip():
            errors.append(f"{name}: config key {key.name!r} has no usable name")
        elif not key.internal and not (key.documentation or "").strip():
            errors.append(f"{name}: config key {key.name!r} has no documentation")
    infos = config_infos(definition, {}, name)
    return [entry["definition"] for entry in infos["configs"]], errors


Callback = Callable[[str, tuple[Any, ...]], Any]
Emit = Callable[[tuple[Any, ...]], None]


class Host:
    """Serves the worker's requests on plugin objects, one at a time.

    ``callback(name, args)`` asks the worker something while a request is being served (and
    only from the thread serving it); ``emit(event)`` sends a :class:`ConnectorEvent` to the
    worker from any thread, outside any request.
    """

    def __init__(self, callback: Callback, emit: Emit, stop: StopRequest | None = None) -> None:
        self._callback = callback
        self._emit = emit
        # The worker's request that this host's task stop, which ends a retry's backoff (see
        # StopRequest): the process's own in a host process (also for the Host a task's data
        # path makes there, isolation/direct.py), else one of this Host's.
        self.stop = stop or _process_stop or StopRequest()
        self.objects: dict[int, Any] = {}
        # Objects that want to know when the worker goes quiet (QUIET_AFTER, ON_QUIET).
        self.quiet_watchers: dict[int, Any] = {}
        self.runners: dict[int, Any] = {}
        self.locations = LocationRegistry()
        self.serving_thread = threading.get_ident()
        self.running = True

    def callback(self, name: str, args: tuple[Any, ...]) -> Any:
        """Ask the worker something while the current request is being served."""
        if threading.get_ident() != self.serving_thread:
            raise plugin_api.ConnectException(
                f"{name} may only be used from the thread the runtime calls the task on"
            )
        return self._callback(name, args)

    def emit(self, event: protocol.ConnectorEvent) -> None:
        handle, kind, error = event
        self._emit((handle, kind, None if error is None else tuple(error)))

    def dispatch(self, op: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """Run one request: ``("ok", answer)`` or ``("err", ErrorInfo as a tuple)``."""
        handler: Callable[..., Any] | None = getattr(self, f"op_{op}", None)
        try:
            if handler is None:
                raise plugin_api.ConnectException(f"unknown plugin host operation {op!r}")
            return ("ok", handler(*args))
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the worker
            if isinstance(exc, KeyboardInterrupt):
                raise
            return ("err", tuple(_error_info(exc)))

    # -- generic operations ------------------------------------------------------------------

    def op_hello(self) -> tuple[Any, ...]:
        return tuple(
            protocol.HostInfo(
                os.getpid(), sys.executable, sys.prefix, os.path.dirname(plugin_api.__file__)
            )
        )

    def op_attach(self, location: str) -> list[str]:
        attached: list[str] = self.locations.attach(location)
        return attached

    def op_new(self, obj_id: int, target: str, configs: Mapping[str, Any] | None = None) -> str:
        cls = resolve(target)
        if not isinstance(cls, type):
            raise plugin_api.ConnectException(f"{target} is not a class")
        obj = cls()
        if isinstance(obj, Connector):
            obj.initialize(HostConnectorContext(self, obj_id))
        elif configs is not None and hasattr(obj, "configure"):
            obj.configure(configs)
        bind = getattr(obj, BIND_HOST, None)
        if bind is not None:
            bind(self.callback)
        bind_stop = getattr(obj, BIND_STOP, None)
        if bind_stop is not None:
            bind_stop(self.stop)
        if callable(getattr(obj, QUIET_AFTER, None)) and callable(getattr(obj, ON_QUIET, None)):
            self.quiet_watchers[obj_id] = obj
        self.objects[obj_id] = obj
        return f"{cls.__module__}.{cls.__qualname__}"

    def op_call(
        self,
        obj_id: int,
        method: str,
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] | None = None,
    ) -> Any:
        return getattr(self.objects[obj_id], method)(*args, **(kwargs or {}))

    def op_eval(self, target: str, args: tuple[Any, ...] = ()) -> Any:
        """Call a module-level function by entry-point-style name (used by tests and probes)."""
        fn = resolve(target)
        if not callable(fn):
            raise plugin_api.ConnectException(f"{target} is not callable")
        return fn(*args)

    def op_describe(self, targets: list[str]) -> list[dict[str, Any]]:
        """Kind, dotted class name and version() of each entry point value (install probe).

        An entry point that fails says at which step (importing its module, constructing the
        class, its ``version()`` or ``config()``), where the error was raised and its trace."""
        described: list[dict[str, Any]] = []
        for target in targets:
            step = f"importing {target}"
            try:
                cls = resolve(target)
                if not isinstance(cls, type):
                    described.append({"error": f"{target} is not a class"})
                    continue
                kinds = _plugin_kinds(cls)
                if not kinds:
                    described.append(
                        {"error": f"{cls.__qualname__} implements no Copycat plugin interface"}
                    )
                    continue
                step = f"{cls.__qualname__}()"
                instance = cls()
                step = f"{cls.__qualname__}.version()"
                version = instance.version() if hasattr(instance, "version") else "undefined"
                step = f"{cls.__qualname__}.config()"
                definitions, config_errors = _config_definitions(instance)
                described.append(
                    {
                        "kind": kinds[0],
                        "kinds": kinds,
                        "class_name": f"{cls.__module__}.{cls.__qualname__}",
                        "version": str(version),
                        "aliases": list(getattr(cls, "KAFKA_CLASS_ALIASES", ())),
                        "file": getattr(sys.modules.get(cls.__module__), "__file__", None),
                        "config": definitions,
                        "config_errors": config_errors,
                    }
                )
            except Exception as exc:  # noqa: BLE001 - reported per entry point
                at = raised_at(exc)
                described.append(
                    {
                        "error": f"{step} raised {type(exc).__name__}: {describe(exc)}"
                        + (f" (at {at})" if at else ""),
                        "trace": exception_trace(exc),
                    }
                )
        return described

    def quiet_wait(self) -> float | None:
        """The shortest silence of the worker any object wants to hear of (None: none).
        Asked before every request of a host with watchers: no list built, no min()."""
        shortest = None
        for obj in self.quiet_watchers.values():
            wait = obj._copycat_quiet_after()
            if wait and (shortest is None or wait < shortest):
                shortest = wait
        return shortest

    def on_quiet(self, silent_s: float) -> None:
        """The worker has made no request for ``silent_s``: tell who asked to know by then."""
        for obj in list(self.quiet_watchers.values()):
            try:
                wait = obj._copycat_quiet_after()
                if wait is not None and wait <= silent_s:
                    obj._copycat_on_quiet(silent_s)
            except Exception:  # noqa: BLE001 - nobody to answer; the next request finds out
                logging.getLogger("copycat.host").exception("handling a quiet worker failed")

    def op_drop(self, obj_id: int) -> None:
        self.quiet_watchers.pop(obj_id, None)
        self.objects.pop(obj_id, None)
        runner = self.runners.pop(obj_id, None)
        if runner is not None:
            runner.pipeline.close()

    def op_shutdown(self) -> float:
        """Stop serving. Answers how long the host may live on after its last answer: until
        what its objects left running on threads of their own ends (see :meth:`linger`)."""
        self.running = False
        now = time.monotonic()
        return max((deadline - now for _, deadline in self.unfinished()), default=0.0)

    def unfinished(self) -> list[tuple[threading.Thread, float]]:
        """Work the objects left running on threads of their own that the host's exit must
        not cut short, each with the monotonic time by which it is given up: a stopped sink
        task's consumer close, whose LeaveGroup may wait behind a group join the broker holds
        (``_copycat_unfinished``, see core/runtime/in_host.py). An exit would take it along,
        and the coordinator would keep the member until its session timeout."""
        found = []
        for obj in list(self.objects.values()):
            try:
                probe = getattr(obj, "_copycat_unfinished", None)
                work = probe() if callable(probe) else None
                thread, deadline = work if isinstance(work, tuple) else (None, 0.0)
                if isinstance(thread, threading.Thread) and thread.is_alive():
                    found.append((thread, float(deadline)))
            except Exception:  # noqa: BLE001 - a plugin object's own attribute: not ours
                continue
        return found

    def linger(self) -> None:
        """Before the host exits: wait for :meth:`unfinished` work, each until its deadline."""
        for thread, deadline in self.unfinished():
            thread.join(max(0.0, deadline - time.monotonic()))

    def op_levels(self, changes: Sequence[tuple[str, int]]) -> None:
        """Apply the worker's log levels (see ``copycat_protocol.LEVELS``)."""
        for name, level in changes:
            set_level(name, level)

    # -- connectors --------------------------------------------------------------------------

    def op_task_class(self, obj_id: int) -> str:
        cls = self.objects[obj_id].task_class()
        return f"{cls.__module__}:{cls.__qualname__}"

    def op_validate(self, obj_id: int, props: Mapping[str, str]) -> dict[str, Any]:
        """The REST ``config/validate`` body for the plugin's own keys."""
        obj = self.objects[obj_id]
        infos = config_infos(obj.config(), props)
        if isinstance(obj, Connector):
            # Connector.validate may add cross-key errors beyond the ConfigDef's.
            by_name = {c["value"]["name"]: c for c in infos["configs"]}
            for value in obj.validate(props):
                entry = by_name.get(value.name)
                if entry is not None:
                    merged = list(dict.fromkeys(entry["value"]["errors"] + value.error_messages))
                    entry["value"]["errors"] = merged
            infos["error_count"] = sum(len(c["value"]["errors"]) for c in infos["configs"])
        return infos

    # -- tasks -------------------------------------------------------------------------------

    def _component(self, spec: tuple[str, Mapping[str, Any]] | None, *extra: Any) -> Any:
        if spec is None:
            return None
        target, configs = spec
        component = resolve(target)()
        component.configure(configs, *extra)
        return component

    def _configured(
        self, spec: tuple[str, Mapping[str, Any]] | None, prefix: str, what: str, *extra: Any
    ) -> Any:
        """:meth:`_component`, a ConfigException of its ``configure()`` naming the connector
        key at fault (``prefix`` + the component's key) and the stage ``what``: "No group 1"
        alone names neither the key nor the transform, and the status showed only that."""
        try:
            return self._component(spec, *extra)
        except plugin_api.ConfigException as exc:
            assert spec is not None
            raise _config_error_of(exc, prefix, f"{what} ({spec[0].replace(':', '.')})") from exc

    def _pipeline(self, spec: Mapping[str, Any]) -> Pipeline:
        from copycat_pipeline import Pipeline, TransformStage

        stages = []
        for alias, transform, predicate, negate, *rest in spec.get("transforms", ()):
            predicate_alias = rest[0] if rest else None
            predicate_prefix = f"predicates.{predicate_alias}." if predicate_alias else ""
            stages.append(
                TransformStage(
                    alias,
                    self._configured(transform, f"transforms.{alias}.", f"transform '{alias}'"),
                    self._configured(
                        predicate,
                        predicate_prefix,
                        f"predicate '{predicate_alias}' of transform '{alias}'",
                    ),
                    negate,
                )
            )
        return Pipeline(
            self._configured(spec.get("key_converter"), "key.converter.", "key.converter", True),
            self._configured(
                spec.get("value_converter"), "value.converter.", "value.converter", False
            ),
            self._configured(spec.get("header_converter"), "header.converter.", "header.converter"),
            stages,
        )

    def op_start_source_task(
        self,
        obj_id: int,
        target: str,
        props: Mapping[str, str],
        pipeline: Mapping[str, Any],
        connector_boundaries: bool = False,
    ) -> tuple[Any, ...]:
        """Start a source task; ``connector_boundaries``: it defines its own transactions
        (``transaction.boundary=connector``), so it gets a transaction context."""
        from copycat_pipeline import HostSourceTaskContext, SourceRunner
        from copycat_transactions import HostTransactionContext

        try:
            task = resolve(target)()
            if not isinstance(task, SourceTask):
                raise plugin_api.ConnectException(f"{target} is not a SourceTask")
            transactions = HostTransactionContext() if connector_boundaries else None
            runner = SourceRunner(
                task,
                self._pipeline(pipeline),
                ErrorPolicy(pipeline.get("errors"), self.stop),
                transactions,
            )
        except BaseException as exc:
            setattr(exc, protocol.TASK_SETUP_FAILED, True)  # before start(): see there
            raise
        self.objects[obj_id] = task
        self.runners[obj_id] = runner
        task.initialize(HostSourceTaskContext(props, self.callback, transactions))
        task.start(props)
        return tuple(protocol.SourceStarted(str(task.version()), runner.wants_acks))

    def op_start_sink_task(
        self,
        obj_id: int,
        target: str,
        props: Mapping[str, str],
        pipeline: Mapping[str, Any],
        errant_reporting: bool = False,
    ) -> str:
        from copycat_pipeline import HostSinkTaskContext, SinkRunner

        try:
            task = resolve(target)()
            if not isinstance(task, SinkTask):
                raise plugin_api.ConnectException(f"{target} is not a SinkTask")
            context = HostSinkTaskContext(props, errant_reporting)
            runner = SinkRunner(
                task,
                self._pipeline(pipeline),
                context,
                ErrorPolicy(pipeline.get("errors"), self.stop),
            )
        except BaseException as exc:
            setattr(exc, protocol.TASK_SETUP_FAILED, True)  # before start(): see there
            raise
        self.objects[obj_id] = task
        self.runners[obj_id] = runner
        task.initialize(context)
        task.start(props)
        return task.version()

    def op_poll(
        self, obj_id: int, acks: Sequence[tuple[Any, ...]] = (), commit: bool = False
    ) -> tuple[Any, ...]:
        """Deliver acks of earlier records (commit_record), call ``commit()`` if the worker
        committed offsets since the last poll (``commit``), then poll: one round trip."""
        runner = self.runners[obj_id]
        if acks:
            runner.acked(acks)
        if commit:
            try:
                runner.task.commit()
            except Exception:  # noqa: BLE001 - Kafka's commitSourceTask logs it, the task runs on
                logging.getLogger("copycat.host").exception(
                    "exception thrown while calling task.commit()"
                )
        return runner.poll()  # type: ignore[no-any-return]

    def op_acked(self, obj_id: int, acks: list[tuple[Any, ...]]) -> None:
        self.runners[obj_id].acked(acks)

    def op_offsets_before(self, obj_id: int, seq: int) -> list[tuple[Any, Any]] | None:
        return self.runners[obj_id].offsets_before(seq)  # type: ignore[no-any-return]

    def op_put(self, obj_id: int, batch: list[tuple[Any, ...]]) -> tuple[Any, ...]:
        result: tuple[Any, ...] = self.runners[obj_id].put(batch)
        return result

    def op_put_held(self, obj_id: int) -> tuple[Any, ...]:
        result: tuple[Any, ...] = self.runners[obj_id].put_held()
        return result

    def op_pre_commit(self, obj_id: int, offsets: Mapping[tuple[str, int], int]) -> tuple[Any, ...]:
        result: tuple[Any, ...] = self.runners[obj_id].pre_commit(offsets)
        return result

    def op_open(self, obj_id: int, partitions: list[tuple[str, int]]) -> tuple[Any, ...]:
        result: tuple[Any, ...] = self.runners[obj_id].open(partitions)
        return result

    def op_close(self, obj_id: int, partitions: list[tuple[str, int]]) -> tuple[Any, ...]:
        result: tuple[Any, ...] = self.runners[obj_id].close(partitions)
        return result

    def op_stop_task(self, obj_id: int) -> None:
        task = self.objects.pop(obj_id, None)
        runner = self.runners.pop(obj_id, None)
        try:
            if task is not None:
                task.stop()
        finally:
            if runner is not None:
                runner.pipeline.close()


def set_level(name: str, level: int) -> None:
    """Set ``name`` ("root" for the root logger) and every existing descendant to ``level``,
    as the worker does for ``PUT /admin/loggers`` (core/rest/loggers.py)."""
    if name == "root":
        logging.getLogger().setLevel(level)
        prefix = ""
    else:
        logging.getLogger(name).setLevel(level)
        prefix = name + "."
    for other, logger in list(logging.root.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger) and other.startswith(prefix):
            logger.setLevel(level)


class _RecordsToWorker(logging.Handler):
    """Writes each log record of plugin code to the host's output as one marked line
    (``copycat_protocol.LOG_RECORD_MARK``), which the worker logs under the record's own
    logger at its level. Installed on the root logger: the levels the worker sends decide
    what is written (without it, Python's last resort wrote WARNING and above, unmarked)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            import json  # with the first record: a host that logs nothing never needs it

            fields = [record.levelno, record.name, self.format(record)]
            sys.stderr.write(protocol.LOG_RECORD_MARK + json.dumps(fields) + "\n")
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - logging must never fail the plugin
            self.handleError(record)


class _PipeTransport:
    """The host's side of the worker's pipes: requests in, answers and callbacks out, and
    connector events on a pipe of their own (written whole under a lock, from any thread)."""

    def __init__(
        self,
        in_fd: int,
        out_fd: int,
        events_fd: int,
        in_region: wire.SharedRegion | None,
        out_region: wire.SharedRegion | None,
    ) -> None:
        self.in_fd, self.out_fd, self.events_fd = in_fd, out_fd, events_fd
        self.in_region, self.out_region = in_region, out_region
        self._events_lock = threading.Lock()

    def callback(self, name: str, args: tuple[Any, ...]) -> Any:
        wire.write_message(self.out_fd, ("cb", name, args), self.out_region)
        reply = wire.read_message(self.in_fd, self.in_region)
        if reply[0] != "cbret":
            raise plugin_api.ConnectException(f"unexpected reply to callback {name}: {reply[0]}")
        if not reply[1]:
            raise plugin_api.ConnectException(f"worker failed callback {name}: {reply[2]}")
        return reply[2]

    def emit(self, event: tuple[Any, ...]) -> None:
        if self.events_fd < 0:
            return  # nobody listens: only connector hosts have an events channel
        with self._events_lock:
            try:
                wire.write_message(self.events_fd, ("event", event))
            except OSError:
                pass  # the worker went away

    def serve(self, host: Host) -> None:
        # Hosts none of whose objects watches for a quiet worker (connector hosts, sources,
        # sinks with the data path in the worker) pay one dict test per request; those with a
        # watcher a method call, a clock read and a poll() on one poll object made once
        # (bench/host_serve_costs.py, docs/benchmarks.md).
        watchers = host.quiet_watchers
        poller: Any = None
        answered = time.monotonic()  # the worker's silence is counted from the last answer
        while host.running:
            if watchers and (wait := host.quiet_wait()) is not None:
                if poller is None:
                    poller = select.poll()
                    poller.register(self.in_fd, select.POLLIN)
                timeout_ms = math.ceil((answered + wait - time.monotonic()) * 1000)
                if not poller.poll(max(0, timeout_ms)):
                    host.on_quiet(time.monotonic() - answered)
                    continue
            try:
                message = wire.read_message(self.in_fd, self.in_region)
            except wire.ChannelClosed:
                return  # the worker went away: nothing left to serve
            _, op, args = message
            reply = host.dispatch(op, args)
            try:
                wire.write_message(self.out_fd, reply, self.out_region)
            except Exception as exc:  # e.g. a plugin returned something unpicklable
                error = ("err", tuple(_error_info(exc)))
                wire.write_message(self.out_fd, error, self.out_region)
            if watchers:  # the request that made the first watcher counts, too
                answered = time.monotonic()


# A host process's StopRequest: the pipe the worker writes to when the task stops (main()).
_process_stop: StopRequest | None = None


def main(argv: list[str]) -> None:
    global _process_stop
    in_fd, out_fd, events_fd, stop_fd = (int(fd) for fd in argv[:4])
    _process_stop = StopRequest(stop_fd)
    # Shared regions for large pickles (worker -> host, host -> worker) where the OS has them.
    regions = [wire.SharedRegion(int(fd)) for fd in argv[4:6]] or [None, None]
    # Plugin prints must never reach a channel; stdout is also the worker's stderr relay.
    sys.stdout = sys.stderr
    logging.getLogger().addHandler(_RecordsToWorker())
    # The worker's setting (isolation/allocator.py, GC_YOUNG_THRESHOLD): a put() or poll()
    # batch would otherwise start several young collections and make full ones frequent.
    young, *older = gc.get_threshold()
    if 0 < young < GC_YOUNG_THRESHOLD:
        gc.set_threshold(GC_YOUNG_THRESHOLD, *older)
    transport = _PipeTransport(in_fd, out_fd, events_fd, *regions)
    host = Host(transport.callback, transport.emit)
    transport.serve(host)
    host.linger()
    _exit(host)


def _exit(host: Host) -> None:
    """End the process once it has served its last answer, without the interpreter's own
    finalization. What that does for the host is done here, in its order: wait for the
    threads it would wait for, run the atexit functions, let the host's objects go (their
    finalizers run: a plugin's unclosed file is flushed, a Kafka client destroyed), flush the
    output. What is left out is tearing down every module, which the worker waits for: 0.1-0.2 s
    per host on an idle 2-core machine, but 3-4 s each when 60 hosts ended at once (a bulk
    stop, a worker's shutdown), where this way they end within about a second."""
    import atexit

    shutdown = getattr(threading, "_shutdown", None)  # what Py_FinalizeEx calls first
    if callable(shutdown):
        shutdown()
    atexit._run_exitfuncs()
    host.objects.clear()
    host.runners.clear()
    host.quiet_watchers.clear()
    gc.collect()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # noqa: BLE001 - nothing left to report it to
            pass
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
