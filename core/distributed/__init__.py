"""Distributed mode: Kafka-backed stores, the worker group and its assignor, the herder.

* :mod:`.kafka_log` -- an internal topic read to its end and tailed (KafkaBasedLog);
* :mod:`.config_store`, :mod:`.status_store`, :mod:`.offset_store` -- the three stores in
  Kafka Connect's record formats, with :mod:`.keys` for shared topics' cluster prefixes;
* :mod:`.internal_topics` -- creating the topics compacted, refusing uncompacted ones;
* :mod:`.membership`, :mod:`.protocol`, :mod:`.assignor` -- the group (kafka-python's
  coordinator), what members and the leader say, KIP-415 incremental cooperative assignment;
* :mod:`.fencing` -- zombie fencing of exactly-once source tasks (KIP-618);
* :mod:`.herder` -- ``DistributedHerder``, one concern a module: :mod:`.herder_base`
  (shared state, leader checks), :mod:`.herder_fencing`, :mod:`.config_reactions`,
  :mod:`.rebalancing`, :mod:`.herder_api`. Imported from :mod:`.herder`, not re-exported
  here: it imports :mod:`core.offset_topics`, which imports this package's stores (a cycle).
"""

from __future__ import annotations

from core.distributed.assignor import Held, IncrementalCooperativeAssignor, MemberPlan
from core.distributed.config_store import KafkaConfigStore, PrivilegedWriteError, RestartRequest
from core.distributed.internal_topics import InternalTopic, ensure_internal_topics
from core.distributed.kafka_log import KafkaBasedLog, LogRecord
from core.distributed.keys import ClusterKeys
from core.distributed.membership import GroupSettings, JoinedGroup, WorkerGroupMember
from core.distributed.offset_store import KafkaOffsetBackingStore
from core.distributed.protocol import Assignment, MemberMetadata
from core.distributed.status_store import KafkaStatusStore

__all__ = [
    "Assignment",
    "ClusterKeys",
    "GroupSettings",
    "Held",
    "IncrementalCooperativeAssignor",
    "InternalTopic",
    "JoinedGroup",
    "KafkaBasedLog",
    "KafkaConfigStore",
    "KafkaOffsetBackingStore",
    "KafkaStatusStore",
    "LogRecord",
    "MemberMetadata",
    "MemberPlan",
    "PrivilegedWriteError",
    "RestartRequest",
    "WorkerGroupMember",
    "ensure_internal_topics",
]
