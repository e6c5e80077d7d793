"""Metrics reporters for tests (``metric.reporters``): one that records what the worker tells
it, one that raises from every method."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, ClassVar


class RecordingReporter:
    """Keeps every call; instances register themselves in :attr:`made` (the worker makes
    them from the class name)."""

    made: ClassVar[list[RecordingReporter]] = []

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.configs: dict[str, str] | None = None
        self.initial: list[Any] = []
        self.changes: list[tuple[str, str, tuple[tuple[str, str], ...]]] = []
        self.removals: list[tuple[str, str, tuple[tuple[str, str], ...]]] = []
        # The metrics registered and not removed since, by key: their values read now.
        self.live: dict[tuple[str, str, tuple[tuple[str, str], ...]], Any] = {}
        self.closed = False
        RecordingReporter.made.append(self)

    def configure(self, configs: Mapping[str, str]) -> None:
        self.configs = dict(configs)

    def init(self, metrics: list[Any]) -> None:
        self.initial = list(metrics)

    @staticmethod
    def _key(metric: Any) -> tuple[str, str, tuple[tuple[str, str], ...]]:
        name = metric.metric_name
        return (name.group, name.name, tuple(sorted(name.tags)))

    def metric_change(self, metric: Any) -> None:
        with self.lock:
            self.changes.append(self._key(metric))
            self.live[self._key(metric)] = metric

    def metric_removal(self, metric: Any) -> None:
        with self.lock:
            self.removals.append(self._key(metric))
            if self.live.get(self._key(metric)) is metric:
                del self.live[self._key(metric)]

    def close(self) -> None:
        self.closed = True


class BrokenReporter:
    """Fails in every call after ``configure``: the worker must log it and go on."""

    def configure(self, configs: Mapping[str, str]) -> None:
        pass

    def init(self, metrics: list[Any]) -> None:
        raise RuntimeError("broken reporter: init")

    def metric_change(self, metric: Any) -> None:
        raise RuntimeError("broken reporter: metric_change")

    def metric_removal(self, metric: Any) -> None:
        raise RuntimeError("broken reporter: metric_removal")

    def close(self) -> None:
        raise RuntimeError("broken reporter: close")
