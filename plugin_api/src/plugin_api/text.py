"""Connect values as text, the way Kafka Connect's Java code prints them.

Kafka's FileStreamSinkTask writes ``String.valueOf(record.value())`` and its StringConverter
writes ``value.toString()``, so text written by Kafka Connect holds Java's ``toString()`` of
the value; :func:`java_string` gives the same text for the Python value Copycat holds:

* ``null``; ``true``/``false``; integers in decimal;
* FLOAT64 (and numbers without a schema: Java's ``Double``) as ``Double.toString``, FLOAT32
  as ``Float.toString``: the shortest digits that identify the number, plain between
  10^-3 and 10^7 (``100.0``, ``0.001``), else ``1.0E7``, ``1.5E-4``; ``NaN``, ``Infinity``;
* Decimal as ``BigDecimal.toString`` (``1.50``, ``1E+3``: Python's ``str(Decimal)`` follows the
  same specification); Date, Time and Timestamp as ``java.util.Date.toString`` in UTC
  (``Thu Jan 01 00:00:00 UTC 1970``, seconds precision);
* a Struct as ``Struct{a=1,b=x}``: fields in schema order, unset (null) fields left out, no
  spaces; a map as ``AbstractMap.toString``, ``{a=1, b=2}``; a list as ``[a, b]``; nested
  values the same way (a string inside is not quoted), at any depth (the rendering keeps its
  own stack, so a value nested deeper than Python's recursion limit still prints).

Deliberate differences, where Java's text depends on object identity or hashing:

* bytes inside a struct, map or list are written as ``Arrays.toString(byte[])``,
  ``[104, -1]`` (signed), where Java writes the array's identity (``[B@1b6d3586``); a value
  that is bytes itself is decoded as UTF-8 (a converter decodes it with its own encoding);
* a map keeps the order it has (a JSON object's order); Java's converters build a
  ``HashMap``, whose order follows the keys' hash codes.

(Since plugin_api 0.1.6; before, the file connector kept this to itself.)
"""

from __future__ import annotations

import datetime
import decimal
import math
import struct
from collections.abc import Mapping
from typing import Any

from plugin_api._schema import Schema, Struct, Type
from plugin_api.records import SinkRecord, SourceRecord

__all__ = ["java_class_name", "java_string"]

# Java's Double.toString and Float.toString write plain decimals for magnitudes in
# [10^-3, 10^7) and computerized scientific notation outside.
_PLAIN_MIN_EXPONENT, _PLAIN_MAX_EXPONENT = -3, 6
# Significant digits that always identify a float32 value (FLT_DECIMAL_DIG).
_FLOAT32_MAX_DIGITS = 9
_FLOAT32 = struct.Struct("<f")
# The largest float32, and half its spacing to the next: beyond that a value rounds to infinity.
_FLOAT32_MAX = 3.4028234663852886e38
_FLOAT32_MAX_HALF_ULP = 2.0**103
_EPOCH_DATE = datetime.date(1970, 1, 1)
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def java_string(value: object, schema: Schema | None = None) -> str:
    """``String.valueOf`` of the Java object Kafka Connect would hold for ``value``.

    Pure and thread-safe; any depth of nesting. Called for every value that is not a str by
    FileStreamSinkTask (as it writes) and StringConverter (as it serializes), in the plugin
    host that runs them.

    Args:
        value: A Connect value (None, bool, int, float, str, bytes, Decimal, date/time,
            Struct, Mapping, list).
        schema: Its schema, if any: FLOAT32 prints as Java's ``Float``, and the schemas of a
            map's or list's entries reach them.
    """
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    text = _scalar(value, schema)
    if text is not None:
        return text
    return _nested(value, schema)


def java_class_name(value: object, schema: Schema | None = None) -> str:
    """``getClass().getName()`` of the Java object Kafka Connect would hold for ``value``
    (``"null"`` for None), for error messages that name it as Kafka's do.

    An int is the Java integer its schema's type says (INT8 ``java.lang.Byte`` ... INT64
    ``java.lang.Long``; ``java.lang.Long`` without one, as a schemaless JsonConverter reads
    numbers), a float ``java.lang.Float`` for a FLOAT32, else ``java.lang.Double``. A class
    with no Kafka counterpart is named ``module.qualname``. Prefix ``"class "`` for Java's
    ``value.getClass()`` as Kafka concatenates it into a message.
    """
    if value is None:
        return "null"
    kind = schema.type if schema is not None else None
    if isinstance(value, bool):
        return "java.lang.Boolean"
    if isinstance(value, int):
        return _JAVA_INTEGERS.get(kind, "java.lang.Long")  # type: ignore[arg-type]
    if isinstance(value, float):
        return "java.lang.Float" if kind is Type.FLOAT32 else "java.lang.Double"
    for cls in type(value).__mro__:
        name = _JAVA_CLASSES.get(cls)
        if name is not None:
            return name
    if isinstance(value, Mapping):
        return "java.util.HashMap"
    cls = type(value)
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )


_JAVA_INTEGERS = {
    Type.INT8: "java.lang.Byte",
    Type.INT16: "java.lang.Short",
    Type.INT32: "java.lang.Integer",
    Type.INT64: "java.lang.Long",
}
# What Kafka Connect holds where Copycat holds these (most specific class first in an MRO).
_JAVA_CLASSES: dict[type, str] = {
    str: "java.lang.String",
    bytes: "[B",
    bytearray: "[B",
    memoryview: "[B",
    decimal.Decimal: "java.math.BigDecimal",
    datetime.date: "java.util.Date",  # datetime.datetime too (a subclass)
    datetime.time: "java.util.Date",
    Struct: "org.apache.kafka.connect.data.Struct",
    dict: "java.util.HashMap",
    list: "java.util.ArrayList",
    tuple: "java.util.ArrayList",
    set: "java.util.HashSet",
    frozenset: "java.util.HashSet",
    SourceRecord: "org.apache.kafka.connect.source.SourceRecord",
    SinkRecord: "org.apache.kafka.connect.sink.SinkRecord",
}


