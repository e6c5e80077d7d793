"""The standard predicates: TopicNameMatches, HasHeaderKey, RecordIsTombstone.

A predicate decides, per record, whether a transformation applies
(``transforms.<alias>.predicate=<name>``, optionally ``negate=true``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from copycat_transforms._javaregex import compile_java_regex, regex_validator
from copycat_transforms._util import VersionedPlugin
from plugin_api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectRecord,
    Importance,
    NonEmptyString,
    Predicate,
)

__all__ = ["HasHeaderKey", "RecordIsTombstone", "TopicNameMatches"]

PATTERN_CONFIG = "pattern"
NAME_CONFIG = "name"


def _non_empty_regex(name: str, value: object) -> None:
    NonEmptyString()(name, value)
    regex_validator(name, value)


class TopicNameMatches(VersionedPlugin, Predicate[ConnectRecord]):
    """True for records whose whole topic name matches the configured regular expression."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.predicates.TopicNameMatches",)

    CONFIG_DEF = ConfigDef().define(
        PATTERN_CONFIG,
        ConfigType.STRING,
        validator=_non_empty_regex,
        importance=Importance.MEDIUM,
        documentation="A Java regular expression for matching against the name of a record's "
        "topic.",
    )

    def __init__(self) -> None:
        """Create an unconfigured predicate."""
        self._pattern: re.Pattern[str] | None = None

    def config(self) -> ConfigDef:
        """Return ``pattern``."""
        return self.CONFIG_DEF

    def configure(self, configs: Mapping[str, object]) -> None:
        """Compile the pattern.

        Raises:
            ConfigException: If ``pattern`` is missing, empty or not a valid regex.
        """
        conf = AbstractConfig(self.CONFIG_DEF, configs)
        self._pattern = compile_java_regex(conf.get_string(PATTERN_CONFIG) or "")

    def test(self, record: ConnectRecord) -> bool:
        """Whether the record's topic matches the whole pattern."""
        assert self._pattern is not None, "TopicNameMatches used before configure()"
        return record.topic is not None and self._pattern.fullmatch(record.topic) is not None

    def __repr__(self) -> str:
        pattern = None if self._pattern is None else self._pattern.pattern
        return f"TopicNameMatches{{pattern={pattern}}}"


class HasHeaderKey(VersionedPlugin, Predicate[ConnectRecord]):
    """A predicate which is true for records with at least one header with the configured name."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.predicates.HasHeaderKey",)

    CONFIG_DEF = ConfigDef().define(
        NAME_CONFIG,
        ConfigType.STRING,
        validator=NonEmptyString(),
        importance=Importance.MEDIUM,
        documentation="The header name.",
    )

    def __init__(self) -> None:
        """Create an unconfigured predicate."""
        self._name = ""

    def config(self) -> ConfigDef:
        """Return ``name``."""
        return self.CONFIG_DEF

    def configure(self, configs: Mapping[str, object]) -> None:
        """Read the header name.

        Raises:
            ConfigException: If ``name`` is missing or empty.
        """
        self._name = AbstractConfig(self.CONFIG_DEF, configs).get_string(NAME_CONFIG) or ""

    def test(self, record: ConnectRecord) -> bool:
        """Whether the record has a header called ``name``."""
        return record.headers.last_with_name(self._name) is not None

    def __repr__(self) -> str:
        return f"HasHeaderKey{{name='{self._name}'}}"


class RecordIsTombstone(VersionedPlugin, Predicate[ConnectRecord]):
    """A predicate which is true for records which are tombstones (i.e. have null value)."""

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",)

    CONFIG_DEF = ConfigDef()

    def config(self) -> ConfigDef:
        """RecordIsTombstone has no settings."""
        return self.CONFIG_DEF

    def test(self, record: ConnectRecord) -> bool:
        """Whether the record's value is null."""
        return record.value is None

    def __repr__(self) -> str:
        return "RecordIsTombstone{}"
