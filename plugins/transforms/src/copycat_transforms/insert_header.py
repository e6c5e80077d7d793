"""InsertHeader: add a header with a literal value to every record."""

from __future__ import annotations

from collections.abc import Mapping

from copycat_transforms._util import VersionedPlugin
from plugin_api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectRecord,
    Importance,
    NonNullValidator,
    SchemaAndValue,
    Transformation,
    parse_string,
)

__all__ = ["InsertHeader"]

HEADER_CONFIG = "header"
VALUE_LITERAL_CONFIG = "value.literal"

CONFIG_DEF = (
    ConfigDef()
    .define(
        HEADER_CONFIG,
        ConfigType.STRING,
        validator=NonNullValidator(),
        importance=Importance.HIGH,
        documentation="The name of the header.",
    )
    .define(
        VALUE_LITERAL_CONFIG,
        ConfigType.STRING,
        validator=NonNullValidator(),
        importance=Importance.HIGH,
        documentation="The literal value that is to be set as the header value on all records.",
    )
)


class InsertHeader(VersionedPlugin, Transformation[ConnectRecord]):
    """Add a header to each record.

    The literal is typed by Kafka's ``Values.parseString`` (``plugin_api.parse_string``):
    ``42`` becomes an int8 header, ``true`` a boolean, ``[1, 2]`` an array of int8,
    ``{"a": 1}`` a map, and ``null`` a header with no value.
    """

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.InsertHeader",)

    def __init__(self) -> None:
        """Create an unconfigured transform."""
        self._header = ""
        self._literal = SchemaAndValue(None, None)

    def config(self) -> ConfigDef:
        """Return ``header`` and ``value.literal``."""
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, object]) -> None:
        """Read the header name and parse the literal.

        Raises:
            ConfigException: If ``header`` or ``value.literal`` is missing.
        """
        conf = AbstractConfig(CONFIG_DEF, configs)
        self._header = conf.get_string(HEADER_CONFIG) or ""
        # As Kafka's: the literal as ConfigDef reads a STRING (trimmed), then parseString.
        self._literal = parse_string(conf.get_string(VALUE_LITERAL_CONFIG))

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return a copy of ``record`` with the header appended."""
        headers = record.headers.copy().add(self._header, self._literal.value, self._literal.schema)
        return record.new_record(headers=headers)
