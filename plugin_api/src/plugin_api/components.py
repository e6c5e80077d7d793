"""Pluggable components other than connectors: converters, transforms, predicates, config providers.

Each runs in the plugin host process of the connector that uses it (never in
the worker). Every component is created, then ``configure()``-d once, then
called from a single thread (the task's thread), then ``close()``-d. An
exception escaping a call fails the record or task according to the
connector's ``errors.tolerance`` setting; it never crashes the worker.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import ClassVar, Generic, TypeVar

from plugin_api._schema import Schema, SchemaAndValue
from plugin_api.config import ConfigDef
from plugin_api.records import ConnectRecord, Headers

__all__ = [
    "ConfigData",
    "ConfigProvider",
    "Converter",
    "HeaderConverter",
    "Predicate",
    "Transformation",
    "Versioned",
]

R = TypeVar("R", bound=ConnectRecord)

UNDEFINED_VERSION = "undefined"


class Versioned:
    """Mixin for plugins that report a version (shown by ``GET /connector-plugins``)."""

    def version(self) -> str:
        """Return the plugin version; the default ``"undefined"`` hides it in REST.

        Called in the plugin host at any time, including before ``start()``; must
        not block.
        """
        return UNDEFINED_VERSION


class Converter(Versioned, ABC):
    """Converts record keys or values between Connect data and bytes.

    Source side: ``from_connect_data`` serializes what a source task produced.
    Sink side: ``to_connect_data`` deserializes what the worker consumed. Both
    run in the plugin host on the task thread, once per record; they must be
    pure functions of their input (no blocking I/O except, e.g., a cached
    schema-registry lookup). A raised ``DataException`` is a per-record error
    handled by ``errors.tolerance``.
    """

    #: True when :meth:`to_connect_data` answers every ``bytes`` or ``None`` it is given
    #: without raising (text that does not decode is replaced, say) and depends on nothing but
    #: its input, as StringConverter and ByteArrayConverter do. A sink's runtime may then
    #: convert the keys of a batch only when the task reads a record, not before ``put()``: a
    #: task that reads only the values of its :class:`~plugin_api.SinkRecordBatch` never pays
    #: for them. A converter that can fail must leave it False (the default): its errors
    #: would surface inside the task's ``put()``, not as a record's conversion error.
    #: (Since plugin_api 0.1.4.)
    to_connect_data_never_fails: ClassVar[bool] = False
    #: False when :meth:`to_connect_data` (and its batch and column methods) give the same
    #: answer whatever headers they are passed, as StringConverter, ByteArrayConverter and
    #: JsonConverter do. When the key and value converters of a sink both say so and its
    #: header converter cannot fail (:attr:`HeaderConverter.to_connect_header_never_fails`),
    #: a sink's runtime converts a batch's keys and values without reading its headers, and
    #: reads and converts the headers only when the task reads a record. Leave it True (the
    #: default) if the headers can change a result. (Since plugin_api 0.1.5.)
    to_connect_data_reads_headers: ClassVar[bool] = True

    def configure(self, configs: Mapping[str, object], is_key: bool) -> None:
        """Configure once before use; ``is_key`` says whether it converts keys."""

    @abstractmethod
    def from_connect_data(
        self, topic: str, schema: Schema | None, value: object, headers: Headers | None = None
    ) -> bytes | None:
        """Serialize ``value`` (described by ``schema``) for ``topic``; may add ``headers``."""

    @abstractmethod
    def to_connect_data(
        self, topic: str, data: bytes | None, headers: Headers | None = None
    ) -> SchemaAndValue:
        """Deserialize ``data`` consumed from ``topic``."""

    def from_connect_data_batch(
        self,
        topic: str,
        schemas: Sequence[Schema | None],
        values: Sequence[object],
        headers: Sequence[Headers | None],
    ) -> Sequence[bytes | None]:
        """Serialize a batch of records a source task produced for ``topic``: one result per
        entry of ``values`` (``schemas[i]`` and ``headers[i]`` belong to ``values[i]``), in
        order.

        The default calls :meth:`from_connect_data` for each record. Override it when a batch
        is cheaper than its records one by one; each result must equal what
        :meth:`from_connect_data` gives for its record. If it raises, the runtime converts the
        batch again record by record, so that the error is reported against the record that
        caused it (``errors.tolerance``, dead letter queue). The runtime calls it only for
        batches without headers and without transformations (else record by record).
        """
        convert = self.from_connect_data
        return [
            convert(topic, schema, value, record_headers)
            for schema, value, record_headers in zip(schemas, values, headers, strict=True)
        ]

    def to_connect_data_batch(
        self, topic: str, data: Sequence[bytes | None], headers: Sequence[Headers | None]
    ) -> Sequence[tuple[Schema | None, object]]:
        """Deserialize a batch of records consumed from ``topic``: one ``(schema, value)``
        pair per entry of ``data`` (``headers[i]`` belongs to ``data[i]``), in order.

        The default calls :meth:`to_connect_data` for each record. Override it when a batch
        is cheaper than its records one by one; each pair must equal what
        :meth:`to_connect_data` gives for its record, but may be a plain tuple (building
        a ``SchemaAndValue`` costs more than decoding 100 bytes). If it raises, the runtime
        converts the batch again record by record, so that the error is reported against
        the record that caused it (``errors.tolerance``, dead letter queue).
        """
        convert = self.to_connect_data
        return [
            convert(topic, value, record_headers)
            for value, record_headers in zip(data, headers, strict=True)
        ]

    def to_connect_data_column(
        self, topic: str, data: Sequence[bytes | None], headers: Sequence[Headers | None]
    ) -> tuple[Schema | None, Sequence[object]] | None:
        """Deserialize a batch whose values all get the same schema: ``(that schema, one value
        per entry of data)``, or None when this converter cannot say so for this batch (the
        runtime then calls :meth:`to_connect_data_batch`).

        Optional (the default returns None): a sink with small records spends as much on a
        ``(schema, value)`` pair per record, and on taking it apart again, as on decoding
        100 bytes. Each value must equal what :meth:`to_connect_data` gives for its record,
        and the schema what it gives for every one of them. Errors are treated as in
        :meth:`to_connect_data_batch`. The runtime calls it for batches without headers.
        """
        return None

    def config(self) -> ConfigDef:
        """Return the definition of the converter's settings (default: none)."""
        return ConfigDef()

    def close(self) -> None:
        """Release resources; called once when the task stops, also after errors."""


