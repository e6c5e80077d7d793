"""The exactly-once source task loop (KIP-618): a task's records and their source offsets are
written in one Kafka transaction, or not at all.

:class:`ExactlyOnceSourceTaskLoop` is the common source loop (:mod:`core.runtime.source`) with
its hooks set, as Kafka's ``ExactlyOnceWorkerSourceTask`` is its ``AbstractWorkerSourceTask``
with hooks: polling, converting, producing and back-pressure are the base loop's; what differs
is what "commit" means.

* The task's producer is transactional (``transactional.id`` = ``<group id>-<connector>-<task
  id>``); :func:`core.runtime.build.build_task` initialises it before the task starts, which
  fences out every older instance of the task: their open transactions are aborted and their
  next commit fails.
* A transaction begins before the first record of a batch is produced. At a boundary
  (:mod:`core.runtime.transactions`) the offsets of everything sent in it are produced to the
  task's offsets topic by the same producer, and the transaction is committed: a
  ``read_committed`` reader sees the records exactly when the offsets that say they were
  copied are there too. A crash anywhere before the commit leaves neither.
* Connector-defined boundaries can abort: the records since the last boundary are dropped,
  and their offsets are committed in a transaction of their own (the task asked not to see
  them again), as Kafka does.
* Failures: a record the broker refused, a commit or abort that fails, or being fenced fail
  the task; nothing of the open transaction becomes visible (the next instance's producer
  initialisation aborts it if this one could not). ``commit_record()`` acknowledgements and
  ``SourceTask.commit()`` reach the task only after its transaction committed.

Everything here runs on the task's thread (the driver's), like the base loop.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message
from plugin_api.connector import freeze_partition

from core.kafka import wrap_kafka_error
from core.runtime.source import SourceTaskLoop, _Batch, _Interrupted, _Unsent
from core.runtime.spec import ExactlyOnceSpec
from core.runtime.transactions import POLL, TransactionBoundary
from core.stores.task_offsets import TaskOffsetStore
from isolation import PollResult, ProducedBatch
from plugin_api import ConnectException

__all__ = ["ExactlyOnceSourceTaskLoop", "TaskFencedError", "TRANSACTION_TIMEOUT_S"]

log = logging.getLogger("copycat.source")

# How long a transaction's commit or abort may block: a commit first waits for every record
# of the transaction to be acknowledged. Kafka's producer blocks up to max.block.ms (60 s)
# there too; a task whose commit takes longer fails rather than hang.
TRANSACTION_TIMEOUT_S = 60.0
# librdkafka's errors for a producer whose transactional id a newer instance initialised (or
# whose transaction the coordinator aborted for outliving transaction.timeout.ms).
_FENCED = frozenset(
    {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}
)
# Delivery reports of records dropped by our own abort (or by the purge on stop): not a
# failure of the task.
_PURGED = frozenset({KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT})
COMMIT, ABORT = "commit", "abort"


class _Chunk(_Unsent):
    """Records of one poll up to a boundary the task set (or all of them), and what ends the
    transaction after them: ``"commit"``, ``"abort"`` or None (the boundary's business)."""

    __slots__ = ("action",)

    def __init__(
        self,
        batch: _Batch,
        records: ProducedBatch,
        offsets: list[tuple[Any, Any]],
        action: str | None,
    ) -> None:
        super().__init__(batch, records, offsets)
        self.action = action


class TaskFencedError(ConnectException):
    """A newer instance of the task took its transactional id over: this one must stop."""


class ExactlyOnceSourceTaskLoop(SourceTaskLoop):
    """The source loop with transactions (see the module docstring).

    Takes the base loop's arguments plus the task's :class:`ExactlyOnceSpec`, its
    :class:`TaskOffsetStore` (whose ``topic`` the offsets are written to, in the
    transaction) and its :class:`TransactionBoundary`. The producer must be transactional
    and initialised.
    """

    transactional = True

    def __init__(
        self,
        *args: Any,
        exactly_once: ExactlyOnceSpec,
        task_offsets: TaskOffsetStore,
        boundary: TransactionBoundary,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if task_offsets.topic is None:
            raise ConnectException(
                f"task {self.name} cannot run exactly-once: its source offsets are not kept in "
                "a Kafka topic (set the connector's offsets.storage.topic in standalone mode)"
            )
        self.exactly_once = exactly_once
        self.task_offsets = task_offsets
        self.boundary = boundary
        self._open = False
        # Records handed to the producer in the open transaction (not dropped or skipped):
        # Kafka's TransactionMetricsGroup, recorded at each commit (transaction-size-*).
        self._transaction_size = 0
        self._offsets: dict[Any, tuple[Any, Any]] = {}  # frozen partition -> (partition, offset)
        # The open transaction already holds the offset records of _offsets (poll boundary).
        self._offsets_written = False
        # It holds offsets of records that were never sent (a batch cut short): abort only.
        self._doomed = False
        # The queued chunk whose offsets the open transaction already holds (poll boundary).
        self._offsets_first_for: _Chunk | None = None
        self._acks: list[tuple[int, str | None, int | None, int | None, int | None]] = []
        self._task_commit_due = False
        self.transactions_committed = 0
        self.transactions_aborted = 0

    # -- life cycle ------------------------------------------------------------------------

    def start(self) -> None:
        self.boundary.start()

    def pause(self) -> None:
        """Send what was polled, then end the open transaction if the boundary allows: one
        left open through a long pause would outlive the broker's transaction timeout."""
        super().pause()
        self._send_polled()
        if self.boundary.at_stop() and not self._cut_short():
            self._commit()

    def resume(self) -> None:
        super().resume()
        self.boundary.start()

    def iteration(self) -> int:
        try:
            return super().iteration()
        except KafkaException as exc:  # fenced while polling or sending, not in a commit
            self._raise_if_fenced(exc)
            raise

    def _final_commit(self, timeout_s: float, failed: bool) -> None:
        try:
            self._commit_or_abort_at_stop(failed)
        except KafkaException as exc:
            self._raise_if_fenced(exc)
            raise

    def _commit_or_abort_at_stop(self, failed: bool) -> None:
        if failed or self._failure is not None:
            self._abort_quietly("the task failed")
            return
        self._send_polled()
        if self._cut_short():
            self._abort_quietly("a batch was cut short by the stop")
        elif self.boundary.at_stop():
            self._commit()
        else:
            self._abort_quietly("the task stopped before the connector ended its transaction")

    def _before_task_stop(self) -> None:
        if self._task_commit_due and self.host.alive:
            self._task_commit_due = False
            self._commit_task()

    # -- hooks of the base loop ---------------------------------------------------------------

    def _batch_starting(self) -> None:
        if not self._open:
            try:
                self.producer.begin_transaction()
            except KafkaException as exc:
                raise self._transaction_error(exc, "begin") from exc
            self._open = True

    def _first_send_to(self, topic: str) -> None:
        if topic == self.task_offsets.topic:
            # Its next poll would read offsets from that topic, which waits for the open
            # transaction holding this very record to end: a deadlock (Kafka refuses it too).
            raise ConnectException(
                f"task {self.name} may not write records to its own offsets topic {topic!r} "
                "with exactly-once support enabled"
            )
        super()._first_send_to(topic)

    def _batch_dispatched(self, batch: _Batch) -> None:
        self._offsets.update(batch.offsets)
        self._transaction_size += batch.size - batch.skipped

    def _queue(self, result: PollResult) -> None:
        """A poll's records as chunks ending where the task set boundaries (one chunk when it
        set none); each chunk carries the offsets of the records up to its end."""
        records = ProducedBatch.from_wire(result.batch)
        if records.size:
            self._polled(records.size)
        start = 0
        for index, action, offsets in result.boundaries:
            end = records.size if index < 0 else index + 1
            chunk = records.slice(start, max(start, end))
            self._unsent.append(
                _Chunk(
                    _Batch(self._delivery_failed),
                    chunk,
                    offsets if index >= 0 else result.offsets,
                    action,
                )
            )
            start = max(start, end)
        if start < records.size:
            rest = records if start == 0 else records.slice(start, records.size)
            self._unsent.append(_Chunk(_Batch(self._delivery_failed), rest, result.offsets, None))
        if (
            not records.size
            and not result.boundaries
            and self.boundary.name == POLL
            and not (self._unsent or self._open or self._offsets)
        ):
            # An empty poll with poll boundaries: Kafka commits its (empty) transaction, which
            # it records as a successful commit.
            self.counters.commit(0.0, ok=True)

    def _send_queued(self) -> int:
        """Send the queued chunks, oldest first, each ending its transaction as its boundary
        says. With ``poll`` boundaries a chunk (a whole poll) is one transaction whose offsets
        go first (see :meth:`_open_poll_transaction`).

        Raises:
            _Interrupted: a wait for room was cut short; the chunk stays queued, resumed
                where it stopped, its transaction open.
        """
        moved = 0
        while self._unsent:
            chunk = self._unsent[0]
            assert isinstance(chunk, _Chunk)
            whole_poll = chunk.action is None and self.boundary.name == POLL
            if whole_poll and chunk is not self._offsets_first_for:
                self._open_poll_transaction(chunk)
            moved += self._send(chunk)
            self._unsent.popleft()
            if whole_poll:
                self._doomed = False
                self._offsets_first_for = None
                self._commit()
            elif chunk.action is not None:
                self._end_transaction(chunk.action)
            elif chunk.records.size and self.boundary.after_batch():
                self._commit()
        return moved

    def _send_polled(self) -> None:
        """Send what was polled (stop, pause); a wait cut short leaves the rest queued."""
        self._collect()
        try:
            self._send_queued()
        except _Interrupted:
            pass

    def _cut_short(self) -> bool:
        """Whether the open transaction holds part of a chunk only (records or offsets of
        records not all sent): it must not be committed now."""
        return self._doomed or bool(self._unsent and self._unsent[0].next > 0)

    def _commit_if_due(self) -> None:
        if self.boundary.due() and not self._cut_short():
            self._commit()

    def commit_offsets(self, timeout_s: float = 0.0) -> int:
        """Commit the open transaction (records and offsets) unless it holds part of a chunk;
        returns 0 (nothing stays unacknowledged after a commit)."""
        if not self._cut_short():
            self._commit()
        return 0

    def _submit_poll(self) -> None:
        acks, self._pending_acks = self._pending_acks, []
        commit, self._task_commit_due = self._task_commit_due, False
        self.host.submit_poll(self.handle, acks, commit=commit)

    def _record_delivered(
        self, batch: _Batch, seq: int, err: KafkaError | None, msg: Message
    ) -> None:
        """Per-record callback (tasks with commit_record()): held until the commit."""
        batch.delivered(err, msg)
        if err is None:
            self._acks.append((seq, msg.topic(), msg.partition(), msg.offset(), msg.timestamp()[1]))
        elif err.code() in _PURGED:
            self._acks.append((seq, None, None, None, None))  # dropped by an abort

    def _delivery_failed(self, err: KafkaError, msg: Message) -> bool:
        if err.code() in _PURGED:
            return False
        if err.code() in _FENCED and self._failure is None:  # a record refused: an old epoch
            self._failure = self._fenced(err)
            return False
        return super()._delivery_failed(err, msg)

    # -- transactions ----------------------------------------------------------------------

    def _open_poll_transaction(self, chunk: _Chunk) -> None:
        """``poll`` boundary: one transaction for the chunk (a whole poll), its offsets
        produced *first*. The batch's offsets are known before its records are sent, and
        produced together the offsets topic's partition joins the transaction in the same
        AddPartitionsToTxn request as the records' partitions: one round trip to the
        coordinator less per transaction than producing them at the commit (measured:
        docs/benchmarks.md). Until the chunk is all sent the transaction can only be aborted
        (the task is stopping or failing; its records are polled again)."""
        self._batch_starting()
        for partition, offset in chunk.offsets:
            self._offsets[freeze_partition(partition)] = (partition, offset)
        self._produce_offsets(list(self._offsets.values()))
        self._offsets_first_for = chunk
        self._doomed = True

    def _end_transaction(self, action: str) -> None:
        """A boundary the connector set: commit, or abort and commit the offsets alone."""
        if action == ABORT:
            self._abort()
        self._commit()

    def _produce_offsets(self, entries: list[tuple[Any, Any]]) -> None:
        """Produce offset records of ``entries`` into the open transaction."""
        topic = self.task_offsets.topic
        assert topic is not None
        try:
            for key, value in self.task_offsets.records(self.connector, entries):
                self._produce_offset(topic, key, value)
        except KafkaException as exc:
            raise self._transaction_error(exc, "write offsets in") from exc
        self._offsets_written = True

    def _commit(self) -> None:
        """Produce the offsets of what the open transaction holds (unless already there),
        and commit both."""
        if not self._open and not self._offsets:
            # Nothing to commit: Kafka's commitTransaction still records a successful commit
            # (and an interval boundary starts again), so a quiet task's commits read as
            # succeeding, not as none.
            self.counters.commit(0.0, ok=True)
            self.boundary.committed()
            return
        if self._doomed:
            raise ConnectException(
                f"task {self.name}: its transaction holds offsets of records it did not send; "
                "it can only be aborted"
            )
        self._raise_if_failed()  # a record the broker refused: this transaction cannot commit
        entries = list(self._offsets.values())
        try:
            if not self._open:  # offsets alone, after an abort or a batch of dropped records
                self.producer.begin_transaction()
                self._open = True
        except KafkaException as exc:
            raise self._transaction_error(exc, "begin") from exc
        if not self._offsets_written:
            self._produce_offsets(entries)
        started = time.monotonic()
        try:
            self.producer.commit_transaction(TRANSACTION_TIMEOUT_S)
        except KafkaException as exc:
            self.counters.commit((time.monotonic() - started) * 1000, ok=False)
            raise self._transaction_error(exc, "commit") from exc
        self.counters.commit((time.monotonic() - started) * 1000, ok=True)
        self.counters.transaction(self._transaction_size)
        self._transaction_size = 0
        self._submitted.drained()  # every record of the transaction is written
        self._open = False
        self._offsets_written = False
        self._offsets = {}
        self.transactions_committed += 1
        self.task_offsets.committed(self.connector, entries)
        self._pending_acks += self._acks
        self._acks = []
        self._task_commit_due = True
        self._reset_submitted()
        self.boundary.committed()

    def _abort(self) -> None:
        """Abort the open transaction: its records are dropped, its offsets kept for the
        next commit (a connector-requested abort commits them)."""
        if not self._open:
            return
        try:
            # Records still queued first: aborting while librdkafka has not yet registered
            # their partitions with the coordinator was refused (INVALID_TXN_STATE, Kafka
            # 4.1) and fenced the producer. Sent, they are on the log as aborted records.
            self.producer.flush(TRANSACTION_TIMEOUT_S)
            self.producer.abort_transaction(TRANSACTION_TIMEOUT_S)
        except KafkaException as exc:
            raise self._transaction_error(exc, "abort") from exc
        self._open = False
        self._offsets_written = False
        self._doomed = False
        self._offsets_first_for = None
        self._transaction_size = 0
        self.transactions_aborted += 1
        self.producer.poll(0)  # the dropped records' delivery reports (ignored)
        self._pending_acks += self._acks
        self._acks = []
        self._submitted.dropped()
        self._reset_submitted()
        self.boundary.committed()

    def _abort_quietly(self, why: str) -> None:
        """On the way out: abort what is open (the next instance would abort it anyway)."""
        self._offsets = {}
        if not self._open:
            self._doomed = False
            return
        try:
            self._abort()
            log.info("task %s: aborted its open transaction (%s)", self.name, why)
        except ConnectException as exc:
            log.info("task %s: could not abort its open transaction (%s): %s", self.name, why, exc)
            self._open = False

    def _produce_offset(self, topic: str, key: bytes, value: bytes | None) -> None:
        while True:
            try:
                self.producer.produce(topic, value, key)
                return
            except BufferError:
                self.producer.poll(0.05)  # librdkafka's queue is full: let acks drain it

    def _transaction_error(self, exc: KafkaException, what: str) -> ConnectException:
        error = _fencing_error(exc)
        if error is not None:
            return self._fenced(error)
        return wrap_kafka_error(
            exc,
            f"task {self.name} could not {what} its transaction "
            f"({self.exactly_once.transactional_id!r})",
        )

    def _raise_if_fenced(self, exc: KafkaException) -> None:
        """:class:`TaskFencedError` if ``exc`` says this instance was fenced, whichever call
        met it first (a commit, a poll serving the fatal error, a flush)."""
        error = _fencing_error(exc)
        if error is not None:
            raise self._fenced(error) from exc

    def _fenced(self, error: KafkaError) -> TaskFencedError:
        return TaskFencedError(
            f"task {self.name} was fenced out of transactional id "
            f"{self.exactly_once.transactional_id!r} ({error.str()}): a newer instance of the "
            "task took it over (the task was restarted or moved to another worker), or its "
            "transaction outlived the producer's transaction.timeout.ms. Nothing of its open "
            "transaction is visible; this instance stops."
        )


def _fencing_error(exc: KafkaException) -> KafkaError | None:
    """The error of ``exc`` if it says the producer was fenced, else None."""
    error = exc.args[0] if exc.args else None
    return error if isinstance(error, KafkaError) and error.code() in _FENCED else None
