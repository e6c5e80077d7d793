"""Batches of records that can also be read, or written, a column at a time.

A task's batch is an ordinary ``Sequence`` of records, so code written against lists keeps
working. What it adds is for the hot path of small records, where building one record object
per record costs more than everything else the runtime does with it (about 0.2-0.35 us each
on a 2-core machine against ~0.45 us for a bare client's whole ``produce()``):

* :class:`SinkRecordBatch`, what the runtime may hand to ``SinkTask.put()``: its records are
  built only when the task first reads one, and :attr:`SinkRecordBatch.values` gives the
  values without building any (a task that writes values only, such as a file sink, never
  pays for records);
* :class:`SourceRecordBatch`, what a ``SourceTask.poll()`` may return for records that share
  everything but their value and source offset (the lines of one file, say): the runtime
  converts and produces it by column, and builds the records only if something asks for
  them (a transform, ``commit_record()``);
* :class:`Utf8Texts`, a column of text held as its UTF-8 bytes, for text that arrives as
  bytes and may leave as the same bytes (a file's lines produced with StringConverter, a
  topic's values written to a file): whoever would encode it as UTF-8 takes the bytes
  instead, and nobody decodes it unless something reads a text.

Both build their records once, on first use, on the thread that reads them (the task's), and
hand out the same objects from then on.
"""

from __future__ import annotations

import codecs
import io
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import Any, TypeVar, overload

from plugin_api._schema import Schema
from plugin_api.records import SinkRecord, SourceRecord

__all__ = ["SinkRecordBatch", "SourceRecordBatch", "Utf8Texts"]


R = TypeVar("R", SinkRecord, SourceRecord)


class _BuiltOnFirstUse(Sequence[R]):
    """A read-only sequence of records that a subclass builds once, on first use
    (:meth:`_built`); ``batch + list`` and ``list + batch`` give lists, as they did when
    tasks were handed (or returned) plain lists of records."""

    __slots__ = ()

    def _built(self) -> list[R]:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> R: ...

    @overload
    def __getitem__(self, index: slice) -> list[R]: ...

    def __getitem__(self, index: int | slice) -> R | list[R]:
        return self._built()[index]

    def __iter__(self) -> Iterator[R]:
        return iter(self._built())

    def __reversed__(self) -> Iterator[R]:
        return reversed(self._built())

    def __eq__(self, other: object) -> bool:
        """Equal to a batch of its kind or a list of equal records, in the same order."""
        if isinstance(other, (type(self), list)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._built()!r})"

    def __add__(self, other: object) -> list[Any]:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return list(self) + list(other)
        return NotImplemented

    def __radd__(self, other: object) -> list[Any]:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return list(other) + list(self)
        return NotImplemented


class SinkRecordBatch(_BuiltOnFirstUse[SinkRecord]):
    """The records of one ``put()``: a read-only sequence of :class:`SinkRecord`, built on
    first use, whose values can also be read as one column.

    The runtime makes these; a task may also be given a plain list (tests, other runtimes),
    so code that uses :attr:`values` checks ``isinstance(records, SinkRecordBatch)`` first.
    """

    __slots__ = ("_size", "_values", "_build", "_records")

    def __init__(self, values: Sequence[Any], build: Callable[[], list[SinkRecord]]) -> None:
        """``values``: each record's value, in order; ``build``: makes the records (called
        at most once, on first use; it must return ``len(values)`` records whose values are
        ``values``)."""
        self._size = len(values)
        self._values: Sequence[Any] | None = values
        self._build: Callable[[], list[SinkRecord]] | None = build
        self._records: list[SinkRecord] | None = None

    @classmethod
    def of(cls, records: Sequence[SinkRecord]) -> SinkRecordBatch:
        """A batch of records already built."""
        batch = cls((), list)
        batch._size = len(records)
        batch._values = None
        batch._build = None
        batch._records = list(records)
        return batch

    @property
    def values(self) -> Sequence[Any]:
        """Every record's ``value``, in order, without building records that were not
        built yet: a tuple, or the converter's own :class:`Utf8Texts` (both read-only: the
        batch cannot be changed through them)."""
        records = self._records
        if records is not None:
            return tuple([record.value for record in records])
        values = self._values
        if type(values) is Utf8Texts:
            return values
        return tuple(values or ())

    def _built(self) -> list[SinkRecord]:
        records = self._records
        if records is None:
            assert self._build is not None
            records = self._build()
            if len(records) != self._size:
                raise ValueError(
                    f"SinkRecordBatch: {len(records)} records built for {self._size} values"
                )
            self._records, self._build, self._values = records, None, None
        return records

    def __len__(self) -> int:
        return self._size


