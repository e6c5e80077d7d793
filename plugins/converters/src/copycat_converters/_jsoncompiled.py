"""JsonConverter's values compiled per schema: one generated function reads, one writes.

The straightforward path (``JsonConverter._to_connect`` / ``_to_json``) walks the schema for
every value and builds structs with ``Struct.put``, which checks every field again: ~25 us of
a 1 KiB record's ~35 us through converter, three SMTs and converter. Here a schema is turned
once into Python source (as ``dataclasses`` generates ``__init__``) that handles each field
inline and builds structs from values it has just checked (``Struct.from_values(...,
validate=False)``, or rather its cheaper ``Struct.maker``).

A compiled function accepts only the exact, common shapes: a ``str`` for STRING, an ``int``
within range for INT32, a ``datetime`` for Timestamp, a ``dict`` for a STRUCT, ``Struct``s of
the compiled schema, and so on. Anything else raises :class:`Fallback`, and the caller runs
the value through the straightforward path, which then gives the value or the error it always
gave: a float for an INT32 field (Kafka truncates it), a double Java would write with an
exponent, a NUMERIC decimal, a map with non-string keys, bad base64, ... So the two paths
agree by construction wherever the compiled one answers; ``tests/test_json_compiled.py``
checks it on generated schemas and values.

Called on the task thread of the plugin host that runs the converter, like the converter.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import math
from collections.abc import Callable
from typing import Any

from plugin_api import Date, Decimal, Schema, Struct, Time, Timestamp, Type

__all__ = ["Fallback", "compile_reader", "compile_writer"]

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_EPOCH_DATE = datetime.date(1970, 1, 1)
_ONE_MS = datetime.timedelta(milliseconds=1)
_INT_BOUNDS = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}
# Doubles that Java's Double.toString writes without an exponent (and 0): only these leave
# the straightforward path as plain floats; the others become Raw text there.
_PLAIN_MIN, _PLAIN_MAX = 1e-3, 1e7


class Fallback(Exception):
    """The compiled function does not handle this value: use the straightforward path."""


def _b64_text(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _decimal_from_b64(schema: Schema, text: str) -> decimal.Decimal:
    return Decimal.to_logical(schema, base64.b64decode(text, validate=True))


_COMMON: dict[str, Any] = {
    "_FB": Fallback,
    "_Struct": Struct,
    "_EPOCH": _EPOCH,
    "_EPOCH_DATE": _EPOCH_DATE,
    "_ONE_MS": _ONE_MS,
    "_UTC": datetime.UTC,
    "_td": datetime.timedelta,
    "_datetime": datetime.datetime,
    "_date": datetime.date,
    "_time": datetime.time,
    "_Dec": decimal.Decimal,
    "_copysign": math.copysign,
    "_b64decode": base64.b64decode,
    "_b64_text": _b64_text,
    "_decimal_from_b64": _decimal_from_b64,
    "_decimal_bytes": Decimal.from_logical,
    "_time_logical": Time.to_logical,
    "_time_ms": Time.from_logical,
}


class _Codegen:
    """Source of one compilation: a function per distinct sub-schema, constants by name."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = dict(_COMMON)
        self.sources: list[str] = []
        self._functions: dict[int, str] = {}
        self._keep: list[Schema] = []  # keeps ids in _functions unique while compiling

    def const(self, value: object) -> str:
        name = f"_c{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def function(self, schema: Schema, body: Callable[[Schema, str], list[str]]) -> str:
        """The name of a function ``f(a)`` converting one value of ``schema``."""
        name = self._functions.get(id(schema))
        if name is None:
            name = self._functions[id(schema)] = f"_f{len(self._functions)}"
            self._keep.append(schema)
            lines = [f"def {name}(a):", *("    " + line for line in body(schema, "a"))]
            self.sources.append("\n".join([*lines, "    return a"]))
        return name

    def root(
        self, schema: Schema, body: Callable[[Schema, str], list[str]], tail: list[str]
    ) -> str:
        """A function ``f(a)`` converting a value of ``schema`` and then running ``tail``
        (which returns): the body inlined, not called (the schema's own function, for
        nested uses, is generated as well if the body refers to it)."""
        name = f"_root{len(self._functions)}"
        lines = [f"def {name}(a):", *("    " + line for line in [*body(schema, "a"), *tail])]
        self.sources.append("\n".join(lines))
        return name

    def build(self, root: str) -> Callable[[Any], Any]:
        exec("\n\n".join(self.sources), self.namespace)  # noqa: S102 - our own generated source
        function: Callable[[Any], Any] = self.namespace[root]
        return function


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


