"""ReplaceField: drop, keep or rename fields (``exclude``, ``include``, ``renames``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copycat_transforms._util import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    KeySide,
    SchemaCache,
    SideAware,
    ValueSide,
    VersionedPlugin,
    copy_schema_basics,
    define_replace_null_with_default,
    field_value,
    invalid_value,
    java_split,
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
)

__all__ = ["ReplaceField", "ReplaceFieldKey", "ReplaceFieldValue"]

EXCLUDE_CONFIG = "exclude"
INCLUDE_CONFIG = "include"
RENAMES_CONFIG = "renames"
# Names Kafka deprecated in 2.7 (KIP-629); still accepted, the new name wins when both are set.
DEPRECATED_NAMES = {"blacklist": EXCLUDE_CONFIG, "whitelist": INCLUDE_CONFIG}
PURPOSE = "field replacement"


def parse_renames(name: str, mappings: list[str]) -> dict[str, str]:
    """Parse ``old:new`` pairs.

    Raises:
        ConfigException: Naming ``name``, for an entry that is not exactly one pair.
    """
    renames: dict[str, str] = {}
    for mapping in mappings:
        parts = java_split(mapping, ":")
        if len(parts) != 2:
            raise invalid_value(name, mappings, f"Invalid rename mapping: {mapping}")
        renames[parts[0]] = parts[1]
    return renames


def _check_renames(name: str, value: object) -> None:
    parse_renames(name, list(value))  # type: ignore[call-overload]


CONFIG_DEF = define_replace_null_with_default(
    ConfigDef()
    .define(
        EXCLUDE_CONFIG,
        ConfigType.LIST,
        "",
        importance=Importance.MEDIUM,
        documentation="Fields to exclude. This takes precedence over the fields to include.",
    )
    .define(
        INCLUDE_CONFIG,
        ConfigType.LIST,
        "",
        importance=Importance.MEDIUM,
        documentation="Fields to include. If specified, only these fields will be used.",
    )
    .define(
        RENAMES_CONFIG,
        ConfigType.LIST,
        "",
        _check_renames,
        Importance.MEDIUM,
        "Field rename mappings.",
    )
    .define(
        "blacklist",
        ConfigType.LIST,
        None,
        importance=Importance.LOW,
        documentation="Deprecated. Use exclude instead.",
    )
    .define(
        "whitelist",
        ConfigType.LIST,
        None,
        importance=Importance.LOW,
        documentation="Deprecated. Use include instead.",
    )
)


def translate_deprecated(configs: Mapping[str, object]) -> dict[str, object]:
    """Map ``blacklist``/``whitelist`` onto ``exclude``/``include`` unless those are set."""
    translated = dict(configs)
    for old, new in DEPRECATED_NAMES.items():
        if old in translated and new not in translated:
            translated[new] = translated[old]
    return translated


class ReplaceField(VersionedPlugin, SideAware, Transformation[ConnectRecord]):
    """Filter or rename fields.

    A field is kept if it is not in ``exclude`` and ``include`` is empty or
    lists it; kept fields are then renamed per ``renames``. Tombstones pass
    through unchanged.
    """

    def __init__(self) -> None:
        """Create an unconfigured transform."""
        self._exclude: frozenset[str] = frozenset()
        self._include: frozenset[str] = frozenset()
        self._renames: dict[str, str] = {}
        self._reverse: dict[str, str] = {}
        self._replace_null_with_default = True
        self._cache = SchemaCache()

    def config(self) -> ConfigDef:
        """Return ``exclude``, ``include``, ``renames`` (and the deprecated names)."""
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, object]) -> None:
        """Read the field lists.

        Raises:
            ConfigException: Naming ``renames`` for a malformed mapping.
        """
        conf = AbstractConfig(CONFIG_DEF, translate_deprecated(configs))
        self._exclude = frozenset(conf.get_list(EXCLUDE_CONFIG) or ())
        self._include = frozenset(conf.get_list(INCLUDE_CONFIG) or ())
        self._renames = parse_renames(RENAMES_CONFIG, conf.get_list(RENAMES_CONFIG) or [])
        self._reverse = {new: old for old, new in self._renames.items()}
        self._replace_null_with_default = bool(conf.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))
        self._cache = SchemaCache()

    def _keep(self, name: str) -> bool:
        return name not in self._exclude and (not self._include or name in self._include)

    def _renamed(self, name: str) -> str:
        return self._renames.get(name, name)

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the record with fields dropped and renamed."""
        raw = self.operating_value(record)
        if raw is None:
            return record
        if self.operating_schema(record) is None:
            value = require_map(raw, PURPOSE)
            updated: dict[str, Any] = {
                self._renamed(k): v for k, v in value.items() if self._keep(k)
            }
            return self.new_record(record, None, updated)  # type: ignore[no-any-return]
        struct = (
            raw
            if type(raw) is Struct
            else require_struct(raw, PURPOSE, self.operating_schema(record))
        )
        schema = self._cache.get(struct.schema) or self._cache.put(
            struct.schema, self._updated_schema(struct.schema)
        )
        new_value = Struct(schema)
        for field in schema.fields:
            original = self._reverse.get(field.name, field.name)
            new_value.put(
                field.name, field_value(struct, original, self._replace_null_with_default)
            )
        return self.new_record(record, schema, new_value)  # type: ignore[no-any-return]

    def _updated_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            if self._keep(field.name):
                builder.field(self._renamed(field.name), field.schema)
        if schema.optional:
            builder.optional()
        return builder.build()


class ReplaceFieldKey(KeySide, ReplaceField):
    """ReplaceField on the record key."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.ReplaceField$Key",)


class ReplaceFieldValue(ValueSide, ReplaceField):
    """ReplaceField on the record value."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.ReplaceField$Value",)
