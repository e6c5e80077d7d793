"""What every bundled SMT shares: the key/value sides, Kafka's ``Requirements``, schema helpers.

Kafka's SMTs are abstract classes with ``$Key`` and ``$Value`` nested subclasses
that only say which side of the record they read and rebuild. Here that choice
is one of two mixins, :class:`KeySide` and :class:`ValueSide`, so each variant is
a two-line subclass::

    class InsertFieldValue(ValueSide, InsertField):
        KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.InsertField$Value",)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from copycat_transforms._version import __version__
from plugin_api import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectRecord,
    DataException,
    Field,
    Importance,
    Schema,
    SchemaBuilder,
    SinkRecord,
    Struct,
    Type,
    java_class_name,
)

REPLACE_NULL_WITH_DEFAULT_CONFIG = "replace.null.with.default"

# Kafka keeps 16 schemas per transform instance (an LRUCache(16)): a connector sees a
# handful of distinct schemas, and the bound stops a source that emits a new schema per
# record from growing the cache without limit.
SCHEMA_CACHE_SIZE = 16


class VersionedPlugin:
    """Mixin: ``version()`` is the version of the copycat-transforms distribution."""

    def version(self) -> str:
        """Return the package version."""
        return __version__


class KeySide:
    """Mixin for ``$Key`` variants: the transform reads and rewrites the record key."""

    SIDE: ClassVar[str] = "key"
    # Where transforms with a per-record fast path find their copier (record, schema, key).
    COPIERS: ClassVar[dict[type, Callable[..., Any]]]

    @staticmethod
    def operating_schema(record: ConnectRecord) -> Schema | None:
        """The key schema."""
        return record.key_schema

    @staticmethod
    def operating_value(record: ConnectRecord) -> Any:
        """The key."""
        return record.key

    @staticmethod
    def new_record(record: Any, schema: Schema | None, value: object, **changes: Any) -> Any:
        """A copy of ``record`` with a new key (and schema) and any other ``changes``."""
        if changes:
            return record.new_record(key_schema=schema, key=value, **changes)
        copy = _KEY_COPIERS.get(type(record)) or add_copier(
            _KEY_COPIERS, record, "key_schema", "key"
        )
        return copy(record, schema, value)


# Per record class: copy(record, schema, key-or-value), the SMTs' hot path (see
# ConnectRecord.copier). Call sites look up their cache inline: a shared helper keyed by
# (class, attributes) cost 7 % of the deep-dive chain's throughput.
_KEY_COPIERS: dict[type, Callable[..., Any]] = {}
_VALUE_COPIERS: dict[type, Callable[..., Any]] = {}
KeySide.COPIERS = _KEY_COPIERS


def add_copier(
    cache: dict[type, Callable[..., Any]], record: ConnectRecord, *attributes: str
) -> Callable[..., Any]:
    """Make ``type(record).copier(*attributes)`` and remember it in ``cache``."""
    copy = cache[type(record)] = type(record).copier(*attributes)
    return copy


class ValueSide:
    """Mixin for ``$Value`` variants: the transform reads and rewrites the record value."""

    SIDE: ClassVar[str] = "value"
    COPIERS: ClassVar[dict[type, Callable[..., Any]]] = _VALUE_COPIERS

    @staticmethod
    def operating_schema(record: ConnectRecord) -> Schema | None:
        """The value schema."""
        return record.value_schema

    @staticmethod
    def operating_value(record: ConnectRecord) -> Any:
        """The value."""
        return record.value

    @staticmethod
    def new_record(record: Any, schema: Schema | None, value: object, **changes: Any) -> Any:
        """A copy of ``record`` with a new value (and schema) and any other ``changes``."""
        if changes:
            return record.new_record(value_schema=schema, value=value, **changes)
        copy = _VALUE_COPIERS.get(type(record)) or add_copier(
            _VALUE_COPIERS, record, "value_schema", "value"
        )
        return copy(record, schema, value)


class SideAware:
    """Declares what :class:`KeySide` / :class:`ValueSide` provide (for the type checker)."""

    SIDE: ClassVar[str]
    COPIERS: ClassVar[dict[type, Callable[..., Any]]]

    def side_copier(self, record: ConnectRecord) -> Callable[..., Any]:
        """``copy(record, schema, new key-or-value)`` for records of ``record``'s class, made
        once per class (the SMTs' fast paths look it up in ``COPIERS`` inline first)."""
        if self.SIDE == "key":
            return add_copier(self.COPIERS, record, "key_schema", "key")
        return add_copier(self.COPIERS, record, "value_schema", "value")

    @staticmethod
    def operating_schema(record: ConnectRecord) -> Schema | None:  # pragma: no cover
        raise NotImplementedError

    @staticmethod
    def operating_value(record: ConnectRecord) -> Any:  # pragma: no cover
        raise NotImplementedError

    @staticmethod
    def new_record(
        record: Any, schema: Schema | None, value: object, **changes: Any
    ) -> Any:  # pragma: no cover
        raise NotImplementedError


# -- Kafka's Requirements ------------------------------------------------------------------


class IllegalArgumentException(ValueError):  # noqa: N818 - Kafka's name, for the DLQ header
    """Where Kafka's SMTs throw ``java.lang.IllegalArgumentException`` rather than a
    DataException (ExtractField's unknown field): the runtime names it so in the dead letter
    queue's ``__connect.errors.exception.class.name`` header and the trace's first line."""

    KAFKA_CLASS_ALIASES = ("java.lang.IllegalArgumentException",)


class NullPointerException(ValueError):  # noqa: N818 - Kafka's name, for the DLQ header
    """Where Kafka's SMTs fail with ``java.lang.NullPointerException`` on input they do not
    check (HeaderFrom on a schema without the field): the same class and message in the dead
    letter queue's headers and the trace's first line."""

    KAFKA_CLASS_ALIASES = ("java.lang.NullPointerException",)


def class_name(value: object, schema: Schema | None = None) -> str:
    """The class Kafka's error messages name (its ``nullSafeClassName``): the Java class
    Kafka Connect would hold for ``value`` of ``schema``, ``java.lang.String`` for a str."""
    return java_class_name(value, schema)


def java_class(value: object, schema: Schema | None = None) -> str:
    """Java's ``value.getClass()`` as Kafka concatenates it into a message:
    ``class java.lang.String``."""
    return f"class {java_class_name(value, schema)}"


def require_map(value: object, purpose: str) -> Mapping[str, Any]:
    """Return ``value`` if it is a mapping, else raise Kafka's DataException."""
    if type(value) is dict:  # the usual case, without the ABC check
        return value
    if not isinstance(value, Mapping):
        raise DataException(
            f"Only Map objects supported in absence of schema for [{purpose}], "
            f"found: {class_name(value)}"
        )
    return value


def require_map_or_null(value: object, purpose: str) -> Mapping[str, Any] | None:
    """Like :func:`require_map` but lets ``None`` through."""
    return None if value is None else require_map(value, purpose)


def require_struct(value: object, purpose: str, schema: Schema | None = None) -> Struct:
    """Return ``value`` if it is a Struct, else raise Kafka's DataException (``schema``, the
    value's, names a number's Java class: ``java.lang.Integer`` for an INT32)."""
    if not isinstance(value, Struct):
        raise DataException(
            f"Only Struct objects supported for [{purpose}], found: {class_name(value, schema)}"
        )
    return value


def require_struct_or_null(
    value: object, purpose: str, schema: Schema | None = None
) -> Struct | None:
    """Like :func:`require_struct` but lets ``None`` through."""
    return None if value is None else require_struct(value, purpose, schema)


def struct_fields(schema: Schema) -> list[Field]:
    """The fields of a STRUCT schema, or Kafka's ``ConnectSchema.fields()`` DataException
    (plugin_api's ``Schema.fields`` is empty for the other types: an SMT that lists the
    fields of a string schema, even for a null value, fails in Kafka)."""
    if schema.type is not Type.STRUCT:
        raise DataException("Cannot list fields on non-struct type")
    return schema.fields


def require_schema(schema: Schema | None, purpose: str) -> Schema:
    """Return ``schema``, or raise if the record is schemaless."""
    if schema is None:
        raise DataException(f"Schema required for [{purpose}]")
    return schema


def require_sink_record(record: ConnectRecord, purpose: str) -> SinkRecord:
    """Return ``record`` if it is a SinkRecord (only those carry an offset)."""
    if not isinstance(record, SinkRecord):
        raise DataException(
            f"Only SinkRecord supported for [{purpose}], found: {class_name(record)}"
        )
    return record


# -- schemas -------------------------------------------------------------------------------


class SchemaCache:
    """A small LRU map from an input schema to the schema a transform derived from it."""

    __slots__ = ("_entries", "_size")

    def __init__(self, size: int = SCHEMA_CACHE_SIZE) -> None:
        """Create an empty cache holding at most ``size`` schemas."""
        self._entries: OrderedDict[Schema, Schema] = OrderedDict()
        self._size = size

    def get(self, schema: Schema) -> Schema | None:
        """The cached schema derived from ``schema``, or ``None``."""
        found = self._entries.get(schema)
        if found is not None:
            self._entries.move_to_end(schema)
        return found

    def put(self, schema: Schema, updated: Schema) -> Schema:
        """Remember ``updated`` for ``schema``; returns ``updated``."""
        self._entries[schema] = updated
        self._entries.move_to_end(schema)
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)
        return updated


