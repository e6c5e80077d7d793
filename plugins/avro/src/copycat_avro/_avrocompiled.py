"""Avro bodies read into, and written from, Connect values by functions compiled per schema.

The straightforward path (fastavro's ``schemaless_reader`` / ``schemaless_writer`` plus
:func:`~copycat_avro._avrodata.to_connect_data` / ``from_connect_data``) costs ~8 us to read
and ~7 us to write a 1 KiB record of six fields: fastavro reads each primitive through the
file object's ``read()``, and every value is converted again between its dict and a Struct
whose ``put()`` checks each field. Here a (writer Avro schema, Connect schema) pair is turned
once into Python source that decodes the binary encoding straight into the Connect value,
and a Connect schema into source that encodes a value straight into bytes.

Compiled: records, ``["null", T]`` / ``[T, "null"]`` unions of optional fields, the
primitives, Connect's logical types, arrays, and maps with string keys. Not compiled (the
whole schema takes the straightforward path): enums, fixed, other unions, named references,
maps written as arrays of entries. A compiled function raises :class:`Fallback` for anything
unexpected (truncated data, a union branch it does not know, a value of another type, an int
out of its Connect range, ...) and the caller reruns the record on the straightforward path,
which gives the value or error it always gave. ``tests/test_avro_compiled.py`` checks that
both agree on generated schemas and values.

Called on the task thread of the plugin host that runs the converter, like the converter.
"""

from __future__ import annotations

import datetime
import decimal
import struct
from collections.abc import Callable
from typing import Any

from copycat_avro._avrodata import AVRO_TYPE_UNION
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
_PRIMITIVES = {
    Type.INT8: "int",
    Type.INT16: "int",
    Type.INT32: "int",
    Type.INT64: "long",
    Type.FLOAT32: "float",
    Type.FLOAT64: "double",
    Type.BOOLEAN: "boolean",
    Type.STRING: "string",
    Type.BYTES: "bytes",
}
# A long takes at most ten bytes of seven bits each.
_MAX_VARINT_BYTES = 10
# Zigzag-encoded values whose varint bytes are precomputed: every length of a string up to
# 8 KiB and every small int is one list lookup.
_VARINT_TABLE_SIZE = 1 << 14
_FLOAT = struct.Struct("<f")
_DOUBLE = struct.Struct("<d")


class Fallback(Exception):
    """The compiled function does not handle this data or value: use the straightforward path."""


def _varint(zigzag: int) -> bytes:
    out = bytearray()
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


_VARINTS = [_varint(z) for z in range(_VARINT_TABLE_SIZE)]


def _long_bytes(value: int) -> bytes:
    """The zigzag varint of a long."""
    zigzag = (value << 1) ^ (value >> 63)
    return _VARINTS[zigzag] if zigzag < _VARINT_TABLE_SIZE else _varint(zigzag)


def _long_tail(data: bytes, pos: int, first: int) -> tuple[int, int]:
    """The rest of a varint whose first byte ``first`` had its high bit set: (long, pos)."""
    result, shift = first & 0x7F, 7
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift >= 7 * _MAX_VARINT_BYTES:
            raise Fallback  # too long for a long


_COMMON: dict[str, Any] = {
    "_FB": Fallback,
    "_Struct": Struct,
    "_long_tail": _long_tail,
    "_long_bytes": _long_bytes,
    "_varint": _varint,
    "_VARINTS": _VARINTS,
    "_float_from": _FLOAT.unpack_from,
    "_double_from": _DOUBLE.unpack_from,
    "_float_pack": _FLOAT.pack,
    "_double_pack": _DOUBLE.pack,
    "_EPOCH": _EPOCH,
    "_EPOCH_DATE": _EPOCH_DATE,
    "_ONE_MS": _ONE_MS,
    "_UTC": datetime.UTC,
    "_td": datetime.timedelta,
    "_datetime": datetime.datetime,
    "_date": datetime.date,
    "_time": datetime.time,
    "_Dec": decimal.Decimal,
    "_decimal_logical": Decimal.to_logical,
    "_decimal_bytes": Decimal.from_logical,
    "_time_logical": Time.to_logical,
    "_time_ms": Time.from_logical,
}


class _Unsupported(Exception):
    """The schema has a part that is not compiled."""


