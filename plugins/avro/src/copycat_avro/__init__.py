"""Copycat's AvroConverter, a drop-in for ``io.confluent.connect.avro.AvroConverter``.

* :class:`AvroConverter`: Confluent's wire format (magic byte 0, 4-byte schema id, Avro
  binary) against any Confluent-compatible Schema Registry.
* :class:`SchemaRegistryClient`: the caching REST client it uses.
* Subject name strategies: :class:`TopicNameStrategy`, :class:`RecordNameStrategy`,
  :class:`TopicRecordNameStrategy`.
"""

from __future__ import annotations

from copycat_avro._avrodata import from_connect_schema, to_connect_schema
from copycat_avro._version import __version__
from copycat_avro.converter import AvroConverter
from copycat_avro.registry_client import RegisteredSchema, SchemaRegistryClient, SchemaRegistryError
from copycat_avro.strategies import (
    RecordNameStrategy,
    SubjectNameStrategy,
    TopicNameStrategy,
    TopicRecordNameStrategy,
)

__all__ = [
    "AvroConverter",
    "RecordNameStrategy",
    "RegisteredSchema",
    "SchemaRegistryClient",
    "SchemaRegistryError",
    "SubjectNameStrategy",
    "TopicNameStrategy",
    "TopicRecordNameStrategy",
    "__version__",
    "from_connect_schema",
    "to_connect_schema",
]
