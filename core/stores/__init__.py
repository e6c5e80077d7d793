"""Where a worker's state lives, as seams: configs, statuses and source offsets.

Each store is a :class:`typing.Protocol` with an in-memory twin, as Kafka Connect's
ConfigBackingStore, StatusBackingStore and OffsetBackingStore are interfaces with memory,
file and Kafka implementations:

* :class:`ConfigStore` -- connector configs, task configs and target states, read as an
  immutable :class:`ClusterConfigState` snapshot; listeners hear of changes (a distributed
  herder reacts to them; standalone writes and reads its own).
* :class:`StatusStore` -- connector and task statuses (:class:`core.status.StatusBoard` is the
  in-memory one).
* source offsets in two layers: :class:`OffsetBackingStore` keeps bytes keys and values (a
  file, a Kafka topic), and :class:`core.stores.offsets.OffsetStorage` serializes Kafka
  Connect's ``["connector", {partition}]`` keys and JSON offsets over it, so offsets move
  between Copycat, standalone files and Kafka Connect's own topics unchanged.

Standalone mode: memory configs, memory statuses, file offsets. Distributed mode: the three
Kafka-backed stores (``core.distributed``).
"""

from __future__ import annotations

from core.stores.config import (
    ClusterConfigState,
    ConfigStore,
    ConfigUpdateListener,
    MemoryConfigStore,
    TargetState,
)
from core.stores.offsets import (
    FileOffsetBackingStore,
    MemoryOffsetBackingStore,
    OffsetBackingStore,
    OffsetStorage,
)
from core.stores.status import StatusStore

__all__ = [
    "ClusterConfigState",
    "ConfigStore",
    "ConfigUpdateListener",
    "FileOffsetBackingStore",
    "MemoryConfigStore",
    "MemoryOffsetBackingStore",
    "OffsetBackingStore",
    "OffsetStorage",
    "StatusStore",
    "TargetState",
]
