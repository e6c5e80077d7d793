"""Source offsets: what each source connector has durably copied, keyed as Kafka Connect does.

:class:`OffsetStore` is what the task loops and the herder read and write: offsets of source
partitions, per connector. Its implementations are :class:`core.stores.offsets.OffsetStorage`
over a bytes store (see :mod:`core.stores.offsets` for the two layers and the
``connect-offsets`` format they share with Kafka Connect): in memory, in the standalone
worker's ``offset.storage.file.filename``, or in Kafka (distributed mode).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from core.stores.offsets import (
    FILE_FORMAT_VERSION,
    FileOffsetBackingStore,
    MemoryOffsetBackingStore,
    OffsetStorage,
    WriteWaiter,
    offset_key,
    parse_offset_key,
)

__all__ = [
    "FILE_FORMAT_VERSION",
    "FileOffsetStore",
    "MemoryOffsetStore",
    "OffsetStore",
    "WriteWaiter",
    "offset_key",
    "parse_offset_key",
]


class OffsetStore(Protocol):
    """Where committed source offsets live (a file in standalone mode, a topic when distributed)."""

    def get(self, connector: str, partitions: Iterable[Mapping[str, Any]]) -> dict[Any, Any]:
        """Offsets of the given partitions, keyed by :func:`freeze_partition`.

        Partitions without an offset are absent from the result.
        """
        ...

    def put(self, connector: str, entries: Iterable[tuple[Mapping[str, Any], Any]]) -> WriteWaiter:
        """Record ``(source partition, offset)`` pairs (None offset = tombstone). The waiter
        returned makes exactly these durable (raising if they cannot be): a task waits for its
        own writes, not for another task's sharing the store."""
        ...

    def flush(self) -> None:
        """Make everything put() so far durable."""
        ...

    def connector_offsets(self, connector: str) -> list[tuple[dict[str, Any], Any]]: ...


class MemoryOffsetStore(OffsetStorage):
    """Offsets in memory (tests, and the twin of the others)."""

    def __init__(self) -> None:
        super().__init__(MemoryOffsetBackingStore())


class FileOffsetStore(OffsetStorage):
    """Standalone offsets in one JSON file, replaced atomically on every flush."""

    def __init__(self, path: Path) -> None:
        super().__init__(FileOffsetBackingStore(path))
        self.path = path
