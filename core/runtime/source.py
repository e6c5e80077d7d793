"""The source task loop: poll the plugin host, produce the bytes, commit offsets after acks.

The loop knows nothing of threads or herders: whoever drives it (a worker thread, a Spark
executor) follows :class:`core.runtime.loop.TaskLoop`. At-least-once: an offset is stored only
when the broker has acknowledged its record *and every record submitted before it*, so a crash
never skips data (it may resend some).

How acknowledgements are learnt depends on the task:

* a task that overrides ``commit_record()`` needs every record's ack: each record gets a
  delivery callback, and offsets advance over the acknowledged prefix of poll batches;
* every other task gets none: its producer reports failed deliveries only
  (``delivery.report.only.error``), and offsets become committable when the producer's queue
  is empty with nothing failed, which proves every record sent so far was acknowledged. A
  commit that finds records in flight is made at the first iteration that finds the queue
  empty; if the queue never empties on its own (sustained load) within
  :data:`DRAIN_AFTER_S`, the loop holds its next poll until it does (a *drain*), as Kafka
  Connect's commits did by flushing the producer before 3.0. Why: confluent-kafka builds a
  ``Message`` and calls Python for every delivery report it hands over, 0.5-0.6 us per
  record here, about half of what a bare producer loop spends per 100 B record; a drain
  stalls the task for its backlog's acknowledgements (tens of ms here), once per window.

Hooks for loops with other delivery guarantees (the exactly-once loop,
:mod:`core.runtime.exactly_once`, is a subclass, not a copy): :meth:`SourceTaskLoop._queue`
queues one poll's answer for sending, :meth:`SourceTaskLoop._send_queued` sends the queue,
:meth:`SourceTaskLoop._batch_starting` runs before a batch's records are produced,
:meth:`SourceTaskLoop._first_send_to` the first time a topic is written,
:meth:`SourceTaskLoop._batch_dispatched` once a batch is handed to the producer,
:meth:`SourceTaskLoop.commit_offsets` and :meth:`SourceTaskLoop._commit_if_due` decide what
committing means and when, and :meth:`SourceTaskLoop._final_commit` runs once when the task
stops.
"""

from __future__ import annotations

import collections
import functools
import itertools
import logging
import time
from collections.abc import Callable
from operator import length_hint
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from plugin_api.connector import freeze_partition

from core.errors import ErrorReporter
from core.kafka import JAVA_MAX_REQUEST_SIZE, wrap_kafka_error
from core.offsets import OffsetStore
from core.runtime.counters import TaskCounters
from core.runtime.loop import SOURCE_PAUSED_WAIT_S
from core.runtime.spec import ErrorsPolicy
from core.topics import TopicCreator
from isolation import HostClient, PollResult, ProducedBatch, RemotePluginError
from plugin_api import ConnectException

log = logging.getLogger("copycat.source")

# Records sent but not yet acknowledged. Past this the loop stops polling the task and waits
# for acks: memory stays bounded when the broker is slower than the source.
MAX_OUTSTANDING_RECORDS = 200_000
# How long produce() waits for room in librdkafka's queue before trying again.
QUEUE_FULL_WAIT_S = 0.05
# While a commit drains the producer, how long one iteration waits for the last
# acknowledgements (a flush returns as soon as they are in: about linger.ms plus a round trip)
# before it returns to its driver, which checks for stop and pause requests in between.
DRAIN_WAIT_S = 0.1
# How long a due commit waits for the producer's queue to empty on its own before it drains
# it. Under sustained load the queue is never empty, and a drain stalls the task for the
# backlog's acknowledgements (up to ~50 ms measured here): once per 5 s is under 1 %, and a
# commit comes at most this late (Kafka's offset.flush.interval.ms only says how often to try).
DRAIN_AFTER_S = 5.0
# produce() errors that stand for a record the producer or the broker refuses, not a broken
# producer: the errors Java's producer hands to the send callback (RecordTooLargeException,
# InvalidRecordException and the like), which Kafka Connect skips under errors.tolerance=all
# (KIP-779). librdkafka raises the first three from produce() itself. The broker refuses a
# record's contents with the next four: INVALID_RECORD for a record without a key sent to a
# compacted topic, INVALID_TIMESTAMP for one outside the topic's
# message.timestamp.*.difference.max.ms, INVALID_MSG (Kafka's CORRUPT_MESSAGE) and
# RECORD_LIST_TOO_LARGE for a batch it cannot take. Retries being unbounded
# (message.timeout.ms=0, as Connect's delivery.timeout.ms) and a missing topic being waited
# for (_wait_for_topic), _MSG_TIMED_OUT reaches the loop only from a connector that bounds
# delivery.timeout.ms (Java's callback then gets a TimeoutException, skipped under
# errors.tolerance=all as well); the missing topic's errors in a delivery report, from a topic
# deleted while the task writes to it, fail the task instead (MISSING_TOPIC_ERRORS).
REFUSED_RECORD_ERRORS = frozenset(
    {
        KafkaError.MSG_SIZE_TOO_LARGE,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError._UNKNOWN_TOPIC,
        KafkaError.INVALID_RECORD,
        KafkaError.INVALID_TIMESTAMP,
        KafkaError.INVALID_MSG,
        KafkaError.RECORD_LIST_TOO_LARGE,
        KafkaError._MSG_TIMED_OUT,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
    }
)
# librdkafka's default batch.size: a batch of one partition's records grows up to it (Java's
# producer's default is 16 KiB), named when the broker refuses a batch as too large.
LIBRDKAFKA_BATCH_SIZE = 1_000_000
# Delivery reports for a topic that went missing while its records were queued (deleted on a
# broker that does not create topics on first use): never skipped under errors.tolerance=all,
# since Kafka's producer waits for the topic to come back and loses nothing. The task fails
# instead, its offsets stop at the last record acknowledged, and a restart sends the rest.
# (produce() raising them for a record's own partition, one the topic does not have, still
# refuses that record, as Kafka's send() throwing does.)
MISSING_TOPIC_ERRORS = frozenset(
    {KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC, KafkaError.UNKNOWN_TOPIC_OR_PART}
)
# Deliveries a closing producer drops (its queue purged at stop): not a record's failure.
PURGED_ERRORS = frozenset({KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT})
# A record for a topic the cluster does not have waits for it, as in Kafka Connect: its producer
# blocks send() until the topic's metadata arrives (max.block.ms, which Connect sets to
# forever), and so the task polls nothing meanwhile. librdkafka would instead queue the
# record and fail it after topic.metadata.propagation.max.ms (30 s, at most an hour), so the
# loop asks for the topic's metadata itself before its first record goes out. How often it
# asks again (Java's metadata retry backoff grows to 1 s):
MISSING_TOPIC_RECHECK_S = 1.0
# How long one metadata request may take. One that times out or fails (an unreachable or
# refusing broker) ends the wait: the records go to the producer, whose own errors then
# apply, so no broker failure is turned into a silent wait.
TOPIC_METADATA_TIMEOUT_S = 2.0
# How often the wait is logged (Kafka's producer logs each metadata answer, about once a s),
# and after how long the first time: a broker that creates topics on first use answers the
# first request for a new one UNKNOWN_TOPIC_OR_PARTITION too, and has it a moment later.
MISSING_TOPIC_LOG_INTERVAL_S = 30.0
MISSING_TOPIC_FIRST_LOG_S = 5.0
# Kafka's stage name for a send the producer failed (ErrorReporter, DLQ headers).
KAFKA_PRODUCE = "KAFKA_PRODUCE"


