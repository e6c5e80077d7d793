"""Source offsets in ``offset.storage.topic``: the Kafka :class:`OffsetBackingStore`.

The bytes layer under :class:`core.stores.offsets.OffsetStorage` (which writes Kafka Connect's
``["connector", {partition}]`` keys and JSON offsets): every worker reads the whole topic into
memory and tails it, so a task that moves to another worker finds its offsets there.

* :meth:`get` and :meth:`items` **read to the end of the topic first**: the task asking may
  have been running on another worker a moment ago, and its last commits there are in the
  topic but maybe not yet in this worker's copy (Kafka's KafkaOffsetBackingStore does the same).
* :meth:`set` only sends, and returns the waiter of those records alone: every source task of
  the worker shares this store, and each waits for its own writes and sees only their failures
  (Kafka's set() future), never for or of another task's. :meth:`flush` waits for every
  record sent so far. The local copy changes when the records come back from the topic, so
  every worker sees the same order of writes.
* Kafka Connect writes a partition's JSON object in its HashMap order, we write sorted keys:
  keys are compared in a canonical form (sorted), so offsets written by Kafka Connect are
  found; a tombstone covers every form written, and a value goes to every form already in
  the topic (:meth:`written_forms`): Kafka Connect finds offsets by their key's bytes, so after
  a migration back it reads what we wrote under its own form.

Threads: the log's work thread updates the copy; task threads and the herder call the rest.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial
from typing import Any

from core.distributed.kafka_log import NEVER_GIVE_UP, KafkaBasedLog, LogRecord
from core.distributed.keys import ClusterKeys
from core.stores.offsets import WriteWaiter, canonical_offset_key
from plugin_api import ConnectException

__all__ = ["KafkaOffsetBackingStore"]

log = logging.getLogger("copycat.offsets")

# How long get() waits to have read everything written to the topic before it was called (a
# loaded machine with three workers and a broker needed more than 5 s in the system tests),
# and flush() for acknowledgements unless the worker sets offset.flush.timeout.ms (it does).
READ_TIMEOUT_S = 30.0


class KafkaOffsetBackingStore:
    """The offset topic as a bytes store (see the module docstring)."""

    def __init__(
        self,
        topic: str,
        client_props: Mapping[str, Any],
        keys: ClusterKeys,
        *,
        read_committed: bool = False,
        name: str = "offsets",
        flush_timeout_s: float = READ_TIMEOUT_S,
    ) -> None:
        """``read_committed``: see only committed transactions (exactly-once support on:
        tasks write their offsets in transactions, and an aborted one's must never count).
        ``flush_timeout_s``: how long :meth:`flush` waits for acknowledgements (the worker's
        ``offset.flush.timeout.ms``)."""
        self.topic = topic
        self.flush_timeout_s = flush_timeout_s
        self.keys = keys
        self._lock = threading.Lock()
        self._data: dict[bytes, bytes] = {}
        # Canonical key -> the key bytes as written (Kafka Connect's field order, ours).
        self._variants: dict[bytes, set[bytes]] = {}
        # Read to the stable end: a killed exactly-once task's open transaction must not hold
        # up every reader until it times out (core/distributed/kafka_log.py).
        self.log = KafkaBasedLog(
            topic,
            client_props,
            self._on_record,
            name=name,
            read_committed=read_committed,
            stable_end=read_committed,
            producer_overrides=NEVER_GIVE_UP,
        )

    def start(self, timeout_s: float) -> None:
        self.log.start(timeout_s)

    def stop(self) -> None:
        self.log.stop()

    def _on_record(self, record: LogRecord) -> None:
        """On the log's work thread: keep this cluster's records (see core.distributed.keys)."""
        raw = self.keys.decode(record.key)
        if raw is None:
            return
        key = canonical_offset_key(raw)
        with self._lock:
            if record.value is None:
                self._data.pop(key, None)
                self._variants.pop(key, None)
            else:
                self._data[key] = record.value
                self._variants.setdefault(key, set()).add(raw)

    def _caught_up(self) -> None:
        try:
            self.log.read_to_end().result(READ_TIMEOUT_S)
        except FutureTimeout:
            raise ConnectException(
                f"could not read offset topic {self.topic} to its end within {READ_TIMEOUT_S:g} s"
            ) from None

    def get(self, keys: Collection[bytes]) -> dict[bytes, bytes]:
        self._caught_up()
        with self._lock:
            found = {}
            for key in keys:
                value = self._data.get(canonical_offset_key(key))
                if value is not None:
                    found[key] = value
            return found

    def key_forms(self, keys: Collection[bytes]) -> dict[bytes, set[bytes]]:
        """Each of ``keys`` with every other form of it written to the topic so far (Kafka
        Connect's field order, ours): what a tombstone of it must cover. Reads the topic to
        its end first."""
        self._caught_up()
        with self._lock:
            return {key: {key, *self._variants.get(canonical_offset_key(key), ())} for key in keys}

    def written_forms(self, keys: Collection[bytes]) -> dict[bytes, set[bytes]]:
        """The forms of each of ``keys`` this worker has read from the topic (its own alone
        when none): where a new value of it goes. No read to the end: Kafka Connect's forms
        of a migrated cluster's keys were read at start."""
        with self._lock:
            return {
                key: set(self._variants.get(canonical_offset_key(key), ())) or {key} for key in keys
            }

    def set(self, values: Mapping[bytes, bytes | None]) -> WriteWaiter:
        """Send ``values``; the waiter returned waits for these records' acknowledgements."""
        tombstones = [key for key, value in values.items() if value is None]
        forms = self.written_forms([key for key, value in values.items() if value is not None])
        if tombstones:
            forms.update(self.key_forms(tombstones))
        futures = []
        for key, value in values.items():
            for raw in forms.get(key, {key}):
                futures.append(self.log.send(self.keys.encode(raw), value))
        return partial(self._await, futures)

    def _await(self, futures: list[Future[int]]) -> None:
        """Wait for these records to be acknowledged.

        Raises:
            ConnectException: not acknowledged within ``flush_timeout_s`` (the records stay
                queued in the producer and land once the broker is back), or refused.
        """
        self.log.await_sent(futures, self.flush_timeout_s)
        for future in futures:
            future.result(0)  # raises the delivery error, naming the topic

    def flush(self) -> None:
        """Wait up to ``flush_timeout_s`` for every record sent so far to be acknowledged or
        refused (the worker, when it stops). Never raises: each writer was told of its own
        records by its waiter (:meth:`set`); what is still unacknowledged is logged."""
        try:
            self.log.flush(self.flush_timeout_s)
        except ConnectException as exc:
            log.warning(
                "%s; if they are lost, their source partitions resume from earlier offsets", exc
            )

    def items(self) -> list[tuple[bytes, bytes]]:
        self._caught_up()
        with self._lock:
            return list(self._data.items())
