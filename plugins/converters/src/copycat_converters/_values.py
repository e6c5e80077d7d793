"""Kafka Connect's ``Values.convertToString``: SimpleHeaderConverter writes headers with it.

Text format (read back by ``plugin_api.parse_string``, Kafka's ``Values.parseString``):

* top-level strings as they are; strings inside arrays, maps and structs in double
  quotes with ``\\`` and ``"`` backslash-escaped;
* numbers as Java prints them (``1``, ``1.5``, ``1.0E10``), booleans ``true``/``false``,
  ``null``;
* bytes as base64 (quoted when nested);
* arrays ``[a,b]``, maps ``{k:v,...}``, structs ``{"field":value,...}``;
* Date ``yyyy-MM-dd``, Time ``HH:mm:ss.SSSZ``, Timestamp ``yyyy-MM-ddTHH:mm:ss.SSSZ``,
  chosen like Kafka's ``dateFormatFor`` by the epoch milliseconds (so a timestamp
  within the first day of 1970 prints as a time, and one at midnight as a date).
"""

from __future__ import annotations

import base64
import datetime
import decimal
from collections.abc import Mapping

from copycat_converters._jsontext import java_double, java_float
from plugin_api import (
    DataException,
    Schema,
    Struct,
    Type,
)

__all__ = ["convert_to_string"]

NULL_LITERAL = "null"
_MS_PER_DAY = 24 * 60 * 60 * 1000
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def convert_to_string(schema: Schema | None, value: object) -> str | None:
    """Return Kafka's ``Values.convertToString(schema, value)``; ``None`` for ``None``.

    Raises:
        DataException: For a value of a type Connect does not know.
    """
    if value is None:
        return None
    out: list[str] = []
    _append(out, schema, value, embedded=False)
    return "".join(out)


def _epoch_ms(value: datetime.date | datetime.time) -> int:
    if isinstance(value, datetime.datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=datetime.UTC)
        return (aware - _EPOCH) // datetime.timedelta(milliseconds=1)
    if isinstance(value, datetime.date):
        return (value - _EPOCH.date()).days * _MS_PER_DAY
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000


def _format_temporal(value: datetime.date | datetime.time) -> str:
    """Kafka's ``dateFormatFor(date).format(date)`` in UTC."""
    millis = _epoch_ms(value)
    moment = _EPOCH + datetime.timedelta(milliseconds=millis)
    time_text = f"{moment:%H:%M:%S}.{moment.microsecond // 1000:03d}Z"
    if millis < _MS_PER_DAY:
        return time_text
    date_text = f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
    if millis % _MS_PER_DAY == 0:
        return date_text
    return f"{date_text}T{time_text}"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _append(out: list[str], schema: Schema | None, value: object, embedded: bool) -> None:  # noqa: C901
    if value is None:
        out.append(NULL_LITERAL)
    elif isinstance(value, bool):
        out.append("true" if value else "false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        single = schema is not None and schema.type is Type.FLOAT32
        out.append(java_float(value) if single else java_double(value))
    elif isinstance(value, decimal.Decimal):
        out.append(str(value))
    elif isinstance(value, str):
        out.append(f'"{_escape(value)}"' if embedded else value)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        encoded = base64.b64encode(bytes(value)).decode("ascii")
        out.append(f'"{encoded}"' if embedded else encoded)
    elif isinstance(value, (list, tuple)):
        element = schema.value_schema if schema is not None and schema.type is Type.ARRAY else None
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _append(out, element, item, True)
        out.append("]")
    elif isinstance(value, Mapping):
        is_map = schema is not None and schema.type is Type.MAP
        key_schema = schema.key_schema if is_map and schema is not None else None
        value_schema = schema.value_schema if is_map and schema is not None else None
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(",")
            _append(out, key_schema, k, True)
            out.append(":")
            _append(out, value_schema, v, True)
        out.append("}")
    elif isinstance(value, Struct):
        out.append("{")
        for i, field in enumerate(value.schema.fields):
            if i:
                out.append(",")
            _append(out, None, field.name, True)
            out.append(":")
            _append(out, field.schema, value.get(field), True)
        out.append("}")
    elif isinstance(value, (datetime.date, datetime.time)):
        out.append(_format_temporal(value))
    else:
        raise DataException(
            f"Failed to serialize unexpected value type {type(value).__name__}: {value!r}"
        )
