"""Topic IDs of a sink's topics, to notice a topic deleted and created again under its name.

Kafka's consumer keeps each partition's topic ID (KAFKA-12257): when a topic comes back with
a new ID it validates the fetch position, detects the truncation and resets the partition to
``auto.offset.reset`` (the group coordinator drops the deleted topic's committed offsets).
librdkafka's consumer tracks no topic IDs: it keeps fetching from the old position, so the
records of the new topic below it were never delivered, and the old offset was committed onto
the new topic (librdkafka issue 3255). Its consumer does not expose topic IDs either; an admin
client's DescribeTopics does. :class:`core.runtime.sink.SinkTaskLoop` asks here at its
metadata refresh interval (and sooner after a topic went missing) and resets a partition whose
topic's ID changed, as Kafka's consumer does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection

# How long one DescribeTopics may hold the sink's loop (it consumes nothing meanwhile).
DESCRIBE_TIMEOUT_S = 2.0

# The answer for a topic the cluster does not have (now): it has no ID.
_MISSING = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC})

TopicIds = Callable[[Sequence[str]], Mapping[str, str | None]]


def admin_topic_ids(make_admin: Callable[[], Any]) -> TopicIds:
    """A lookup of the topic ID of each topic named (None for a topic the cluster lacks), by
    an admin client made by ``make_admin`` on its first use and kept for the later ones: one
    per sink task, made only once the task has partitions to watch.

    The lookup raises KafkaException when the cluster could not answer (the caller asks again
    soon); a topic it may not describe counts as unknown, not missing (left out)."""
    admin: Any = None

    def lookup(topics: Sequence[str]) -> Mapping[str, str | None]:
        nonlocal admin
        if admin is None:
            admin = make_admin()
        futures = admin.describe_topics(
            TopicCollection(list(topics)), request_timeout=DESCRIBE_TIMEOUT_S
        )
        ids: dict[str, str | None] = {}
        for name, future in futures.items():
            try:
                description = future.result(timeout=DESCRIBE_TIMEOUT_S * 2)
            except TimeoutError:
                continue
            except KafkaException as exc:
                error = exc.args[0] if exc.args else None
                if isinstance(error, KafkaError) and error.code() in _MISSING:
                    ids[name] = None
                continue
            ids[name] = str(description.topic_id)
        return ids

    return lookup
