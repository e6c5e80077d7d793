"""Thread stacks on demand, for a process that hangs where no log line says why.

``kill -USR1 <pid>`` makes a worker or a plugin host write every thread's Python stack to its
standard error, as ``jstack`` does for a Kafka Connect worker; a host's standard error is
relayed to the worker's log (``copycat.plugin.<name>``). :mod:`faulthandler` writes from the
signal handler itself, so a thread stuck in C code holding the GIL does not keep the stacks
from coming out.

The worker asks a task's host for its stacks itself when the task's start takes unusually long
(:mod:`core.worker`). SIGUSR1's default action ends a process, so :func:`request` signals only
a process that catches it.
"""

from __future__ import annotations

import faulthandler
import os
import signal

__all__ = ["STACKS_SIGNAL", "enable", "request"]

STACKS_SIGNAL = signal.SIGUSR1
# The process's standard error, by descriptor: sys.stderr may have been replaced by an object
# without one (pytest's capsys, an application embedding the CLI, io.StringIO), and faulthandler
# writes from a signal handler, so it needs a descriptor, not a Python stream.
STDERR_FD = 2


def enable() -> None:
    """Dump every thread's stack to the process's standard error (file descriptor 2, whatever
    ``sys.stderr`` is now) on :data:`STACKS_SIGNAL`."""
    faulthandler.register(STACKS_SIGNAL, file=STDERR_FD, all_threads=True, chain=False)


def _catches(pid: int, signum: int) -> bool:
    """Whether ``pid`` has a handler for ``signum`` (Linux: its ``SigCgt`` mask)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def request(pid: int) -> bool:
    """Ask process ``pid`` for its stacks; False if it cannot answer (gone, not ours, or no
    handler yet: then it is not signalled at all)."""
    if not _catches(pid, STACKS_SIGNAL):
        return False
    try:
        os.kill(pid, STACKS_SIGNAL)
    except OSError:
        return False
    return True
