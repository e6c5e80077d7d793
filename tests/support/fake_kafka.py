"""In-memory Kafka clients for unit tests of the task loops (no broker, no network).

They implement the part of confluent-kafka's Producer and Consumer API the loops use, with
Kafka's semantics where the loops depend on them: a producer acknowledges (and assigns
offsets) only when polled or flushed; a consumer reads a partition from its committed offset
(or the beginning), never returns records of a paused partition, and calls the rebalance
callbacks on assignment. As librdkafka does, the assign callback runs *before* the new
assignment takes effect: ``seek()`` there fails with "Unknown partition", and the callback
may set the assignment itself (``assign()`` under the eager protocol, ``incremental_assign()``
under the cooperative one, each failing with ``_STATE`` under the other), with start offsets.
A :class:`FakeCluster` holds the topics both sides share.

A producer with a ``transactional.id`` follows Kafka's transactions as the exactly-once loop
uses them: ``init_transactions()`` fences every older producer of the same id (their next
commit fails with ``_FENCED``), records become visible in the cluster's logs only when their
transaction commits (what a ``read_committed`` consumer sees), and an abort drops them (queued
ones get ``_PURGE_QUEUE`` delivery reports, as librdkafka's abort gives).
"""

from __future__ import annotations

import collections
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from core.runtime.sink import cooperative_protocol

# librdkafka's "no offset given": start from the committed offset (or auto.offset.reset).
OFFSET_INVALID = -1001


class FakeMessage:
    """A consumed or produced record, with confluent-kafka's accessor methods."""

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        key: bytes | None,
        value: bytes | None,
        timestamp: int = 0,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> None:
        self._topic, self._partition, self._offset = topic, partition, offset
        self._key, self._value, self._timestamp, self._headers = key, value, timestamp, headers

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def timestamp(self) -> tuple[int, int]:
        return (1, self._timestamp)  # TIMESTAMP_CREATE_TIME

    def headers(self) -> list[tuple[str, bytes]] | None:
        return self._headers

    def error(self) -> None:
        return None


@dataclass
class FakeCluster:
    """Topics as lists of messages per partition, and consumer groups' committed offsets."""

    partitions: int = 1
    # At most this many records per consume() (None: as many as asked for), as a real consumer
    # hands over only what it has fetched so far; small values make many small batches.
    fetched_per_consume: int | None = None
    logs: dict[tuple[str, int], list[FakeMessage]] = field(default_factory=dict)
    committed: dict[str, dict[tuple[str, int], int]] = field(
        default_factory=lambda: collections.defaultdict(dict)
    )
    # transactional.id -> the epoch of its newest producer (older ones are fenced).
    epochs: dict[str, int] = field(default_factory=dict)
    transactions_committed: int = 0
    transactions_aborted: int = 0
    # Set by a test: every offset commit fails with this error (a synchronous one raises it,
    # an asynchronous one reports it to the commit callback), committing nothing.
    commit_error: KafkaError | None = None
    # Set by a test: a synchronous offset commit waits until this event is set (a broker that
    # does not answer), then commits.
    commit_held: threading.Event | None = None
    # The metadata committed with each group's offsets (where a commit gave any).
    commit_metadata: dict[str, dict[tuple[str, int], str]] = field(
        default_factory=lambda: collections.defaultdict(dict)
    )
    # Each topic's ID (made on first use), which recreate() changes.
    topic_ids: dict[str, str] = field(default_factory=dict)
    # Topics deleted and not created again: DescribeTopics says they are unknown.
    deleted: set[str] = field(default_factory=set)

    def topic_id(self, topic: str) -> str:
        return self.topic_ids.setdefault(topic, uuid.uuid4().hex)

    def delete(self, topic: str) -> None:
        """Delete ``topic``: its logs, its ID and every group's committed offsets of it (as
        Kafka's group coordinator drops them). Consumers keep their positions, as librdkafka's."""
        for tp in [tp for tp in self.logs if tp[0] == topic]:
            del self.logs[tp]
        for offsets in self.committed.values():
            for tp in [tp for tp in offsets if tp[0] == topic]:
                del offsets[tp]
        self.topic_ids.pop(topic, None)
        self.deleted.add(topic)

    def recreate(self, topic: str) -> None:
        """Delete ``topic`` and create it again, empty, under a new ID."""
        self.delete(topic)
        self.deleted.discard(topic)
        self.topic_id(topic)

    def append(
        self,
        topic: str,
        partition: int,
        key: bytes | None,
        value: bytes | None,
        timestamp: int = 0,
        headers: Any = None,
    ) -> FakeMessage:
        log = self.logs.setdefault((topic, partition), [])
        message = FakeMessage(topic, partition, len(log), key, value, timestamp, headers)
        log.append(message)
        return message

    def values(self, topic: str, partition: int = 0) -> list[bytes | None]:
        return [m.value() for m in self.logs.get((topic, partition), [])]


