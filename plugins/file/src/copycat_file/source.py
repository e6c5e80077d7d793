"""FileStreamSourceConnector: one STRING record per line of a file (or stdin).

Recovery guarantee: at-least-once. Each record's source offset is the byte
position just after its line, keyed by ``{"filename": <path>}``; after a
restart the task seeks to the last committed position, so lines whose
offsets were not yet committed are read again. stdin has no offsets.

Lines end as in Kafka's task: with ``\\n``, ``\\r\\n`` or a lone ``\\r``. A last
line without its line end is held back until the end arrives (a ``\\r`` last in
what has been read, until the next byte says whether ``\\n`` follows), so a
growing file is never split mid-line. Undecodable UTF-8 becomes U+FFFD, as in Kafka. Lines
of valid UTF-8 are handed on as :class:`~plugin_api.Utf8Texts`: their text
is decoded only if something reads it (StringConverter produces the bytes).

Kafka stores the position in *characters* while seeking in bytes; we store
bytes, which is identical for ASCII files and correct for the rest.
"""

from __future__ import annotations

import json
import logging
import os
import re
import select
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from itertools import accumulate
from typing import Any, BinaryIO, overload

from copycat_file._connector import ConfiguredConnector
from copycat_file._version import __version__
from plugin_api import (
    STRING_SCHEMA,
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectException,
    ExactlyOnceSupport,
    Importance,
    NonEmptyString,
    SourceConnector,
    SourceRecordBatch,
    SourceTask,
    Task,
    Utf8Texts,
)

__all__ = ["FileStreamSourceConnector", "FileStreamSourceTask"]

log = logging.getLogger(__name__)

FILE_CONFIG = "file"
TOPIC_CONFIG = "topic"
TASK_BATCH_SIZE_CONFIG = "batch.size"
DEFAULT_TASK_BATCH_SIZE = 2000
FILENAME_FIELD = "filename"
POSITION_FIELD = "position"

# Bytes read per system call. Lines are split in bulk with bytes.split(), so one
# read serves thousands of lines and the per-line cost is only decode + record.
READ_CHUNK_BYTES = 1 << 20
# How long poll() waits when the file has no new complete line (or does not exist
# yet) before returning an empty batch. Short enough to notice appended lines and
# stop() promptly, long enough that an idle task does not spin a core.
IDLE_WAIT_SECONDS = 0.1


def _single_topic(name: str, value: object) -> None:
    NonEmptyString()(name, value)
    if value is None:  # missing: "Missing required configuration" says it, as in Kafka
        return
    if "," in str(value):
        raise ConfigException(name, value, "must be a single topic, not a comma-separated list")


CONFIG_DEF = (
    ConfigDef()
    .define(
        FILE_CONFIG,
        ConfigType.STRING,
        None,
        None,
        Importance.HIGH,
        "Source filename. If not specified, the standard input will be used",
    )
    .define(
        TOPIC_CONFIG,
        ConfigType.STRING,
        validator=_single_topic,
        importance=Importance.HIGH,
        documentation="The topic to publish data to",
    )
    .define(
        TASK_BATCH_SIZE_CONFIG,
        ConfigType.INT,
        DEFAULT_TASK_BATCH_SIZE,
        None,  # as Kafka's: any int; below 1 a poll returns one line (see start())
        Importance.LOW,
        "The maximum number of records the source task can read from the file each time it is "
        "polled",
    )
)


