"""Kafka Connect's ``Values.parseString``: a value and its schema inferred from text.

Kafka's SimpleHeaderConverter reads header text with it and its InsertHeader types its
``value.literal`` with it, so both live here, once, the way ``org.apache.kafka.connect.data.Values``
serves every Kafka plugin. (Since plugin_api 0.1.7; before, the converters plugin had this
parser and the transforms plugin a partial copy.)

Parsing infers the schema: ``true``/``false`` (lower case only) → BOOLEAN; integers, and
numbers with no fraction (``1e3``, ``1.0``) → the smallest of INT8/16/32/64; other numbers
→ FLOAT32 (FLOAT64 if out of float range, Decimal if out of double range); ISO
``yyyy-MM-dd`` / ``HH:mm:ss.SSSZ`` / ``yyyy-MM-ddTHH:mm:ss.SSSZ`` → Date / Time / Timestamp,
read by a lenient calendar (``2024-13-01`` is 2025-01-01); ``[..]`` / ``{..}`` → ARRAY / MAP
with a common element schema; ``null`` → no schema and no value; anything else → STRING,
the text as it was given.

The tokenizer and its quirks are Kafka's (a top-level ``12:34:56`` parses as INT8 12 because
parsing stops after the first value; ``.5`` stays a string since a number must start with a
digit or a sign; quoted strings keep their escape backslashes; an array holding ``null`` next
to other values falls back to a string), so text written by Kafka parses here to the same
value. Where Kafka would build an ARRAY/MAP schema with no element schema (empty or mixed
containers), our schema classes need one, so the container comes with no schema (``None``).
"""

from __future__ import annotations

import datetime
import decimal
import re
from collections.abc import Callable
from typing import Any

from plugin_api._builder import SchemaBuilder
from plugin_api._logical import Date, Decimal, Time, Timestamp
from plugin_api._schema import (
    BOOLEAN_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    STRING_SCHEMA,
    Schema,
    SchemaAndValue,
    Type,
)
from plugin_api.errors import DataException
from plugin_api.text import _to_float32 as to_float32

__all__ = ["parse_string"]

NULL_LITERAL = "null"
_MS_PER_DAY = 24 * 60 * 60 * 1000
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_DELIMITERS = frozenset(':,{}[]"')
_DELIMITER_RE = re.compile("[" + re.escape("".join(sorted(_DELIMITERS))) + "]")
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
# Lengths of Kafka's ISO-8601 patterns with their quotes removed; parsing tries a
# temporal type only when the token has exactly that length.
_DATE_LEN = len("yyyy-MM-dd")
_TIME_LEN = len("HH:mm:ss.SSSZ")
_TIMESTAMP_LEN = len("yyyy-MM-ddTHH:mm:ss.SSSZ")
_DATE_RE = re.compile(r"(\d{1,4})-(\d{1,2})-(\d{1,2})")
_TIME_RE = re.compile(r"(\d{1,2}):(\d{1,2}):(\d{1,2})\.(\d{1,3})Z")
_TIMESTAMP_RE = re.compile(
    r"(\d{1,4})-(\d{1,2})-(\d{1,2})T(\d{1,2}):(\d{1,2}):(\d{1,2})\.(\d{1,3})Z"
)
# java.math.BigDecimal's string syntax (Python's Decimal also takes NaN, Infinity and "_").
_JAVA_DECIMAL_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
# An integer of up to 18 ASCII digits always fits a long (2**63 has 19).
_SHORT_INTEGER_RE = re.compile(r"[+-]?[0-9]{1,18}")

_INTEGER_TYPES = (Type.INT8, Type.INT16, Type.INT32, Type.INT64)
_NUMBER_ORDER = {
    Type.INT8: 0,
    Type.INT16: 1,
    Type.INT32: 2,
    Type.INT64: 3,
    Type.FLOAT32: 4,
    Type.FLOAT64: 5,
}


