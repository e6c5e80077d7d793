"""Connect schemas and values <-> Avro schemas and values, as Confluent's ``AvroData`` maps them.

Connect -> Avro (:func:`from_connect_schema`, :func:`from_connect_data`):

==============================  ===========================================================
Connect                         Avro
==============================  ===========================================================
INT8 / INT16                    ``int`` with ``"connect.type": "int8"|"int16"``
INT32 / INT64                   ``int`` / ``long``
FLOAT32 / FLOAT64               ``float`` / ``double``
BOOLEAN / STRING / BYTES        ``boolean`` / ``string`` / ``bytes``
ARRAY                           ``array``
MAP with required STRING keys   ``map``
other MAP                       ``array`` of ``record MapEntry {key, value}``
STRUCT                          ``record`` named by the schema name (namespace = part before
                                the last dot), unnamed: ``io.confluent.connect.avro.ConnectDefault``
optional T                      ``["null", T]`` (``[T, "null"]`` when T has a default);
                                optional fields without default get ``"default": null``
Decimal                         ``bytes`` + ``logicalType: decimal``, ``scale``, ``precision``
                                (parameter ``connect.decimal.precision``, default 64)
Date / Time / Timestamp         ``int`` date / ``int`` time-millis / ``long`` timestamp-millis
==============================  ===========================================================

Schema metadata travels in properties: ``connect.name``, ``connect.doc``,
``connect.version``, ``connect.parameters``, ``connect.default`` (and ``connect.type``), left
out with ``connect.meta.data=false`` as Confluent's ``AvroDataConfig`` does.

Names: Avro names (records, fields, each part of a namespace) start with a letter or ``_``
and go on with letters, digits and ``_`` (Java Avro's ``Schema.validateName``, which Java
consumers and Confluent's Schema Registry apply). A Connect name that breaks the rule (a
field ``outer.line`` made by Flatten, a record ``com.x.my-rec``) makes the conversion fail
with a ``DataException`` naming the record and field, as Java Avro fails Confluent's
``fromConnectSchema``; with ``scrub.invalid.names=true`` it is scrubbed instead, as Confluent's
``AvroData.doScrubName``: URL-encoded, an ``x`` put before a leading digit, then every other
invalid character replaced by ``_`` (``outer.line`` -> ``outer_line``). The checks run when
a schema is converted, which the converter does once per schema. Avro -> Connect
(:func:`to_connect_schema`, :func:`to_connect_data`) reverses all of this and also
reads what other producers write: enums become STRING with ``io.confluent.connect.avro.Enum``
parameters, fixed becomes BYTES, other unions become a STRUCT named
``io.confluent.connect.avro.Union`` with one optional field per branch.

Values handed to fastavro are *physical* (logical types already encoded), and the schema
given to fastavro has ``logicalType`` stripped (:func:`physical`), so fastavro never
applies its own logical conversions: the bytes are those of Confluent's encoder.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from plugin_api import (
    LOGICAL_SCHEMA_VERSION,
    STRING_SCHEMA,
    DataException,
    Date,
    Decimal,
    Schema,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
    Type,
)

__all__ = [
    "AvroSchemaJson",
    "avro_name_error",
    "from_connect_data",
    "from_connect_schema",
    "physical",
    "schema_string",
    "scrub_full_name",
    "scrub_name",
    "to_connect_data",
    "to_connect_schema",
]

AvroSchemaJson = Any  # str | list | dict: the JSON form of an Avro schema

NAMESPACE = "io.confluent.connect.avro"
DEFAULT_SCHEMA_NAME = "ConnectDefault"
DEFAULT_SCHEMA_FULL_NAME = f"{NAMESPACE}.{DEFAULT_SCHEMA_NAME}"
MAP_ENTRY_TYPE_NAME = "MapEntry"
KEY_FIELD = "key"
VALUE_FIELD = "value"
CONNECT_NAME_PROP = "connect.name"
CONNECT_DOC_PROP = "connect.doc"
CONNECT_VERSION_PROP = "connect.version"
CONNECT_DEFAULT_VALUE_PROP = "connect.default"
CONNECT_PARAMETERS_PROP = "connect.parameters"
CONNECT_INTERNAL_TYPE_NAME = "connect.internal.type"
CONNECT_TYPE_PROP = "connect.type"
AVRO_TYPE_UNION = f"{NAMESPACE}.Union"
AVRO_TYPE_ENUM = f"{NAMESPACE}.Enum"
AVRO_FIELD_DEFAULT_FLAG_PROP = f"{NAMESPACE}.field.default"
CONNECT_AVRO_DECIMAL_PRECISION_PROP = "connect.decimal.precision"
CONNECT_AVRO_FIXED_SIZE_PROP = "connect.fixed.size"
# Confluent's precision for Decimal schemas that do not say: wide enough for any
# BigDecimal a source is likely to produce.
CONNECT_AVRO_DECIMAL_PRECISION_DEFAULT = 64

_PRIMITIVE_AVRO = {
    Type.INT32: "int",
    Type.INT64: "long",
    Type.FLOAT32: "float",
    Type.FLOAT64: "double",
    Type.BOOLEAN: "boolean",
    Type.STRING: "string",
    Type.BYTES: "bytes",
}
_LOGICAL_AVRO = {
    Date.LOGICAL_NAME: "date",
    Time.LOGICAL_NAME: "time-millis",
    Timestamp.LOGICAL_NAME: "timestamp-millis",
}
_NAMED_TYPES = ("record", "enum", "fixed")


# A name already valid in Avro, in the form that needs no Unicode look-ups: almost all are.
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# What Confluent's scrubbing keeps: ASCII letters, digits and "_".
_SCRUB_KEPT = re.compile(r"[A-Za-z0-9_]*\Z")
_SCRUB_REPLACED = re.compile(r"[^A-Za-z0-9_]")
# Characters java.net.URLEncoder leaves as they are (besides ASCII letters and digits).
_URL_SAFE = frozenset(".-*_")


def avro_name_error(name: str) -> str | None:
    """Java Avro's complaint about ``name`` (``Schema.validateName``), ``None`` if valid.

    Java checks ``Character.isLetter`` / ``isLetterOrDigit``, so non-ASCII letters pass.
    """
    if _PLAIN_NAME.match(name):
        return None
    if not name:
        return "Empty name"
    if not (name[0].isalpha() or name[0] == "_"):
        return f"Illegal initial character: {name}"
    if all(c.isalpha() or c.isdecimal() or c == "_" for c in name[1:]):
        return None
    return f"Illegal character in: {name}"


def _url_encode(name: str) -> str:
    """``java.net.URLEncoder.encode(name, "UTF-8")``."""
    out = []
    for char in name:
        if char.isascii() and (char.isalnum() or char in _URL_SAFE):
            out.append(char)
        elif char == " ":
            out.append("+")
        else:
            out.extend(f"%{b:02X}" for b in char.encode("utf-8", "surrogatepass"))
    return "".join(out)


@lru_cache(maxsize=4096)
def scrub_name(name: str) -> str:
    """``name`` made a valid Avro name as Confluent's ``AvroData.doScrubName`` makes it."""
    if not name or (_SCRUB_KEPT.match(name) and not name[0].isdigit()):
        return name
    encoded = _url_encode(name)
    if encoded[0].isdigit():
        encoded = "x" + encoded  # Confluent's arbitrary valid prefix
    return _SCRUB_REPLACED.sub("_", encoded)


