"""Records and headers: the values that flow through connectors, converters and transforms.

Records are on the hot path, so they are plain ``__slots__`` classes rather than
frozen dataclasses (constructing one is ~2.4x cheaper). They are values by
convention: nothing in Copycat mutates a record after handing it on, and
transformations build changed copies with :meth:`ConnectRecord.new_record`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple, TypeVar

from plugin_api._schema import Schema

__all__ = [
    "ConnectRecord",
    "Header",
    "Headers",
    "SinkRecord",
    "SourceRecord",
    "TimestampType",
    "TopicPartition",
]

R = TypeVar("R", bound="ConnectRecord")


class TopicPartition(NamedTuple):
    """A Kafka topic partition."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class TimestampType(enum.Enum):
    """How the timestamp of a consumed Kafka record was assigned."""

    NO_TIMESTAMP_TYPE = "NoTimestampType"
    CREATE_TIME = "CreateTime"
    LOG_APPEND_TIME = "LogAppendTime"


class Header:
    """One record header: a key, a value and the value's optional schema."""

    __slots__ = ("key", "value", "schema")

    def __init__(self, key: str, value: object, schema: Schema | None = None) -> None:
        """Create a header."""
        self.key = key
        self.value = value
        self.schema = schema

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Header):
            return NotImplemented
        return self.key == other.key and self.value == other.value and self.schema == other.schema

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        schema = "" if self.schema is None else f", schema={self.schema!r}"
        return f"Header({self.key!r}, {self.value!r}{schema})"


class Headers:
    """An ordered multi-map of :class:`Header`; several headers may share a key."""

    __slots__ = ("_items",)

    def __init__(self, headers: Iterable[Header | tuple[str, object]] | None = None) -> None:
        """Create headers from ``Header`` objects or ``(key, value)`` tuples."""
        self._items: list[Header] = []
        if headers is not None:
            for item in headers:
                if isinstance(item, Header):
                    self._items.append(item)
                else:
                    key, value = item
                    self._items.append(Header(key, value))

    def add(self, key: str | Header, value: object = None, schema: Schema | None = None) -> Headers:
        """Append a header (or a ``Header`` object); returns ``self`` for chaining."""
        self._items.append(key if isinstance(key, Header) else Header(key, value, schema))
        return self

    def last_with_name(self, key: str) -> Header | None:
        """Return the last header called ``key``, or ``None``."""
        for header in reversed(self._items):
            if header.key == key:
                return header
        return None

    def all_with_name(self, key: str) -> list[Header]:
        """Return every header called ``key``, in order."""
        return [h for h in self._items if h.key == key]

    def remove(self, key: str) -> Headers:
        """Remove every header called ``key``; returns ``self``."""
        self._items = [h for h in self._items if h.key != key]
        return self

    def retain_latest(self, key: str | None = None) -> Headers:
        """Keep only the last header of each key (or of ``key`` only); returns ``self``."""
        seen: set[str] = set()
        kept: list[Header] = []
        for header in reversed(self._items):
            if key is not None and header.key != key:
                kept.append(header)
            elif header.key not in seen:
                seen.add(header.key)
                kept.append(header)
        kept.reverse()
        self._items = kept
        return self

    def clear(self) -> Headers:
        """Remove all headers; returns ``self``."""
        self._items = []
        return self

    def copy(self) -> Headers:
        """Return a shallow copy (the ``Header`` objects are shared; they are values)."""
        new = Headers()
        new._items = list(self._items)
        return new

    def __iter__(self) -> Iterator[Header]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Headers):
            return NotImplemented
        return self._items == other._items

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"


_SLOTS: dict[type, tuple[Callable[[Any], Any], frozenset[str]]] = {}


def _slots_of(cls: type) -> tuple[Callable[[Any], Any], frozenset[str]]:
    """A copier for a record class's slots, and the public attribute names (cached per class).

    The copier is generated code (as ``dataclasses`` generates ``__init__``): plain attribute
    stores run several times faster than a loop of getattr/setattr, and SMTs copy every record.
    """
    found = _SLOTS.get(cls)
    if found is None:
        slots = [slot for klass in cls.__mro__ for slot in klass.__dict__.get("__slots__", ())]
        for slot in slots:
            if not slot.isidentifier():
                raise TypeError(f"unexpected slot name {slot!r} in {cls.__name__}")
        body = "\n".join(f"    new.{slot} = src.{slot}" for slot in slots) or "    pass"
        namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
        exec(f"def copy(src):\n    new = _new(_cls)\n{body}\n    return new", namespace)  # noqa: S102
        public = frozenset("headers" if slot == "_headers" else slot for slot in slots)
        found = _SLOTS[cls] = (namespace["copy"], public)
    return found


