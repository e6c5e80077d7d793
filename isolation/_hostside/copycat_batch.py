"""Records as they cross between the worker and a task's plugin host: by column.

Consumed records go to a sink task's host as a :class:`ConsumedBatch`; a source task's converted
records come back as a :class:`ProducedBatch`.

Imported by the worker (as ``isolation._hostside.copycat_batch``) and by the plugin host (as the
top-level ``copycat_batch``), so it depends on the standard library only.

A put() batch used to cross as one 8-tuple per record. Pickling and unpickling those tuples,
and building them from the consumer's messages, was most of the per-record cost of a sink with
small records. A :class:`ConsumedBatch` keeps one column per field instead, and a column whose
value is the same for every record (the topic, the partition, no key, no headers: the usual
case) is stored once. What crosses the channel is the plain tuple of :meth:`ConsumedBatch.wire`
(both ends ship together, so the layout carries no version).

A column is either a list with one entry per record, or a single value shared by all records;
shared values are never lists, so the two cannot be confused.

The source side is columnar for the same reason, and because a task whose data path runs in
its host (no pickling at all) still paid ~0.3 us per 100 B record for building a row tuple and
taking it apart again before ``produce()``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import repeat
from typing import Any

# Row layout of :meth:`ConsumedBatch.rows` (and of the error reports that name records).
Row = tuple[str, int, int, "int | None", int, "bytes | None", "bytes | None", Any]


def _shared(column: list[Any]) -> Any:
    """The column's single value when every entry is that value (compared by ==), else the
    column itself."""
    first = column[0]
    if type(first) is list:
        return column
    if first is None:
        return None if column.count(None) == len(column) else column
    return first if column.count(first) == len(column) else column


def _none_or_list(column: list[Any]) -> list[Any] | None:
    """None when no record has the field (header lists are lists: never shared otherwise)."""
    return None if column.count(None) == len(column) else column


def field(messages: Sequence[Any], name: str) -> list[Any]:
    """Field ``name`` of every message (not empty): the message class's own accessor mapped
    over them. For confluent-kafka's messages that is ~5 ns a message cheaper than calling the
    method on each one in a comprehension (~20-30 ns): no attribute lookup per message. The
    messages of one consume() are all of one class."""
    return list(map(getattr(type(messages[0]), name), messages))


def timestamp_columns(messages: Sequence[Any]) -> tuple[Any, Any]:
    """``(timestamps, timestamp types)`` of confluent-kafka messages, as columns (a type
    shared by all is stored once; no timestamp at all is None)."""
    stamps = field(messages, "timestamp")
    types = _shared([stamp[0] for stamp in stamps])
    if types == 0:  # TIMESTAMP_NOT_AVAILABLE throughout
        return None, types
    if type(types) is int:
        return [stamp[1] for stamp in stamps], types
    return [stamp[1] if stamp[0] else None for stamp in stamps], types


class _Columns:
    """What both batch classes do with their columns (each sets ``size`` and its columns)."""

    __slots__ = ()
    size: int

    def __len__(self) -> int:
        return self.size

    def column(self, name: str) -> Iterable[Any]:
        """One field per record, in order (a shared value, or None, repeated)."""
        values = getattr(self, name)
        return values if type(values) is list else repeat(values, self.size)

    def _zip(self, names: Sequence[str], *first: Iterable[Any]) -> Iterator[Any]:
        """One tuple per record: ``first`` (iterables), then the columns ``names``."""
        return zip(*first, *(self.column(name) for name in names), strict=True)


# The columns of a :data:`Row`, in its order.
ROW_FIELDS = (
    "topics",
    "partitions",
    "offsets",
    "timestamps",
    "timestamp_types",
    "keys",
    "values",
    "headers",
)
# The columns of a :data:`ProducedRow` after its sequence number, in its order.
PRODUCED_ROW_FIELDS = ("topics", "partitions", "keys", "values", "headers", "timestamps")


class ConsumedBatch(_Columns):
    """Records consumed in one go, column by column (see the module docstring)."""

    __slots__ = (
        "size",
        "topics",
        "partitions",
        "offsets",
        "timestamps",
        "timestamp_types",
        "keys",
        "values",
        "headers",
    )

    def __init__(
        self,
        size: int,
        topics: Any,
        partitions: Any,
        offsets: list[int],
        timestamps: Any,
        timestamp_types: Any,
        keys: Any,
        values: list[Any],
        headers: Any,
    ) -> None:
        self.size = size
        self.topics = topics
        self.partitions = partitions
        self.offsets = offsets
        self.timestamps = timestamps
        self.timestamp_types = timestamp_types
        self.keys = keys
        self.values = values
        self.headers = headers

    @classmethod
    def from_messages(cls, messages: Sequence[Any]) -> ConsumedBatch:
        """Columns of confluent-kafka messages that carry no error (the caller filters those).

        One :func:`field` per field: a method call per message and field is the least the
        consumer's API allows.
        """
        if not messages:
            return cls(0, [], [], [], [], [], [], [], [])
        timestamps, types = timestamp_columns(messages)
        return cls(
            len(messages),
            _shared(field(messages, "topic")),
            _shared(field(messages, "partition")),
            field(messages, "offset"),
            timestamps,
            types,
            _shared(field(messages, "key")),
            field(messages, "value"),
            _none_or_list(field(messages, "headers")),
        )

    @classmethod
    def from_rows(cls, rows: Iterable[Row]) -> ConsumedBatch:
        """The batch of ``(topic, partition, offset, timestamp, timestamp type, key, value,
        headers)`` rows, in their order."""
        rows = list(rows)
        if not rows:
            return cls(0, [], [], [], [], [], [], [], [])
        topics, partitions, offsets, timestamps, types, keys, values, headers = (
            list(column) for column in zip(*rows, strict=True)
        )
        return cls(
            len(rows),
            _shared(topics),
            _shared(partitions),
            offsets,
            _shared(timestamps),
            _shared(types),
            _shared(keys),
            values,
            _none_or_list(headers),
        )

    def wire(self) -> tuple[Any, ...]:
        """The plain tuple that crosses the channel (pickles without naming this class, which
        each end imports under a different module name)."""
        return (
            self.size,
            self.topics,
            self.partitions,
            self.offsets,
            self.timestamps,
            self.timestamp_types,
            self.keys,
            self.values,
            self.headers,
        )

    @classmethod
    def from_wire(cls, wire: Sequence[Any]) -> ConsumedBatch:
        return cls(*wire)

    def rows(self) -> Iterator[Row]:
        """One ``(topic, partition, offset, timestamp, timestamp type, key, value, headers)``
        tuple per record, in order."""
        return self._zip(ROW_FIELDS)

    def positions(self) -> dict[tuple[str, int], int]:
        """The offset after the last record of each topic partition in the batch."""
        if not self.size:
            return {}
        if type(self.topics) is not list and type(self.partitions) is not list:
            return {(self.topics, self.partitions): self.offsets[-1] + 1}
        return {
            (topic, partition): offset + 1
            for topic, partition, offset in zip(
                self.column("topics"), self.column("partitions"), self.offsets, strict=True
            )
        }

    def without(
        self, partitions: set[tuple[str, int]]
    ) -> tuple[ConsumedBatch, dict[tuple[str, int], int]]:
        """The batch without the records of ``partitions``, and the first offset dropped of
        each partition that had any."""
        keep: list[Row] = []
        first: dict[tuple[str, int], int] = {}
        for row in self.rows():
            tp = (row[0], row[1])
            if tp in partitions:
                first.setdefault(tp, row[2])
            else:
                keep.append(row)
        if not first:
            return self, first
        return ConsumedBatch.from_rows(keep), first


# Row layout of :meth:`ProducedBatch.rows`: what the worker produces for one source record.
ProducedRow = tuple[int, "str | None", "int | None", Any, Any, Any, "int | None"]


class ProducedBatch(_Columns):
    """One ``poll()`` of a source task, converted, column by column (see the module docstring).

    ``seq`` is the first record's sequence number (the rest follow on: a task's acks name
    records by it). ``topics``: a record that the SMT chain dropped, or whose tolerated failure
    was reported, has topic None (its source offset is not committed). ``keys`` and ``headers``
    are None when no record has one; ``values`` is always a list.
    """

    __slots__ = ("size", "seq", "topics", "partitions", "keys", "values", "headers", "timestamps")

    def __init__(
        self,
        size: int,
        seq: int,
        topics: Any,
        partitions: Any,
        keys: list[Any] | None,
        values: list[Any],
        headers: list[Any] | None,
        timestamps: Any,
    ) -> None:
        self.size = size
        self.seq = seq
        self.topics = topics
        self.partitions = partitions
        self.keys = keys
        self.values = values
        self.headers = headers
        self.timestamps = timestamps

    @classmethod
    def of_columns(
        cls,
        seq: int,
        topics: list[Any],
        partitions: list[Any],
        keys: list[Any],
        values: list[Any],
        headers: list[Any] | None,
        timestamps: list[Any],
    ) -> ProducedBatch:
        """The batch of these per-record columns (equal lengths; ``headers`` None: no record
        has any), each stored shared where it can be."""
        return cls(
            len(values),
            seq,
            _shared(topics) if values else None,
            _shared(partitions) if values else None,
            _none_or_list(keys) if values else None,
            values,
            _none_or_list(headers) if values and headers is not None else None,
            _shared(timestamps) if values else None,
        )

    def wire(self) -> tuple[Any, ...]:
        """The plain tuple that crosses the channel (see :meth:`ConsumedBatch.wire`)."""
        return (
            self.size,
            self.seq,
            self.topics,
            self.partitions,
            self.keys,
            self.values,
            self.headers,
            self.timestamps,
        )

    @classmethod
    def from_wire(cls, wire: Sequence[Any]) -> ProducedBatch:
        return cls(*wire)

    def slice(self, start: int, end: int) -> ProducedBatch:
        """Records ``start`` to ``end`` (exclusive) as a batch of their own: an exactly-once
        task's transaction boundaries fall between records (shared columns stay shared)."""

        def part(column: Any) -> Any:
            return column[start:end] if type(column) is list else column

        return ProducedBatch(
            end - start,
            self.seq + start,
            part(self.topics),
            part(self.partitions),
            part(self.keys),
            self.values[start:end],
            part(self.headers),
            part(self.timestamps),
        )

    def rows(self) -> Iterator[ProducedRow]:
        """One ``(seq, topic, partition, key, value, headers, timestamp)`` tuple per record."""
        return self._zip(PRODUCED_ROW_FIELDS, range(self.seq, self.seq + self.size))


