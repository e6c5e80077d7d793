"""ExtractField: replace the key or value with one of its fields."""

from __future__ import annotations

from collections.abc import Mapping

from copycat_transforms._fieldpath import (
    FIELD_SYNTAX_VERSION_CONFIG,
    V1,
    define_field_syntax_version,
    field_from,
    map_value_from,
    parse_steps,
    struct_value_from,
)
from copycat_transforms._util import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    IllegalArgumentException,
    KeySide,
    SideAware,
    ValueSide,
    VersionedPlugin,
    define_replace_null_with_default,
    require_map_or_null,
    require_struct_or_null,
)
from plugin_api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectRecord,
    Importance,
    Transformation,
)

__all__ = ["ExtractField", "ExtractFieldKey", "ExtractFieldValue"]

FIELD_CONFIG = "field"
PURPOSE = "field extraction"

CONFIG_DEF = define_replace_null_with_default(
    define_field_syntax_version(
        ConfigDef().define(
            FIELD_CONFIG,
            ConfigType.STRING,
            importance=Importance.MEDIUM,
            documentation="Field name to extract.",
        )
    )
)


class ExtractField(VersionedPlugin, SideAware, Transformation[ConnectRecord]):
    """Extract the specified field from a Struct (schemaful) or a Map (schemaless data).

    Any null values are passed through unmodified. With
    ``field.syntax.version=V2`` the field may be a dotted path into nested
    structs or maps.
    """

    def __init__(self) -> None:
        """Create an unconfigured transform."""
        self._field = ""
        self._steps: list[str] = []
        self._replace_null_with_default = True

    def config(self) -> ConfigDef:
        """Return ``field``, ``field.syntax.version`` and ``replace.null.with.default``."""
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, object]) -> None:
        """Read the field path.

        Raises:
            ConfigException: If ``field`` is missing or not a valid path.
        """
        conf = AbstractConfig(CONFIG_DEF, configs)
        self._field = conf.get_string(FIELD_CONFIG) or ""
        version = conf.get_string(FIELD_SYNTAX_VERSION_CONFIG) or V1
        self._steps = parse_steps(self._field, version, FIELD_CONFIG)
        self._replace_null_with_default = bool(conf.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the record with the key/value replaced by the field's value.

        Raises:
            DataException: If the value is not a map/struct.
            IllegalArgumentException: If the schema lacks the field (as Kafka's).
        """
        schema = self.operating_schema(record)
        raw = self.operating_value(record)
        if schema is None:
            mapping = require_map_or_null(raw, PURPOSE)
            extracted = None if mapping is None else map_value_from(mapping, self._steps)
            return self.new_record(record, None, extracted)  # type: ignore[no-any-return]
        struct = require_struct_or_null(raw, PURPOSE, schema)
        field = field_from(schema, self._steps)
        if field is None:
            raise IllegalArgumentException(f"Unknown field: {self._field}")
        extracted = (
            None
            if struct is None
            else struct_value_from(struct, self._steps, self._replace_null_with_default)
        )
        return self.new_record(record, field.schema, extracted)  # type: ignore[no-any-return]


class ExtractFieldKey(KeySide, ExtractField):
    """ExtractField on the record key."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.ExtractField$Key",)


class ExtractFieldValue(ValueSide, ExtractField):
    """ExtractField on the record value."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.ExtractField$Value",)