@lru_cache(maxsize=1024)
def scrub_full_name(full_name: str) -> str:
    """A dotted full name with each part scrubbed (:func:`scrub_name`)."""
    return ".".join(scrub_name(part) for part in full_name.split("."))


def _split_name(full_name: str) -> tuple[str | None, str]:
    namespace, dot, name = full_name.rpartition(".")
    return (namespace if dot else None), name


def schema_string(avro: AvroSchemaJson) -> str:
    """The compact JSON text of an Avro schema, as sent to the registry."""
    return json.dumps(avro, separators=(",", ":"), ensure_ascii=False)


# -- Connect -> Avro ----------------------------------------------------------------------


class _FromConnect:
    """State of one schema conversion: named types already written (Avro defines a name once),
    and the options (``connect.meta.data``, ``scrub.invalid.names``)."""

    def __init__(self, connect_meta_data: bool = True, scrub_invalid_names: bool = False) -> None:
        self.defined: dict[str, Schema] = {}
        self.default_names: dict[Schema, str] = {}
        self.meta = connect_meta_data
        self.scrub = scrub_invalid_names

    def avro_name(self, connect_name: str) -> tuple[str | None, str, str]:
        """(namespace, name, full name) in Avro of a Connect schema name: scrubbed, or checked.

        Raises:
            DataException: If a part of the name is not valid in Avro and scrubbing is off.
        """
        full = scrub_full_name(connect_name) if self.scrub else connect_name
        if not self.scrub:
            namespace, _, name = connect_name.rpartition(".")
            # An empty namespace is no namespace (Java Avro): ".Rec" names "Rec".
            for part in [*(namespace.split(".") if namespace else ()), name]:
                problem = avro_name_error(part)
                if problem is not None:
                    raise DataException(
                        f"Cannot convert to Avro: the schema name {connect_name!r} is not a "
                        f"valid Avro name ({problem}); "
                        + _SCRUB_HINT.format(smt="SetSchemaMetadata")
                    )
        namespace, name = _split_name(full)
        return namespace, name, full

    def field_name(self, record: str, name: str) -> str:
        """The Avro name of field ``name`` of ``record``: scrubbed, or checked.

        Raises:
            DataException: If the name is not valid in Avro and scrubbing is off.
        """
        if self.scrub:
            return scrub_name(name)
        problem = avro_name_error(name)
        if problem is not None:
            raise DataException(
                f"Cannot convert to Avro: field {name!r} of record {record!r} is not a valid "
                f"Avro name ({problem}); {_SCRUB_HINT.format(smt='ReplaceField')}"
            )
        return name

    def record_name(self, schema: Schema) -> tuple[str | None, str, str]:
        if schema.name is not None:
            return self.avro_name(schema.name)
        full = self.default_names.get(schema)
        if full is None:
            count = len(self.default_names)
            full = DEFAULT_SCHEMA_FULL_NAME + (str(count + 1) if count else "")
            self.default_names[schema] = full
        return NAMESPACE, full.rsplit(".", 1)[1], full


