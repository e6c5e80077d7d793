"""SetSchemaMetadata: set the name and/or version of the key or value schema."""

from __future__ import annotations

from collections.abc import Mapping

from copycat_transforms._util import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    KeySide,
    SideAware,
    ValueSide,
    VersionedPlugin,
    define_replace_null_with_default,
    field_value,
    require_schema,
    struct_fields,
)
from plugin_api import (
    AbstractConfig,
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectRecord,
    Importance,
    Schema,
    Struct,
    Transformation,
)

__all__ = ["SetSchemaMetadata", "SetSchemaMetadataKey", "SetSchemaMetadataValue"]

SCHEMA_NAME_CONFIG = "schema.name"
SCHEMA_VERSION_CONFIG = "schema.version"
PURPOSE = "updating schema metadata"

CONFIG_DEF = define_replace_null_with_default(
    ConfigDef()
    .define(
        SCHEMA_NAME_CONFIG,
        ConfigType.STRING,
        None,
        importance=Importance.HIGH,
        documentation="Schema name to set.",
    )
    .define(
        SCHEMA_VERSION_CONFIG,
        ConfigType.INT,
        None,
        importance=Importance.HIGH,
        documentation="Schema version to set.",
    )
)


class SetSchemaMetadata(VersionedPlugin, SideAware, Transformation[ConnectRecord]):
    """Set the schema name, version or both on the record's key or value schema.

    Struct values are rebuilt against the renamed schema so they stay valid for it. As in
    Kafka Connect 4.1.1, whose SetSchemaMetadata copies the schema's field list (which a
    non-struct schema refuses to give), only a STRUCT schema can be renamed: any other
    fails the record with ``Cannot list fields on non-struct type``.
    """

    def __init__(self) -> None:
        """Create an unconfigured transform."""
        self._name: str | None = None
        self._version: int | None = None
        self._replace_null_with_default = True

    def config(self) -> ConfigDef:
        """Return ``schema.name``, ``schema.version`` and ``replace.null.with.default``."""
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, object]) -> None:
        """Read the name and version.

        Raises:
            ConfigException: If neither is set, or the version is not an integer.
        """
        conf = AbstractConfig(CONFIG_DEF, configs)
        self._name = conf.get_string(SCHEMA_NAME_CONFIG)
        self._version = conf.get_int(SCHEMA_VERSION_CONFIG)
        self._replace_null_with_default = bool(conf.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))
        if self._name is None and self._version is None:
            exc = ConfigException("Neither schema name nor version configured")
            exc.name = SCHEMA_NAME_CONFIG
            raise exc

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the record with the updated schema.

        Raises:
            DataException: If the record has no schema on this side, or one that is no
                struct.
        """
        schema = self.operating_schema(record)
        if schema is None and self.operating_value(record) is None:
            return record  # a schemaless tombstone passes, as in Kafka
        schema = require_schema(schema, PURPOSE)
        struct_fields(schema)  # Kafka copies the fields, which refuses a non-struct schema
        updated_schema = self._renamed(schema, None)
        default = schema.default_value
        if default is not None:
            if isinstance(default, Struct):
                default = self._rebuilt(default, updated_schema)
            updated_schema = self._renamed(schema, default)
        value = self.operating_value(record)
        if isinstance(value, Struct):
            value = self._rebuilt(value, updated_schema)
        return self.new_record(record, updated_schema, value)  # type: ignore[no-any-return]

    def _renamed(self, schema: Schema, default: object) -> Schema:
        return Schema(
            schema.type,
            optional=schema.optional,
            default_value=default,
            name=self._name if self._name is not None else schema.name,
            version=self._version if self._version is not None else schema.version,
            doc=schema.doc,
            parameters=schema.parameters,
            fields=schema.fields,
        )

    def _rebuilt(self, value: Struct, schema: Schema) -> Struct:
        rebuilt = Struct(schema)
        for field in value.schema.fields:
            rebuilt.put(field.name, field_value(value, field.name, self._replace_null_with_default))
        return rebuilt


class SetSchemaMetadataKey(KeySide, SetSchemaMetadata):
    """SetSchemaMetadata on the record key."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.SetSchemaMetadata$Key",)


class SetSchemaMetadataValue(ValueSide, SetSchemaMetadata):
    """SetSchemaMetadata on the record value."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.SetSchemaMetadata$Value",)
