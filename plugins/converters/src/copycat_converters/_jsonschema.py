"""Connect schemas to and from Kafka's JSON schema format (``JsonSchema.java``).

Key order matters for byte compatibility. Kafka builds the schema object as:
``type``, then ``items`` / ``keys``, ``values`` / ``fields``, then ``optional``,
``name``, ``version``, ``doc``, ``parameters``, ``default``; each struct field
is its schema's object with ``"field": name`` appended last.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plugin_api import DataException, Decimal, Field, Schema, SchemaBuilderException, Type

__all__ = ["TYPE_NAMES", "from_json_schema", "has_decimal", "to_json_schema"]

# Connect type -> JSON "type" name (FLOAT32/FLOAT64 are "float"/"double").
TYPE_NAMES: dict[Type, str] = {
    Type.BOOLEAN: "boolean",
    Type.INT8: "int8",
    Type.INT16: "int16",
    Type.INT32: "int32",
    Type.INT64: "int64",
    Type.FLOAT32: "float",
    Type.FLOAT64: "double",
    Type.BYTES: "bytes",
    Type.STRING: "string",
    Type.ARRAY: "array",
    Type.MAP: "map",
    Type.STRUCT: "struct",
}
_TYPES_BY_NAME = {name: kind for kind, name in TYPE_NAMES.items()}

ValueToJson = Callable[[Schema, object], object]
JsonToValue = Callable[[Schema, object], object]


def to_json_schema(schema: Schema, value_to_json: ValueToJson) -> dict[str, Any]:
    """Return the JSON object (as an ordered dict) describing ``schema``.

    Args:
        schema: The Connect schema.
        value_to_json: Converts the schema's default value to JSON.
    """
    kind = schema.type
    out: dict[str, Any] = {"type": TYPE_NAMES[kind]}
    if kind is Type.ARRAY:
        out["items"] = to_json_schema(schema.value_schema, value_to_json)  # type: ignore[arg-type]
    elif kind is Type.MAP:
        out["keys"] = to_json_schema(schema.key_schema, value_to_json)  # type: ignore[arg-type]
        out["values"] = to_json_schema(schema.value_schema, value_to_json)  # type: ignore[arg-type]
    elif kind is Type.STRUCT:
        fields = []
        for field in schema.fields:
            field_json = to_json_schema(field.schema, value_to_json)
            field_json["field"] = field.name
            fields.append(field_json)
        out["fields"] = fields
    out["optional"] = schema.optional
    if schema.name is not None:
        out["name"] = schema.name
    if schema.version is not None:
        out["version"] = schema.version
    if schema.doc is not None:
        out["doc"] = schema.doc
    params = schema.parameters
    if params is not None:
        out["parameters"] = params
    if schema.default_value is not None:
        out["default"] = value_to_json(schema, schema.default_value)
    return out


def _is_int(node: object) -> bool:
    return isinstance(node, int) and not isinstance(node, bool)


def from_json_schema(node: object, json_to_value: JsonToValue) -> Schema:
    """Build the Connect schema described by a parsed JSON schema object.

    Args:
        node: The parsed ``"schema"`` member (not ``None``).
        json_to_value: Converts the JSON default value to a Connect value.

    Raises:
        DataException: With Kafka's messages for malformed schemas.
    """
    type_name = node.get("type") if isinstance(node, dict) else None
    if not isinstance(type_name, str):
        raise DataException("Schema must contain 'type' field")
    kind = _TYPES_BY_NAME.get(type_name)
    if kind is None:
        raise DataException(f"Unknown schema type: {type_name}")
    assert isinstance(node, dict)
    key_schema = value_schema = None
    fields: list[Field] = []
    if kind is Type.ARRAY:
        items = node.get("items")
        if items is None:
            raise DataException("Array schema did not specify the element type")
        value_schema = from_json_schema(items, json_to_value)
    elif kind is Type.MAP:
        if "keys" not in node:
            raise DataException("Map schema did not specify the key type")
        if "values" not in node:
            raise DataException("Map schema did not specify the value type")
        key_schema = from_json_schema(node["keys"], json_to_value)
        value_schema = from_json_schema(node["values"], json_to_value)
    elif kind is Type.STRUCT:
        field_nodes = node.get("fields")
        if not isinstance(field_nodes, list):
            raise DataException('Struct schema\'s "fields" argument is not an array.')
        seen: set[str] = set()
        for field_node in field_nodes:
            name = field_node.get("field") if isinstance(field_node, dict) else None
            if not isinstance(name, str):
                raise DataException("Struct schema's field name not specified properly")
            # Kafka's asConnectSchema reads the field's schema, then SchemaBuilder.field
            # refuses the name: its SchemaBuilderException is what the DLQ names.
            field_schema = from_json_schema(field_node, json_to_value)
            if not name:
                raise SchemaBuilderException("fieldName cannot be null.")
            if name in seen:
                raise SchemaBuilderException(
                    f"Cannot create field because of field name duplication {name}"
                )
            seen.add(name)
            fields.append(Field(name, len(fields), field_schema))

    name = node.get("name")
    version = node.get("version")
    doc = node.get("doc")
    params_node = node.get("parameters")
    params: dict[str, str] | None = None
    if isinstance(params_node, dict):
        params = {}
        for key, value in params_node.items():
            if not isinstance(value, str):
                raise DataException("Schema parameters must have string values.")
            params[key] = value

    def build(default: object = None) -> Schema:
        return Schema(
            kind,
            optional=node.get("optional") is True,
            default_value=default,
            name=name if isinstance(name, str) else None,
            version=version if _is_int(version) else None,
            doc=doc if isinstance(doc, str) else None,
            parameters=params,
            fields=fields,
            key_schema=key_schema,
            value_schema=value_schema,
        )

    schema = build()
    if "default" in node:
        schema = build(json_to_value(schema, node["default"]))
    return schema


def has_decimal(schema: Schema | None) -> bool:
    """Whether ``schema`` contains a Decimal anywhere (its JSON numbers must be parsed exactly)."""
    if schema is None:
        return False
    if schema.name == Decimal.LOGICAL_NAME:
        return True
    kind = schema.type
    if kind is Type.ARRAY:
        return has_decimal(schema.value_schema)
    if kind is Type.MAP:
        return has_decimal(schema.key_schema) or has_decimal(schema.value_schema)
    if kind is Type.STRUCT:
        return any(has_decimal(f.schema) for f in schema.fields)
    return False
