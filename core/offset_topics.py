"""Where a source connector's offsets live: the worker's store, or the connector's own
``offsets.storage.topic`` in front of it (KIP-618), as one :class:`TaskOffsetStore`.

:class:`ConnectorOffsetStores` is made once per worker by its herder and asked for a store per
source task (and per REST offsets request):

* no topic of its own (or the worker's own ``offset.storage.topic``): the worker's store; its
  Kafka topic, if it has one, is where an exactly-once task writes offsets in its
  transactions (distributed mode), else exactly-once is impossible (the standalone file);
* a topic of its own: a reader of that topic (created compacted if missing, with the worker's
  ``offset.storage.partitions`` and ``offset.storage.replication.factor``, on the cluster the
  connector's ``admin.override.*`` keys point at, as Kafka creates it with the connector's
  admin client), read ``read_committed``, merged with the worker's store (see
  :mod:`core.stores.task_offsets`). Kafka offers this in distributed mode; Copycat in
  standalone mode too, which is what makes exactly-once possible there.

Each connector-topic store has a reader of its own (a :class:`KafkaBasedLog`: a consumer and a
thread), started when the task starts and stopped with it, as Kafka's per-task
``ConnectorOffsetBackingStore``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.distributed.internal_topics import InternalTopic, ensure_internal_topics
from core.distributed.keys import ClusterKeys
from core.distributed.offset_store import KafkaOffsetBackingStore
from core.kafka import admin_client
from core.offsets import OffsetStore
from core.stores.offsets import OffsetStorage
from core.stores.task_offsets import TaskOffsetStore
from core.worker_config import WorkerConfig

__all__ = ["ConnectorOffsetStores"]

# How long a task's start may spend reading its connector's offsets topic to the end (a
# connector topic holds one connector's offsets: seconds at most, even on a loaded broker).
CONNECTOR_TOPIC_READ_TIMEOUT_S = 60.0
# The connector config key naming the connector's own topic (Kafka's SourceConnectorConfig).
OFFSETS_TOPIC_CONFIG = "offsets.storage.topic"
_ADMIN_OVERRIDE = "admin.override."


class ConnectorOffsetStores:
    """Makes the offset store of each source task (see the module docstring).

    Args:
        config: The worker's config (partitions and replication of new topics, compaction
            check).
        worker_store: The worker's own offsets (file or topic).
        client_props: The worker's Kafka client settings.
        worker_topic: The worker's ``offset.storage.topic`` when ``worker_store`` is that
            topic (distributed mode), else None.
        worker_keys: The worker topic's key prefix (shared topics).

    Connectors' topics are read ``read_committed`` in every mode: one written by exactly-once
    tasks may hold offsets of aborted transactions, which must never count.
    """

    def __init__(
        self,
        config: WorkerConfig,
        worker_store: OffsetStore,
        client_props: Mapping[str, Any],
        *,
        worker_topic: str | None = None,
        worker_keys: ClusterKeys | None = None,
    ) -> None:
        self.config = config
        self.worker_store = worker_store
        self.client_props = dict(client_props)
        self.worker_topic = worker_topic
        self.worker_keys = worker_keys or ClusterKeys(None)

    @staticmethod
    def own_topic(connector_props: Mapping[str, str]) -> str | None:
        return (connector_props.get(OFFSETS_TOPIC_CONFIG) or "").strip() or None

    def store_for(self, connector: str, connector_props: Mapping[str, str]) -> TaskOffsetStore:
        """The offsets ``connector``'s tasks read and write; the caller closes it.

        Raises:
            ConfigException: the connector's topic exists and is not compacted.
            ConnectException: it could not be created or read to its end.
        """
        topic = self.own_topic(connector_props)
        if topic is None or topic == self.worker_topic:
            return TaskOffsetStore(
                self.worker_store, topic=self.worker_topic, encode_key=self.worker_keys.encode
            )
        client = {
            **self.client_props,
            **{
                k[len(_ADMIN_OVERRIDE) :]: v
                for k, v in connector_props.items()
                if k.startswith(_ADMIN_OVERRIDE)
            },
        }
        ensure_internal_topics(
            admin_client(client),
            [
                InternalTopic(
                    OFFSETS_TOPIC_CONFIG,
                    topic,
                    int(self.config.get("offset.storage.partitions")),
                    int(self.config.get("offset.storage.replication.factor")),
                    f"source offsets of connector {connector}",
                )
            ],
            check_compaction=bool(self.config.get("internal.topics.compaction.check.enable")),
        )
        backing = KafkaOffsetBackingStore(
            topic,
            client,
            ClusterKeys(None),
            read_committed=True,
            name=f"offsets-{connector}",
        )
        backing.start(CONNECTOR_TOPIC_READ_TIMEOUT_S)
        return TaskOffsetStore(
            OffsetStorage(backing), self.worker_store, topic=topic, on_close=backing.stop
        )
