"""Source offsets: what each source connector has durably copied, keyed as Kafka Connect does.

A key is the JSON array ``["<connector>", {<source partition>}]`` and a value the JSON of the
source offset, the exact format of the ``connect-offsets`` topic, so offsets can move between
Kafka Connect, standalone files and distributed mode. The standalone store keeps them in a file
(``offset.storage.file.filename``) rewritten atomically: write a temporary file, fsync it,
rename it over the old one, fsync the directory, so a crash at any point leaves either the old
or the new complete file.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from plugin_api.connector import freeze_partition

from plugin_api import ConnectException

FILE_FORMAT_VERSION = 1


def offset_key(connector: str, partition: Mapping[str, Any]) -> str:
    """The ``connect-offsets`` key for one source partition (keys sorted, so lookups match)."""
    return json.dumps([connector, dict(partition)], separators=(",", ":"), sort_keys=True)


def parse_offset_key(key: str) -> tuple[str, dict[str, Any]]:
    connector, partition = json.loads(key)
    return connector, partition


class OffsetStore(Protocol):
    """Where committed source offsets live (a file in standalone mode, a topic when distributed)."""

    def get(self, connector: str, partitions: Iterable[Mapping[str, Any]]) -> dict[Any, Any]:
        """Offsets of the given partitions, keyed by :func:`freeze_partition`.

        Partitions without an offset are absent from the result.
        """
        ...

    def put(self, connector: str, entries: Iterable[tuple[Mapping[str, Any], Any]]) -> None:
        """Record ``(source partition, offset)`` pairs (None offset = tombstone); see flush()."""
        ...

    def flush(self) -> None:
        """Make everything put() so far durable."""
        ...

    def connector_offsets(self, connector: str) -> list[tuple[dict[str, Any], Any]]: ...


class MemoryOffsetStore:
    """In-memory twin of the offset stores, for unit tests."""

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get(self, connector: str, partitions: Iterable[Mapping[str, Any]]) -> dict[Any, Any]:
        with self._lock:
            found = {}
            for partition in partitions:
                key = offset_key(connector, partition)
                if self._data.get(key) is not None:
                    found[freeze_partition(partition)] = self._data[key]
            return found

    def put(self, connector: str, entries: Iterable[tuple[Mapping[str, Any], Any]]) -> None:
        with self._lock:
            for partition, offset in entries:
                key = offset_key(connector, partition)
                if offset is None:
                    self._data.pop(key, None)
                else:
                    self._data[key] = offset

    def flush(self) -> None:
        pass

    def connector_offsets(self, connector: str) -> list[tuple[dict[str, Any], Any]]:
        with self._lock:
            rows = []
            for key, offset in self._data.items():
                name, partition = parse_offset_key(key)
                if name == connector:
                    rows.append((partition, offset))
            return rows


class FileOffsetStore(MemoryOffsetStore):
    """Standalone offsets in one JSON file, replaced atomically on every flush."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self._dirty = False
        self._flush_lock = threading.Lock()  # one writer of the temporary file at a time
        self._load()

    def _load(self) -> None:
        try:
            raw = self.path.read_text()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise ConnectException(f"cannot read offsets file {self.path}: {exc}") from exc
        try:
            document = json.loads(raw)
            entries = document["offsets"]
            if not isinstance(entries, dict):
                raise ValueError("'offsets' is not an object")
        except (ValueError, KeyError, TypeError) as exc:
            raise ConnectException(
                f"offsets file {self.path} is not a Copycat offsets file ({exc}); move it away "
                "to start from scratch"
            ) from exc
        self._data = dict(entries)

    def put(self, connector: str, entries: Iterable[tuple[Mapping[str, Any], Any]]) -> None:
        entries = list(entries)
        if entries:
            super().put(connector, entries)
            self._dirty = True

    def flush(self) -> None:
        with self._flush_lock:
            with self._lock:
                if not self._dirty:
                    return
                document = {"version": FILE_FORMAT_VERSION, "offsets": dict(self._data)}
                self._dirty = False
            self._write(document)

    def _write(self, document: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with open(tmp, "w") as fh:
            json.dump(document, fh, separators=(",", ":"))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
