"""ValueToKey: replace the record key with a struct/map of fields from the value."""

from __future__ import annotations

from collections.abc import Mapping

from copycat_transforms._util import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    SchemaCache,
    VersionedPlugin,
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
    DataException,
    Importance,
    Schema,
    SchemaBuilder,
    Struct,
    Transformation,
)

__all__ = ["ValueToKey"]

FIELDS_CONFIG = "fields"
PURPOSE = "copying fields from value to key"

CONFIG_DEF = define_replace_null_with_default(
    ConfigDef().define(
        FIELDS_CONFIG,
        ConfigType.LIST,
        validator=non_empty_list,
        importance=Importance.HIGH,
        documentation="Field names on the record value to extract as the record key.",
    )
)


class ValueToKey(VersionedPlugin, Transformation[ConnectRecord]):
    """Replace the record key with a new key formed from a subset of fields in the record value."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.ValueToKey",)

    def __init__(self) -> None:
        """Create an unconfigured transform."""
        self._fields: list[str] = []
        self._replace_null_with_default = True
        self._cache = SchemaCache()

    def config(self) -> ConfigDef:
        """Return ``fields`` and ``replace.null.with.default``."""
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, object]) -> None:
        """Read the field names.

        Raises:
            ConfigException: If ``fields`` is missing or empty.
        """
        conf = AbstractConfig(CONFIG_DEF, configs)
        self._fields = list(conf.get_list(FIELDS_CONFIG) or [])
        self._replace_null_with_default = bool(conf.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))
        self._cache = SchemaCache()

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the record with its new key.

        Raises:
            DataException: If the value is not a map/struct or lacks a listed field (schemaful).
        """
        if record.value_schema is None:
            value = require_map(record.value, PURPOSE)
            key = {name: value.get(name) for name in self._fields}
            return record.new_record(key_schema=None, key=key)
        struct = require_struct(record.value, PURPOSE, record.value_schema)
        key_schema = self._cache.get(struct.schema) or self._cache.put(
            struct.schema, self._key_schema(struct.schema)
        )
        new_key = Struct(key_schema)
        for name in self._fields:
            new_key.put(name, field_value(struct, name, self._replace_null_with_default))
        return record.new_record(key_schema=key_schema, key=new_key)

    def _key_schema(self, value_schema: Schema) -> Schema:
        builder = SchemaBuilder.struct()
        for name in self._fields:
            field = value_schema.field(name)
            if field is None:
                raise DataException(f"Field does not exist: {name}")
            builder.field(name, field.schema)
        return builder.build()
