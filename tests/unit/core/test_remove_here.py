"""A deleted connector's removal on a distributed worker (core/distributed/config_reactions.py):
its statuses are tombstoned while the worker still holds the name, and a name created again
meanwhile asks for a rebalance after the worker let go of it. Tombstones sent after the worker
stopped listing the name in its join metadata could land after the RUNNING of the re-created
connector's new owner, leaving its status a 404 on every worker."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from core.distributed.assignor import Held
from core.distributed.config_reactions import ConfigReactions


class _Herder:
    """What _remove_here reads and writes, recording the order of what it does."""

    def __init__(self, configured_again: bool) -> None:
        self.events: list[tuple[str, Any]] = []
        self._assigned = Held.of(["gone", "other"], [("gone", 0), ("gone", 1), ("other", 0)])
        self._assigned_lock = threading.Lock()
        self._is_leader = False
        self.task_stops = 0
        self.statuses = SimpleNamespace(
            reset_topics=lambda name: self.events.append(("reset topics", name))
        )
        snapshot = SimpleNamespace(contains=lambda name: configured_again)
        self.configs = SimpleNamespace(snapshot=lambda: snapshot)
        worker = SimpleNamespace(
            connectors={"gone": SimpleNamespace(tasks={0: object(), 1: object()})},
            stop_connector=lambda name: self.events.append(("stop", name)),
            forget_connector=lambda name: self.events.append(("forget", name)),
            forget_topics=lambda name: None,
            status=SimpleNamespace(
                remove_connector=lambda name: self.events.append(("tombstone", self._holds(name))),
                remove_task=lambda name, task: self.events.append(
                    ("tombstone task", self._holds(name))
                ),
            ),
        )
        self._worker = lambda: worker

    def _holds(self, name: str) -> bool:
        return name in self._assigned.connectors

    def _request_rebalance(self, why: str) -> None:
        self.events.append(("rebalance", self._holds("gone")))


def test_statuses_are_tombstoned_while_the_worker_still_holds_the_name() -> None:
    herder = _Herder(configured_again=False)
    ConfigReactions._remove_here(herder, "gone")  # type: ignore[arg-type]
    assert ("tombstone", True) in herder.events, herder.events
    assert herder._assigned == Held.of(["other"], [("other", 0)])
    assert not any(event == "rebalance" for event, _ in herder.events)


def test_a_name_created_again_asks_for_a_rebalance_once_the_worker_let_go() -> None:
    herder = _Herder(configured_again=True)
    ConfigReactions._remove_here(herder, "gone")  # type: ignore[arg-type]
    assert herder.events[-1] == ("rebalance", False), herder.events
    assert herder.events.index(("tombstone", True)) < len(herder.events) - 1
