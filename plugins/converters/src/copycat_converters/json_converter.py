"""JsonConverter: JSON with an optional schema envelope, byte-compatible with Kafka Connect's.

With ``schemas.enable=true`` (the default) every value is written as
``{"schema":<schema>,"payload":<value>}`` and read back with its schema; with
``false`` only the bare value is written and read values have no schema.

Value encoding (as Kafka): bytes and BASE64 decimals as base64 strings,
NUMERIC decimals as JSON numbers, Date/Time/Timestamp as integers (days,
ms of day, epoch ms), maps with string keys as objects and other maps as
arrays of ``[key, value]`` pairs, NaN and infinities as the strings
``"NaN"``, ``"Infinity"``, ``"-Infinity"``.

Where Kafka silently produces a wrong value we raise DataException instead:
a JSON value of the wrong type for its schema (Kafka yields 0/false/null),
an integer out of range for INT8/16/32 (Kafka wraps it), an unhashable map
key. Float fields written as ``"NaN"``/``"Infinity"`` read back as those
floats (Kafka reads 0.0). FLOAT32 values stay Python floats on read.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import decimal
import json
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from copycat_converters import _jsondepth, _jsontext
from copycat_converters._base import VersionedPlugin, converter_config_def, with_type
from copycat_converters._jsoncompiled import Fallback, compile_reader, compile_writer
from copycat_converters._jsondepth import (
    MAX_NESTING_DEPTH,
    SHALLOW_BYTES,
    call_deeply,
    check_read_depth,
    nesting_depth,
    read_too_deep,
    schema_depth,
    value_depth,
    write_too_deep,
)
from copycat_converters._jsonschema import from_json_schema, has_decimal, to_json_schema
from copycat_converters._jsontext import (
    Raw,
    dumps,
    dumps_bytes,
    java_double,
    java_float,
    loads_fast,
)
from plugin_api import (
    NULL_SCHEMA_AND_VALUE,
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    Converter,
    DataException,
    Date,
    Decimal,
    HeaderConverter,
    Headers,
    Importance,
    Schema,
    SchemaAndValue,
    Struct,
    Time,
    Timestamp,
    Type,
    Width,
    java_class_name,
)

__all__ = ["JsonConverter"]

SCHEMAS_ENABLE_CONFIG = "schemas.enable"
SCHEMAS_CACHE_SIZE_CONFIG = "schemas.cache.size"
DECIMAL_FORMAT_CONFIG = "decimal.format"
REPLACE_NULL_WITH_DEFAULT_CONFIG = "replace.null.with.default"
DECIMAL_FORMAT_BASE64 = "BASE64"
DECIMAL_FORMAT_NUMERIC = "NUMERIC"

ENVELOPE_ERROR = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not '
    "contain additional "
    "fields. If you are trying to deserialize plain JSON data, set schemas.enable=false in your "
    "converter "
    "configuration."
)

# What JSON (and Jackson) skips between tokens; Python's str.strip() would skip more.
_JSON_WHITESPACE = " \t\r\n"

# Kafka's serializer writes the envelope in this exact layout; recognising it lets
# us cache parsed schemas by their JSON text instead of re-building them per record.
_ENVELOPE_HEAD = '{"schema":'
_ENVELOPE_MID = ',"payload":'
_ENVELOPE_HEAD_BYTES = _ENVELOPE_HEAD.encode()
_ENVELOPE_MID_BYTES = _ENVELOPE_MID.encode()
_INT_RANGES = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}
_NON_FINITE_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_EXACT_DECODER = json.JSONDecoder(
    parse_float=decimal.Decimal, parse_constant=lambda c: _reject_constant(c)
)
# Payloads under a schema: a FLOAT64/FLOAT32 reads as Kafka's BigDecimal would (no -0.0).
_FLOAT_DECODER = json.JSONDecoder(
    parse_float=lambda text: _java_float(text), parse_constant=lambda c: _reject_constant(c)
)
# schemas.enable=false when orjson declines a document: the same numbers orjson reads (a
# schemaless -0.0 stays -0.0, see docs/operator-guide.md).
_SCHEMALESS_DECODER = json.JSONDecoder(parse_constant=lambda c: _reject_constant(c))
# Envelope layouts (schema texts) whose compiled readers are tried first, most recent first: a
# topic usually carries one schema, sometimes a few in turn (keys and values use separate
# converters). Each miss costs a prefix comparison; past this, the schema's slow first read.
RECENT_READ_SCHEMAS = 4
_CLOSE_BRACE = ord("}")
_new_tuple = tuple.__new__

CONFIG_DEF = (
    converter_config_def()
    .define(
        SCHEMAS_ENABLE_CONFIG,
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.HIGH,
        "Include schemas within each of the serialized values and keys.",
        "Schemas",
        0,
        Width.MEDIUM,
        "Enable Schemas",
    )
    .define(
        SCHEMAS_CACHE_SIZE_CONFIG,
        ConfigType.INT,
        1000,
        None,  # no validator, as in Kafka: a negative size caches nothing
        Importance.HIGH,
        "The maximum number of schemas that can be cached in this converter instance.",
        "Schemas",
        1,
        Width.MEDIUM,
        "Schema Cache Size",
    )
    .define(
        DECIMAL_FORMAT_CONFIG,
        ConfigType.STRING,
        DECIMAL_FORMAT_BASE64,
        CaseInsensitiveValidString.in_(DECIMAL_FORMAT_BASE64, DECIMAL_FORMAT_NUMERIC),
        Importance.LOW,
        "Controls which format this converter will serialize decimals in. This value is case "
        "insensitive "
        "and can be either 'BASE64' (default) or 'NUMERIC'",
        "Serialization",
        0,
        Width.MEDIUM,
        "Decimal Format",
    )
    .define(
        REPLACE_NULL_WITH_DEFAULT_CONFIG,
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "Whether to replace fields that have a default value and that are null to the default "
        "value. "
        "When set to true, the default value is used, otherwise null is used.",
        "Serialization",
        1,
        Width.MEDIUM,
        "Replace null with default",
    )
)


def _reject_constant(constant: str) -> float:
    raise DataException(
        f"Converting byte[] to Kafka Connect data failed due to serialization error: "
        f"non-standard token {constant!r}"
    )


class _LRU:
    """A tiny LRU map; capacity 0 disables caching."""

    __slots__ = ("_data", "_capacity")

    def __init__(self, capacity: int) -> None:
        self._data: OrderedDict[Any, Any] = OrderedDict()
        self._capacity = capacity

    def get(self, key: Any) -> Any:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: Any, value: Any) -> None:
        if self._capacity <= 0:
            return
        self._data[key] = value
        self._data.move_to_end(key)
        if len(self._data) > self._capacity:
            self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


def _type_error(schema: Schema | None, value: object) -> DataException:
    kind = schema.type.name if schema is not None else "unknown schema"
    return DataException(f"Invalid type for {kind}: class {java_class_name(value)}")


class JsonConverter(VersionedPlugin, Converter, HeaderConverter):
    """Kafka Connect's JsonConverter; see the module docstring for the format."""

    to_connect_data_reads_headers = False  # plugin_api 0.1.5
    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.json.JsonConverter",)

    CONFIG_DEF = CONFIG_DEF

    def __init__(self) -> None:
        """Create a converter with Kafka's defaults (call :meth:`configure` before use)."""
        self._schemas_enabled = True
        self._decimal_numeric = False
        self._replace_null = True
        self._slow = False
        self._from_connect_cache = _LRU(1000)
        self._to_connect_cache = _LRU(1000)
        self._reset_compiled(1000)

    def config(self) -> ConfigDef:
        """Return the converter's settings."""
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, object], is_key: bool | None = None) -> None:
        """Parse the settings; ``is_key=None`` means header converter.

        Raises:
            ConfigException: Naming the invalid key.
        """
        conf = AbstractConfig(CONFIG_DEF, with_type(configs, is_key))
        self._schemas_enabled = bool(conf.get_boolean(SCHEMAS_ENABLE_CONFIG))
        self._decimal_numeric = (
            conf.get_string(DECIMAL_FORMAT_CONFIG) or ""
        ).upper() == DECIMAL_FORMAT_NUMERIC
        self._replace_null = bool(conf.get_boolean(REPLACE_NULL_WITH_DEFAULT_CONFIG))
        size = max(0, conf.get_int(SCHEMAS_CACHE_SIZE_CONFIG) or 0)
        self._from_connect_cache = _LRU(size)
        self._to_connect_cache = _LRU(size)
        self._reset_compiled(size)

    def _reset_compiled(self, size: int) -> None:
        # schema -> (envelope head, compiled writer); the last one is checked by identity
        self._writers = _LRU(size)
        self._last_writer: tuple[Schema | None, bytes, Callable[[Any], Any] | None] = (
            None,
            b"",
            None,
        )
        # (envelope head up to the payload, its length, schema, compiled reader, exact)
        self._recent_readers: list[tuple[bytes, int, Schema, Callable[[Any], Any], bool]] = []

    # -- Connect -> JSON -----------------------------------------------------------

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: object, headers: Headers | None = None
    ) -> bytes | None:
        """Serialize ``value``; ``None`` with no schema is a tombstone (``None``).

        Raises:
            DataException: If the value does not fit the schema, or its JSON would nest
                deeper than Kafka writes (1000 levels, the envelope's included).
        """
        try:
            if schema is not None:
                last = self._last_writer
                if last[0] is not schema:
                    last = self._writer_for(schema)
                writer = last[2]
                if writer is not None:
                    try:
                        return writer(value)  # type: ignore[no-any-return]
                    except Exception:  # noqa: BLE001 - Fallback, bad text, ...: the exact path
                        pass
            return self._from_connect_exact(topic, schema, value)
        except RecursionError:  # (a try costs nothing until it catches)
            return self._from_connect_deep(topic, schema, value)

    def _from_connect_deep(self, topic: str, schema: Schema | None, value: object) -> bytes | None:
        """:meth:`from_connect_data` of a value nested deeper than Python's recursion limit
        allowed: refused if its JSON nests deeper than Kafka's limit, else written again
        with room for it (:mod:`copycat_converters._jsondepth`)."""
        # Lower bounds first (without recursion): a value or schema past the limit by them
        # is not written at all; the bytes of one within them are measured exactly.
        envelope = 1 if self._schemas_enabled else 0
        deepest = value_depth(value)
        if self._schemas_enabled:
            deepest = max(deepest, schema_depth(schema))
        if deepest + envelope > MAX_NESTING_DEPTH:
            raise write_too_deep()
        data = call_deeply(lambda: self._from_connect_exact(topic, schema, value), _jsondepth.WRITE)
        if data is not None and nesting_depth(data) > MAX_NESTING_DEPTH:
            raise write_too_deep()
        return data

    def _from_connect_exact(self, topic: str, schema: Schema | None, value: object) -> bytes | None:
        """The straightforward path of :meth:`from_connect_data` (the reference of the
        compiled one, which falls back to it)."""
        if schema is None and value is None:
            return None
        try:
            if schema is None and not self._schemas_enabled and _json_native(value):
                return dumps_bytes(value, False)  # the common schemaless case, in one step
            self._slow = False
            payload = self._to_json(schema, value)
            if self._schemas_enabled:
                schema_text = self._schema_text(schema)
                return b"".join(
                    (
                        _ENVELOPE_HEAD_BYTES,
                        schema_text.encode("utf-8"),
                        _ENVELOPE_MID_BYTES,
                        dumps_bytes(payload, self._slow),
                        b"}",
                    )
                )
            return dumps_bytes(payload, self._slow)
        except UnicodeEncodeError as exc:
            raise DataException(
                "Converting Kafka Connect data to byte[] failed due to serialization error: "
                + str(exc)
            ) from exc

    def _writer_for(
        self, schema: Schema
    ) -> tuple[Schema | None, bytes, Callable[[Any], Any] | None]:
        """The compiled writer of ``schema`` and its envelope head (cached)."""
        found = self._writers.get(schema)
        if found is None:
            head = b""
            writer: Callable[[Any], Any] | None = None
            try:
                if self._schemas_enabled:
                    head = b"".join(
                        (
                            _ENVELOPE_HEAD_BYTES,
                            self._schema_text(schema).encode("utf-8"),
                            _ENVELOPE_MID_BYTES,
                        )
                    )
                fast = _jsontext._orjson
                if fast is not None:  # else every value takes the exact path
                    tail = b"}" if self._schemas_enabled else b""
                    writer = compile_writer(
                        schema,
                        self._replace_null,
                        self._decimal_numeric,
                        lambda number: self._float_to_json(number, True),
                        self._default_to_json,
                        (head, tail, fast.dumps, _jsontext.jackson_escapes),
                    )
            except Exception:  # noqa: BLE001 - e.g. a default the schema text cannot hold:
                pass  # every value of this schema takes the exact path, which reports it
            found = (schema, head, writer)
            self._writers.put(schema, found)
        elif found[0] is not schema:  # an equal schema: later records likely carry this one
            found = (schema, found[1], found[2])
        self._last_writer = found
        return found  # type: ignore[no-any-return]

    def _default_to_json(self, schema: Schema) -> object:
        """The exact path's JSON for ``schema``'s default; Fallback if it holds Raw text."""
        saved, self._slow = self._slow, False
        try:
            tree = self._to_json(schema, schema.default_value)
            if self._slow:
                raise Fallback
            return tree
        except Fallback:
            raise
        except Exception as exc:  # noqa: BLE001 - the exact path raises it per record
            raise Fallback from exc
        finally:
            self._slow = saved

    def as_json_schema(self, schema: Schema | None) -> object:
        """The JSON schema object (dicts/lists) of ``schema``, as Kafka's ``asJsonSchema``."""
        if schema is None:
            return None
        return json.loads(self._schema_text(schema), parse_float=decimal.Decimal)

    def _schema_text(self, schema: Schema | None) -> str:
        if schema is None:
            return "null"
        cached = self._from_connect_cache.get(schema)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        saved = self._slow
        self._slow = False
        text = dumps(to_json_schema(schema, self._to_json), self._slow)
        self._slow = saved
        self._from_connect_cache.put(schema, text)
        return text

    def _to_json(self, schema: Schema | None, value: object) -> object:  # noqa: C901 - mirrors Kafka's switch
        if schema is None and _json_native(value):
            return value  # encodes exactly as Kafka's would: no floats, bytes or structs inside
        if value is None:
            if schema is None:
                return None
            if schema.default_value is not None and self._replace_null:
                return self._to_json(schema, schema.default_value)
            if schema.optional:
                return None
            raise DataException(
                "Conversion error: null value for field that is required and has no default value"
            )
        if schema is not None and schema.name is not None:
            logical = self._logical_to_json(schema, value)
            if logical is not _NOT_LOGICAL:
                return logical
        kind = schema.type if schema is not None else _infer_type(value)
        if kind is Type.STRING:
            if not isinstance(value, str):
                raise _type_error(schema, value)
            return value
        if kind in _INT_RANGES:
            if not isinstance(value, int) or isinstance(value, bool):
                raise _type_error(schema, value)
            return value
        if kind is Type.FLOAT64 or kind is Type.FLOAT32:
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise _type_error(schema, value)
            return self._float_to_json(float(value), kind is Type.FLOAT32)
        if kind is Type.BOOLEAN:
            if not isinstance(value, bool):
                raise _type_error(schema, value)
            return value
        if kind is Type.BYTES:
            if not isinstance(value, (bytes, bytearray, memoryview)):
                raise _type_error(schema, value)
            return base64.b64encode(value).decode("ascii")
        if kind is Type.ARRAY:
            if not isinstance(value, (list, tuple)):
                raise _type_error(schema, value)
            element = schema.value_schema if schema is not None else None
            return [self._to_json(element, item) for item in value]
        if kind is Type.MAP:
            if not isinstance(value, Mapping):
                raise _type_error(schema, value)
            return self._map_to_json(schema, value)
        if kind is Type.STRUCT:
            if not isinstance(value, Struct):
                raise _type_error(schema, value)
            struct_schema = schema if schema is not None else value.schema
            if value.schema is not struct_schema and (
                value.schema.fields != struct_schema.fields
                or value.schema.name != struct_schema.name
                or value.schema.version != struct_schema.version
            ):
                raise DataException("Mismatching schema.")
            return {
                field.name: self._to_json(field.schema, value.get_without_default(field.name))
                for field in struct_schema.fields
            }
        raise DataException(f"Couldn't convert {value!r} to JSON.")  # pragma: no cover

    def _float_to_json(self, number: float, float32: bool) -> object:
        if not math.isfinite(number):
            # Jackson quotes non-finite numbers (QUOTE_NON_NUMERIC_NUMBERS).
            return java_double(number)
        text = java_float(number) if float32 else java_double(number)
        if not float32 and "E" not in text:
            return number  # repr() already equals Double.toString here
        as_float = float(text)
        if "E" not in text and repr(as_float) == text:
            return as_float
        self._slow = True
        return Raw(text)

    def _map_to_json(self, schema: Schema | None, value: Mapping[Any, Any]) -> object:
        key_schema = schema.key_schema if schema is not None else None
        value_schema = schema.value_schema if schema is not None else None
        if schema is None:
            object_mode = all(isinstance(k, str) for k in value)
        else:
            object_mode = key_schema is not None and key_schema.type is Type.STRING
        if object_mode:
            out: dict[str, object] = {}
            for key, item in value.items():
                json_key = self._to_json(key_schema, key)
                if not isinstance(json_key, str):
                    json_key = "null" if json_key is None else str(json_key)
                out[json_key] = self._to_json(value_schema, item)
            return out
        return [
            [self._to_json(key_schema, k), self._to_json(value_schema, v)] for k, v in value.items()
        ]

    def _logical_to_json(self, schema: Schema, value: object) -> object:
        name = schema.name
        if name == Decimal.LOGICAL_NAME:
            if not isinstance(value, decimal.Decimal):
                raise DataException(
                    "Invalid type for Decimal, expected BigDecimal but was "
                    f"class {java_class_name(value)}"
                )
            if self._decimal_numeric:
                if not value.is_finite():
                    raise DataException(f"Invalid Decimal value {value}: not finite")
                self._slow = True
                return Raw(str(value))
            return base64.b64encode(Decimal.from_logical(schema, value)).decode("ascii")
        if name == Date.LOGICAL_NAME:
            if not isinstance(value, datetime.date):
                raise DataException(
                    f"Invalid type for Date, expected Date but was "
                    f"class {java_class_name(value, schema)}"
                )
            return Date.from_logical(schema, value)
        if name == Time.LOGICAL_NAME:
            if not isinstance(value, datetime.time):
                raise DataException(
                    f"Invalid type for Time, expected Date but was "
                    f"class {java_class_name(value, schema)}"
                )
            return Time.from_logical(schema, value)
        if name == Timestamp.LOGICAL_NAME:
            if not isinstance(value, datetime.datetime):
                raise DataException(
                    "Invalid type for Timestamp, expected Date but was "
                    f"class {java_class_name(value, schema)}"
                )
            return Timestamp.from_logical(schema, value)
        return _NOT_LOGICAL

    # -- JSON -> Connect -----------------------------------------------------------

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: Headers | None = None
    ) -> SchemaAndValue:
        """Deserialize ``data``; ``None`` (a tombstone) gives ``SchemaAndValue(None, None)``.

        Raises:
            DataException: If the bytes are not JSON, the envelope is missing with
                ``schemas.enable=true``, the payload does not fit its schema, or the document
                nests deeper than Kafka reads (1000 levels, the envelope's included).
        """
        if data is None:
            return NULL_SCHEMA_AND_VALUE
        try:
            if len(data) >= SHALLOW_BYTES:  # only a document this long can nest too deep
                check_read_depth(data)
            if self._recent_readers and type(data) is bytes:
                found = self._read_compiled(data)
                if found is not None:
                    return _new_tuple(SchemaAndValue, found)  # its __new__ costs 3x this
            return self._to_connect_exact(data)
        except RecursionError:  # (a try costs nothing until it catches)
            return self._to_connect_deep(data)

    def _to_connect_checked(self, data: bytes | None) -> SchemaAndValue:
        """:meth:`to_connect_data` of a record whose depth the batch has checked (the same
        steps without the length comparison)."""
        if data is None:
            return NULL_SCHEMA_AND_VALUE
        try:
            if self._recent_readers and type(data) is bytes:
                found = self._read_compiled(data)
                if found is not None:
                    return _new_tuple(SchemaAndValue, found)
            return self._to_connect_exact(data)
        except RecursionError:
            return self._to_connect_deep(data)

    def _to_connect_deep(self, data: bytes) -> SchemaAndValue:
        """:meth:`to_connect_data` of a document nested deeper than Python's recursion limit
        allowed: refused if deeper than Kafka reads, else read again with room for it."""
        if nesting_depth(data) > MAX_NESTING_DEPTH:
            raise read_too_deep()
        return call_deeply(lambda: self._to_connect_exact(data), _jsondepth.READ)

    def _to_connect_exact(self, data: bytes) -> SchemaAndValue:
        """The straightforward path of :meth:`to_connect_data` (the reference of the compiled
        readers, which fall back to it); remembers the compiled reader of an envelope's
        schema for the documents after it."""
        if not self._schemas_enabled:
            try:
                return SchemaAndValue(
                    None, loads_fast(data if type(data) is bytes else bytes(data))
                )
            except ValueError:
                pass  # empty input, or an error worth the stdlib's exact message: below
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataException(
                f"Converting byte[] to Kafka Connect data failed due to serialization error: {exc}"
            ) from exc
        if not text.strip(_JSON_WHITESPACE):
            # Jackson reads empty input as a missing node: null without schemas, and not
            # the envelope that schemas.enable=true requires.
            if not self._schemas_enabled:
                return NULL_SCHEMA_AND_VALUE
            raise DataException(ENVELOPE_ERROR)
        if not self._schemas_enabled:
            return SchemaAndValue(None, _loads(_SCHEMALESS_DECODER, text))
        if text.startswith(_ENVELOPE_HEAD):
            found = self._read_envelope_fast(text)
            if found is not None:
                return found
        envelope = _loads(_EXACT_DECODER, text)
        if not isinstance(envelope, dict) or envelope.keys() != {"schema", "payload"}:
            raise DataException(ENVELOPE_ERROR)
        schema_node = envelope["schema"]
        schema = None if schema_node is None else from_json_schema(schema_node, self._to_connect)
        return SchemaAndValue(schema, self._to_connect(schema, envelope["payload"]))

    def _read_envelope_fast(self, text: str) -> SchemaAndValue | None:
        """Read Kafka's exact envelope layout, caching schemas by their JSON text.

        ``None`` if the document is not laid out that way."""
        start = len(_ENVELOPE_HEAD)
        try:
            schema_node, end = _EXACT_DECODER.raw_decode(text, start)
        except ValueError:
            return None
        if not text.startswith(_ENVELOPE_MID, end):
            return None
        schema_text = text[start:end]
        cached = self._to_connect_cache.get(schema_text)
        if cached is None:
            schema = (
                None if schema_node is None else from_json_schema(schema_node, self._to_connect)
            )
            cached = (schema, has_decimal(schema))
            self._to_connect_cache.put(schema_text, cached)
        schema, exact = cached
        try:
            payload, stop = (_EXACT_DECODER if exact else _FLOAT_DECODER).raw_decode(
                text, end + len(_ENVELOPE_MID)
            )
        except ValueError:
            return None
        if text[stop:].strip() != "}":
            return None
        if schema is None:
            return SchemaAndValue(None, payload)  # parsed with floats already: nothing to convert
        result = SchemaAndValue(schema, self._to_connect(schema, payload))
        self._remember_reader(text[: end + len(_ENVELOPE_MID)].encode("utf-8"), schema, exact)
        return result

    def _remember_reader(self, head: bytes, schema: Schema, exact: bool) -> None:
        """Try the compiled reader of ``schema`` first for documents starting with ``head``."""
        recent = self._recent_readers
        for index, entry in enumerate(recent):
            if entry[0] == head:
                recent.insert(0, recent.pop(index))
                return
        reader = compile_reader(schema, self._replace_null, exact)
        recent.insert(0, (head, len(head), schema, reader, exact))
        del recent[RECENT_READ_SCHEMAS:]

    def _read_compiled(self, data: bytes) -> tuple[Schema, object] | None:
        """``(schema, value)`` through a compiled reader, or None for the exact path: the
        document does not start with a recent envelope head or is not laid out as Kafka
        writes it, or the reader fell back."""
        if not data or data[-1] != _CLOSE_BRACE:
            return None
        for head, size, schema, reader, exact in self._recent_readers:
            if data.startswith(head):
                try:
                    fast = _jsontext._orjson
                    if exact or fast is None:
                        return schema, reader(loads_payload(data, size, exact))
                    payload = data[size:-1]  # (a copy: cheaper than a memoryview, measured)
                    return schema, reader(fast.loads(payload))
                except Exception:  # noqa: BLE001 - Fallback, bad JSON, ...: the exact path
                    return None
        return None

    def to_connect_data_batch(
        self, topic: str, data: Sequence[bytes | None], headers: Sequence[Headers | None]
    ) -> Sequence[tuple[Schema | None, object]]:
        """:meth:`to_connect_data` for a column of records: while records start with the same
        envelope head as the one before, its compiled reader runs inline (a batch usually
        holds one schema). The records long enough to nest deeper than Kafka reads are
        checked first, found by one pass in C over the batch's lengths.

        Raises:
            DataException: As :meth:`to_connect_data` (the runtime then converts the batch
                record by record, to report the record at fault).
        """
        convert, read = self._to_connect_checked, self._read_compiled
        fast = _jsontext._orjson
        loads = None if fast is None else fast.loads
        out: list[tuple[Schema | None, object]] = []
        append = out.append
        head, size, schema, reader, close = b"", 0, None, None, _CLOSE_BRACE
        if len(headers) != len(data):  # (JsonConverter reads no headers)
            raise ValueError(f"{len(data)} values but {len(headers)} headers")
        _check_batch_depth(data)
        for value in data:
            if (
                reader is not None
                and type(value) is bytes
                and value.startswith(head)
                and value[-1] == close
            ):
                try:
                    append((schema, reader(loads(value[size:-1]))))  # type: ignore[misc]
                    continue
                except Exception:  # noqa: BLE001 - the exact path below gives value or error
                    pass
            found = read(value) if type(value) is bytes and self._recent_readers else None
            append(found if found is not None else convert(value))
            recent = self._recent_readers
            if recent and fast is not None and not recent[0][4]:  # orjson reads it: go inline
                head, size, schema, reader = recent[0][:4]
            else:
                reader = None
        return out

    def _to_connect(self, schema: Schema | None, node: object) -> object:  # noqa: C901 - mirrors Kafka's switch
        if schema is None:
            return _schemaless(node)
        if node is None:
            if schema.default_value is not None and self._replace_null:
                return schema.default_value
            if schema.optional:
                return None
            raise DataException(f"Invalid null value for required {schema.type.name} field")
        if schema.name is not None:
            logical = _logical_to_connect(schema, node)
            if logical is not _NOT_LOGICAL:
                return logical
        kind = schema.type
        if kind is Type.STRING:
            if not isinstance(node, str):
                raise _node_error(kind, node)
            return node
        if kind in _INT_RANGES:
            if isinstance(node, bool) or not isinstance(node, (int, float, decimal.Decimal)):
                raise _node_error(kind, node)
            number = int(node)
            low, high = _INT_RANGES[kind]
            if not low <= number <= high:
                raise DataException(f"Value {number} is out of range for {kind.name}")
            return number
        if kind is Type.FLOAT64 or kind is Type.FLOAT32:
            if isinstance(node, str) and node in _NON_FINITE_FLOATS:
                return _NON_FINITE_FLOATS[node]
            if isinstance(node, bool) or not isinstance(node, (int, float, decimal.Decimal)):
                raise _node_error(kind, node)
            if type(node) is decimal.Decimal and not node:
                return 0.0  # a zero BigDecimal, whatever its sign in the text
            return float(node)
        if kind is Type.BOOLEAN:
            if not isinstance(node, bool):
                raise _node_error(kind, node)
            return node
        if kind is Type.BYTES:
            return _base64(node, "Invalid bytes field")
        if kind is Type.ARRAY:
            if not isinstance(node, list):
                raise _node_error(kind, node)
            element = schema.value_schema
            return [self._to_connect(element, item) for item in node]
        if kind is Type.MAP:
            return self._map_to_connect(schema, node)
        if kind is Type.STRUCT:
            if not isinstance(node, dict):
                raise DataException(
                    f"Structs should be encoded as JSON objects, but found {_node_type(node)}"
                )
            struct = Struct(schema)
            for field in schema.fields:
                struct.put(field, self._to_connect(field.schema, node.get(field.name)))
            return struct
        raise DataException(f"Unknown schema type: {kind}")  # pragma: no cover

    def _map_to_connect(self, schema: Schema, node: object) -> dict[Any, Any]:
        key_schema = schema.key_schema
        value_schema = schema.value_schema
        assert key_schema is not None
        if key_schema.type is Type.STRING:
            if not isinstance(node, dict):
                raise DataException(
                    "Maps with string fields should be encoded as JSON objects, but found "
                    f"{_node_type(node)}"
                )
            return {key: self._to_connect(value_schema, item) for key, item in node.items()}
        if not isinstance(node, list):
            raise DataException(
                "Maps with non-string fields should be encoded as JSON array of tuples, but "
                f"found {_node_type(node)}"
            )
        result: dict[Any, Any] = {}
        for entry in node:
            if not isinstance(entry, list):
                raise DataException(
                    f"Found invalid map entry instead of array tuple: {_node_type(entry)}"
                )
            if len(entry) != 2:
                raise DataException(
                    f"Found invalid map entry, expected length 2 but found :{len(entry)}"
                )
            key = self._to_connect(key_schema, entry[0])
            if isinstance(key, list):
                key = tuple(key)
            try:
                result[key] = self._to_connect(value_schema, entry[1])
            except TypeError as exc:
                raise DataException(f"Map key {key!r} cannot be used as a Python dict key") from exc
        return result

    # -- header converter ----------------------------------------------------------

    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: object
    ) -> bytes | None:
        """Same as :meth:`from_connect_data`."""
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, data: bytes | None) -> SchemaAndValue:
        """Same as :meth:`to_connect_data`."""
        return self.to_connect_data(topic, data)


