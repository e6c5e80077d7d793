"""One ordered queue of operations per connector, each drained by a thread of its own.

Why not one lock, or one herder thread, for every connector: an operation on a connector calls
its plugin (start, stop, task configs, validation), and a plugin may hang. Behind a shared lock
or a single thread, one hung plugin froze every REST write in the worker for the length of its
call timeout. Per connector, a hung plugin delays only the operations queued for that same
connector, and only until its call's deadline reclaims it (Kafka's BlockingConnectorTest asks
exactly this of a worker).

A key's thread exists only while the key has work queued: an idle worker has no such threads.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

__all__ = ["KeyedSerialExecutor"]

log = logging.getLogger("copycat.serial")

T = TypeVar("T")


@dataclass
class _Queue:
    items: collections.deque[tuple[str, Callable[[], Any], Future[Any]]] = field(
        default_factory=collections.deque
    )
    running: Future[Any] | None = None  # the operation the key's thread is busy with
    thread: threading.Thread | None = None


class KeyedSerialExecutor:
    """Runs callables one at a time per key, in submission order; keys run in parallel."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._queues: dict[str, _Queue] = {}

    def submit(self, key: str, what: str, fn: Callable[[], T]) -> Future[T]:
        """Queue ``fn`` (described by ``what``, for diagnostics) behind ``key``'s earlier work."""
        future: Future[T] = Future()
        with self._lock:
            queue = self._queues.setdefault(key, _Queue())
            queue.items.append((what, fn, future))
            if queue.thread is None:
                queue.thread = threading.Thread(
                    target=self._drain, args=(key, queue), name=f"{self._name}-{key}", daemon=True
                )
                queue.thread.start()
        return future

    def post(self, key: str, what: str, fn: Callable[[], object]) -> None:
        """Queue ``fn`` as :meth:`submit` does, for callers that do not wait for it (a config
        change, an assignment, a plugin's request): an exception nobody would have retrieved
        from its future is logged instead, naming ``key`` and ``what``."""
        future = self.submit(key, what, fn)
        future.add_done_callback(partial(self._log_failure, key, what))

    def _log_failure(self, key: str, what: str, future: Future[object]) -> None:
        if future.cancelled():
            return
        exc = future.exception()
        if exc is not None:
            log.error(
                "%s %s: %s failed: %s",
                self._name,
                key,
                what,
                exc or type(exc).__name__,
                exc_info=exc,
            )

    def running(self, key: str) -> object | None:
        """A token for the operation ``key``'s thread is busy with (None while it is idle),
        to act on that very operation later with :meth:`if_still_running`."""
        with self._lock:
            queue = self._queues.get(key)
            return None if queue is None else queue.running

    def if_still_running(self, key: str, token: object, fn: Callable[[], object]) -> bool:
        """Call ``fn`` if the operation ``token`` (from :meth:`running`) is still the one
        ``key``'s thread is busy with, and say whether it was called.

        No later operation of ``key`` begins while ``fn`` runs, so ``fn`` acts on what
        ``token``'s operation left, never on a later one's (e.g. a connector deleted and
        created again under the same name); keep it short, it holds every key's queue.
        """
        with self._lock:
            queue = self._queues.get(key)
            if queue is None or queue.running is not token:
                return False
            fn()
            return True

    def on_own_thread(self, key: str) -> bool:
        """Whether the caller is ``key``'s thread (an operation queuing more work for itself
        must run it inline instead of waiting for it behind itself)."""
        with self._lock:
            queue = self._queues.get(key)
            return queue is not None and queue.thread is threading.current_thread()

    def _drain(self, key: str, queue: _Queue) -> None:
        while True:
            with self._lock:
                if not queue.items:
                    queue.thread = None
                    queue.running = None
                    if self._queues.get(key) is queue:
                        del self._queues[key]
                    return
                what, fn, future = queue.items.popleft()
                queue.running = future
            if not future.set_running_or_notify_cancel():
                continue
            log.debug("%s %s: %s", self._name, key, what)
            try:
                future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
                future.set_exception(exc)
            finally:
                with self._lock:
                    queue.running = None
