"""Connector and task statuses: the :class:`StatusStore` seam.

Kafka Connect's StatusBackingStore: every worker writes the statuses of what it runs, and any
worker answers for all of them. :class:`core.status.StatusBoard` is the in-memory store
(standalone mode, tests); distributed mode keeps them in the status topic as Kafka Connect's
``status-connector-<name>`` / ``status-task-<name>-<n>`` records.
"""

from __future__ import annotations

from typing import Protocol

from core.status import Status

__all__ = ["StatusStore"]


class StatusStore(Protocol):
    def set_connector(self, name: str, status: Status) -> None: ...

    def set_task(self, name: str, task: int, status: Status) -> None: ...

    def update_task(self, name: str, task: int, **changes: object) -> None:
        """Change fields of a task's present status (no status: nothing happens)."""
        ...

    def remove_connector(self, name: str) -> None:
        """Forget a deleted connector and its tasks."""
        ...

    def remove_task(self, name: str, task: int) -> None: ...

    def connector(self, name: str) -> Status | None: ...

    def task(self, name: str, task: int) -> Status | None: ...

    def tasks_of(self, name: str) -> dict[int, Status]: ...