_NOT_LOGICAL = object()


def _check_batch_depth(data: Sequence[bytes | None]) -> None:
    """Refuse a batch holding a document nested deeper than Kafka reads (orjson reads 1024
    levels). Only documents of at least ``SHALLOW_BYTES`` can be, found without a Python
    step per record.

    Raises:
        DataException: Kafka's, naming the depth and the limit.
    """
    if not data:
        return
    try:
        longest = max(map(len, data))  # type: ignore[arg-type]
    except TypeError:  # a tombstone (None) among them
        longest = max(map(len, filter(None, data)), default=0)  # type: ignore[arg-type]
    if longest >= SHALLOW_BYTES:
        for value in data:
            if value is not None and len(value) >= SHALLOW_BYTES:
                check_read_depth(value)


def loads_payload(data: bytes, start: int, exact: bool) -> Any:
    """The JSON value in ``data[start:-1]``: an envelope's payload, its head and closing brace
    cut off. orjson where the straightforward path parses with floats (it reads every number
    to the same value), the stdlib's exact decoder otherwise.

    Raises:
        ValueError: If that is not one JSON value (or not UTF-8).
        DataException: For NaN and infinities (not JSON).
    """
    fast = _jsontext._orjson
    if exact or fast is None:
        return (_EXACT_DECODER if exact else _FLOAT_DECODER).decode(data[start:-1].decode())
    return fast.loads(data[start:-1])  # (a copy: cheaper than a view, measured)