class _Parser:
    """Kafka's ``Values.Parser``: a tokenizer splitting on unescaped ``:,{}[]"``."""

    __slots__ = ("original", "_pos", "_next", "previous")

    def __init__(self, original: str) -> None:
        self.original = original
        self._pos = 0
        self._next: str | None = None
        self.previous: str | None = None

    def mark(self) -> int:
        return self._pos - (len(self._next) if self._next is not None else 0)

    def rewind_to(self, position: int) -> None:
        self._pos = position
        self._next = None
        self.previous = None

    def has_next(self) -> bool:
        return self._next is not None or self._pos < len(self.original)

    def next(self) -> str:
        if self._next is not None:
            self.previous, self._next = self._next, None
        else:
            self.previous = self._consume()
        return self.previous

    def next_n(self, n: int) -> str | None:
        start = self.mark()
        for _ in range(n):
            if not self.has_next():
                self.rewind_to(start)
                return None
            self.next()
        return self.original[start : self._pos]

    def _consume(self) -> str:
        text, start, escaped = self.original, self._pos, False
        while self._pos < len(text):
            char = text[self._pos]
            if char == "\\":
                escaped = not escaped
            elif char in _DELIMITERS:
                if not escaped:
                    if start < self._pos:
                        return text[start : self._pos]
                    self._pos += 1
                    return text[start : self._pos]
                escaped = False
            else:
                escaped = False
            self._pos += 1
        return text[start : self._pos]

    def can_consume(self, expected: str) -> bool:
        if self._next is None:
            if not self.has_next():
                return False
            self._next = self._consume()
        while not self._next.strip() and self._pos < len(self.original):
            self._next = self._consume()
        if self._next.strip() == expected:
            self._next = None
            return True
        return False


def parse_string(text: str | None) -> SchemaAndValue:
    """Return Kafka's ``Values.parseString(text)``: the value with an inferred schema.

    ``None`` and the literal ``null`` give ``(None, None)``; text that is nothing else
    gives ``(STRING_SCHEMA, text)``.
    """
    if text is None:
        return SchemaAndValue(None, None)
    if not text:
        return SchemaAndValue(STRING_SCHEMA, text)
    if _DELIMITER_RE.search(text) is None:
        parsed = _parse_token(text)  # most header values: 0.4-1.7 us, 2-8 by the tokenizer
    else:
        parsed = _ValueParser(_Parser(text)).parse(embedded=False)
    return parsed if parsed is not None else SchemaAndValue(None, None)


def _parse_token(text: str) -> SchemaAndValue | None:
    """``_ValueParser(_Parser(text)).parse(embedded=False)`` for text without a delimiter,
    which the tokenizer reads as one token: the same steps, without stepping through it a
    character at a time (tests/test_simple_header_converter.py compares the two)."""
    token = text.strip()
    if token == NULL_LITERAL:
        return None
    if token in ("true", "false"):
        return SchemaAndValue(BOOLEAN_SCHEMA, token == "true")
    if not token:
        return SchemaAndValue(STRING_SCHEMA, text)
    found = _temporal_or_number(token, _parse_temporal)
    return found if found is not None else SchemaAndValue(STRING_SCHEMA, text)


def _temporal_or_number(
    token: str, temporal: Callable[[str], SchemaAndValue | None]
) -> SchemaAndValue | None:
    """The parser's reading of a token that is not a literal: ``temporal(token)`` if it
    starts with a digit and is one, else a number if it is one, else None."""
    first = token[0]
    if first.isdigit():
        found = temporal(token)
        if found is not None:
            return found
    if first.isdigit() or first in "+-":
        return _parse_number(token)
    return None