def _nested(value: object, schema: Schema | None) -> str:
    """A Struct, map or list, rendered from an explicit stack: a JSON value 900 arrays deep
    is valid (Kafka's JSON parser accepts 1000 levels), and Python's own stack is not that
    deep. The stack holds literal text (str) and values still to render ((value, schema))."""
    out: list[str] = []
    stack: list[str | tuple[object, Schema | None]] = [(value, schema)]
    push = stack.append
    while stack:
        item = stack.pop()
        if type(item) is str:
            out.append(item)
            continue
        assert isinstance(item, tuple)
        current, current_schema = item
        text = _scalar(current, current_schema)
        if text is not None:
            out.append(text)
            continue
        # Pushed in reverse: the last piece pushed is the next written.
        if isinstance(current, Struct):
            present = [
                (field, v)
                for field in current.schema.fields
                if (v := current.get_without_default(field)) is not None
            ]
            push("}")
            for index in range(len(present) - 1, -1, -1):
                field, v = present[index]
                push((v, field.schema))
                push(f"{field.name}=" if index == 0 else f",{field.name}=")
            push("Struct{")
        elif isinstance(current, Mapping):
            keys = current_schema.key_schema if current_schema is not None else None
            values = current_schema.value_schema if current_schema is not None else None
            entries = list(current.items())
            push("}")
            for index in range(len(entries) - 1, -1, -1):
                k, v = entries[index]
                push((v, values))
                push("=")
                push((k, keys))
                if index:
                    push(", ")
            push("{")
        else:
            assert isinstance(current, (list, tuple))
            elements = current_schema.value_schema if current_schema is not None else None
            push("]")
            for index in range(len(current) - 1, -1, -1):
                push((current[index], elements))
                if index:
                    push(", ")
            push("[")
    return "".join(out)


def _scalar(value: Any, schema: Schema | None) -> str | None:
    """The text of a value that holds no other values; None for a Struct, map or list."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if schema is not None and schema.type is Type.FLOAT32:
            return _java_float32(value)
        return _java_double(value)
    if isinstance(value, (Struct, Mapping, list, tuple)):
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in bytes(value)) + "]"
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.UTC)
        return _java_date(value)
    if isinstance(value, datetime.date):
        return _java_date(datetime.datetime.combine(value, datetime.time()))
    if isinstance(value, datetime.time):
        return _java_date(datetime.datetime.combine(_EPOCH_DATE, value.replace(tzinfo=None)))
    return str(value)


def _java_date(moment: datetime.datetime) -> str:
    """``java.util.Date.toString()`` on a JVM whose time zone is UTC (English names, whatever
    the host's locale: strftime's %a and %b would follow it)."""
    day = _DAYS[moment.weekday()]
    month = _MONTHS[moment.month - 1]
    return f"{day} {month} {moment:%d %H:%M:%S} UTC {moment.year}"


def _java_double(number: float) -> str:
    special = _special(number)
    if special is not None:
        return special
    return _java_digits(_closest_of_two_digits(number, repr(number), float))


def _java_float32(number: float) -> str:
    single = _to_float32(number)  # what a Java float holds: 1e39 is Infinity, 1e-50 zero
    special = _special(single)
    if special is not None:
        return special
    for digits in range(1, _FLOAT32_MAX_DIGITS + 1):
        text = f"{single:.{digits - 1}e}"  # the n-digit decimal closest to the value
        if _to_float32(float(text)) == single:
            return _java_digits(_closest_of_two_digits(single, text, _to_float32))
    return _java_digits(repr(single))


def _closest_of_two_digits(number: float, shortest: str, rounded: Any) -> str:
    """Java's rule for a value that one digit identifies: it picks the closest to the value
    among the one- and two-digit decimals that identify it (Double.MIN_VALUE is 4.9E-324)."""
    if len(decimal.Decimal(shortest).normalize().as_tuple().digits) != 1:
        return shortest
    two = f"{number:.1e}"
    exact = decimal.Decimal(number)
    if rounded(float(two)) == number and abs(decimal.Decimal(two) - exact) < abs(
        decimal.Decimal(shortest) - exact
    ):
        return two
    return shortest


def _to_float32(number: float) -> float:
    """Round to the nearest float32, as Java's (float) cast does (struct refuses overflow)."""
    if abs(number) > _FLOAT32_MAX:
        rounds_to_max = abs(number) < _FLOAT32_MAX + _FLOAT32_MAX_HALF_ULP
        return math.copysign(_FLOAT32_MAX if rounds_to_max else math.inf, number)
    result: float = _FLOAT32.unpack(_FLOAT32.pack(number))[0]
    return result


def _special(number: float) -> str | None:
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "-0.0" if math.copysign(1.0, number) < 0 else "0.0"
    return None


def _java_digits(shortest: str) -> str:
    """Lay out the digits of a shortest decimal representation as Java does."""
    sign, digit_tuple, exponent = decimal.Decimal(shortest).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent  # the value is 0.<digits> x 10^point
    scientific = point - 1
    if _PLAIN_MIN_EXPONENT <= scientific <= _PLAIN_MAX_EXPONENT:
        if point <= 0:
            text = "0." + "0" * -point + digits
        elif point >= len(digits):
            text = digits + "0" * (point - len(digits)) + ".0"
        else:
            text = digits[:point] + "." + digits[point:]
    else:
        text = f"{digits[0]}.{digits[1:] or '0'}E{scientific}"
    return ("-" if sign else "") + text
