"""Inferring a typed value from a literal string: the scalar part of Kafka's ``Values.parseString``.

InsertHeader's ``value.literal`` is parsed the way Kafka's SimpleHeaderConverter
reads header strings: ``true``/``false`` become booleans, integers the narrowest
of int8..int64 (wider ones a Decimal), fractions float32 (float64 if float32
would overflow), ISO dates/times/timestamps the matching logical type, and
anything else stays a string. Kafka also parses ``[...]`` arrays and ``{...}``
maps; those stay strings here.
"""

from __future__ import annotations

import datetime
import decimal
import re

from copycat_transforms._javanum import to_float32
from plugin_api import (
    BOOLEAN_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    STRING_SCHEMA,
    Date,
    Decimal,
    SchemaAndValue,
    Time,
    Timestamp,
)

_INT_SCHEMAS = (
    (INT8_SCHEMA, 2**7),
    (INT16_SCHEMA, 2**15),
    (INT32_SCHEMA, 2**31),
    (INT64_SCHEMA, 2**63),
)
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z")
_TIMESTAMP = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z")


def parse_literal(text: str) -> SchemaAndValue:
    """Infer the schema and value of a literal string."""
    stripped = text.strip()
    if stripped.lower() in ("true", "false"):
        return SchemaAndValue(BOOLEAN_SCHEMA, stripped.lower() == "true")
    if _NUMBER.fullmatch(stripped):
        number = decimal.Decimal(stripped)
        if (
            number == number.to_integral_value()
            and "." not in stripped
            and "e" not in stripped.lower()
        ):
            integer = int(number)
            for schema, bound in _INT_SCHEMAS:
                if -bound <= integer < bound:
                    return SchemaAndValue(schema, integer)
            return SchemaAndValue(Decimal.schema(0), number)
        as_float32 = to_float32(float(number))
        if as_float32 not in (float("inf"), float("-inf")):
            return SchemaAndValue(FLOAT32_SCHEMA, as_float32)
        return SchemaAndValue(FLOAT64_SCHEMA, float(number))
    try:
        if m := _TIMESTAMP.fullmatch(stripped):
            y, mo, d, h, mi, s, ms = (int(g) for g in m.groups())
            moment = datetime.datetime(y, mo, d, h, mi, s, ms * 1000, tzinfo=datetime.UTC)
            return SchemaAndValue(Timestamp.SCHEMA, moment)
        if m := _DATE.fullmatch(stripped):
            y, mo, d = (int(g) for g in m.groups())
            return SchemaAndValue(Date.SCHEMA, datetime.date(y, mo, d))
        if m := _TIME.fullmatch(stripped):
            h, mi, s, ms = (int(g) for g in m.groups())
            return SchemaAndValue(Time.SCHEMA, datetime.time(h, mi, s, ms * 1000))
    except ValueError:
        pass  # Not a real date (month 13): Kafka falls back to the string too.
    return SchemaAndValue(STRING_SCHEMA, text)
