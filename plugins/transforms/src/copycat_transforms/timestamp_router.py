"""TimestampRouter: route to a topic named after the record's topic and timestamp."""

from __future__ import annotations

from collections.abc import Mapping

from copycat_transforms._datefmt import JavaDateFormat
from copycat_transforms._util import VersionedPlugin
from plugin_api import (
    AbstractConfig,
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectRecord,
    DataException,
    Importance,
    Transformation,
)

__all__ = ["TimestampRouter"]

TOPIC_FORMAT_CONFIG = "topic.format"
TIMESTAMP_FORMAT_CONFIG = "timestamp.format"


def _check_date_format(name: str, value: object) -> None:
    try:
        JavaDateFormat(str(value))
    except ValueError as exc:
        raise ConfigException(name, value, str(exc)) from None


CONFIG_DEF = (
    ConfigDef()
    .define(
        TOPIC_FORMAT_CONFIG,
        ConfigType.STRING,
        "${topic}-${timestamp}",
        importance=Importance.HIGH,
        documentation="Format string which can contain <code>${topic}</code> and "
        "<code>${timestamp}</code> as placeholders for the topic and timestamp, respectively.",
    )
    .define(
        TIMESTAMP_FORMAT_CONFIG,
        ConfigType.STRING,
        "yyyyMMdd",
        _check_date_format,
        Importance.HIGH,
        "Format string for the timestamp that is compatible with "
        "<code>java.text.SimpleDateFormat</code>.",
    )
)


class TimestampRouter(VersionedPlugin, Transformation[ConnectRecord]):
    """Update the record's topic as a function of the original topic and the record timestamp.

    Mainly useful for sink connectors, e.g. to write to time-partitioned indices.
    The timestamp is formatted in UTC.
    """

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.TimestampRouter",)

    def __init__(self) -> None:
        """Create an unconfigured transform with Kafka's defaults."""
        self._topic_format = "${topic}-${timestamp}"
        self._timestamp_format = JavaDateFormat("yyyyMMdd")

    def config(self) -> ConfigDef:
        """Return ``topic.format`` and ``timestamp.format``."""
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, object]) -> None:
        """Read the formats.

        Raises:
            ConfigException: If ``timestamp.format`` is not a valid SimpleDateFormat pattern.
        """
        conf = AbstractConfig(CONFIG_DEF, configs)
        self._topic_format = conf.get_string(TOPIC_FORMAT_CONFIG) or ""
        self._timestamp_format = JavaDateFormat(conf.get_string(TIMESTAMP_FORMAT_CONFIG) or "")

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the record with its topic rewritten.

        Raises:
            DataException: If the record has no timestamp.
        """
        timestamp = record.timestamp
        if timestamp is None:
            raise DataException(f"Timestamp missing on record: {record!r}")
        formatted = self._timestamp_format.format(timestamp)
        topic = self._topic_format.replace("${topic}", record.topic).replace(
            "${timestamp}", formatted
        )
        return record.new_record(topic=topic)