class FileStreamSourceConnector(ConfiguredConnector, SourceConnector):
    """Reads a file (or stdin) line by line into one topic; always exactly one task. Its
    config: ``file``, ``topic`` and ``batch.size``."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.file.FileStreamSourceConnector",)
    config_def = CONFIG_DEF

    def task_class(self) -> type[Task]:
        """Return :class:`FileStreamSourceTask`."""
        return FileStreamSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Return a single task config: one file cannot be split between tasks."""
        return [dict(self._props)]

    def exactly_once_support(self, props: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """Supported for files (positions can be replayed), not for stdin."""
        return (
            ExactlyOnceSupport.SUPPORTED
            if props.get(FILE_CONFIG)
            else ExactlyOnceSupport.UNSUPPORTED
        )

    def alter_offsets(
        self, connector_config: Mapping[str, str], offsets: Mapping[Any, Any]
    ) -> bool:
        """Accept offsets of the form ``{"filename": f} -> {"position": n >= 0}``, or a reset
        (None) of any partition, so stray partitions can be cleaned up, as Kafka's connector
        does. ``offsets`` is keyed by frozen partitions (``plugin_api.freeze_partition``).

        Raises:
            ConnectException: If no ``file`` is configured, an offset is malformed, or a
                partition of an offset has no ``filename`` (Kafka's messages).
        """
        if not connector_config.get(FILE_CONFIG):
            raise ConnectException(
                f"Offsets cannot be modified if the '{FILE_CONFIG}' configuration is "
                "unspecified. This is because "
                "stdin is used for input and offsets are not tracked."
            )
        for partition, offset in offsets.items():
            if offset is None:
                continue
            if not isinstance(offset, Mapping) or POSITION_FIELD not in offset:
                raise ConnectException(
                    f"Offset objects should either be null or contain the key "
                    f"'{POSITION_FIELD}' (the offset of partition {_shown(partition)} is "
                    f"{json.dumps(offset)})"
                )
            position = offset[POSITION_FIELD]
            # Kafka's sentences, then which partition's offset it was.
            if not isinstance(position, int) or isinstance(position, bool):
                raise ConnectException(
                    f"The value for the '{POSITION_FIELD}' key in the offset is expected to be "
                    f"a Long value (the offset of partition {_shown(partition)} has "
                    f"{json.dumps(position)})"
                )
            if position < 0:
                raise ConnectException(
                    f"The value for the '{POSITION_FIELD}' key in the offset should be a "
                    f"non-negative value (the offset of partition {_shown(partition)} has "
                    f"{position})"
                )
            if partition is None:
                raise ConnectException("Partition objects cannot be null")
            if FILENAME_FIELD not in dict(partition):
                raise ConnectException(
                    f"Partition objects should contain the key '{FILENAME_FIELD}' "
                    f"(got {_shown(partition)})"
                )
        return True


def _shown(partition: Any) -> str:
    """A frozen partition as the JSON object it was given as (``{"filename": "f"}``)."""
    try:
        return json.dumps(dict(partition))
    except (TypeError, ValueError):
        return repr(partition)


_LINE_END = re.compile(rb"\r\n|\r|\n")


def _split_lines(data: bytes) -> tuple[list[bytes], bytes]:
    """The complete lines of ``data`` and what follows the last line end, as Kafka's task
    reads them: a line ends with ``\\n``, ``\\r\\n`` or a lone ``\\r`` (a ``\\r`` last in
    ``data`` may be the first half of ``\\r\\n``: it stays in the rest). Each line is given
    with every byte of its line end but the last (the ``\\r`` of a ``\\r\\n``), so it used
    ``len(line) + 1`` bytes of the file, as :class:`_Positions` counts."""
    lines = []
    start = 0
    for end in _LINE_END.finditer(data):
        if end.end() == len(data) and end.group() == b"\r":
            break
        lines.append(data[start : end.end() - 1])
        start = end.end()
    return lines, data[start:]


class _Positions(Sequence[dict[str, int]]):
    """The source offset after each line of one poll (``{"position": byte after its
    newline}``), made on demand: the runtime reads only the last one unless it builds the
    records, so a poll costs no dict per line."""

    __slots__ = ("_start", "_lines", "_ends", "end")

    def __init__(self, start: int, lines: Sequence[str | bytes]) -> None:
        """``lines``: the poll's lines as read (bytes, or str of ASCII), without newlines."""
        self._start = start
        self._lines = lines
        self._ends: list[int] | None = None
        self.end = start + sum(map(len, lines)) + len(lines)

    def __len__(self) -> int:
        return len(self._lines)

    @overload
    def __getitem__(self, index: int) -> dict[str, int]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, int]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, int] | list[dict[str, int]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        size = len(self._lines)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("line index out of range")
        if index == size - 1:
            return {POSITION_FIELD: self.end}
        ends = self._ends
        if ends is None:  # each line's length plus its newline, summed up
            ends = self._ends = list(
                accumulate(map((1).__add__, map(len, self._lines)), initial=self._start)
            )
        return {POSITION_FIELD: ends[index + 1]}


class FileStreamSourceTask(SourceTask):
    """Tails the file, returning up to ``batch.size`` lines per poll.

    ``stop()`` may be called from another thread while ``poll()`` waits; the wait
    ends at once.
    """

    def __init__(self) -> None:
        """Create an unstarted task."""
        self._filename: str | None = None
        self._topic = ""
        self._batch_size = DEFAULT_TASK_BATCH_SIZE
        self._stream: BinaryIO | None = None
        self._stdin_fd: int | None = None
        self._partition: dict[str, str] | None = None
        self._position = 0
        self._lines: list[bytes] = []  # the buffered lines as read, without their newline
        self._texts: Utf8Texts | None = None  # the same lines, when they are the values as is
        self._next_line = 0
        self._partial = b""
        self._stopping = threading.Event()
        self._warned_missing = False

    def version(self) -> str:
        """Return the copycat-file version."""
        return __version__

    def start(self, props: Mapping[str, str]) -> None:
        """Parse the config and look up the stored position of the file.

        Raises:
            ConnectException: If the stored offset is not an integer position.
        """
        parsed = CONFIG_DEF.parse(props)
        self._topic = parsed[TOPIC_CONFIG]
        # Kafka's task returns a poll's records once they are batch.size or more: with 0 or
        # less, after each line.
        self._batch_size = max(parsed[TASK_BATCH_SIZE_CONFIG], 1)
        self._filename = parsed[FILE_CONFIG] or None
        self._stopping.clear()
        if self._filename is None:
            self._stdin_fd = sys.stdin.fileno()
            return
        self._partition = {FILENAME_FIELD: self._filename}
        offset = self.context.offset_storage_reader().offset(self._partition)
        position = offset.get(POSITION_FIELD) if offset else None
        if position is not None and (not isinstance(position, int) or isinstance(position, bool)):
            raise ConnectException(
                f"Offset position {position!r} of file {self._filename} is the incorrect type "
                "(expected an integer)"
            )
        self._position = position or 0

    def poll(self) -> SourceRecordBatch | None:
        """Return up to ``batch.size`` complete new lines, as one :class:`SourceRecordBatch`
        (the runtime converts and produces its values by column; its records, equal to
        Kafka's, are built only if something reads them).

        An empty batch after a short wait if there are none.

        Raises:
            ConnectException: If the file exists but cannot be read.
        """
        topic = self._topic
        if self._next_line >= len(self._lines) and not self._fill():
            self._stopping.wait(IDLE_WAIT_SECONDS)
            return SourceRecordBatch(None, None, topic, [])
        start = self._next_line
        lines = self._lines[start : start + self._batch_size]
        self._next_line = start + len(lines)
        timestamp = int(time.time() * 1000)
        values: Sequence[str]
        if self._texts is not None:  # valid UTF-8 without CRs: the lines are the values
            values = self._texts[start : self._next_line]
        else:
            values = [
                (raw[:-1] if raw[-1:] == b"\r" else raw).decode("utf-8", "replace") for raw in lines
            ]
        partition = self._partition
        offsets = None
        if partition is not None:  # stdin has no offsets to track
            offsets = _Positions(self._position, lines)
            self._position = offsets.end
        return SourceRecordBatch(
            partition,
            offsets,
            topic,
            values,
            value_schema=STRING_SCHEMA,
            timestamp=timestamp,
        )

    def _fill(self) -> bool:
        """Read until at least one complete line is buffered; False if none is available now."""
        while True:
            chunk = self._read_chunk()
            if not chunk:
                return False
            partial = self._partial
            # The usual file, valid UTF-8 without CRs, is checked in one pass and its lines
            # kept as bytes (Utf8Texts): StringConverter produces them as they are, and
            # nothing decodes them unless a transform reads them. The partial line left by
            # the last chunk joins the first line only, not the whole chunk.
            found = None if b"\r" in chunk or b"\r" in partial else Utf8Texts.lines(chunk, partial)
            if found is not None:
                texts, self._partial = found
                if not texts:
                    continue
                self._texts, self._lines = texts, texts.encoded
            else:
                lines, self._partial = _split_lines(partial + chunk)
                if not lines:
                    continue
                self._texts, self._lines = None, lines
            self._next_line = 0
            return True

    def _read_chunk(self) -> bytes:
        if self._stdin_fd is not None:
            ready, _, _ = select.select([self._stdin_fd], [], [], IDLE_WAIT_SECONDS)
            return os.read(self._stdin_fd, READ_CHUNK_BYTES) if ready else b""
        if self._stream is None and not self._open():
            return b""
        stream = self._stream
        if stream is None:  # stop() closed it meanwhile
            return b""
        try:
            return stream.read(READ_CHUNK_BYTES) or b""
        except ValueError:  # closed by stop() from another thread
            if self._stopping.is_set():
                return b""
            raise
        except OSError as exc:
            raise ConnectException(f"Error while reading file {self._filename}: {exc}") from exc

    def _open(self) -> bool:
        assert self._filename is not None
        try:
            stream = open(self._filename, "rb", buffering=0)  # noqa: SIM115 - closed in stop()
        except FileNotFoundError:
            if not self._warned_missing:
                log.warning(
                    "Couldn't find file %s for FileStreamSourceTask, waiting for it to be created",
                    self._filename,
                )
                self._warned_missing = True
            return False
        except OSError as exc:
            raise ConnectException(
                f"Error while trying to open file {self._filename}: {exc}"
            ) from exc
        if self._position:
            stream.seek(self._position)
            log.debug("Skipped to offset %d of %s", self._position, self._filename)
        self._stream = stream  # type: ignore[assignment]
        log.debug("Opened %s for reading", self._filename)
        return True

    def stop(self) -> None:
        """Wake a waiting poll() and close the file (stdin is left open)."""
        self._stopping.set()
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()