class StructPlan:
    """What a transform that copies a struct's fields needs to know of its schema, once.

    Transforms copy the values of a valid struct without checking them again (a struct's
    values were checked when they were put; Struct.from_values(..., validate=False)). Only
    two things are looked at per record: defaults (``replace.null.with.default``), and
    required fields left unset, which Kafka's rebuilding put() rejects and so must we.

    Attributes:
        defaults: ``(index, default)`` of fields with a default, when defaults replace nulls.
        required: Indices of required fields without a default (None is an error).
        masked: ``(index, field)`` of the fields named in ``names``.
    """

    __slots__ = ("defaults", "required", "masked")

    def __init__(
        self, schema: Schema, replace_null_with_default: bool, names: frozenset[str] = frozenset()
    ) -> None:
        """Look ``schema``'s fields over once."""
        fields = schema.fields
        self.defaults = [
            (f.index, f.schema.default_value)
            for f in fields
            if replace_null_with_default and f.schema.default_value is not None
        ]
        # put() accepts None where the schema has a default, whether or not it replaces it
        self.required = [
            f.index for f in fields if not f.schema.optional and f.schema.default_value is None
        ]
        self.masked = [(f.index, f) for f in fields if f.name in names]


def copy_schema_basics(source: Schema, builder: SchemaBuilder) -> SchemaBuilder:
    """Copy name, version, doc and parameters (not optionality or default) onto ``builder``."""
    if source.name is not None:
        builder.name(source.name)
    if source.version is not None:
        builder.version(source.version)
    if source.doc is not None:
        builder.doc(source.doc)
    params = source.parameters
    if params:
        builder.parameters(params)
    return builder