class _Codegen:
    def __init__(self, field_name: Callable[[str], str] | None = None) -> None:
        self.namespace: dict[str, Any] = dict(_COMMON)
        self.sources: list[str] = []
        self.count = 0
        # A Connect field name -> its Avro name (None: the same, unless scrubbed)
        self.field_name = field_name

    def const(self, value: object) -> str:
        name = f"_c{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def name(self) -> str:
        self.count += 1
        return f"_f{self.count}"

    def build(self, root: str) -> Callable[..., Any]:
        exec("\n\n".join(self.sources), self.namespace)  # noqa: S102 - our own generated source
        function: Callable[..., Any] = self.namespace[root]
        return function


def _branches(avro: Any) -> tuple[Any, int | None]:
    """``(the non-null type, index of "null")`` of an optional union, else ``(avro, None)``.

    Raises:
        _Unsupported: For any other union.
    """
    if not isinstance(avro, list):
        return avro, None
    if len(avro) == 2 and "null" in avro and avro[0] != avro[1]:
        null_index = avro.index("null")
        return avro[1 - null_index], null_index
    raise _Unsupported


def _kind(avro: Any) -> str:
    if isinstance(avro, str):
        return avro
    if isinstance(avro, dict) and isinstance(avro.get("type"), str):
        return str(avro["type"])
    raise _Unsupported


# -- binary -> Connect value -------------------------------------------------------------------


def compile_reader(avro: Any, schema: Schema) -> Callable[[bytes, int], Any] | None:
    """``read(data, pos) -> value``: the Connect value of ``schema`` from the Avro binary
    encoding of (physical) writer schema ``avro`` starting at ``pos``; bytes after the value
    are ignored, as fastavro does. None if the schema is not compiled."""
    gen = _Codegen()
    try:  # the root's body inline: one call a record, not two
        lines = ["n = len(d)", *_read_value(gen, avro, schema, "v"), "return v"]
    except _Unsupported:
        return None
    gen.sources.append("def _read(d, p):\n" + "\n".join("    " + line for line in lines))
    return gen.build("_read")


def _read_function(gen: _Codegen, avro: Any, schema: Schema) -> str:
    """A function ``f(d, p, n) -> (value, p)`` reading one value of ``schema``."""
    name = gen.name()
    lines = _read_value(gen, avro, schema, "v")
    body = "\n".join("    " + line for line in lines)
    gen.sources.append(f"def {name}(d, p, n):\n{body}\n    return v, p")
    return name


def _read_long(var: str) -> list[str]:
    """One or two varint bytes inline (ints below 8192, strings shorter than 8 KiB), longer
    ones through _long_tail."""
    return [
        "b = d[p]",
        "p += 1",
        "if b < 128:",
        f"    {var} = (b >> 1) ^ -(b & 1)",
        "elif d[p] < 128:",
        "    b = (b & 127) | (d[p] << 7)",
        "    p += 1",
        f"    {var} = (b >> 1) ^ -(b & 1)",
        "else:",
        f"    {var}, p = _long_tail(d, p, b)",
    ]


def _read_value(gen: _Codegen, avro: Any, schema: Schema, var: str) -> list[str]:  # noqa: C901
    """Statements reading one value (its union index first, if optional) into ``var``."""
    inner, null_index = _branches(avro)
    if (null_index is not None) != schema.optional:
        raise _Unsupported  # not how _avrodata maps optionality
    body = _read_present(gen, inner, schema, var)
    if null_index is None:
        return body
    present = 1 - null_index
    return [
        *_read_long("u"),
        f"if u == {null_index}:",
        f"    {var} = None",
        f"elif u == {present}:",
        *("    " + line for line in body),
        "else:",
        "    raise _FB",
    ]


