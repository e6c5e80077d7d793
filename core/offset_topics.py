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

:func:`write_offsets_in_transaction` writes a connector's altered or reset offsets (KIP-875)
when it runs exactly-once: in one transaction of its task 0's transactional id, as Kafka's
``Worker.modifySourceConnectorOffsets`` does.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaException, Producer

from core.distributed.internal_topics import InternalTopic, ensure_internal_topics
from core.distributed.keys import ClusterKeys
from core.distributed.offset_store import KafkaOffsetBackingStore
from core.kafka import admin_client, wrap_kafka_error
from core.offsets import OffsetStore
from core.runtime.services import ConfluentClients
from core.stores.offsets import OffsetStorage
from core.stores.task_offsets import KeyForms, TaskOffsetStore
from core.worker_config import WorkerConfig
from plugin_api import ConnectException

__all__ = ["ConnectorOffsetStores", "write_offsets_in_transaction"]

log = logging.getLogger("copycat.offsets")

# How long a task's start may spend reading its connector's offsets topic to the end (a
# connector topic holds one connector's offsets: seconds at most, even on a loaded broker).
CONNECTOR_TOPIC_READ_TIMEOUT_S = 60.0
# The connector config key naming the connector's own topic (Kafka's SourceConnectorConfig).
OFFSETS_TOPIC_CONFIG = "offsets.storage.topic"
_ADMIN_OVERRIDE = "admin.override."
# How long the transaction writing altered or reset offsets may take: its producer's
# initialisation waits for an older producer's open transaction to be aborted, its commit for
# the records' acknowledgements. Under Kafka's REST request timeout (90 s), which bounds the
# whole request there.
OFFSETS_TRANSACTION_TIMEOUT_S = 60.0


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
        worker_key_forms: Every form of offset keys in the worker's topic (its store's
            :meth:`~core.distributed.offset_store.KafkaOffsetBackingStore.key_forms`).
        worker_written_forms: Its store's ``written_forms``.

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
        worker_key_forms: KeyForms | None = None,
        worker_written_forms: KeyForms | None = None,
    ) -> None:
        self.config = config
        self.worker_store = worker_store
        self.client_props = dict(client_props)
        self.worker_topic = worker_topic
        self.worker_keys = worker_keys or ClusterKeys(None)
        self.worker_key_forms = worker_key_forms
        self.worker_written_forms = worker_written_forms

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
                self.worker_store,
                topic=self.worker_topic,
                encode_key=self.worker_keys.encode,
                key_forms=self.worker_key_forms,
                written_forms=self.worker_written_forms,
            )
        client = self._ensure_topic(connector, connector_props, topic)
        backing = KafkaOffsetBackingStore(
            topic,
            client,
            ClusterKeys(None),
            read_committed=True,
            name=f"offsets-{connector}",
            flush_timeout_s=int(self.config.get("offset.flush.timeout.ms")) / 1000,
        )
        backing.start(CONNECTOR_TOPIC_READ_TIMEOUT_S)
        return TaskOffsetStore(
            OffsetStorage(backing),
            self.worker_store,
            topic=topic,
            key_forms=backing.key_forms,
            written_forms=backing.written_forms,
            on_close=backing.stop,
        )

    def check_connector_topic(self, connector: str, connector_props: Mapping[str, str]) -> None:
        """Before source connector ``connector``'s instance starts: create its own offsets
        topic if missing, and check it is compacted, as Kafka's WorkerConnector starts the
        connector's offset store first (a bad topic fails the connector, which then makes no
        task configs). Nothing to do without a topic of its own.

        Raises:
            ConfigException: the topic exists and is not compacted.
            ConnectException: it could not be created.
        """
        topic = self.own_topic(connector_props)
        if topic is not None and topic != self.worker_topic:
            self._ensure_topic(connector, connector_props, topic)

    def _ensure_topic(
        self, connector: str, connector_props: Mapping[str, str], topic: str
    ) -> dict[str, Any]:
        """Create ``topic`` if missing and check its compaction; the client settings that
        reach it (the worker's, with the connector's ``admin.override.*`` keys)."""
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
                    # Kafka's words for every offsets topic, the connector's included.
                    "source connector offsets",
                )
            ],
            check_compaction=bool(self.config.get("internal.topics.compaction.check.enable")),
        )
        return client


def write_offsets_in_transaction(
    producer_config: Mapping[str, Any],
    store: TaskOffsetStore,
    connector: str,
    entries: Sequence[tuple[Mapping[str, Any], Any]],
    timeout_s: float = OFFSETS_TRANSACTION_TIMEOUT_S,
) -> None:
    """Write ``entries`` (source partition, offset; None: a tombstone) to ``store``'s topic in
    one transaction of ``producer_config`` (task 0's transactional id, see
    :meth:`core.task_specs.TaskSpecFactory.offsets_producer`): initialising the producer fences
    out task 0's older producers, and a ``read_committed`` reader sees every offset or none.
    With a connector topic, tombstones go to the worker's store first and values are copied
    there after the commit, as :meth:`TaskOffsetStore.flush` orders them.

    Called on the connector's operation thread, after its older task generations were fenced.

    Raises:
        ConnectException: the store is not a Kafka topic, or the transaction failed (then it
            is aborted, and the error says so: none of the offsets is visible); names the
            connector.
    """
    topic = store.topic
    if topic is None:
        raise ConnectException(
            f"cannot write the offsets of connector {connector} in a transaction: they are "
            "not kept in a Kafka topic"
        )
    if not entries:
        return
    records = store.records(connector, entries)  # reads the topic first if any is a tombstone
    store.tombstones_first(connector, entries)
    transactional_id = producer_config.get("transactional.id")
    producer = ConfluentClients().producer(producer_config)
    began = False
    try:
        producer.init_transactions(timeout_s)
        producer.begin_transaction()
        began = True
        for key, value in records:
            _produce(producer, topic, key, value)
        producer.commit_transaction(timeout_s)
    except KafkaException as exc:
        outcome = _abort(producer, timeout_s) if began else f"none was written to {topic}"
        raise wrap_kafka_error(
            exc,
            f"could not write the offsets of connector {connector} in a transaction of "
            f"transactional id {transactional_id!r} ({outcome})",
        ) from exc
    finally:
        producer.purge()
    log.info(
        "connector %s: %d offsets written in a transaction of %s",
        connector,
        len(entries),
        transactional_id,
    )
    store.committed(connector, [(p, o) for p, o in entries if o is not None])


def _produce(producer: Producer, topic: str, key: bytes, value: bytes | None) -> None:
    while True:
        try:
            producer.produce(topic, value, key)
            return
        except BufferError:
            producer.poll(0.05)  # librdkafka's queue is full: let acknowledgements drain it


def _abort(producer: Producer, timeout_s: float) -> str:
    """Abort the failed transaction; what a reader sees of it, said for the error."""
    try:
        producer.abort_transaction(timeout_s)
    except KafkaException as exc:
        return (
            f"its transaction could not be aborted either ({exc}): read the connector's "
            "offsets before trying again"
        )
    return "its transaction was aborted: none of them is visible"
