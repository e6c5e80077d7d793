"""A task whose data path runs in its plugin host (``task.data.path=host``), as the worker sees it.

The worker keeps the control plane: configs, the offset store, status, pause/resume, stops,
deadlines and kills. The plugin host gets the rest: the Kafka client, the task loop,
converters and transforms, next to the plugin (:mod:`core.runtime.in_host`), so a record never
crosses a process boundary. Isolation is unchanged: plugin code still runs only in the host
process, whose crash, hang (past ``plugin.call.timeout.ms``) or memory limit fails the task
and nothing else.

What the host gets parent-first, after ``plugin_api``: :data:`SHARED_MODULES`, linked from
the runtime's own installation into one directory (:func:`runtime_root`); the plugin's own
modules stay child-first. A plugin environment that ships one of them in another version, or
that runs another Python (confluent_kafka is a compiled extension), keeps the split data path
(:func:`cannot_share`).

:class:`HostedTaskLoop` is the :class:`~core.runtime.loop.TaskLoop` the worker's driver runs:
each ``iteration()`` is one request, in which the host iterates for up to
:data:`RUN_SLICE_S` while records move, or for up to :data:`IDLE_SLICE_S` while none do (a
pause, resume or stop wakes it: :meth:`HostedTaskLoop.wake`, the host's stop pipe); pause
state goes with the next request, offsets come back through the host's callbacks, counters
and log records with each answer.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from core.runtime.counters import SnapshotsSince
from core.runtime.loop import SOURCE_PAUSED_WAIT_S
from core.runtime.services import TaskServices
from core.runtime.spec import TaskSpec
from isolation import HostClient
from plugin_api import ConnectException

__all__ = [
    "OFFSETS_GET",
    "OFFSETS_PUT",
    "IDLE_SLICE_S",
    "RUN_SLICE_S",
    "SHARED_MODULES",
    "TOPIC_SEEN",
    "HostedTaskLoop",
    "SharingFacts",
    "cannot_share",
    "runtime_root",
    "start_hosted",
]

log = logging.getLogger("copycat.runtime")

# Top-level modules a hosted data path imports beyond the standard library and plugin_api
# (tests/unit/test_import_rules.py checks that the closure of core.runtime.in_host stays
# within them), with the distribution each comes from.
SHARED_MODULES = {"core": "copycat", "isolation": "copycat", "confluent_kafka": "confluent-kafka"}
# How long the host iterates per request before it answers. The driver checks for stop and
# pause requests between requests, so this bounds how late it sees one; a request costs
# ~0.1-0.2 ms, so 50 ms slices spend well under 1 % on the round trip.
RUN_SLICE_S = 0.05
# How long the host goes on iterating an idle task (nothing moved) before it answers: an idle
# task then costs one round trip (pickling, pipe I/O and a wake-up in both processes) per
# IDLE_SLICE_S instead of one per idle iteration (a FileStreamSource's 0.1 s poll, a sink's
# 0.2 s consumer poll); the records that arrive meanwhile move at once, in the host, and a
# pause, resume or stop ends it at once (HostedTaskLoop.wake, the host's stop pipe). What
# waits for the answer: the task's counters (its metrics) and the runtime's log records from
# the host, and the worker's log level changes; at most a quarter of plugin.call.timeout.ms.
IDLE_SLICE_S = 1.0
# Callbacks from the host (core/runtime/in_host.py) to the worker: read committed source
# offsets; store and flush acknowledged ones.
OFFSETS_GET = "offsets"
OFFSETS_PUT = "offsets.put"
# ... and: a source task is about to produce to a topic for the first time. The worker knows
# it before the first record is sent, as when the loop runs in the worker: active topics
# (KIP-558) are read by the herder at any moment, e.g. right before it stops the task, and a
# topic learnt only from the next answer would be lost if the task's final commit sent it.
TOPIC_SEEN = "topic.seen"
# What the host's ``new`` makes for a hosted task.
HOSTED_TASK_TARGET = "core.runtime.in_host:HostedTask"


def _package_dir(name: str) -> Path:
    module = sys.modules.get(name) or __import__(name)
    return Path(module.__file__ or "").resolve().parent


def runtime_root() -> Path:
    """A directory holding links to exactly the :data:`SHARED_MODULES` of this runtime (and
    confluent_kafka's bundled libraries and metadata, which its import and a host's conflict
    check need), for hosts' ``sys.path``. Putting the runtime's site-packages there instead
    would leak every runtime dependency into plugins. Made once per installation."""
    entries: dict[str, Path] = {name: _package_dir(name) for name in SHARED_MODULES}
    site = entries["confluent_kafka"].parent
    for extra in sorted(site.glob("confluent_kafka.libs")) + sorted(
        site.glob("confluent_kafka-*.dist-info")
    ):
        entries[extra.name] = extra
    digest = hashlib.sha256(
        "\n".join(f"{k}={v}" for k, v in sorted(entries.items())).encode()
    ).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "copycat"
    root = cache / "runtime" / digest
    for name, target in entries.items():
        link = root / name
        if link.exists():
            continue
        root.mkdir(parents=True, exist_ok=True)
        # One temporary name per thread, not per process: a distributed worker starts its
        # tasks in parallel, and on a new installation they all make the root at once.
        tmp = root / f".{name}.{os.getpid()}.{threading.get_ident()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(target, target_is_directory=target.is_dir())
        os.replace(tmp, link)
    return root


def _normalise(distribution: str) -> str:
    name, _, version = distribution.partition("==")
    return f"{name.lower().replace('_', '-').replace('.', '-')}=={version}"


def _runtime_distributions() -> dict[str, str]:
    found = {}
    for module, dist in SHARED_MODULES.items():
        try:
            found[module] = _normalise(f"{dist}=={importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            found[module] = _normalise(f"{dist}==")  # a source checkout: no metadata
    return found


class SharingFacts(Protocol):
    """What :func:`cannot_share` reads of an environment (an
    :class:`isolation.PluginEnvironment`)."""

    @property
    def location(self) -> Path: ...

    @property
    def attached(self) -> bool: ...

    def top_level_modules(self) -> dict[str, str]: ...

    def python_version(self) -> tuple[int, int] | None: ...


def cannot_share(environments: Iterable[SharingFacts]) -> str | None:
    """Why a task whose plugin (first) and pipeline stages live in ``environments`` cannot
    have its data path in its host, or None if it can."""
    ours = _runtime_distributions()
    for index, env in enumerate(environments):
        if index == 0 and not env.attached:
            version = env.python_version()
            if version is not None and version != sys.version_info[:2]:
                return (
                    f"{env.location} runs Python {version[0]}.{version[1]}, the runtime's "
                    f"Kafka client is built for {sys.version_info[0]}.{sys.version_info[1]}"
                )
        shipped = env.top_level_modules()
        for module in SHARED_MODULES:
            owner = shipped.get(module)
            if owner is not None and _normalise(owner) != ours[module]:
                return (
                    f"{env.location} ships its own {module} ({owner}); the runtime's is "
                    f"{ours[module]}"
                )
    return None


def start_hosted(
    spec: TaskSpec,
    services: TaskServices,
    *,
    on_host: Callable[[HostClient], None],
    should_stop: Callable[[], bool],
) -> HostedTaskLoop:
    """Start ``spec``'s host with the data path in it, build the task there, and return the
    worker's loop for it (not yet started). On any failure the host is closed."""
    # A source's store (the connector's own offsets topic merged with the worker's, see
    # core/stores/task_offsets.py); closed when the loop stops, or here on a failed start.
    offsets = services.offsets_for(spec)

    def offsets_put(entries: list[tuple[Any, Any]]) -> None:
        offsets.put(spec.connector, entries)
        offsets.flush()

    topics: set[str] = set()  # the loop's, shared: the callback may come before the loop exists

    try:
        host = services.hosts.start(
            spec.plugin,
            spec.name,
            callbacks={
                OFFSETS_GET: lambda partitions: offsets.get(spec.connector, partitions),
                OFFSETS_PUT: offsets_put,
                TOPIC_SEEN: topics.add,
            },
            call_timeout_s=spec.settings.call_timeout_s,
            memory_limit_bytes=spec.settings.memory_limit_bytes,
            parent_first=(str(runtime_root()),),
        )
    except BaseException:
        offsets.close()
        raise
    on_host(host)
    try:
        if should_stop():
            raise ConnectException(f"task {spec.name} was stopped while it started")
        import_paths = {
            plugin.location: services.hosts.import_path(plugin)
            for _, plugin in spec.pipeline.attachments()
        }
        handle = host.new(HOSTED_TASK_TARGET)
        loop = HostedTaskLoop(spec, host, handle, topics, on_stop=offsets.close)
        loop.call("start", spec, import_paths, logging.getLogger("copycat").getEffectiveLevel())
        return loop
    except BaseException:
        host.close(spec.settings.graceful_timeout_s)
        offsets.close()
        raise


