"""HoistField: wrap the key or value in a single-field struct (or map)."""

from __future__ import annotations

from collections.abc import Mapping

from copycat_transforms._util import KeySide, SchemaCache, SideAware, ValueSide, VersionedPlugin
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
)

__all__ = ["HoistField", "HoistFieldKey", "HoistFieldValue"]

FIELD_CONFIG = "field"

CONFIG_DEF = ConfigDef().define(
    FIELD_CONFIG,
    ConfigType.STRING,
    importance=Importance.MEDIUM,
    documentation="Field name for the single field that will be created in the resulting "
    "Struct or Map.",
)


class HoistField(VersionedPlugin, SideAware, Transformation[ConnectRecord]):
    """Wrap data in a single-field Struct (schemaful) or Map (schemaless data)."""

    def __init__(self) -> None:
        """Create an unconfigured transform."""
        self._field = ""
        self._cache = SchemaCache()

    def config(self) -> ConfigDef:
        """Return ``field``."""
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, object]) -> None:
        """Read the field name.

        Raises:
            ConfigException: If ``field`` is missing.
        """
        conf = AbstractConfig(CONFIG_DEF, configs)
        self._field = conf.get_string(FIELD_CONFIG) or ""
        self._cache = SchemaCache()

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the record with the key/value wrapped.

        Raises:
            DataException: If a null value is hoisted into a required schema.
        """
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            return self.new_record(record, None, {self._field: value})  # type: ignore[no-any-return]
        updated_schema = self._cache.get(schema) or self._cache.put(schema, self._wrap(schema))
        updated = Struct(updated_schema).put(self._field, value)
        return self.new_record(record, updated_schema, updated)  # type: ignore[no-any-return]

    def _wrap(self, schema: Schema) -> Schema:
        return SchemaBuilder.struct().field(self._field, schema).build()


class HoistFieldKey(KeySide, HoistField):
    """HoistField on the record key."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.HoistField$Key",)


class HoistFieldValue(ValueSide, HoistField):
    """HoistField on the record value."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.HoistField$Value",)
