"""Hypothesis strategies for Connect schemas and their values (the fast-path property tests).

``schemas()`` draws every physical type, the four logical types, optional and default
values, nested structs, arrays and maps (string keys mostly, other keys sometimes);
``values(schema)`` draws valid values of a schema (None where allowed, unset optional fields).
``outcome(fn)`` turns a call into a comparable result: the value or the error's type and text.
"""

from __future__ import annotations

import datetime
import decimal
import re
import string
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from plugin_api import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type

INT_RANGES = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}
PRIMITIVES = [*INT_RANGES, Type.FLOAT32, Type.FLOAT64, Type.BOOLEAN, Type.STRING, Type.BYTES]
LOGICAL = ["date", "time", "timestamp", "decimal"]
FIELD_NAMES = st.text(string.ascii_letters + "_", min_size=1, max_size=8)
# Text with controls, quotes, backslashes and non-ASCII (no lone surrogates: not UTF-8).
TEXT = st.text(st.characters(codec="utf-8"), max_size=20)


def _builder(kind: str | Type) -> SchemaBuilder:
    if kind == "date":
        return Date.builder()
    if kind == "time":
        return Time.builder()
    if kind == "timestamp":
        return Timestamp.builder()
    if isinstance(kind, tuple):  # ("decimal", scale)
        return Decimal.builder(kind[1])
    return SchemaBuilder(kind)  # type: ignore[arg-type]


@st.composite
def _leaf(draw: st.DrawFn) -> Schema:
    kind: Any = draw(st.sampled_from([*PRIMITIVES, *LOGICAL]))
    if kind == "decimal":
        kind = ("decimal", draw(st.integers(0, 4)))
    return draw(_finish(_builder(kind).build()))


@st.composite
def _finish(draw: st.DrawFn, schema: Schema) -> Schema:
    """``schema``, maybe optional, maybe with a default value."""
    optional = draw(st.booleans())
    default = draw(st.none() | values(schema, allow_none=False)) if draw(st.booleans()) else None
    return Schema(
        schema.type,
        optional,
        default,
        schema.name,
        schema.version,
        schema.doc,
        schema.parameters,
        schema.fields,
        schema.key_schema,
        schema.value_schema,
    )


@st.composite
def _struct(draw: st.DrawFn, inner: st.SearchStrategy[Schema]) -> Schema:
    names = draw(st.lists(FIELD_NAMES, min_size=0, max_size=5, unique=True))
    builder = SchemaBuilder.struct()
    if draw(st.booleans()):
        builder.name(draw(st.sampled_from(["com.example.Row", "Row", "a.b.Nested"])))
    for name in names:
        builder.field(name, draw(inner))
    return draw(_finish(builder.build()))


@st.composite
def _map(draw: st.DrawFn, inner: st.SearchStrategy[Schema]) -> Schema:
    key = draw(st.sampled_from([Schema.STRING_SCHEMA] * 3 + [Schema.INT32_SCHEMA]))
    return draw(_finish(SchemaBuilder.map(key, draw(inner)).build()))


def schemas(max_leaves: int = 12) -> st.SearchStrategy[Schema]:
    """Schemas of any type; structs, arrays and maps nest."""
    return st.recursive(
        _leaf(),
        lambda inner: (
            _struct(inner)
            | _map(inner)
            | inner.flatmap(lambda e: _finish(SchemaBuilder.array(e).build()))
        ),
        max_leaves=max_leaves,
    )


def struct_schemas(max_leaves: int = 12) -> st.SearchStrategy[Schema]:
    """STRUCT schemas (a record's value), fields of any type."""
    return _struct(schemas(max_leaves))


def _decimal(scale: int) -> st.SearchStrategy[decimal.Decimal]:
    return st.integers(-(10**20), 10**20).map(
        lambda unscaled: decimal.Decimal(unscaled).scaleb(-scale)
    )


_TIMES = st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))
_STAMPS = st.datetimes(
    min_value=datetime.datetime(1900, 1, 1), max_value=datetime.datetime(2200, 1, 1)
).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000, tzinfo=datetime.UTC))


def values(schema: Schema, allow_none: bool = True) -> st.SearchStrategy[Any]:  # noqa: C901
    """Valid values of ``schema`` (None too where the schema allows it and ``allow_none``)."""
    name, kind = schema.name, schema.type
    if name == Date.LOGICAL_NAME:
        found: st.SearchStrategy[Any] = st.dates(
            datetime.date(1, 1, 1), datetime.date(9999, 12, 31)
        )
    elif name == Time.LOGICAL_NAME:
        found = _TIMES
    elif name == Timestamp.LOGICAL_NAME:
        found = _STAMPS | _STAMPS.map(lambda d: d.replace(tzinfo=None))
    elif name == Decimal.LOGICAL_NAME:
        found = _decimal(Decimal.scale_of(schema))
    elif kind in INT_RANGES:
        found = st.integers(*INT_RANGES[kind])
    elif kind is Type.FLOAT32 or kind is Type.FLOAT64:
        found = st.floats(allow_nan=False) | st.integers(-(2**40), 2**40)
    elif kind is Type.BOOLEAN:
        found = st.booleans()
    elif kind is Type.STRING:
        found = TEXT
    elif kind is Type.BYTES:
        found = st.binary(max_size=12)
    elif kind is Type.ARRAY:
        assert schema.value_schema is not None
        found = st.lists(values(schema.value_schema), max_size=3)
    elif kind is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        found = st.dictionaries(
            values(schema.key_schema, allow_none=False), values(schema.value_schema), max_size=3
        )
    else:
        found = _struct_value(schema)
    if allow_none and (schema.optional or schema.default_value is not None):
        return st.none() | found
    return found


@st.composite
def _struct_value(draw: st.DrawFn, schema: Schema) -> Struct:
    struct = Struct(schema)
    for field in schema.fields:
        struct.put(field, draw(values(field.schema)))
    return struct


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """``("ok", repr of the result)`` or ``("error", exception type, message)``: comparable,
    and exact (repr tells ``Decimal('1.0')`` from ``Decimal('1.00')``, ``-0.0`` from
    ``0.0``, ``True`` from ``1``)."""
    try:
        result = call()
    except Exception as exc:  # noqa: BLE001 - the error is the outcome
        # (fastavro's messages name its BytesIO object, whose address differs per call)
        return ("error", _ADDRESS.sub(" at 0x?", f"{type(exc).__qualname__}: {exc}"))
    return ("ok", deep_repr(result))


_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def deep_repr(value: object) -> str:
    """repr() that also shows a struct's schema and unset fields."""
    if isinstance(value, Struct):
        inner = ", ".join(f"{k}={deep_repr(v)}" for k, v in value)
        return f"Struct[{value.schema!r}]({inner})"
    if isinstance(value, (list, tuple)):
        return type(value).__name__ + "[" + ", ".join(deep_repr(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{deep_repr(k)}: {deep_repr(v)}" for k, v in value.items()) + "}"
    return repr(value)
