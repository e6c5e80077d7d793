"""Worker side of a plugin host: start it from a plugin venv, talk to it, survive its death.

Exceptions::

    plugin_api.ConnectException
     ├── PluginHostError            the host process itself failed
     │    ├── PluginHostCrashed      it exited or was killed (exit reason + stderr tail)
     │    └── PluginHostTimeout      a request took longer than its timeout (host killed)
     └── RemotePluginError          plugin code raised; carries the plugin's own traceback
          ├── RemoteRetriableError   (also a RetriableException)
          ├── RemoteDataError        (also a DataException)
          └── RemoteConfigError      (also a ConfigException)
"""

from __future__ import annotations

import collections
import ctypes
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import plugin_api
from isolation import allocator
from isolation._hostside import copycat_wire as wire
from plugin_api import ConfigException, ConnectException, DataException, RetriableException

log = logging.getLogger("copycat.isolation")

HOSTSIDE_DIR = Path(__file__).resolve().parent / "_hostside"
# Generous for a cold interpreter importing a plugin with heavy dependencies on a busy machine.
DEFAULT_START_TIMEOUT_S = 60.0
# A single poll()/put() batch that takes longer than this is treated as a hung plugin.
DEFAULT_CALL_TIMEOUT_S = 300.0
# Lines of the host's stderr kept for crash reports; enough for a long Python traceback.
STDERR_TAIL_LINES = 200
# How long a host gets to exit after a shutdown request before it is killed.
SHUTDOWN_GRACE_S = 5.0
_PR_SET_PDEATHSIG = 1

_BOOTSTRAP = (
    "import sys; api, hostdir, *rest = sys.argv[1:]; sys.path[0:0] = [api, hostdir]; "
    "import copycat_host; copycat_host.main(rest)"
)


class PluginHostError(ConnectException):
    """The plugin host process failed (as opposed to plugin code raising an exception)."""


class PluginHostCrashed(PluginHostError):
    """The plugin host exited or was killed while the worker needed it."""

    def __init__(self, message: str, exit_reason: str, stderr_tail: str) -> None:
        super().__init__(message)
        self.exit_reason = exit_reason
        self.stderr_tail = stderr_tail


class PluginHostTimeout(PluginHostError):
    """A request to the plugin host did not complete in time; the host was killed."""


class RemotePluginError(ConnectException):
    """Plugin code raised inside its host; ``remote_traceback`` is the plugin's traceback."""

    def __init__(self, plugin: str, info: Mapping[str, Any]) -> None:
        super().__init__(f"{plugin}: {info['type']}: {info['message']}")
        self.plugin = plugin
        self.remote_type: str = info["type"]
        self.remote_message: str = info["message"]
        self.remote_traceback: str = info["traceback"]
        self.kind: str = info["kind"]
        # For a retriable put(): the sink task's context.timeout() set before it raised.
        self.timeout_ms: int | None = info.get("timeout_ms")


class RemoteRetriableError(RemotePluginError, RetriableException):
    pass


class RemoteDataError(RemotePluginError, DataException):
    pass


class RemoteConfigError(RemotePluginError, ConfigException):
    def __init__(self, plugin: str, info: Mapping[str, Any]) -> None:
        RemotePluginError.__init__(self, plugin, info)
        self.name = None


_REMOTE_BY_KIND: dict[str, type[RemotePluginError]] = {
    "retriable": RemoteRetriableError,
    "data": RemoteDataError,
    "config": RemoteConfigError,
}


def remote_error(plugin: str, info: Mapping[str, Any]) -> RemotePluginError:
    return _REMOTE_BY_KIND.get(info["kind"], RemotePluginError)(plugin, info)