def _loads(decoder: json.JSONDecoder, text: str) -> Any:
    try:
        return decoder.decode(text)
    except ValueError as exc:
        raise DataException(
            f"Converting byte[] to Kafka Connect data failed due to serialization error: {exc}"
        ) from exc


_NATIVE_SCALARS = frozenset({str, bool, type(None)})
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _json_native(value: object) -> bool:
    """Whether a schemaless value holds only types json.dumps writes exactly as Jackson does.

    Floats are excluded (Java's Double.toString differs from repr), as are bytes (base64),
    structs and ints outside INT64.
    """
    kind = type(value)
    if kind is dict:
        # Inlined for the scalars of a flat document, the common case.
        for key, item in value.items():  # type: ignore[attr-defined]
            if type(key) is not str:
                return False
            item_kind = type(item)
            if item_kind in _NATIVE_SCALARS:
                continue
            if item_kind is int:
                if _INT64_MIN <= item <= _INT64_MAX:
                    continue
                return False
            if not _json_native(item):
                return False
        return True
    if kind in _NATIVE_SCALARS:
        return True
    if kind is int:
        return _INT64_MIN <= value <= _INT64_MAX  # type: ignore[operator]
    if kind is list:
        return all(_json_native(v) for v in value)  # type: ignore[attr-defined]
    return False


