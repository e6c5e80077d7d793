"""Worker side of a plugin host process: start it from a plugin venv, talk to it over pipes,
survive its death. :class:`PluginHost` is the process implementation of
:class:`isolation.channel.HostChannel`; failures are the tree of :mod:`isolation.errors`.
"""

from __future__ import annotations

import collections
import hashlib
import json
import logging
import math
import os
import select
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import plugin_api
from isolation import allocator, launcher, levels
from isolation._hostside import copycat_protocol as protocol
from isolation._hostside import copycat_wire as wire
from isolation._hostside.copycat_errors import STOP_BYTE, WAKE_BYTE
from isolation.errors import (
    ErrorInfo,
    PluginHostCrashed,
    PluginHostError,
    PluginHostTimeout,
    describe_exit,
    remote_error,
)
from plugin_api import ConnectException

log = logging.getLogger("copycat.isolation")

HOSTSIDE_DIR = Path(__file__).resolve().parent / "_hostside"
# Generous for a cold interpreter importing a plugin with heavy dependencies on a busy machine.
DEFAULT_START_TIMEOUT_S = 60.0
# Default deadline of one plugin call (start, validate, poll, put, ...) when the worker
# configures none (its key is plugin.call.timeout.ms): past it the plugin counts as hung and
# its host is killed.
DEFAULT_CALL_TIMEOUT_S = 300.0
# Lines of the host's output kept for crash reports; enough for a long Python traceback.
STDERR_TAIL_LINES = 200
# A crash report quotes at most this much of that tail (the end of it): a traceback fits,
# a plugin printing megabytes before it dies does not flood statuses and logs.
STDERR_TAIL_MAX_CHARS = 16_384
# Longer output lines are cut: one line of a plugin's output is one log record.
MAX_OUTPUT_LINE_CHARS = 4_096
# Plugin output is relayed to the worker's log at most this many lines a second on average,
# with bursts up to OUTPUT_BURST_LINES; beyond that lines are counted, not logged, so a
# plugin printing in a loop cannot fill the worker's disk or drown its own log.
OUTPUT_LINES_PER_S = 200.0
# What a host's last output says when its address-space limit (plugin.host.memory.max.bytes)
# ended it: Python's MemoryError, or, while the interpreter still loads, the dynamic loader's
# and the kernel's words for a mapping refused (ImportError of a C extension, ENOMEM).
OUT_OF_MEMORY_SIGNS = (
    "MemoryError",
    "failed to map segment from shared object",
    "Cannot allocate memory",
)
# The longest wait poll() takes (its timeout is a C int of milliseconds, ~24 days).
POLL_MAX_MS = 2**31 - 1
OUTPUT_BURST_LINES = 2_000
# How often a host that is being rate limited gets a line saying how much was dropped.
SUPPRESSED_REPORT_INTERVAL_S = 10.0
# How long a host gets to exit after a shutdown request before it is killed.
SHUTDOWN_GRACE_S = 5.0
# glibc reserves address space per malloc arena (64 MiB each, one per thread that
# allocates); under an address-space limit that reservation, not real use, would fail first.
LIMITED_MALLOC_ARENAS = "2"

# argv: the parent-first directories (plugin_api's first, os.pathsep-separated), host-side dir,
# memory limit in bytes (0: none), then the host's own.
_BOOTSTRAP = (
    launcher.PDEATHSIG_PRELUDE
    # Thread stacks on SIGUSR1 (isolation/stacks.py), from the host's first moment.
    + "import faulthandler; faulthandler.register(signal.SIGUSR1, all_threads=True); "
    "api, hostdir, limit, *rest = sys.argv[1:]; "
    "import resource; int(limit) and resource.setrlimit(resource.RLIMIT_AS, "
    "(int(limit), int(limit))); "
    "sys.path[0:0] = [*api.split(os.pathsep), hostdir]; import copycat_host; "
    "copycat_host.main(rest)"
)


