"""Source offsets in two layers, as Kafka Connect's OffsetBackingStore + OffsetStorageWriter.

* :class:`OffsetBackingStore` -- bytes keys to bytes values (None: a tombstone). Kept in
  memory, in a file (standalone), or in a Kafka topic (distributed: ``offset.storage.topic``).
* :class:`OffsetStorage` -- the serialization above it: a key is the JSON array
  ``["<connector>", {<source partition>}]`` and a value the JSON of the offset, exactly the
  records of Kafka Connect's ``connect-offsets`` topic. It implements the
  :class:`core.offsets.OffsetStore` protocol the task loops and the herder use.

Why split: the file and the topic differ in how bytes are kept, never in what the bytes are,
so a connector's offsets written by one are read by the other (and by Kafka Connect).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from plugin_api.connector import freeze_partition

from core.stores.java_offsets import (
    JavaOffsetsError,
    looks_java_serialized,
    read_offsets_map,
    write_offsets_map,
)
from plugin_api import ConnectException, DataException, validate_offset_format

__all__ = [
    "FILE_FORMAT_VERSION",
    "FileOffsetBackingStore",
    "MemoryOffsetBackingStore",
    "OffsetBackingStore",
    "OffsetStorage",
    "WriteWaiter",
    "canonical_offset_key",
    "check_storable",
    "connect_json",
    "offset_key",
    "parse_offset_key",
]

FILE_FORMAT_VERSION = 1


# An escape json.dumps wrote (\\uXXXX in lower case), or an escaped backslash (which may
# precede a literal "u" that is no escape); a code point beyond the BMP.
_ESCAPE = re.compile(r"\\\\|\\u[0-9a-f]{4}")
# A code point beyond the BMP, or a lone surrogate (json.loads makes one of "\\ud83d").
_UTF16 = re.compile("[\U00010000-\U0010ffff\ud800-\udfff]")


def _utf16_escapes(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04X}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"


def _upper_escape(match: re.Match[str]) -> str:
    escape = match.group()
    return escape if escape == "\\\\" else "\\u" + escape[2:].upper()


def connect_json(value: Any, *, sort_keys: bool = False) -> bytes:
    """``value`` as Kafka Connect's JsonConverter (Jackson) writes it: no spaces, text beyond
    ASCII as UTF-8 bytes, except code points beyond the BMP, which Jackson writes as escaped
    surrogate pairs (``\\uD83D\\uDE00``); other escapes in upper case (``\\u001F``).
    Kafka Connect looks source offsets up by their key's bytes, so a key it reads must be
    these bytes to be found."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys)
    return _UTF16.sub(_utf16_escapes, _ESCAPE.sub(_upper_escape, text)).encode()


def offset_key(connector: str, partition: Mapping[str, Any]) -> bytes:
    """The ``connect-offsets`` key for one source partition, in its canonical form (fields
    sorted, so lookups match whatever order a writer used; see :func:`canonical_offset_key`)."""
    return connect_json([connector, dict(partition)], sort_keys=True)


def canonical_offset_key(key: bytes) -> bytes:
    """``["c",{"b":1,"a":2}]`` -> ``["c",{"a":2,"b":1}]``, whatever the writer's field order
    and escapes (Kafka Connect's, an older Copycat's); keys that are no offset key as is."""
    try:
        parsed = json.loads(key)
    except (ValueError, UnicodeDecodeError):
        return key
    if (
        isinstance(parsed, list)
        and len(parsed) == 2
        and isinstance(parsed[0], str)
        and isinstance(parsed[1], dict)
    ):
        return offset_key(parsed[0], parsed[1])
    return key


