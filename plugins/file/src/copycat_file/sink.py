"""FileStreamSinkConnector: appends every record's value as one line to a file (or stdout).

Recovery guarantee: at-least-once. ``flush()`` (called by the default
``pre_commit``) flushes the buffer and fsyncs the file before offsets are
committed, so after a crash lines since the last commit may be written twice,
but no committed record is ever missing. A file that is no regular file
(``/dev/null``, a pipe) is only flushed: there is nothing to make durable. A crash in
the middle of a write may leave part of a line at the end of the file: the task ends it
with a newline when it starts (with a warning), so the records delivered again each get
a whole line.
"""

from __future__ import annotations

import fcntl
import logging
import os
import stat
import sys
from collections.abc import Mapping, Sequence
from typing import BinaryIO

from copycat_file._connector import ConfiguredConnector
from copycat_file._version import __version__
from plugin_api import (
    ConfigDef,
    ConfigType,
    ConnectException,
    Importance,
    SinkConnector,
    SinkRecord,
    SinkRecordBatch,
    SinkTask,
    Task,
    TopicPartition,
    Utf8Texts,
    java_string,
)

__all__ = ["FileStreamSinkConnector", "FileStreamSinkTask"]

log = logging.getLogger(__name__)

FILE_CONFIG = "file"
# Write buffer of the output file; put() batches are joined into one write, and
# the buffer only bounds how much sits in memory between flushes.
WRITE_BUFFER_BYTES = 1 << 20
_ONLY_STR = {str}
# How much of an unterminated last line is read at a time to find where it starts.
_SCAN_BYTES = 1 << 16

CONFIG_DEF = (
    ConfigDef()
    .define(
        FILE_CONFIG,
        ConfigType.STRING,
        None,
        None,
        Importance.HIGH,
        "Destination filename. If not specified, the standard output will be used",
    )
    .define(
        SinkConnector.TOPICS_CONFIG,
        ConfigType.LIST,
        "",
        None,
        Importance.HIGH,
        "List of topics to consume, separated by commas",
    )
    .define(
        SinkConnector.TOPICS_REGEX_CONFIG,
        ConfigType.STRING,
        "",
        None,
        Importance.HIGH,
        "Regular expression giving topics to consume",
    )
)


def lines_bytes(records: Sequence[SinkRecord]) -> bytes:
    """One line per record, UTF-8 encoded: its value as Kafka's FileStreamSinkTask prints it,
    each line ending in a newline (text Python cannot encode, a lone surrogate, becomes ``?``).

    One join per batch: a per-record f"{value}\\n" costs more than the write itself for 1 KiB
    lines. A :class:`SinkRecordBatch` (what the runtime hands to put()) gives its values
    without building a record each; when those are :class:`Utf8Texts` (StringConverter's
    values of valid UTF-8) they are written as the bytes they arrived as, never decoded.
    A batch of strings (the usual other case) is checked with one C-level pass and taken as
    it is.
    """
    if isinstance(records, SinkRecordBatch):
        values = records.values
        if type(values) is Utf8Texts:
            encoded = values.encoded
            encoded.append(b"")
            return b"\n".join(encoded)
        lines = list(values)  # no record objects built for a batch of strings
    else:
        lines = [record.value for record in records]
    if set(map(type, lines)) != _ONLY_STR:
        lines = [
            value if type(value) is str else java_string(value, record.value_schema)
            for value, record in zip(lines, records, strict=True)
        ]
    lines.append("")
    return "\n".join(lines).encode("utf-8", "replace")


def _lines_before_failure(records: Sequence[SinkRecord]) -> bytes:
    """The lines of the records before the first that cannot be printed (only called after
    :func:`lines_bytes` raised, so the batch is printed again, one record at a time)."""
    lines: list[str] = []
    try:
        for record in records:
            value = record.value
            lines.append(value if type(value) is str else java_string(value, record.value_schema))
    except Exception:  # the failure lines_bytes met again: write what came before it
        pass
    if not lines:
        return b""
    lines.append("")
    return "\n".join(lines).encode("utf-8", "replace")


def _end_unterminated_line(filename: str, out: BinaryIO) -> tuple[int, int] | None:
    """End the file's last line with a newline if it has none; return where that line starts
    and its length (None if the file ended with a newline, was empty, or is not a regular
    file).

    A write cut short (``kill -9`` of the plugin host landing in the middle of a chunk: Linux
    then writes the chunk's first pages only) leaves part of a line; its records were never
    flushed, so their offsets were not committed and they are delivered again, the first of
    them glued to the fragment unless the line is ended first. The check and the newline are
    made under an exclusive ``flock``: the tasks of one connector, started together after a
    crash, append to the same file, and only the first may end its line. A pipe or a device
    has no last byte to read; a file the worker may append to but not read is left as it is,
    with a warning.

    Raises:
        OSError: If the newline cannot be written.
    """
    info = os.fstat(out.fileno())
    if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
        return None
    try:
        fd = os.open(filename, os.O_RDONLY)
    except OSError as exc:
        log.warning(
            "FileStreamSinkTask: cannot read file '%s' to check that its last line is whole "
            "(%s); appending to it as it is",
            filename,
            exc.strerror or exc,
        )
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released by the close
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return None
        start = _line_start(fd, size - 1)
        out.write(b"\n")
        out.flush()
        return start, size - start
    finally:
        os.close(fd)


