"""Field paths (KIP-821): ``V1`` names one top-level field, ``V2`` walks nested fields.

V2 splits on dots; a step wrapped in backticks may contain dots
(```a.b`.c`` is the steps ``a.b`` and ``c``), and a backtick inside such a step is
escaped with a backslash when it would otherwise close the step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copycat_transforms._util import (
    config_error,
    require_map_or_null,
    require_struct_or_null,
)
from plugin_api import (
    ConfigDef,
    ConfigType,
    DataException,
    Field,
    Importance,
    Schema,
    Struct,
    Type,
)

FIELD_SYNTAX_VERSION_CONFIG = "field.syntax.version"
V1 = "V1"
V2 = "V2"


def _check_version(name: str, value: object) -> None:
    if not isinstance(value, str) or value.upper() not in (V1, V2):
        raise config_error(
            name,
            value,
            f"Invalid value {value} for configuration {name}: "
            f"String must be one of (case insensitive): {V1}, {V2}",
        )


def define_field_syntax_version(config_def: ConfigDef) -> ConfigDef:
    """Add ``field.syntax.version`` (V1 default)."""
    return config_def.define(
        FIELD_SYNTAX_VERSION_CONFIG,
        ConfigType.STRING,
        V1,
        _check_version,
        Importance.HIGH,
        "Defines the version of the syntax to access fields. If set to `V1`, then the field "
        "paths are limited to access the elements at the root level of the struct or map. "
        "If set to `V2`, the syntax will support accessing nested elements. To access nested "
        "elements, dotted notation is used. If dots are already included in the field name, "
        "then backtick pairs can be used to wrap field names containing dots.",
    )


def _incomplete(path: str, at: int, key: str) -> Exception:
    return config_error(
        key,
        path,
        f"Incomplete backtick pair in path: [{path}], consider adding a backslash before "
        f"backtick at position {at} to escape it",
    )


def parse_steps(path: str, version: str, key: str = "field") -> list[str]:
    """Split ``path`` into steps according to the syntax ``version``.

    Raises:
        ConfigException: Naming ``key``, for an unbalanced backtick in V2.
    """
    if version.upper() == V1:
        return [path]
    steps: list[str] = []
    i, n = 0, len(path)
    while i < n:
        if path[i] != "`":
            dot = path.find(".", i)
            steps.append(path[i:] if dot < 0 else path[i:dot])
            i = n if dot < 0 else dot + 1
            continue
        opened, i = i, i + 1
        step: list[str] = []
        start = i
        while True:
            close = path.find("`", i)
            if close < 0:
                raise _incomplete(path, opened, key)
            escaped = path[close - 1] == "\\"
            if close == n - 1:
                if escaped:
                    raise _incomplete(path, opened, key)
                step.append(path[start:close])
                i = n
                break
            if path[close + 1] != ".":
                i = close + 1  # a backtick inside the step
                continue
            if escaped:
                step.append(path[start : close - 1] + "`")
                i = start = close + 1
                continue
            step.append(path[start:close])
            i = close + 2
            break
        steps.append("".join(step))
    if path.endswith("."):
        steps.append("")
    return steps


# Kafka's ConnectSchema.field() on a schema that is no struct: SingleFieldPath.fieldFrom
# looks each step up without checking the type first.
NON_STRUCT_LOOKUP = "Cannot look up fields on non-struct type"


def field_from(schema: Schema, steps: list[str]) -> Field | None:
    """The field at ``steps`` in a struct schema, or ``None`` if a step is not there.

    Raises:
        DataException: If ``schema``, or the schema of a step before the last, is no struct.
    """
    current = schema
    for step in steps[:-1]:
        if current.type is not Type.STRUCT:
            raise DataException(NON_STRUCT_LOOKUP)
        found = current.field(step)
        if found is None:
            return None
        current = found.schema
    if current.type is not Type.STRUCT:
        raise DataException(NON_STRUCT_LOOKUP)
    return current.field(steps[-1])


def struct_value_from(struct: Struct, steps: list[str], replace_null_with_default: bool) -> Any:
    """The value at ``steps`` in a struct, or ``None`` if absent."""
    current: Struct | None = struct
    for step in steps[:-1]:
        assert current is not None
        if current.schema.field(step) is None:
            return None
        current = require_struct_or_null(current.get(step), "nested field access")
        if current is None:
            return None
    assert current is not None
    last = steps[-1]
    if current.schema.field(last) is None:
        return None
    return current.get(last) if replace_null_with_default else current.get_without_default(last)


def map_value_from(value: Mapping[str, Any], steps: list[str]) -> Any:
    """The value at ``steps`` in nested maps, or ``None`` if absent."""
    current: Mapping[str, Any] | None = value
    for step in steps[:-1]:
        assert current is not None
        current = require_map_or_null(current.get(step), "nested field access")
        if current is None:
            return None
    assert current is not None
    return current.get(steps[-1])
