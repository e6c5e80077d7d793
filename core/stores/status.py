"""Connector and task statuses: the :class:`StatusStore` seam.

Kafka Connect's StatusBackingStore: every worker writes the statuses of what it runs, and any
worker answers for all of them. :class:`core.status.StatusBoard` is the in-memory store
(standalone mode, tests); distributed mode keeps them in the status topic as Kafka Connect's
``status-connector-<name>`` / ``status-task-<name>-<n>`` records.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from core.secrets import scrub_for
from core.status import Status

__all__ = ["ScrubbingStatusStore", "StatusStore"]


class StatusStore(Protocol):
    @property
    def generation(self) -> int:
        """The group generation a status written now is stamped with (0 outside a group)."""
        ...

    def set_connector(self, name: str, status: Status) -> None: ...

    def set_task(self, name: str, task: int, status: Status) -> None: ...

    def update_task(self, name: str, task: int, **changes: object) -> None:
        """Change fields of a task's present status (no status: nothing happens); the rest,
        its worker and generation included, stay. A new state a task reports (PAUSED, RUNNING)
        is a new status (``set_task``), of the generation its worker is in now."""
        ...

    def remove_connector(self, name: str) -> None:
        """Forget a deleted connector and its tasks."""
        ...

    def remove_task(self, name: str, task: int) -> None: ...

    def connector(self, name: str) -> Status | None: ...

    def task(self, name: str, task: int) -> Status | None: ...

    def tasks_of(self, name: str) -> dict[int, Status]: ...


class ScrubbingStatusStore:
    """A :class:`StatusStore` that scrubs every trace before the store beneath sees it.

    The worker writes through this, so a trace never reaches the status topic (read by every
    worker of the group, and served raw by them) or the in-memory board with a value resolved
    from a config provider in it: the connector's own values are put back as placeholders
    (:func:`core.secrets.scrub_for`). Reads pass straight through.
    """

    def __init__(self, inner: StatusStore) -> None:
        self.inner = inner

    @property
    def generation(self) -> int:
        return self.inner.generation

    def set_connector(self, name: str, status: Status) -> None:
        self.inner.set_connector(name, _scrubbed(name, status))

    def set_task(self, name: str, task: int, status: Status) -> None:
        self.inner.set_task(name, task, _scrubbed(name, status))

    def update_task(self, name: str, task: int, **changes: object) -> None:
        trace = changes.get("trace")
        if isinstance(trace, str):
            changes["trace"] = scrub_for(name, trace)
        self.inner.update_task(name, task, **changes)

    def remove_connector(self, name: str) -> None:
        self.inner.remove_connector(name)

    def remove_task(self, name: str, task: int) -> None:
        self.inner.remove_task(name, task)

    def connector(self, name: str) -> Status | None:
        return self.inner.connector(name)

    def task(self, name: str, task: int) -> Status | None:
        return self.inner.task(name, task)

    def tasks_of(self, name: str) -> dict[int, Status]:
        return self.inner.tasks_of(name)


def _scrubbed(name: str, status: Status) -> Status:
    if not status.trace:
        return status
    return replace(status, trace=scrub_for(name, status.trace))
