"""Nesting depth of JSON documents, as Kafka's JsonConverter (Jackson) limits it.

Jackson's ``StreamReadConstraints`` and ``StreamWriteConstraints`` (Kafka 4.1.1 ships Jackson
2.19) allow a document 1000 arrays or objects deep, the envelope's object included, and refuse
the 1001st level when the parser or the generator reaches it, with "Document nesting depth
(1001) exceeds the maximum allowed (1000, ...)". Kafka's JsonConverter then raises its
DataException, "Converting byte[] to Kafka Connect data failed due to serialization error: "
on read and "Converting Kafka Connect data to byte[] failed ..." on write.

The converter's paths recurse once or more per level, so a document some hundreds of levels
deep meets Python's recursion limit first, while orjson reads 1024 levels. Nothing here runs
per record on a document that cannot be too deep: a document nested deeper than the limit is
at least :data:`SHALLOW_BYTES` long (its brackets opened and closed), which a batch finds
with one pass in C over its lengths (``to_connect_data`` alone compares one length); the
rest is only called when a conversion raised RecursionError (:func:`call_deeply` then runs
it again with room for the levels Kafka accepts).
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable, Mapping
from typing import TypeVar

from plugin_api import DataException, Schema, Struct, Type

__all__ = [
    "MAX_NESTING_DEPTH",
    "READ",
    "WRITE",
    "SHALLOW_BYTES",
    "call_deeply",
    "check_read_depth",
    "nesting_depth",
    "read_too_deep",
    "schema_depth",
    "value_depth",
    "write_too_deep",
]

# Jackson's default StreamReadConstraints / StreamWriteConstraints maxNestingDepth.
MAX_NESTING_DEPTH = 1000
# No document shorter than this can nest deeper than MAX_NESTING_DEPTH and be valid JSON.
SHALLOW_BYTES = 2 * (MAX_NESTING_DEPTH + 1)
# Room a conversion gets per level of nesting when it runs again after a RecursionError: the
# exact paths take up to ~6 Python frames a level (a map with non-string keys writes two
# levels, its pairs' array and the pair), the stdlib's C parser and encoder one each.
_FRAMES_PER_LEVEL = 12

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_OPEN = frozenset(b"[{")
_deep_lock = threading.Lock()

T = TypeVar("T")


READ = "byte[] to Kafka Connect data"
WRITE = "Kafka Connect data to byte[]"


def _too_deep(what: str) -> str:
    return (
        f"Converting {what} failed due to serialization error: Document nesting depth "
        f"({MAX_NESTING_DEPTH + 1}) exceeds the maximum allowed ({MAX_NESTING_DEPTH})"
    )


def read_too_deep() -> DataException:
    """Kafka's DataException for a document nested deeper than it reads."""
    return DataException(_too_deep(READ))


def write_too_deep() -> DataException:
    """Kafka's DataException for a value whose JSON would nest deeper than it writes."""
    return DataException(_too_deep(WRITE))


def nesting_depth(data: bytes | bytearray | memoryview) -> int:
    """The deepest nesting of arrays and objects in the JSON text ``data`` (brackets inside
    strings not counted), or ``MAX_NESTING_DEPTH + 1`` as soon as it goes that deep."""
    brackets = _STRING.sub(b"", bytes(data)).translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for byte in brackets:
        if byte in _OPEN:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_NESTING_DEPTH:
                    break
        else:
            depth -= 1
    return deepest


def check_read_depth(data: bytes | bytearray | memoryview) -> None:
    """Refuse a document (of at least :data:`SHALLOW_BYTES`) nested deeper than Kafka reads.

    Two counts at memory speed answer for almost every long document; only one that opens
    more than the limit's arrays and objects is walked.

    Raises:
        DataException: Kafka's, naming the depth and the limit.
    """
    if type(data) is not bytes:
        data = bytes(data)
    if data.count(b"[") + data.count(b"{") > MAX_NESTING_DEPTH:
        if nesting_depth(data) > MAX_NESTING_DEPTH:
            raise read_too_deep()


def value_depth(value: object) -> int:
    """A lower bound of the nesting of ``value``'s JSON (each list, map and struct is at least
    one level), or ``MAX_NESTING_DEPTH + 1`` as soon as it goes that deep. Without recursion."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        if isinstance(node, (list, tuple)):
            children: object = node
        elif isinstance(node, Mapping):
            if all(type(key) is str for key in node):
                children = node.values()
            else:  # an array of [key, value] pairs: two levels
                depth += 1
                children = [item for pair in node.items() for item in pair]
        elif isinstance(node, Struct):
            children = [node.get_without_default(field.name) for field in node.schema.fields]
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if deepest > MAX_NESTING_DEPTH:
                break
        for child in children:  # type: ignore[attr-defined]
            push((child, depth))
    return deepest


def schema_depth(schema: Schema | None) -> int:
    """A lower bound of the nesting of ``schema``'s JSON (an object per schema; a struct's
    fields in an array between it and theirs), or ``MAX_NESTING_DEPTH + 1`` as soon as it
    goes that deep. Without recursion."""
    if schema is None:
        return 0
    deepest = 0
    stack: list[tuple[Schema, int]] = [(schema, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > MAX_NESTING_DEPTH:
                break
        kind = node.type
        if kind is Type.STRUCT:
            stack.extend((field.schema, depth + 2) for field in node.fields)
        elif kind is Type.ARRAY:
            assert node.value_schema is not None
            stack.append((node.value_schema, depth + 1))
        elif kind is Type.MAP:
            assert node.key_schema is not None and node.value_schema is not None
            stack.append((node.key_schema, depth + 1))
            stack.append((node.value_schema, depth + 1))
    return deepest


def call_deeply(convert: Callable[[], T], what: str) -> T:
    """Run ``convert`` again with room for the levels Kafka accepts, after it met Python's
    recursion limit on a document or value within them (checked by the caller).

    One at a time: the limit is the interpreter's, and is put back afterwards.

    Raises:
        DataException: Naming ``what`` ("byte[] to Kafka Connect data"), if it still does not
            fit (a Python that limits its C stack apart from its recursion limit).
    """
    with _deep_lock:
        before = sys.getrecursionlimit()
        sys.setrecursionlimit(before + _FRAMES_PER_LEVEL * (MAX_NESTING_DEPTH + 1))
        try:
            return convert()
        except RecursionError as exc:
            raise DataException(
                f"Converting {what} failed: nested within the maximum depth allowed "
                f"({MAX_NESTING_DEPTH}) but deeper than this Python's stack allows"
            ) from exc
        finally:
            sys.setrecursionlimit(before)