def _chain(lines: list[str]) -> list[str]:
    """An if/elif/else chain whose first test may be gone (no None case): its first ``elif``
    becomes ``if``; a lone ``else`` branch becomes unconditional."""
    if not lines or lines[0].startswith("if "):
        return lines
    if lines[0].startswith("elif "):
        return ["if " + lines[0][len("elif ") :], *lines[1:]]
    assert lines[0] == "else:", lines
    return [line[4:] for line in lines[1:]]


# -- JSON tree -> Connect value ----------------------------------------------------------------


def compile_reader(schema: Schema, replace_null: bool, exact: bool) -> Callable[[Any], Any]:
    """A function turning a parsed JSON payload into the Connect value of ``schema``.

    Args:
        schema: The envelope's schema.
        replace_null: The converter's ``replace.null.with.default``.
        exact: Whether numbers were parsed exactly (``decimal.Decimal`` for every number with a
            fraction), as the straightforward path does for schemas holding decimals.

    The function raises :class:`Fallback` for anything it does not handle.
    """
    gen = _Codegen()

    def none_case(field_schema: Schema, var: str) -> list[str]:
        default = field_schema.default_value
        if default is not None and replace_null:
            return [f"if {var} is None:", f"    {var} = {gen.const(default)}"]
        if field_schema.optional:
            return [f"if {var} is None:", "    pass"]
        return []  # every type test below rejects None, and the exact path raises for it

    def body(field_schema: Schema, var: str) -> list[str]:
        return _chain(cases(field_schema, var))

    def cases(field_schema: Schema, var: str) -> list[str]:  # noqa: C901 - one case per type
        lines = none_case(field_schema, var)
        kind, name = field_schema.type, field_schema.name
        if name == Timestamp.LOGICAL_NAME:
            return [
                *lines,
                f"elif type({var}) is not int:",
                "    raise _FB",
                "else:",
                f"    {var} = _EPOCH + _td(milliseconds={var})",
            ]
        if name == Date.LOGICAL_NAME or name == Time.LOGICAL_NAME:
            low, high = _INT_BOUNDS[Type.INT32]
            logical = (
                f"_EPOCH_DATE + _td(days={var})"
                if name == Date.LOGICAL_NAME
                else f"_time_logical({gen.const(field_schema)}, {var})"
            )
            return [
                *lines,
                f"elif type({var}) is not int or not {low} <= {var} <= {high}:",
                "    raise _FB",
                "else:",
                f"    {var} = {logical}",
            ]
        if name == Decimal.LOGICAL_NAME:
            return [
                *lines,
                f"elif type({var}) is str:",
                f"    {var} = _decimal_from_b64({gen.const(field_schema)}, {var})",
                f"elif type({var}) is int:",
                f"    {var} = _Dec({var})",
                *([f"elif type({var}) is _Dec:", "    pass"] if exact else []),
                "else:",
                "    raise _FB",
            ]
        if kind is Type.STRING:
            return [*lines, f"elif type({var}) is not str:", "    raise _FB"]
        if kind in _INT_BOUNDS:
            low, high = _INT_BOUNDS[kind]
            return [
                *lines,
                f"elif type({var}) is not int or not {low} <= {var} <= {high}:",
                "    raise _FB",
            ]
        if kind is Type.FLOAT32 or kind is Type.FLOAT64:
            # Kafka reads numbers as BigDecimal, which has no -0: a -0.0 parsed as a float
            # falls back to the exact path, which reads its text (-0.0 there is 0.0, a
            # negative too small for a double stays -0.0); a zero Decimal is 0.0.
            return [
                *lines,
                f"elif type({var}) is float:",
                f"    if {var} == 0.0 and _copysign(1.0, {var}) < 0.0:",
                "        raise _FB",
                f"elif type({var}) is int" + (f" or type({var}) is _Dec:" if exact else ":"),
                f"    {var} = float({var}) if {var} else 0.0",
                "else:",
                "    raise _FB",
            ]
        if kind is Type.BOOLEAN:
            return [*lines, f"elif {var} is not True and {var} is not False:", "    raise _FB"]
        if kind is Type.BYTES:
            return [
                *lines,
                f"elif type({var}) is not str:",
                "    raise _FB",
                "else:",
                f"    {var} = _b64decode({var}, validate=True)",
            ]
        if kind is Type.ARRAY:
            element = gen.function(field_schema.value_schema, body)  # type: ignore[arg-type]
            return [
                *lines,
                f"elif type({var}) is not list:",
                "    raise _FB",
                "else:",
                f"    {var} = [{element}(e) for e in {var}]",
            ]
        if kind is Type.MAP:
            key_schema = field_schema.key_schema
            assert key_schema is not None and field_schema.value_schema is not None
            if key_schema.type is not Type.STRING:
                return [*lines, "else:", "    raise _FB"]  # arrays of pairs: rare, not compiled
            value = gen.function(field_schema.value_schema, body)
            return [
                *lines,
                f"elif type({var}) is not dict:",
                "    raise _FB",
                "else:",
                f"    {var} = {{k: {value}(v) for k, v in {var}.items()}}",
            ]
        # STRUCT: field by field in straight-line code (measured: a C-level comparison of
        # all the values' types, list(map(get)) and the like cost twice as much); a field
        # missing from the document raises KeyError, and the exact path reads it
        fields = field_schema.fields
        make = gen.const(Struct.maker(field_schema))  # from_values(..., False), cheaper
        inner = [f"a{index} = {var}[{field.name!r}]" for index, field in enumerate(fields)]
        for index, field in enumerate(fields):
            inner += convert(field.schema, f"a{index}")
        values = ", ".join(f"a{index}" for index in range(len(fields)))
        inner.append(f"{var} = {make}([{values}])")
        return [*lines, f"elif type({var}) is not dict:", "    raise _FB", "else:", *_indent(inner)]

    def convert(field_schema: Schema, var: str) -> list[str]:
        if _simple(field_schema):
            return body(field_schema, var)
        return [f"{var} = {gen.function(field_schema, body)}({var})"]

    return gen.build(gen.function(schema, body))


