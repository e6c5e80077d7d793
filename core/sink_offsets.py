"""Sink connector offsets over REST (KIP-875): the consumer group ``connect-<name>``.

Kafka's shapes: a partition is ``{"kafka_topic": str, "kafka_partition": int}`` and an offset
``{"kafka_offset": int}`` (``null`` resets that partition). Reading, altering and deleting go
through the admin client; the connector is STOPPED, so the group has no members.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from core.herder import BadRequestError
from core.kafka import wrap_kafka_error

KAFKA_TOPIC_KEY = "kafka_topic"
KAFKA_PARTITION_KEY = "kafka_partition"
KAFKA_OFFSET_KEY = "kafka_offset"
# Admin requests to the group coordinator; generous for a broker under test load.
ADMIN_TIMEOUT_S = 30.0
T = TypeVar("T")
_GROUP_GONE = {KafkaError.GROUP_ID_NOT_FOUND, KafkaError.UNKNOWN_TOPIC_OR_PART}


def sink_group_id(name: str, props: Mapping[str, str]) -> str:
    return props.get("consumer.override.group.id") or f"connect-{name}"


def _number(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise BadRequestError(f"{what} must be valid numbers and may not be null")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    raise BadRequestError(f"{what} must be valid numbers and may not be null")


def parse_sink_offsets(offsets: list[dict[str, Any]]) -> dict[tuple[str, int], int | None]:
    """Validate a PATCH body's sink offsets as Kafka's SinkUtils does; 400 when malformed."""
    parsed: dict[tuple[str, int], int | None] = {}
    for entry in offsets:
        partition, offset = entry.get("partition"), entry.get("offset")
        if not isinstance(partition, dict):
            raise BadRequestError(
                "The partition for a sink connector offset cannot be null or missing"
            )
        if KAFKA_TOPIC_KEY not in partition or KAFKA_PARTITION_KEY not in partition:
            raise BadRequestError(
                f"The partition for a sink connector offset must contain the "
                f"keys '{KAFKA_TOPIC_KEY}' and '{KAFKA_PARTITION_KEY}'"
            )
        topic = partition[KAFKA_TOPIC_KEY]
        if not isinstance(topic, str) or not topic:
            raise BadRequestError("Kafka topic names must be valid strings and may not be null")
        number = _number(partition[KAFKA_PARTITION_KEY], "Kafka partitions")
        if offset is None:
            parsed[(topic, number)] = None
            continue
        if not isinstance(offset, dict) or KAFKA_OFFSET_KEY not in offset:
            raise BadRequestError(
                f"The offset for a sink connector should either be null or "
                f"contain the key '{KAFKA_OFFSET_KEY}'"
            )
        value = _number(offset[KAFKA_OFFSET_KEY], "Kafka offsets")
        if value < 0 or number < 0:
            raise BadRequestError("Kafka partitions and offsets may not be negative")
        parsed[(topic, number)] = value
    return parsed


# Right after a sink is stopped its consumer may still be leaving the group; admin calls then
# fail with these codes for a moment. Retried for up to this long before giving up.
_TRANSIENT = frozenset(
    {
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.NON_EMPTY_GROUP,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
    }
)
TRANSIENT_RETRY_S = 15.0


def _retrying(call: Callable[[], T]) -> T:
    deadline = time.monotonic() + TRANSIENT_RETRY_S
    while True:
        try:
            return call()
        except KafkaException as exc:
            error = exc.args[0]
            transient = error.code() in _TRANSIENT or error.retriable()
            if not transient or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


class SinkOffsets:
    """Reads and writes one sink connector's consumer group offsets."""

    def __init__(self, admin: AdminClient, group: str) -> None:
        self.admin = admin
        self.group = group

    def get(self) -> list[dict[str, Any]]:
        request = [ConsumerGroupTopicPartitions(self.group)]
        try:
            result = _retrying(
                lambda: self.admin.list_consumer_group_offsets(request)[self.group].result(
                    ADMIN_TIMEOUT_S
                )
            )
        except KafkaException as exc:
            if exc.args[0].code() in _GROUP_GONE:
                return []
            raise wrap_kafka_error(exc, f"could not read offsets of group {self.group}") from exc
        rows = []
        for tp in sorted(result.topic_partitions or [], key=lambda t: (t.topic, t.partition)):
            if tp.offset is None or tp.offset < 0 or tp.error is not None:
                continue
            rows.append(
                {
                    "partition": {KAFKA_TOPIC_KEY: tp.topic, KAFKA_PARTITION_KEY: tp.partition},
                    "offset": {KAFKA_OFFSET_KEY: tp.offset},
                }
            )
        return rows

    def alter(self, offsets: Mapping[tuple[str, int], int | None]) -> None:
        """Set the given partitions' offsets; ``None`` removes a partition's committed offset.

        librdkafka has no per-partition delete of group offsets, so removing some means: read
        the group's offsets, delete the group, and write back the ones that stay. The
        connector is STOPPED, so no member can commit in between.
        """
        to_set = {tp: o for tp, o in offsets.items() if o is not None}
        if any(o is None for o in offsets.values()):
            keep = {
                (r["partition"][KAFKA_TOPIC_KEY], r["partition"][KAFKA_PARTITION_KEY]): r["offset"][
                    KAFKA_OFFSET_KEY
                ]
                for r in self.get()
            }
            for tp, offset in offsets.items():
                if offset is None:
                    keep.pop(tp, None)
            to_set = {**keep, **to_set}
            self.reset()
        if not to_set:
            return
        partitions = [KafkaTopicPartition(t, p, o) for (t, p), o in to_set.items()]
        try:
            _retrying(
                lambda: self.admin.alter_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(self.group, partitions)]
                )[self.group].result(ADMIN_TIMEOUT_S)
            )
        except KafkaException as exc:
            raise wrap_kafka_error(exc, f"could not alter offsets of group {self.group}") from exc

    def reset(self) -> None:
        try:
            _retrying(
                lambda: self.admin.delete_consumer_groups([self.group])[self.group].result(
                    ADMIN_TIMEOUT_S
                )
            )
        except KafkaException as exc:
            if exc.args[0].code() not in _GROUP_GONE:
                raise wrap_kafka_error(exc, f"could not delete group {self.group}") from exc
