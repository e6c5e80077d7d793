"""Record keys of the internal topics, and the cluster prefix of shared topics.

Kafka Connect's keys: ``connector-<name>``, ``task-<name>-<n>``, ``commit-<name>``,
``target-state-<name>``, ``restart-connector-<name>``, ``logger-cluster-<namespace>``,
``session-key`` and ``tasks-fencing-<name>`` in the config topic; ``status-connector-<name>``,
``status-task-<name>-<n>`` and ``status-topic-<topic>:connector-<name>`` in the status topic;
``["<connector>", {<partition>}]`` in the offset topic.

**Shared internal topics** (KIP "share Kafka Connect internal topics",
``../shared/seeds/kip-share-internal-topics.txt``): with
``connect.management.topic.sharing.support=enabled`` every key a cluster writes is prefixed with
its ``group.id`` and a ``.`` (``B.status-connector-A``), and a worker keeps only the records
that carry its own prefix. How this reads the KIP's compatibility table (old = sharing
disabled, new = enabled; any pair can share a set of topics):

* a **sharing** worker ignores every record without its prefix: other sharing clusters'
  (another prefix) and non-sharing clusters' (no prefix);
* a **non-sharing** worker reads keys as Kafka Connect always did: a prefixed key matches none
  of the known key forms (``B.connector-x`` does not start with ``connector-``, ``B.["c",{}]``
  is no JSON array), so it is skipped like any unknown record.

So a non-sharing cluster and sharing clusters coexist on one set of topics without seeing
each other's connectors, offsets or statuses. A cluster that turns sharing on does not adopt
its own earlier, unprefixed records: they are mirrored to prefixed keys with the
``KafkaConnectTopicMigrator`` transform (its ``old.client=true`` mode), as the KIP's migration
plan says. The KIP's reference code splits a key on ``.`` and rejects any key with a second
dot, which would drop every offset of a file whose name has an extension; we match the
prefix instead, so group ids, connector names and partitions may contain dots.
"""

from __future__ import annotations

__all__ = ["CLUSTER_SEPARATOR", "ClusterKeys"]

CLUSTER_SEPARATOR = "."


class ClusterKeys:
    """Turns a store's logical key into the record key and back, for one cluster.

    Args:
        group_id: The cluster's ``group.id`` when topic sharing is enabled, else None.
    """

    def __init__(self, group_id: str | None) -> None:
        self.group_id = group_id
        self._prefix = (group_id + CLUSTER_SEPARATOR).encode() if group_id is not None else b""

    @property
    def sharing(self) -> bool:
        return self.group_id is not None

    def encode(self, key: str | bytes) -> bytes:
        raw = key.encode() if isinstance(key, str) else key
        return self._prefix + raw

    def decode(self, raw: bytes | None) -> bytes | None:
        """The logical key of a record, or None if the record is not this cluster's."""
        if raw is None:
            return None
        if not self._prefix:
            return raw
        if raw.startswith(self._prefix):
            return raw[len(self._prefix) :]
        return None

    def decode_str(self, raw: bytes | None) -> str | None:
        key = self.decode(raw)
        if key is None:
            return None
        try:
            return key.decode()
        except UnicodeDecodeError:
            return None
