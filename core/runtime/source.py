"""The source task loop: poll the plugin host, produce the bytes, commit offsets after acks.

The loop knows nothing of threads or herders: whoever drives it (a worker thread, a Spark
executor) follows :class:`core.runtime.loop.TaskLoop`. At-least-once: an offset is stored only
when the broker has acknowledged its record *and every record submitted before it for the same
source partition*, so a crash never skips data (it may resend some).

Hooks for loops with other delivery guarantees (the exactly-once loop,
:mod:`core.runtime.exactly_once`, is a subclass, not a copy): :meth:`SourceTaskLoop._dispatch`
sends one poll's answer, :meth:`SourceTaskLoop._batch_starting` runs before a batch's first
record is produced, :meth:`SourceTaskLoop._first_send_to` the first time a topic is written,
:meth:`SourceTaskLoop._batch_dispatched` once a batch is handed to the producer,
:meth:`SourceTaskLoop.commit_offsets` and :meth:`SourceTaskLoop._commit_if_due` decide what
committing means and when, and :meth:`SourceTaskLoop._final_commit` runs once when the task
stops.
"""

from __future__ import annotations

import collections
import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, Message, Producer
from plugin_api.connector import freeze_partition

from core.errors import ErrorReporter
from core.kafka import wrap_kafka_error
from core.offsets import OffsetStore
from core.topics import TopicCreator
from isolation import HostClient, PollResult
from plugin_api import ConnectException

log = logging.getLogger("copycat.source")

# Records sent but not yet acknowledged. Past this the loop stops polling the task and waits
# for acks: memory stays bounded when the broker is slower than the source.
MAX_OUTSTANDING_RECORDS = 200_000
# How long produce() waits for room in librdkafka's queue before trying again.
QUEUE_FULL_WAIT_S = 0.05


class _Interrupted(Exception):
    """A stop was requested while the loop waited for the broker to make room."""


class _Batch:
    """The records of one poll() handed to the producer, acknowledged as a group.

    One delivery callback serves the whole batch (a callable per record costs as much as the
    produce call itself), so offsets advance a batch at a time: exactly as safe, since a
    batch's offsets become committable only once every record in it and before it is acked.
    """

    __slots__ = ("size", "acked", "offsets", "delivered")

    def __init__(self, on_error: Callable[[KafkaError, Message], None]) -> None:
        self.size = 0  # records handed to the producer (or dropped by a transform)
        self.acked = 0
        self.offsets: dict[Any, tuple[Any, Any]] = {}  # frozen partition -> (partition, offset)

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is None:
                self.acked += 1
            else:
                on_error(err, msg)

        self.delivered = delivered


class _Submitted:
    """Batches in submission order; offsets become committable as the acknowledged prefix."""

    __slots__ = ("batches", "records", "ready")

    def __init__(self) -> None:
        self.batches: collections.deque[_Batch] = collections.deque()
        self.records = 0  # records in ``batches``: sent and not yet settled
        self.ready: dict[Any, tuple[Any, Any]] = {}

    def settle(self) -> None:
        """Move the fully acknowledged prefix of batches into ``ready``.

        A partition's offset advances only past batches acked in order; one unacked record
        holds back everything after it (across partitions too, which is simpler and at most
        delays a commit until that record's ack arrives).
        """
        batches = self.batches
        while batches and batches[0].acked >= batches[0].size:
            batch = batches.popleft()
            self.records -= batch.size
            self.ready.update(batch.offsets)

    def committable(self) -> list[tuple[Any, Any]]:
        """Pop ``(partition, latest offset)`` for each partition the acked prefix moved."""
        self.settle()
        offsets, self.ready = list(self.ready.values()), {}
        return offsets