class SourceRecordBatch(_BuiltOnFirstUse[SourceRecord]):
    """Records of one ``poll()`` that share their source partition, topic, Kafka partition,
    schemas, key and timestamp and carry no headers, given by column: a value and a source
    offset per record. A read-only sequence of :class:`SourceRecord` (built on first use,
    equal to ``SourceRecord(source_partition, source_offsets[i], topic, kafka_partition,
    key_schema, key, value_schema, values[i], timestamp)``).

    ``source_offsets`` may be any sequence (a task can compute offsets on demand: the runtime
    reads only the last one unless it needs the records); None when the records have none.
    ``values`` may be a :class:`Utf8Texts` (text read as UTF-8 bytes: StringConverter then
    produces those bytes without decoding them).
    The shared ``key`` is shared by every record built, so it must not be changed in place.
    """

    __slots__ = (
        "source_partition",
        "source_offsets",
        "topic",
        "kafka_partition",
        "key_schema",
        "key",
        "value_schema",
        "values",
        "timestamp",
        "_records",
    )

    def __init__(
        self,
        source_partition: Mapping[str, Any] | None,
        source_offsets: Sequence[Mapping[str, Any] | None] | None,
        topic: str,
        values: Sequence[Any],
        *,
        kafka_partition: int | None = None,
        key_schema: Schema | None = None,
        key: object = None,
        value_schema: Schema | None = None,
        timestamp: int | None = None,
    ) -> None:
        """Make a batch (columns are taken as they are: do not change them afterwards).

        Raises:
            ValueError: If ``source_offsets`` and ``values`` differ in length.
        """
        if source_offsets is not None and len(source_offsets) != len(values):
            raise ValueError(
                f"SourceRecordBatch for topic {topic!r}: {len(source_offsets)} source offsets "
                f"for {len(values)} values"
            )
        self.source_partition = source_partition
        self.source_offsets = source_offsets
        self.topic = topic
        self.kafka_partition = kafka_partition
        self.key_schema = key_schema
        self.key = key
        self.value_schema = value_schema
        self.values = values
        self.timestamp = timestamp
        self._records: list[SourceRecord] | None = None

    def _built(self) -> list[SourceRecord]:
        records = self._records
        if records is None:
            offsets = self.source_offsets
            if offsets is None:
                offsets = [None] * len(self.values)
            partition, topic, kafka_partition = (
                self.source_partition,
                self.topic,
                self.kafka_partition,
            )
            key_schema, key, value_schema, timestamp = (
                self.key_schema,
                self.key,
                self.value_schema,
                self.timestamp,
            )
            records = self._records = [
                SourceRecord(
                    partition,
                    offset,
                    topic,
                    kafka_partition,
                    key_schema,
                    key,
                    value_schema,
                    value,
                    timestamp,
                )
                for offset, value in zip(offsets, self.values, strict=True)
            ]
        return records

    @property
    def last_source_offset(self) -> Mapping[str, Any] | None:
        """The last record's source offset (None for an empty batch or no offsets)."""
        offsets = self.source_offsets
        return offsets[-1] if offsets else None

    def __len__(self) -> int:
        return len(self.values)


