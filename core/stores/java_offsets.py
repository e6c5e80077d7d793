"""Kafka Connect's standalone offsets file: a Java-serialized ``java.util.HashMap`` of
``byte[]`` keys to ``byte[]`` values (the ``connect-offsets`` JSON of each partition).

Kafka's ``FileOffsetBackingStore`` writes the map with ``ObjectOutputStream.writeObject`` and
reads it back with ``readObject``. This module reads and writes that one shape only, from the
Java Object Serialization Stream Protocol (magic, class descriptors, arrays, back-references,
``HashMap``'s own ``writeObject`` data), so that a ``connect-standalone`` worker's file can be
taken over by Copycat and handed back. Nothing is instantiated from the stream: any other class,
field or object kind is refused as not such a file.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

__all__ = ["JavaOffsetsError", "looks_java_serialized", "read_offsets_map", "write_offsets_map"]

_MAGIC = b"\xac\xed\x00\x05"
_TC_NULL, _TC_REFERENCE, _TC_CLASSDESC, _TC_OBJECT = 0x70, 0x71, 0x72, 0x73
_TC_STRING, _TC_ARRAY, _TC_BLOCKDATA, _TC_ENDBLOCKDATA = 0x74, 0x75, 0x77, 0x78
_BASE_HANDLE = 0x7E0000
_SC_WRITE_METHOD, _SC_SERIALIZABLE = 0x01, 0x02

_HASHMAP = "java.util.HashMap"
_HASHMAP_UID = 362498820763181265
_BYTES = "[B"
_BYTES_UID = -5984413125824719648
_PRIMITIVE_SIZES = {"B": 1, "C": 2, "D": 8, "F": 4, "I": 4, "J": 8, "S": 2, "Z": 1}
_LOAD_FACTOR = 0.75
_MIN_BUCKETS = 16


class JavaOffsetsError(ValueError):
    """Not a serialized ``HashMap<byte[], byte[]>``; ``truncated`` when the stream was one
    that ends too early (a file cut short)."""

    def __init__(self, message: str, *, truncated: bool = False) -> None:
        super().__init__(message)
        self.truncated = truncated


def looks_java_serialized(data: bytes) -> bool:
    """The stream magic (``0xACED``) that every ``ObjectOutputStream`` begins with."""
    return data[:2] == _MAGIC[:2]


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0
        self.handles: list[object] = []

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise JavaOffsetsError(f"the stream ends after {len(self.data)} bytes", truncated=True)
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def u1(self) -> int:
        return self.take(1)[0]

    def u2(self) -> int:
        value: int = struct.unpack(">H", self.take(2))[0]
        return value

    def i4(self) -> int:
        value: int = struct.unpack(">i", self.take(4))[0]
        return value

    def utf(self) -> str:
        return self.take(self.u2()).decode("utf-8", "replace")

    def new_handle(self, value: object) -> int:
        self.handles.append(value)
        return len(self.handles) - 1

    def handle(self) -> object:
        index = self.i4() - _BASE_HANDLE
        if not 0 <= index < len(self.handles):
            raise JavaOffsetsError(f"a reference to unknown handle {index + _BASE_HANDLE:#x}")
        return self.handles[index]

    def class_desc(self) -> tuple[str, int, list[tuple[str, str]]]:
        """A class descriptor (new or referenced): name, flags and fields."""
        tag = self.u1()
        if tag == _TC_REFERENCE:
            desc = self.handle()
            if not isinstance(desc, tuple):
                raise JavaOffsetsError("a reference to an object where a class was expected")
            return desc
        if tag != _TC_CLASSDESC:
            raise JavaOffsetsError(f"unexpected type code {tag:#04x} for a class descriptor")
        name = self.utf()
        self.take(8)  # serialVersionUID
        flags = self.u1()
        fields: list[tuple[str, str]] = []
        for _ in range(self.u2()):
            code, field = chr(self.u1()), self.utf()
            if code not in _PRIMITIVE_SIZES:
                raise JavaOffsetsError(f"class {name} has an object field {field}")
            fields.append((code, field))
        if self.u1() != _TC_ENDBLOCKDATA:
            raise JavaOffsetsError(f"class {name} carries annotations")
        if self.u1() != _TC_NULL:
            raise JavaOffsetsError(f"class {name} has a serializable superclass")
        desc = (name, flags, fields)
        self.new_handle(desc)
        return desc

    def byte_array(self) -> bytes | None:
        tag = self.u1()
        if tag == _TC_NULL:
            return None
        if tag == _TC_REFERENCE:
            value = self.handle()
            if not isinstance(value, bytes):
                raise JavaOffsetsError("a reference to something other than a byte array")
            return value
        if tag != _TC_ARRAY:
            raise JavaOffsetsError(f"unexpected type code {tag:#04x} where a byte[] was expected")
        name, _flags, _fields = self.class_desc()
        if name != _BYTES:
            raise JavaOffsetsError(f"an array of {name}, not a byte[]")
        handle = self.new_handle(b"")
        length = self.i4()
        if length < 0:
            raise JavaOffsetsError(f"a byte[] of length {length}")
        value = self.take(length)
        self.handles[handle] = value
        return value


def read_offsets_map(data: bytes) -> dict[bytes, bytes | None]:
    """The entries of a serialized ``HashMap<byte[], byte[]>``, in stream order.

    Raises:
        JavaOffsetsError: The bytes are not such a map (``truncated`` if they stop early).
    """
    reader = _Reader(data)
    if reader.take(4) != _MAGIC:
        raise JavaOffsetsError("no Java serialization stream header")
    if reader.u1() != _TC_OBJECT:
        raise JavaOffsetsError("the stream does not hold an object")
    name, flags, fields = reader.class_desc()
    if name != _HASHMAP or not flags & _SC_WRITE_METHOD:
        raise JavaOffsetsError(f"the stream holds a {name}, not a {_HASHMAP}")
    reader.new_handle(None)  # the map itself
    for code, _field in fields:  # loadFactor, threshold: HashMap recomputes what it needs
        reader.take(_PRIMITIVE_SIZES[code])
    if reader.u1() != _TC_BLOCKDATA or reader.u1() < 8:
        raise JavaOffsetsError("the map's size is missing")
    reader.i4()  # buckets
    size = reader.i4()
    if size < 0:
        raise JavaOffsetsError(f"a map of {size} entries")
    entries: dict[bytes, bytes | None] = {}
    for _ in range(size):
        key = reader.byte_array()
        value = reader.byte_array()
        if key is None:
            raise JavaOffsetsError("a null key")
        entries[key] = value
    if reader.u1() != _TC_ENDBLOCKDATA:
        raise JavaOffsetsError("the map does not end where its size says")
    if reader.pos != len(data):
        raise JavaOffsetsError(f"{len(data) - reader.pos} bytes after the map")
    return entries


def _utf(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">H", len(raw)) + raw


def write_offsets_map(entries: Mapping[bytes, bytes]) -> bytes:
    """``entries`` as ``ObjectOutputStream`` writes a ``HashMap<byte[], byte[]>``, which
    Kafka Connect's ``FileOffsetBackingStore`` reads."""
    buckets = _MIN_BUCKETS
    while len(entries) > buckets * _LOAD_FACTOR:
        buckets *= 2
    out = bytearray(_MAGIC)
    out += bytes([_TC_OBJECT, _TC_CLASSDESC]) + _utf(_HASHMAP)
    out += struct.pack(">qBH", _HASHMAP_UID, _SC_WRITE_METHOD | _SC_SERIALIZABLE, 2)
    out += b"F" + _utf("loadFactor") + b"I" + _utf("threshold")
    out += bytes([_TC_ENDBLOCKDATA, _TC_NULL])
    out += struct.pack(">fi", _LOAD_FACTOR, int(buckets * _LOAD_FACTOR))
    out += bytes([_TC_BLOCKDATA, 8]) + struct.pack(">ii", buckets, len(entries))
    # Handles: 0 the HashMap class, 1 the map, 2 the byte[] class, then one per array.
    bytes_class = struct.pack(">i", _BASE_HANDLE + 2)
    first = True
    for key, value in entries.items():
        for array in (key, value):
            out.append(_TC_ARRAY)
            if first:
                out += bytes([_TC_CLASSDESC]) + _utf(_BYTES)
                out += struct.pack(">qBH", _BYTES_UID, _SC_SERIALIZABLE, 0)
                out += bytes([_TC_ENDBLOCKDATA, _TC_NULL])
                first = False
            else:
                out += bytes([_TC_REFERENCE]) + bytes_class
            out += struct.pack(">i", len(array)) + array
    out.append(_TC_ENDBLOCKDATA)
    return bytes(out)
