"""The Connect data model: schemas, structs and logical types.

Values of a schema are plain Python objects:

========  ==========================================
Type      Python value
========  ==========================================
INT8..64  ``int`` (range-checked)
FLOAT*    ``float`` (``int`` accepted)
BOOLEAN   ``bool``
STRING    ``str``
BYTES     ``bytes`` / ``bytearray`` / ``memoryview``
ARRAY     ``list`` / ``tuple``
MAP       ``dict`` (any ``Mapping``)
STRUCT    :class:`Struct`
========  ==========================================

Logical types (:class:`Decimal`, :class:`Date`, :class:`Time`, :class:`Timestamp`)
use ``decimal.Decimal``, ``datetime.date``, ``datetime.time`` and
``datetime.datetime`` as values.
"""

from __future__ import annotations

from plugin_api._builder import SchemaBuilder
from plugin_api._logical import LOGICAL_SCHEMA_VERSION, Date, Decimal, Time, Timestamp
from plugin_api._schema import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    NULL_SCHEMA_AND_VALUE,
    OPTIONAL_BOOLEAN_SCHEMA,
    OPTIONAL_BYTES_SCHEMA,
    OPTIONAL_FLOAT32_SCHEMA,
    OPTIONAL_FLOAT64_SCHEMA,
    OPTIONAL_INT8_SCHEMA,
    OPTIONAL_INT16_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Field,
    Schema,
    SchemaAndValue,
    Struct,
    Type,
)

__all__ = [
    "BOOLEAN_SCHEMA",
    "BYTES_SCHEMA",
    "FLOAT32_SCHEMA",
    "FLOAT64_SCHEMA",
    "INT8_SCHEMA",
    "INT16_SCHEMA",
    "INT32_SCHEMA",
    "INT64_SCHEMA",
    "LOGICAL_SCHEMA_VERSION",
    "NULL_SCHEMA_AND_VALUE",
    "OPTIONAL_BOOLEAN_SCHEMA",
    "OPTIONAL_BYTES_SCHEMA",
    "OPTIONAL_FLOAT32_SCHEMA",
    "OPTIONAL_FLOAT64_SCHEMA",
    "OPTIONAL_INT8_SCHEMA",
    "OPTIONAL_INT16_SCHEMA",
    "OPTIONAL_INT32_SCHEMA",
    "OPTIONAL_INT64_SCHEMA",
    "OPTIONAL_STRING_SCHEMA",
    "STRING_SCHEMA",
    "Date",
    "Decimal",
    "Field",
    "Schema",
    "SchemaAndValue",
    "SchemaBuilder",
    "Struct",
    "Time",
    "Timestamp",
    "Type",
]
