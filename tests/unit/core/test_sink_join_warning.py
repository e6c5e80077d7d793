"""A sink task whose consumer never completes its group join says so (it reads nothing)."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from core.runtime.sink import JOIN_WARN_S, SinkTaskLoop


class _JoiningConsumer:
    """Subscribed, never assigned: what a consumer in a group that never completes a join
    sees (on the dev broker, after a member left mid-join). ``topics`` are those the cluster
    has."""

    def __init__(self, topics: tuple[str, ...] = ("t",)) -> None:
        self.topics = topics

    def list_topics(self, timeout: float) -> Any:
        return SimpleNamespace(topics={t: SimpleNamespace(error=None) for t in self.topics})

    def subscribe(self, topics: list[str], **callbacks: Any) -> None:
        self.callbacks = callbacks

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        return []

    def poll(self, timeout: float) -> None:
        return None

    def assign(self, partitions: list[Any]) -> None:
        pass


def _loop(now: list[float], existing: tuple[str, ...] = ("t",)) -> SinkTaskLoop:
    nothing = SimpleNamespace(
        seeks={}, pause=[], resume=[], request_commit=False, timeout_ms=None, reported=[]
    )
    host = SimpleNamespace(
        pending=False, overlaps=False, passes_objects=False, open=lambda *_: nothing
    )
    consumer = _JoiningConsumer(existing)
    loop = SinkTaskLoop("c", 0, host, 0, consumer, topics=["t"], clock=lambda: now[0])  # type: ignore[arg-type]
    loop.start()
    return loop


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "joining its group" in r.getMessage()]


def test_a_join_that_does_not_complete_is_reported_and_reported_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "copycat")
    now = [1000.0]
    loop = _loop(now)
    now[0] += JOIN_WARN_S - 1
    loop.iteration()
    assert _warnings(caplog) == []
    now[0] += 1
    loop.iteration()
    loop.iteration()
    assert len(_warnings(caplog)) == 1
    assert "c-0" in _warnings(caplog)[0] and f"for {JOIN_WARN_S:.0f} s" in _warnings(caplog)[0]
    now[0] += JOIN_WARN_S
    loop.iteration()
    assert len(_warnings(caplog)) == 2


def test_a_completed_join_is_not_reported(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "copycat")
    now = [1000.0]
    loop = _loop(now)
    loop._on_assign(loop.consumer, [])  # type: ignore[arg-type]
    now[0] += 10 * JOIN_WARN_S
    loop.iteration()
    assert _warnings(caplog) == []


def test_a_sink_waiting_for_its_topic_is_not_reported(caplog: pytest.LogCaptureFixture) -> None:
    # librdkafka joins only once a subscribed topic exists: until then nothing is stuck.
    caplog.set_level(logging.WARNING, "copycat")
    now = [1000.0]
    loop = _loop(now, existing=("other",))
    for _ in range(3):
        now[0] += JOIN_WARN_S
        loop.iteration()
    assert _warnings(caplog) == []
    loop.consumer.topics = ("t",)  # type: ignore[attr-defined]
    now[0] += JOIN_WARN_S
    loop.iteration()
    assert len(_warnings(caplog)) == 1