class _ValueParser:
    __slots__ = ("_p",)

    def __init__(self, parser: _Parser) -> None:
        self._p = parser

    def _single_token_literal(self, embedded: bool, literal: str) -> bool:
        start = self._p.mark()
        if self._p.can_consume(literal) and (embedded or not self._p.has_next()):
            return True
        self._p.rewind_to(start)
        return False

    def parse(self, embedded: bool) -> SchemaAndValue | None:
        p = self._p
        if not p.has_next():
            return None
        if embedded and p.can_consume('"'):
            return self._quoted_string()
        if self._single_token_literal(embedded, NULL_LITERAL):
            return None
        if self._single_token_literal(embedded, "true"):
            return SchemaAndValue(BOOLEAN_SCHEMA, True)
        if self._single_token_literal(embedded, "false"):
            return SchemaAndValue(BOOLEAN_SCHEMA, False)
        start = p.mark()
        try:
            if p.can_consume("["):
                return self._array()
            if p.can_consume("{"):
                return self._map()
        except DataException:
            p.rewind_to(start)
        token = p.next()
        if not token.strip():
            return SchemaAndValue(STRING_SCHEMA, token)
        return self._next_token(embedded, token.strip())

    def _next_token(self, embedded: bool, token: str) -> SchemaAndValue:
        found = _temporal_or_number(token, self._multi_token_temporal)
        if found is not None:
            return found
        if embedded:
            raise DataException("Failed to parse embedded value")
        return SchemaAndValue(STRING_SCHEMA, self._p.original)

    def _multi_token_temporal(self, token: str) -> SchemaAndValue | None:
        # An unescaped ':' is a delimiter, so a time arrives as 5 tokens: "12", ":", "34", ...
        position = self._p.mark()
        remainder = self._p.next_n(4)
        if remainder is not None:
            temporal = _parse_temporal(token + remainder)
            if temporal is not None:
                return temporal
        self._p.rewind_to(position)
        return _parse_temporal(token)

    def _quoted_string(self) -> SchemaAndValue:
        parts = []
        while self._p.has_next():
            if self._p.can_consume('"'):
                break
            parts.append(self._p.next())
        content = "".join(parts)
        temporal = _parse_temporal(content)
        return temporal if temporal is not None else SchemaAndValue(STRING_SCHEMA, content)

    def _array(self) -> SchemaAndValue:
        p = self._p
        result: list[Any] = []
        merger = _SchemaMerger()
        while p.has_next():
            if p.can_consume("]"):
                common = merger.common
                if common is None:
                    return SchemaAndValue(None, result)
                return SchemaAndValue(
                    SchemaBuilder.array(common).build(), [_align(common, v) for v in result]
                )
            if p.can_consume(","):
                raise DataException(f"Unable to parse an empty array element: {p.original}")
            element = self.parse(True)
            merger.merge(element)
            result.append(element.value if element is not None else None)
            position = p.mark()
            if p.can_consume("]"):
                p.rewind_to(position)
            elif not p.can_consume(","):
                raise DataException("Array elements missing ',' delimiter")
        if p.previous == ",":
            raise DataException(f"Array is missing element after ',': {p.original}")
        raise DataException(f"Array is missing terminating ']': {p.original}")

    def _map(self) -> SchemaAndValue:
        p = self._p
        result: dict[Any, Any] = {}
        keys, values = _SchemaMerger(), _SchemaMerger()
        while p.has_next():
            if p.can_consume("}"):
                if keys.common is not None and values.common is not None:
                    schema = SchemaBuilder.map(keys.common, values.common).build()
                    aligned = {
                        _align(keys.common, k): _align(values.common, v) for k, v in result.items()
                    }
                    return SchemaAndValue(schema, aligned)
                if keys.common is not None:
                    result = {_align(keys.common, k): v for k, v in result.items()}
                return SchemaAndValue(None, result)
            if p.can_consume(","):
                raise DataException(
                    f"Unable to parse a map entry with no key or value: {p.original}"
                )
            key = self.parse(True)
            if key is None or key.value is None:
                raise DataException(f"Map entry may not have a null key: {p.original}")
            if not p.can_consume(":"):
                raise DataException(f"Map entry is missing ':' in {p.original}")
            value = self.parse(True)
            try:
                result[key.value] = value.value if value is not None else None
            except TypeError as exc:  # an array or map as a key: not hashable in Python
                raise DataException(f"Map key {key.value!r} is not hashable") from exc
            p.can_consume(",")
            keys.merge(key)
            values.merge(value)
        if p.previous == ",":
            raise DataException(f"Map is missing element after ',': {p.original}")
        raise DataException(f"Map is missing terminating '}}': {p.original}")


class _SchemaMerger:
    """The common schema of several values: numbers widen, anything else must match."""

    __slots__ = ("common", "_compatible")

    def __init__(self) -> None:
        self.common: Schema | None = None
        self._compatible = True

    def merge(self, latest: SchemaAndValue | None) -> None:
        if latest is None or latest.schema is None or not self._compatible:
            return
        if self.common is None:
            self.common = latest.schema
            return
        self.common = _merge_schemas(self.common, latest.schema)
        self._compatible = self.common is not None


def _merge_schemas(previous: Schema, new: Schema) -> Schema | None:
    if previous.type is not new.type:
        # Kafka widens across numeric types by type alone, so a logical INT32 (Date)
        # and an INT8 merge too; the wider one wins.
        if previous.type in _NUMBER_ORDER and new.type in _NUMBER_ORDER:
            return previous if _NUMBER_ORDER[previous.type] > _NUMBER_ORDER[new.type] else new
        return None
    if previous.optional == new.optional:
        return previous if previous.optional else new
    return previous if previous == new else None


