"""Helpers for tests that talk to a broker: produce, read back, committed offsets."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import Consumer, Message, Producer, TopicPartition


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


def committed(bootstrap: str, group: str, topic: str) -> int:
    """The offset ``group`` committed for partition 0 of ``topic`` (negative if none)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        [tp] = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        return int(tp.offset)
    finally:
        consumer.close()


def header_text(message: Any) -> dict[str, str]:
    """A consumed message's headers as ``{key: text}`` (confluent-kafka gives a list of
    ``(key, bytes)`` pairs, or None)."""
    return {key: bytes(value or b"").decode() for key, value in message.headers() or []}