def _line_start(fd: int, end: int) -> int:
    """The offset just after the last newline before ``end`` in the file (0 if none)."""
    while end > 0:
        begin = max(0, end - _SCAN_BYTES)
        found = os.pread(fd, end - begin, begin).rfind(b"\n")
        if found >= 0:
            return begin + found + 1
        end = begin
    return 0


class FileStreamSinkConnector(ConfiguredConnector, SinkConnector):
    """Writes the records of its topics to one file; every task appends to the same file.
    Its config: ``file`` plus the runtime's ``topics`` / ``topics.regex``."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.file.FileStreamSinkConnector",)
    config_def = CONFIG_DEF

    def task_class(self) -> type[Task]:
        """Return :class:`FileStreamSinkTask`."""
        return FileStreamSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Return ``max_tasks`` identical configs."""
        return [dict(self._props) for _ in range(max_tasks)]

    def alter_offsets(
        self, connector_config: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        """Any offsets are fine: the file keeps none of its own, so the consumer group's are
        all there is (Kafka's connector answers so too, and the REST answer then says the
        offsets were altered, with no caveat about offsets kept elsewhere)."""
        return True


class FileStreamSinkTask(SinkTask):
    """Appends each value as Kafka's task prints it (Java's ``toString()``, see
    :func:`plugin_api.java_string`; bytes values decoded as UTF-8) + newline per record.

    Each ``put()`` batch becomes one encoded chunk, written before ``put()`` returns, as
    Kafka's task writes (a failed write fails that ``put()``, before its offsets can move).
    Not from a writer thread: that thread needs the GIL to start its write, and the task's
    thread holds it while it converts the next batch, so the write waited for it; on this
    2-core machine a thread gave no wall time back, even with a core idle, and cost 40-60
    ns of CPU per 1 KiB record (docs/benchmarks.md, twenty-second round).
    """

    def __init__(self) -> None:
        """Create an unstarted task."""
        self._filename: str | None = None
        self._out: BinaryIO | None = None

    def version(self) -> str:
        """Return the copycat-file version."""
        return __version__

    def start(self, props: Mapping[str, str]) -> None:
        """Open the file for appending (stdout if ``file`` is empty), and end its last line
        if a write cut short left it without a newline (with a warning).

        Raises:
            ConnectException: Naming the file if it cannot be opened or that newline
                cannot be written.
        """
        self._filename = CONFIG_DEF.parse(props)[FILE_CONFIG] or None
        if self._filename is None:
            return
        try:
            self._out = open(self._filename, "ab", buffering=WRITE_BUFFER_BYTES)  # noqa: SIM115
        except OSError as exc:
            raise ConnectException(
                f"Couldn't find or create file '{self._filename}' for FileStreamSinkTask: "
                f"{exc.strerror or exc}"
            ) from exc
        try:
            fragment = _end_unterminated_line(self._filename, self._out)
        except OSError as exc:
            self.stop()
            raise ConnectException(f"Failed to write to file '{self._filename}': {exc}") from exc
        if fragment is not None:
            log.warning(
                "FileStreamSinkTask: file '%s' ended with an unterminated line of %d bytes "
                "from byte %d (a write cut short, e.g. by kill -9, or a file without a final "
                "newline); ended it with a newline, so that the next record starts a line of "
                "its own",
                self._filename,
                fragment[1],
                fragment[0],
            )

    def put(self, records: Sequence[SinkRecord]) -> None:
        """Write one line per record: the value as Kafka's FileStreamSinkTask prints it
        (``null``, ``Struct{a=1}``, ``{k=v}``, ``1.0E7``, ...).

        Raises:
            ConnectException: Naming the file if the write fails.
        """
        if not records:
            return
        try:
            chunk = lines_bytes(records)
        except Exception:
            # Kafka's task prints record by record: the lines before a record that cannot be
            # printed are written, and the task fails on that record, not on the batch.
            self._write(_lines_before_failure(records))
            raise
        self._write(chunk)

    def _write(self, chunk: bytes) -> None:
        if self._out is None:
            sys.stdout.write(chunk.decode())
            return
        try:
            self._out.write(chunk)
        except OSError as exc:
            raise ConnectException(f"Failed to write to file '{self._filename}': {exc}") from exc

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        """Flush the buffer and fsync the file, so committed offsets never outrun the data.

        Raises:
            ConnectException: If the flush or the fsync fails.
        """
        try:
            if self._out is None:
                sys.stdout.flush()
            else:
                self._out.flush()
                fd = self._out.fileno()
                # /dev/null, a pipe or a terminal has nothing to make durable, and fsync
                # refuses it (EINVAL); Kafka's task only flushes its stream.
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    os.fsync(fd)
        except OSError as exc:
            raise ConnectException(
                f"Failed to flush file '{self._filename or 'stdout'}': {exc}"
            ) from exc

    def stop(self) -> None:
        """Flush and close the file (stdout is only flushed).

        A close that fails here is logged: its records were never flushed, so their offsets
        were not committed and they are delivered again.
        """
        out, self._out = self._out, None
        if out is None:
            sys.stdout.flush()
            return
        try:
            out.close()
        except OSError as exc:
            log.warning("FileStreamSinkTask: closing '%s' failed: %s", self._filename, exc)
