"""A Kafka topic as a replicated log: read from its start into memory, then tailed.

:class:`KafkaBasedLog` is Kafka Connect's class of the same name, over confluent-kafka. Each of
the three internal topics (configs, offsets, statuses) is one: a consumer assigned every
partition of the topic (no consumer group: every worker reads everything) and a producer for
writes. A worker rebuilds the whole cluster state from the three logs alone.

Threads:

* one **work thread** per log consumes the topic and calls ``consume(record)`` for each record,
  in order per partition; the stores' callbacks run there and must not block;
* any thread may :meth:`send` (librdkafka's producer is thread-safe) and ask for
  :meth:`read_to_end`, whose future completes once every record written before the call was
  consumed and its callback ran (Kafka's ``readToEnd``: the end offsets are taken at the call,
  so a caller that wrote something and then asks sees its own write).

Reading to the end uses the high watermark, so it needs a broker that reports it as Kafka
does (the dev broker reports the last batch's base offset instead; see docs/architecture.md).
A ``read_committed`` log (the config topic, whose leader writes are transactional) sees only
committed records; librdkafka moves the consumer's position past transaction markers, so the
high watermark is reached after a commit.

A log with ``stable_end`` (the offsets topics under exactly-once support) reads to the *last
stable offset* instead, as Kafka's read_committed ``endOffsets()`` does: a transaction left
open by a killed task (until its next instance fences it, or the transaction times out, 60 s
later) must not hold up every reader of the topic; the records after it are read once it
ended. That is safe for a task reading its own offsets because the task's producer is
initialised first, and that completes the older instance's transactions.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from core.kafka import JAVA_MAX_REQUEST_SIZE, Consumer, Producer, client_config, wrap_kafka_error
from plugin_api import ConnectException

__all__ = ["NEVER_GIVE_UP", "KafkaBasedLog", "LogRecord"]

log = logging.getLogger("copycat.distributed.log")

# Records taken per consume() call: the internal topics are small, but a fresh worker reading
# a shared topic with thousands of connectors' records should not pay a call per record.
CONSUME_BATCH = 1_000
# How long the work thread waits for records. It bounds how soon a stop is noticed, and how
# soon a read-to-end sees the consumer step over a transaction marker (which returns no
# record, so consume() waits this long): 50 ms, ~20 cheap wake-ups a second per idle log.
IDLE_POLL_S = 0.05
# Deadline of one metadata or watermark request: local brokers answer in milliseconds, a
# loaded one in well under a second; the call is retried by the next loop round anyway.
METADATA_TIMEOUT_S = 10.0
# Pause before asking again after a retriable error (NOT_LEADER just after topic creation).
RETRY_BACKOFF_S = 0.1
# Errors librdkafka does not mark retriable in a watermark query but that pass once the
# partition's leader is known (a topic created a moment ago, a leader election).
_LEADER_MOVES = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_PARTITION,
    }
)
# How long stop() waits for the work thread to finish its current round.
STOP_TIMEOUT_S = 10.0
# Offsets below 0 are librdkafka's "no position yet" markers (OFFSET_INVALID = -1001).
_NO_POSITION = 0


@dataclass(frozen=True)
class LogRecord:
    """One record of an internal topic as the stores see it (``value`` None: a tombstone)."""

    key: bytes | None
    value: bytes | None
    partition: int
    offset: int
    timestamp_ms: int


# Kafka Connect's config and offsets producers never give a record up (delivery.timeout.ms
# Integer.MAX_VALUE, whatever the worker config says): a write answered "still being retried"
# during an outage must land whenever the brokers come back, not be dropped after librdkafka's
# 5 minutes (or a worker's delivery.timeout.ms). 0 is librdkafka's "no limit"; the Java key
# is set too because it wins over the librdkafka one (core.kafka.JAVA_CLIENT_KEYS). A stop
# still waits only STOP_TIMEOUT_S for what is unacknowledged.
NEVER_GIVE_UP: Mapping[str, Any] = {"delivery.timeout.ms": 0, "message.timeout.ms": 0}


class KafkaBasedLog:
    """One internal topic, read to its end at start and tailed until :meth:`stop`.

    Args:
        topic: The topic (it must exist: see :mod:`core.distributed.internal_topics`).
        client_props: The worker's Kafka client settings (``bootstrap.servers``, security).
        consume: Called on the work thread with every record, in partition order.
        name: Names the threads and clients in logs (``configs``, ``offsets``, ``statuses``).
        read_committed: Read only committed transactional records (the config topic).
        stable_end: With ``read_committed``, read to the last stable offset, not the high
            watermark (see the module docstring).
        producer_overrides: Settings for this log's producer on top of Kafka Connect's.
    """

    def __init__(
        self,
        topic: str,
        client_props: Mapping[str, Any],
        consume: Callable[[LogRecord], None],
        *,
        name: str,
        read_committed: bool = False,
        stable_end: bool = False,
        producer_overrides: Mapping[str, Any] | None = None,
    ) -> None:
        self.topic = topic
        self.name = name
        self._consume = consume
        self._client_props = dict(client_props)
        self._read_committed = read_committed
        self._stable_end = stable_end and read_committed
        self._producer_overrides = dict(producer_overrides or {})
        self._consumer: Consumer | None = None
        self._ends: Consumer | None = None
        self._producer: Producer | None = None
        self._partitions: list[int] = []
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        # Guards how far the work thread has applied each partition, and the read-to-end
        # requests waiting for it to get further.
        self._progress = threading.Lock()
        self._applied: dict[int, int] = {}
        self._waiters: list[tuple[dict[int, int], Future[None]]] = []
        self._error: BaseException | None = None
        # Set once the work thread consumed past the end offsets taken at start().
        self.caught_up = threading.Event()

    # -- life cycle --------------------------------------------------------------------------

    @property
    def partition_count(self) -> int:
        return len(self._partitions)

    def start(self, timeout_s: float) -> None:
        """Assign every partition from its beginning, start the work thread and wait until
        everything written before this call was consumed.

        Raises:
            ConnectException: the topic cannot be read, or reading it took over ``timeout_s``.
        """
        client_id = f"copycat-{self.name}-{uuid.uuid4().hex[:6]}"
        # End offsets are asked on a connection of their own: a broker answers one
        # connection's requests in order, and the reading consumer's connection is mostly
        # busy with a fetch that the broker holds up to fetch.wait.max.ms (500 ms) while
        # there is nothing new, so every read-to-end waited that long behind it.
        self._ends = Consumer(
            client_config(
                self._client_props,
                {
                    "client.id": f"{client_id}-ends",
                    "group.id": f"copycat-internal-{self.name}",
                    # The high watermark, not the last stable offset (librdkafka's default
                    # isolation answers that): just after a leader's commit returns, the
                    # transaction's markers may not be written yet and the LSO still stands
                    # before its records, so a read-to-end would end before them. Unless
                    # the log reads to the stable end (see the module docstring).
                    "isolation.level": (
                        "read_committed" if self._stable_end else "read_uncommitted"
                    ),
                },
            )
        )
        consumer = Consumer(
            client_config(
                self._client_props,
                {
                    "client.id": client_id,
                    # librdkafka insists on a group id; this one never joins: partitions are
                    # assigned by hand and no offset is ever committed.
                    "group.id": f"copycat-internal-{self.name}-{uuid.uuid4().hex[:8]}",
                    "enable.auto.commit": False,
                    "enable.auto.offset.store": False,
                    "auto.offset.reset": "earliest",
                    "isolation.level": (
                        "read_committed" if self._read_committed else "read_uncommitted"
                    ),
                },
            )
        )
        try:
            # Asked by the reading consumer itself, so that its metadata cache knows the
            # partitions' leader before assign(). Otherwise assign() could race the metadata
            # request librdkafka sends when its first connection comes up: that request named
            # no topic yet, and the assigned partition then waited for librdkafka's once-a-
            # second scan of topics without a leader (1 s of a ~70 ms read, in 4 starts of 30).
            metadata = consumer.list_topics(self.topic, timeout=METADATA_TIMEOUT_S)
            topic = metadata.topics.get(self.topic)
            if topic is None or topic.error is not None or not topic.partitions:
                reason = topic.error.str() if topic is not None and topic.error else "no partitions"
                raise ConnectException(f"cannot read internal topic {self.topic}: {reason}")
            self._partitions = sorted(topic.partitions)
            # Start at each partition's first offset, asked for explicitly: assigning
            # OFFSET_BEGINNING made librdkafka look it up behind the first fetch (~0.5 s).
            starts = [
                TopicPartition(self.topic, p, max(self._watermarks(p)[0], 0))
                for p in self._partitions
            ]
        except KafkaException as exc:
            consumer.close()
            self._ends.close()
            raise wrap_kafka_error(exc, f"cannot read metadata of topic {self.topic}") from exc
        except ConnectException:
            consumer.close()
            self._ends.close()
            raise
        consumer.assign(starts)
        self._applied = {tp.partition: tp.offset for tp in starts}
        self._consumer = consumer
        self._producer = Producer(
            client_config(
                self._client_props,
                {
                    "client.id": client_id,
                    # Kafka Connect's settings for its internal topics: nothing acknowledged is
                    # lost on a broker failover, and one key's writes stay in order.
                    "acks": "all",
                    "enable.idempotence": True,
                    "max.in.flight.requests.per.connection": 5,
                    "linger.ms": 0,
                    "message.max.bytes": JAVA_MAX_REQUEST_SIZE,
                },
                self._producer_overrides,
            )
        )
        self._thread = threading.Thread(
            target=self._run, name=f"kafka-log-{self.name}", daemon=True
        )
        self._thread.start()
        done = self.read_to_end()
        try:
            done.result(timeout_s)
        except TimeoutError:
            self.stop()
            raise ConnectException(
                f"could not read internal topic {self.topic} to its end within {timeout_s:g} s"
            ) from None
        self.caught_up.set()

    def stop(self) -> None:
        """Stop the work thread, flush what was sent, close the clients. Idempotent."""
        self._stopping.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(STOP_TIMEOUT_S)
        self._thread = None
        producer, self._producer = self._producer, None
        if producer is not None:
            left = producer.flush(STOP_TIMEOUT_S)
            if left:
                # Nothing gives these up by itself (NEVER_GIVE_UP): drop them now, so that no
                # write outlives the stop in librdkafka's threads.
                log.warning(
                    "%d records to internal topic %s were not acknowledged within %g s of the "
                    "stop; they are dropped",
                    left,
                    self.topic,
                    STOP_TIMEOUT_S,
                )
                producer.purge()
                producer.flush(0)
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close()
        ends, self._ends = self._ends, None
        if ends is not None:
            ends.close()
        with self._progress:
            waiters, self._waiters = self._waiters, []
        for _targets, future in waiters:
            if not future.done():
                future.set_exception(ConnectException(f"log of {self.topic} stopped"))

    # -- reading -------------------------------------------------------------------------------

    def read_to_end(self) -> Future[None]:
        """A future done once every record written to the topic before this call was consumed
        (its callbacks have run). Fails if the log stops first.

        The end offsets are asked on the caller's thread (a connection of their own, a few
        milliseconds), then the work thread resolves the future when it has applied that far.
        """
        future: Future[None] = Future()
        if self._stopping.is_set():
            future.set_exception(ConnectException(f"log of {self.topic} is stopped"))
            return future
        try:
            targets = self._end_offsets()
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if isinstance(error, KafkaError) and (
                error.retriable() or error.code() in _LEADER_MOVES
            ):
                # Retried until METADATA_TIMEOUT_S: with every broker down librdkafka reports
                # an unknown partition or a timeout, never "unreachable".
                message = (
                    f"the Kafka cluster could not be reached to read {self.topic} to its end "
                    f"within {METADATA_TIMEOUT_S:g} s ({error.str()})"
                )
            else:
                message = f"cannot read the end of {self.topic}: {exc}"
            future.set_exception(ConnectException(message))
            return future
        except (ConnectException, RuntimeError) as exc:
            future.set_exception(ConnectException(f"cannot read the end of {self.topic}: {exc}"))
            return future
        with self._progress:
            if self._reached(targets):
                future.set_result(None)
            else:
                self._waiters.append((targets, future))
        return future

    def _reached(self, targets: Mapping[int, int]) -> bool:
        return all(self._applied.get(p, -1) >= end for p, end in targets.items() if end >= 0)

    def _run(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        assigned = [TopicPartition(self.topic, p) for p in self._partitions]
        while not self._stopping.is_set():
            try:
                for message in consumer.consume(CONSUME_BATCH, IDLE_POLL_S):
                    self._deliver(message)
                positions = consumer.position(assigned)
                with self._progress:
                    for tp in positions:
                        if tp.offset >= _NO_POSITION:
                            self._applied[tp.partition] = tp.offset
                    still = []
                    for targets, future in self._waiters:
                        if not self._reached(targets):
                            still.append((targets, future))
                        elif not future.done():
                            future.set_result(None)
                    self._waiters = still
                if self._producer is not None:
                    self._producer.poll(0)
            except KafkaException as exc:
                # Transient (a broker restart, a leader move): the next round asks again.
                log.warning("reading %s: %s", self.topic, wrap_kafka_error(exc, "consumer"))
                time.sleep(IDLE_POLL_S)
            except BaseException as exc:  # noqa: BLE001 - a store bug must not hang callers
                log.exception("reading %s failed; the log stops", self.topic)
                self._error = exc
                with self._progress:
                    waiters, self._waiters = self._waiters, []
                for _targets, future in waiters:
                    if not future.done():
                        future.set_exception(exc)
                self._stopping.set()
                return

    def _deliver(self, message: Message) -> None:
        error = message.error()
        if error is not None:
            if error.code() != KafkaError._PARTITION_EOF:
                log.warning("reading %s: %s", self.topic, error.str())
            return
        _kind, timestamp = message.timestamp()
        record = LogRecord(
            message.key(),
            message.value(),
            message.partition() or 0,
            message.offset() or 0,
            timestamp,
        )
        self._consume(record)

    def _watermarks(self, partition: int) -> tuple[int, int]:
        """Low and high watermark, retrying retriable errors (a topic created a moment ago
        answers NOT_LEADER until its leader is elected) for up to METADATA_TIMEOUT_S."""
        ends = self._ends
        if ends is None:
            raise ConnectException(f"log of {self.topic} is stopped")
        deadline = time.monotonic() + METADATA_TIMEOUT_S
        while True:
            try:
                low, high = ends.get_watermark_offsets(
                    TopicPartition(self.topic, partition), timeout=METADATA_TIMEOUT_S, cached=False
                )
                return int(low), int(high)
            except KafkaException as exc:
                error = exc.args[0] if exc.args else None
                retriable = isinstance(error, KafkaError) and (
                    error.retriable() or error.code() in _LEADER_MOVES
                )
                if not retriable or time.monotonic() > deadline:
                    raise
                time.sleep(RETRY_BACKOFF_S)

    def _end_offsets(self) -> dict[int, int]:
        """Each partition's high watermark now (-1: the partition holds nothing to read)."""
        ends: dict[int, int] = {}
        for partition in self._partitions:
            low, high = self._watermarks(partition)
            ends[partition] = high if high > low else -1
        return ends

    # -- writing -------------------------------------------------------------------------------

    def send(self, key: bytes, value: bytes | None) -> Future[int]:
        """Produce one record (None: a tombstone); the future holds its offset once acked."""
        producer = self._producer
        future: Future[int] = Future()
        if producer is None:
            future.set_exception(ConnectException(f"log of {self.topic} is not running"))
            return future

        def delivered(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                future.set_exception(
                    wrap_kafka_error(error, f"writing to internal topic {self.topic}")
                )
            else:
                future.set_result(message.offset() or 0)

        while True:
            try:
                producer.produce(self.topic, value, key, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(IDLE_POLL_S)  # librdkafka's queue is full: serve deliveries
        producer.poll(0)
        return future

    def await_sent(self, futures: Sequence[Future[int]], timeout_s: float) -> None:
        """Wait until the records of these :meth:`send` futures are acknowledged (or failed),
        serving delivery reports meanwhile; records other callers sent are theirs to wait for.

        Raises:
            ConnectException: some were still unacknowledged after ``timeout_s``.
        """
        deadline = time.monotonic() + timeout_s
        pending = [future for future in futures if not future.done()]
        while pending:
            left = deadline - time.monotonic()
            producer = self._producer
            if producer is None:
                raise ConnectException(f"log of {self.topic} is not running")
            if left <= 0:
                raise ConnectException(
                    f"{len(pending)} records to internal topic {self.topic} were not "
                    f"acknowledged within {timeout_s:g} s"
                )
            # Returns as soon as a report is served; another thread may serve ours meanwhile.
            producer.poll(min(left, IDLE_POLL_S))
            pending = [future for future in pending if not future.done()]

    def flush(self, timeout_s: float) -> None:
        """Wait until everything sent so far is acknowledged (or failed).

        Raises:
            ConnectException: records were still unacknowledged after ``timeout_s``.
        """
        producer = self._producer
        if producer is None:
            return
        left = producer.flush(timeout_s)
        if left:
            raise ConnectException(
                f"{left} records to internal topic {self.topic} were not acknowledged "
                f"within {timeout_s:g} s"
            )
