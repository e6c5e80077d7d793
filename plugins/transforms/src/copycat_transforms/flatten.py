"""Flatten: turn nested structs/maps into top-level fields named ``parent.child``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copycat_transforms._util import (
    KeySide,
    SchemaCache,
    SideAware,
    ValueSide,
    VersionedPlugin,
    builder_like,
    copy_schema_basics,
    java_class,
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
    Type,
)

__all__ = ["Flatten", "FlattenKey", "FlattenValue"]

DELIMITER_CONFIG = "delimiter"
PURPOSE = "flattening"

CONFIG_DEF = ConfigDef().define(
    DELIMITER_CONFIG,
    ConfigType.STRING,
    ".",
    importance=Importance.MEDIUM,
    documentation="Delimiter to insert between field names from the input record when "
    "generating field names for the output record",
)

# Fields kept as they are with schemas (Kafka's): primitives and arrays. A STRUCT is
# flattened into its parent; a MAP is refused (Kafka flattens maps only without schemas).
_LEAF_TYPES = frozenset(t for t in Type if t not in (Type.STRUCT, Type.MAP))


def _schemaless_kind(value: object) -> str | None:
    if isinstance(value, (bool, int, float, str, bytes, bytearray, memoryview, list, tuple)):
        return "leaf"
    if isinstance(value, Mapping):
        return "map"
    if isinstance(value, Struct):
        return "struct"
    return None


class Flatten(VersionedPlugin, SideAware, Transformation[ConnectRecord]):
    """Flatten a nested data structure, naming each field by joining the names on its path.

    The names are joined with the configurable ``delimiter``.
    Applies to a Struct when schema present, or a Map in the case of schemaless
    data. Arrays are kept as they are. A field inside an optional struct
    becomes optional, and takes its default from the parent struct's default.
    """

    def __init__(self) -> None:
        """Create an unconfigured transform."""
        self._delimiter = "."
        self._cache = SchemaCache()

    def config(self) -> ConfigDef:
        """Return ``delimiter``."""
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, object]) -> None:
        """Read the delimiter."""
        conf = AbstractConfig(CONFIG_DEF, configs)
        raw = conf.originals().get(DELIMITER_CONFIG)
        # A whitespace delimiter is legitimate; ConfigDef strips strings, so use the raw text.
        self._delimiter = raw if isinstance(raw, str) else (conf.get_string(DELIMITER_CONFIG) or "")
        self._cache = SchemaCache()

    def _name(self, prefix: str, name: str) -> str:
        return name if not prefix else prefix + self._delimiter + name

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the record with a flat key/value.

        Raises:
            DataException: For values flatten cannot represent (a Struct in schemaless data, a
                MAP field with schemas).
        """
        raw = self.operating_value(record)
        if raw is None:
            return record
        schema = self.operating_schema(record)
        if schema is None:
            flat: dict[str, Any] = {}
            self._flatten_map(require_map(raw, PURPOSE), "", flat)
            return self.new_record(record, None, flat)  # type: ignore[no-any-return]
        struct = require_struct(raw, PURPOSE, schema)
        updated_schema = self._cache.get(schema) or self._cache.put(
            schema, self._flat_schema(schema)
        )
        flat_struct = Struct(updated_schema)
        self._flatten_struct(struct, "", flat_struct)
        return self.new_record(record, updated_schema, flat_struct)  # type: ignore[no-any-return]

    # -- schemaless ------------------------------------------------------------------------

    def _flatten_map(self, value: Mapping[str, Any], prefix: str, out: dict[str, Any]) -> None:
        for key, item in value.items():
            name = self._name(prefix, key)
            if item is None:
                out[name] = None
                continue
            kind = _schemaless_kind(item)
            if kind == "leaf":
                out[name] = item
            elif kind == "map":
                self._flatten_map(item, name, out)
            elif kind == "struct":
                raise DataException(
                    f"Flatten transformation does not support {java_class(item)} for record "
                    f"without schemas (for field {name})."
                )
            else:  # a Decimal or a date: no type of Connect's data API without a schema
                raise DataException(
                    f"Flatten transformation was passed a value of type {java_class(item)} "
                    "which is not supported by Connect's data API"
                )

    # -- schemaful -------------------------------------------------------------------------

    def _flat_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        default = schema.default_value if isinstance(schema.default_value, Struct) else None
        self._add_fields(schema, "", builder, schema.optional, default)
        if schema.optional:
            builder.optional()
        return builder.build()

    def _add_fields(
        self,
        schema: Schema,
        prefix: str,
        builder: SchemaBuilder,
        optional: bool,
        parent_default: Struct | None,
    ) -> None:
        for field in schema.fields:
            name = self._name(prefix, field.name)
            field_optional = optional or field.schema.optional
            if parent_default is not None:
                default = parent_default.get(field.name)
            else:
                default = field.schema.default_value
            if field.schema.type in _LEAF_TYPES:
                leaf = builder_like(field.schema)
                if field_optional:
                    leaf.optional()
                if default is not None:
                    leaf.default_value(default)
                builder.field(name, leaf.build())
            elif field.schema.type is Type.STRUCT:
                nested_default = default if isinstance(default, Struct) else None
                self._add_fields(field.schema, name, builder, field_optional, nested_default)
            else:
                raise DataException(
                    f"Flatten transformation does not support {field.schema.type.name} for "
                    f"record with schemas (for field {name})."
                )

    def _flatten_struct(self, value: Struct | None, prefix: str, out: Struct) -> None:
        if value is None:
            return
        for field in value.schema.fields:
            name = self._name(prefix, field.name)
            if field.schema.type is Type.STRUCT:
                self._flatten_struct(value.get(field.name), name, out)
            else:
                out.put(name, value.get(field.name))


class FlattenKey(KeySide, Flatten):
    """Flatten the record key."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.Flatten$Key",)


class FlattenValue(ValueSide, Flatten):
    """Flatten the record value."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.Flatten$Value",)