def _read_present(gen: _Codegen, avro: Any, schema: Schema, var: str) -> list[str]:  # noqa: C901
    kind, name, avro_kind = schema.type, schema.name, _kind(avro)
    if kind is Type.STRUCT:
        if avro_kind != "record" or name == AVRO_TYPE_UNION:
            raise _Unsupported
        fields = schema.fields
        avro_fields = avro["fields"]
        if [f["name"] for f in avro_fields] != [f.name for f in fields]:
            raise _Unsupported
        lines = []
        for index, (avro_field, field) in enumerate(zip(avro_fields, fields, strict=True)):
            if field.schema.type in (Type.STRUCT, Type.ARRAY, Type.MAP):
                nested = _read_function(gen, avro_field["type"], field.schema)
                lines.append(f"a{index}, p = {nested}(d, p, n)")
            else:
                lines.extend(_read_value(gen, avro_field["type"], field.schema, f"a{index}"))
        values = ", ".join(f"a{index}" for index in range(len(fields)))
        make = gen.const(Struct.maker(schema))  # from_values(..., False), cheaper
        lines.append(f"{var} = {make}([{values}])")
        return lines
    if kind is Type.ARRAY or kind is Type.MAP:
        if avro_kind != ("array" if kind is Type.ARRAY else "map"):
            raise _Unsupported
        if kind is Type.MAP:
            assert schema.key_schema is not None
            if schema.key_schema.type is not Type.STRING or schema.key_schema.optional:
                raise _Unsupported
        assert schema.value_schema is not None
        item = _read_function(
            gen, avro["items" if kind is Type.ARRAY else "values"], schema.value_schema
        )
        if kind is Type.ARRAY:
            add = [f"    x, p = {item}(d, p, n)", f"    {var}.append(x)"]
        else:
            add = [
                *("    " + line for line in _read_string("k")),
                f"    {var}[k], p = {item}(d, p, n)",
            ]
        return [
            f"{var} = {'[]' if kind is Type.ARRAY else '{}'}",
            "while True:",
            *("    " + line for line in _read_long("c")),
            "    if c == 0:",
            "        break",
            "    if c < 0:",  # a block with its size in bytes after the count
            "        c = -c",
            *("        " + line for line in _read_long("s")),
            "    for _ in range(c):",
            *("    " + line for line in add),
        ]
    expected = _PRIMITIVES[kind]
    if avro_kind != expected:
        raise _Unsupported
    if name == Decimal.LOGICAL_NAME:
        return [*_read_bytes("x"), f"{var} = _decimal_logical({gen.const(schema)}, x)"]
    if name == Date.LOGICAL_NAME:
        return [*_read_long("x"), f"{var} = _EPOCH_DATE + _td(days=x)"]
    if name == Time.LOGICAL_NAME:
        return [*_read_long("x"), f"{var} = _time_logical({gen.const(schema)}, x)"]
    if name == Timestamp.LOGICAL_NAME:
        return [*_read_long("x"), f"{var} = _EPOCH + _td(milliseconds=x)"]
    if kind in _INT_BOUNDS:
        low, high = _INT_BOUNDS[kind]
        return [*_read_long(var), f"if not {low} <= {var} <= {high}:", "    raise _FB"]
    if kind is Type.FLOAT32:
        return [f"{var}, = _float_from(d, p)", "p += 4"]
    if kind is Type.FLOAT64:
        return [f"{var}, = _double_from(d, p)", "p += 8"]
    if kind is Type.BOOLEAN:
        return [
            "b = d[p]",
            "p += 1",
            "if b == 1:",
            f"    {var} = True",
            "elif b == 0:",
            f"    {var} = False",
            "else:",
            "    raise _FB",
        ]
    if kind is Type.STRING:
        return _read_string(var)
    return _read_bytes(var)  # BYTES


def _read_bytes(var: str) -> list[str]:
    """A length and that many bytes; ``e`` is left at their end."""
    return [
        "b = d[p]",
        "if not b & 129:",  # one varint byte, an even zigzag: a length below 64, in one test
        "    p += 1",
        "    e = p + (b >> 1)",
        "else:",
        *("    " + line for line in _read_long("z")),
        "    if z < 0:",
        "        raise _FB",
        "    e = p + z",
        "if e > n:",
        "    raise _FB",
        f"{var} = d[p:e]",
        "p = e",
    ]


def _read_string(var: str) -> list[str]:
    return [*_read_bytes(var)[:-2], f"{var} = d[p:e].decode()", "p = e"]


# -- Connect value -> binary -------------------------------------------------------------------


def compile_writer(
    avro: Any,
    schema: Schema,
    prefix: bytes = b"",
    field_name: Callable[[str], str] | None = None,
) -> Callable[[Any], bytes] | None:
    """``write(value) -> bytes``: ``prefix`` (the wire format's header), then the Avro binary
    encoding, with (physical) schema ``avro``, of a Connect value of ``schema``. None if the
    schema is not compiled. ``field_name`` maps Connect field names to the Avro ones when
    they were scrubbed (``scrub.invalid.names``).

    The generated code names each piece of the encoding (a field's length and its bytes, a
    union's branch, ...) and joins them once at the end: measured, appending the pieces to a
    list one by one cost a third more for a 1 KiB record of six fields."""
    gen = _Codegen(field_name)
    try:  # the root's body inline: one call a record, not two
        lines, parts = _write_value(gen, avro, schema, "v", "r")
    except _Unsupported:
        return None
    lines.append(_joined([gen.const(prefix), *parts]))
    gen.sources.append("def _write(v):\n" + "\n".join("    " + line for line in lines))
    return gen.build("_write")