def _infer_type(value: object) -> Type:
    """The schema type of a schemaless value (Kafka's ``ConnectSchema.schemaType``)."""
    if isinstance(value, bool):
        return Type.BOOLEAN
    if isinstance(value, int):
        return Type.INT64
    if isinstance(value, float):
        return Type.FLOAT64
    if isinstance(value, str):
        return Type.STRING
    if isinstance(value, (bytes, bytearray, memoryview)):
        return Type.BYTES
    if isinstance(value, (list, tuple)):
        return Type.ARRAY
    if isinstance(value, Mapping):
        return Type.MAP
    if isinstance(value, Struct):
        return Type.STRUCT
    raise DataException(
        f"Java class class {java_class_name(value)} does not have corresponding schema type."
    )


def _java_float(text: str) -> float:
    """A JSON number with a fraction or exponent, as Kafka reads it: through a BigDecimal,
    which has no negative zero (``-0.0`` and ``-0e5`` are 0.0; ``-1e-400``, not zero but too
    small for a double, is -0.0 as in Java)."""
    value = float(text)
    if value == 0.0 and not text.lstrip("-").split("e")[0].split("E")[0].strip("0."):
        return 0.0
    return value


def _schemaless(node: object) -> object:
    """Schemaless JSON to Connect: only exact-parsed numbers need changing (to float)."""
    if isinstance(node, decimal.Decimal):
        return float(node) if node else 0.0
    if isinstance(node, list):
        return [_schemaless(item) for item in node]
    if isinstance(node, dict):
        return {key: _schemaless(item) for key, item in node.items()}
    return node