# First entry of a :class:`MessageBatch`'s wire, where a :class:`ConsumedBatch`'s has its size
# (an int), so :meth:`ConsumedBatch.from_wire` tells them apart.
MESSAGES = "messages"


class MessageBatch:
    """Consumed records as the consumer's own message objects, read only where needed.

    For a channel that passes objects rather than bytes (the data path in the plugin host,
    ``isolation/direct.py``): the sink runner reads the fields a put() needs straight from the
    messages, and nothing builds a column of a field no one reads. ``topic`` and
    ``partition`` are the topic and partition of every message when the consumer knows them
    to be shared (one topic subscribed, one partition assigned), else None. Anything else
    (rows for error reports, records taken back) uses :attr:`columns`, the
    :class:`ConsumedBatch` of the same messages, made on first use.
    """

    __slots__ = ("messages", "size", "topic", "partition", "_columns")

    def __init__(self, messages: list[Any], topic: str | None, partition: int | None) -> None:
        self.messages = messages
        self.size = len(messages)
        self.topic = topic
        self.partition = partition
        self._columns: ConsumedBatch | None = None

    @property
    def columns(self) -> ConsumedBatch:
        columns = self._columns
        if columns is None:
            columns = self._columns = ConsumedBatch.from_messages(self.messages)
        return columns

    def __len__(self) -> int:
        return self.size

    def wire(self) -> tuple[Any, ...]:
        """What crosses a channel that passes objects (never pickled)."""
        return (MESSAGES, self.messages, self.topic, self.partition)

    def offsets(self) -> Sequence[int]:
        """Each message's offset: a range when they follow on (no gap: the usual case)."""
        messages = self.messages
        first, last = messages[0].offset(), messages[-1].offset()
        # Only within one topic-partition do offsets only ever increase: a batch that shares
        # just its partition number may hold several topics (orders-0 at 0-4, then audit-0 at
        # 0, 1, 7 spans 0-7 in 8 messages, and is no range).
        one_partition = self.topic is not None and self.partition is not None
        if one_partition and last - first + 1 == self.size:
            return range(first, last + 1)
        return field(messages, "offset")

    def positions(self) -> dict[tuple[str, int], int]:
        """As :meth:`ConsumedBatch.positions`."""
        if not self.size:
            return {}
        if self.topic is not None and self.partition is not None:
            return {(self.topic, self.partition): self.messages[-1].offset() + 1}
        return self.columns.positions()

    def rows(self) -> Iterator[Row]:
        return self.columns.rows()

    def without(
        self, partitions: set[tuple[str, int]]
    ) -> tuple[ConsumedBatch | MessageBatch, dict[tuple[str, int], int]]:
        """As :meth:`ConsumedBatch.without` (a batch that loses records becomes columns)."""
        if not self.size:
            return self, {}
        if self.topic is not None and self.partition is not None:
            if (self.topic, self.partition) not in partitions:
                return self, {}
            return ConsumedBatch.from_messages([]), {
                (self.topic, self.partition): self.messages[0].offset()
            }
        batch, first = self.columns.without(partitions)
        return (self, first) if batch is self._columns else (batch, first)


def from_wire(wire: Sequence[Any]) -> ConsumedBatch | MessageBatch:
    """The batch a put() wire carries, of either kind."""
    if type(wire[0]) is str:
        return MessageBatch(*wire[1:])
    return ConsumedBatch(*wire)