def _record_for(topic: str | None, partition: int | None) -> str:
    """ "a record for topic 't' partition 3", the partition left out when the producer never
    chose one (confluent-kafka reports it as None, or -1: a record that failed before it was
    partitioned, such as one the brokers never took because the client could not log in)."""
    where = f"a record for topic {topic!r}"
    if partition is not None and partition >= 0:
        where += f" partition {partition}"
    return where


def producer_settings(per_record_acks: bool) -> dict[str, Any]:
    """What the loop needs in its producer's config (see the module docstring); ``build_task``
    adds a default ``on_delivery`` that reports failures to the loop."""
    return {} if per_record_acks else {"delivery.report.only.error": True}


class _Interrupted(Exception):
    """A stop was requested while the loop waited for the broker to make room."""


class _Batch:
    """The records of one poll() handed to the producer, acknowledged as a group.

    One delivery callback serves the whole batch (a callable per record costs as much as the
    produce call itself), so offsets advance a batch at a time: exactly as safe, since a
    batch's offsets become committable only once every record in it and before it is acked.
    """

    __slots__ = ("size", "acked", "skipped", "offsets", "delivered")

    def __init__(self, on_error: Callable[[KafkaError, Message], bool]) -> None:
        """``on_error`` is told of a failed delivery; True when it skipped the record
        (errors.tolerance=all), which then counts as acknowledged."""
        self.size = 0  # records handed to the producer (or dropped by a transform)
        self.acked = 0
        # Of ``acked``: records dropped by a transform or skipped (errors.tolerance=all),
        # which count as settled but not as written (source-record-write).
        self.skipped = 0
        self.offsets: dict[Any, tuple[Any, Any]] = {}  # frozen partition -> (partition, offset)

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is None:
                self.acked += 1
            elif on_error(err, msg):
                self.acked += 1
                self.skipped += 1

        self.delivered = delivered


class _Unsent:
    """One poll's records waiting to be produced, and how far an interrupted attempt got."""

    __slots__ = ("batch", "records", "offsets", "next")

    def __init__(
        self, batch: _Batch, records: ProducedBatch, offsets: list[tuple[Any, Any]]
    ) -> None:
        self.batch = batch
        self.records = records
        self.offsets = offsets
        self.next = 0  # index of the first record not produced yet


