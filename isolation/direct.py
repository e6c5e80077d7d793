"""The plugin host's dispatcher called on the caller's own thread: :class:`DirectHost`.

Used where the task's data path runs *inside* the plugin host process, next to the plugin
(``task.data.path=host``, see docs/architecture.md): the task loop and the plugin share one
process and one thread, so a request is a function call. Nothing is pickled on the hot
operations, which is the point: crossing a process boundary cost about as much per 100 B
record as the whole bare client loop. Isolation is the *process's* business in this mode: the
worker talks to the host process over pipes and kills it on a crash, hang or memory limit,
exactly as in the split mode; this channel has no deadlines of its own and cannot be killed
(nothing in the process could take over from a hung plugin anyway).

What crosses keeps the value semantics of the pipes where it matters and costs little:

* ``put``: the batch's list columns are copied (a list copy is a C-level memcpy, ~2 ns per
  record), so a converter that rewrites the list it was given cannot change the loop's copy,
  which it keeps for dead letter reports;
* ``poll``: the batch's columns are fresh lists the host built for this answer and are taken
  as they are; the source offsets, which are the plugin's own objects and are committed only after
  the broker acknowledged their records, are copied (a plugin may reuse one dict);
* everything else (starts, commits, callbacks: per batch at most) goes through pickle, as
  across the pipes.

A request runs when its answer is collected (:meth:`DirectHost.result`), not when it is
submitted: with one thread nothing can overlap, and a source loop that submits the next poll
before sending the current one's records sends them first this way.
"""

from __future__ import annotations

import logging
import os
import pickle
import threading
from collections.abc import Callable, Mapping
from typing import Any

from isolation._hostside import copycat_protocol as protocol
from isolation.channel import Frame
from isolation.errors import ErrorInfo, PluginHostError, remote_error
from isolation.inprocess import _host_module

__all__ = ["DirectHost"]

log = logging.getLogger("copycat.isolation")


def _copy(value: Any) -> Any:
    return pickle.loads(pickle.dumps(value, protocol=5))


def _copy_put(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``(handle, batch wire)`` with the wire's list columns copied (see the module docstring)."""
    handle, wire = args
    return handle, tuple(list(column) if type(column) is list else column for column in wire)


def _copy_poll(answer: tuple[Any, ...]) -> tuple[Any, ...]:
    """A poll answer with its source offsets (failure descriptions, transaction boundaries)
    copied."""
    status, value = answer
    if status != "ok":
        return answer
    batch, failures, offsets, *boundaries = value  # boundaries: transaction.boundary=connector
    copied = (batch, _copy(failures) if failures else failures, _copy(offsets))
    return status, copied + tuple(_copy(b) for b in boundaries)


class DirectHost:
    """A :class:`~isolation.channel.HostChannel` that dispatches on the calling thread.

    One owner thread (the task loop's); :meth:`kill` from another thread only marks the channel
    failed for the next request (the process it runs in is what the worker kills).
    """

    overlaps = False  # a request runs in result(), on the caller's thread
    passes_objects = True  # a put() may carry the consumer's messages (MessageBatch)

    def __init__(
        self,
        *,
        name: str,
        callbacks: Mapping[str, Callable[..., Any]] | None = None,
    ) -> None:
        self.name = name
        self.callbacks = dict(callbacks or {})
        self.failure: PluginHostError | None = None
        self.info: protocol.HostInfo | None = None
        self._host: Any = None
        self._pending: tuple[str, tuple[Any, ...]] | None = None
        self._owner: int | None = None

    @property
    def pid(self) -> int | None:
        return os.getpid() if self._host is not None else None

    @property
    def alive(self) -> bool:
        return self._host is not None and self._host.running and self.failure is None

    @property
    def pending(self) -> bool:
        return self._pending is not None

    def start(self, timeout_s: float = 0.0) -> protocol.HostInfo:
        """Make the dispatcher (``timeout_s`` is unused: nothing here can hang but plugins)."""
        self._host = _host_module().Host(self._callback, self._emit)
        self._owner = threading.get_ident()
        self.info = protocol.HostInfo(*self.request(protocol.HELLO))
        return self.info

    def _callback(self, name: str, args: tuple[Any, ...]) -> Any:
        handler = self.callbacks.get(name)
        if handler is None:
            raise PluginHostError(f"no handler for plugin host callback {name!r}")
        return _copy(handler(*_copy(args)))

    def _emit(self, event: tuple[Any, ...]) -> None:
        """Connector events never arise here: only tasks run on a direct channel."""
        log.warning("plugin host %s: connector event %r ignored", self.name, event[1])

    def kill(self, reason: str | None = None) -> None:
        if self.failure is None:
            self.failure = PluginHostError(f"plugin host {self.name} (direct) {reason or 'killed'}")

    def request_stop(self) -> None:
        """Tell the host's task it is stopping: a retry's backoff in it ends at once (in a
        host process, the process's own request, which the worker makes, does it too)."""
        if self._host is not None:
            self._host.stop.set()

    def wake(self) -> None:
        """Wake the host's task loop from an idle wait."""
        if self._host is not None:
            self._host.stop.wake()

    def close(self, timeout_s: float = 0.0) -> None:
        if self._host is None:
            return
        if self.alive and self._pending is None:
            try:
                self.request(protocol.SHUTDOWN)
            except PluginHostError:
                pass
        self._pending = None
        self.failure = self.failure or PluginHostError(f"plugin host {self.name} was closed")

    def stderr_tail(self) -> str:
        return ""  # plugin output is the process's own (the host process relays it)

    # -- requests ---------------------------------------------------------------------------

    def request(self, op: str, *args: Any, timeout_s: float | None = None) -> Any:
        self.submit(op, *args)
        return self.result(timeout_s)

    def encode(self, op: str, *args: Any) -> Frame:
        """Nothing to serialize: the frame carries the arguments themselves."""
        return (op.encode(), args)

    def submit(self, op: str, *args: Any) -> None:
        if self.failure is not None:
            raise self.failure
        if self._pending is not None:
            raise PluginHostError(
                f"plugin host {self.name}: {op} submitted while {self._pending[0]} is pending"
            )
        self._pending = (op, args)

    def submit_encoded(self, op: str, frame: Frame) -> None:
        self.submit(op, *frame[1])

    def result(self, timeout_s: float | None = None) -> Any:
        pending, self._pending = self._pending, None
        if pending is None:
            raise PluginHostError(f"no request pending on plugin host {self.name}")
        op, args = pending
        if op == protocol.PUT:
            answer = self._host.dispatch(op, _copy_put(args))
        elif op == protocol.POLL:
            answer = _copy_poll(self._host.dispatch(op, args))
        else:
            answer = _copy(self._host.dispatch(op, _copy(args)))
        if answer[0] == "err":
            raise remote_error(self.name, ErrorInfo(*answer[1]))
        return answer[1]