def _die_with_parent() -> None:
    """Run in the child before exec: a killed worker must not leave plugin hosts behind."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


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
    root = cache / str(abs(hash(str(package))))
    link = root / "plugin_api"
    if not link.exists():
        root.mkdir(parents=True, exist_ok=True)
        tmp = root / f".plugin_api.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(package, target_is_directory=True)
        os.replace(tmp, link)
    return root


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name} (signal {-returncode})"
    return f"exited with code {returncode}"


class PluginHost:
    """One plugin host process and the channel to it. Thread-safe: one request at a time."""

    def __init__(
        self,
        python: str | os.PathLike[str],
        *,
        name: str,
        callbacks: Mapping[str, Callable[..., Any]] | None = None,
        env: Mapping[str, str] | None = None,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
        isolated_site: bool = False,
    ) -> None:
        self.python = str(python)
        self.name = name
        self.callbacks = dict(callbacks or {})
        self.call_timeout_s = call_timeout_s
        # -S: no site-packages at all (zipapp hosts run on the base interpreter).
        self._site_flags = ["-I", "-S"] if isolated_site else ["-I"]
        self._env = dict(env) if env is not None else None
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._to_host = -1
        self._from_host = -1
        # Shared memory for large pickles, one region per direction (None without memfd).
        self._to_host_region: wire.SharedRegion | None = None
        self._from_host_region: wire.SharedRegion | None = None
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._next_id = 0
        self._pending_op: str | None = None
        self.failure: PluginHostError | None = None
        self.info: dict[str, Any] = {}

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, timeout_s: float = DEFAULT_START_TIMEOUT_S) -> dict[str, Any]:
        to_host_r, to_host_w = os.pipe()
        from_host_r, from_host_w = os.pipe()
        for fd in (to_host_w, from_host_w):
            wire.enlarge_pipe(fd)
        env = dict(self._env if self._env is not None else os.environ)
        env.update(allocator.child_environment(env))
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
        cmd = [
            self.python,
            *self._site_flags,
            "-c",
            _BOOTSTRAP,
            str(plugin_api_root()),
            str(HOSTSIDE_DIR),
            str(to_host_r),
            str(from_host_w),
            *map(str, region_fds),
        ]
        try:
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(to_host_r, from_host_w, *region_fds),
                env=env,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
                close_fds=True,
            )
        except OSError as exc:
            for fd in (to_host_r, to_host_w, from_host_r, from_host_w):
                os.close(fd)
            self._close_regions()
            raise PluginHostError(
                f"cannot start plugin host for {self.name} with {self.python}: {exc}"
            ) from exc
        os.close(to_host_r)
        os.close(from_host_w)
        self._to_host, self._from_host = to_host_w, from_host_r
        threading.Thread(
            target=self._relay_output, name=f"host-log-{self.name}", daemon=True
        ).start()
        self.info = self.request("hello", timeout_s=timeout_s)
        return self.info

    def _relay_output(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        plugin_log = logging.getLogger(f"copycat.plugin.{self.name}")
        for raw in self._proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self._stderr_tail.append(line)
            plugin_log.info("%s", line)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None and self.failure is None

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr_tail)

    def close(self, timeout_s: float = SHUTDOWN_GRACE_S) -> None:
        """Ask the host to exit, kill it if it does not, and release the channel."""
        if self._proc is None:
            return
        if self.alive:
            try:
                self.request("shutdown", timeout_s=timeout_s)
            except PluginHostError:
                pass
        self._reap(timeout_s)

    def kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
        self._reap(SHUTDOWN_GRACE_S)

    def _reap(self, timeout_s: float) -> None:
        assert self._proc is not None
        try:
            self._proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for fd in (self._to_host, self._from_host):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._to_host = self._from_host = -1
        self._close_regions()

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

    @staticmethod
    def encode(op: str, *args: Any) -> tuple[bytes, bytes]:
        """Serialize a request ahead of time, for :meth:`submit_encoded`: a caller that
        prepares the next batch while the host works keeps the pickling off the host's
        critical path."""
        return wire.encode(("req", op, args))

    def submit(self, op: str, *args: Any) -> None:
        """Send a request without waiting: the caller overlaps its own work with the host's.

        The channel stays reserved for this caller until :meth:`result` collects the answer.
        """
        self._send(op, lambda fd: wire.write_message(fd, ("req", op, args), self._to_host_region))

    def submit_encoded(self, op: str, frame: tuple[bytes, bytes]) -> None:
        """:meth:`submit` a request already serialized by :meth:`encode`."""
        self._send(op, lambda fd: wire.write_frame(fd, frame, self._to_host_region))

    def _send(self, op: str, write: Callable[[int], None]) -> None:
        self._lock.acquire()
        try:
            if self.failure is not None:
                raise self.failure
            if self._proc is None:
                raise PluginHostError(f"plugin host for {self.name} was never started")
            self._pending_op = op
            try:
                write(self._to_host)
            except (wire.ChannelClosed, BrokenPipeError) as exc:
                raise self._crashed(op) from exc
        except BaseException:
            self._pending_op = None
            self._lock.release()
            raise

    @property
    def pending(self) -> bool:
        """Whether a submitted request still awaits :meth:`result`."""
        return self._pending_op is not None

    def result(self, timeout_s: float | None = None) -> Any:
        """Wait for the answer to the request :meth:`submit` sent."""
        op = self._pending_op
        if op is None:
            raise PluginHostError(f"no request pending on plugin host {self.name}")
        try:
            timeout = timeout_s or self.call_timeout_s
            deadline = time.monotonic() + timeout
            while True:
                reply = self._read(deadline, op, timeout)
                kind = reply[0]
                if kind == "ok":
                    return reply[1]
                if kind == "err":
                    raise remote_error(self.name, reply[1])
                if kind == "cb":
                    self._answer_callback(reply[1], reply[2])
                    continue
                raise PluginHostError(f"unexpected message {kind!r} from host {self.name}")
        except (wire.ChannelClosed, BrokenPipeError) as exc:
            raise self._crashed(op) from exc
        finally:
            self._pending_op = None
            self._lock.release()

    def _read(self, deadline: float, op: str, timeout: float) -> tuple[Any, ...]:
        remaining = deadline - time.monotonic()
        readable, _, _ = select.select([self._from_host], [], [], max(0.0, remaining))
        if not readable:
            assert self._proc is not None
            self._proc.kill()
            self.failure = PluginHostTimeout(
                f"plugin {self.name}: {op} did not complete within "
                f"{timeout:g} s; host pid {self.pid} killed"
            )
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

    def _crashed(self, op: str) -> PluginHostCrashed:
        assert self._proc is not None
        try:
            self._proc.wait(timeout=SHUTDOWN_GRACE_S)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        time.sleep(0.05)  # let the relay thread drain the last lines of stderr
        reason = describe_exit(self._proc.returncode)
        tail = self.stderr_tail()
        message = f"plugin host for {self.name} (pid {self._proc.pid}) {reason} during {op}"
        if tail:
            message += f"; last output:\n{tail}"
        self.failure = PluginHostCrashed(message, reason, tail)
        return self.failure

    # -- conveniences ------------------------------------------------------------------------

    def new_object(self, target: str, configs: Mapping[str, Any] | None = None) -> int:
        """Instantiate ``target`` (``module:Class``) in the host; return its handle."""
        self._next_id += 1
        obj_id = self._next_id
        self.request("new", obj_id, target, configs)
        return obj_id

    def next_handle(self) -> int:
        self._next_id += 1
        return self._next_id

    def call(self, obj_id: int, method: str, *args: Any, **kwargs: Any) -> Any:
        return self.request("call", obj_id, method, args, kwargs)
