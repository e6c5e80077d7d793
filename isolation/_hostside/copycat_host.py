"""The plugin host process: runs plugin code on behalf of the worker (stdlib + plugin_api only).

Started by the worker from a plugin venv's interpreter as::

    <venv>/bin/python -I -c <bootstrap> <plugin_api dir> <this dir> <in fd> <out fd> \
        [<in region fd> <out region fd>]

The bootstrap puts the runtime's ``plugin_api`` first on ``sys.path`` (parent-first) and the
venv's site-packages stay where the interpreter put them (child-first for everything else).
It serves one request at a time; a request may call back into the worker (e.g. to read source
offsets) before it answers. Anything the plugin writes to stdout goes to stderr, which the
worker relays to its log and keeps the tail of for crash reports.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import copycat_wire as wire
from copycat_errors import ErrorPolicy
from copycat_loader import LocationRegistry, ModuleConflictError, resolve
from copycat_pipeline import (
    HostSinkTaskContext,
    HostSourceTaskContext,
    Pipeline,
    SinkRunner,
    SourceRunner,
    TransformStage,
)
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

# The young-generation threshold of the cyclic collector: the worker's value, see
# isolation/allocator.py (this module may import only the standard library and plugin_api).
GC_YOUNG_THRESHOLD = 50_000


class HostConnectorContext(ConnectorContext):
    """Queues the connector's requests; the worker collects them with the ``events`` op."""

    def __init__(self, host: Host, obj_id: int) -> None:
        self._host = host
        self._obj_id = obj_id

    def request_task_reconfiguration(self) -> None:
        self._host.events.append((self._obj_id, "request_task_reconfiguration", None))

    def raise_error(self, exc: BaseException) -> None:
        self._host.events.append((self._obj_id, "raise_error", _error_info(exc)))


def _error_info(exc: BaseException) -> dict[str, Any]:
    kind = "other"
    if isinstance(exc, RetriableException):
        kind = "retriable"
    elif isinstance(exc, DataException):
        kind = "data"
    elif isinstance(exc, ConfigException):
        kind = "config"
    elif isinstance(exc, ModuleConflictError):
        kind = "conflict"
    elif isinstance(exc, plugin_api.ConnectException):
        kind = "connect"
    return {
        "type": f"{type(exc).__module__}.{type(exc).__qualname__}",
        "message": str(exc),
        "kind": kind,
        "traceback": "".join(traceback.format_exception(exc)),
        "timeout_ms": getattr(exc, "copycat_timeout_ms", None),
    }


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
        return [], [f"{name}.config() raised {type(exc).__name__}: {exc}"]
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