class HostedTaskLoop:
    """The worker's :class:`~core.runtime.loop.TaskLoop` for a task running in its host.

    Called by the task's driver thread only (as any loop); the host's answers carry the loop's
    counters, its topics and the runtime's log records, which are logged here.
    """

    def __init__(
        self,
        spec: TaskSpec,
        host: HostClient,
        handle: int,
        topics: set[str] | None = None,
        *,
        on_stop: Callable[[], None] = lambda: None,
    ) -> None:
        self.spec = spec
        self._on_stop = on_stop  # releases what the task alone used (its offsets topic reader)
        self.host = host
        self.handle = handle
        self._paused = False
        # How long an idle request may keep the host iterating (IDLE_SLICE_S, bounded by the
        # request's deadline).
        self._idle_s = min(IDLE_SLICE_S, spec.settings.call_timeout_s / 4)
        # The host's loop's: its clock is time.monotonic too (CLOCK_MONOTONIC, machine-wide).
        self.progress: tuple[int, float] = (0, 0.0)
        # The host's loop's counters, from its answers, until the driver takes them.
        self._counters = SnapshotsSince()
        # Added to by the TOPIC_SEEN callback (on this driver thread, inside a request) and by
        # answers; KIP-558's topics used since the last reset. A reset (forget_topics, another
        # thread) empties it, and the host's loop forgets its own at the next slice; until the
        # host has been told, its answers' topics are from before the reset and are ignored.
        self._topics: set[str] = set() if topics is None else topics
        self._resets = 0  # resets asked so far
        self._resets_told = 0  # ... of which the host's loop has forgotten its topics
        self._topics_lock = threading.Lock()  # an answer's topics are not added past a reset

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def records_moved(self) -> int:
        return self.progress[0]

    def topics(self) -> set[str]:
        return set(self._topics)

    def forget_topics(self) -> None:
        with self._topics_lock:
            self._resets += 1
            self._topics.clear()
        self.host.wake()  # an idle slice answers now: the next one tells the host

    def take_counters(self) -> tuple[float, ...] | None:
        counters = self._counters.take()
        return None if counters is None else tuple(counters)

    def call(self, method: str, *args: Any, timeout_s: float | None = None) -> Any:
        """One request to the hosted task; its log records are logged here even when it
        fails (what the loop logged before failing explains the failure)."""
        resets = self._resets
        telling = resets != self._resets_told and method in ("poll", "put")
        if telling:
            args = (*args, True)  # run(..., forget_topics=True)
        try:
            answer = self.host.call(self.handle, method, *args, timeout_s=timeout_s)
        except BaseException:
            if self.host.alive:
                try:
                    self._log(self.host.call(self.handle, "logs"))
                except Exception:  # noqa: BLE001 - the original failure matters more
                    pass
            raise
        if isinstance(answer, tuple):
            moved, (records_moved, at), topics, records, counters = answer
            self.progress = (records_moved, at)
            self._counters.add(counters)
            if telling:
                self._resets_told = resets
            with self._topics_lock:
                if self._resets_told == self._resets:
                    self._topics.update(topics)
            self._log(records)
            return moved
        return answer

    @staticmethod
    def _log(records: list[tuple[str, int, str]]) -> None:
        for name, level, text in records:
            logging.getLogger(name).log(level, "%s", text)

    def start(self) -> None:
        self.call("start_loop")

    def iteration(self) -> int:
        # Named after the plugin call a slice makes, for the host's crash messages.
        slice_call = "poll" if self.spec.kind == "source" else "put"
        # A paused source's iteration waits for nothing (its driver waits paused_wait_s);
        # every other iteration waits on the task's poll() or its consumer.
        idle_s = 0.0 if self._paused and self.spec.kind == "source" else self._idle_s
        moved: int = self.call(slice_call, self._paused, RUN_SLICE_S, idle_s)
        return moved

    def wake(self) -> None:
        """Any thread: end the host's idle iterating now (a pause, resume or stop to act on)."""
        self.host.wake()

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        self._paused = False

    @property
    def paused_wait_s(self) -> float:
        """The hosted loop's (each wait saves a round trip to the host)."""
        return SOURCE_PAUSED_WAIT_S if self.spec.kind == "source" else 0.0

    def stop(self, *, failed: bool, timeout_s: float, fenced: bool = False) -> None:
        try:
            if self.host.alive:
                self.call("stop", failed, timeout_s, fenced)
        finally:
            self._on_stop()