def _joined(parts: list[str]) -> str:
    if len(parts) == 1:
        return f"return {parts[0]}"
    return f"return b''.join(({', '.join(parts)}))"


def _write_function(gen: _Codegen, avro: Any, schema: Schema) -> str:
    """A function ``f(v) -> bytes`` encoding one value of ``schema``."""
    name = gen.name()
    lines, parts = _write_value(gen, avro, schema, "v", "r")
    body = "\n".join("    " + line for line in [*lines, _joined(parts)])
    gen.sources.append(f"def {name}(v):\n{body}")
    return name


Code = tuple[list[str], list[str]]  # statements, and the names of the pieces they set


def _write_value(gen: _Codegen, avro: Any, schema: Schema, var: str, tag: str) -> Code:
    """Statements encoding ``var`` (None handled as from_connect_data does) into pieces
    named with ``tag``."""
    inner, null_index = _branches(avro)
    if (null_index is not None) != schema.optional:
        raise _Unsupported
    body, parts = _write_present(gen, inner, schema, var, tag)
    default = schema.default_value
    if null_index is None:
        if default is None:  # a required value missing: the exact path's error
            if schema.type in (Type.STRUCT, Type.ARRAY, Type.MAP):
                return [f"if {var} is None:", "    raise _FB", *body], parts
            return body, parts  # every primitive's type test below rejects None
        return [f"if {var} is None:", f"    {var} = {gen.const(default)}", *body], parts
    null, present = _VARINTS[null_index * 2], _VARINTS[(1 - null_index) * 2]
    branch = f"u{tag}"
    if default is None:
        lines = [
            f"if {var} is None:",
            f"    {branch} = {null!r}",
            *(f"    {part} = b''" for part in parts),
            "else:",
            f"    {branch} = {present!r}",
            *("    " + line for line in body),
        ]
        return lines, [branch, *parts]
    lines = [f"if {var} is None:", f"    {var} = {gen.const(default)}", f"{branch} = {present!r}"]
    return [*lines, *body], [branch, *parts]