class Utf8Texts(Sequence[str]):
    """A read-only sequence of ``str`` held as their UTF-8 encoding, each decoded only when
    something reads the texts (all of them at once, on first use).

    Only valid UTF-8 is taken, so :attr:`encoded` is always exactly what encoding the texts
    as UTF-8 gives: a converter that would encode them (StringConverter, UTF-8) and a task
    that would write them encoded (FileStreamSink) take the bytes instead, and a column of
    text that arrived as bytes leaves as the same bytes without a decode and an encode per
    value. Everything else sees a sequence of ``str``, equal to a list of the same texts.
    """

    __slots__ = ("_encoded", "_texts")

    def __init__(self, encoded: Iterable[bytes]) -> None:
        """The texts whose UTF-8 encodings are ``encoded`` (``bytes`` each).

        Raises:
            TypeError: If an entry is not ``bytes``, naming its index.
            UnicodeDecodeError: If an entry is not valid UTF-8 (its message names the entry's
                index).
        """
        items = list(encoded)
        try:
            # One C-level pass, and the type check with it (bytes.isascii takes bytes only):
            # a third of joining the column to check it whole (2,000 x 1 KiB).
            ascii_only = all(map(bytes.isascii, items))
        except TypeError:
            index = next(i for i, item in enumerate(items) if type(item) is not bytes)
            raise TypeError(
                f"Utf8Texts: entry {index} is {type(items[index]).__name__}, not bytes"
            ) from None
        # Joined with an ASCII separator, which no character can span: the column is valid
        # exactly when every entry is (joined without one, a character split across two
        # entries passed).
        if not ascii_only and not _valid_utf8(b"\n".join(items)):
            for index, item in enumerate(items):
                try:
                    item.decode()
                except UnicodeDecodeError as exc:
                    raise UnicodeDecodeError(
                        exc.encoding, exc.object, exc.start, exc.end, f"entry {index}: {exc.reason}"
                    ) from None
        self._encoded = items
        self._texts: list[str] | None = None

    @classmethod
    def lines(cls, data: bytes, prefix: bytes = b"") -> tuple[Utf8Texts, bytes] | None:
        """The complete lines of ``prefix + data`` (each ending in ``\\n``, given without it)
        and what follows the last newline (``b""`` when ``data`` ends with one); None when
        those lines are not valid UTF-8. One check of the whole buffer; a newline never splits
        a character. (Only ``\\n`` ends a line: a ``\\r`` before it stays in the line.)

        ``prefix`` is what an earlier buffer left after its last newline. When both are ASCII
        (and ``prefix`` has no newline) it joins the first line only, so a large ``data`` is
        never copied whole to add it: with 1 MiB buffers of 1 KiB lines, ~30 ns a line less
        than ``lines(prefix + data)``."""
        if type(data) is not bytes:
            data = bytes(data)  # a bytearray would split into bytearrays
        if prefix:
            if type(prefix) is not bytes:
                prefix = bytes(prefix)
            if b"\n" in prefix or not (prefix.isascii() and data.isascii()):
                # Lines in the prefix, or a character that may straddle the two: as one buffer.
                return cls.lines(prefix + data)
        end = data.rfind(b"\n") + 1
        if not end:  # no complete line yet: nothing to check
            return cls._of_valid([]), prefix + data
        if not prefix and not data.isascii():
            try:
                codecs.utf_8_decode(memoryview(data)[:end], "strict", True)
            except UnicodeDecodeError:
                return None
        sample = min(len(data), _SAMPLE_BYTES)
        if data.count(b"\n", 0, sample) * _LONG_LINE_BYTES >= sample:
            pieces = data.split(b"\n")
            rest = pieces.pop()
        else:  # long lines: found with memchr, then copied without their newline
            pieces = io.BytesIO(data).readlines()
            rest = pieces.pop() if end < len(data) else b""
            pieces = list(map(_without_last_byte, pieces))
        if prefix:
            pieces[0] = prefix + pieces[0]
        return cls._of_valid(pieces), rest

    @classmethod
    def _of_valid(cls, items: list[bytes]) -> Utf8Texts:
        texts = object.__new__(cls)
        texts._encoded = items
        texts._texts = None
        return texts

    @property
    def encoded(self) -> list[bytes]:
        """The texts' UTF-8 encodings, in order (a new list each time)."""
        return self._encoded.copy()

    def _decoded(self) -> list[str]:
        texts = self._texts
        if texts is None:
            texts = self._texts = list(map(bytes.decode, self._encoded))
        return texts

    def __len__(self) -> int:
        return len(self._encoded)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Utf8Texts: ...

    def __getitem__(self, index: int | slice) -> str | Utf8Texts:
        """A text; or, for a slice, a :class:`Utf8Texts` of those texts (nothing decoded)."""
        if isinstance(index, slice):
            return self._of_valid(self._encoded[index])
        return self._decoded()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self._decoded())

    def __reversed__(self) -> Iterator[str]:
        return reversed(self._decoded())

    def __contains__(self, value: object) -> bool:
        return value in self._decoded()

    def __eq__(self, other: object) -> bool:
        """Equal to another :class:`Utf8Texts`, list or tuple of the same texts, in order."""
        if type(other) is Utf8Texts:
            return self._encoded == other._encoded
        if isinstance(other, (list, tuple)):
            return self._decoded() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: object) -> list[Any]:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return [*self._decoded(), *other]
        return NotImplemented

    def __radd__(self, other: object) -> list[Any]:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return [*other, *self._decoded()]
        return NotImplemented

    def __repr__(self) -> str:
        return f"Utf8Texts({self._encoded!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Utf8Texts, (self._encoded,))


# bytes.split() finds a one-byte separator by comparing byte after byte; BytesIO.readlines()
# uses memchr. For lines longer than about this, finding them with readlines() and copying
# each without its newline costs less (1 KiB lines: ~175 ns against ~365 ns; 100 B: ~65
# against ~50). The average is judged from the first _SAMPLE_BYTES of a buffer.
_LONG_LINE_BYTES = 256
_SAMPLE_BYTES = 4096
_without_last_byte = itemgetter(slice(None, -1))


def _valid_utf8(data: bytes) -> bool:
    """Whether ``data`` is valid UTF-8: ASCII is told by one fast scan, the rest by a decode."""
    if data.isascii():
        return True
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True