_REPLACERS: dict[tuple[Any, ...], Callable[..., Any]] = {}


def _replacer(cls: type, changed: tuple[str, ...]) -> Callable[..., Any]:
    """A function copying a ``cls`` record with the ``changed`` attributes replaced (and the
    headers copied), generated once per class and set of attributes.

    Raises:
        TypeError: If an attribute is not one of the class's.
    """
    _, public = _slots_of(cls)
    unknown = sorted(set(changed) - public)
    if unknown:
        raise TypeError(f"{cls.__name__} has no attribute(s) {unknown}")
    slots = [slot for klass in cls.__mro__ for slot in klass.__dict__.get("__slots__", ())]
    lines = []
    for slot in slots:
        if slot in changed:
            lines.append(f"    new.{slot} = {slot}")
        elif slot == "_headers":
            lines.append("    headers = src._headers")
            lines.append("    new._headers = None if headers is None else headers.copy()")
        else:
            lines.append(f"    new.{slot} = src.{slot}")
    params = "".join(f", {name}" for name in changed)
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    body = "\n".join(lines)
    exec(
        f"def replace(src{params}):\n    new = _new(_cls)\n{body}\n    return new",  # noqa: S102
        namespace,
    )
    replace: Callable[..., Any] = namespace["replace"]
    _REPLACERS[(cls, *changed)] = replace
    return replace


def _as_headers(headers: Headers | Iterable[Header | tuple[str, object]] | None) -> Headers | None:
    if headers is None or isinstance(headers, Headers):
        return headers
    return Headers(headers)


class ConnectRecord:
    """Fields shared by source and sink records.

    Attributes:
        topic: The Kafka topic.
        kafka_partition: The partition, or ``None`` to let the producer choose.
        key_schema: Schema of the key, or ``None`` (schemaless).
        key: The key.
        value_schema: Schema of the value, or ``None`` (schemaless).
        value: The value.
        timestamp: Epoch milliseconds, or ``None``.
        headers: The headers; never ``None``.
    """

    __slots__ = (
        "topic",
        "kafka_partition",
        "key_schema",
        "key",
        "value_schema",
        "value",
        "timestamp",
        "_headers",
    )

    def __init__(
        self,
        topic: str,
        kafka_partition: int | None = None,
        key_schema: Schema | None = None,
        key: object = None,
        value_schema: Schema | None = None,
        value: object = None,
        timestamp: int | None = None,
        headers: Headers | Iterable[Header | tuple[str, object]] | None = None,
    ) -> None:
        """Create a record; ``headers`` may be ``Headers`` or any iterable accepted by it."""
        self.topic = topic
        self.kafka_partition = kafka_partition
        self.key_schema = key_schema
        self.key = key
        self.value_schema = value_schema
        self.value = value
        self.timestamp = timestamp
        self._headers = _as_headers(headers)

    @property
    def headers(self) -> Headers:
        """The record's headers; created empty on first use (most records carry none)."""
        headers = self._headers
        if headers is None:
            headers = self._headers = Headers()
        return headers

    @headers.setter
    def headers(self, value: Headers) -> None:
        self._headers = value

    def _state(self) -> dict[str, Any]:
        state: dict[str, Any] = {}
        for cls in type(self).__mro__:
            for slot in cls.__dict__.get("__slots__", ()):
                name = "headers" if slot == "_headers" else slot
                state[name] = getattr(self, name)
        return state

    def new_record(self: R, **changes: Any) -> R:
        """Return a copy of this record with ``changes`` applied; ``self`` is untouched.

        The headers are copied, so the new record's headers can be changed freely.

        Raises:
            TypeError: If a change names an unknown attribute.
        """
        cls = type(self)
        if "headers" not in changes:
            # Every SMT copies every record: one generated function per (class, changed
            # attributes) does it in plain attribute stores.
            replace = _REPLACERS.get((cls, *changes))
            if replace is None:
                replace = _replacer(cls, tuple(changes))
            return replace(self, **changes)  # type: ignore[no-any-return]
        copy, public = _slots_of(cls)
        if not public.issuperset(changes):
            unknown = sorted(set(changes) - public)
            raise TypeError(f"{cls.__name__} has no attribute(s) {unknown}")
        new: R = copy(self)
        headers = changes.pop("headers")
        new._headers = headers.copy() if isinstance(headers, Headers) else _as_headers(headers)
        for name, value in changes.items():
            setattr(new, name, value)
        return new

    @classmethod
    def copier(cls: type[R], *attributes: str) -> Callable[..., R]:
        """A function ``copy(record, *new_values)`` doing ``record.new_record(**{attribute:
        new value})`` for records of exactly this class, without the keyword handling.

        For code that copies every record (transforms): fetch it once per record class and
        call it positionally. The headers are copied; ``headers`` itself cannot be replaced
        this way (use :meth:`new_record`).

        Raises:
            TypeError: If an attribute is not one of the class's, or is ``headers``.
        """
        if "headers" in attributes:
            raise TypeError("copier() cannot replace headers; use new_record(headers=...)")
        found = _REPLACERS.get((cls, *attributes))
        return found if found is not None else _replacer(cls, attributes)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._state() == other._state()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._state().items())
        return f"{type(self).__name__}({inner})"