def check_storable(connector: str, partition: Any, offset: Any) -> None:
    """The last line of defence, as Kafka's OffsetStorageWriter.doFlush: a partition or
    offset that is not a map of str to primitives is never written. Tasks' offsets were
    checked in their plugin host, before their records were sent (naming the record); REST
    checks what it is given. Once per partition per commit; a tombstone always passes.

    Raises:
        ConnectException: naming the connector and the partition.
    """
    if offset is None:
        # A tombstone removes what is stored, whatever its shape: a partition an older
        # version stored that Kafka's format refuses could otherwise never be reset.
        return
    try:
        validate_offset_format(partition)
        validate_offset_format(offset)
    except DataException as exc:
        raise ConnectException(
            f"connector {connector}: the offset {offset!r} of source partition {partition!r} "
            f"cannot be stored: {exc}"
        ) from exc


def parse_offset_key(key: bytes) -> tuple[str, dict[str, Any]]:
    connector, partition = json.loads(key)
    return connector, partition


# What a write returns: called, it waits until exactly that write is durable, and raises if it
# cannot be (Kafka's OffsetBackingStore.set() future). Each task waits for its own writes: with
# one store shared by every task of a worker, a store-wide flush let one task take another's
# pending writes, and their failures, as its own.
WriteWaiter = Callable[[], None]


def _written() -> None:
    """The waiter of a write that is durable already (in memory)."""


class OffsetBackingStore(Protocol):
    """Bytes to bytes; thread-safe. The waiter ``set`` returns makes that write durable;
    ``flush`` waits for every write so far."""

    def get(self, keys: Collection[bytes]) -> dict[bytes, bytes]:
        """Values of the keys present (tombstoned or unknown keys are left out)."""
        ...

    def set(self, values: Mapping[bytes, bytes | None]) -> WriteWaiter: ...

    def flush(self) -> None: ...

    def items(self) -> list[tuple[bytes, bytes]]:
        """Every live key and value (for listing a connector's offsets)."""
        ...


class MemoryOffsetBackingStore:
    """Offsets in memory: the twin of the file and topic stores."""

    def __init__(self) -> None:
        self._data: dict[bytes, bytes] = {}
        self._lock = threading.Lock()

    def get(self, keys: Collection[bytes]) -> dict[bytes, bytes]:
        with self._lock:
            return {k: self._data[k] for k in keys if k in self._data}

    def set(self, values: Mapping[bytes, bytes | None]) -> WriteWaiter:
        with self._lock:
            for key, value in values.items():
                if value is None:
                    self._data.pop(key, None)
                else:
                    self._data[key] = value
        return _written

    def flush(self) -> None:
        pass

    def items(self) -> list[tuple[bytes, bytes]]:
        with self._lock:
            return list(self._data.items())


