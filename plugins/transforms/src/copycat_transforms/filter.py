"""Filter: drop every record; combined with a predicate it drops the records that match."""

from __future__ import annotations

from copycat_transforms._util import VersionedPlugin
from plugin_api import ConfigDef, ConnectRecord, Transformation

__all__ = ["Filter"]


class Filter(VersionedPlugin, Transformation[ConnectRecord]):
    """Drops all records, filtering them from subsequent transformations in the chain.

    This is intended to be used conditionally to filter out records matching (or
    not matching) a particular predicate (``transforms.<alias>.predicate``).
    """

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.Filter",)

    CONFIG_DEF = ConfigDef()

    def config(self) -> ConfigDef:
        """Filter has no settings of its own."""
        return self.CONFIG_DEF

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Drop the record."""
        return None
