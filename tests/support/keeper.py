"""Run one command for as long as another process lives: the life line of shared test services.

    python tests/support/keeper.py WATCH_PID LOG_FILE -- java -cp ... kafka.Kafka ...

A broker shared by every pytest-xdist worker is started by whichever worker needs it first,
but must outlive that worker and die with the test run (the xdist controller, ``WATCH_PID``),
also when the run is killed with ``kill -9``. ``PR_SET_PDEATHSIG`` alone cannot say that: it
ties the child to the thread that forked it. So this small process forks the command (which
gets ``SIGKILL`` if the keeper dies), waits on a pidfd of ``WATCH_PID``, and kills the command
when that process is gone, when the command exits on its own, or on SIGTERM/SIGINT.

Standard library only: it runs with whatever interpreter started the tests.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable

# When the watched process cannot be waited on with a pidfd (kernels before 5.3), how often
# to check that it still exists: a leaked JVM for a second is harmless.
POLL_INTERVAL_S = 1.0

# Time the command gets to exit after SIGTERM before SIGKILL. Test brokers keep nothing worth
# a clean shutdown; this only lets the JVM close its log file.
STOP_GRACE_S = 2.0

_PR_SET_PDEATHSIG = 1


def _dying_with(keeper_pid: int) -> Callable[[], None]:
    """The command's ``preexec_fn``: SIGKILL when the keeper dies. The keeper may die between
    the fork and the ``prctl`` (a test kills it as soon as the command's pid exists; under load
    that window is milliseconds), and a death-signal set after the parent died never comes, so
    the child checks its parent once the signal is set, and dies if the keeper is gone.
    libc is loaded before the fork: as little as possible runs in the child."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def die_with_keeper() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != keeper_pid:
            os.kill(os.getpid(), signal.SIGKILL)

    return die_with_keeper


def _stop(child: subprocess.Popen[bytes]) -> None:
    if child.poll() is not None:
        return
    child.terminate()
    try:
        child.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def main(argv: list[str]) -> int:
    watch_pid, log_file, separator, *command = argv
    if separator != "--" or not command:
        print("usage: keeper.py WATCH_PID LOG_FILE -- COMMAND...", file=sys.stderr)
        return 2
    stop_requested = False

    def request_stop(signum: int, frame: object) -> None:
        nonlocal stop_requested
        stop_requested = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    try:
        watched = os.pidfd_open(int(watch_pid))
    except (AttributeError, OSError):
        watched = None
    with open(log_file, "ab") as log:
        child = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=_dying_with(os.getpid()),
        )
    child_fd = os.pidfd_open(child.pid) if watched is not None else None
    try:
        while not stop_requested and child.poll() is None:
            if watched is not None and child_fd is not None:
                try:
                    ready, _, _ = select.select([watched, child_fd], [], [], POLL_INTERVAL_S)
                except InterruptedError:
                    continue
                if watched in ready:
                    break
            else:
                try:
                    os.kill(int(watch_pid), 0)
                except ProcessLookupError:
                    break
                try:
                    child.wait(POLL_INTERVAL_S)
                except subprocess.TimeoutExpired:
                    pass
    finally:
        _stop(child)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
