"""The one lifecycle every task loop has, whoever drives it.

A driver (the worker's task thread, a Spark executor's task) runs::

    loop.start()
    while not told to stop:
        loop.pause() / loop.resume()   when the target state changes
        moved = loop.iteration()       also while paused: it keeps the clients alive
        if not moved: wait a little (paused: loop.paused_wait_s, ended by a resume or stop)
    (a pause, resume or stop from another thread also calls loop.wake())
    loop.stop(failed=..., timeout_s=graceful timeout)

and never looks inside: no ``isinstance`` on loop types, no private fields. Offsets are
committed inside :meth:`TaskLoop.iteration` when due (the loop has the clock), and once more by
:meth:`TaskLoop.stop`, also after a failure (what a failed task had safely written).
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["SOURCE_PAUSED_WAIT_S", "TaskLoop"]

# A paused source's TaskLoop.paused_wait_s: its paused iteration only serves the producer's
# acknowledgements and commits what is due, which may wait this long (the default offset
# commit interval is a minute); a resume or a stop ends the wait at once.
SOURCE_PAUSED_WAIT_S = 1.0


class TaskLoop(Protocol):
    @property
    def name(self) -> str:
        """``<connector>-<task id>``."""
        ...

    def start(self) -> None:
        """Subscribe, open partitions, whatever must happen before the first iteration."""
        ...

    def iteration(self) -> int:
        """Move one batch (poll+produce, or consume+put) and commit if due; return how many
        records moved. While paused: move nothing, but keep the Kafka clients serviced (a
        sink keeps its group membership) and commit what is due."""
        ...

    def pause(self) -> None:
        """Stop moving records until :meth:`resume` (a framework pause: REST or target
        state). A sink pauses its consumer's partitions and keeps polling."""
        ...

    def resume(self) -> None: ...

    @property
    def paused_wait_s(self) -> float:
        """While paused, how long the driver may wait after an iteration that moved nothing
        before the next one (a resume or a stop ends the wait at once). Long for a source,
        whose paused iteration only serves its producer and commits what is due (Kafka's
        WorkerTask.awaitUnpause waits until resumed); 0 for a sink, whose paused iteration
        polls its consumer, waiting there, to keep its group membership (the driver then waits
        as after any idle iteration)."""
        ...

    def wake(self) -> None:
        """Any thread: the driver has a pause, resume or stop to act on. A loop whose
        iteration may wait on its driver's behalf while idle (one running in its plugin host,
        see core/runtime/in_host.py) ends that wait now; others have nothing to do."""
        ...

    def stop(self, *, failed: bool, timeout_s: float, fenced: bool = False) -> None:
        """Commit what is durable (after a failure too: a source's acknowledged records, a
        sink's records put before the failing batch, as its pre_commit() agrees), stop the
        task in its host and close the clients, within ``timeout_s``. A ``fenced`` task
        (another attempt of it runs: a replaced Spark attempt) commits nothing: its sink
        consumer may still be in the group, and its commit could take the new attempt's
        offsets back."""
        ...

    def topics(self) -> set[str]:
        """Topics the task produced to or consumed records from since its last
        :meth:`forget_topics` (KIP-558 active topics)."""
        ...

    def forget_topics(self) -> None:
        """Any thread: the connector's active topics were reset; :meth:`topics` is empty until
        the task produces to or consumes from a topic again, as in Kafka."""
        ...

    @property
    def records_moved(self) -> int:
        """Records sent (source) or put (sink) so far."""
        ...

    def take_counters(self) -> tuple[float, ...] | None:
        """A snapshot of the loop's cumulative counters (:mod:`core.runtime.counters`), the
        driver's to turn into the task's metrics after an iteration; None when there is no
        new one (a loop in a plugin host has them from its last answer)."""
        ...

    @property
    def progress(self) -> tuple[int, float]:
        """``(records moved so far, the loop's clock when they had moved)``, taken together
        (``(0, 0.0)`` before any): a rate between two readings does not depend on when, or
        from which process, they were read (benchmarks; the clock is ``time.monotonic``)."""
        ...
