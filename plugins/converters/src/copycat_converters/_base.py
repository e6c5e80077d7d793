"""What every bundled converter shares: the version and the ``converter.type`` setting.

Kafka's String, ByteArray and JSON converters are both a ``Converter`` and a
``HeaderConverter``. The two plugin_api ABCs configure differently
(``configure(configs, is_key)`` vs ``configure(configs)``), so our converters
take ``is_key=None`` to mean "used as a header converter".
"""

from __future__ import annotations

from collections.abc import Mapping

from copycat_converters._version import __version__
from plugin_api import ConfigDef, ConfigType, Importance, ValidString

TYPE_CONFIG = "converter.type"
TYPE_KEY = "key"
TYPE_VALUE = "value"
TYPE_HEADER = "header"


def converter_config_def() -> ConfigDef:
    """A fresh ConfigDef holding ``converter.type`` (Kafka's ConverterConfig.newConfigDef)."""
    return ConfigDef().define(
        TYPE_CONFIG,
        ConfigType.STRING,
        validator=ValidString.in_(TYPE_KEY, TYPE_VALUE, TYPE_HEADER),
        importance=Importance.LOW,
        documentation="How this converter will be used.",
    )


def with_type(configs: Mapping[str, object], is_key: bool | None) -> dict[str, object]:
    """Return ``configs`` plus ``converter.type`` derived from ``is_key`` (``None``: header)."""
    conf = dict(configs)
    if is_key is None:
        conf.setdefault(TYPE_CONFIG, TYPE_HEADER)
    else:
        conf[TYPE_CONFIG] = TYPE_KEY if is_key else TYPE_VALUE
    return conf


class VersionedPlugin:
    """Mixin: ``version()`` is the version of the copycat-converters distribution."""

    def version(self) -> str:
        """Return the package version."""
        return __version__
