"""The in-process twin of a plugin host: the host's own dispatcher, on a thread of this process.

:class:`InProcessHost` implements :class:`~isolation.channel.HostChannel` exactly as a host
process does (one request at a time, deadlines, callbacks answered while a request is served,
connector events, errors as :class:`~isolation.errors.RemotePluginError`), so the task loops
and the worker run unchanged on it. Arguments and answers go through pickle, as across the
pipes, so nothing is shared by reference that a host process would have copied.

What it cannot do is isolate: the plugin runs in this interpreter (it must be importable here)
and a hung plugin can be abandoned but not killed. It serves unit tests (the loops without a
broker or subprocess), the plugin tests that run both ways (STYLE.md section 9), and any
runtime that puts the data path in the same process as the plugin.
"""

from __future__ import annotations

import importlib
import logging
import os
import pickle
import queue
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from isolation._hostside import copycat_protocol as protocol
from isolation.channel import Frame
from isolation.errors import (
    ErrorInfo,
    PluginHostCrashed,
    PluginHostError,
    PluginHostTimeout,
    remote_error,
)
from isolation.host import DEFAULT_CALL_TIMEOUT_S, DEFAULT_START_TIMEOUT_S, HOSTSIDE_DIR

__all__ = ["InProcessHost"]

log = logging.getLogger("copycat.isolation")

_copy: Callable[[Any], Any] = lambda value: pickle.loads(pickle.dumps(value, protocol=5))  # noqa: E731


def _host_module() -> Any:
    """The host side's ``copycat_host``, importable here as it is in a host process."""
    hostside = str(HOSTSIDE_DIR)
    if hostside not in sys.path:
        sys.path.append(hostside)
    # Only importable once the path is set, and under the name the host side uses.
    return importlib.import_module("copycat_host")


class InProcessHost:
    """A plugin host on a thread of the worker's process (see the module docstring)."""

    overlaps = True  # a request runs on the host's thread while the caller goes on
    passes_objects = False  # requests are pickled, as across the pipes

    def __init__(
        self,
        *,
        name: str,
        callbacks: Mapping[str, Callable[..., Any]] | None = None,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
        on_event: Callable[[protocol.ConnectorEvent], None] | None = None,
    ) -> None:
        self.name = name
        self.callbacks = dict(callbacks or {})
        self.call_timeout_s = call_timeout_s
        self.on_event = on_event
        self.failure: PluginHostError | None = None
        self.info: protocol.HostInfo | None = None
        self._requests: queue.SimpleQueue[tuple[str, tuple[Any, ...]] | None] = queue.SimpleQueue()
        self._answers: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._pending_op: str | None = None
        self._thread: threading.Thread | None = None
        self._host: Any = None
        self._kill_reason: str | None = None

    # -- life ----------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return os.getpid() if self._thread is not None else None

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self.failure is None

    @property
    def pending(self) -> bool:
        return self._pending_op is not None

    def start(self, timeout_s: float = DEFAULT_START_TIMEOUT_S) -> protocol.HostInfo:
        module = _host_module()
        self._host = module.Host(self._callback, self._emit)
        self._thread = threading.Thread(
            target=self._serve, name=f"inproc-host-{self.name}", daemon=True
        )
        self._thread.start()
        self.info = protocol.HostInfo(*self.request(protocol.HELLO, timeout_s=timeout_s))
        return self.info

    def _serve(self) -> None:
        host = self._host
        host.serving_thread = threading.get_ident()
        while host.running:
            request = self._requests.get()
            if request is None:
                return
            op, args = request
            self._answers.put(_copy(host.dispatch(op, _copy(args))))

    def _callback(self, name: str, args: tuple[Any, ...]) -> Any:
        handler = self.callbacks.get(name)
        if handler is None:
            raise PluginHostError(f"no handler for plugin host callback {name!r}")
        return _copy(handler(*_copy(args)))

    def _emit(self, event: tuple[Any, ...]) -> None:
        if self.on_event is None:
            return
        handle, kind, error = _copy(event)
        self.on_event(
            protocol.ConnectorEvent(handle, kind, None if error is None else ErrorInfo(*error))
        )

    def kill(self, reason: str | None = None) -> None:
        """Abandon the host: a waiter gets PluginHostCrashed; its thread cannot be killed and
        is left to finish (or hang) on its own."""
        if self._kill_reason is None:
            self._kill_reason = reason or "killed"
        if self._pending_op is not None:
            self._answers.put(("killed",))
        elif self.failure is None:
            self.failure = PluginHostCrashed(
                f"plugin host for {self.name} (in process) {self._kill_reason}",
                self._kill_reason,
                "",
            )
        self._requests.put(None)

    def request_stop(self) -> None:
        """Tell the host's task it is stopping: a retry's backoff in it ends at once."""
        if self._host is not None:
            self._host.stop.set()

    def wake(self) -> None:
        """Wake the host's task loop from an idle wait."""
        if self._host is not None:
            self._host.stop.wake()

    def close(self, timeout_s: float = 5.0) -> None:
        if self._thread is None:
            return
        if self.alive and self._pending_op is None:
            try:
                self.request(protocol.SHUTDOWN, timeout_s=timeout_s)
            except PluginHostError:
                pass
        self._requests.put(None)
        self._thread.join(timeout_s)
        self.failure = self.failure or PluginHostError(f"plugin host {self.name} was closed")

    def stderr_tail(self) -> str:
        return ""  # plugin output goes to this process's own stdout/stderr

    # -- requests ---------------------------------------------------------------------------

    def request(self, op: str, *args: Any, timeout_s: float | None = None) -> Any:
        self.submit(op, *args)
        return self.result(timeout_s)

    def encode(self, op: str, *args: Any) -> Frame:
        return (op.encode(), pickle.dumps(args, protocol=5))

    def submit(self, op: str, *args: Any) -> None:
        self._lock.acquire()
        if self.failure is not None:
            self._lock.release()
            raise self.failure
        self._pending_op = protocol.describe_request(op, args)
        self._requests.put((op, args))

    def submit_encoded(self, op: str, frame: Frame) -> None:
        self.submit(op, *pickle.loads(frame[1]))

    def result(self, timeout_s: float | None = None) -> Any:
        op = self._pending_op
        if op is None:
            raise PluginHostError(f"no request pending on plugin host {self.name}")
        timeout = timeout_s or self.call_timeout_s
        try:
            try:
                answer = self._answers.get(timeout=timeout)
            except queue.Empty:
                self.failure = PluginHostTimeout(
                    f"plugin {self.name}: {op} did not complete within {timeout:g} s; "
                    "in-process host abandoned"
                )
                self.kill()
                raise self.failure from None
            if answer[0] == "killed":
                self.failure = PluginHostCrashed(
                    f"plugin host for {self.name} (in process) {self._kill_reason} during {op}",
                    self._kill_reason or "killed",
                    "",
                )
                raise self.failure
            if answer[0] == "err":
                raise remote_error(self.name, ErrorInfo(*answer[1]))
            return answer[1]
        finally:
            self._pending_op = None
            self._lock.release()