def plugin_api_root() -> Path:
    """A directory holding only the runtime's ``plugin_api`` package, for the hosts' sys.path.

    When plugin_api is installed into the runtime's site-packages, putting that directory on a
    host's path would leak every runtime dependency into plugins, so a private directory with
    a link to the package is made instead.
    """
    package = Path(plugin_api.__file__).resolve().parent
    parent = package.parent
    if {p.name for p in parent.iterdir()} <= {"plugin_api", "__pycache__"}:
        return parent
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "copycat" / "api"
    # A digest, not hash(): str hashes differ per process, which made a directory per worker.
    root = cache / hashlib.sha256(str(package).encode()).hexdigest()[:16]
    link = root / "plugin_api"
    if not link.exists():
        root.mkdir(parents=True, exist_ok=True)
        tmp = root / f".plugin_api.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(package, target_is_directory=True)
        os.replace(tmp, link)
    return root


_SUPPRESSED = "plugin output over %d lines/s: %d lines not logged"


def _cut(line: str) -> str:
    if len(line) > MAX_OUTPUT_LINE_CHARS:
        return line[:MAX_OUTPUT_LINE_CHARS] + f"... [{len(line)} chars]"
    return line


# The parent of every host's output logger, ``copycat.plugin.<host name>``.
OUTPUT_LOGGER = "copycat.plugin"


def _output_logger(host: str) -> logging.Logger:
    """The logger of ``host``'s output lines, ``copycat.plugin.<host>``: the worker's own if
    one of that name exists (a level was set on it), else one that only this host uses.

    ``logging.getLogger`` keeps every logger it makes for the life of the process, and a host
    is named after its connector or task: a worker whose connectors come and go under new
    names kept one logger per name ever used (~1 KB each; ``/admin/loggers`` knew them all).
    A logger made here is dropped with its host, and its records go up the same parents
    (``copycat.plugin``, root) under the same name, so the worker's log reads as before.
    """
    name = f"{OUTPUT_LOGGER}.{host}"
    known = logging.Logger.manager.loggerDict.get(name)
    if isinstance(known, logging.Logger):
        return known
    logger = logging.Logger(name)
    logger.parent = logging.getLogger(OUTPUT_LOGGER)
    return logger


def _plugin_record(line: str) -> tuple[logging.Logger, int, str] | None:
    """The logger, level and text of a log record of plugin code written by the host
    (``copycat_protocol.LOG_RECORD_MARK``); None for any other line. Each line of the text is
    cut as a line of output is. Getting the logger here makes it one of the worker's, so
    ``/admin/loggers`` knows the loggers plugins use."""
    if not line.startswith(protocol.LOG_RECORD_MARK):
        return None
    try:
        level, name, text = json.loads(line[len(protocol.LOG_RECORD_MARK) :])
    except ValueError:
        return None
    if not (isinstance(level, int) and isinstance(name, str) and isinstance(text, str)):
        return None
    text = "\n".join(_cut(part) for part in text.split("\n"))
    return logging.getLogger(name), level, text


