"""Per-schema functions for the SMTs that copy a struct's values (MaskField, InsertField).

A transform that copies a valid struct's values and changes a few of them does the same
few steps for every record of a schema: substitute defaults for nulls, make sure no required
field is unset, change the values it changes. Written as a loop over a plan, that costs
~1.3 us a record (a method call per step, a test per configured option); generated once per
schema as straight-line code (as the converters do, and as ``dataclasses`` generates
``__init__``), ~0.3 us.

A generated function takes the struct's field values (a list it may change) and returns the
new struct, or ``None`` for anything it does not handle the usual way (an unset required
field, a value of an unusual type): the transform then runs its general path, which gives
the result or the error it always gave. Tests compare the two on generated schemas.

Called on whichever thread applies the transform (the task thread of its plugin host).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plugin_api import Schema, Struct, Type

__all__ = ["MASK_ZEROS", "compile_struct_function", "prelude"]

# The zero a masked field of each type gets (Kafka's), for values of that exact Python type;
# the same immutable constants MaskField's general path uses.
MASK_ZEROS: dict[Type, tuple[type, object]] = {
    Type.STRING: (str, ""),
    Type.INT8: (int, 0),
    Type.INT16: (int, 0),
    Type.INT32: (int, 0),
    Type.INT64: (int, 0),
    Type.FLOAT32: (float, 0.0),
    Type.FLOAT64: (float, 0.0),
    Type.BOOLEAN: (bool, False),
}


def prelude(
    schema: Schema, replace_null_with_default: bool, const: Callable[[object], str]
) -> list[str]:
    """Lines that complete ``v`` as the general paths do: defaults for nulls (when defaults
    replace them), then ``return None`` if a required field without a default is unset (the
    general path raises put()'s error for it). Checked only when ``v`` holds a None."""
    defaults = [
        (field.index, field.schema.default_value)
        for field in schema.fields
        if replace_null_with_default and field.schema.default_value is not None
    ]
    required = [
        field.index
        for field in schema.fields
        if not field.schema.optional and field.schema.default_value is None
    ]
    if not defaults and not required:
        return []
    lines = ["if None in v:"]
    for index, default in defaults:
        lines += [f"    if v[{index}] is None:", f"        v[{index}] = {const(default)}"]
    if required:
        unset = " or ".join(f"v[{index}] is None" for index in required)
        lines += [f"    if {unset}:", "        return None"]
    return lines


def compile_struct_function(
    params: str,
    result: Schema | None,
    body: Callable[[Callable[[object], str]], list[str]],
    namespace: dict[str, Any] | None = None,
) -> Callable[..., Any]:
    """``def f(<params>): <body>; return <a struct of result made of v>``, compiled (the body
    may ``return None`` instead); ``body`` gets a function naming a constant
    (``const(value) -> name``) and returns the lines. With ``result`` None, the last
    parameter must be ``make``: the caller's ``Struct.maker`` of the result's schema (for a
    result of exactly the input's schema object, which may be any of several equal ones)."""
    names: dict[str, Any] = dict(namespace or {})
    if result is not None:
        names["make"] = Struct.maker(result)

    def const(value: object) -> str:
        name = f"_c{len(names)}"
        names[name] = value
        return name

    lines = [*body(const), "return make(v)"]
    source = "\n".join([f"def f({params}):", *("    " + line for line in lines)])
    exec(source, names)  # noqa: S102 - our own generated source
    function: Callable[..., Any] = names["f"]
    return function
