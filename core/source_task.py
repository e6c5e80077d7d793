"""The source task loop: poll the plugin host, produce the bytes, commit offsets after acks.

The loop knows nothing of threads or herders: whoever drives it (a worker thread, a Spark
executor) calls :meth:`SourceTaskLoop.iteration` repeatedly and :meth:`commit_offsets` on its
own schedule. At-least-once: an offset is stored only when the broker has acknowledged its
record *and every record submitted before it for the same source partition*, so a crash never
skips data (it may resend some).
"""

from __future__ import annotations

import collections
import functools
import logging
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, Message, Producer
from plugin_api import ConnectException
from plugin_api.connector import freeze_partition

from core.errors import ErrorReporter
from core.kafka import wrap_kafka_error
from core.offsets import OffsetStore
from core.topics import TopicCreator
from isolation.host import PluginHost

log = logging.getLogger("copycat.source")

# Records sent but not yet acknowledged. Past this the loop stops polling the task and waits
# for acks: memory stays bounded when the broker is slower than the source.
MAX_OUTSTANDING_RECORDS = 200_000
# How long produce() waits for room in librdkafka's queue before trying again.
QUEUE_FULL_WAIT_S = 0.05


class _Interrupted(Exception):
    """A stop was requested while the loop waited for the broker to make room."""


class _Submitted:
    """Records in submission order; offsets become committable as the acknowledged prefix."""

    __slots__ = ("order", "acked")

    def __init__(self) -> None:
        # (seq, frozen source partition, source partition, source offset)
        self.order: collections.deque[tuple[int, Any, Any, Any]] = collections.deque()
        self.acked: set[int] = set()

    def committable(self) -> list[tuple[Any, Any]]:
        """Pop the acknowledged prefix; return ``(partition, latest offset)`` for each in it.

        A partition's offset advances only past records acked in order; one unacked record
        holds back everything after it (across partitions too, which is simpler and at most
        delays a commit until that record's ack arrives).
        """
        offsets: dict[Any, tuple[Any, Any]] = {}
        order, acked = self.order, self.acked
        while order and order[0][0] in acked:
            seq, frozen, partition, offset = order.popleft()
            acked.discard(seq)
            if frozen is not None:
                offsets[frozen] = (partition, offset)
        return list(offsets.values())


class SourceTaskLoop:
    """Drives one source task living in a plugin host."""

    def __init__(
        self,
        connector: str,
        task_id: int,
        host: PluginHost,
        handle: int,
        producer: Producer,
        offsets: OffsetStore,
        topic_creator: TopicCreator | None = None,
        *,
        wants_acks: bool = True,
        errors: ErrorReporter | None = None,
    ) -> None:
        self.connector = connector
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
        # Polled by waits on the broker (a full producer queue, too many unacked records) so a
        # task stuck behind a slow or dead broker can still be stopped. Set by the driver.
        self.should_stop: Callable[[], bool] = lambda: False

    @property
    def name(self) -> str:
        return f"{self.connector}-{self.task_id}"

    def _delivered(self, seq: int, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            if self._failure is None:
                self._failure = wrap_kafka_error(
                    err, f"task {self.name} could not send a record to "
                    f"{msg.topic()}-{msg.partition()}"
                )
            return
        self._submitted.acked.add(seq)
        if self._wants_acks:
            self._pending_acks.append(
                (seq, msg.topic(), msg.partition(), msg.offset(), msg.timestamp()[1]))

    def iteration(self) -> int:
        """One ``poll()`` of the task, its records handed to the producer. Returns the count.

        Pipelined: as soon as a poll's records arrive, the next poll is sent, so the host
        polls, transforms and converts while the worker produces, each on its own core.
        """
        self._raise_if_failed()
        self.producer.poll(0)
        while len(self._submitted.order) >= MAX_OUTSTANDING_RECORDS:
            self.producer.poll(QUEUE_FULL_WAIT_S)  # back-pressure: wait for the broker
            self._raise_if_failed()
            if self.should_stop():
                return 0
        if not self.host.pending:
            self._submit_poll()
        rows, failures = self.host.result()
        self._submit_poll()
        if failures and self.errors is not None:
            self.errors.report_source(failures)
        try:
            return self._send(rows)
        except _Interrupted:
            return 0  # the rest of the batch is unsent and unacked: its offsets stay behind

    def _submit_poll(self) -> None:
        acks, self._pending_acks = self._pending_acks, []
        self.host.submit("poll", self.handle, acks)

    def _settle(self, send: bool = True) -> None:
        """Collect an outstanding poll (and send its records) before other host requests."""
        if self.host.pending:
            rows, failures = self.host.result()
            if send:
                if failures and self.errors is not None:
                    self.errors.report_source(failures)
                try:
                    self._send(rows)
                except _Interrupted:
                    pass

    def _send(self, rows: list[tuple[Any, ...]]) -> int:
        produce = self.producer.produce
        order = self._submitted.order
        delivered = self._delivered
        last_part: Any = None
        frozen: Any = None
        for seq, topic, partition, key, value, headers, timestamp, src_part, src_off in rows:
            if src_part != last_part:  # usually one partition per batch: freeze it once
                last_part = src_part
                frozen = freeze_partition(src_part) if src_part is not None else None
            order.append((seq, frozen, src_part, src_off))
            if topic is None:  # dropped by a transform: its offset still counts
                self._submitted.acked.add(seq)
                if self._wants_acks:
                    self._pending_acks.append((seq, None, None, None, None))
                continue
            if topic not in self._topics_seen:
                if self._topic_creator is not None:
                    self._topic_creator.ensure(topic)
                self._topics_seen.add(topic)
            kwargs: dict[str, Any] = {"on_delivery": functools.partial(delivered, seq)}
            if partition is not None:
                kwargs["partition"] = partition
            if timestamp is not None:
                kwargs["timestamp"] = timestamp
            if headers:
                kwargs["headers"] = headers
            while True:
                try:
                    produce(topic, value, key, **kwargs)
                    break
                except BufferError:
                    # Back-pressure: librdkafka's queue is full, so the broker is slower
                    # than the source; no more polls until it has room.
                    self.producer.poll(QUEUE_FULL_WAIT_S)
                    self._raise_if_failed()
                    if self.should_stop():
                        raise _Interrupted from None
                except Exception as exc:  # KafkaException, TypeError for bad values
                    raise ConnectException(
                        f"task {self.name} could not send a record to topic {topic!r}: {exc}"
                    ) from exc
        self.records_sent += len(rows)
        return len(rows)

    def _raise_if_failed(self) -> None:
        if self._failure is not None:
            raise self._failure

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
            self.host.request("call", self.handle, "commit")
        return len(self._submitted.order)

    def stop(self, timeout_s: float) -> None:
        """Flush what can be flushed, store its offsets and stop the task in its host."""
        try:
            if self._failure is None:
                self.commit_offsets(timeout_s)
        finally:
            if self.host.alive:
                self._settle(send=False)
                if self._pending_acks:
                    acks, self._pending_acks = self._pending_acks, []
                    self.host.request("acked", self.handle, acks)
                self.host.request("stop_task", self.handle)
