"""A task's data path inside its plugin host: the loop, its Kafka clients and the plugin together.

Runs in the plugin host process, never in the worker. The worker (:mod:`core.runtime.hosted`)
starts the task's host with the runtime's data path modules parent-first, makes a
:class:`HostedTask` there with the host's ``new`` operation and drives it with ``call``s:
``start(spec, ...)``, ``start_loop()``, then ``run(paused, slice)`` per slice of iterations,
and ``stop(failed, timeout)``. Inside, it is the ordinary task runtime: :func:`build_task`
with services that reach the plugin through a same-thread channel (:mod:`isolation.direct`),
make Kafka clients here, and store source offsets in the worker's offset store through the
host's callback.

Threads: everything here runs on the host's serving thread, inside one of the worker's
requests (callbacks to the worker are only possible from there). Log records of the runtime's
``copycat.*`` loggers, from any thread, are kept and handed to the worker with each answer,
which logs them as its own (so they pass its secret scrubbing and its handlers).

Imports: only the standard library, plugin_api, confluent_kafka and the data path's own
modules, which is what the host has (tests/unit/test_import_rules.py checks the closure).
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from core.offsets import WriteWaiter
from core.runtime.build import build_task
from core.runtime.hosted import OFFSETS_GET, OFFSETS_PUT, TOPIC_SEEN
from core.runtime.loop import TaskLoop
from core.runtime.services import ConfluentClients, TaskServices
from core.runtime.sink import SinkTaskLoop
from core.runtime.source import SourceTaskLoop
from core.runtime.spec import DATA_PATH_WORKER, PluginRef, TaskSpec
from isolation import HostClient
from isolation.direct import DirectHost
from plugin_api import ConnectException

__all__ = ["HostedTask"]
# Log records kept between two answers to the worker; beyond, the oldest are dropped (and
# counted): a task logging in a tight loop must not grow the host without bound.
MAX_KEPT_LOG_RECORDS = 1_000
# The runtime's loggers, whose records go to the worker (plugins' own go to stderr, relayed as
# plugin output, exactly as when the data path runs in the worker).
RUNTIME_LOGGER = "copycat"
# librdkafka's session.timeout.ms when the consumer's config does not set it.
DEFAULT_SESSION_TIMEOUT_MS = 45_000
# How long past the session timeout a stopped sink's host waits for the consumer's close it
# left running: the final commit's and the LeaveGroup's answers, after the held join's.
UNFINISHED_CLOSE_GRACE_S = 5.0
# While a slice is idle (kept iterating for the worker's ``idle_s``), how long an iteration
# that moved nothing takes at least, waiting for a wake-up if it did not wait that long itself:
# the worker driver's own backoff (core/worker.py IDLE_BACKOFF_S), so that a task whose poll()
# returns at once does not spin here either.
IDLE_BACKOFF_S = 0.01

Callback = Callable[[str, tuple[Any, ...]], Any]


class _Wakes(Protocol):
    """The host's stop request (``copycat_errors.StopRequest``), which the worker's stops and
    wake-ups (a pause or resume) end the wait of."""

    def wait_woken(self, timeout_s: float) -> bool: ...


class _NoWakes:
    """Outside a host (never woken: an idle slice just runs its course)."""

    def wait_woken(self, timeout_s: float) -> bool:
        time.sleep(max(0.0, timeout_s))
        return False


class _WorkerOffsets:
    """The worker's offset store, seen from the host (:class:`core.offsets.OffsetStore`)."""

    def __init__(self, callback: Callback) -> None:
        self._callback = callback
        self._pending: list[tuple[Any, Any]] = []

    def get(self, connector: str, partitions: Iterable[Mapping[str, Any]]) -> dict[Any, Any]:
        found: dict[Any, Any] = self._callback(OFFSETS_GET, ([dict(p) for p in partitions],))
        return found

    def put(self, connector: str, entries: Iterable[tuple[Mapping[str, Any], Any]]) -> WriteWaiter:
        self._pending.extend(entries)
        return self.flush

    def flush(self) -> None:
        """Hand what was put to the worker, which stores and flushes it before answering."""
        entries, self._pending = self._pending, []
        if entries:
            self._callback(OFFSETS_PUT, (entries,))

    def connector_offsets(self, connector: str) -> list[tuple[dict[str, Any], Any]]:
        raise ConnectException("a task's offsets are listed by the worker, not its plugin host")


class _DirectHosts:
    """The plugin is in this process: its "host" is a same-thread channel; the pipeline's
    other plugin environments are attached from the paths the worker resolved."""

    def __init__(self, import_paths: Mapping[str, str]) -> None:
        self._import_paths = dict(import_paths)

    def start(
        self,
        plugin: PluginRef,
        name: str,
        *,
        callbacks: Mapping[str, Callable[..., Any]],
        call_timeout_s: float,
        memory_limit_bytes: int,
        parent_first: tuple[str, ...] = (),
    ) -> HostClient:
        channel = DirectHost(name=name, callbacks=callbacks)
        channel.start()
        return HostClient(channel)

    def import_path(self, plugin: PluginRef) -> str:
        return self._import_paths[plugin.location]