def _kafka_error(code: int, text: str) -> KafkaException:
    return KafkaException(KafkaError(code, text))


class FakeProducer:
    def __init__(self, cluster: FakeCluster, config: Mapping[str, Any]) -> None:
        self.cluster = cluster
        self.config = dict(config)
        self._queued: list[tuple[Any, ...]] = []
        self.polls = 0
        # A slow broker: nothing is acknowledged (or delivered) while True.
        self.holding = False
        # A broker refusing every record: deliveries fail with this error instead.
        self.failing: Any = None
        # With ``failing``: only the records whose value this says yes to are refused.
        self.failing_if: Callable[[Any], bool] | None = None
        # librdkafka's queue.buffering.max.messages: produce() raises BufferError when full.
        self.capacity: int | None = None
        self.transactional_id: str | None = config.get("transactional.id")
        self.epoch: int | None = None  # set by init_transactions()
        self.in_transaction = False
        self._uncommitted: list[tuple[Any, ...]] = []  # delivered, waiting for the commit
        self._fatal_raised = False
        self.closed = False

    # -- transactions ------------------------------------------------------------------------

    def init_transactions(self, timeout: float = -1) -> None:
        if self.transactional_id is None:
            raise _kafka_error(KafkaError._NOT_CONFIGURED, "not a transactional producer")
        self.epoch = self.cluster.epochs.get(self.transactional_id, -1) + 1
        self.cluster.epochs[self.transactional_id] = self.epoch

    def _check_epoch(self) -> None:
        if self.epoch is None:
            raise _kafka_error(KafkaError._STATE, "init_transactions() was not called")
        assert self.transactional_id is not None
        if self.cluster.epochs[self.transactional_id] != self.epoch:
            raise _kafka_error(KafkaError._FENCED, "Local: This instance has been fenced")

    def _fenced(self) -> bool:
        return (
            self.transactional_id is not None
            and self.epoch is not None
            and self.cluster.epochs[self.transactional_id] != self.epoch
        )

    def _raise_fatal_once(self) -> None:
        """As librdkafka: a fenced producer's fatal error reaches the application once, from
        the call that serves it (a poll or a flush)."""
        if self._fenced() and not self._fatal_raised:
            self._fatal_raised = True
            error = KafkaError(
                KafkaError._FENCED, "Local: This instance has been fenced", fatal=True
            )
            raise KafkaException(error)

    def begin_transaction(self) -> None:
        self._check_epoch()
        if self.in_transaction:
            raise _kafka_error(KafkaError._STATE, "a transaction is already open")
        self.in_transaction = True

    def commit_transaction(self, timeout: float = -1) -> None:
        if not self.in_transaction:
            raise _kafka_error(KafkaError._STATE, "no transaction is open")
        self._check_epoch()
        self._deliver()
        for topic, partition, key, value, timestamp, headers in self._uncommitted:
            self.cluster.append(topic, partition, key, value, timestamp, headers)
        self._uncommitted = []
        self.in_transaction = False
        self.cluster.transactions_committed += 1

    def abort_transaction(self, timeout: float = -1) -> None:
        if not self.in_transaction:
            raise _kafka_error(KafkaError._STATE, "no transaction is open")
        self._check_epoch()
        queued, self._queued = self._queued, []
        for topic, _value, _key, partition, on_delivery, _ts, _headers in queued:
            if on_delivery is not None:
                on_delivery(
                    KafkaError(KafkaError._PURGE_QUEUE, "Local: Purged in queue"),
                    FakeMessage(topic, max(partition, 0), -1, None, None),
                )
        self._uncommitted = []
        self.in_transaction = False
        self.cluster.transactions_aborted += 1

    def produce(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int = -1,
        callback: Callable[[Any, FakeMessage], None] | None = None,
        on_delivery: Callable[[Any, FakeMessage], None] | None = None,
        timestamp: int = 0,
        headers: Any = None,
    ) -> None:
        """confluent-kafka's signature and positional order; without a callback of its own a
        record reports to the producer's ``on_delivery``, and with
        ``delivery.report.only.error`` successes report to nobody."""
        self._check_open()
        if self.capacity is not None and len(self._queued) >= self.capacity:
            raise BufferError("Local: Queue full")
        report = callback or on_delivery or self.config.get("on_delivery")
        self._queued.append((topic, value, key, partition, report, timestamp, headers))

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        """Every topic exists, as on a broker that creates topics on first use."""
        self._check_open()
        found = {topic: SimpleNamespace(topic=topic, error=None)} if topic else {}
        return SimpleNamespace(topics=found)

    def poll(self, timeout: float = 0) -> int:
        self._check_open()
        self.polls += 1
        delivered = self._deliver()
        self._raise_fatal_once()
        return delivered

    def flush(self, timeout: float = 0) -> int:
        self._check_open()
        self._deliver()
        self._raise_fatal_once()
        return len(self._queued)

    def purge(self, *args: Any) -> None:
        self._check_open()
        self._queued.clear()

    def close(self) -> bool:
        """As confluent-kafka's: delivers what is queued, then every other call but len()
        and close() raises."""
        if not self.closed:
            self._deliver()
            self.closed = True
        return True

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("Producer has been closed")

    def __len__(self) -> int:
        return 0 if self.closed else len(self._queued)

    def _deliver(self) -> int:
        if self.holding:
            return 0
        queued, self._queued = self._queued, []
        only_errors = self.config.get("delivery.report.only.error")
        # A fenced producer's records are refused by the broker: their epoch is an old one.
        refused = self.failing or (
            KafkaError(KafkaError.INVALID_PRODUCER_EPOCH, "Broker: old epoch")
            if self._fenced()
            else None
        )
        for topic, value, key, partition, on_delivery, timestamp, headers in queued:
            if refused is not None and (
                self.failing_if is None or refused is not self.failing or self.failing_if(value)
            ):
                message = FakeMessage(topic, max(partition, 0), -1, key, value, timestamp, headers)
                if on_delivery is not None:
                    on_delivery(refused, message)
                continue
            if self.transactional_id is not None:
                if not self.in_transaction:
                    raise AssertionError("a transactional producer produced outside a transaction")
                # Acknowledged now, visible at the commit (offsets as they will be then).
                log = self.cluster.logs.get((topic, max(partition, 0)), [])
                ahead = sum(1 for u in self._uncommitted if u[:2] == (topic, max(partition, 0)))
                message = FakeMessage(topic, max(partition, 0), len(log) + ahead, key, value)
                self._uncommitted.append((topic, max(partition, 0), key, value, timestamp, headers))
            else:
                message = self.cluster.append(
                    topic, max(partition, 0), key, value, timestamp, headers
                )
            if on_delivery is not None and not only_errors:
                on_delivery(None, message)
        return len(queued)


