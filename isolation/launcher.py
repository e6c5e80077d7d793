"""Starting child processes that die with the worker *process*, never with a thread.

Linux's ``PR_SET_PDEATHSIG`` fires when the *thread* that forked the child exits, not when
the process does. REST handlers run on a threadpool whose idle threads are retired after a few
seconds, so plugin hosts forked from a handler were SIGKILLed seconds after ``POST
/connectors`` returned (and on SIGTERM every REST-created host died instead of stopping
gracefully). Every child is therefore forked by one long-lived launcher thread, which lives as
long as the worker process.

Children also get a session of their own (``setsid``): a terminal's Ctrl-C (SIGINT to the
foreground process group) or ``timeout``'s SIGTERM reaches only the worker, which then stops
its plugin hosts gracefully, instead of every host dying at once mid-call.
"""

from __future__ import annotations

import queue
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["PDEATHSIG_PRELUDE", "spawn"]

# Run first by a child's interpreter (Python children we start: plugin hosts): ask the kernel
# to SIGKILL it when its parent dies, then check that the parent is still the one that
# started it (it may have died before the prctl). The launcher thread never exits before the
# process does, so the death signal means the worker process is gone.
PDEATHSIG_PRELUDE = (
    "import ctypes, os, signal, sys; "
    "ctypes.CDLL(None).prctl(1, signal.SIGKILL) if sys.platform == 'linux' else None; "
    "os.getppid() == {parent} or os._exit(70); "
)


class _Launcher(threading.Thread):
    """The one thread that forks every child process of the worker."""

    def __init__(self) -> None:
        super().__init__(name="copycat-launcher", daemon=True)
        self.requests: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = (
            queue.SimpleQueue()
        )

    def run(self) -> None:
        while True:
            fn, future = self.requests.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                future.set_exception(exc)


_launcher: _Launcher | None = None
_launcher_lock = threading.Lock()


def _the_launcher() -> _Launcher:
    global _launcher
    with _launcher_lock:
        if _launcher is None or not _launcher.is_alive():
            _launcher = _Launcher()
            _launcher.start()
        return _launcher


def spawn(args: list[str], **popen_kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(args, **popen_kwargs)`` forked by the launcher thread.

    The child gets its own session (terminal signals reach only the worker). A Python child
    that should die with the worker runs :data:`PDEATHSIG_PRELUDE` first.
    """
    popen_kwargs.setdefault("start_new_session", True)
    if threading.current_thread() is _launcher:
        return subprocess.Popen(args, **popen_kwargs)
    future: Future[subprocess.Popen[bytes]] = Future()
    _the_launcher().requests.put((lambda: subprocess.Popen(args, **popen_kwargs), future))
    return future.result()
