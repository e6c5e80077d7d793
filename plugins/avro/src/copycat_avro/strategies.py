"""Subject name strategies: which registry subject a key or value schema is registered under.

=======================  =============================  ==============================
Strategy                 Subject                        Confluent class
=======================  =============================  ==============================
TopicNameStrategy        ``<topic>-key`` / ``-value``   ``...subject.TopicNameStrategy``
RecordNameStrategy       ``<record full name>``         ``...subject.RecordNameStrategy``
TopicRecordNameStrategy  ``<topic>-<record full name>`` ``...subject.TopicRecordNameStrategy``
=======================  =============================  ==============================

``key.subject.name.strategy`` / ``value.subject.name.strategy`` take Confluent's class
names (``io.confluent.kafka.serializers.subject.*``) or the short names above. The record
strategies need a record schema (an optional struct's record counts).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from plugin_api import ConfigException, DataException

__all__ = [
    "RecordNameStrategy",
    "SubjectNameStrategy",
    "TopicNameStrategy",
    "TopicRecordNameStrategy",
    "resolve_strategy",
]

CONFLUENT_PACKAGE = "io.confluent.kafka.serializers.subject."


class SubjectNameStrategy(ABC):
    """Maps (topic, key or value, Avro schema) to a subject."""

    @abstractmethod
    def subject_name(self, topic: str, is_key: bool, avro_schema: Any) -> str:
        """Return the subject for a schema written to ``topic``."""


class TopicNameStrategy(SubjectNameStrategy):
    """``<topic>-key`` or ``<topic>-value``: one schema lineage per topic (the default)."""

    def subject_name(self, topic: str, is_key: bool, avro_schema: Any) -> str:
        """Return ``<topic>-key`` or ``<topic>-value``."""
        return f"{topic}-{'key' if is_key else 'value'}"


def record_full_name(avro_schema: Any, strategy: str) -> str:
    """The full name of the record in ``avro_schema`` (also inside a ``[null, record]`` union).

    Raises:
        DataException: If the schema is not a record.
    """
    if isinstance(avro_schema, list):
        records = [s for s in avro_schema if s != "null"]
        if len(records) == 1:
            return record_full_name(records[0], strategy)
    if isinstance(avro_schema, dict) and avro_schema.get("type") == "record":
        name = str(avro_schema["name"])
        namespace = avro_schema.get("namespace")
        return name if "." in name or not namespace else f"{namespace}.{name}"
    raise DataException(
        f"{strategy} requires a record (struct) schema to name the subject, but the schema is "
        f"{avro_schema!r}; use TopicNameStrategy for primitive keys or values"
    )


class RecordNameStrategy(SubjectNameStrategy):
    """The record's full name: one schema lineage per record type, across topics."""

    def subject_name(self, topic: str, is_key: bool, avro_schema: Any) -> str:
        """Return the record's full name."""
        return record_full_name(avro_schema, "RecordNameStrategy")


class TopicRecordNameStrategy(SubjectNameStrategy):
    """``<topic>-<record full name>``: several record types per topic, each with its lineage."""

    def subject_name(self, topic: str, is_key: bool, avro_schema: Any) -> str:
        """Return ``<topic>-<record full name>``."""
        return f"{topic}-{record_full_name(avro_schema, 'TopicRecordNameStrategy')}"


_STRATEGIES: dict[str, type[SubjectNameStrategy]] = {
    cls.__name__: cls for cls in (TopicNameStrategy, RecordNameStrategy, TopicRecordNameStrategy)
}


def resolve_strategy(config_key: str, name: str) -> SubjectNameStrategy:
    """Return the strategy for a Confluent class name or short name.

    Raises:
        ConfigException: Naming ``config_key`` if the strategy is unknown.
    """
    short = name.strip().removeprefix(CONFLUENT_PACKAGE)
    cls = _STRATEGIES.get(short)
    if cls is None:
        known = ", ".join(CONFLUENT_PACKAGE + n for n in _STRATEGIES)
        raise ConfigException(
            config_key, name, f"Unknown subject name strategy; use one of {known}"
        )
    return cls()