class Host:
    def __init__(
        self,
        in_fd: int,
        out_fd: int,
        in_region: wire.SharedRegion | None = None,
        out_region: wire.SharedRegion | None = None,
    ) -> None:
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.in_region = in_region
        self.out_region = out_region
        self.objects: dict[int, Any] = {}
        self.runners: dict[int, Any] = {}
        self.events: list[tuple[int, str, Any]] = []
        self.locations = LocationRegistry()
        self._serving_thread = threading.get_ident()
        self.running = True

    # -- channel -----------------------------------------------------------------------------

    def callback(self, name: str, args: tuple[Any, ...]) -> Any:
        """Ask the worker something while the current request is being served."""
        if threading.get_ident() != self._serving_thread:
            raise plugin_api.ConnectException(
                f"{name} may only be used from the thread the runtime calls the task on"
            )
        wire.write_message(self.out_fd, ("cb", name, args), self.out_region)
        reply = wire.read_message(self.in_fd, self.in_region)
        if reply[0] != "cbret":
            raise plugin_api.ConnectException(f"unexpected reply to callback {name}: {reply[0]}")
        if not reply[1]:
            raise plugin_api.ConnectException(f"worker failed callback {name}: {reply[2]}")
        return reply[2]

    def serve(self) -> None:
        while self.running:
            try:
                message = wire.read_message(self.in_fd, self.in_region)
            except wire.ChannelClosed:
                return  # the worker went away: nothing left to serve
            _, op, args = message
            handler: Callable[..., Any] | None = getattr(self, f"op_{op}", None)
            try:
                if handler is None:
                    raise plugin_api.ConnectException(f"unknown plugin host operation {op!r}")
                result = handler(*args)
                reply: tuple[Any, ...] = ("ok", result)
            except BaseException as exc:  # noqa: BLE001 - every failure goes back to the worker
                if isinstance(exc, KeyboardInterrupt):
                    raise
                reply = ("err", _error_info(exc))
            try:
                wire.write_message(self.out_fd, reply, self.out_region)
            except Exception as exc:  # e.g. a plugin returned something unpicklable
                wire.write_message(self.out_fd, ("err", _error_info(exc)), self.out_region)

    # -- generic operations ------------------------------------------------------------------

    def op_hello(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "executable": sys.executable,
            "prefix": sys.prefix,
            "plugin_api": os.path.dirname(plugin_api.__file__),
        }

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
        """Kind, dotted class name and version() of each entry point value (install probe)."""
        described: list[dict[str, Any]] = []
        for target in targets:
            try:
                cls = resolve(target)
                if not isinstance(cls, type):
                    raise TypeError(f"{target} is not a class")
                kinds = _plugin_kinds(cls)
                if not kinds:
                    raise TypeError(f"{cls.__qualname__} implements no Copycat plugin interface")
                instance = cls()
                version = instance.version() if hasattr(instance, "version") else "undefined"
                definitions, config_errors = _config_definitions(instance)
                described.append(
                    {
                        "kind": kinds[0],
                        "kinds": kinds,
                        "class_name": f"{cls.__module__}.{cls.__qualname__}",
                        "version": str(version),
                        "aliases": list(getattr(cls, "KAFKA_CLASS_ALIASES", ())),
                        "config": definitions,
                        "config_errors": config_errors,
                    }
                )
            except Exception as exc:  # noqa: BLE001 - reported per entry point
                described.append({"error": f"{type(exc).__name__}: {exc}"})
        return described

    def op_drop(self, obj_id: int) -> None:
        self.objects.pop(obj_id, None)
        runner = self.runners.pop(obj_id, None)
        if runner is not None:
            runner.pipeline.close()

    def op_events(self) -> list[tuple[int, str, Any]]:
        events, self.events = self.events, []
        return events

    def op_shutdown(self) -> None:
        self.running = False

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

    def _pipeline(self, spec: Mapping[str, Any]) -> Pipeline:
        stages = []
        for alias, transform, predicate, negate in spec.get("transforms", ()):
            stages.append(
                TransformStage(
                    alias, self._component(transform), self._component(predicate), negate
                )
            )
        return Pipeline(
            self._component(spec.get("key_converter"), True),
            self._component(spec.get("value_converter"), False),
            self._component(spec.get("header_converter")),
            stages,
        )

    def op_start_source_task(
        self, obj_id: int, target: str, props: Mapping[str, str], pipeline: Mapping[str, Any]
    ) -> dict[str, Any]:
        task = resolve(target)()
        if not isinstance(task, SourceTask):
            raise plugin_api.ConnectException(f"{target} is not a SourceTask")
        runner = SourceRunner(task, self._pipeline(pipeline), ErrorPolicy(pipeline.get("errors")))
        self.objects[obj_id] = task
        self.runners[obj_id] = runner
        task.initialize(HostSourceTaskContext(props, self.callback))
        task.start(props)
        return {"version": task.version(), "wants_acks": runner.wants_acks}

    def op_start_sink_task(
        self,
        obj_id: int,
        target: str,
        props: Mapping[str, str],
        pipeline: Mapping[str, Any],
        errant_reporting: bool = False,
    ) -> str:
        task = resolve(target)()
        if not isinstance(task, SinkTask):
            raise plugin_api.ConnectException(f"{target} is not a SinkTask")
        context = HostSinkTaskContext(props, errant_reporting)
        runner = SinkRunner(
            task, self._pipeline(pipeline), context, ErrorPolicy(pipeline.get("errors"))
        )
        self.objects[obj_id] = task
        self.runners[obj_id] = runner
        task.initialize(context)
        task.start(props)
        return task.version()

    def op_poll(
        self, obj_id: int, acks: Sequence[tuple[Any, ...]] = ()
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, Any]]]:
        """Deliver acks of earlier records (commit_record), then poll: one round trip."""
        runner = self.runners[obj_id]
        if acks:
            runner.acked(acks)
        return runner.poll()  # type: ignore[no-any-return]

    def op_acked(self, obj_id: int, acks: list[tuple[Any, ...]]) -> None:
        self.runners[obj_id].acked(acks)

    def op_put(self, obj_id: int, batch: list[tuple[Any, ...]]) -> dict[str, Any]:
        result: dict[str, Any] = self.runners[obj_id].put(batch)
        return result

    def op_pre_commit(self, obj_id: int, offsets: Mapping[tuple[str, int], int]) -> dict[str, Any]:
        result: dict[str, Any] = self.runners[obj_id].pre_commit(offsets)
        return result

    def op_open(self, obj_id: int, partitions: list[tuple[str, int]]) -> dict[str, Any]:
        result: dict[str, Any] = self.runners[obj_id].open(partitions)
        return result

    def op_close(self, obj_id: int, partitions: list[tuple[str, int]]) -> dict[str, Any]:
        result: dict[str, Any] = self.runners[obj_id].close(partitions)
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


def main(argv: list[str]) -> None:
    in_fd, out_fd = int(argv[0]), int(argv[1])
    # Shared regions for large pickles (worker -> host, host -> worker) where the OS has them.
    regions = [wire.SharedRegion(int(fd)) for fd in argv[2:4]] or [None, None]
    # Plugin prints must never reach a channel; stdout is also the worker's stderr relay.
    sys.stdout = sys.stderr
    # The worker's setting (isolation/allocator.py, GC_YOUNG_THRESHOLD): a put() or poll()
    # batch would otherwise start several young collections and make full ones frequent.
    young, *older = gc.get_threshold()
    if 0 < young < GC_YOUNG_THRESHOLD:
        gc.set_threshold(GC_YOUNG_THRESHOLD, *older)
    Host(in_fd, out_fd, *regions).serve()


if __name__ == "__main__":
    main(sys.argv[1:])