def builder_like(source: Schema) -> SchemaBuilder:
    """A builder of the same type (with the same element/key/value schemas) and basics."""
    if source.type is Type.ARRAY:
        assert source.value_schema is not None
        builder = SchemaBuilder.array(source.value_schema)
    elif source.type is Type.MAP:
        assert source.key_schema is not None and source.value_schema is not None
        builder = SchemaBuilder.map(source.key_schema, source.value_schema)
    elif source.type is Type.STRUCT:
        builder = SchemaBuilder.struct()
        for field in source.fields:
            builder.field(field.name, field.schema)
    else:
        builder = SchemaBuilder(source.type)
    return copy_schema_basics(source, builder)


def field_value(struct: Struct, name: str, replace_null_with_default: bool) -> Any:
    """A field's value, substituting the field schema's default for ``None`` if asked."""
    if replace_null_with_default:
        return struct.get(name)
    return struct.get_without_default(name)


# -- config helpers ------------------------------------------------------------------------


def config_error(name: str, value: object, message: str) -> ConfigException:
    """A ConfigException carrying Kafka's plain ``message`` that still names the key."""
    exc = ConfigException(message)
    exc.name = name
    exc.value = value
    return exc


def java_text(value: object) -> str:
    """A config value as Kafka's messages show it: ``null``, a list as ``[a, b]``."""
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(java_text(v) for v in value) + "]"
    return str(value)


def java_split(text: str, separator: str) -> list[str]:
    """``text.split(separator)`` as Java's ``String.split`` does it: trailing empty parts are
    dropped (``a:`` is ``[a]``, ``:`` is no part at all), so ReplaceField and Cast read a
    mapping ending in ``:`` as Kafka's do."""
    if not text:
        return [""]
    parts = text.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def invalid_value(name: str, value: object, reason: str) -> ConfigException:
    """Kafka's ``Invalid value <value> for configuration <name>: <reason>``."""
    return config_error(
        name, value, f"Invalid value {java_text(value)} for configuration {name}: {reason}"
    )


def non_empty_list(name: str, value: object) -> None:
    """Kafka's check of a list that must not be empty (also run on a missing key's null)."""
    if not value:
        raise invalid_value(name, value, "Empty list")


def define_replace_null_with_default(config_def: ConfigDef) -> ConfigDef:
    """Add ``replace.null.with.default`` (KIP-1040), default true as in Kafka."""
    return config_def.define(
        REPLACE_NULL_WITH_DEFAULT_CONFIG,
        ConfigType.BOOLEAN,
        True,
        importance=Importance.MEDIUM,
        documentation="Whether to replace fields that have a default value and that are null "
        "to the default value. When set to true, the default value is used, otherwise null is "
        "used.",
    )
