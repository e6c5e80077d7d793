"""The distributed herder's KIP-558 sweep (core/distributed/rebalancing.py): one connector whose
tasks' topics cannot be read must not keep the others' topics from the status topic, and a
deleted connector's (tombstoned at its delete) are not recorded again."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from core.distributed.rebalancing import Rebalancing


class _Worker:
    def __init__(self) -> None:
        self.connectors: dict[str, Any] = {
            "broken": SimpleNamespace(tasks={0: object()}),
            "fine": SimpleNamespace(tasks={2: object(), 1: object()}),
            "deleted": SimpleNamespace(tasks={0: object()}),  # removal not applied here yet
        }

    def task_topics(self, name: str) -> set[str]:
        if name == "broken":
            raise RuntimeError("Set changed size during iteration")
        return {"b", "a"}


class _Statuses:
    def __init__(self) -> None:
        self.put: list[tuple[str, str, int]] = []

    def put_topic(self, connector: str, topic: str, task: int) -> None:
        self.put.append((connector, topic, task))


def test_a_connector_whose_topics_fail_does_not_hide_the_next_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    statuses = _Statuses()
    snapshot = SimpleNamespace(contains=lambda name: name != "deleted")
    configs = SimpleNamespace(snapshot=lambda: snapshot)
    herder = SimpleNamespace(worker=_Worker(), statuses=statuses, configs=configs)
    with caplog.at_level(logging.ERROR, logger="copycat.distributed"):
        Rebalancing._publish_topics(herder)  # type: ignore[arg-type]
    assert statuses.put == [("fine", "a", 1), ("fine", "b", 1)]
    assert "could not record the active topics of connector broken" in caplog.text
