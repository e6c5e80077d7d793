"""Connector and task states as Kafka Connect reports them (AbstractStatus.State)."""

from __future__ import annotations

import enum
import threading
import traceback
from dataclasses import dataclass, field, replace

from isolation import PluginHostCrashed, RemotePluginError


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
    generation: int = 0


def failure_trace(exc: BaseException) -> str:
    """The trace shown in REST status: ours, then the plugin's own if it came from a host."""
    text = "".join(traceback.format_exception(exc))
    if isinstance(exc, RemotePluginError):
        text += f"\nCaused by (in plugin host {exc.plugin}):\n{exc.remote_traceback}"
    elif isinstance(exc, PluginHostCrashed):
        text += f"\nPlugin host exit: {exc.exit_reason}\n{exc.stderr_tail}"
    cause = exc.__cause__
    if isinstance(cause, RemotePluginError) and cause is not exc:
        text += f"\nCaused by (in plugin host {cause.plugin}):\n{cause.remote_traceback}"
    return text


@dataclass
class StatusBoard:
    """In-memory connector/task statuses (standalone); distributed mode mirrors it to a topic."""

    connectors: dict[str, Status] = field(default_factory=dict)
    tasks: dict[tuple[str, int], Status] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

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