class FileOffsetBackingStore(MemoryOffsetBackingStore):
    """Standalone offsets in one file, replaced atomically on every flush.

    Copycat's own file is ``{"version": 1, "offsets": {<key JSON>: <offset JSON value>}}``.
    A file Kafka Connect's ``connect-standalone`` wrote (a Java-serialized map of the same
    keys and values, :mod:`core.stores.java_offsets`) is read too, and then kept in Kafka's
    format, so the worker can move back to Kafka Connect. Every write goes to a temporary
    file, fsynced, renamed over the old one, then the directory fsynced: a crash at any
    point leaves either the old or the new complete file. An empty file is no offsets, as
    on Kafka Connect.
    """

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self._dirty = False
        self._flush_lock = threading.Lock()  # one writer of the temporary file at a time
        # Kafka's format when the file was Kafka Connect's; then the key bytes it was found
        # under (Kafka Connect looks offsets up by its own key bytes) by canonical key.
        self._kafka_format = False
        self._kafka_keys: dict[bytes, bytes] = {}
        self._load()

    def _load(self) -> None:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise ConnectException(f"cannot read offsets file {self.path}: {exc}") from exc
        if not raw:
            return
        if looks_java_serialized(raw):
            self._load_kafka(raw)
            return
        try:
            document = json.loads(raw)
            entries = document["offsets"]
            if not isinstance(entries, dict):
                raise ValueError("'offsets' is not an object")
        except UnicodeDecodeError as exc:
            raise ConnectException(
                f"offsets file {self.path} is neither a Copycat nor a Kafka Connect offsets "
                f"file ({exc.reason} at byte {exc.start}); move it away to start from scratch"
            ) from exc
        except (ValueError, KeyError, TypeError) as exc:
            raise ConnectException(
                f"offsets file {self.path} is not a Copycat offsets file ({exc}); move it away "
                "to start from scratch"
            ) from exc
        # Canonical keys: a file an older version wrote escaped text beyond ASCII.
        self._data = {
            canonical_offset_key(key.encode()): connect_json(value)
            for key, value in entries.items()
            if value is not None
        }

    def _load_kafka(self, raw: bytes) -> None:
        try:
            entries = read_offsets_map(raw)
        except JavaOffsetsError as exc:
            what = (
                "is a Kafka Connect offsets file cut short"
                if exc.truncated
                else "is neither a Copycat nor a Kafka Connect offsets file"
            )
            # Kafka Connect takes a file cut short for no offsets and sends everything again.
            raise ConnectException(
                f"offsets file {self.path} {what} ({exc}); move it away to start from scratch"
            ) from exc
        for key, value in entries.items():
            if value is None:
                continue
            canonical = canonical_offset_key(key)
            self._data[canonical] = value
            self._kafka_keys[canonical] = key
        self._kafka_format = True

    def set(self, values: Mapping[bytes, bytes | None]) -> WriteWaiter:
        """Returns :meth:`flush`: the file holds every write (a flush under way when another
        task's flush begins is waited for, so that one returns once its write is in the file)."""
        if values:
            super().set(values)
            self._dirty = True
        return self.flush

    def flush(self) -> None:
        with self._flush_lock:
            with self._lock:
                if not self._dirty:
                    return
                if self._kafka_format:
                    content = write_offsets_map(
                        {self._kafka_keys.get(k, k): v for k, v in self._data.items()}
                    )
                else:
                    document = {
                        "version": FILE_FORMAT_VERSION,
                        "offsets": {k.decode(): json.loads(v) for k, v in self._data.items()},
                    }
                    content = json.dumps(document, separators=(",", ":")).encode()
                self._dirty = False
            try:
                self._write(content)
            except OSError:
                # Still pending: the waiter that calls next sees the failure too (it does not
                # take it for written), and the next flush writes the file again.
                with self._lock:
                    self._dirty = True
                raise

    def _write(self, content: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as fh:
                fh.write(content)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except OSError:
            with contextlib.suppress(OSError):  # no temporary file left by a failed write
                tmp.unlink(missing_ok=True)
            raise
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


class OffsetStorage:
    """Kafka Connect's offsets format over an :class:`OffsetBackingStore` (see the module
    docstring); the :class:`core.offsets.OffsetStore` the loops and herder use."""

    def __init__(self, backing: OffsetBackingStore) -> None:
        self.backing = backing

    def get(self, connector: str, partitions: Iterable[Mapping[str, Any]]) -> dict[Any, Any]:
        """Offsets of ``partitions``, keyed by :func:`freeze_partition`; missing ones absent."""
        keyed = {offset_key(connector, p): p for p in partitions}
        found = self.backing.get(keyed)
        return {freeze_partition(keyed[k]): json.loads(v) for k, v in found.items()}

    def put(self, connector: str, entries: Iterable[tuple[Mapping[str, Any], Any]]) -> WriteWaiter:
        """Record ``(source partition, offset)`` pairs (None offset = tombstone); the waiter
        returned makes these durable, flush() everything written so far."""
        values: dict[bytes, bytes | None] = {}
        for partition, offset in entries:
            check_storable(connector, partition, offset)
            values[offset_key(connector, partition)] = (
                None if offset is None else connect_json(offset)
            )
        return self.backing.set(values) if values else _written

    def flush(self) -> None:
        self.backing.flush()

    def connector_offsets(self, connector: str) -> list[tuple[dict[str, Any], Any]]:
        rows = []
        for key, value in self.backing.items():
            try:
                name, partition = parse_offset_key(key)
            except (ValueError, TypeError):
                continue  # not a Connect offsets key (a foreign record in a shared topic)
            if name == connector:
                rows.append((partition, json.loads(value)))
        return rows