def _simple(schema: Schema) -> bool:
    """Whether a field's conversion is inlined into its struct's function (no nested
    variables of its own)."""
    return schema.type not in (Type.ARRAY, Type.MAP, Type.STRUCT)


# -- Connect value -> JSON tree ----------------------------------------------------------------


def compile_writer(
    schema: Schema,
    replace_null: bool,
    decimal_numeric: bool,
    float32_to_json: Callable[[float], object],
    default_to_json: Callable[[Schema], object],
    frame: tuple[bytes, bytes, Callable[[Any], bytes], Callable[[bytes], bytes]] | None = None,
) -> Callable[[Any], Any]:
    """A function turning a Connect value of ``schema`` into the JSON tree of its payload,
    or with ``frame`` into the document's bytes.

    Args:
        schema: The value's schema.
        replace_null: The converter's ``replace.null.with.default``.
        decimal_numeric: Whether decimals are written as numbers (those are never compiled).
        float32_to_json: The converter's FLOAT32 formatting; a ``Raw`` result falls back.
        default_to_json: The straightforward path's JSON for ``schema``'s default value;
            raises :class:`Fallback` when that is not a plain JSON tree.
        frame: ``(head, tail, dumps, escapes)``: the tree is encoded with ``dumps`` (orjson's),
            its text given Jackson's escapes by ``escapes`` where it holds a backslash or
            non-ASCII bytes (the only bytes that function changes), and written between
            ``head`` and ``tail`` (the envelope, or nothing), all in the same function.

    The function raises :class:`Fallback` for anything it does not handle.
    """
    gen = _Codegen()

    def float32(value: float) -> object:
        result = float32_to_json(value)
        if type(result) is not float and type(result) is not str:
            raise Fallback  # Raw text: the straightforward path writes it
        return result

    gen.namespace["_float32"] = float32

    def none_case(field_schema: Schema, var: str) -> list[str]:
        if field_schema.default_value is not None and replace_null:
            try:
                default = gen.const(default_to_json(field_schema))
            except Fallback:
                return [f"if {var} is None:", "    raise _FB"]
            return [f"if {var} is None:", f"    {var} = {default}"]
        if field_schema.optional:
            return [f"if {var} is None:", "    pass"]
        return []  # every type test below rejects None, and the exact path raises for it

    def body(field_schema: Schema, var: str) -> list[str]:
        return _chain(cases(field_schema, var))

    def cases(field_schema: Schema, var: str) -> list[str]:  # noqa: C901 - one case per type
        lines = none_case(field_schema, var)
        kind, name = field_schema.type, field_schema.name
        if name == Timestamp.LOGICAL_NAME:
            aware = f"({var} if {var}.tzinfo is not None else {var}.replace(tzinfo=_UTC))"
            last = gen.const([None, None])  # the last datetime and its epoch ms: records of
            return [  # one millisecond share the datetime (InsertField, a task's clock)
                *lines,
                f"elif type({var}) is not _datetime:",
                "    raise _FB",
                f"elif {var} is {last}[0]:",
                f"    {var} = {last}[1]",
                "else:",
                f"    ms = ({aware} - _EPOCH) // _ONE_MS",
                f"    {last}[0], {last}[1] = {var}, ms",
                f"    {var} = ms",
            ]
        if name == Date.LOGICAL_NAME:
            return [
                *lines,
                f"elif type({var}) is not _date:",
                "    raise _FB",
                "else:",
                f"    {var} = ({var} - _EPOCH_DATE).days",
            ]
        if name == Time.LOGICAL_NAME:
            return [
                *lines,
                f"elif type({var}) is not _time:",
                "    raise _FB",
                "else:",
                f"    {var} = _time_ms({gen.const(field_schema)}, {var})",
            ]
        if name == Decimal.LOGICAL_NAME:
            if decimal_numeric:
                return [*lines, "else:", "    raise _FB"]
            return [
                *lines,
                f"elif type({var}) is not _Dec:",
                "    raise _FB",
                "else:",
                f"    {var} = _b64_text(_decimal_bytes({gen.const(field_schema)}, {var}))",
            ]
        if kind is Type.STRING:
            return [*lines, f"elif type({var}) is not str:", "    raise _FB"]
        if kind in _INT_BOUNDS:
            return [*lines, f"elif type({var}) is not int:", "    raise _FB"]
        if kind is Type.FLOAT64:
            plain = f"{var} == 0.0 or {_PLAIN_MIN!r} <= abs({var}) < {_PLAIN_MAX!r}"
            return [
                *lines,
                f"elif type({var}) is int:",
                f"    {var} = float({var})",
                f"    if not ({plain}):",
                "        raise _FB",
                f"elif type({var}) is not float or not ({plain}):",
                "    raise _FB",
            ]
        if kind is Type.FLOAT32:
            return [
                *lines,
                f"elif type({var}) is float or type({var}) is int:",
                f"    {var} = _float32(float({var}))",
                "else:",
                "    raise _FB",
            ]
        if kind is Type.BOOLEAN:
            return [*lines, f"elif {var} is not True and {var} is not False:", "    raise _FB"]
        if kind is Type.BYTES:
            return [
                *lines,
                f"elif type({var}) is not bytes:",
                "    raise _FB",
                "else:",
                f"    {var} = _b64_text({var})",
            ]
        if kind is Type.ARRAY:
            element = gen.function(field_schema.value_schema, body)  # type: ignore[arg-type]
            return [
                *lines,
                f"elif type({var}) is not list:",
                "    raise _FB",
                "else:",
                f"    {var} = [{element}(e) for e in {var}]",
            ]
        if kind is Type.MAP:
            key_schema = field_schema.key_schema
            assert key_schema is not None and field_schema.value_schema is not None
            if key_schema.type is not Type.STRING:
                return [*lines, "else:", "    raise _FB"]  # arrays of pairs: rare, not compiled
            value = gen.function(field_schema.value_schema, body)
            return [
                *lines,
                f"elif type({var}) is not dict:",
                "    raise _FB",
                "else:",
                f"    for k in {var}:",
                "        if type(k) is not str:",
                "            raise _FB",
                f"    {var} = {{k: {value}(v) for k, v in {var}.items()}}",
            ]
        # STRUCT: a struct of exactly this schema (an equal one is checked once per value)
        fields = field_schema.fields
        own = gen.const(field_schema)
        out = [
            *lines,
            f"elif type({var}) is not _Struct:",
            "    raise _FB",
            "else:",
        ]
        seen = gen.const([field_schema])  # the last equal schema object seen
        inner = [
            f"s = {var}.schema",
            f"if s is not {own} and s is not {seen}[0]:",
            f"    if s != {own}:",
            "        raise _FB",
            f"    {seen}[0] = s",
        ]
        generic = []
        for index, field in enumerate(fields):
            generic += convert(field.schema, f"a{index}")
        targets = "".join(f"a{index}, " for index in range(len(fields)))
        items = ", ".join(f"{field.name!r}: a{index}" for index, field in enumerate(fields))
        # field by field in straight-line code and a dict display (measured: half the cost
        # of a C-level comparison of all the values' types and dict(zip()))
        inner += [
            *([f"{targets}= {var}.field_values()"] if fields else []),
            *generic,
            f"{var} = {{{items}}}",
        ]
        return [*out, *_indent(inner)]

    def convert(field_schema: Schema, var: str) -> list[str]:
        if _simple(field_schema):
            return body(field_schema, var)
        return [f"{var} = {gen.function(field_schema, body)}({var})"]

    if frame is None:
        return gen.build(gen.function(schema, body))
    head, tail, dumps, escapes = frame
    encode = [
        f"a = {gen.const(dumps)}(a)",
        "if b'\\\\' in a or not a.isascii():",
        f"    a = {gen.const(escapes)}(a)",
        f"return b''.join(({gen.const(head)}, a, {gen.const(tail)}))"
        if head or tail
        else "return a",
    ]
    return gen.build(gen.root(schema, body, encode))
