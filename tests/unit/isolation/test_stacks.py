"""Thread stacks on demand (isolation/stacks.py): only a process that catches the signal gets it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from isolation import stacks
from tests.support.processes import wait_until


def _waits_with_stacks(before_enable: str = "") -> str:
    """A script that enables the dump (after ``before_enable``), says ready and waits."""
    return (
        "import io, sys, time; sys.path[0:0] = [sys.argv[1]]; from isolation import stacks\n"
        f"{before_enable}\n"
        "stacks.enable()\n"
        "def waiting_here():\n    print('ready', flush=True); time.sleep(60)\n"
        "waiting_here()"
    )


def _stacks_written_by(script: str) -> str:
    """Run ``script``, ask it for its stacks once it is ready; its standard error."""
    root = str(Path(stacks.__file__).resolve().parents[1])
    proc = subprocess.Popen(
        [sys.executable, "-c", script, root],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        assert stacks.request(proc.pid)
        time.sleep(0.5)
        assert proc.poll() is None  # still running: the signal only asked for stacks
    finally:
        proc.kill()
        _, err = proc.communicate(timeout=10)
    return err


def test_a_process_that_catches_the_signal_writes_its_stacks() -> None:
    err = _stacks_written_by(_waits_with_stacks())
    assert "in waiting_here" in err, err


def test_enabled_while_sys_stderr_has_no_descriptor() -> None:
    """The CLI enables the dump in whatever process calls it: one whose sys.stderr is a
    Python stream without a descriptor (pytest's capsys, io.StringIO) still gets its stacks
    on its real standard error, and enabling them does not fail."""
    err = _stacks_written_by(_waits_with_stacks("sys.stderr = io.StringIO()"))
    assert "in waiting_here" in err, err


def test_a_process_without_a_handler_is_not_signalled() -> None:
    proc = subprocess.Popen(["sleep", "30"])
    try:
        wait_until(lambda: _state(proc.pid) in {"S", "R"}, 5, "sleep to run")
        assert not stacks.request(proc.pid)
        time.sleep(0.2)
        assert proc.poll() is None  # SIGUSR1's default action would have ended it
    finally:
        proc.kill()
        proc.wait(10)


def test_a_process_that_is_gone_is_not_asked() -> None:
    proc = subprocess.Popen(["true"])
    proc.wait(10)
    assert not stacks.request(proc.pid)


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()[0]
