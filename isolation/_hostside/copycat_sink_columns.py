"""A sink put() converted a column at a time, its records built only when read (stdlib +
plugin_api only; imported by the plugin host as a top-level module).

The usual put() batch (one topic, no headers) goes through here: each converter sees a whole
column at once (``Converter.to_connect_data_batch``) and, without transforms, the task gets a
:class:`~plugin_api.SinkRecordBatch` whose records are built only if the task reads one (a
task that writes values only, such as FileStreamSink, reads :attr:`SinkRecordBatch.values`
and never pays for them: ~0.2 us per record here, more than a bare consumer loop's whole
Python work per 100 B record). With the data path in the host the batch is the consumer's
own messages (:class:`copycat_batch.MessageBatch`), and only the fields a put() needs are
read from them: values always; keys too unless the key converter cannot fail
(``Converter.to_connect_data_never_fails``: StringConverter, ByteArrayConverter, or no
converter), in which case they are read and converted with the offsets, partitions and
timestamps, when the records are built. Headers likewise are read before put() only to prove
there are none, unless no converter reads them and the header converter cannot fail
(:func:`headers_later`, the usual StringConverter and SimpleHeaderConverter): then a batch
with headers qualifies too, and its headers are read and converted when the records are built.

Anything else (headers otherwise, several topics, a converter refusing a column) returns None,
and the runner converts record by record, attributing a failure to its record.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import Any

from copycat_batch import (
    ConsumedBatch,
    MessageBatch,
    _none_or_list,
    _shared,
    field,
    timestamp_columns,
)

from plugin_api import (
    ConnectException,
    Converter,
    HeaderConverter,
    Headers,
    SinkRecord,
    SinkRecordBatch,
    TimestampType,
    Utf8Texts,
)

_TIMESTAMP_TYPES = list(TimestampType)
# Values that records may share: nothing a task or SMT does to one record changes another.
_IMMUTABLE = frozenset({type(None), str, bytes, int, float, bool})
_first = itemgetter(0)
_second = itemgetter(1)

# What a record needs beyond its key and value, read when the records are built:
# (partitions, offsets, timestamps, timestamp types), each a column or a shared value.
Fields = tuple[Any, Sequence[int], Any, Any]


class Prepared:
    """One batch's topic and values, and how to read its keys, its headers (raw, per record; None
    when no record has any) and the rest (:data:`Fields`)."""

    __slots__ = ("topic", "size", "keys", "values", "headers", "fields")

    def __init__(
        self,
        topic: str,
        size: int,
        keys: Callable[[], Any],
        values: list[Any],
        headers: Callable[[], list[Any] | None],
        fields: Callable[[], Fields],
    ) -> None:
        self.topic = topic
        self.size = size
        self.keys = keys  # gives a list, or one value shared by every record
        self.values = values
        self.headers = headers
        self.fields = fields


def headers_later(
    key_converter: Converter | None,
    value_converter: Converter | None,
    header_converter: HeaderConverter | None,
) -> bool:
    """Whether a batch's headers may be left unread until its records are built: neither
    converter reads them (``Converter.to_connect_data_reads_headers``) and converting them
    cannot fail (``HeaderConverter.to_connect_header_never_fails``, or no header converter)."""

    def reads(converter: Converter | None) -> bool:
        if converter is None:
            return False
        return getattr(converter, "to_connect_data_reads_headers", True) is not False

    never_fails = header_converter is None or (
        getattr(header_converter, "to_connect_header_never_fails", False) is True
    )
    return never_fails and not reads(key_converter) and not reads(value_converter)


def _no_headers() -> None:
    return None


def prepare(batch: ConsumedBatch | MessageBatch, later: bool) -> Prepared | None:
    """The batch's columns if it qualifies (one topic, not empty, and no headers unless
    ``later``: :func:`headers_later`), else None."""
    if type(batch) is MessageBatch:
        return _prepare_messages(batch, later)
    assert isinstance(batch, ConsumedBatch)
    topic = batch.topics
    if type(topic) is not str or not batch.size:
        return None
    headers = batch.headers
    if headers is not None and not later:
        return None
    return Prepared(
        topic,
        batch.size,
        lambda: batch.keys,
        batch.values,
        lambda: headers,
        lambda: (batch.partitions, batch.offsets, batch.timestamps, batch.timestamp_types),
    )


def _prepare_messages(batch: MessageBatch, later: bool) -> Prepared | None:
    messages = batch.messages
    if batch.topic is None:
        return prepare(batch.columns, later)
    if not batch.size:
        return None

    def headers() -> list[Any] | None:
        column: list[Any] | None = _none_or_list(field(messages, "headers"))
        return column

    if not later and headers() is not None:
        return None

    def fields() -> Fields:
        partition = batch.partition
        if partition is None:
            partition = _shared(field(messages, "partition"))
        timestamps, types = timestamp_columns(messages)
        return partition, batch.offsets(), timestamps, types

    return Prepared(
        batch.topic,
        batch.size,
        lambda: _shared(field(messages, "key")),
        field(messages, "value"),
        headers if later else _no_headers,
        fields,
    )


class BatchSizeError(ConnectException):
    """A converter's batch method returned a column of the wrong length (zip() would
    silently drop records): fails the put(), naming the method."""


def _sized(converter: Any, method: str, answer: Any, size: int, topic: str) -> Sequence[Any]:
    """``answer`` as a list (or the converter's :class:`~plugin_api.Utf8Texts`, kept
    undecoded), checked to have ``size`` entries."""
    column: Sequence[Any] = (
        answer if type(answer) is list or type(answer) is Utf8Texts else list(answer)
    )
    if len(column) != size:
        raise BatchSizeError(
            f"{type(converter).__qualname__}.{method} returned {len(column)} results for "
            f"{size} records of topic {topic}"
        )
    return column


def _convert_column(
    converter: Converter | None, topic: str, data: list[Any], headers: list[Headers | None]
) -> Sequence[Any]:
    """``(schema, value)`` per entry of ``data``: the converter's batch method where it has one
    (a converter need not derive from plugin_api's Converter), else one call per entry."""
    if converter is None:
        return list(zip(itertools.repeat(None), data))
    batch = getattr(converter, "to_connect_data_batch", None)
    if batch is not None:
        pairs = batch(topic, data, headers)
        return _sized(converter, "to_connect_data_batch", pairs, len(data), topic)
    convert = converter.to_connect_data
    return [convert(topic, value, h) for value, h in zip(data, headers, strict=True)]


def _convert_values(
    converter: Converter | None, topic: str, data: list[Any], headers: list[Headers | None]
) -> tuple[Any, Sequence[Any]]:
    """``(schemas, values)``: ``schemas`` one per value (a list) or one for all (not a list),
    from ``Converter.to_connect_data_column`` where the converter has it and answers."""
    if converter is None:
        return None, data
    column = getattr(converter, "to_connect_data_column", None)
    if column is not None:
        answer = column(topic, data, headers)
        if answer is not None:
            schema, values = answer
            return schema, _sized(converter, "to_connect_data_column", values, len(data), topic)
    pairs = _convert_column(converter, topic, data, headers)
    return list(map(_first, pairs)), list(map(_second, pairs))


class LazyKeys:
    """The key pairs of a batch whose key converter cannot fail, read and converted when the
    records are built (a task that reads only the values never pays for them)."""

    __slots__ = ("prepared", "converter")

    def __init__(self, prepared: Prepared, converter: Converter | None) -> None:
        self.prepared = prepared
        self.converter = converter

    def pairs(self) -> Any:
        """The key pairs :func:`convert` would have given."""
        return _key_pairs(self.prepared, self.converter)


def _key_pairs(prepared: Prepared, kc: Converter | None) -> Any:
    """``(schema, key)`` per record (a list), or one pair (a tuple) for all."""
    topic, size, keys = prepared.topic, prepared.size, prepared.keys()
    if type(keys) is list:
        return _convert_column(kc, topic, keys, [None] * size)
    if kc is None:
        return (None, keys)
    # One key for the whole batch (usually none): converters are pure functions of their input
    # (plugin_api.Converter), so it is converted once, and shared by the records if immutable
    # (a task may change a record's map in place).
    pair = kc.to_connect_data(topic, keys, None)
    if type(pair[1]) in _IMMUTABLE:
        return tuple(pair)  # a plain tuple: one pair for all (a column is a list)
    return _convert_column(kc, topic, [keys] * size, [None] * size)


def convert(
    prepared: Prepared, key_converter: Converter | None, value_converter: Converter | None
) -> tuple[Any, Any, Sequence[Any]]:
    """``(key pairs, value schemas, values)``: key pairs are ``(schema, key)`` per record, one
    pair (a tuple) for all, or :class:`LazyKeys` when the key converter cannot fail (or there
    is none); value schemas one per record (a list) or one for all. Raises whatever a
    converter raised (:class:`BatchSizeError` for a column of the wrong size)."""
    kc = key_converter
    key_pairs: Any
    if kc is None or getattr(kc, "to_connect_data_never_fails", False) is True:
        key_pairs = LazyKeys(prepared, kc)
    else:
        key_pairs = _key_pairs(prepared, kc)
    no_headers: list[Headers | None] = [None] * prepared.size
    schemas, values = _convert_values(value_converter, prepared.topic, prepared.values, no_headers)
    return key_pairs, schemas, values


def _column(value: Any, size: int) -> Iterable[Any]:
    return value if type(value) is list or type(value) is range else itertools.repeat(value, size)


def connect_headers(
    converter: HeaderConverter | None, topic: str, raw: Sequence[tuple[str, Any]] | None
) -> Headers | None:
    """A record's headers as the consumer gave them (``(key, bytes)`` pairs, or None), converted
    (None when there are none); raises whatever the converter raised."""
    if not raw:
        return None
    headers = Headers()
    for key, data in raw:
        if converter is None:
            headers.add(key, data)
        else:
            converted = converter.to_connect_header(topic, key, data)
            headers.add(key, converted.value, converted.schema)
    return headers


def build(
    prepared: Prepared,
    key_pairs: Any,
    schemas: Any,
    values: Sequence[Any],
    header_converter: HeaderConverter | None,
) -> list[SinkRecord]:
    """The SinkRecords, built without a constructor call (a third of the per-record cost
    otherwise); tests/unit/isolation/test_sink_columns.py checks every slot is set as the
    constructor sets it. Headers are converted here (:func:`headers_later`)."""
    topic, size = prepared.topic, prepared.size
    partitions, offsets, timestamps, types = prepared.fields()
    raw_headers = prepared.headers()
    header_column: Iterable[Headers | None]
    if raw_headers is None:
        header_column = itertools.repeat(None, size)
    else:
        header_column = [connect_headers(header_converter, topic, raw) for raw in raw_headers]
    type_column: Iterable[Any]
    if type(types) is list:
        type_column = [_TIMESTAMP_TYPES[t] for t in types]
    else:
        type_column = itertools.repeat(_TIMESTAMP_TYPES[types], size)
    if type(key_pairs) is LazyKeys:
        key_pairs = key_pairs.pairs()
    if type(key_pairs) is tuple:
        key_pairs = itertools.repeat(key_pairs, size)
    records: list[SinkRecord] = []
    new, cls, append = object.__new__, SinkRecord, records.append
    columns = zip(
        _column(partitions, size),
        offsets,
        _column(timestamps, size),
        type_column,
        key_pairs,
        _column(schemas, size),
        values,
        header_column,
        strict=True,
    )
    for partition, offset, timestamp, timestamp_type, (
        key_schema,
        key,
    ), value_schema, value, headers in columns:
        record = new(cls)
        record.topic = topic
        record.kafka_partition = partition
        record.key_schema = key_schema
        record.key = key
        record.value_schema = value_schema
        record.value = value
        record.timestamp = timestamp
        record._headers = headers
        record.kafka_offset = offset
        record.timestamp_type = timestamp_type
        record.original_topic = topic
        record.original_kafka_partition = partition
        record.original_kafka_offset = offset
        append(record)
    return records


def deferred(
    prepared: Prepared,
    key_pairs: Any,
    schemas: Any,
    values: Sequence[Any],
    header_converter: HeaderConverter | None,
) -> SinkRecordBatch:
    """The batch a task without transforms gets: values now, records when first read."""
    return SinkRecordBatch(
        values, lambda: build(prepared, key_pairs, schemas, values, header_converter)
    )