_SCRUB_HINT = (
    "Java Avro and Schema Registry refuse it; rename it (e.g. with {smt}) or set "
    "scrub.invalid.names=true to replace invalid characters with '_'"
)


def from_connect_schema(
    schema: Schema, *, connect_meta_data: bool = True, scrub_invalid_names: bool = False
) -> AvroSchemaJson:
    """Return the Avro schema (JSON form) Confluent's AvroData builds for ``schema``.

    Args:
        schema: The Connect schema.
        connect_meta_data: Write the ``connect.*`` properties (``connect.meta.data``).
        scrub_invalid_names: Make invalid names valid instead of failing
            (``scrub.invalid.names``).

    Raises:
        DataException: If two different structs share a name, or a name is not valid in
            Avro and ``scrub_invalid_names`` is off (naming the record and field).
    """
    ctx = _FromConnect(connect_meta_data, scrub_invalid_names)
    return _from_connect(schema, ctx, ignore_optional=False)


def _required(schema: Schema) -> Schema:
    return Schema(
        schema.type,
        False,
        schema.default_value,
        schema.name,
        schema.version,
        schema.doc,
        schema.parameters,
        schema.fields,
        schema.key_schema,
        schema.value_schema,
    )


def _from_connect(schema: Schema, ctx: _FromConnect, ignore_optional: bool) -> AvroSchemaJson:  # noqa: C901
    kind = schema.type
    props: dict[str, Any] = {}
    connect_type = None
    if kind in (Type.INT8, Type.INT16):
        connect_type = kind.value
        base: dict[str, Any] = {"type": "int"}
    elif kind in _PRIMITIVE_AVRO:
        base = {"type": _PRIMITIVE_AVRO[kind]}
        if kind is Type.BYTES and schema.name == Decimal.LOGICAL_NAME:
            params = schema.parameters or {}
            base["scale"] = int(params.get(Decimal.SCALE_FIELD, "0"))
            base["precision"] = int(
                params.get(
                    CONNECT_AVRO_DECIMAL_PRECISION_PROP, CONNECT_AVRO_DECIMAL_PRECISION_DEFAULT
                )
            )
    elif kind is Type.ARRAY:
        assert schema.value_schema is not None
        base = {"type": "array", "items": _from_connect(schema.value_schema, ctx, False)}
    elif kind is Type.MAP:
        key_schema, value_schema = schema.key_schema, schema.value_schema
        assert key_schema is not None and value_schema is not None
        if key_schema.type is Type.STRING and not key_schema.optional:
            base = {"type": "map", "values": _from_connect(value_schema, ctx, False)}
        else:
            if schema.name is None:
                entry_ns, entry_name = NAMESPACE, MAP_ENTRY_TYPE_NAME
                full = f"{entry_ns}.{entry_name}"
            else:
                entry_ns, entry_name, full = ctx.avro_name(schema.name)  # type: ignore[assignment]
            entry: dict[str, Any] = {"type": "record", "name": entry_name}
            if entry_ns:
                entry["namespace"] = entry_ns
            entry["fields"] = [
                _field(KEY_FIELD, key_schema, ctx),
                _field(VALUE_FIELD, value_schema, ctx),
            ]
            if schema.name is not None:
                entry[CONNECT_INTERNAL_TYPE_NAME] = MAP_ENTRY_TYPE_NAME
            base = {"type": "array", "items": _define(full, schema, entry, ctx)}
    elif kind is Type.STRUCT:
        if schema.name == AVRO_TYPE_UNION:
            branches: list[AvroSchemaJson] = ["null"] if schema.optional else []
            branches += [_from_connect(_required(f.schema), ctx, True) for f in schema.fields]
            return branches
        if schema.optional and not ignore_optional:
            inner = _from_connect(_required(schema), ctx, False)
            return [inner, "null"] if schema.default_value is not None else ["null", inner]
        namespace, name, full = ctx.record_name(schema)
        if full in ctx.defined:
            return _define(full, schema, None, ctx)
        record: dict[str, Any] = {"type": "record", "name": name}
        if namespace:
            record["namespace"] = namespace
        ctx.defined[full] = _required(schema)
        record["fields"] = [
            _field(ctx.field_name(full, f.name), f.schema, ctx) for f in schema.fields
        ]
        base = record
    else:  # pragma: no cover - every Type is handled above
        raise DataException(f"Unknown schema type: {kind}")

    if ctx.meta:
        _add_meta_data(schema, connect_type, props, ctx.scrub)
    if schema.name == Decimal.LOGICAL_NAME:
        props["logicalType"] = "decimal"
    elif schema.name in _LOGICAL_AVRO:
        props["logicalType"] = _LOGICAL_AVRO[schema.name]
    base.update(props)
    result: AvroSchemaJson = base if len(base) > 1 else base["type"]
    if schema.optional and not ignore_optional:
        return [result, "null"] if schema.default_value is not None else ["null", result]
    return result