class SourceRecord(ConnectRecord):
    """A record produced by a source task.

    Attributes:
        source_partition: Where in the source system the record came from, e.g.
            ``{"filename": "/var/log/app.log"}``; the key of the stored offset.
        source_offset: The position after this record within that partition, e.g.
            ``{"position": 1234}``; stored once the record is written to Kafka.
    """

    __slots__ = ("source_partition", "source_offset")

    def __init__(
        self,
        source_partition: Mapping[str, Any] | None,
        source_offset: Mapping[str, Any] | None,
        topic: str,
        kafka_partition: int | None = None,
        key_schema: Schema | None = None,
        key: object = None,
        value_schema: Schema | None = None,
        value: object = None,
        timestamp: int | None = None,
        headers: Headers | Iterable[Header | tuple[str, object]] | None = None,
    ) -> None:
        """Create a source record."""
        # The base constructor, inlined: sources build one record per line/row/event.
        self.topic = topic
        self.kafka_partition = kafka_partition
        self.key_schema = key_schema
        self.key = key
        self.value_schema = value_schema
        self.value = value
        self.timestamp = timestamp
        self._headers = None if headers is None else _as_headers(headers)
        self.source_partition = source_partition
        self.source_offset = source_offset


class SinkRecord(ConnectRecord):
    """A record consumed from Kafka and handed to a sink task.

    Attributes:
        kafka_offset: The record's offset in its partition.
        timestamp_type: How the timestamp was assigned.
        original_topic: The topic before any transformation renamed it; sink
            tasks report offsets for original topic partitions.
        original_kafka_partition: The partition before transformations.
        original_kafka_offset: The offset before transformations.
    """

    __slots__ = (
        "kafka_offset",
        "timestamp_type",
        "original_topic",
        "original_kafka_partition",
        "original_kafka_offset",
    )

    def __init__(
        self,
        topic: str,
        kafka_partition: int | None,
        key_schema: Schema | None,
        key: object,
        value_schema: Schema | None,
        value: object,
        kafka_offset: int,
        timestamp: int | None = None,
        timestamp_type: TimestampType = TimestampType.NO_TIMESTAMP_TYPE,
        headers: Headers | Iterable[Header | tuple[str, object]] | None = None,
        original_topic: str | None = None,
        original_kafka_partition: int | None = None,
        original_kafka_offset: int | None = None,
    ) -> None:
        """Create a sink record; the ``original_*`` attributes default to the current ones."""
        # The base constructor, inlined: sink records are built once per consumed record.
        self.topic = topic
        self.kafka_partition = kafka_partition
        self.key_schema = key_schema
        self.key = key
        self.value_schema = value_schema
        self.value = value
        self.timestamp = timestamp
        self._headers = headers if headers is None else _as_headers(headers)
        self.kafka_offset = kafka_offset
        self.timestamp_type = timestamp_type
        self.original_topic = topic if original_topic is None else original_topic
        self.original_kafka_partition = (
            kafka_partition if original_kafka_partition is None else original_kafka_partition
        )
        self.original_kafka_offset = (
            kafka_offset if original_kafka_offset is None else original_kafka_offset
        )

    @property
    def original_topic_partition(self) -> TopicPartition:
        """The topic partition the record was consumed from (before transformations)."""
        return TopicPartition(self.original_topic, self.original_kafka_partition)  # type: ignore[arg-type]
