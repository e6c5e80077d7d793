"""SimpleHeaderConverter: Kafka Connect's default header converter.

Header values are written as UTF-8 text in the format of Kafka's
``Values.convertToString`` (see :mod:`copycat_converters._values`); schemas are not
written but inferred on read with ``Values.parseString`` (``plugin_api.parse_string``).
Text that cannot be decoded into a value is returned as a string; any other parse failure
returns the raw bytes with ``BYTES_SCHEMA``, as Kafka does: reading a header never fails.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from copycat_converters._base import VersionedPlugin
from copycat_converters._values import convert_to_string
from plugin_api import (
    BYTES_SCHEMA,
    NULL_SCHEMA_AND_VALUE,
    ConfigDef,
    HeaderConverter,
    Schema,
    SchemaAndValue,
    parse_string,
)

__all__ = ["SimpleHeaderConverter"]

log = logging.getLogger(__name__)


class SimpleHeaderConverter(VersionedPlugin, HeaderConverter):
    """Writes header values as strings and infers their schema when reading them back."""

    # Anything the parser cannot read falls back to the raw bytes (plugin_api 0.1.5).
    to_connect_header_never_fails = True
    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.storage.SimpleHeaderConverter",)

    CONFIG_DEF = ConfigDef()

    def config(self) -> ConfigDef:
        """No settings (as Kafka's)."""
        return self.CONFIG_DEF

    def configure(self, configs: Mapping[str, object], is_key: bool | None = None) -> None:
        """Nothing to configure; ``is_key`` is accepted for symmetry with the converters."""

    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: object
    ) -> bytes | None:
        """Return ``value`` as UTF-8 text (``None`` for ``None``).

        Raises:
            DataException: For a value of a type Connect does not know.
        """
        text = convert_to_string(schema, value)
        return None if text is None else text.encode("utf-8")

    def to_connect_header(self, topic: str, header_key: str, data: bytes | None) -> SchemaAndValue:
        """Parse the UTF-8 text into a value and its inferred schema."""
        if data is None:
            return NULL_SCHEMA_AND_VALUE
        try:
            return parse_string(bytes(data).decode("utf-8", errors="replace"))
        except Exception as exc:  # noqa: BLE001 - as Kafka's (Throwable): the bytes, as they are
            log.warning(
                "Failed to deserialize value for header %r on topic %r, so using byte array: %s",
                header_key,
                topic,
                exc,
            )
            return SchemaAndValue(BYTES_SCHEMA, bytes(data))
