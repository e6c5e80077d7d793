"""DropHeaders: remove headers by name."""

from __future__ import annotations

from collections.abc import Mapping

from copycat_transforms._util import VersionedPlugin, non_empty_list
from plugin_api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectRecord,
    Headers,
    Importance,
    Transformation,
)

__all__ = ["DropHeaders"]

HEADERS_CONFIG = "headers"

CONFIG_DEF = ConfigDef().define(
    HEADERS_CONFIG,
    ConfigType.LIST,
    validator=non_empty_list,
    importance=Importance.HIGH,
    documentation="The name of the headers to be removed.",
)


class DropHeaders(VersionedPlugin, Transformation[ConnectRecord]):
    """Removes one or more headers from each record (every header with a listed name)."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.DropHeaders",)

    def __init__(self) -> None:
        """Create an unconfigured transform."""
        self._headers: frozenset[str] = frozenset()

    def config(self) -> ConfigDef:
        """Return ``headers``."""
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, object]) -> None:
        """Read the header names.

        Raises:
            ConfigException: If ``headers`` is missing or empty.
        """
        conf = AbstractConfig(CONFIG_DEF, configs)
        self._headers = frozenset(conf.get_list(HEADERS_CONFIG) or ())

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return a copy of ``record`` without the listed headers."""
        kept = Headers(h for h in record.headers if h.key not in self._headers)
        return record.new_record(headers=kept)