class _KeptLogs(logging.Handler):
    """Keeps the runtime's log records (any thread) until the next answer takes them."""

    def __init__(self) -> None:
        super().__init__()
        self.records: collections.deque[tuple[str, int, str]] = collections.deque(
            maxlen=MAX_KEPT_LOG_RECORDS
        )
        self.dropped = 0
        self._formatter = logging.Formatter()

    def emit(self, record: logging.LogRecord) -> None:
        """Called by ``Handler.handle``, under the handler's lock."""
        try:
            text = record.getMessage()
            if record.exc_info:
                text += "\n" + self._formatter.formatException(record.exc_info)
        except Exception:  # noqa: BLE001 - a bad log call must not fail the task
            text = f"{record.msg!r} (unformattable: {record.args!r})"
        if len(self.records) == self.records.maxlen:
            self.dropped += 1
        self.records.append((record.name, record.levelno, text))

    def take(self) -> list[tuple[str, int, str]]:
        self.acquire()
        try:
            taken = list(self.records)
            self.records.clear()
            dropped, self.dropped = self.dropped, 0
        finally:
            self.release()
        if dropped:
            taken.append(
                (RUNTIME_LOGGER, logging.WARNING, f"{dropped} log records dropped in the host")
            )
        return taken


class HostedTask:
    """One task's loop in its plugin host (see the module docstring)."""

    def __init__(self) -> None:
        self._callback: Callback | None = None
        self._loop: TaskLoop | None = None
        self._inner: HostClient | None = None
        self._paused = False
        self._deadline = math.inf
        self._logs = _KeptLogs()
        # How long the worker may make no request while the loop runs before a sink task
        # leaves its consumer group (None: never, a source task; see _copycat_on_quiet).
        self._quiet_after_s: float | None = None
        self._looping = False  # between start_loop() and stop()
        # The consumer's close a stop left running, and until when the host waits for it.
        self._unfinished: tuple[threading.Thread, float] | None = None
        self._quiet = False  # gone quiet, not heard of since
        self._wakes: _Wakes = _NoWakes()
        # A sink's positions when its last slice began (see run's forget_topics).
        self._slice_positions: dict[tuple[str, int], int] = {}

    def _copycat_bind_stop(self, stop: _Wakes) -> None:
        """Called by the host right after ``new``: the worker's stops and wake-ups."""
        self._wakes = stop

    def _copycat_bind_host(self, callback: Callback) -> None:
        """Called by the host right after ``new``: how this object reaches the worker."""
        self._callback = callback

    def _set_inner(self, host: HostClient) -> None:
        self._inner = host

    def _slice_over(self) -> bool:
        """The loop's ``should_stop``: its waits on the broker return to the driver (here:
        end the slice, so the worker gets to check for stops and pauses)."""
        return time.monotonic() >= self._deadline

    def start(self, spec: TaskSpec, import_paths: Mapping[str, str], log_level: int) -> None:
        """Build the task as the worker would, against the plugin in this process."""
        if self._callback is None:
            raise ConnectException("HostedTask runs only in a plugin host (made with new)")
        runtime_log = logging.getLogger(RUNTIME_LOGGER)
        runtime_log.addHandler(self._logs)
        runtime_log.setLevel(log_level)
        runtime_log.propagate = False
        services = TaskServices(
            hosts=_DirectHosts(import_paths),
            offsets=_WorkerOffsets(self._callback),
            clients=ConfluentClients(),
        )
        self._loop = build_task(
            dataclasses.replace(spec, data_path=DATA_PATH_WORKER),
            services,
            on_host=self._set_inner,
            should_stop=self._slice_over,
        )
        if isinstance(self._loop, SourceTaskLoop):
            callback = self._callback
            self._loop.on_new_topic = lambda topic: callback(TOPIC_SEEN, (topic,))
        if isinstance(self._loop, SinkTaskLoop):
            session_ms = spec.clients.consumer.get("session.timeout.ms")
            self._quiet_after_s = int(session_ms or DEFAULT_SESSION_TIMEOUT_MS) / 1000

    def start_loop(self) -> tuple[Any, ...]:
        loop = self._running()
        loop.start()
        self._looping = True
        return self._answer(loop, 0)

    def _copycat_quiet_after(self) -> float | None:
        """Called by the host before it waits for the next request (see ``copycat_host``)."""
        if not self._looping or self._quiet:
            return None
        return self._quiet_after_s

    def _copycat_on_quiet(self, silent_s: float) -> None:
        """The worker has made no request for the consumer's session timeout while the sink
        runs: it is frozen (SIGSTOP, a paused VM) or stuck. Its consumer lives here, where
        librdkafka's thread would go on heartbeating and keep the partitions from the group's
        other members until max.poll.interval.ms; a frozen Kafka Connect worker's consumer is
        dropped after its session timeout. So leave the group now, committing nothing and
        calling no plugin code; the next request rejoins (see SinkTaskLoop.relinquish)."""
        self._quiet = True
        loop = self._loop
        if isinstance(loop, SinkTaskLoop):
            loop.relinquish(silent_s)

    def _heard_again(self) -> None:
        self._quiet = False  # the loop itself rejoins (or, stopping, closes what it lost)

    def run(
        self, paused: bool, slice_s: float, idle_s: float = 0.0, forget_topics: bool = False
    ) -> tuple[Any, ...]:
        """Iterate for up to ``slice_s`` (at least once) while records move; an iteration that
        moved nothing ends the slice, unless nothing moved in it at all: an idle task then
        goes on iterating here (each iteration lasting at least :data:`IDLE_BACKOFF_S`) for up to
        ``idle_s``, so that it costs the worker and this host one round trip per ``idle_s``
        rather than one per iteration, as its loop would cost in the worker. The worker's
        wake-up (a pause or resume) or stop request ends that at once; a request that pauses
        or resumes is answered without idling (the driver reports the state then). Answers
        ``(moved, progress, topics, log records, counters)``. ``forget_topics``: the
        connector's active topics were reset; the loop forgets its own first. Called as
        ``poll`` (a source task) or ``put`` (a sink task): the host's crash and deadline
        messages name the call ("... during poll"), as they do when the data path runs in the
        worker."""
        loop = self._running()
        self._heard_again()
        if isinstance(loop, SinkTaskLoop):
            if forget_topics:
                # The worker reset the topics while its previous slice ran, and that slice
                # may have read and recorded records after the reset (an idle slice's
                # commit accounts a batch the moment it is read): what it moved counts.
                loop.forget_topics(self._slice_positions)
            self._slice_positions = loop.positions()
        elif forget_topics:
            loop.forget_topics()
        if paused != self._paused:
            (loop.pause if paused else loop.resume)()
            self._paused = paused
            idle_s = 0.0  # the driver reports the new state after this answer: no idling
        now = time.monotonic()
        self._deadline = now + slice_s
        idle_until = now + idle_s
        moved = 0
        began = now
        try:
            while True:
                count = loop.iteration()
                now = time.monotonic()
                if count:
                    moved += count
                    if now >= self._deadline:
                        break
                elif moved or now >= idle_until:
                    break
                # Idle: an iteration that waited (on the task's poll(), the consumer) is not
                # followed by a wait of its own, which would cost a wake-up more each time.
                elif self._wakes.wait_woken(max(0.0, IDLE_BACKOFF_S - (now - began))):
                    break
                else:
                    began = time.monotonic()  # only an idle slice's next iteration reads it
        finally:
            self._deadline = math.inf
        return self._answer(loop, moved)

    poll = run
    put = run

    def stop(self, failed: bool, timeout_s: float, fenced: bool = False) -> tuple[Any, ...]:
        """The loop's stop (its final commit, none when fenced), then the plugin's host
        channel."""
        loop = self._running()
        self._looping = False
        self._heard_again()
        self._deadline = -math.inf  # stopping: waits on the broker end at once, as in the worker
        try:
            loop.stop(failed=failed, timeout_s=timeout_s, fenced=fenced)
        finally:
            if self._inner is not None:
                self._inner.close(timeout_s)
            if isinstance(loop, SinkTaskLoop) and loop.unfinished_close is not None:
                # Bounded as the group join it waits behind: a member that departed without
                # leaving keeps it held for its session timeout (the same setting, as a rule,
                # as this consumer's), then the commit and LeaveGroup behind it are answered.
                session_s = self._quiet_after_s or DEFAULT_SESSION_TIMEOUT_MS / 1000
                self._unfinished = (
                    loop.unfinished_close,
                    time.monotonic() + session_s + UNFINISHED_CLOSE_GRACE_S,
                )
        return self._answer(loop, 0)

    def _copycat_unfinished(self) -> tuple[threading.Thread, float] | None:
        """Called by the host before it exits (see ``copycat_host.Host.unfinished``): the
        consumer's close the stop left running, which the exit must not cut short (its
        LeaveGroup would never go out), and until when to wait for it."""
        return self._unfinished

    def logs(self) -> list[tuple[str, int, str]]:
        """Log records not yet handed over (the worker asks after a failed call)."""
        return self._logs.take()

    def _running(self) -> TaskLoop:
        if self._loop is None:
            raise ConnectException("the hosted task was not started")
        return self._loop

    def _answer(self, loop: TaskLoop, moved: int) -> tuple[Any, ...]:
        return (
            moved,
            loop.progress,
            sorted(loop.topics()),
            self._logs.take(),
            loop.take_counters(),
        )
