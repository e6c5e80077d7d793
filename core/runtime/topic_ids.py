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

import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException, TopicCollection

# How long one DescribeTopics may hold the sink's loop (it consumes nothing meanwhile).
DESCRIBE_TIMEOUT_S = 2.0

# The answer for a topic the cluster does not have (now): it has no ID.
_MISSING = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC})


class TopicIds(Protocol):
    """Looks up the topic ID of each topic named (None for a topic the cluster lacks); raises
    KafkaException when the cluster could not answer. ``close()`` once the task is done."""

    def __call__(self, topics: Sequence[str]) -> Mapping[str, str | None]: ...

    def close(self) -> None: ...


@dataclass
class _Shared:
    admin: Any
    users: int


# The admin clients of the lookups, per maker of clients (the worker's, or a plugin host's) and
# per admin config: the sink tasks of one connector, and of connectors without admin
# overrides, share one (each librdkafka client is a few threads and connections).
_SHARED: weakref.WeakKeyDictionary[Any, dict[tuple[tuple[str, str], ...], _Shared]] = (
    weakref.WeakKeyDictionary()
)
_SHARED_LOCK = threading.Lock()


class AdminTopicIds:
    """Topic IDs by an admin client's DescribeTopics, the client made by ``clients.admin`` on
    the first lookup and shared with the other lookups of the same clients and admin config
    (see :data:`_SHARED`) until the last of them is closed. Made only once a sink task has
    partitions to watch.

    A lookup raises KafkaException when the cluster could not answer (the caller asks again
    soon); a topic it may not describe counts as unknown, not missing (left out)."""

    def __init__(self, clients: Any, config: Mapping[str, Any]) -> None:
        self._clients = clients
        self._config = dict(config)
        self._key = tuple(sorted((str(k), repr(v)) for k, v in self._config.items()))
        self._admin: Any = None

    def __call__(self, topics: Sequence[str]) -> Mapping[str, str | None]:
        admin = self._admin if self._admin is not None else self._acquire()
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

    def _acquire(self) -> Any:
        with _SHARED_LOCK:
            shared = _SHARED.setdefault(self._clients, {})
            entry = shared.get(self._key)
            if entry is None:
                entry = shared[self._key] = _Shared(self._clients.admin(self._config), 0)
            entry.users += 1
            self._admin = entry.admin
            return entry.admin

    def close(self) -> None:
        """Done with lookups: the last user of a shared admin client lets it go."""
        with _SHARED_LOCK:
            if self._admin is None:
                return
            self._admin = None
            shared = _SHARED.get(self._clients, {})
            entry = shared.get(self._key)
            if entry is not None:
                entry.users -= 1
                if entry.users <= 0:
                    del shared[self._key]