def _add_meta_data(
    schema: Schema, connect_type: str | None, props: dict[str, Any], scrub: bool
) -> None:
    """The ``connect.*`` properties (Confluent writes them unless ``connect.meta.data=false``)."""
    if schema.doc is not None:
        props[CONNECT_DOC_PROP] = schema.doc
    if schema.version is not None:
        props[CONNECT_VERSION_PROP] = schema.version
    params = {
        k: v for k, v in (schema.parameters or {}).items() if k != AVRO_FIELD_DEFAULT_FLAG_PROP
    }
    if params:
        props[CONNECT_PARAMETERS_PROP] = params
    if schema.default_value is not None and AVRO_FIELD_DEFAULT_FLAG_PROP not in (
        schema.parameters or {}
    ):
        props[CONNECT_DEFAULT_VALUE_PROP] = _default_to_avro(schema, schema.default_value, scrub)
    if schema.name is not None:
        props[CONNECT_NAME_PROP] = schema.name
    if connect_type is not None:
        props[CONNECT_TYPE_PROP] = connect_type


def _define(
    full: str, schema: Schema, definition: dict[str, Any] | None, ctx: _FromConnect
) -> AvroSchemaJson:
    known = ctx.defined.get(full)
    if known is None:
        ctx.defined[full] = schema
        return definition
    if known != _required(schema) and known != schema:
        raise DataException(
            f"Cannot convert to Avro: two different schemas use the name {full!r}; Avro needs "
            "unique names"
        )
    return full


def _field(name: str, schema: Schema, ctx: _FromConnect) -> dict[str, Any]:
    field: dict[str, Any] = {"name": name, "type": _from_connect(schema, ctx, False)}
    if schema.default_value is not None:
        field["default"] = _default_to_avro(schema, schema.default_value, ctx.scrub)
    elif schema.optional:
        field["default"] = None
    return field


def _default_to_avro(schema: Schema, value: object, scrub: bool = False) -> Any:  # noqa: C901
    """A default value in Avro's JSON encoding (bytes as ISO-8859-1 text, maps as objects;
    a struct's keys are its Avro field names, scrubbed with ``scrub``)."""
    value = _to_physical(schema, value)
    kind = schema.type
    if value is None:
        return None
    if kind is Type.BYTES:
        return bytes(value).decode("latin-1")  # type: ignore[arg-type]
    if kind is Type.ARRAY:
        assert schema.value_schema is not None
        return [_default_to_avro(schema.value_schema, v, scrub) for v in value]  # type: ignore[attr-defined]
    if kind is Type.MAP:
        key_schema, value_schema = schema.key_schema, schema.value_schema
        assert key_schema is not None and value_schema is not None
        items = value.items()  # type: ignore[attr-defined]
        if key_schema.type is Type.STRING and not key_schema.optional:
            return {k: _default_to_avro(value_schema, v, scrub) for k, v in items}
        return [
            [_default_to_avro(key_schema, k, scrub), _default_to_avro(value_schema, v, scrub)]
            for k, v in items
        ]
    if kind is Type.STRUCT:
        assert isinstance(value, Struct)
        return {
            scrub_name(f.name) if scrub else f.name: _default_to_avro(f.schema, value.get(f), scrub)
            for f in schema.fields
        }
    return value


def _to_physical(schema: Schema, value: object) -> object:
    name = schema.name
    if value is None or name is None:
        return value
    if name == Decimal.LOGICAL_NAME:
        return Decimal.from_logical(schema, value)  # type: ignore[arg-type]
    if name == Date.LOGICAL_NAME:
        return Date.from_logical(schema, value)  # type: ignore[arg-type]
    if name == Time.LOGICAL_NAME:
        return Time.from_logical(schema, value)  # type: ignore[arg-type]
    if name == Timestamp.LOGICAL_NAME:
        return Timestamp.from_logical(schema, value)  # type: ignore[arg-type]
    return value


