"""Connector and task states as Kafka Connect reports them (AbstractStatus.State)."""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass, field, replace

from isolation import PluginHostCrashed, RemotePluginError, exception_trace


class State(enum.Enum):
    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    FAILED = "FAILED"
    RESTARTING = "RESTARTING"
    STOPPED = "STOPPED"
    DESTROYED = "DESTROYED"


@dataclass(frozen=True)
class Status:
    state: State
    worker_id: str
    trace: str | None = None
    version: str | None = None
    # The group generation the status belongs to (distributed mode). 0: the store stamps the
    # generation its worker is in now; a task's last UNASSIGNED carries the generation its
    # worker was in when told to stop instead (core.distributed.status_store says why).
    generation: int = 0


# A status trace is in every GET .../status answer (and, in distributed mode, in a record of
# the status topic). A crashed host's 200-line output tail made traces of 45 KB, twice that
# when the tail was repeated. A longer trace keeps its start (what failed, and where) and its
# end (the last lines the plugin wrote, usually its own traceback).
MAX_TRACE_CHARS = 16_384
# Of MAX_TRACE_CHARS, the part kept from the start of a cut trace; the rest is its end.
_TRACE_HEAD_CHARS = 4_096


def failure_trace(exc: BaseException) -> str:
    """The trace shown in REST status: ours, then the plugin's own if it came from a host.

    At most MAX_TRACE_CHARS long; a crashed host's output appears once (its message
    already quotes it).
    """
    text = exception_trace(exc)  # the exception first, as Kafka's traces
    if isinstance(exc, RemotePluginError):
        # The plugin's exception, by its Kafka class name, on the first line (Kafka's trace
        # starts with the exception the task threw); the worker's frames, naming the plugin
        # host, after it.
        text = f"{_first_line(exc)}\n{text}"
        text += f"\nCaused by (in plugin host {exc.plugin}): {exc.remote_traceback}"
    elif isinstance(exc, PluginHostCrashed):
        if exc.exit_reason not in text:
            text += f"\nPlugin host exit: {exc.exit_reason}"
        if exc.stderr_tail not in text:
            text += f"\n{exc.stderr_tail}"
    cause = exc.__cause__
    if isinstance(cause, RemotePluginError) and cause is not exc:
        text += f"\nCaused by (in plugin host {cause.plugin}): {cause.remote_traceback}"
    return _bounded(text)


def _first_line(exc: RemotePluginError) -> str:
    """The first line of the plugin's own trace (its exception by Kafka's class name, and its
    message), else its type and message."""
    first = exc.remote_traceback.split("\n", 1)[0]
    return first or f"{exc.remote_type}: {exc.remote_message}"


def _bounded(text: str) -> str:
    if len(text) <= MAX_TRACE_CHARS:
        return text
    # The cut count has at most as many digits as len(text): room for the marker is reserved
    # with that, so the result never exceeds MAX_TRACE_CHARS.
    room = len(f"\n... [{len(text)} characters cut] ...\n")
    tail = MAX_TRACE_CHARS - _TRACE_HEAD_CHARS - room
    cut = len(text) - _TRACE_HEAD_CHARS - tail
    return f"{text[:_TRACE_HEAD_CHARS]}\n... [{cut} characters cut] ...\n{text[-tail:]}"


@dataclass
class StatusBoard:
    """In-memory connector/task statuses (standalone); distributed mode mirrors it to a topic."""

    connectors: dict[str, Status] = field(default_factory=dict)
    tasks: dict[tuple[str, int], Status] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # No group outside distributed mode (the StatusStore protocol's generation).
    generation: int = 0

    def set_connector(self, name: str, status: Status) -> None:
        with self._lock:
            self.connectors[name] = status

    def set_task(self, name: str, task: int, status: Status) -> None:
        with self._lock:
            self.tasks[(name, task)] = status

    def update_task(self, name: str, task: int, **changes: object) -> None:
        with self._lock:
            current = self.tasks.get((name, task))
            if current is not None:
                self.tasks[(name, task)] = replace(current, **changes)  # type: ignore[arg-type]

    def remove_connector(self, name: str) -> None:
        with self._lock:
            self.connectors.pop(name, None)
            for key in [k for k in self.tasks if k[0] == name]:
                del self.tasks[key]

    def remove_task(self, name: str, task: int) -> None:
        with self._lock:
            self.tasks.pop((name, task), None)

    def connector(self, name: str) -> Status | None:
        return self.connectors.get(name)

    def task(self, name: str, task: int) -> Status | None:
        return self.tasks.get((name, task))

    def tasks_of(self, name: str) -> dict[int, Status]:
        with self._lock:
            return {t: s for (c, t), s in self.tasks.items() if c == name}