class SourceTaskLoop:
    """Drives one source task living in a plugin host."""

    def __init__(
        self,
        connector: str,
        task_id: int,
        host: HostClient,
        handle: int,
        producer: Producer,
        offsets: OffsetStore,
        topic_creator: TopicCreator | None = None,
        *,
        wants_acks: bool = True,
        errors: ErrorReporter | None = None,
        commit_interval_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        on_stop: Callable[[], None] = lambda: None,
    ) -> None:
        self.connector = connector
        self._on_stop = on_stop  # releases what the task alone used (its offsets topic reader)
        self.task_id = task_id
        self.host = host
        self.handle = handle
        self.producer = producer
        self.offsets = offsets
        self._topic_creator = topic_creator
        self._wants_acks = wants_acks
        self.errors = errors
        self._topics_seen: set[str] = set()
        self._submitted = _Submitted()
        self._pending_acks: list[tuple[int, str | None, int | None, int | None, int | None]] = []
        self._failure: ConnectException | None = None
        self.records_sent = 0
        self.commit_interval_s = commit_interval_s
        self._clock = clock
        self._next_commit = clock() + commit_interval_s
        self._paused = False
        # Polled by waits on the broker (a full producer queue, too many unacked records) so a
        # task stuck behind a slow or dead broker can still be stopped. Set by the driver.
        self.should_stop: Callable[[], bool] = lambda: False

    @property
    def name(self) -> str:
        return f"{self.connector}-{self.task_id}"

    # -- TaskLoop ------------------------------------------------------------------------------

    @property
    def records_moved(self) -> int:
        return self.records_sent

    def start(self) -> None:
        """Nothing to do: the task was started in its host and the producer is ready."""

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        self._paused = False

    def topics(self) -> set[str]:
        return set(self._topics_seen)

    def _commit_if_due(self) -> None:
        if self._clock() >= self._next_commit:
            self.commit_offsets()
            self._next_commit = self._clock() + self.commit_interval_s

    def _batch_starting(self) -> None:
        """Hook: a batch's first record is about to be produced."""

    def _first_send_to(self, topic: str) -> None:
        """Hook: the task sends to ``topic`` for the first time (creates it if configured)."""
        if self._topic_creator is not None:
            self._topic_creator.ensure(topic)

    def _batch_dispatched(self, batch: _Batch) -> None:
        """Hook: every record of ``batch`` (one poll) was handed to the producer."""

    def _dispatch(self, result: PollResult) -> int:
        """Hook: send one poll's records (see :meth:`_send`); returns how many."""
        return self._send(result.rows, result.offsets)

    def _final_commit(self, timeout_s: float, failed: bool) -> None:
        """Hook: commit on stop; waits up to ``timeout_s`` for outstanding acks first. What
        the broker acknowledged is committed even after the task failed (at-least-once)."""
        if self._failure is None:  # a producer that failed has nothing trustworthy to commit
            self.commit_offsets(timeout_s)

    def _delivery_failed(self, err: KafkaError, msg: Message) -> None:
        if self._failure is None:
            self._failure = wrap_kafka_error(
                err, f"task {self.name} could not send a record to {msg.topic()}-{msg.partition()}"
            )

    def _record_delivered(
        self, batch: _Batch, seq: int, err: KafkaError | None, msg: Message
    ) -> None:
        """Per-record callback, used only when the task implements commit_record()."""
        batch.delivered(err, msg)
        if err is None:
            self._pending_acks.append(
                (seq, msg.topic(), msg.partition(), msg.offset(), msg.timestamp()[1])
            )

    def iteration(self) -> int:
        """One ``poll()`` of the task, its records handed to the producer. Returns the count.

        Pipelined: as soon as a poll's records arrive, the next poll is sent, so the host
        polls, transforms and converts while the worker produces, each on its own core.
        """
        self._raise_if_failed()
        self.producer.poll(0)
        if self._paused:
            moved = self._settle()  # a poll already in flight is sent; no new one
            self._commit_if_due()
            return moved
        while self._submitted.records >= MAX_OUTSTANDING_RECORDS:
            self.producer.poll(QUEUE_FULL_WAIT_S)  # back-pressure: wait for the broker
            self._submitted.settle()
            self._raise_if_failed()
            if self.should_stop():
                return 0
        if not self.host.pending:
            self._submit_poll()
        result = self.host.poll_result()
        self._submit_poll()
        if result.failures and self.errors is not None:
            self.errors.report_source(result.failures)
        try:
            moved = self._dispatch(result)
        except _Interrupted:
            return 0  # the rest of the batch is unsent and unacked: its offsets stay behind
        self._commit_if_due()
        return moved

    def _submit_poll(self) -> None:
        acks, self._pending_acks = self._pending_acks, []
        self.host.submit_poll(self.handle, acks)

    def _settle(self, send: bool = True) -> int:
        """Collect an outstanding poll (and send its records) before other host requests;
        returns how many records were sent."""
        if not self.host.pending:
            return 0
        result = self.host.poll_result()
        if not send:
            return 0
        if result.failures and self.errors is not None:
            self.errors.report_source(result.failures)
        try:
            return self._dispatch(result)
        except _Interrupted:
            return 0

    def _send(self, rows: list[tuple[Any, ...]], offsets: list[tuple[Any, Any]]) -> int:
        """Produce one poll's rows; the batch's ``offsets`` (the last per source partition)
        become committable once all of it is acknowledged. A batch cut short by a stop
        commits none of them: its records are polled again after a restart."""
        if not rows:
            return 0
        self._batch_starting()
        batch = _Batch(self._delivery_failed)
        self._submitted.batches.append(batch)
        produce = self.producer.produce
        wants_acks = self._wants_acks
        on_delivery = batch.delivered
        try:
            for seq, topic, partition, key, value, headers, timestamp in rows:
                if topic is None:  # dropped by a transform: its offset still counts
                    batch.size += 1
                    batch.acked += 1
                    if wants_acks:
                        self._pending_acks.append((seq, None, None, None, None))
                    continue
                if topic not in self._topics_seen:
                    self._first_send_to(topic)
                    self._topics_seen.add(topic)
                if wants_acks:
                    on_delivery = functools.partial(self._record_delivered, batch, seq)
                # -1: librdkafka's partitioner chooses; timestamp 0: the producer's clock
                # (both what the Java producer does with a null partition/timestamp).
                try:
                    if headers:
                        produce(
                            topic,
                            value,
                            key,
                            -1 if partition is None else partition,
                            on_delivery=on_delivery,
                            timestamp=timestamp or 0,
                            headers=headers,
                        )
                    else:
                        produce(
                            topic,
                            value,
                            key,
                            -1 if partition is None else partition,
                            on_delivery=on_delivery,
                            timestamp=timestamp or 0,
                        )
                except BufferError:
                    self._produce_when_room(
                        topic, value, key, partition, timestamp, headers, on_delivery
                    )
                except Exception as exc:  # KafkaException, TypeError for bad values
                    raise ConnectException(
                        f"task {self.name} could not send a record to topic {topic!r}: {exc}"
                    ) from exc
                batch.size += 1
            for partition_, offset in offsets:
                batch.offsets[freeze_partition(partition_)] = (partition_, offset)
        finally:
            self._submitted.records += batch.size
            self.records_sent += batch.size
        self._batch_dispatched(batch)
        return len(rows)

    def _produce_when_room(
        self,
        topic: str,
        value: Any,
        key: Any,
        partition: int | None,
        timestamp: int | None,
        headers: Any,
        on_delivery: Callable[..., None],
    ) -> None:
        """Back-pressure: librdkafka's queue is full, so the broker is slower than the source;
        no more polls until it has room."""
        while True:
            self.producer.poll(QUEUE_FULL_WAIT_S)
            self._raise_if_failed()
            if self.should_stop():
                raise _Interrupted from None
            try:
                self.producer.produce(
                    topic,
                    value,
                    key,
                    -1 if partition is None else partition,
                    on_delivery=on_delivery,
                    timestamp=timestamp or 0,
                    **({"headers": headers} if headers else {}),
                )
                return
            except BufferError:
                continue
            except Exception as exc:
                raise ConnectException(
                    f"task {self.name} could not send a record to topic {topic!r}: {exc}"
                ) from exc

    def _release_producer(self) -> None:
        """Drop what is still queued and the batches' callbacks: the producer is freed (and
        its connections closed) as soon as the driver lets go of the loop, instead of
        reconnecting to its brokers until a garbage collection finds the cycle that the
        batches' delivery callbacks form with this loop."""
        try:
            self.producer.purge()
            self.producer.poll(0)
        except Exception:  # noqa: BLE001 - best effort on the way out
            pass
        self._submitted.batches.clear()
        self._submitted.records = 0

    def _raise_if_failed(self) -> None:
        if self._failure is not None:
            raise self._failure

    def _reset_submitted(self) -> None:
        """Forget every batch sent so far: all settled (a transaction committed them) or
        dropped (one was aborted), so none is waited for any more."""
        self._submitted = _Submitted()

    def _before_task_stop(self) -> None:
        """Hook: the last call to the task before its ``stop()`` (its host is alive)."""

    def commit_offsets(self, timeout_s: float = 0.0) -> int:
        """Store offsets of everything acknowledged so far; optionally wait for acks first.

        Returns how many records are still unacknowledged.
        """
        self._settle()
        if timeout_s > 0:
            self.producer.flush(timeout_s)  # serves delivery callbacks; returns once all acked
        else:
            self.producer.poll(0)
        offsets = self._submitted.committable()
        if offsets and self.errors is not None:
            self.errors.flush()  # failed records are in the DLQ before their offsets move on
        if offsets:
            self.offsets.put(self.connector, offsets)
            self.offsets.flush()
            self.host.call(self.handle, "commit")
        return self._submitted.records

    def stop(self, *, failed: bool = False, timeout_s: float = 5.0) -> None:
        """Flush what can be flushed, store its offsets and stop the task in its host.

        Even after the task failed, what the broker acknowledged is safe to commit: the final
        commit waits for outstanding acks (up to ``timeout_s``) and stores them.
        """
        try:
            self._final_commit(timeout_s, failed)
        finally:
            self._release_producer()
            try:
                if self.host.alive:
                    self._settle(send=False)
                    if self._pending_acks:
                        acks, self._pending_acks = self._pending_acks, []
                        self.host.acked(self.handle, acks)
                    self._before_task_stop()
                    self.host.stop_task(self.handle)
            finally:
                self._on_stop()