def from_connect_data(schema: Schema, value: object, scrub: bool = False) -> object:  # noqa: C901
    """Return the fastavro datum for a Connect value of ``schema`` (its records' field and
    type names scrubbed with ``scrub``, as :func:`from_connect_schema` names them).

    Raises:
        DataException: If the value does not fit the schema (naming the field).
    """
    if value is None:
        if not schema.optional and schema.default_value is None:
            raise DataException(f"Found null value for non-optional schema {schema!r}")
        value = schema.default_value
        if value is None:
            return None
    value = _to_physical(schema, value)
    kind = schema.type
    if kind is Type.BYTES:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise DataException(f"Invalid type for BYTES: {type(value).__name__}")
        return bytes(value)
    if kind.is_primitive:
        if schema.name is None:  # logical values were range-checked by from_logical
            schema.validate_value(value)
        return (
            float(value)
            if kind in (Type.FLOAT32, Type.FLOAT64) and isinstance(value, int)
            else value
        )
    if kind is Type.ARRAY:
        assert schema.value_schema is not None
        if not isinstance(value, (list, tuple)):
            raise DataException(f"Invalid type for ARRAY: {type(value).__name__}")
        return [from_connect_data(schema.value_schema, v, scrub) for v in value]
    if kind is Type.MAP:
        key_schema, value_schema = schema.key_schema, schema.value_schema
        assert key_schema is not None and value_schema is not None
        if not isinstance(value, Mapping):
            raise DataException(f"Invalid type for MAP: {type(value).__name__}")
        if key_schema.type is Type.STRING and not key_schema.optional:
            return {k: from_connect_data(value_schema, v, scrub) for k, v in value.items()}
        return [
            {
                KEY_FIELD: from_connect_data(key_schema, k, scrub),
                VALUE_FIELD: from_connect_data(value_schema, v, scrub),
            }
            for k, v in value.items()
        ]
    if not isinstance(value, Struct):
        raise DataException(f"Invalid type for STRUCT: {type(value).__name__}")
    if schema.name == AVRO_TYPE_UNION:
        for field in schema.fields:
            member = value.get(field)
            if member is not None:
                datum = from_connect_data(field.schema, member, scrub)
                if field.schema.type is Type.STRUCT:
                    branch = field.schema.name
                    if branch is None:
                        return (DEFAULT_SCHEMA_FULL_NAME, datum)
                    return (scrub_full_name(branch) if scrub else branch, datum)
                return datum
        return None
    if scrub:
        return {
            scrub_name(f.name): from_connect_data(f.schema, value.get(f), True)
            for f in schema.fields
        }
    return {f.name: from_connect_data(f.schema, value.get(f)) for f in schema.fields}


def physical(avro: AvroSchemaJson) -> AvroSchemaJson:
    """A copy of ``avro`` without ``logicalType``, for fastavro to read/write physical values."""
    if isinstance(avro, list):
        return [physical(a) for a in avro]
    if not isinstance(avro, dict):
        return avro
    out = {k: v for k, v in avro.items() if k != "logicalType"}
    if "fields" in out:
        out["fields"] = [{**f, "type": physical(f["type"])} for f in out["fields"]]
    for key in ("items", "values"):
        if key in out:
            out[key] = physical(out[key])
    if isinstance(out.get("type"), (dict, list)):
        out["type"] = physical(out["type"])
    return out


# -- Avro -> Connect ----------------------------------------------------------------------


class _ToConnect:
    def __init__(self) -> None:
        self.named: dict[str, tuple[dict[str, Any], Schema | None]] = {}


def _full_name(avro: dict[str, Any], namespace: str | None) -> str:
    name = avro["name"]
    if "." in name:
        return str(name)
    ns = avro.get("namespace", namespace)
    return f"{ns}.{name}" if ns else str(name)


def to_connect_schema(avro: AvroSchemaJson, version: int | None = None) -> Schema:
    """Return the Connect schema for an Avro schema (JSON form).

    Args:
        avro: The writer's Avro schema.
        version: The registry version, used as the schema version when the Avro
            schema carries no ``connect.version`` (as Confluent's converter does).

    Raises:
        DataException: For schemas Connect cannot represent (a bare ``null``,
            recursive records, malformed logical types).
    """
    return _to_connect(avro, _ToConnect(), None, False, _NO_DEFAULT, version)


_NO_DEFAULT = object()


