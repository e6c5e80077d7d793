"""Consumed records as they cross from the worker to a sink task's plugin host: by column.

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


class ConsumedBatch:
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

        One list comprehension per field: a method call per message and field is the least
        the consumer's API allows, and a comprehension is the cheapest way to make it.
        """
        if not messages:
            return cls(0, [], [], [], [], [], [], [], [])
        stamps = [m.timestamp() for m in messages]
        types = _shared([stamp[0] for stamp in stamps])
        if types == 0:  # TIMESTAMP_NOT_AVAILABLE throughout
            timestamps: Any = None
        elif type(types) is int:
            timestamps = [stamp[1] for stamp in stamps]
        else:
            timestamps = [stamp[1] if stamp[0] else None for stamp in stamps]
        return cls(
            len(messages),
            _shared([m.topic() for m in messages]),
            _shared([m.partition() for m in messages]),
            [m.offset() for m in messages],
            timestamps,
            types,
            _shared([m.key() for m in messages]),
            [m.value() for m in messages],
            _none_or_list([m.headers() for m in messages]),
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

    def __len__(self) -> int:
        return self.size

    def column(self, name: str) -> Iterable[Any]:
        """One field per record, in order (a shared value repeated)."""
        values = getattr(self, name)
        return values if type(values) is list else repeat(values, self.size)

    def rows(self) -> Iterator[Row]:
        """One ``(topic, partition, offset, timestamp, timestamp type, key, value, headers)``
        tuple per record, in order."""
        return zip(
            self.column("topics"),
            self.column("partitions"),
            self.offsets,
            self.column("timestamps"),
            self.column("timestamp_types"),
            self.column("keys"),
            self.values,
            self.column("headers"),
            strict=True,
        )

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
