"""Copycat's bundled converters, drop-in replacements for Kafka Connect's.

* :class:`StringConverter` (``org.apache.kafka.connect.storage.StringConverter``)
* :class:`ByteArrayConverter` (``org.apache.kafka.connect.converters.ByteArrayConverter``)
* :class:`JsonConverter` (``org.apache.kafka.connect.json.JsonConverter``), byte-compatible
  with Kafka's schema envelope
* :class:`ShortConverter`, :class:`IntegerConverter`, :class:`LongConverter`,
  :class:`FloatConverter`, :class:`DoubleConverter`, :class:`BooleanConverter`
  (``org.apache.kafka.connect.converters.*``): Kafka's fixed-width byte formats
* :class:`SimpleHeaderConverter` (``org.apache.kafka.connect.storage.SimpleHeaderConverter``),
  Kafka's default header converter built on ``Values``

Each class lists the Kafka class names it replaces in ``KAFKA_CLASS_ALIASES`` so
existing ``key.converter=...`` settings resolve to it. The String, ByteArray,
JSON, number and boolean converters are also header converters, as in Kafka.
"""

from __future__ import annotations

from copycat_converters._version import __version__
from copycat_converters.json_converter import JsonConverter
from copycat_converters.numbers import (
    BooleanConverter,
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    LongConverter,
    ShortConverter,
)
from copycat_converters.simple import ByteArrayConverter, StringConverter
from copycat_converters.simple_header import SimpleHeaderConverter

__all__ = [
    "BooleanConverter",
    "ByteArrayConverter",
    "DoubleConverter",
    "FloatConverter",
    "IntegerConverter",
    "JsonConverter",
    "LongConverter",
    "ShortConverter",
    "SimpleHeaderConverter",
    "StringConverter",
    "__version__",
]
