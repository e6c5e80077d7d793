"""Helpers for tests that talk to a broker: produce, read back, committed offsets."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from core.kafka import READ_COMMITTED


def wait_for(predicate: Callable[[], Any], timeout_s: float = 30.0, what: str = "") -> Any:
    """Poll ``predicate`` until it returns something truthy; fail the test on timeout."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what or predicate}: last={last!r}")


def produce(bootstrap: str, topic: str, values: Iterable[bytes]) -> None:
    """Produce every value (waiting for room when the queue is full) and flush."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for value in values:
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(30) == 0


def read_all(bootstrap: str, topic: str, expected: int, timeout_s: float = 30) -> list[Message]:
    """Partition 0 of ``topic`` from the start: at least ``expected`` records if they come,
    plus anything that arrives in the half second after (so extra records are seen too).

    Counts by reading, which is right on every broker (the dev broker's high watermarks are not).
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{uuid.uuid4()}",
            "enable.auto.commit": False,
            # What a downstream consumer sees of an exactly-once source's topic (and of a
            # DLQ): committed transactions only.
            "isolation.level": READ_COMMITTED,
            # A partition just created may answer the first fetch at 0 OFFSET_OUT_OF_RANGE:
            # librdkafka's default reset (latest) would then skip what is written next.
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    messages: list[Message] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(messages) < expected and time.monotonic() < deadline:
            messages += [m for m in consumer.consume(5000, 0.5) if m.error() is None]
        time.sleep(0.5)
        messages += [m for m in consumer.consume(5000, 0.5) if m.error() is None]
        return messages
    finally:
        consumer.close()


# How long committed() retries retriable errors: on a fresh broker the group coordinator
# answers NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS until __consumer_offsets exists.
COMMITTED_RETRY_S = 30.0
# A group's coordinator moving or loading: the committed offsets are asked again (librdkafka
# does not flag NOT_COORDINATOR retriable on this call; CI met it under load).
COORDINATOR_MOVING = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
}


def read_topic(
    bootstrap: str, topic: str, timeout_s: float = 60, isolation: str = READ_COMMITTED
) -> list[Message]:
    """Every record of every partition of ``topic``, up to the partitions' ends when called
    (Apache Kafka: the dev broker's high watermarks are off by a batch).

    ``read_committed`` (the default) stops before a transaction still open; librdkafka moves
    the position past transaction markers and aborted records, so each end is reached once the
    transactions before it ended.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    messages: list[Message] = []
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        partitions = sorted(metadata.topics[topic].partitions)
        watermarks = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            for p in partitions
        }
        ends = {p: high for p, (low, high) in watermarks.items() if high > low}
        if not ends:
            return []
        consumer.assign([TopicPartition(topic, p, watermarks[p][0]) for p in ends])
        deadline = time.monotonic() + timeout_s
        positions: list[TopicPartition] = []
        while time.monotonic() < deadline:
            messages += [m for m in consumer.consume(5000, 0.2) if m.error() is None]
            positions = consumer.position([TopicPartition(topic, p) for p in ends])
            if all(tp.offset >= ends[tp.partition] for tp in positions):
                return messages
        raise AssertionError(
            f"{topic}: not read to its end {ends} within {timeout_s} s (at "
            f"{[(tp.partition, tp.offset) for tp in positions]})"
        )
    finally:
        consumer.close()


def committed(bootstrap: str, group: str, topic: str, partition: int = 0) -> int:
    """The offset ``group`` committed for ``partition`` of ``topic`` (negative if none)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        [tp] = _committed_retrying(consumer, [TopicPartition(topic, partition)])
        return int(tp.offset)
    finally:
        consumer.close()


def _committed_retrying(consumer: Consumer, partitions: list[TopicPartition]) -> list[Any]:
    """``consumer.committed(partitions)``, asked again for COMMITTED_RETRY_S while the group's
    coordinator moves or loads."""
    deadline = time.monotonic() + COMMITTED_RETRY_S
    while True:
        try:
            return list(consumer.committed(partitions, timeout=10))
        except KafkaException as exc:
            error = exc.args[0]
            moving = error.code() in COORDINATOR_MOVING  # not flagged retriable here
            if not (error.retriable() or moving) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def group_offsets(
    bootstrap: str, group: str, topics: Iterable[str] | None = None
) -> list[TopicPartition]:
    """What ``group`` has committed (offset >= 0, with its metadata), by topic and partition,
    for every partition of ``topics`` (default: every topic of the cluster).

    Read through a consumer handle of the group that never joins it, never with the admin
    client's list_consumer_group_offsets: librdkafka crashes the whole process (the pytest
    worker) when that request is answered NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE, as
    Kafka 4.1 answers for a group just used (librdkafka #5040, confluent-kafka-python #1982).
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "isolation.level": READ_COMMITTED,  # stable offsets (require_stable)
        }
    )
    try:
        metadata = consumer.list_topics(timeout=10).topics
        wanted = set(metadata) if topics is None else set(topics)
        partitions = [
            TopicPartition(name, number)
            for name in sorted(wanted)
            if name in metadata and metadata[name].error is None
            for number in sorted(metadata[name].partitions)
        ]
        listed = _committed_retrying(consumer, partitions) if partitions else []
    finally:
        consumer.close()
    return [tp for tp in listed if tp.error is None and tp.offset >= 0]


def header_text(message: Any) -> dict[str, str]:
    """A consumed message's headers as ``{key: text}`` (confluent-kafka gives a list of
    ``(key, bytes)`` pairs, or None)."""
    return {key: bytes(value or b"").decode() for key, value in message.headers() or []}


def librdkafka_threads() -> list[str]:
    """The names of this process's librdkafka threads (each client runs a few, until it is
    closed or freed)."""
    names = []
    for tid in os.listdir("/proc/self/task"):
        try:
            name = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
        except OSError:  # the thread ended meanwhile
            continue
        if name.startswith("rdk:"):
            names.append(name)
    return names


def wait_for_librdkafka_threads(at_most: int, timeout_s: float = 10.0) -> None:
    """Wait until at most ``at_most`` librdkafka threads run in this process (a client's
    threads end as its close or destruction returns; allow a moment); fail if they do not."""
    deadline = time.monotonic() + timeout_s
    while len(librdkafka_threads()) > at_most and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(librdkafka_threads()) <= at_most, librdkafka_threads()