class _OutputLimiter:
    """Token bucket over plugin output lines (see OUTPUT_LINES_PER_S)."""

    def __init__(self, rate: float = OUTPUT_LINES_PER_S, burst: int = OUTPUT_BURST_LINES) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.tokens = float(burst)
        self.last = time.monotonic()
        self.suppressed = 0
        self.last_report = self.last

    def allow(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        self.suppressed += 1
        return False

    def report_due(self) -> int:
        """How many lines were dropped since the last report, if a report is due (else 0)."""
        now = time.monotonic()
        if not self.suppressed or now - self.last_report < SUPPRESSED_REPORT_INTERVAL_S:
            return 0
        dropped, self.suppressed, self.last_report = self.suppressed, 0, now
        return dropped


class PluginHost:
    """One plugin host process and the channel to it.

    Thread-safety: one request at a time (a second caller waits for the channel). Any thread
    may call :meth:`kill`, e.g. to reclaim a host whose plugin hangs while another thread
    waits for its answer; that waiting thread then gets :class:`PluginHostCrashed` naming the
    reason. :meth:`close` and :meth:`kill` never close file descriptors under a reader.
    """

    overlaps = True  # a request runs in the host process while the caller goes on
    passes_objects = False  # requests are pickled across the pipes

    def __init__(
        self,
        python: str | os.PathLike[str],
        *,
        name: str,
        callbacks: Mapping[str, Callable[..., Any]] | None = None,
        env: Mapping[str, str] | None = None,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
        isolated_site: bool = False,
        memory_limit_bytes: int = 0,
        on_exit: Callable[[PluginHostCrashed], None] | None = None,
        on_event: Callable[[protocol.ConnectorEvent], None] | None = None,
        parent_first: Sequence[str] = (),
    ) -> None:
        self.python = str(python)
        # Directories importable before the plugin's own environment, after plugin_api: what
        # the runtime shares with the plugin beyond its API (a task's data path, see
        # core/runtime/hosted.py). Empty for every other host.
        self.parent_first = list(parent_first)
        self.name = name
        self.callbacks = dict(callbacks or {})
        self.call_timeout_s = call_timeout_s
        self.memory_limit_bytes = memory_limit_bytes
        # Called (on the output relay thread) when the host exits while nobody is closing it
        # or waiting for an answer from it: a host dying between requests is noticed too.
        self.on_exit = on_exit
        # Called (on a thread of its own) with each event a connector sends from its host,
        # e.g. a request for task reconfiguration; only hosts given one get an events pipe.
        self.on_event = on_event
        # -S: no site-packages at all (zipapp hosts run on the base interpreter).
        self._site_flags = ["-I", "-S"] if isolated_site else ["-I"]
        self._env = dict(env) if env is not None else None
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._to_host = -1
        self._from_host = -1
        # Waits for the host's answers: poll(), since select() refuses descriptors numbered
        # 1024 or more, which a worker with ~70 connectors and their hosts already holds.
        self._answers = select.poll()
        # Shared memory for large pickles, one region per direction (None without memfd).
        self._to_host_region: wire.SharedRegion | None = None
        self._from_host_region: wire.SharedRegion | None = None
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._next_id = 0
        self._pending_op: str | None = None
        self._reading = False  # a thread is inside result(), reading the channel
        self._closing = False
        self._kill_reason: str | None = None
        self._relay: threading.Thread | None = None
        self._events = -1
        self._stop = -1  # the write end of the host's stop pipe (request_stop)
        self._stop_lock = threading.Lock()
        self.failure: PluginHostError | None = None
        self.info: protocol.HostInfo | None = None
        # How many of the worker's log level changes the host has applied (isolation/levels.py);
        # None until it has the worker's levels.
        self._levels_applied: int | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, timeout_s: float = DEFAULT_START_TIMEOUT_S) -> protocol.HostInfo:
        to_host_r, to_host_w = os.pipe()
        from_host_r, from_host_w = os.pipe()
        events_r, events_w = os.pipe() if self.on_event is not None else (-1, -1)
        # The task's stop request (request_stop): the host's retries wait on its read end.
        stop_r, stop_w = os.pipe()
        os.set_blocking(stop_w, False)  # a request never waits for the host to read it
        for fd in (to_host_w, from_host_w):
            wire.enlarge_pipe(fd)
        env = dict(self._env if self._env is not None else os.environ)
        env.update(allocator.child_environment(env))
        if self.memory_limit_bytes and "MALLOC_ARENA_MAX" not in env:
            env["MALLOC_ARENA_MAX"] = LIMITED_MALLOC_ARENAS
        env["COPYCAT_PLUGIN"] = self.name
        env.pop("PYTHONPATH", None)
        regions = [wire.SharedRegion.create(f"copycat-{self.name}-{way}") for way in ("in", "out")]
        if None in regions:  # no memfd here: everything goes through the pipes
            for region in regions:
                if region is not None:
                    region.close()
            regions = [None, None]
        self._to_host_region, self._from_host_region = regions
        region_fds = [region.fd for region in regions if region is not None]
        bootstrap = _BOOTSTRAP.replace("{parent}", str(os.getpid()))
        cmd = [
            self.python,
            *self._site_flags,
            "-c",
            bootstrap,
            os.pathsep.join([str(plugin_api_root()), *self.parent_first]),
            str(HOSTSIDE_DIR),
            str(self.memory_limit_bytes),
            str(to_host_r),
            str(from_host_w),
            str(events_w),
            str(stop_r),
            *map(str, region_fds),
        ]
        passed = (
            to_host_r,
            from_host_w,
            *([events_w] if events_w >= 0 else []),
            stop_r,
            *region_fds,
        )
        try:
            self._proc = launcher.spawn(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=passed,
                env=env,
                close_fds=True,
            )
        except OSError as exc:
            for fd in (to_host_r, to_host_w, from_host_r, from_host_w, events_r, events_w):
                if fd >= 0:
                    os.close(fd)
            os.close(stop_r)
            os.close(stop_w)
            self._close_regions()
            raise PluginHostError(
                f"cannot start plugin host for {self.name} with {self.python}: {exc}"
            ) from exc
        os.close(to_host_r)
        os.close(from_host_w)
        os.close(stop_r)
        self._to_host, self._from_host = to_host_w, from_host_r
        self._answers.register(from_host_r, select.POLLIN)
        self._stop = stop_w
        if events_w >= 0:
            os.close(events_w)
            self._events = events_r
            threading.Thread(
                target=self._relay_events, name=f"host-events-{self.name}", daemon=True
            ).start()
        self._relay = threading.Thread(
            target=self._relay_output, name=f"host-log-{self.name}", daemon=True
        )
        self._relay.start()
        levels.register(self)
        self.info = protocol.HostInfo(*self.request(protocol.HELLO, timeout_s=timeout_s))
        return self.info

    def _relay_events(self) -> None:
        """Hand each connector event the host sends to ``on_event`` (until the host exits)."""
        on_event = self.on_event  # close() drops the host's own reference (see _reap)
        assert on_event is not None
        while True:
            try:
                _, (handle, kind, error) = wire.read_message(self._events)
            except (wire.ChannelClosed, OSError, ValueError):
                break
            event = protocol.ConnectorEvent(
                handle, kind, None if error is None else ErrorInfo(*error)
            )
            try:
                on_event(event)
            except Exception:  # noqa: BLE001 - one bad event must not stop the relay
                log.exception("plugin host %s: handling connector event %s failed", self.name, kind)
        try:
            os.close(self._events)
        except OSError:
            pass

    def _relay_output(self) -> None:
        """Relay the host's output to the log (bounded), keep its tail, notice its exit."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        try:
            self._relay_lines(proc.stdout)
        finally:
            # At EOF the host (and whatever inherited its output) is gone: the read end goes
            # now, not when the garbage collector gets to the Popen (see _reap).
            proc.stdout.close()
        proc.wait()
        # A host that failed while a caller waited on it (killed after a call timeout, or seen
        # crashing by that call) was reported by that caller, with what it was doing: telling
        # on_exit as well would replace that report with a bare "killed by SIGKILL".
        reported = self.failure is not None
        on_exit = self.on_exit  # close() drops it (see _reap): read it once
        if on_exit is not None and not self._closing and self._pending_op is None:
            if reported:
                return
            reason = self._exit_reason()
            tail = self.stderr_tail()
            message = f"plugin host for {self.name} (pid {proc.pid}) {reason}"
            if tail:
                message += f"; last output:\n{tail}"
            on_exit(PluginHostCrashed(message, reason, tail))

    def _relay_lines(self, stdout: IO[bytes]) -> None:
        """Log each line of the host's output (rate limited) and keep its tail, until EOF."""
        plugin_log = _output_logger(self.name)
        limiter = _OutputLimiter()
        for raw in stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            record = _plugin_record(line)
            if record is None:
                logger, level, text = plugin_log, logging.INFO, _cut(line)
                self._stderr_tail.append(text)
            else:
                logger, level, text = record
                self._stderr_tail.append(f"{logging.getLevelName(level)} {logger.name}: {text}")
                text = f"[{self.name}] {text}"
            if limiter.allow():
                # The host's levels chose what it wrote: the worker's are not asked again.
                logger.handle(logger.makeRecord(logger.name, level, "", 0, "%s", (text,), None))
            dropped = limiter.report_due()
            if dropped:
                plugin_log.warning(
                    "plugin output over %d lines/s: %d lines not logged",
                    OUTPUT_LINES_PER_S,
                    dropped,
                )
        if limiter.suppressed:
            plugin_log.warning(
                "plugin output over %d lines/s: %d lines not logged",
                OUTPUT_LINES_PER_S,
                limiter.suppressed,
            )

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None and self.failure is None

    def stderr_tail(self) -> str:
        """The last lines the host printed, at most STDERR_TAIL_MAX_CHARS of them."""
        text = "\n".join(self._stderr_tail)
        if len(text) > STDERR_TAIL_MAX_CHARS:
            text = "[...]\n" + text[-STDERR_TAIL_MAX_CHARS:].split("\n", 1)[-1]
        return text

    def kill(self, reason: str | None = None) -> None:
        """SIGKILL the host now; safe from any thread, also while another waits on it.

        A thread waiting for an answer gets :class:`PluginHostCrashed` carrying ``reason``.
        The channel is released by :meth:`close` (or by that waiting thread's owner).
        """
        if reason is not None and self._kill_reason is None:
            self._kill_reason = reason
        if self._proc is not None and self._proc.poll() is None:
            try:
                self._proc.kill()
            except ProcessLookupError:
                pass

    def request_stop(self) -> None:
        """Tell the host that its task is stopping, from any thread, also while a request
        runs: a retry of a record's retriable failure (errors.retry.timeout) waiting in it
        ends at once, as Kafka's RetryWithToleranceOperator.triggerStop() ends its backoff,
        instead of holding the stop until the graceful timeout kills the host."""
        with self._stop_lock:  # not closed (and its number reused) under the write
            if self._stop < 0:
                return
            try:
                os.write(self._stop, STOP_BYTE)
            except OSError:
                pass  # the host is gone (or its pipe full of earlier requests): nothing to end

    def wake(self) -> None:
        """Wake the host's task loop from an idle wait (core/runtime/in_host.py), from any
        thread, also while a request runs: a pause or resume is to be acted on now."""
        with self._stop_lock:
            if self._stop < 0:
                return
            try:
                os.write(self._stop, WAKE_BYTE)
            except OSError:
                pass  # the host is gone, or its pipe full of earlier wakes: it wakes anyway

    def close(self, timeout_s: float = SHUTDOWN_GRACE_S) -> None:
        """Ask the host to exit, kill it if it does not, and release the channel.

        Called by the host's owner. A request still pending (submitted but not collected,
        e.g. a task stopped mid-poll) is abandoned: the host is killed instead of asked.

        A host that answers it still has work running that its exit must not cut short (a
        stopped sink's consumer close, whose LeaveGroup waits behind a group join the broker
        holds) lives on that long, and is reaped (killed past it) on a thread of its own: the
        caller, a task's stop, does not wait for it.
        """
        if self._proc is None:
            return
        self._closing = True
        linger_s = 0.0
        if self.alive and self._pending_op is None:
            try:
                linger_s = float(self.request(protocol.SHUTDOWN, timeout_s=timeout_s) or 0.0)
            except PluginHostError:
                pass
        if linger_s > 0 and self._pending_op is None:
            log.info(
                "plugin host %s: lives on for up to %.1f s after its shutdown, until the work "
                "it left running ends (a stopped sink task's consumer close, whose LeaveGroup "
                "waits behind a group join the broker holds)",
                self.name,
                linger_s,
            )
            threading.Thread(
                target=self._reap_after,
                args=(timeout_s + linger_s, timeout_s + linger_s),
                name=f"host-reap-{self.name}",
                daemon=True,
            ).start()
            return
        if self._pending_op is not None:
            self.kill(self._kill_reason or "closed while a request was pending")
            if not self._reading:
                # Nobody will collect the abandoned answer: release the channel here.
                self._pending_op = None
                self._release()
        self._reap_after(timeout_s, timeout_s + SHUTDOWN_GRACE_S)

    def _reap_after(self, timeout_s: float, channel_wait_s: float) -> None:
        """:meth:`close`'s end: take the channel (killing the host if a reader keeps it past
        ``channel_wait_s``), then wait for the process, killing it after ``timeout_s``."""
        if not self._lock.acquire(timeout=channel_wait_s):
            log.error("plugin host %s: a reader kept its channel; killing it", self.name)
            self.kill()
            self._lock.acquire()
        try:
            self._reap(timeout_s)
        finally:
            self._lock.release()

    def _release(self) -> None:
        try:
            self._lock.release()
        except RuntimeError:
            pass

    def _reap(self, timeout_s: float) -> None:
        assert self._proc is not None
        try:
            self._proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._relay is not None and self._relay is not threading.current_thread():
            self._relay.join(SHUTDOWN_GRACE_S)  # the last lines reach the log and the tail
        with self._stop_lock:
            if self._from_host >= 0:
                self._answers.unregister(self._from_host)
            for fd in (self._to_host, self._from_host, self._stop):
                if fd >= 0:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            self._to_host = self._from_host = self._stop = -1
        self._close_regions()
        # The owner's callbacks usually hold the owner, which holds this host (a connector's
        # on_exit reaches its HostClient): a cycle only a full garbage collection frees, rare
        # in a worker (isolation/allocator.py). A closed host calls none of them again.
        self.on_exit = self.on_event = None
        self.callbacks = {}

    def _close_regions(self) -> None:
        for region in (self._to_host_region, self._from_host_region):
            if region is not None:
                region.close()
        self._to_host_region = self._from_host_region = None

    # -- requests ----------------------------------------------------------------------------

    def request(self, op: str, *args: Any, timeout_s: float | None = None) -> Any:
        """Send one request and wait for its answer, serving the host's callbacks meanwhile."""
        self.submit(op, *args)
        return self.result(timeout_s=timeout_s)

    def encode(self, op: str, *args: Any) -> tuple[bytes, bytes]:
        """Serialize a request ahead of time, for :meth:`submit_encoded`: a caller that
        prepares the next batch while the host works keeps the pickling off the host's
        critical path."""
        return wire.encode(("req", op, args))

    def submit(self, op: str, *args: Any) -> None:
        """Send a request without waiting: the caller overlaps its own work with the host's.

        The channel stays reserved for this caller until :meth:`result` collects the answer.
        """
        self._send(
            protocol.describe_request(op, args),
            lambda fd: wire.write_message(fd, ("req", op, args), self._to_host_region),
        )

    def submit_encoded(self, op: str, frame: tuple[bytes, bytes]) -> None:
        """:meth:`submit` a request already serialized by :meth:`encode`."""
        self._send(op, lambda fd: wire.write_frame(fd, frame, self._to_host_region))

    def _send(self, op: str, write: Callable[[int], None]) -> None:
        self._lock.acquire()
        try:
            if self.failure is not None:
                raise self.failure
            if self._proc is None or self._to_host < 0:
                raise PluginHostError(f"plugin host for {self.name} was never started or closed")
            self._pending_op = op
            try:
                if op != protocol.SHUTDOWN:
                    self._apply_levels()
                write(self._to_host)
            except (wire.ChannelClosed, BrokenPipeError) as exc:
                raise self._crashed(op) from exc
        except BaseException:
            self._pending_op = None
            self._lock.release()
            raise

    def _apply_levels(self) -> None:
        """Send the worker's log level changes the host does not have yet, and wait for it to
        apply them (the channel is ours). Costs one round trip after a change, nothing
        otherwise."""
        if self._levels_applied == levels.generation():
            return
        generation, changes = levels.pending(self._levels_applied)
        if changes:
            message = ("req", protocol.LEVELS, (changes,))
            wire.write_message(self._to_host, message, self._to_host_region)
            reply = self._read(
                time.monotonic() + self.call_timeout_s, "levels", self.call_timeout_s
            )
            if reply[0] != "ok":
                log.warning("plugin host %s: cannot set log levels: %s", self.name, reply[1:])
        self._levels_applied = generation

    def push_levels(self) -> None:
        """Send level changes now if the channel is free (a host between requests), on a
        thread of its own; a busy host gets them ahead of its next request. Never blocks."""
        if not self._lock.locked():
            threading.Thread(
                target=self._push_levels, name=f"host-levels-{self.name}", daemon=True
            ).start()

    def _push_levels(self) -> None:
        if not self._lock.acquire(blocking=False):
            return  # a request took the channel meanwhile: the changes go ahead of it
        try:
            if self.alive and not self._closing and self._to_host >= 0:
                self._apply_levels()
        except (wire.ChannelClosed, OSError, PluginHostError):
            pass  # the host died: its owner learns that from its next request or its exit
        finally:
            self._lock.release()

    @property
    def pending(self) -> bool:
        """Whether a submitted request still awaits :meth:`result`."""
        return self._pending_op is not None

    def result(self, timeout_s: float | None = None) -> Any:
        """Wait for the answer to the request :meth:`submit` sent."""
        op = self._pending_op
        if op is None:
            raise PluginHostError(f"no request pending on plugin host {self.name}")
        self._reading = True
        try:
            timeout = timeout_s or self.call_timeout_s
            deadline = time.monotonic() + timeout
            while True:
                reply = self._read(deadline, op, timeout)
                kind = reply[0]
                if kind == "ok":
                    return reply[1]
                if kind == "err":
                    raise remote_error(self.name, self._explained(ErrorInfo(*reply[1])))
                if kind == "cb":
                    self._answer_callback(reply[1], reply[2])
                    continue
                raise PluginHostError(f"unexpected message {kind!r} from host {self.name}")
        except (wire.ChannelClosed, BrokenPipeError, OSError) as exc:
            if isinstance(exc, PluginHostError):
                raise
            raise self._crashed(op) from exc
        finally:
            self._reading = False
            self._pending_op = None
            self._release()

    def _read(self, deadline: float, op: str, timeout: float) -> tuple[Any, ...]:
        remaining_ms = min(math.ceil((deadline - time.monotonic()) * 1000), POLL_MAX_MS)
        if not self._answers.poll(max(0, remaining_ms)):
            assert self._proc is not None
            # Recorded before the kill, so the exit the relay then sees is known as ours.
            self.failure = PluginHostTimeout(
                f"plugin {self.name}: {op} did not complete within "
                f"{timeout:g} s; host pid {self.pid} killed"
            )
            if self._kill_reason is None:
                self._kill_reason = f"{op} did not complete within {timeout:g} s"
            self._proc.kill()
            raise self.failure
        return wire.read_message(self._from_host, self._from_host_region)

    def _answer_callback(self, name: str, args: tuple[Any, ...]) -> None:
        handler = self.callbacks.get(name)
        try:
            if handler is None:
                raise ConnectException(f"no handler for plugin host callback {name!r}")
            result = handler(*args)
            wire.write_message(self._to_host, ("cbret", True, result), self._to_host_region)
        except Exception as exc:  # noqa: BLE001 - the host reports it as the plugin's error
            log.warning("callback %s from plugin %s failed: %s", name, self.name, exc)
            wire.write_message(
                self._to_host,
                ("cbret", False, f"{type(exc).__name__}: {exc}"),
                self._to_host_region,
            )

    def _explained(self, info: ErrorInfo) -> ErrorInfo:
        """A plugin's MemoryError under a memory limit says which limit it hit."""
        if self.memory_limit_bytes and info.type == "builtins.MemoryError":
            limit = f"plugin.host.memory.max.bytes={self.memory_limit_bytes}"
            return info._replace(message=f"out of memory ({limit}) {info.message}".rstrip())
        return info

    def _exit_reason(self) -> str:
        assert self._proc is not None
        reason = describe_exit(self._proc.returncode)
        if self._kill_reason is not None:
            reason = f"{reason}: {self._kill_reason}"
        elif self.memory_limit_bytes and any(
            sign in self.stderr_tail() for sign in OUT_OF_MEMORY_SIGNS
        ):
            reason = (
                f"{reason}: out of memory (plugin.host.memory.max.bytes={self.memory_limit_bytes})"
            )
        return reason

    def _crashed(self, op: str) -> PluginHostCrashed:
        assert self._proc is not None
        try:
            self._proc.wait(timeout=SHUTDOWN_GRACE_S)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._relay is not None and self._relay is not threading.current_thread():
            self._relay.join(SHUTDOWN_GRACE_S)  # the last lines of output reach the tail
        reason = self._exit_reason()
        tail = self.stderr_tail()
        message = f"plugin host for {self.name} (pid {self._proc.pid}) {reason} during {op}"
        if tail:
            message += f"; last output:\n{tail}"
        self.failure = PluginHostCrashed(message, reason, tail)
        return self.failure
