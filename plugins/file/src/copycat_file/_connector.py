"""What the bundled file connectors share: a connector that checks the config it is started
with against its ``ConfigDef`` and keeps it for its tasks.

Every method runs in the connector's plugin host, on the connector's operation thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from copycat_file._version import __version__
from plugin_api import ConfigDef


class ConfiguredConnector:
    """Mixin placed before ``SourceConnector``/``SinkConnector``; ``config_def`` is the
    connector's ``ConfigDef``."""

    config_def: ClassVar[ConfigDef]

    def __init__(self) -> None:
        """Create an unstarted connector."""
        self._props: dict[str, str] = {}

    def version(self) -> str:
        """Return the copycat-file version."""
        return __version__

    def config(self) -> ConfigDef:
        """Return the connector's ``ConfigDef``."""
        return self.config_def

    def start(self, props: Mapping[str, str]) -> None:
        """Validate and keep the config. The tasks get it as given, as Kafka's file
        connectors hand their own: GET /connectors/<name>/tasks shows the same keys on both.

        Raises:
            ConfigException: a key is missing or invalid; names it.
        """
        self.config_def.parse(props)
        self._props = dict(props)

    def stop(self) -> None:
        """Nothing to release."""