class FakeConsumer:
    """A consumer alone in its group: subscribing assigns it every partition of its topics
    (on the next consume, as the Java consumer's poll does)."""

    def __init__(self, cluster: FakeCluster, config: Mapping[str, Any]) -> None:
        self.cluster = cluster
        self.config = dict(config)
        self.group = str(config.get("group.id"))
        self._on_commit = config.get("on_commit")
        self._topics: list[str] = []
        self._callbacks: dict[str, Callable[..., None]] = {}
        self.assigned: list[tuple[str, int]] = []
        self.assignments = 0  # how many times partitions were assigned (a rebalance each)
        self.paused: set[tuple[str, int]] = set()
        self.positions: dict[tuple[str, int], int] = {}
        self.consume_calls = 0
        # (timeout, whether anything was returned) of every consume() and poll()
        self.waits: list[tuple[float, bool]] = []
        self.closed = False
        self.cooperative = cooperative_protocol(config)
        self._in_callback = False
        self._starts: dict[tuple[str, int], int] = {}

    def subscribe(
        self,
        topics: Sequence[str],
        on_assign: Any = None,
        on_revoke: Any = None,
        on_lost: Any = None,
    ) -> None:
        self._topics = list(topics)
        self._callbacks = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost}

    def _maybe_assign(self) -> None:
        if self.assigned or not self._topics:
            return
        tps = [(t, p) for t in self._topics for p in range(self.cluster.partitions)]
        self.assignments += 1
        self._in_callback, self._starts = True, {}
        try:
            if self._callbacks.get("assign"):
                self._callbacks["assign"](self, [TopicPartition(t, p) for t, p in tps])
        finally:
            self._in_callback = False
        self.assigned = tps
        committed = self.cluster.committed[self.group]
        for tp in tps:
            start = self._starts.get(tp, OFFSET_INVALID)
            self.positions[tp] = start if start >= 0 else committed.get(tp, 0)

    def revoke_all(self) -> None:
        """A rebalance takes every partition away (tests call this)."""
        tps, self.assigned = self.assigned, []
        if self._callbacks.get("revoke"):
            self._callbacks["revoke"](self, [TopicPartition(t, p) for t, p in tps])

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[FakeMessage]:
        self.consume_calls += 1
        self._maybe_assign()
        if self.cluster.fetched_per_consume is not None:
            num_messages = min(num_messages, self.cluster.fetched_per_consume)
        out: list[FakeMessage] = []
        for tp in self.assigned:
            if tp in self.paused:
                continue
            log = self.cluster.logs.get(tp, [])
            start = self.positions.get(tp, 0)
            take = log[start : start + num_messages - len(out)]
            out += take
            self.positions[tp] = start + len(take)
            if len(out) >= num_messages:
                break
        self.waits.append((timeout, bool(out)))
        return out

    def poll(self, timeout: float = -1) -> FakeMessage | None:
        found = self.consume(1, timeout)
        return found[0] if found else None

    def commit(
        self, offsets: Sequence[TopicPartition] | None = None, asynchronous: bool = True
    ) -> None:
        if self.cluster.commit_held is not None and not asynchronous:
            self.cluster.commit_held.wait()
        error = self.cluster.commit_error
        if error is not None and not asynchronous:
            raise KafkaException(error)
        if error is None:
            for tp in offsets or []:
                self.cluster.committed[self.group][(tp.topic, tp.partition)] = tp.offset
                if tp.metadata:
                    self.cluster.commit_metadata[self.group][(tp.topic, tp.partition)] = tp.metadata
        if asynchronous and self._on_commit is not None:
            self._on_commit(error, list(offsets or []))

    def committed(
        self, partitions: Sequence[TopicPartition], timeout: float = -1
    ) -> list[TopicPartition]:
        """The group's committed offsets (OFFSET_INVALID where it has none)."""
        committed = self.cluster.committed[self.group]
        metadata = self.cluster.commit_metadata[self.group]
        return [
            TopicPartition(
                tp.topic,
                tp.partition,
                committed.get((tp.topic, tp.partition), -1001),
                metadata=metadata.get((tp.topic, tp.partition), ""),
            )
            for tp in partitions
        ]

    def offsets_for_times(
        self, partitions: Sequence[TopicPartition], timeout: float = -1
    ) -> list[TopicPartition]:
        """Only ListOffsets' special timestamps: -1 the log's end, -2 its beginning (0)."""
        out = []
        for tp in partitions:
            if tp.offset not in (-1, -2):
                raise AssertionError("the fake consumer lists only the log's ends")
            end = len(self.cluster.logs.get((tp.topic, tp.partition), []))
            out.append(TopicPartition(tp.topic, tp.partition, end if tp.offset == -1 else 0))
        return out

    def pause(self, partitions: Sequence[TopicPartition]) -> None:
        self.paused |= {(tp.topic, tp.partition) for tp in partitions}

    def resume(self, partitions: Sequence[TopicPartition]) -> None:
        self.paused -= {(tp.topic, tp.partition) for tp in partitions}

    def seek(self, partition: TopicPartition) -> None:
        tp = (partition.topic, partition.partition)
        if tp not in self.assigned:
            raise KafkaException(
                KafkaError(
                    KafkaError._UNKNOWN_PARTITION,
                    f"Failed to seek to offset {partition.offset}: Local: Unknown partition",
                )
            )
        self.positions[tp] = partition.offset

    def assign(self, partitions: Sequence[TopicPartition]) -> None:
        """From the assign callback: take these partitions, starting where they say."""
        self._set_assignment(partitions, incremental=False)

    def incremental_assign(self, partitions: Sequence[TopicPartition]) -> None:
        self._set_assignment(partitions, incremental=True)

    def _set_assignment(self, partitions: Sequence[TopicPartition], incremental: bool) -> None:
        if not self._in_callback:
            raise AssertionError("the loops set an assignment only from the assign callback")
        if incremental != self.cooperative:
            raise KafkaException(
                KafkaError(KafkaError._STATE, "Failed to set assignment: Local: Erroneous state")
            )
        self._starts = {(tp.topic, tp.partition): tp.offset for tp in partitions}

    def close(self) -> None:
        self.closed = True


