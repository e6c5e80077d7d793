"""Java's numeric conversions and ``toString`` for the values Cast produces.

Cast reproduces Java semantics so a pipeline moved from Kafka Connect writes the
same values: narrowing an integer wraps (``(byte) 300 == 44``), a floating
point value is truncated toward zero and saturates at the int/long bounds
before wrapping, and numbers render as ``Double.toString`` / ``Float.toString``
do (``1.0E10``, ``0.001``, ``NaN``).
"""

from __future__ import annotations

import decimal
import math
import re
import struct

INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
# Java's plain-decimal range for Double.toString/Float.toString: 10^-3 <= |x| < 10^7.
_PLAIN_MIN = 1e-3
_PLAIN_MAX = 1e7


def wrap(value: int, bits: int) -> int:
    """Keep the low ``bits`` bits as a two's-complement integer (Java narrowing)."""
    mask = (1 << bits) - 1
    value &= mask
    return value - (1 << bits) if value >> (bits - 1) else value


def _saturate(value: float, bits: int) -> int:
    if math.isnan(value):
        return 0
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if value >= high:
        return high
    if value <= low:
        return low
    return int(value)


def to_java_int(value: int | float | decimal.Decimal, bits: int) -> int:
    """Java's ``Number.byteValue()``/``shortValue()``/``intValue()``/``longValue()``."""
    if isinstance(value, float):
        # Double.byteValue() is (byte) (int) d; longValue() is (long) d.
        return wrap(_saturate(value, 64 if bits == 64 else 32), bits)
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            return 0
        return (
            wrap(int(value), 64 if bits == 64 else 32)
            if bits >= 32
            else wrap(wrap(int(value), 32), bits)
        )
    return wrap(value, bits)


# java.math.BigDecimal's string syntax (Python's Decimal also takes NaN, Infinity, "_" and
# surrounding whitespace).
_JAVA_DECIMAL_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def java_big_decimal(text: str) -> decimal.Decimal:
    """``new BigDecimal(text)``.

    Raises:
        ValueError: Where Java throws NumberFormatException.
    """
    if _JAVA_DECIMAL_RE.fullmatch(text) is None:
        raise ValueError(f"not a java.math.BigDecimal: {text!r}")
    return decimal.Decimal(text)


def big_decimal_long(value: decimal.Decimal) -> int:
    """``BigDecimal.longValue()``: the integer part (truncated), its low 64 bits."""
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)  # finite: java_big_decimal's
    if exponent >= 64:  # a multiple of 10**64, so of 2**64 (and cheap to answer)
        return 0
    return wrap(int(value), 64)


def to_float32(value: float) -> float:
    """Round to the nearest float32, overflowing to infinity like Java's ``(float)``."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def _shortest_digits(value: float, float32: bool) -> tuple[str, int]:
    """Digits and decimal exponent of the shortest repr that round-trips (as float32 if asked)."""
    if float32:
        for precision in range(1, 10):
            text = f"{value:.{precision - 1}e}"
            if to_float32(float(text)) == value:
                break
    else:
        text = repr(value)
    sign, digits, exponent = decimal.Decimal(text).normalize().as_tuple()
    assert isinstance(exponent, int)
    return "".join(map(str, digits)), exponent + len(digits) - 1


def java_float_str(value: float, float32: bool = False) -> str:
    """``Double.toString`` (or ``Float.toString``) of ``value``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    digits, exp10 = _shortest_digits(abs(value), float32)
    magnitude = abs(value)
    if _PLAIN_MIN <= magnitude < _PLAIN_MAX:
        if exp10 >= 0:
            whole = (digits + "0" * (exp10 + 1))[: exp10 + 1]
            frac = digits[exp10 + 1 :] or "0"
        else:
            whole, frac = "0", "0" * (-exp10 - 1) + digits
        return f"{sign}{whole}.{frac}"
    frac = digits[1:] or "0"
    return f"{sign}{digits[0]}.{frac}E{exp10}"


def java_decimal_str(value: decimal.Decimal) -> str:
    """``BigDecimal.toString`` (same scientific-notation rule as Python's ``str``)."""
    return str(value).replace("e", "E")
