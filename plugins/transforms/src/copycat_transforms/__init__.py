"""Copycat's bundled single message transforms and predicates, drop-in for Kafka Connect's.

Every SMT keeps Kafka's config keys, defaults and semantics, for schemaful
(``Struct`` + ``Schema``) and schemaless (``dict``) data. Those that work on one
side of the record come as ``...Key`` / ``...Value`` classes (Kafka's ``$Key`` /
``$Value``); each class lists the Kafka class names it replaces in
``KAFKA_CLASS_ALIASES``, so
``transforms.x.type=org.apache.kafka.connect.transforms.InsertField$Value`` resolves to
:class:`InsertFieldValue`.

Transforms never mutate their input: they return ``record.new_record(...)``, the
record itself when nothing changes, or ``None`` to drop it (Filter).
"""

from __future__ import annotations

from copycat_transforms._version import __version__
from copycat_transforms.cast import Cast, CastKey, CastValue
from copycat_transforms.drop_headers import DropHeaders
from copycat_transforms.extract_field import ExtractField, ExtractFieldKey, ExtractFieldValue
from copycat_transforms.filter import Filter
from copycat_transforms.flatten import Flatten, FlattenKey, FlattenValue
from copycat_transforms.header_from import HeaderFrom, HeaderFromKey, HeaderFromValue
from copycat_transforms.hoist_field import HoistField, HoistFieldKey, HoistFieldValue
from copycat_transforms.insert_field import InsertField, InsertFieldKey, InsertFieldValue
from copycat_transforms.insert_header import InsertHeader
from copycat_transforms.mask_field import MaskField, MaskFieldKey, MaskFieldValue
from copycat_transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches
from copycat_transforms.regex_router import RegexRouter
from copycat_transforms.replace_field import ReplaceField, ReplaceFieldKey, ReplaceFieldValue
from copycat_transforms.set_schema_metadata import (
    SetSchemaMetadata,
    SetSchemaMetadataKey,
    SetSchemaMetadataValue,
)
from copycat_transforms.timestamp_converter import (
    TimestampConverter,
    TimestampConverterKey,
    TimestampConverterValue,
)
from copycat_transforms.timestamp_router import TimestampRouter
from copycat_transforms.topic_migrator import KafkaConnectTopicMigrator
from copycat_transforms.value_to_key import ValueToKey

__all__ = [
    "Cast",
    "CastKey",
    "CastValue",
    "DropHeaders",
    "ExtractField",
    "ExtractFieldKey",
    "ExtractFieldValue",
    "Filter",
    "Flatten",
    "FlattenKey",
    "FlattenValue",
    "HasHeaderKey",
    "HeaderFrom",
    "HeaderFromKey",
    "HeaderFromValue",
    "HoistField",
    "HoistFieldKey",
    "HoistFieldValue",
    "InsertField",
    "InsertFieldKey",
    "InsertFieldValue",
    "InsertHeader",
    "KafkaConnectTopicMigrator",
    "MaskField",
    "MaskFieldKey",
    "MaskFieldValue",
    "RecordIsTombstone",
    "RegexRouter",
    "ReplaceField",
    "ReplaceFieldKey",
    "ReplaceFieldValue",
    "SetSchemaMetadata",
    "SetSchemaMetadataKey",
    "SetSchemaMetadataValue",
    "TimestampConverter",
    "TimestampConverterKey",
    "TimestampConverterValue",
    "TimestampRouter",
    "TopicNameMatches",
    "ValueToKey",
    "__version__",
]