def _align(schema: Schema, value: object) -> object:
    """Kafka's ``convertTo(schema, null, value)`` for the values parsing can produce."""
    if value is None:
        if schema.optional:
            return None
        raise DataException("Unable to convert a null value to a schema that requires a value")
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        return value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
    if name in (Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME):
        return _align_temporal(schema, value)
    if schema.type in _INTEGER_TYPES and isinstance(value, (int, float, decimal.Decimal)):
        return int(value)
    if schema.type in (Type.FLOAT32, Type.FLOAT64) and isinstance(
        value, (int, float, decimal.Decimal)
    ):
        return float(value)
    return value


def _align_temporal(schema: Schema, value: object) -> object:
    # Epoch milliseconds of a parsed temporal value: a Timestamp is a datetime, a Date a
    # date at midnight, a Time a time of the first day.
    if isinstance(value, datetime.datetime):
        millis = Timestamp.from_logical(Timestamp.SCHEMA, value)
    elif isinstance(value, datetime.date):
        millis = Date.from_logical(Date.SCHEMA, value) * _MS_PER_DAY
    elif isinstance(value, datetime.time):
        millis = Time.from_logical(Time.SCHEMA, value)
    elif isinstance(value, (int, float, decimal.Decimal)):
        millis = int(value)
        if schema.name == Date.LOGICAL_NAME:
            return Date.to_logical(schema, millis)
        if schema.name == Time.LOGICAL_NAME:
            return Time.to_logical(schema, millis)
        return Timestamp.to_logical(schema, millis)
    else:
        raise DataException(f"Unable to convert {value!r} to {schema!r}")
    moment = _EPOCH + datetime.timedelta(milliseconds=millis)
    if schema.name == Date.LOGICAL_NAME:
        return moment.date()
    if schema.name == Time.LOGICAL_NAME:
        return moment.time()
    return moment


def _parse_number(token: str) -> SchemaAndValue | None:
    if _SHORT_INTEGER_RE.fullmatch(token) is not None:  # fits a long: no Decimal needed
        return _smallest_integer(int(token))
    if _JAVA_DECIMAL_RE.fullmatch(token) is None:
        return None
    number = decimal.Decimal(token)
    scale = -int(number.as_tuple().exponent)
    if number == number.to_integral_value():
        integral = int(number)
        if _LONG_MIN <= integral <= _LONG_MAX:
            return _smallest_integer(integral)
    if scale != 0:
        as_double = float(number)
        if abs(to_float32(as_double)) != float("inf"):
            return SchemaAndValue(FLOAT32_SCHEMA, as_double)
        if abs(as_double) != float("inf"):
            return SchemaAndValue(FLOAT64_SCHEMA, as_double)
    return SchemaAndValue(Decimal.schema(scale), number)


def _smallest_integer(integral: int) -> SchemaAndValue:
    """``integral`` (within a long's range) with the narrowest integer schema that holds it."""
    for schema, bits in ((INT8_SCHEMA, 8), (INT16_SCHEMA, 16), (INT32_SCHEMA, 32)):
        if -(2 ** (bits - 1)) <= integral < 2 ** (bits - 1):
            return SchemaAndValue(schema, integral)
    return SchemaAndValue(INT64_SCHEMA, integral)


def _parse_temporal(token: str | None) -> SchemaAndValue | None:
    if token is None:
        return None
    token = token.replace("\\:", ":")
    try:
        if len(token) == _TIME_LEN and (m := _TIME_RE.fullmatch(token)):
            millis = ((int(m[1]) * 60 + int(m[2])) * 60 + int(m[3])) * 1000 + int(m[4])
            return SchemaAndValue(Time.SCHEMA, Time.to_logical(Time.SCHEMA, millis % _MS_PER_DAY))
        if len(token) == _TIMESTAMP_LEN and (m := _TIMESTAMP_RE.fullmatch(token)):
            day = _lenient_date(int(m[1]), int(m[2]), int(m[3]))
            offset = datetime.timedelta(
                hours=int(m[4]), minutes=int(m[5]), seconds=int(m[6]), milliseconds=int(m[7])
            )
            moment = datetime.datetime.combine(day, datetime.time(), datetime.UTC) + offset
            return SchemaAndValue(Timestamp.SCHEMA, moment)
        if len(token) == _DATE_LEN and (m := _DATE_RE.fullmatch(token)):
            return SchemaAndValue(Date.SCHEMA, _lenient_date(int(m[1]), int(m[2]), int(m[3])))
    except (ValueError, OverflowError):
        return None
    return None


def _lenient_date(year: int, month: int, day: int) -> datetime.date:
    """A date that rolls over out-of-range months and days, as Java's lenient calendar does."""
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    return datetime.date(year, month, 1) + datetime.timedelta(days=day - 1)