class HeaderConverter(Versioned, ABC):
    """Converts header values between Connect data and bytes (same threading as Converter)."""

    #: True when :meth:`to_connect_header` answers every ``bytes`` or ``None`` it is given
    #: without raising and depends on nothing but its input (SimpleHeaderConverter falls back
    #: to the raw bytes; StringConverter replaces text that does not decode). A sink's
    #: runtime may then convert a record's headers only when the task reads the record (see
    #: :attr:`Converter.to_connect_data_reads_headers`). A header converter that can fail
    #: must leave it False (the default): its errors would surface inside the task's
    #: ``put()``, not as the record's conversion error. (Since plugin_api 0.1.5.)
    to_connect_header_never_fails: ClassVar[bool] = False

    def configure(self, configs: Mapping[str, object]) -> None:
        """Configure once before use."""

    @abstractmethod
    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: object
    ) -> bytes | None:
        """Serialize one header value."""

    @abstractmethod
    def to_connect_header(self, topic: str, header_key: str, data: bytes | None) -> SchemaAndValue:
        """Deserialize one header value."""

    def config(self) -> ConfigDef:
        """Return the definition of the converter's settings (default: none)."""
        return ConfigDef()

    def close(self) -> None:
        """Release resources."""


class Transformation(Versioned, ABC, Generic[R]):
    """A single message transform (SMT) applied to every record of a connector.

    Runs in the plugin host on the task thread, once per record, in chain
    order. It must not mutate its input: return ``record.new_record(...)``,
    the record itself when unchanged, or ``None`` to drop it. A raised
    exception is a per-record error handled by ``errors.tolerance``.
    """

    def configure(self, configs: Mapping[str, object]) -> None:
        """Configure once before use (the ``transforms.<alias>.`` prefix is stripped)."""

    @abstractmethod
    def apply(self, record: R) -> R | None:
        """Return the transformed record, or ``None`` to drop it."""

    def config(self) -> ConfigDef:
        """Return the definition of the transform's settings (default: none)."""
        return ConfigDef()

    def close(self) -> None:
        """Release resources; called once when the task stops."""


class Predicate(Versioned, ABC, Generic[R]):
    """Decides whether a transformation applies to a record (same threading as Transformation)."""

    def configure(self, configs: Mapping[str, object]) -> None:
        """Configure once before use (the ``predicates.<alias>.`` prefix is stripped)."""

    @abstractmethod
    def test(self, record: R) -> bool:
        """Return whether the record matches."""

    def config(self) -> ConfigDef:
        """Return the definition of the predicate's settings (default: none)."""
        return ConfigDef()

    def close(self) -> None:
        """Release resources."""


class ConfigData:
    """Values returned by a :class:`ConfigProvider`.

    Attributes:
        data: Key to value.
        ttl: Milliseconds until the values should be fetched again, or ``None``.
    """

    __slots__ = ("data", "ttl")

    def __init__(self, data: Mapping[str, str], ttl: int | None = None) -> None:
        """Create the result."""
        self.data: dict[str, str] = dict(data)
        self.ttl = ttl

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConfigData):
            return NotImplemented
        return self.data == other.data and self.ttl == other.ttl

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ConfigData(keys={sorted(self.data)}, ttl={self.ttl})"


class ConfigProvider(Versioned, ABC):
    """Resolves ``${provider:path:key}`` placeholders in configs.

    Runs inside the worker process (worker extension), on the herder or REST
    thread when a config is resolved; may block on I/O (files, vaults) but
    should be quick. An exception fails resolution of that config.
    """

    def configure(self, configs: Mapping[str, object]) -> None:
        """Configure once before use."""

    @abstractmethod
    def get(self, path: str, keys: Iterable[str] | None = None) -> ConfigData:
        """Return the values at ``path`` (only ``keys`` if given)."""

    def close(self) -> None:
        """Release resources."""
