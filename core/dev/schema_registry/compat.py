"""Schema compatibility levels, checked with the Apache Avro library's own checker.

The reader/writer rules of the Avro specification's schema resolution are implemented
by ``avro.compatibility.ReaderWriterCompatibilityChecker`` (the Python port of Java
Avro's ``SchemaCompatibility``, which Confluent's registry uses). This module only maps
Confluent's levels onto reader/writer checks:

=====================  ==============================================================
Level                  The new schema must ...
=====================  ==============================================================
BACKWARD (default)     read data written with the latest version (new = reader)
FORWARD                be readable by the latest version (new = writer)
FULL                   both
*_TRANSITIVE           the same against every live version, not only the latest
NONE                   nothing
=====================  ==============================================================
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import avro.errors
import avro.schema
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

__all__ = [
    "COMPATIBILITY_LEVELS",
    "DEFAULT_COMPATIBILITY",
    "InvalidSchema",
    "canonical",
    "check",
    "check_names",
    "parse",
]

DEFAULT_COMPATIBILITY = "BACKWARD"
COMPATIBILITY_LEVELS = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)


class InvalidSchema(ValueError):
    """The text is not a valid Avro schema."""


def parse(text: str) -> avro.schema.Schema:
    """Parse an Avro schema.

    Raises:
        InvalidSchema: With the parser's reason.
    """
    try:
        json.loads(text)
        return avro.schema.parse(text)
    except (ValueError, avro.errors.AvroException, TypeError, KeyError, AttributeError) as exc:
        raise InvalidSchema(f"Invalid schema {text}: {exc}") from exc


def check_names(text: str, schema: avro.schema.Schema) -> None:
    """Refuse field names Java Avro refuses (the parser checked every other name).

    Kept apart from :func:`parse` so schemas stored before this check still replay.

    Raises:
        InvalidSchema: Naming the field and its record.
    """
    problem = _field_name_problem(schema, set())
    if problem is not None:
        raise InvalidSchema(f"Invalid schema {text}: {problem}")


def _name_error(name: str) -> str | None:
    """Java Avro's ``Schema.validateName`` complaint about ``name`` (None if valid): a letter or
    ``_``, then letters, digits or ``_`` (Java's ``Character.isLetter[OrDigit]``)."""
    if not name:
        return "Empty name"
    if not (name[0].isalpha() or name[0] == "_"):
        return f"Illegal initial character: {name}"
    if not all(c.isalpha() or c.isdecimal() or c == "_" for c in name[1:]):
        return f"Illegal character in: {name}"
    return None


def _field_name_problem(schema: avro.schema.Schema, seen: set[str]) -> str | None:
    """Why a field name of ``schema`` is invalid, naming field and record, or None.

    The Python parser checks record, enum and fixed names, namespaces and enum symbols as
    Java's does, but not field names; Java's (Confluent's registry, every Java consumer)
    refuses ``outer.line``, so this registry does too.
    """
    if isinstance(schema, avro.schema.RecordSchema):
        if schema.fullname in seen:
            return None
        seen.add(schema.fullname)
        for field in schema.fields:
            problem = _name_error(field.name)
            if problem is not None:
                return f"{problem} (field {field.name!r} of record {schema.fullname!r})"
            problem = _field_name_problem(field.type, seen)
            if problem is not None:
                return problem
    elif isinstance(schema, avro.schema.ArraySchema):
        return _field_name_problem(schema.items, seen)
    elif isinstance(schema, avro.schema.MapSchema):
        return _field_name_problem(schema.values, seen)
    elif isinstance(schema, avro.schema.UnionSchema):
        for branch in schema.schemas:
            problem = _field_name_problem(branch, seen)
            if problem is not None:
                return problem
    return None


def canonical(schema: avro.schema.Schema) -> str:
    """A normalized text of ``schema``: equal for schemas that differ only in JSON layout.

    Like Confluent's registry (and unlike Avro's Parsing Canonical Form) it keeps docs,
    defaults and custom properties, so two schemas that differ only in ``connect.doc``
    are different schemas with different ids.
    """
    return json.dumps(schema.to_json(), sort_keys=True, separators=(",", ":"))


def _problems(reader: avro.schema.Schema, writer: avro.schema.Schema, new_is: str) -> list[str]:
    result = ReaderWriterCompatibilityChecker().get_compatibility(reader, writer)
    if result.compatibility is SchemaCompatibilityType.compatible:
        return []
    reader_name, writer_name = ("new", "old") if new_is == "reader" else ("old", "new")
    kinds: Sequence[Any] = list(result.incompatibilities) or [None]
    messages = sorted(str(m) for m in result.messages or ()) or [""]
    locations = sorted(result.locations or ()) or ["/"]
    problems: list[str] = []
    for i, kind in enumerate(kinds):
        name = kind.name.upper() if kind is not None else "INCOMPATIBLE"
        what = messages[min(i, len(messages) - 1)]
        where = locations[min(i, len(locations) - 1)]
        if name == "READER_FIELD_MISSING_DEFAULT_VALUE":
            text = (
                f"The field '{what}' at path '{where}' in the {reader_name} schema has no default "
                f"value and is missing in the {writer_name} schema"
            )
        else:
            text = (
                f"{what} at path '{where}' "
                f"(the {reader_name} schema reads data of the {writer_name} schema)"
            )
        problems.append(f"{{errorType:'{name}', description:'{text}'}}")
    return problems


def check(level: str, new: avro.schema.Schema, previous: Sequence[avro.schema.Schema]) -> list[str]:
    """Return why ``new`` breaks ``level`` against ``previous`` (oldest first).

    Empty if it does not.

    Non-transitive levels compare with the last element only.
    """
    if level == "NONE" or not previous:
        return []
    against = previous if level.endswith("_TRANSITIVE") else previous[-1:]
    base = level.removesuffix("_TRANSITIVE")
    problems: list[str] = []
    for old in reversed(against):
        if base in ("BACKWARD", "FULL"):
            problems += _problems(new, old, "reader")
        if base in ("FORWARD", "FULL"):
            problems += _problems(old, new, "writer")
    return problems
