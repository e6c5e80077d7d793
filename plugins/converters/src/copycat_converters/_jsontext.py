"""JSON text exactly as Kafka's JsonConverter (Jackson) writes it.

Python's ``json.dumps(..., separators=(",", ":"), ensure_ascii=False)`` already
matches Jackson's compact output for objects, arrays, strings, ints and most
doubles. The differences handled here:

* Doubles outside ``[1e-3, 1e7)`` are written by Java as ``1.0E7`` / ``1.0E-4``
  (``Double.toString``); Python writes ``10000000.0`` / ``0.0001``.
* FLOAT32 values are written with the shortest digits of the 32-bit float
  (``Float.toString``): ``0.1``, not ``0.10000000149011612``.
* Decimals with ``decimal.format=NUMERIC`` are written as ``BigDecimal.toString``.
* Jackson writes the hex digits of ``\\u00XX`` escapes in upper case.
* Jackson (2.18 and later, so Kafka 4.x) writes a character outside the Basic Multilingual
  Plane as an escaped UTF-16 surrogate pair, ``\\uD83E\\uDD84`` for U+1F984, not as four
  UTF-8 bytes (its ``COMBINE_UNICODE_SURROGATES_IN_UTF8`` is off by default). Seen by the
  differential test against Kafka Connect (tests/differential/test_source_bytes.py).

Values that need Java formatting are wrapped in :class:`Raw`; a tree holding
any ``Raw`` goes through the (slower) pure-Python :func:`dumps_slow`, every
other tree through the C encoder.
"""

from __future__ import annotations

import json
import math
import re
import struct

try:  # a C/Rust encoder several times faster than the stdlib's; optional
    import orjson as _orjson
except ImportError:  # pragma: no cover - the plugin depends on it; kept working without
    _orjson = None

__all__ = ["Raw", "dumps", "dumps_bytes", "java_double", "java_float", "loads_fast"]

# Java's Double.toString/Float.toString switch to "computerized scientific
# notation" outside this magnitude range.
_PLAIN_MIN = 1e-3
_PLAIN_MAX = 1e7
# Significant decimal digits always enough to round-trip a float32.
_FLOAT32_MAX_DIGITS = 9

_encode_str = json.encoder.py_encode_basestring  # type: ignore[attr-defined]
_encode_str_c = getattr(json.encoder, "c_encode_basestring", None) or _encode_str
_dumps_fast = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_LOWER_HEX_ESCAPE = re.compile(r"(\\\\)|\\u00([0-9a-f]{2})")
_NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


class Raw(str):
    """JSON text to be written verbatim (a number formatted the Java way)."""

    __slots__ = ()