class FakeClients:
    """:class:`core.runtime.services.KafkaClients` over one :class:`FakeCluster`."""

    def __init__(self, cluster: FakeCluster | None = None) -> None:
        self.cluster = cluster or FakeCluster()
        self.producers: list[FakeProducer] = []
        self.consumers: list[FakeConsumer] = []
        self.admins: list[FakeAdmin] = []

    def producer(self, config: Mapping[str, Any]) -> FakeProducer:
        producer = FakeProducer(self.cluster, config)
        self.producers.append(producer)
        return producer

    def consumer(self, config: Mapping[str, Any]) -> FakeConsumer:
        consumer = FakeConsumer(self.cluster, config)
        self.consumers.append(consumer)
        return consumer

    def admin(self, config: Mapping[str, Any]) -> Any:
        """Only DescribeTopics (the sink loop's topic IDs): topic creation is off here."""
        admin = FakeAdmin(self.cluster)
        self.admins.append(admin)
        return admin


class FakeAdmin:
    """The admin client's DescribeTopics, over a :class:`FakeCluster`."""

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster
        self.describes = 0

    def describe_topics(self, topics: Any, request_timeout: float = -1) -> dict[str, Future[Any]]:
        self.describes += 1
        futures: dict[str, Future[Any]] = {}
        for name in topics.topic_names:
            future: Future[Any] = Future()
            if name in self.cluster.deleted:
                future.set_exception(
                    _kafka_error(KafkaError.UNKNOWN_TOPIC_OR_PART, "Broker: Unknown topic")
                )
            else:
                future.set_result(SimpleNamespace(topic_id=self.cluster.topic_id(name)))
            futures[name] = future
        return futures
