"""Where an exactly-once source task's transactions end (KIP-618 ``transaction.boundary``).

One :class:`TransactionBoundary` per task, asked by the loop (:mod:`core.runtime.exactly_once`)
on the task's thread:

* ``poll``: after every batch ``poll()`` returned (Kafka's default). Small transactions, the
  most commits.
* ``interval``: once ``transaction.boundary.interval.ms`` (default ``offset.flush.interval.ms``)
  has passed, checked after each batch and also while no records come: Kafka checks only
  after a batch, so a source that went quiet kept its last transaction open until the
  broker's transaction timeout fenced the task; ours commits it when due.
* ``connector``: where the task says, through its transaction context (the boundaries come
  with the poll's answer, :attr:`isolation.PollResult.boundaries`); never on the runtime's
  initiative, not even on stop (an unfinished transaction is aborted, its records are
  polled again after a restart), as in Kafka.

On pause, ``poll`` and ``interval`` commit what is open (Kafka's ``onPause``): a transaction
left open through a long pause would time out and fence the task.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["TransactionBoundary", "boundary_for"]

POLL, INTERVAL, CONNECTOR = "poll", "interval", "connector"


class TransactionBoundary:
    """``poll``: commit after every batch, on pause and on stop."""

    name = POLL

    def start(self) -> None:
        """A transaction cycle starts (the task started, or was resumed)."""

    def after_batch(self) -> bool:
        """Whether to commit now that a batch was handed to the producer."""
        return True

    def due(self) -> bool:
        """Whether to commit although no batch just came (checked every loop iteration)."""
        return False

    def at_stop(self) -> bool:
        """Whether the open transaction is committed when the task stops or pauses (else it
        is aborted on stop and left open on pause)."""
        return True

    def committed(self) -> None:
        """A transaction was just committed (or aborted): the next one starts now."""


class IntervalBoundary(TransactionBoundary):
    """``interval``: commit once ``interval_s`` has passed since the last commit."""

    name = INTERVAL

    def __init__(self, interval_s: float, clock: Callable[[], float]) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._last = clock()

    def start(self) -> None:
        self._last = self._clock()

    def after_batch(self) -> bool:
        return self.due()

    def due(self) -> bool:
        return self._clock() >= self._last + self.interval_s

    def committed(self) -> None:
        self._last = self._clock()


class ConnectorBoundary(TransactionBoundary):
    """``connector``: only where the task's transaction context says."""

    name = CONNECTOR

    def after_batch(self) -> bool:
        return False

    def at_stop(self) -> bool:
        return False


def boundary_for(name: str, interval_s: float, clock: Callable[[], float]) -> TransactionBoundary:
    """The boundary of ``transaction.boundary=name``.

    Raises:
        ValueError: an unknown name (the connector config's validator refuses those first).
    """
    if name == POLL:
        return TransactionBoundary()
    if name == INTERVAL:
        return IntervalBoundary(interval_s, clock)
    if name == CONNECTOR:
        return ConnectorBoundary()
    raise ValueError(f"unknown transaction.boundary {name!r}")