def _to_connect(  # noqa: C901
    avro: AvroSchemaJson,
    ctx: _ToConnect,
    namespace: str | None,
    force_optional: bool,
    field_default: object,
    version: int | None = None,
) -> Schema:
    if isinstance(avro, str):
        if avro in ctx.named:
            definition, built = ctx.named[avro]
            if built is None:
                raise DataException(
                    f"Recursive Avro schema {avro!r} cannot be represented in Connect"
                )
            return _with_optional(built, force_optional)
        qualified = f"{namespace}.{avro}" if namespace and "." not in avro else avro
        if qualified in ctx.named:
            return _to_connect(qualified, ctx, namespace, force_optional, field_default, version)
        avro = {"type": avro}
    if isinstance(avro, list):
        return _union_to_connect(avro, ctx, namespace, force_optional, field_default)
    if not isinstance(avro, dict):
        raise DataException(f"Invalid Avro schema: {avro!r}")
    kind = avro.get("type")
    if isinstance(kind, (dict, list)):
        return _to_connect(kind, ctx, namespace, force_optional, field_default, version)
    logical = avro.get("logicalType")
    connect_type = avro.get(CONNECT_TYPE_PROP)
    params: dict[str, str] = {}
    builder: SchemaBuilder
    preset_name: str | None = None  # logical builders come with their name and version
    if kind == "boolean":
        builder = SchemaBuilder.bool_()
    elif kind in ("bytes", "fixed"):
        if logical == "decimal":
            scale = avro.get("scale", 0)
            if not isinstance(scale, int):
                raise DataException("scale must be specified and must be a number.")
            builder = Decimal.builder(scale)
            preset_name = Decimal.LOGICAL_NAME
            precision = avro.get("precision")
            if precision is not None and precision != CONNECT_AVRO_DECIMAL_PRECISION_DEFAULT:
                builder.parameter(CONNECT_AVRO_DECIMAL_PRECISION_PROP, str(precision))
        else:
            builder = SchemaBuilder.bytes_()
        if kind == "fixed":
            full = _full_name(avro, namespace)
            ctx.named[full] = (avro, None)
            builder.parameter(CONNECT_AVRO_FIXED_SIZE_PROP, str(avro["size"]))
    elif kind == "double":
        builder = SchemaBuilder.float64()
    elif kind == "float":
        builder = SchemaBuilder.float32()
    elif kind == "int":
        if logical == "date":
            builder, preset_name = Date.builder(), Date.LOGICAL_NAME
        elif logical == "time-millis":
            builder, preset_name = Time.builder(), Time.LOGICAL_NAME
        elif connect_type in ("int8", "int16"):
            builder = SchemaBuilder(connect_type)
        else:
            builder = SchemaBuilder.int32()
    elif kind == "long":
        if logical == "timestamp-millis":
            builder, preset_name = Timestamp.builder(), Timestamp.LOGICAL_NAME
        else:
            builder = SchemaBuilder.int64()
    elif kind == "string":
        builder = SchemaBuilder.string()
    elif kind == "array":
        items = avro["items"]
        entry = ctx.named.get(items, (None,))[0] if isinstance(items, str) else items
        if _is_map_entry(entry, namespace):
            assert isinstance(entry, dict)
            fields = {f["name"]: f["type"] for f in entry["fields"]}
            if set(fields) != {KEY_FIELD, VALUE_FIELD}:
                raise DataException(
                    "Found map encoded as array of key-value pairs, but array elements do not "
                    "match the "
                    "expected format."
                )
            if not isinstance(items, str):
                ctx.named[_full_name(entry, namespace)] = (entry, None)
            entry_ns = entry.get("namespace", namespace)
            builder = SchemaBuilder.map(
                _to_connect(fields[KEY_FIELD], ctx, entry_ns, False, _NO_DEFAULT),
                _to_connect(fields[VALUE_FIELD], ctx, entry_ns, False, _NO_DEFAULT),
            )
        else:
            builder = SchemaBuilder.array(_to_connect(items, ctx, namespace, False, _NO_DEFAULT))
    elif kind == "map":
        builder = SchemaBuilder.map(
            STRING_SCHEMA, _to_connect(avro["values"], ctx, namespace, False, _NO_DEFAULT)
        )
    elif kind == "record":
        full = _full_name(avro, namespace)
        ctx.named[full] = (avro, None)
        record_ns = full.rpartition(".")[0] or None
        builder = SchemaBuilder.struct()
        for field in avro.get("fields", []):
            default = field["default"] if "default" in field else _NO_DEFAULT
            builder.field(field["name"], _to_connect(field["type"], ctx, record_ns, False, default))
    elif kind == "enum":
        full = _full_name(avro, namespace)
        ctx.named[full] = (avro, None)
        builder = SchemaBuilder.string().parameter(AVRO_TYPE_ENUM, full)
        for symbol in avro.get("symbols", []):
            builder.parameter(f"{AVRO_TYPE_ENUM}.{symbol}", symbol)
    elif kind == "null":
        raise DataException("Standalone null schemas are not supported by this converter")
    else:
        raise DataException(f"Couldn't translate unsupported schema type {kind!r}.")

    if CONNECT_DOC_PROP in avro:
        builder.doc(avro[CONNECT_DOC_PROP])
    connect_version = avro.get(CONNECT_VERSION_PROP)
    if connect_version is not None:
        if not isinstance(connect_version, int):
            raise DataException(f"Invalid Connect version found: {connect_version!r}")
        version = connect_version
    if version is not None and version >= 0:
        if preset_name is None:
            builder.version(version)
        elif connect_version is not None and version != LOGICAL_SCHEMA_VERSION:
            raise DataException(
                f"Mismatched versions: {preset_name} has version {LOGICAL_SCHEMA_VERSION}, "
                f"the source schema says {version}"
            )
    raw_params = avro.get(CONNECT_PARAMETERS_PROP)
    if raw_params is not None:
        if not isinstance(raw_params, dict) or not all(
            isinstance(v, str) for v in raw_params.values()
        ):
            raise DataException(
                f"Expected JSON object of strings for schema parameters but found: {raw_params!r}"
            )
        params.update(raw_params)
    for key, value in avro.items():
        if key.startswith("avro"):
            params[key] = str(value)
    if params:
        builder.parameters(params)
    connect_default = avro.get(CONNECT_DEFAULT_VALUE_PROP, _NO_DEFAULT)
    default = field_default
    if default is _NO_DEFAULT:
        default = connect_default
    elif connect_default is _NO_DEFAULT and default is not None:
        # Confluent flags every Avro-originated field default (null ones too); a null
        # default never writes connect.default anyway, so we flag only real values and
        # keep Connect -> Avro -> Connect lossless for optional fields.
        builder.parameter(AVRO_FIELD_DEFAULT_FLAG_PROP, "true")
    name = avro.get(CONNECT_NAME_PROP)
    if name is None and kind in ("record", "enum"):
        name = _full_name(avro, namespace)
    if name is not None and not str(name).startswith(DEFAULT_SCHEMA_FULL_NAME):
        if preset_name is None:
            builder.name(name)
        elif preset_name != name:
            raise DataException(
                f"Mismatched names: {preset_name!r} differs from name in source schema {name!r}"
            )
    if force_optional:
        builder.optional()
    if default is not _NO_DEFAULT and default is not None:
        provisional = builder.build()
        builder.default_value(_default_from_avro(provisional, default))
    schema = builder.build()
    if kind in _NAMED_TYPES:
        full = _full_name(avro, namespace)
        ctx.named[full] = (avro, _with_optional(schema, False))
    return schema


