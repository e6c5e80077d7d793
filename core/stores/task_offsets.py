"""The offsets one source task reads and writes: the worker's store, or a connector's own topic
merged with it (KIP-618 ``offsets.storage.topic``).

:class:`TaskOffsetStore` is an :class:`core.offsets.OffsetStore` with two more things an
exactly-once loop needs: the Kafka topic its offsets live in (``topic``; None for the
standalone file, where no transaction can include them) and their records in that topic's
format (:meth:`TaskOffsetStore.records`), so the loop writes them with its transactional
producer in the same transaction as the task's records.

With a connector-specific topic (the *primary*) the worker's store is the *secondary*, as in
Kafka's ``ConnectorOffsetBackingStore``:

* **reads** merge both: the connector topic's offset wins, the worker's is used for source
  partitions the connector topic does not have (offsets written before the connector had a
  topic of its own, or by a worker with exactly-once support off);
* **writes** go to the primary, then a copy to the secondary, so that a connector moved back
  to the worker's topic loses nothing. Tombstones go to the secondary first: a failure
  between the two writes then leaves the offset deleted in the worker's store and still in
  the connector's, which wins on reads; never the other way round (an offset deleted on
  purpose coming back). A failed copy to the secondary is logged, not raised.

Threads: the task's thread (its loop) and the host callback serving the task's offset reads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from core.offsets import OffsetStore, WriteWaiter
from core.stores.offsets import check_storable, connect_json, offset_key

__all__ = ["KeyForms", "TaskOffsetStore"]

log = logging.getLogger("copycat.offsets")

# ``connect-offsets`` keys -> every form of each in a topic (Kafka Connect's field order, ours).
KeyForms = Callable[[Collection[bytes]], Mapping[bytes, Collection[bytes]]]


def _alone(keys: Collection[bytes]) -> dict[bytes, set[bytes]]:
    return {key: {key} for key in keys}


class TaskOffsetStore:
    """One task's offsets (see the module docstring).

    Args:
        primary: Where the task's offsets are written (the connector's topic, else the worker's
            store).
        secondary: The worker's store under a connector topic; None otherwise.
        topic: The Kafka topic of ``primary``, or None when it is not a topic (a file).
        encode_key: Turns a ``connect-offsets`` key into the bytes of the topic's record key
            (a shared topic's cluster prefix, see :mod:`core.distributed.keys`).
        key_forms: Every form of each ``connect-offsets`` key already in ``topic`` (Kafka
            Connect orders a partition's fields its own way): what a tombstone in
            :meth:`records` must cover. Default: the key alone.
        written_forms: The forms of each key read from ``topic`` so far, without reading
            to its end (the key alone when none): where a value in :meth:`records` goes.
        on_close: Releases what belongs to this task alone (a connector topic's reader).
    """

    def __init__(
        self,
        primary: OffsetStore,
        secondary: OffsetStore | None = None,
        *,
        topic: str | None = None,
        encode_key: Callable[[bytes], bytes] = lambda key: key,
        key_forms: KeyForms | None = None,
        written_forms: KeyForms | None = None,
        on_close: Callable[[], None] = lambda: None,
    ) -> None:
        self.primary = primary
        self.secondary = secondary
        self.topic = topic
        self._encode_key = encode_key
        self._key_forms: KeyForms = key_forms or _alone
        self._written_forms: KeyForms = written_forms or _alone
        self._on_close = on_close
        self._pending: list[tuple[str, list[tuple[Mapping[str, Any], Any]]]] = []
        # Waiters of this task's writes to the primary since its last flush (the store is the
        # worker's, shared by its tasks: each waits for its own).
        self._writes: list[WriteWaiter] = []

    # -- OffsetStore -------------------------------------------------------------------------

    def get(self, connector: str, partitions: Iterable[Mapping[str, Any]]) -> dict[Any, Any]:
        wanted = list(partitions)
        if self.secondary is None:
            return dict(self.primary.get(connector, wanted))
        merged = dict(self.secondary.get(connector, wanted))
        merged.update(self.primary.get(connector, wanted))
        return merged

    def put(self, connector: str, entries: Iterable[tuple[Mapping[str, Any], Any]]) -> WriteWaiter:
        """Record offsets; with a secondary they are written at :meth:`flush` (a Kafka store
        sends at once, and tombstones must reach the secondary before the primary). The waiter
        is :meth:`flush`."""
        listed = list(entries)
        if self.secondary is None:
            self._writes.append(self.primary.put(connector, listed))
        else:
            self._pending.append((connector, listed))
        return self.flush

    def flush(self) -> None:
        """Tombstones to the secondary (raises on failure: then nothing was deleted in the
        primary), everything to the primary (raises on failure), then the values' copy to the
        secondary (a failure is logged); see the module docstring. Waits for this task's
        writes only, never another's sharing the worker's store."""
        pending, self._pending = self._pending, []
        if self.secondary is not None:
            tombstones = [(c, [(p, o) for p, o in e if o is None]) for c, e in pending]
            self._copy([(c, e) for c, e in tombstones if e], strict=True)
            for connector, entries in pending:
                self._writes.append(self.primary.put(connector, entries))
        writes, self._writes = self._writes, []
        for wait in writes:
            wait()
        if self.secondary is not None:
            values = [(c, [(p, o) for p, o in e if o is not None]) for c, e in pending]
            self._copy([(c, e) for c, e in values if e], strict=False)

    def connector_offsets(self, connector: str) -> list[tuple[dict[str, Any], Any]]:
        if self.secondary is None:
            return list(self.primary.connector_offsets(connector))
        merged = {
            offset_key(connector, p): (p, o) for p, o in self.secondary.connector_offsets(connector)
        }
        for partition, offset in self.primary.connector_offsets(connector):
            merged[offset_key(connector, partition)] = (partition, offset)
        return list(merged.values())

    # -- what an exactly-once loop needs -----------------------------------------------------

    def records(
        self, connector: str, entries: Iterable[tuple[Mapping[str, Any], Any]]
    ) -> list[tuple[bytes, bytes | None]]:
        """``(key, value)`` records of ``entries`` in :attr:`topic`'s format (value None: a
        tombstone, one per form of the key in the topic), for a transaction to produce."""
        entries = list(entries)
        for partition, offset in entries:
            check_storable(connector, partition, offset)
        keyed = [(offset_key(connector, partition), offset) for partition, offset in entries]
        tombstones = [key for key, offset in keyed if offset is None]
        forms = dict(self._written_forms([key for key, offset in keyed if offset is not None]))
        if tombstones:
            forms.update(self._key_forms(tombstones))
        return [
            (self._encode_key(form), None if offset is None else connect_json(offset))
            for key, offset in keyed
            for form in sorted(forms.get(key, {key}))
        ]

    def tombstones_first(
        self, connector: str, entries: Iterable[tuple[Mapping[str, Any], Any]]
    ) -> None:
        """Before ``entries`` are written to the primary: their tombstones to the secondary
        (see the module docstring). Raises on failure: then nothing was deleted in the
        primary."""
        tombstones = [(partition, offset) for partition, offset in entries if offset is None]
        if tombstones:
            self._copy([(connector, tombstones)], strict=True)

    def committed(self, connector: str, entries: Iterable[tuple[Mapping[str, Any], Any]]) -> None:
        """A transaction wrote ``entries`` to :attr:`topic`: copy them to the secondary (best
        effort; the primary reads them back from the topic)."""
        if self.secondary is not None:
            self._copy([(connector, list(entries))], strict=False)

    def close(self) -> None:
        self._on_close()

    def _copy(
        self, batches: list[tuple[str, list[tuple[Mapping[str, Any], Any]]]], strict: bool
    ) -> None:
        secondary = self.secondary
        if not batches or secondary is None:
            return
        try:
            for wait in [secondary.put(connector, entries) for connector, entries in batches]:
                wait()
        except Exception as exc:
            if strict:
                raise
            log.warning("could not copy offsets to the worker's offset store: %s", exc)