def _digits(text: str) -> tuple[str, int]:
    """Split a positive decimal literal into significant digits and the point position."""
    mantissa, _, exp = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    point = len(whole) + (int(exp) if exp else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    stripped = stripped.rstrip("0") or "0"
    return stripped, point


def _java_format(sign: str, digits: str, point: int, magnitude: float) -> str:
    if _PLAIN_MIN <= magnitude < _PLAIN_MAX:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{point - 1}"


def java_double(value: float) -> str:
    """Return ``Double.toString(value)`` (JDK 19+ shortest digits); non-finite values by name."""
    if not math.isfinite(value):
        return _NON_FINITE[repr(value)]
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    magnitude = abs(value)
    digits, point = _digits(repr(magnitude))
    return _java_format("-" if value < 0 else "", digits, point, magnitude)


def to_float32(value: float) -> float:
    """Round ``value`` to the nearest 32-bit float (overflowing to infinity, as Java's cast)."""
    try:
        return struct.unpack("f", struct.pack("f", value))[0]  # type: ignore[no-any-return]
    except OverflowError:
        return math.copysign(math.inf, value)


def java_float(value: float) -> str:
    """Return ``Float.toString((float) value)``: the shortest digits that identify the float32."""
    f32 = to_float32(value)
    if not math.isfinite(f32):
        return _NON_FINITE[repr(f32)]
    if f32 == 0:
        return "-0.0" if math.copysign(1.0, f32) < 0 else "0.0"
    magnitude = abs(f32)
    for precision in range(_FLOAT32_MAX_DIGITS):
        text = f"{magnitude:.{precision}e}"
        if to_float32(float(text)) == magnitude:
            break
    digits, point = _digits(text)
    return _java_format("-" if f32 < 0 else "", digits, point, magnitude)


def dumps_slow(obj: object) -> str:
    """Encode ``obj`` (JSON types plus :class:`Raw`) compactly in pure Python."""
    parts: list[str] = []
    _write(obj, parts.append)
    return "".join(parts)


def _write(obj: object, out: object) -> None:  # noqa: C901 - one dispatch table
    emit = out  # type: ignore[assignment]
    if isinstance(obj, Raw):
        emit(str(obj))  # type: ignore[operator]
    elif isinstance(obj, str):
        emit(_encode_str_c(obj))  # type: ignore[operator]
    elif obj is None:
        emit("null")  # type: ignore[operator]
    elif obj is True:
        emit("true")  # type: ignore[operator]
    elif obj is False:
        emit("false")  # type: ignore[operator]
    elif isinstance(obj, int):
        emit(int.__repr__(obj))  # type: ignore[operator]
    elif isinstance(obj, float):
        emit(float.__repr__(obj))  # type: ignore[operator]
    elif isinstance(obj, dict):
        emit("{")  # type: ignore[operator]
        first = True
        for key, value in obj.items():
            if not first:
                emit(",")  # type: ignore[operator]
            first = False
            emit(_encode_str_c(key))  # type: ignore[operator]
            emit(":")  # type: ignore[operator]
            _write(value, emit)
        emit("}")  # type: ignore[operator]
    elif isinstance(obj, list):
        emit("[")  # type: ignore[operator]
        for i, value in enumerate(obj):
            if i:
                emit(",")  # type: ignore[operator]
            _write(value, emit)
        emit("]")  # type: ignore[operator]
    else:  # pragma: no cover - the converters only build the types above
        raise TypeError(f"Cannot encode {type(obj).__name__} as JSON")


def _upper_hex(match: re.Match[str]) -> str:
    if match.group(1):
        return match.group(1)
    return "\\u00" + match.group(2).upper()


def dumps(obj: object, slow: bool) -> str:
    """Encode ``obj`` compactly like Jackson; ``slow`` says whether it holds :class:`Raw` values."""
    text = dumps_slow(obj) if slow else _dumps_fast(obj)
    # A lone backslash is found with memchr; the four-byte search costs ~0.6 us per KiB.
    if "\\" in text and "\\u00" in text:
        text = _LOWER_HEX_ESCAPE.sub(_upper_hex, text)
    return _escape_astral(text)


_LOWER_HEX_ESCAPE_BYTES = re.compile(rb"(\\\\)|\\u00([0-9a-f]{2})")

# A character outside the BMP: as text, and as its 4-byte UTF-8 sequence. JSON syntax is
# ASCII, so such a character can only be inside a string, where an escape means the same.
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_ASTRAL_UTF8 = re.compile(rb"[\xf0-\xf4][\x80-\xbf]{3}")


def _surrogate_escape(char: str) -> str:
    code = ord(char) - 0x10000
    return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"


def _escape_astral(text: str) -> str:
    """Jackson's escaped surrogate pairs for characters outside the BMP (see the docstring)."""
    if text.isascii():
        return text
    return _ASTRAL.sub(lambda m: _surrogate_escape(m.group()), text)


def _escape_astral_bytes(data: bytes) -> bytes:
    if data.isascii():  # the common case, checked at memory speed
        return data
    return _ASTRAL_UTF8.sub(lambda m: _surrogate_escape(m.group().decode()).encode(), data)


def _upper_hex_bytes(match: re.Match[bytes]) -> bytes:
    if match.group(1):
        return match.group(1)
    return b"\\u00" + match.group(2).upper()


def dumps_bytes(obj: object, slow: bool) -> bytes:
    """:func:`dumps`, encoded to UTF-8; trees without :class:`Raw` go through orjson.

    orjson writes JSON-native trees (str keys, str, int within 64 bits, bool, None, lists,
    and doubles in ``[1e-3, 1e7)``, the only ones the converter leaves as floats) byte for
    byte as the stdlib does (tests/test_json_converter.py compares them).

    Raises:
        UnicodeEncodeError: For text that is not valid Unicode (lone surrogates).
    """
    if slow or _orjson is None:
        return dumps(obj, slow).encode("utf-8")
    try:
        data: bytes = _orjson.dumps(obj)
    except TypeError:  # lone surrogates, or anything else orjson declines: the exact path
        return dumps(obj, slow).encode("utf-8")
    return jackson_escapes(data)


def jackson_escapes(data: bytes) -> bytes:
    """orjson's output with Jackson's escapes: ``\\u00XX`` in upper case, and characters
    outside the BMP as escaped surrogate pairs (Kafka 4.x writes both so)."""
    if b"\\" in data and b"\\u00" in data:  # see dumps(): the first test is much cheaper
        data = upper_hex_escapes(data)
    return _escape_astral_bytes(data)


def upper_hex_escapes(data: bytes) -> bytes:
    """``\\u00xx`` escapes with upper-case hex digits, as Jackson writes them."""
    return _LOWER_HEX_ESCAPE_BYTES.sub(_upper_hex_bytes, data)


def loads_fast(data: bytes) -> object:
    """Parse JSON bytes with orjson where available.

    Raises:
        ValueError: If ``data`` is not valid JSON (or not UTF-8).
    """
    if _orjson is None:
        return json.loads(data, parse_constant=_no_constant)
    return _orjson.loads(data)


def _no_constant(name: str) -> object:
    raise ValueError(f"non-standard token {name!r}")  # NaN/Infinity are not JSON