def _is_map_entry(entry: object, namespace: str | None) -> bool:
    if not isinstance(entry, dict) or entry.get("type") != "record":
        return False
    if _full_name(entry, namespace) == f"{NAMESPACE}.{MAP_ENTRY_TYPE_NAME}":
        return True
    return entry.get(CONNECT_INTERNAL_TYPE_NAME) == MAP_ENTRY_TYPE_NAME


def _with_optional(schema: Schema, optional: bool) -> Schema:
    if schema.optional == optional:
        return schema
    return Schema(
        schema.type,
        optional,
        schema.default_value,
        schema.name,
        schema.version,
        schema.doc,
        schema.parameters,
        schema.fields,
        schema.key_schema,
        schema.value_schema,
    )


def _branch_name(avro: AvroSchemaJson, namespace: str | None) -> str:
    if isinstance(avro, str):
        return avro.rsplit(".", 1)[-1]
    if isinstance(avro, dict):
        kind = avro.get("type")
        if kind in ("record", "enum"):
            return str(avro["name"]).rsplit(".", 1)[-1]
        if isinstance(kind, str):
            return kind
    raise DataException(f"Unsupported union member {avro!r}")


def _union_to_connect(
    branches: list[AvroSchemaJson],
    ctx: _ToConnect,
    namespace: str | None,
    force_optional: bool,
    field_default: object,
) -> Schema:
    non_null = [b for b in branches if b != "null" and b != {"type": "null"}]
    if len(branches) == 2 and len(non_null) == 1:
        return _to_connect(non_null[0], ctx, namespace, True, field_default)
    builder = SchemaBuilder.struct().name(AVRO_TYPE_UNION)
    seen = set()
    for branch in non_null:
        field_name = _branch_name(branch, namespace)
        if field_name in seen:
            raise DataException("Multiple union schemas map to the Connect union field name")
        seen.add(field_name)
        builder.field(field_name, _to_connect(branch, ctx, namespace, True, _NO_DEFAULT))
    if len(non_null) != len(branches) or force_optional:
        builder.optional()
    return builder.build()


