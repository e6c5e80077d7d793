"""The committed files of :mod:`copycat_file.exactly_once`: names, recovery, atomic commits.

A committed file is named ``<topic>-<partition>-<first offset>-<last offset>.txt`` (offsets
zero-padded, so a directory listing is in offset order) and holds the records of exactly that
offset range of one partition. It is written as a temporary file in
``.copycat-tmp/<topic>-<partition>/`` under the output directory and made visible by one
``rename()``, after an ``fsync()`` of its data and followed by one of the directory: a reader
sees a file whole or not at all, and a crash at any point leaves at most a temporary file,
which the next owner of the partition deletes.

The committed files are the only record of progress. :meth:`PartitionFiles.recover` reads
where a partition stands from them; :meth:`PartitionFiles.commit` renames a temporary file
into place only if the partition still stands where its writer believed, checked under an
exclusive ``flock()`` of the partition's lock file (released by the kernel if the process
dies): a writer that lost its partition (a task whose partition was reassigned while it was
paused or cut off) finds either a newer committed file or its temporary file deleted, and is
told so (:class:`Fenced`) instead of writing its records a second time.

Runs on the sink task's thread only; nothing here is shared between threads.
"""

from __future__ import annotations

import fcntl
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

# Kafka offsets are signed 64-bit: at most 19 digits. Padding every name to that width keeps
# the listing of a directory (ls, glob, sorted()) in offset order.
OFFSET_DIGITS = 19
COMMITTED_SUFFIX = ".txt"
TEMP_SUFFIX = ".tmp"
# Temporary and lock files live here, under the output directory: the same file system (so
# rename() is atomic), out of the way of anything that reads the committed files. One
# subdirectory per partition, "<topic>-<partition>": unambiguous, since partitions are numbers.
WORK_DIR = ".copycat-tmp"
LOCK_FILE = "partition.lock"


class Fenced(Exception):
    """Another writer committed this partition since this one recovered it (or deleted this
    writer's temporary file when it took the partition over): these records are not ours to
    commit. ``committed_end`` is where the partition stands now."""

    def __init__(self, message: str, committed_end: int) -> None:
        super().__init__(message)
        self.committed_end = committed_end


def committed_name(topic: str, partition: int, first: int, last: int) -> str:
    return (
        f"{topic}-{partition}-{first:0{OFFSET_DIGITS}d}-{last:0{OFFSET_DIGITS}d}{COMMITTED_SUFFIX}"
    )


def parse_committed_name(name: str) -> tuple[str, int, int, int] | None:
    """``(topic, partition, first, last)`` of a committed file's name, else None.

    Split from the right: topic names may contain ``-`` but the three numbers cannot."""
    if not name.endswith(COMMITTED_SUFFIX):
        return None
    parts = name[: -len(COMMITTED_SUFFIX)].rsplit("-", 3)
    if len(parts) != 4 or not all(p.isdigit() for p in parts[1:]):
        return None
    topic, partition, first, last = parts
    return topic, int(partition), int(first), int(last)


@dataclass
class TempFile:
    """Records of one partition written since the last commit, in a temporary file."""

    path: Path
    out: BinaryIO
    first: int
    last: int
    records: int = 0


class PartitionFiles:
    """One partition's committed files in ``directory``, and its current temporary file."""

    def __init__(self, directory: Path, topic: str, partition: int) -> None:
        self.directory = directory
        self.topic = topic
        self.partition = partition
        self.work = directory / WORK_DIR / f"{topic}-{partition}"
        self._lock_path = self.work / LOCK_FILE
        self.committed_end: int | None = None  # next offset after the last committed file
        self.temp: TempFile | None = None

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def recover(self) -> int | None:
        """Read where the partition stands from its committed files (None: no file yet), and
        delete temporary files left by anyone (an earlier crash, or a writer fenced now)."""
        self.work.mkdir(parents=True, exist_ok=True)
        with self._locked():
            self.committed_end = self._scan_end()
            for entry in os.scandir(self.work):
                if entry.name.endswith(TEMP_SUFFIX):
                    os.unlink(entry.path)
        self.temp = None
        return self.committed_end

    def write(self, first: int, last: int, data: bytes, records: int) -> None:
        """Append ``records`` records, offsets ``first``..``last``, to the temporary file."""
        temp = self.temp
        if temp is None:
            # Unique: a writer that lost the partition may still be writing its own.
            path = self.work / f"{first}.{uuid.uuid4().hex}{TEMP_SUFFIX}"
            temp = self.temp = TempFile(path, open(path, "wb"), first, last)  # noqa: SIM115
        temp.out.write(data)
        temp.last = last
        temp.records += records

    def commit(self) -> str | None:
        """Make the temporary file a committed file; returns its name (None: nothing to commit).

        Raises:
            Fenced: another writer committed the partition meanwhile, or took it over; the
                temporary file is deleted.
            OSError: writing, syncing or renaming failed; the temporary file is left for the
                next recovery to delete, and nothing was committed.
        """
        temp, self.temp = self.temp, None
        if temp is None:
            return None
        temp.out.flush()
        os.fsync(temp.out.fileno())
        temp.out.close()
        name = committed_name(self.topic, self.partition, temp.first, temp.last)
        with self._locked():
            end = self._scan_end()
            if end != self.committed_end or not temp.path.exists():
                temp.path.unlink(missing_ok=True)
                now = end if end is not None else 0
                raise Fenced(
                    f"{self.name}: another writer committed this partition up to offset "
                    f"{now} (this one expected {self.committed_end}); records "
                    f"{temp.first}..{temp.last} are left to it",
                    now,
                )
            os.rename(temp.path, self.directory / name)
            _fsync_directory(self.directory)
        self.committed_end = temp.last + 1
        return name

    def discard(self) -> None:
        """Drop the temporary file: its records were never committed and will be read again."""
        temp, self.temp = self.temp, None
        if temp is not None:
            temp.out.close()
            temp.path.unlink(missing_ok=True)

    def _scan_end(self) -> int | None:
        end = None
        prefix = f"{self.topic}-{self.partition}-"
        for entry in os.scandir(self.directory):
            if not entry.name.startswith(prefix):
                continue
            parsed = parse_committed_name(entry.name)
            if parsed is None or parsed[:2] != (self.topic, self.partition):
                continue  # e.g. topic "a-1" partition 2 shares the prefix of topic "a" partition 1
            if end is None or parsed[3] + 1 > end:
                end = parsed[3] + 1
        return end

    def _locked(self) -> _Lock:
        return _Lock(self._lock_path)


class _Lock:
    """An exclusive ``flock()`` of a partition's lock file for the length of a ``with``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)  # closing the descriptor releases the lock


def _fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (POSIX: the entry lives in the directory)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
