"""Idle warm plugin hosts, marked so that removing their plugin retires them instead of
being refused.

A worker keeps hosts that answered a validation warm for the next one (``core/host_pool.py``);
such a host runs from its plugin env, so ``plugins remove`` and ``upgrade``, which count the
processes running from an env (:func:`registry.manage.processes_using`), took it for a user
and refused for up to the pool's idle time, although no connector used the plugin.

While a host sits idle in the pool, the worker keeps a marker file for it beside the env:
``<plugin dir>/.idle-hosts/<pid>-<start time>`` (hidden, so plugin.path scans skip it; the
process start time guards against a recycled pid after a worker crash left a marker behind).
Whoever deletes the marker owns the idle host, and deleting is atomic, so the two sides never
both win: the pool deletes it to lease the host again (and starts a new host if it is gone),
a remover deletes it to retire the host (it then stops the process and does not count it).
A host being used (leased) has no marker and keeps blocking removal.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

# Where Linux lists processes; without it no marker is written (and no process is counted).
PROC = Path("/proc")
MARKER_DIR = ".idle-hosts"


def _start_time(pid: int) -> str | None:
    try:
        # Field 22 of /proc/<pid>/stat, counted after the command name in parentheses.
        return (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def marker(env_location: Path, pid: int) -> Path | None:
    """The marker of an idle host ``pid`` of the env at ``env_location``, or None where the
    process (or /proc) is not there to tell its start time."""
    started = _start_time(pid)
    if started is None:
        return None
    return env_location.parent / MARKER_DIR / f"{pid}-{started}"


def mark_idle(env_location: Path, pid: int | None) -> Path | None:
    """Mark host ``pid`` idle; return the marker (None if it cannot be marked: it then
    counts as in use, which is only slower, never unsafe)."""
    path = marker(env_location, pid) if pid is not None else None
    if path is None:
        return None
    try:
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"{env_location}\n")
    except OSError:
        return None
    return path


def claim(path: Path | None) -> bool:
    """Take the idle host ``path`` marks; True if this caller now owns it."""
    if path is None:
        return False
    try:
        path.unlink()
    except OSError:
        return False
    return True


def retire(env_location: Path, pid: int) -> bool:
    """If ``pid`` is an idle pooled host of the env at ``env_location``, take it from the
    pool and stop it; True if so (it is then no user of the env)."""
    if not claim(marker(env_location, pid)):
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        pass  # already gone, or not ours to stop: the pool will never use it again anyway
    return True