class _Submitted:
    """Batches in submission order; offsets become committable as the acknowledged prefix."""

    __slots__ = ("batches", "records", "ready", "counters", "unattributed_skips")

    def __init__(self, counters: TaskCounters | None = None) -> None:
        self.batches: collections.deque[_Batch] = collections.deque()
        self.records = 0  # records in ``batches``: sent and not yet settled
        self.ready: dict[Any, tuple[Any, Any]] = {}
        # Told of each settled batch (source-record-write).
        self.counters = counters if counters is not None else TaskCounters()
        # Records skipped after a failed delivery without per-record acks: the producer's
        # callback does not say which batch they were in; they are taken off the next batches
        # that settle.
        self.unattributed_skips = 0

    def _count(self, batch: _Batch, written: bool = True) -> None:
        counters = self.counters
        counters.records_done += batch.size
        if written:
            out = batch.size - batch.skipped
            if self.unattributed_skips:
                taken = min(out, self.unattributed_skips)
                self.unattributed_skips -= taken
                out -= taken
            counters.records_out += out

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
            self._count(batch)

    def drained(self) -> None:
        """Every record sent so far is acknowledged (the producer's queue is empty and no
        delivery failed): every batch is settled."""
        for batch in self.batches:
            self.ready.update(batch.offsets)
            self._count(batch)
        self.batches.clear()
        self.records = 0

    def dropped(self) -> None:
        """Every batch sent so far is gone unwritten (an aborted transaction)."""
        for batch in self.batches:
            self._count(batch, written=False)
        self.batches.clear()
        self.records = 0

    def committable(self) -> list[tuple[Any, Any]]:
        """Pop ``(partition, latest offset)`` for each partition the acked prefix moved."""
        self.settle()
        offsets, self.ready = list(self.ready.values()), {}
        return offsets

    def retry(self, offsets: list[tuple[Any, Any]]) -> None:
        """A commit of ``offsets`` (from :meth:`committable`) failed: hand them out again with
        the next commit, where a partition's newer offset wins (Kafka's
        ``OffsetStorageWriter.cancelFlush``)."""
        failed = {freeze_partition(partition): (partition, offset) for partition, offset in offsets}
        failed.update(self.ready)
        self.ready = failed