def _default_from_avro(schema: Schema, value: Any) -> object:  # noqa: C901
    """A Connect default from Avro's JSON default encoding (logical types converted)."""
    if value is None:
        return None
    kind = schema.type
    if kind is Type.BYTES:
        raw: object = value.encode("latin-1") if isinstance(value, str) else bytes(value)
    elif kind is Type.ARRAY:
        assert schema.value_schema is not None
        raw = [_default_from_avro(schema.value_schema, v) for v in value]
    elif kind is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        if isinstance(value, dict):
            raw = {k: _default_from_avro(schema.value_schema, v) for k, v in value.items()}
        else:
            raw = {
                _hashable(_default_from_avro(schema.key_schema, k)): _default_from_avro(
                    schema.value_schema, v
                )
                for k, v in value
            }
    elif kind is Type.STRUCT:
        if schema.name == AVRO_TYPE_UNION:
            first = schema.fields[0]
            return Struct(schema).put(first, _default_from_avro(first.schema, value))
        struct = Struct(schema)
        for field in schema.fields:
            struct.put(field, _default_from_avro(field.schema, value.get(field.name)))
        return struct
    elif kind in (Type.FLOAT32, Type.FLOAT64):
        raw = float(value)
    else:
        raw = value
    return _from_physical(schema, raw)


def _hashable(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


def _from_physical(schema: Schema, value: object) -> object:
    name = schema.name
    if value is None or name is None:
        return value
    if name == Decimal.LOGICAL_NAME:
        return Decimal.to_logical(schema, value)  # type: ignore[arg-type]
    if name == Date.LOGICAL_NAME:
        return Date.to_logical(schema, value)  # type: ignore[arg-type]
    if name == Time.LOGICAL_NAME:
        return Time.to_logical(schema, value)  # type: ignore[arg-type]
    if name == Timestamp.LOGICAL_NAME:
        return Timestamp.to_logical(schema, value)  # type: ignore[arg-type]
    return value


_PY_BRANCH = {
    bool: ("boolean",),
    int: ("int", "long"),
    float: ("double", "float"),
    str: ("string",),
    bytes: ("bytes",),
}


def to_connect_data(schema: Schema, datum: object) -> object:  # noqa: C901
    """Return the Connect value of a fastavro datum read with ``schema``'s Avro form.

    Raises:
        DataException: If the datum does not fit the schema.
    """
    if datum is None:
        if not schema.optional and schema.default_value is None:
            raise DataException(f"Found null value for non-optional schema {schema!r}")
        return None
    kind = schema.type
    if kind is Type.STRUCT:
        if schema.name == AVRO_TYPE_UNION:
            return _union_value(schema, datum)
        if isinstance(datum, tuple):  # (record name, record) from a union
            datum = datum[1]
        if not isinstance(datum, dict):
            raise DataException(f"Invalid type for STRUCT: {type(datum).__name__}")
        struct = Struct(schema)
        for field in schema.fields:
            struct.put(field, to_connect_data(field.schema, datum.get(field.name)))
        return struct
    if kind is Type.ARRAY:
        assert schema.value_schema is not None
        return [to_connect_data(schema.value_schema, v) for v in datum]  # type: ignore[attr-defined]
    if kind is Type.MAP:
        key_schema, value_schema = schema.key_schema, schema.value_schema
        assert key_schema is not None and value_schema is not None
        if isinstance(datum, dict):
            return {k: to_connect_data(value_schema, v) for k, v in datum.items()}
        return {
            _hashable(to_connect_data(key_schema, e[KEY_FIELD])): to_connect_data(
                value_schema, e[VALUE_FIELD]
            )
            for e in datum  # type: ignore[attr-defined]
        }
    if kind is Type.BYTES and isinstance(datum, (bytearray, memoryview)):
        datum = bytes(datum)
    if isinstance(datum, tuple):
        datum = datum[1]
    return _from_physical(schema, datum)


def _union_value(schema: Schema, datum: object) -> Struct:
    struct = Struct(schema)
    if isinstance(datum, tuple):
        name, inner = datum
        short = str(name).rsplit(".", 1)[-1]
        field = schema.field(short)
        if field is None:
            raise DataException(f"Did not find matching union field for record {name!r}")
        return struct.put(field, to_connect_data(field.schema, inner))
    candidates = _PY_BRANCH.get(type(datum), ())
    for field in schema.fields:
        fits = (
            field.name in candidates
            or (isinstance(datum, list) and field.schema.type in (Type.ARRAY, Type.MAP))
            or (isinstance(datum, dict) and field.schema.type is Type.MAP)
            or (isinstance(datum, str) and field.schema.type is Type.STRING)
            or (isinstance(datum, bytes) and field.schema.type is Type.BYTES)
        )
        if fits:
            return struct.put(field, to_connect_data(field.schema, datum))
    raise DataException(f"Did not find matching union field for data: {datum!r}")
