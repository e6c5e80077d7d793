"""Asynchronous sink commits: the consumer's callback records only what the group accepted."""

from __future__ import annotations

from confluent_kafka import Consumer, KafkaError, TopicPartition

from core.runtime.sink import SinkTaskLoop


def _loop() -> SinkTaskLoop:
    # Never subscribed or polled: only the commit bookkeeping is exercised.
    consumer = Consumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g"})
    loop = SinkTaskLoop("c", 0, None, 0, consumer, topics=["t"])  # type: ignore[arg-type]
    loop._assigned = {("t", 0), ("t", 1)}
    return loop


def test_a_failed_async_commit_leaves_the_last_committed_offsets() -> None:
    loop = _loop()
    loop.on_commit(KafkaError(KafkaError.REBALANCE_IN_PROGRESS), [TopicPartition("t", 0, 10)])
    assert loop._committed == {}
    loop.on_commit(None, [TopicPartition("t", 0, 10), TopicPartition("t", 1, 4)])
    assert loop._committed == {("t", 0): 10, ("t", 1): 4}
    loop.consumer.close()


def test_an_answer_for_a_partition_no_longer_owned_is_ignored() -> None:
    loop = _loop()
    loop._assigned.discard(("t", 1))
    loop.on_commit(None, [TopicPartition("t", 1, 4)])
    assert loop._committed == {}
    loop.consumer.close()