def _write_present(gen: _Codegen, avro: Any, schema: Schema, var: str, tag: str) -> Code:  # noqa: C901
    kind, name, avro_kind = schema.type, schema.name, _kind(avro)
    out, length = f"x{tag}", f"l{tag}"
    if kind is Type.STRUCT:
        if avro_kind != "record" or name == AVRO_TYPE_UNION:
            raise _Unsupported
        fields = schema.fields
        avro_fields = avro["fields"]
        rename = gen.field_name
        names = [f.name if rename is None else rename(f.name) for f in fields]
        if [f["name"] for f in avro_fields] != names:
            raise _Unsupported
        if tag != "r":
            raise _Unsupported  # (nested structs are functions of their own)
        own, seen = gen.const(schema), gen.const([schema])
        lines = [
            f"if type({var}) is not _Struct:",
            "    raise _FB",
            f"s = {var}.schema",
            f"if s is not {own} and s is not {seen}[0]:",
            f"    if s != {own}:",
            "        raise _FB",
            f"    {seen}[0] = s",
        ]
        if fields:
            targets = "".join(f"a{index}, " for index in range(len(fields)))
            lines.append(f"{targets}= {var}.field_values()")
        parts: list[str] = []
        for index, (avro_field, field) in enumerate(zip(avro_fields, fields, strict=True)):
            if field.schema.type in (Type.STRUCT, Type.ARRAY, Type.MAP):
                nested = _write_function(gen, avro_field["type"], field.schema)
                lines.append(f"x{index} = {nested}(a{index})")
                parts.append(f"x{index}")
            else:
                code = _write_value(gen, avro_field["type"], field.schema, f"a{index}", f"{index}")
                lines += code[0]
                parts += code[1]
        if not parts:
            lines.append(f"{out} = b''")
            parts.append(out)
        return lines, parts
    end = f"e{tag}"
    if kind is Type.ARRAY or kind is Type.MAP:
        if avro_kind != ("array" if kind is Type.ARRAY else "map"):
            raise _Unsupported
        assert schema.value_schema is not None
        if kind is Type.MAP:
            assert schema.key_schema is not None
            if schema.key_schema.type is not Type.STRING or schema.key_schema.optional:
                raise _Unsupported
        item = _write_function(
            gen, avro["items" if kind is Type.ARRAY else "values"], schema.value_schema
        )
        if kind is Type.ARRAY:
            check = f"type({var}) is not list"
            items = [f"    {out} = b''.join([{item}(y) for y in {var}])"]
        else:
            check = f"type({var}) is not dict"
            items = [
                "    o = []",
                f"    for k, y in {var}.items():",
                "        if type(k) is not str:",
                "            raise _FB",
                "        x = k.encode()",
                *("        " + line for line in _length("x", "z")),
                f"        o += (z, x, {item}(y))",
                f"    {out} = b''.join(o)",
            ]
        lines = [
            f"if {check}:",
            "    raise _FB",
            f"if {var}:",
            f"    {length} = _long_bytes(len({var}))",
            *items,
            "else:",
            f"    {length} = {out} = b''",
            f"{end} = b'\\x00'",
        ]
        return lines, [length, out, end]
    if avro_kind != _PRIMITIVES[kind]:
        raise _Unsupported
    if name == Decimal.LOGICAL_NAME:
        return [
            f"if type({var}) is not _Dec:",
            "    raise _FB",
            f"{out} = _decimal_bytes({gen.const(schema)}, {var})",
            *_length(out, length),
        ], [length, out]
    if name == Date.LOGICAL_NAME:
        return [
            f"if type({var}) is not _date:",
            "    raise _FB",
            f"{out} = _long_bytes(({var} - _EPOCH_DATE).days)",
        ], [out]
    if name == Time.LOGICAL_NAME:
        return [
            f"if type({var}) is not _time:",
            "    raise _FB",
            f"{out} = _long_bytes(_time_ms({gen.const(schema)}, {var}))",
        ], [out]
    if name == Timestamp.LOGICAL_NAME:
        aware = f"({var} if {var}.tzinfo is not None else {var}.replace(tzinfo=_UTC))"
        last = gen.const([None, b""])  # the last datetime and its bytes (see _jsoncompiled)
        return [
            f"if type({var}) is not _datetime:",
            "    raise _FB",
            f"if {var} is not {last}[0]:",
            f"    {last}[1] = _long_bytes(({aware} - _EPOCH) // _ONE_MS)",
            f"    {last}[0] = {var}",
            f"{out} = {last}[1]",
        ], [out]
    if name is not None:
        raise _Unsupported  # another named primitive: the exact path decides
    if kind in _INT_BOUNDS:
        low, high = _INT_BOUNDS[kind]
        return [  # _long_bytes inline
            f"if type({var}) is not int or not {low} <= {var} <= {high}:",
            "    raise _FB",
            f"z = ({var} << 1) ^ ({var} >> 63)",
            f"{out} = _VARINTS[z] if z < {_VARINT_TABLE_SIZE} else _varint(z)",
        ], [out]
    if kind is Type.FLOAT32 or kind is Type.FLOAT64:
        pack = "_float_pack" if kind is Type.FLOAT32 else "_double_pack"
        return [
            f"if type({var}) is not float and type({var}) is not int:",
            "    raise _FB",
            f"{out} = {pack}({var})",
        ], [out]
    if kind is Type.BOOLEAN:
        return [
            f"if {var} is True:",
            f"    {out} = b'\\x01'",
            f"elif {var} is False:",
            f"    {out} = b'\\x00'",
            "else:",
            "    raise _FB",
        ], [out]
    if kind is Type.STRING:
        return [
            f"if type({var}) is not str:",
            "    raise _FB",
            f"{out} = {var}.encode()",
            *_length(out, length),
        ], [length, out]
    return [  # BYTES
        f"if type({var}) is not bytes:",
        "    raise _FB",
        f"{out} = {var}",
        *_length(out, length),
    ], [length, out]


def _length(var: str, length: str) -> list[str]:
    """``length`` = the varint of ``len(var)`` (a table look-up for lengths below 8 KiB)."""
    return [
        f"{length} = len({var}) << 1",
        f"{length} = _VARINTS[{length}] if {length} < {_VARINT_TABLE_SIZE} "
        f"else _long_bytes(len({var}))",
    ]
