"""Copycat's bundled converters, drop-in replacements for Kafka Connect's.

* :class:`StringConverter` (``org.apache.kafka.connect.storage.StringConverter``)
* :class:`ByteArrayConverter` (``org.apache.kafka.connect.converters.ByteArrayConverter``)
* :class:`JsonConverter` (``org.apache.kafka.connect.json.JsonConverter``), byte-compatible
  with Kafka's schema envelope

Each class lists the Kafka class names it replaces in ``KAFKA_CLASS_ALIASES`` so
existing ``key.converter=...`` settings resolve to it. The String, ByteArray and
JSON converters are also header converters, as in Kafka. SimpleHeaderConverter
(Kafka's default header converter, built on ``Values``) is not implemented yet.
"""

from __future__ import annotations

from copycat_converters._version import __version__
from copycat_converters.json_converter import JsonConverter
from copycat_converters.simple import ByteArrayConverter, StringConverter

__all__ = ["ByteArrayConverter", "JsonConverter", "StringConverter", "__version__"]
