"""HeaderFrom: copy or move fields of the key or value into headers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copycat_transforms._util import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    KeySide,
    NullPointerException,
    SchemaCache,
    SideAware,
    ValueSide,
    VersionedPlugin,
    config_error,
    copy_schema_basics,
    define_replace_null_with_default,
    field_value,
    non_empty_list,
    require_map,
    require_struct,
)
from plugin_api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectRecord,
    Importance,
    Schema,
    SchemaBuilder,
    Struct,
    Transformation,
    ValidString,
)

__all__ = ["HeaderFrom", "HeaderFromKey", "HeaderFromValue"]

FIELDS_CONFIG = "fields"
HEADERS_CONFIG = "headers"
OPERATION_CONFIG = "operation"
MOVE = "move"
COPY = "copy"
# Kafka's HeaderFrom does not check that a schema has the field: the JVM's helpful
# NullPointerException message is what its DLQ and task trace carry.
MISSING_FIELD_MESSAGE = (
    'Cannot invoke "org.apache.kafka.connect.data.Field.schema()" because the return value '
    'of "org.apache.kafka.connect.data.Schema.field(String)" is null'
)

CONFIG_DEF = define_replace_null_with_default(
    ConfigDef()
    .define(
        FIELDS_CONFIG,
        ConfigType.LIST,
        validator=non_empty_list,
        importance=Importance.HIGH,
        documentation="Field names in the record whose values are to be copied or moved "
        "to headers.",
    )
    .define(
        HEADERS_CONFIG,
        ConfigType.LIST,
        validator=non_empty_list,
        importance=Importance.HIGH,
        documentation="Header names, in the same order as the field names listed in the "
        "fields configuration property.",
    )
    .define(
        OPERATION_CONFIG,
        ConfigType.STRING,
        validator=ValidString.in_(MOVE, COPY),
        importance=Importance.HIGH,
        documentation="Either <code>move</code> if the fields are to be moved to the "
        "headers (removed from the key/value), or <code>copy</code> if the fields are to be "
        "copied to the headers (retained in the key/value).",
    )
)


class HeaderFrom(VersionedPlugin, SideAware, Transformation[ConnectRecord]):
    """Moves or copies fields in the key/value of a record into that record's headers.

    Corresponding elements of ``fields`` and ``headers`` together identify a
    field and the header it should be moved or copied to. Headers of schemaful
    records carry the field's schema.
    """

    def __init__(self) -> None:
        """Create an unconfigured transform."""
        self._fields: list[str] = []
        self._headers: list[str] = []
        self._move = False
        self._replace_null_with_default = True
        self._cache = SchemaCache()

    def config(self) -> ConfigDef:
        """Return ``fields``, ``headers``, ``operation`` and ``replace.null.with.default``."""
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, object]) -> None:
        """Read the field/header pairs and the operation.

        Raises:
            ConfigException: Naming the key; ``headers`` if the two lists differ in length.
        """
        conf = AbstractConfig(CONFIG_DEF, configs)
        self._fields = list(conf.get_list(FIELDS_CONFIG) or [])
        self._headers = list(conf.get_list(HEADERS_CONFIG) or [])
        if len(self._fields) != len(self._headers):
            raise config_error(
                HEADERS_CONFIG,
                self._headers,
                f"'{FIELDS_CONFIG}' config must have the same number of elements as "
                f"'{HEADERS_CONFIG}' config.",
            )
        self._move = conf.get_string(OPERATION_CONFIG) == MOVE
        self._replace_null_with_default = bool(conf.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))
        self._cache = SchemaCache()

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the record with the new headers (and, for ``move``, without the fields).

        Raises:
            DataException: If the key/value is not a map/struct.
            NullPointerException: If the schema lacks a field (Kafka's class and message).
        """
        purpose = f"header {MOVE if self._move else COPY}"
        raw = self.operating_value(record)
        schema = self.operating_schema(record)
        headers = record.headers.copy()
        if schema is None:
            value = require_map(raw, purpose)
            updated: dict[str, Any] = dict(value)
            for name, header in zip(self._fields, self._headers, strict=True):
                if self._move:
                    updated.pop(name, None)
                headers.add(header, value.get(name), None)
            return self.new_record(record, None, updated, headers=headers)  # type: ignore[no-any-return]
        struct = require_struct(raw, purpose, schema)
        for name, header in zip(self._fields, self._headers, strict=True):
            field = schema.field(name)
            if field is None:  # Kafka's asks the missing field for its schema
                raise NullPointerException(MISSING_FIELD_MESSAGE)
            headers.add(
                header, field_value(struct, name, self._replace_null_with_default), field.schema
            )
        if not self._move:
            return self.new_record(record, schema, struct, headers=headers)  # type: ignore[no-any-return]
        moved_schema = self._cache.get(schema) or self._cache.put(schema, self._moved(schema))
        moved = Struct(moved_schema)
        for field in moved_schema.fields:
            moved.put(field.name, field_value(struct, field.name, self._replace_null_with_default))
        return self.new_record(record, moved_schema, moved, headers=headers)  # type: ignore[no-any-return]

    def _moved(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        removed = set(self._fields)
        for field in schema.fields:
            if field.name not in removed:
                builder.field(field.name, field.schema)
        if schema.optional:
            builder.optional()
        return builder.build()


class HeaderFromKey(KeySide, HeaderFrom):
    """HeaderFrom on the record key."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.HeaderFrom$Key",)


class HeaderFromValue(ValueSide, HeaderFrom):
    """HeaderFrom on the record value."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.HeaderFrom$Value",)