class SourceTaskLoop:
    """Drives one source task living in a plugin host."""

    # Whether records are sent in transactions (the exactly-once loop). Then, as in Kafka's
    # ExactlyOnceWorkerSourceTask, errors.tolerance=all does not skip records the producer
    # refuses (KIP-779: the transaction's commit fails on them), and the records polled
    # before one that fails the task are not sent (its open transaction is aborted).
    transactional = False

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
        max_request_size: int = JAVA_MAX_REQUEST_SIZE,
        batch_size: int = LIBRDKAFKA_BATCH_SIZE,
    ) -> None:
        self._on_stop = on_stop  # releases what the task alone used (its offsets topic reader)
        # The producer's message.max.bytes (a connector's max.request.size) and batch.size,
        # named when it or the broker refuses a record as too large.
        self._max_request_size = max_request_size
        self._batch_size = batch_size
        self.connector = connector
        self.task_id = task_id
        self.host = host
        self.handle = handle
        self.producer = producer
        self.offsets = offsets
        self._topic_creator = topic_creator
        self._wants_acks = wants_acks
        self.errors = errors
        # KIP-558: the topics sent to since the last reset (replaced by forget_topics(), from
        # another thread), and every topic sent to (its first send's hook ran).
        self._topics_seen: set[str] = set()
        self._topics_known: set[str] = set()
        # The task's metrics' counts (core.runtime.counters), shared with its error reporter.
        self.counters: TaskCounters = errors.counters if errors is not None else TaskCounters()
        self._topic_waits: dict[str, list[float | None]] = {}  # see _wait_for_topic
        self._submitted = _Submitted(self.counters)
        self._pending_acks: list[tuple[int, str | None, int | None, int | None, int | None]] = []
        self._unsent: collections.deque[_Unsent] = collections.deque()
        self._failure: ConnectException | None = None
        self.records_sent = 0
        self.progress: tuple[int, float] = (0, 0.0)
        self.commit_interval_s = commit_interval_s
        self._clock = clock
        self._next_commit = clock() + commit_interval_s
        self._paused = False
        # A commit found records in flight (failures-only reports): no new poll until the
        # producer's queue is empty, then the commit (see the module docstring).
        self._draining = False
        # Under errors.tolerance=none, the failure of a record whose poll's earlier records
        # are still queued (a wait for room or for the topic was cut short): raised once they
        # are sent, as Kafka's sendRecords() has sent them when it fails the task.
        self._failing: BaseException | None = None
        # When a commit found records in flight: it is made once they are acknowledged.
        self._commit_waiting_since: float | None = None
        # Polled by waits on the broker (a full producer queue, too many unacked records) so a
        # task stuck behind a slow or dead broker can still be stopped. Set by the driver.
        self.should_stop: Callable[[], bool] = lambda: False
        # Told each topic before the first record goes to it (a driver in another process
        # learns the task's topics this way, core/runtime/in_host.py). Set by the driver.
        self.on_new_topic: Callable[[str], None] = lambda topic: None

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

    @property
    def paused_wait_s(self) -> float:
        return SOURCE_PAUSED_WAIT_S

    def wake(self) -> None:
        """Nothing waits in the loop for its driver (it waits itself)."""

    def topics(self) -> set[str]:
        return set(self._topics_seen)

    def forget_topics(self) -> None:
        self._topics_seen = set()

    def _commit_if_due(self) -> None:
        if self._clock() >= self._next_commit:
            self.commit_offsets()
            self._next_commit = self._clock() + self.commit_interval_s

    def _batch_starting(self) -> None:
        """Hook: a batch's records are about to be produced."""

    def _first_send_to(self, topic: str) -> None:
        """Hook: the task sends to ``topic`` for the first time (creates it if configured,
        tells the driver)."""
        if self._topic_creator is not None:
            self._topic_creator.ensure(topic)
        self._wait_for_topic(topic)
        self.on_new_topic(topic)

    def _wait_for_topic(self, topic: str) -> None:
        """Return once the cluster has ``topic`` (see :data:`MISSING_TOPIC_RECHECK_S`), serving
        the producer's callbacks meanwhile; the task stays RUNNING and polls nothing.

        Raises:
            _Interrupted: ``should_stop`` said so first; the records stay queued, unsent, and
                their offsets uncommitted.
        """
        # When the wait began and when it was last logged: kept across calls, since a driver
        # that runs the loop in slices (a plugin host's) ends each wait after about a second.
        waiting = self._topic_waits.setdefault(topic, [None, None])
        while self._topic_missing(topic):
            now = self._clock()
            since = waiting[0] = now if waiting[0] is None else waiting[0]
            logged = waiting[1]
            if now - since >= MISSING_TOPIC_FIRST_LOG_S and (
                logged is None or now - logged >= MISSING_TOPIC_LOG_INTERVAL_S
            ):
                waiting[1] = now
                log.warning(
                    "task %s: topic %r does not exist (UNKNOWN_TOPIC_OR_PARTITION) and the "
                    "cluster does not create it; its records wait until it is created "
                    "(waiting %.0f s so far)",
                    self.name,
                    topic,
                    now - since,
                )
            self.producer.poll(MISSING_TOPIC_RECHECK_S)
            self._raise_if_failed()
            if self.should_stop():
                raise _Interrupted
        del self._topic_waits[topic]
        if waiting[1] is not None:
            log.info("task %s: topic %r exists now; sending its records", self.name, topic)

    def _topic_missing(self, topic: str) -> bool:
        """Whether the cluster answers that ``topic`` does not exist. The producer's metadata
        request may create it (a broker with auto.create.topics.enable, as Java's producer)."""
        try:
            found = self.producer.list_topics(topic, timeout=TOPIC_METADATA_TIMEOUT_S)
        except KafkaException as exc:
            log.debug("task %s: no metadata for topic %r: %s", self.name, topic, exc)
            return False
        metadata = found.topics.get(topic)
        return (
            metadata is not None
            and metadata.error is not None
            and metadata.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        )

    def _batch_dispatched(self, batch: _Batch) -> None:
        """Hook: every record of ``batch`` (one poll) was handed to the producer."""

    def _queue(self, result: PollResult) -> None:
        """Hook: queue one poll's records for :meth:`_send_queued`."""
        records = ProducedBatch.from_wire(result.batch)
        if records.size:
            self._polled(records.size)
            self._unsent.append(_Unsent(_Batch(self._delivery_failed), records, result.offsets))

    def _polled(self, size: int) -> None:
        """Count one poll of ``size`` records (source-record-poll, batch-size)."""
        counters = self.counters
        counters.records_in += size
        counters.batch(size)

    def take_counters(self) -> tuple[float, ...]:
        return self.counters.take()

    def _final_commit(self, timeout_s: float, failed: bool) -> None:
        """Hook: commit on stop; waits up to ``timeout_s`` for outstanding acks first. What
        the broker acknowledged is committed even after the task failed (at-least-once)."""
        if failed:
            # Records polled but not yet sent stay unsent, as in Kafka's WorkerSourceTask: the
            # one that failed the task would fail again (a record the producer refuses) and
            # the stop would report the failure a second time. Their offsets were never
            # committable.
            self._unsent.clear()
        if self._failure is None:
            self.commit_offsets(timeout_s)
        else:
            self._commit_after_delivery_failure(timeout_s)

    def _commit_after_delivery_failure(self, timeout_s: float) -> None:
        """The producer failed a record's delivery (errors.tolerance=none): commit the offsets
        of the batches known to be acknowledged, as Kafka's final commit stores those of the
        records acknowledged before the failure (a restart would write them again otherwise,
        up to offset.flush.interval.ms of them). Nothing more is sent.

        With per-record acks the batches settle as their acks arrive, up to the failed
        record's batch (its acks are waited for up to ``timeout_s``, as Kafka's final commit
        waits for its records in flight). Without, a batch is known acknowledged once the
        producer's queue was seen empty with no failure after it was sent (the iterations and
        commits look at every turn): those batches are in ``ready``; the ones still in flight
        when the delivery failed stay uncommitted, since the failed record may be any of
        theirs (at-least-once)."""
        self._unsent.clear()
        if self.host.alive:
            # A poll in flight is dropped unsent (a poll of failed records would otherwise
            # be reported and sent by the commit's collect).
            self._collect(keep=False)
        if self._wants_acks and timeout_s > 0:
            self.producer.flush(timeout_s)  # serves the acks of the records before the failure
        self.commit_offsets()

    def delivery_failed(self, err: KafkaError | None, msg: Message) -> None:
        """The producer's default delivery callback: called for failed deliveries only (or,
        with per-record acks, for records produced without a callback of their own)."""
        if err is not None:
            self._delivery_failed(err, msg)

    def _delivery_failed(self, err: KafkaError, msg: Message) -> bool:
        """A record's delivery failed: skipped (True) when tolerated, else the task fails."""
        detail = self._too_large(err, msg.key(), msg.value(), by_producer=False)
        if self._skips(err) and err.code() not in MISSING_TOPIC_ERRORS:
            if err.code() not in PURGED_ERRORS:
                self._report_refused(msg.topic(), msg.partition(), err.str() + detail)
            if not self._wants_acks:
                self._submitted.unattributed_skips += 1  # not written (source-record-write)
            return True
        if self._failure is None:
            self._failure = wrap_kafka_error(
                err,
                f"task {self.name} could not send {_record_for(msg.topic(), msg.partition())}",
                detail,
            )
        return False

    def _too_large(self, err: KafkaError, key: object, value: object, *, by_producer: bool) -> str:
        """What a user needs to act on a record refused as too large: its size and the limit
        it is over (the Java producer's RecordTooLargeException names both); else nothing."""
        if not isinstance(err, KafkaError) or err.code() != KafkaError.MSG_SIZE_TOO_LARGE:
            return ""
        size = sum(len(part) for part in (key, value) if isinstance(part, bytes | bytearray))
        if by_producer:
            return (
                f" (the record's key and value are {size} bytes, before headers and framing;"
                f" the limit is the producer's max.request.size, {self._max_request_size} bytes)"
            )
        # The broker checks the topic's max.message.bytes against a whole batch, and fails
        # every record of a batch over it. Java's producer splits such a batch and sends it
        # again; librdkafka does not, so records that each fit the topic fail too when the
        # topic's limit is below the producer's batch.size (Java's batches stay under 16 KiB).
        return (
            f" (the record's key and value are {size} bytes, before headers and framing; the"
            " broker refused a batch of records over the topic's max.message.bytes, and"
            " librdkafka's producer, unlike Java's, does not split a refused batch: with a"
            f" topic limit below the producer's batch.size ({self._batch_size} bytes), records"
            " that fit the topic are refused too; set producer.override.batch.size below the"
            " topic's max.message.bytes)"
        )

    def _skips(self, err: object) -> bool:
        """Whether a producer error skips its record: errors.tolerance=all, and the record
        was refused, not the producer broken (KIP-779: Kafka skips what the send callback
        reports; a fatal error, such as a fenced idempotent producer, fails the task)."""
        return (
            not self.transactional
            and self.errors is not None
            and self.errors.tolerate_all
            and isinstance(err, KafkaError)
            and not err.fatal()
            and (err.code() in REFUSED_RECORD_ERRORS or err.code() in PURGED_ERRORS)
        )

    def _report_refused(self, topic: str | None, partition: int | None, why: str) -> None:
        """Log a record skipped because the producer refused it, as Kafka's failed-send
        callback does, and report it to the error reporter (its log and source DLQ)."""
        where = _record_for(topic, partition)
        log.error("task %s failed to send %s: %s", self.name, where, why)
        assert self.errors is not None
        # Kafka's executeFailed(KAFKA_PRODUCE): a failed operation (total-record-failures).
        self.counters.record_failures += 1
        loop_class = f"{type(self).__module__}.{type(self).__qualname__}"
        self.errors.report_source([(0, where, KAFKA_PRODUCE, loop_class, "KafkaError", why, "")])

    def _refused(
        self, topic: str, partition: int | None, exc: Exception, key: object, value: object
    ) -> None:
        """A produce() call raised: the record is skipped if :meth:`_skips` says so (it then
        counts as sent), else the task fails naming the topic."""
        err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
        why = str(exc)
        if isinstance(err, KafkaError):
            why = err.str() + self._too_large(err, key, value, by_producer=True)
            if self._skips(err) and err.code() not in PURGED_ERRORS:
                self._report_refused(topic, partition, why)
                return
        raise ConnectException(
            f"task {self.name} could not send a record to topic {topic!r}: {why}"
        ) from exc

    def _record_delivered(
        self, batch: _Batch, seq: int, err: KafkaError | None, msg: Message
    ) -> None:
        """Per-record callback, used only when the task implements commit_record()."""
        if err is None:
            batch.acked += 1
            self._pending_acks.append(
                (seq, msg.topic(), msg.partition(), msg.offset(), msg.timestamp()[1])
            )
        elif self._delivery_failed(err, msg):
            # Skipped (errors.tolerance=all): commit_record(record, None), as Kafka.
            batch.acked += 1
            batch.skipped += 1
            self._pending_acks.append((seq, None, None, None, None))

    def iteration(self) -> int:
        """One ``poll()`` of the task, its records handed to the producer. Returns the count.

        Pipelined: as soon as a poll's records arrive, the next poll is sent, so the host
        polls, transforms and converts while the worker produces, each on its own core.
        A wait on the broker that ``should_stop`` cuts short keeps the rest of its batch
        queued, sent first by the next iteration: nothing polled is ever skipped while the
        task runs (a driver may end a wait to look for stop and pause requests).
        """
        self._raise_if_failed()
        self.producer.poll(0)
        if self._failing is not None:
            try:
                self._send_queued()
            except _Interrupted:
                return 0
            failure, self._failing = self._failing, None
            raise failure
        if (
            not self._wants_acks
            and self._submitted.batches
            and not self.transactional
            and self._failure is None
            and not len(self.producer)
        ):
            # Everything sent is acknowledged: settled now, so source-record-write counts it
            # when Kafka has it, not at the next offset commit.
            self._submitted.drained()
        if self._commit_waiting_since is not None:
            self._commit_when_acknowledged()
        if self._draining and not self._drain():
            return 0  # records of earlier polls still in flight: no new poll yet
        moved = 0
        try:
            moved += self._send_queued()
            if self._paused:
                self._collect()  # a poll already in flight is sent; no new one
                moved += self._send_queued()
                self._commit_if_due()
                return moved
        except _Interrupted:
            return moved
        while self._outstanding() >= MAX_OUTSTANDING_RECORDS:
            self.producer.poll(QUEUE_FULL_WAIT_S)  # back-pressure: wait for the broker
            self._raise_if_failed()
            if self.should_stop():
                return moved
        if not self.host.pending:
            self._submit_poll()
        self._collect()
        if self._failing is not None:
            return moved  # no new poll: the next iteration sends the rest, then fails
        self._submit_poll()
        try:
            moved += self._send_queued()
        except _Interrupted:
            return moved
        self._commit_if_due()
        return moved

    def _outstanding(self) -> int:
        """Records sent and not yet acknowledged (or failed)."""
        if self._wants_acks:
            self._submitted.settle()
            return self._submitted.records
        return len(self.producer)

    def _commit_when_acknowledged(self) -> None:
        """A commit waits for records in flight: made as soon as the producer's queue is
        empty; past DRAIN_AFTER_S, polling stops until it is (a drain)."""
        if not len(self.producer):
            self.commit_offsets()
        elif self._clock() - (self._commit_waiting_since or 0.0) >= DRAIN_AFTER_S:
            self._draining = True

    def _drain(self) -> bool:
        """Wait a little for the producer's queue to empty; once it has, commit. True when
        the loop may poll again (a stop meanwhile is the final commit's business)."""
        remaining = self.producer.flush(DRAIN_WAIT_S)  # no produce() meanwhile: the drain
        self._raise_if_failed()
        if remaining:
            return False
        self._draining = False
        self.commit_offsets()
        return True

    def _submit_poll(self) -> None:
        acks, self._pending_acks = self._pending_acks, []
        self.host.submit_poll(self.handle, acks)

    def _collect(self, keep: bool = True) -> None:
        """Take the answer of a poll in flight, freeing the host for other requests; its rows
        join the send queue (or are dropped: ``keep=False``, a stopping task)."""
        if not self.host.pending:
            return
        result = self.host.poll_result()
        if result.poll_ms is not None:
            self.counters.poll(result.poll_ms)
        if result.errors is not None:
            failures, retries = result.errors
            self.counters.record_failures += failures
            self.counters.retries += retries
        if not keep:
            return
        if result.failures:
            self._report(result)
        else:
            self._queue(result)

    def _report(self, result: PollResult) -> None:
        """Log the poll's failed records (and send them to a source DLQ if tolerated); under
        errors.tolerance=none the host stopped the poll's records at the first, which fails
        the task once the records before it are sent, as Kafka's sendRecords() does."""
        errors = self.errors
        if errors is None:  # never in a built task; a loop built by hand in a test
            errors = ErrorReporter(self.connector, self.task_id, ErrorsPolicy())
        errors.report_source(result.failures)
        self._queue(result)
        if not errors.tolerate_all:
            _seq, where, *info = result.failures[0]
            # The record as Kafka's SourceRecord.toString() prints it, without its key, value
            # and headers (the error log has them with errors.log.include.messages): where
            # it came from, not what it holds, in the task's trace.
            where = where.partition(" ConnectRecord{")[0]
            failure = errors.fail(where, info)
            if not self.transactional:
                try:
                    self._send_queued()
                except _Interrupted:
                    # Cut short by a wait (for room, for the topic): the next iterations
                    # send the rest first. Failing now dropped them (seen when the poll's
                    # first records went to a topic the broker was still creating).
                    self._failing = failure
                    return
            raise failure

    def _send_queued(self) -> int:
        """Produce the queued rows, oldest first; returns how many rows were sent.

        Raises:
            _Interrupted: a wait for room was cut short; the rest stays queued.
        """
        moved = 0
        while self._unsent:
            moved += self._send(self._unsent[0])
            self._unsent.popleft()
        return moved

    def _send(self, unsent: _Unsent) -> int:
        """Produce one poll's records from where an earlier attempt stopped. The batch's
        ``offsets`` (the last per source partition) become committable once all of it is
        acknowledged; it joins the submitted batches only once every record is sent."""
        batch, records, start = unsent.batch, unsent.records, unsent.next
        sent_before = batch.size
        self._batch_starting()
        try:
            try:
                if (
                    not self._wants_acks
                    and type(records.topics) is str
                    and type(records.partitions) is not list
                    and records.headers is None
                    and type(records.timestamps) is not list
                ):
                    self._send_uniform(unsent)
                else:
                    self._send_rows(unsent)
            finally:
                sent = batch.size - sent_before
                self._submitted.records += sent
                self.records_sent += sent
                if sent:
                    self.progress = (self.records_sent, self._clock())
        except ConnectException:
            self._keep_sent_part(unsent)
            raise
        for partition_, offset in unsent.offsets:
            batch.offsets[freeze_partition(partition_)] = (partition_, offset)
        self._submitted.batches.append(batch)
        self._batch_dispatched(batch)
        return records.size - start

    def _keep_sent_part(self, unsent: _Unsent) -> None:
        """A record of ``unsent`` fails the task (the producer refused it under
        errors.tolerance=none): the records before it were handed to the producer, so their
        offsets are committed once they are acknowledged, as Kafka's, whose source offsets
        advance record by record (a restart would write them again otherwise). The host
        says what those offsets are; the poll after this one, if any, is dropped (the task
        is failing). Not in a transaction, which is aborted with everything in it."""
        batch = unsent.batch
        if self.transactional or not batch.size or not self.host.alive:
            return
        try:
            self._collect(keep=False)
            offsets = self.host.offsets_before(self.handle, unsent.records.seq + unsent.next)
        except Exception:  # noqa: BLE001 - the task's own failure is the one to report
            log.debug("task %s: no offsets for the records sent", self.name, exc_info=True)
            return
        for partition_, offset in offsets or ():
            batch.offsets[freeze_partition(partition_)] = (partition_, offset)
        self._submitted.batches.append(batch)

    def _send_uniform(self, unsent: _Unsent) -> None:
        """The usual batch, as cheaply as ``produce()`` allows: one topic, partition and
        timestamp, no headers, no per-record acks. Only the produce call runs per record."""
        batch, records = unsent.batch, unsent.records
        topic: str = records.topics
        self._see_topic(topic)
        # -1: librdkafka's partitioner chooses; timestamp 0: the producer's clock (both what
        # the Java producer does with a null partition/timestamp). Arguments go positionally
        # (confluent-kafka's order: topic, value, key, partition, callback, on_delivery,
        # timestamp); a callback of None means the producer's default (failures only).
        partition = -1 if records.partitions is None else records.partitions
        timestamp = records.timestamps or 0
        produce = self.producer.produce
        values, keys, size = records.values, records.keys, records.size
        index = unsent.next
        while index < size:
            # The values are iterated rather than indexed (~25 ns less per record); where a
            # BufferError stopped the loop follows from what the iterator has left.
            remaining = iter(values[index:] if index else values)
            try:
                if keys is None and partition == -1 and timestamp == 0:
                    # The defaults spelled out cost confluent-kafka's argument parsing ~5-10 %
                    # of a 100 B record's produce() (bench/data_path_costs.py).
                    for value in remaining:
                        produce(topic, value)
                elif keys is None:
                    for value in remaining:
                        produce(topic, value, None, partition, None, None, timestamp)
                else:
                    for value, key in zip(remaining, keys[index:], strict=True):
                        produce(topic, value, key, partition, None, None, timestamp)
                index = size
            except BufferError:
                index = size - length_hint(remaining) - 1
                batch.size += index - unsent.next
                unsent.next = index
                key = None if keys is None else keys[index]
                if not self._produce_when_room(
                    topic, values[index], key, partition, timestamp, None, None
                ):
                    batch.acked += 1
                    batch.skipped += 1
                index += 1
                batch.size += 1
                unsent.next = index
            except Exception as exc:  # KafkaException, TypeError for bad values
                index = size - length_hint(remaining) - 1
                batch.size += index - unsent.next
                unsent.next = index
                key = None if keys is None else keys[index]
                self._refused(
                    topic, None if partition == -1 else partition, exc, key, values[index]
                )
                index += 1  # skipped (errors.tolerance=all): counts as sent and acknowledged
                batch.size += 1
                batch.acked += 1
                batch.skipped += 1
                unsent.next = index
        batch.size += size - unsent.next
        unsent.next = size

    def _see_topic(self, topic: str) -> None:
        if topic not in self._topics_seen:
            if topic in self._topics_known:
                self.on_new_topic(topic)  # again, after a reset of the active topics
            else:
                self._first_send_to(topic)
                self._topics_known.add(topic)
            self._topics_seen.add(topic)

    def _send_rows(self, unsent: _Unsent) -> None:
        """Any batch, record by record (several topics, headers, per-record acks)."""
        batch, records = unsent.batch, unsent.records
        produce = self.producer.produce
        wants_acks = self._wants_acks
        on_delivery: Callable[..., None] | None = None  # the producer's default: failures
        rows = itertools.islice(records.rows(), unsent.next, None)
        for index, (seq, topic, partition, key, value, headers, timestamp) in enumerate(
            rows, unsent.next
        ):
            unsent.next = index
            if topic is None:  # dropped by a transform: its offset still counts
                batch.size += 1
                batch.acked += 1
                batch.skipped += 1
                if wants_acks:
                    self._pending_acks.append((seq, None, None, None, None))
                continue
            self._see_topic(topic)
            if wants_acks:
                on_delivery = functools.partial(self._record_delivered, batch, seq)
            part = -1 if partition is None else partition
            try:
                if headers:
                    produce(topic, value, key, part, on_delivery, None, timestamp or 0, headers)
                else:
                    produce(topic, value, key, part, on_delivery, None, timestamp or 0)
            except BufferError:
                if not self._produce_when_room(
                    topic, value, key, partition, timestamp, headers, on_delivery
                ):
                    batch.acked += 1
                    batch.skipped += 1
            except Exception as exc:  # KafkaException, TypeError for bad values
                self._refused(topic, partition, exc, key, value)
                batch.acked += 1  # skipped (errors.tolerance=all): counts as acknowledged
                batch.skipped += 1
                if wants_acks:
                    self._pending_acks.append((seq, None, None, None, None))
            batch.size += 1
        unsent.next = records.size

    def _produce_when_room(
        self,
        topic: str,
        value: Any,
        key: Any,
        partition: int | None,
        timestamp: int | None,
        headers: Any,
        on_delivery: Callable[..., None] | None,
    ) -> bool:
        """Back-pressure: librdkafka's queue is full, so the broker is slower than the source;
        no more polls until it has room. Returns False if the producer refused the record
        and it was skipped (errors.tolerance=all).

        Raises:
            _Interrupted: ``should_stop`` said so before there was room (nothing produced).
        """
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
                    on_delivery,
                    None,
                    timestamp or 0,
                    headers or None,
                )
                return True
            except BufferError:
                continue
            except Exception as exc:
                self._refused(topic, partition, exc, key, value)
                return False

    def _release_producer(self) -> None:
        """Drop what is still queued and close the producer: its threads and connections end
        now. Letting go of it was not enough: its delivery callback (a method of this loop)
        and the loop form a cycle that only a full garbage collection frees, and until then
        a stopped task's producer kept reconnecting to its brokers (and logging each failure
        once they were gone)."""
        try:
            self.producer.purge()
            self.producer.poll(0)
        except Exception:  # noqa: BLE001 - best effort on the way out
            pass
        try:
            self.producer.close()
        except Exception:  # noqa: BLE001 - best effort on the way out
            log.debug("task %s: closing its producer failed", self.name, exc_info=True)
        self._submitted.batches.clear()
        self._submitted.records = 0

    def _raise_if_failed(self) -> None:
        if self._failure is not None:
            raise self._failure

    def _reset_submitted(self) -> None:
        """Forget every batch sent so far: all settled (a transaction committed them) or
        dropped (one was aborted), so none is waited for any more."""
        self._submitted = _Submitted(self.counters)

    def _before_task_stop(self) -> None:
        """Hook: the last call to the task before its ``stop()`` (its host is alive)."""

    def commit_offsets(self, timeout_s: float = 0.0) -> int:
        """Store offsets of everything acknowledged so far; optionally wait for acks first.

        Without per-record acks, "acknowledged so far" is everything when the producer's queue
        is empty; otherwise a periodic commit waits for that (see the module docstring), while
        a final one (``timeout_s`` > 0) sends what is queued and waits for it here.

        Returns how many records are still unacknowledged.
        """
        self._collect()  # the host must be free for the commit() call below
        if timeout_s > 0:
            try:
                self._send_queued()
            except _Interrupted:
                pass  # stopping: the rest was never sent, its offsets stay behind
            self.producer.flush(timeout_s)  # serves delivery callbacks; returns once all acked
        else:
            self.producer.poll(0)
        if not self._wants_acks and self._failure is None:
            if not len(self.producer):
                self._submitted.drained()
                self._commit_waiting_since = None
            elif timeout_s <= 0 and self._submitted.batches:
                if self._commit_waiting_since is None:
                    self._commit_waiting_since = self._clock()
        offsets = self._submitted.committable()
        if offsets and self.errors is not None:
            self.errors.flush()  # failed records are in the DLQ before their offsets move on
        if offsets:
            started = time.monotonic()
            try:
                self.offsets.put(self.connector, offsets)
                self.offsets.flush()
            except (ConnectException, OSError) as exc:
                self.counters.commit((time.monotonic() - started) * 1000, ok=False)
                # Not the task's failure (Kafka's WorkerSourceTask.commitOffsets): the broker
                # or the file is unavailable for now. The offsets go with the next commit;
                # the task's commit() waits for a commit that stored them.
                self._submitted.retry(offsets)
                log.error(
                    "task %s: could not flush offsets to storage (%s); will try again on next "
                    "flush interval with latest offsets",
                    self.name,
                    exc,
                )
                return self._outstanding()
            self.counters.commit((time.monotonic() - started) * 1000, ok=True)
            self._commit_task()
        elif self._commit_waiting_since is None and self._failure is None:
            # Nothing to flush, and no commit waits for acknowledgements: still a successful
            # commit, and the task's commit() is called, as Kafka's
            # WorkerSourceTask.commitOffsets does every interval ("we still mark a successful
            # offset commit"), so a quiet source does not read as one whose commits fail.
            self.counters.commit(0.0, ok=True)
            self._commit_task()
        return self._outstanding()

    def _commit_task(self) -> None:
        """The task's ``commit()``, after a successful offset commit. Whatever it raises is
        logged, not the task's failure, as Kafka's commitSourceTask ("Exception thrown while
        calling task.commit()"): the offsets are stored already. A host that is gone has no
        task to call (a crashed host fails the task where it is noticed)."""
        if not self.host.alive:
            return
        try:
            self.host.call(self.handle, "commit")
        except RemotePluginError as exc:
            log.error("task %s: exception thrown while calling task.commit(): %s", self.name, exc)

    def stop(self, *, failed: bool = False, timeout_s: float = 5.0, fenced: bool = False) -> None:
        """Flush what can be flushed, store its offsets and stop the task in its host.

        Even after the task failed, what the broker acknowledged is safe to commit: the final
        commit waits for outstanding acks (up to ``timeout_s``) and stores them. A fenced
        task's offsets are refused where they are stored (the worker's check), so ``fenced``
        stops it as a failed one.
        """
        failed = failed or fenced
        deadline = time.monotonic() + timeout_s
        try:
            self._final_commit(timeout_s, failed)
        finally:
            self._release_producer()
            if self.errors is not None:
                self.errors.close(deadline)
            try:
                if self.host.alive:
                    self._collect(keep=False)
                    if self._pending_acks:
                        acks, self._pending_acks = self._pending_acks, []
                        self.host.acked(self.handle, acks)
                    self._before_task_stop()
                    self.host.stop_task(self.handle)
            finally:
                self._on_stop()