def _node_type(node: object) -> str:
    if node is None:
        return "NULL"
    if isinstance(node, bool):
        return "BOOLEAN"
    if isinstance(node, (int, float, decimal.Decimal)):
        return "NUMBER"
    if isinstance(node, str):
        return "STRING"
    if isinstance(node, list):
        return "ARRAY"
    return "OBJECT"


def _node_error(kind: Type, node: object) -> DataException:
    return DataException(f"Invalid JSON {_node_type(node)} for {kind.name} schema: {node!r}")


def _base64(node: object, message: str) -> bytes:
    if not isinstance(node, str):
        raise DataException(f"{message}: expected a base64 string, found {_node_type(node)}")
    try:
        return base64.b64decode(node, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DataException(message) from exc


def _logical_to_connect(schema: Schema, node: object) -> object:
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        if isinstance(node, decimal.Decimal):
            return node
        if isinstance(node, (int, float)) and not isinstance(node, bool):
            return decimal.Decimal(node)
        if isinstance(node, str):
            raw = _base64(node, "Invalid bytes for Decimal field")
            return Decimal.to_logical(schema, raw)
        raise DataException(
            "Invalid type for Decimal, underlying representation should be numeric or bytes but "
            "was " + _node_type(node)
        )
    if name in (Date.LOGICAL_NAME, Time.LOGICAL_NAME):
        logical = Date if name == Date.LOGICAL_NAME else Time
        if not isinstance(node, int) or isinstance(node, bool) or not -(2**31) <= node < 2**31:
            raise DataException(
                f"Invalid type for {logical.__name__}, underlying representation should be "
                "integer but was " + _node_type(node)
            )
        return logical.to_logical(schema, node)
    if name == Timestamp.LOGICAL_NAME:
        if not isinstance(node, int) or isinstance(node, bool):
            raise DataException(
                "Invalid type for Timestamp, underlying representation should be integral but was "
                + _node_type(node)
            )
        return Timestamp.to_logical(schema, node)
    return _NOT_LOGICAL
