"""RegexRouter: rename topics with a Java regex and replacement.

Example: ``mysql\\.(.*)`` with ``processed.$1`` routes ``mysql.orders`` to ``processed.orders``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from copycat_transforms._javaregex import (
    ReplacementPart,
    compile_java_regex,
    expand,
    parse_replacement,
    regex_validator,
)
from copycat_transforms._util import VersionedPlugin, add_copier
from plugin_api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectRecord,
    Importance,
    Transformation,
)

__all__ = ["RegexRouter"]

REGEX_CONFIG = "regex"
REPLACEMENT_CONFIG = "replacement"

CONFIG_DEF = (
    ConfigDef()
    .define(
        REGEX_CONFIG,
        ConfigType.STRING,
        validator=regex_validator,
        importance=Importance.HIGH,
        documentation="Regular expression to use for matching.",
    )
    .define(
        REPLACEMENT_CONFIG,
        ConfigType.STRING,
        importance=Importance.HIGH,
        documentation="Replacement string.",
    )
)


_UNCHANGED = "\0unchanged"  # not a legal topic name, so never a real route
# Topics whose route is remembered; past this the memory starts over (topics.regex sinks can
# see many topics, but routing stays a pure function of the name).
_MAX_ROUTES = 10_000


class RegexRouter(VersionedPlugin, Transformation[ConnectRecord]):
    """Update the record topic using the configured regular expression and replacement string.

    The regex must match the whole topic (Java ``Matcher.matches``); the first
    match is then replaced (``replaceFirst``). Topics that do not match are left
    alone. Group references in the replacement are checked at configure time.
    """

    KAFKA_CLASS_ALIASES = ("org.apache.kafka.connect.transforms.RegexRouter",)

    def __init__(self) -> None:
        """Create an unconfigured transform."""
        self._regex: re.Pattern[str] | None = None
        self._replacement: list[ReplacementPart] = []
        self._routes: dict[str, str] = {}
        self._copiers: dict[type, Callable[..., Any]] = {}

    def config(self) -> ConfigDef:
        """Return ``regex`` and ``replacement``."""
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, object]) -> None:
        """Compile the regex and parse the replacement.

        Raises:
            ConfigException: Naming ``regex`` or ``replacement``.
        """
        conf = AbstractConfig(CONFIG_DEF, configs)
        self._regex = compile_java_regex(conf.get_string(REGEX_CONFIG) or "")
        self._routes.clear()
        self._replacement = parse_replacement(
            conf.get_string(REPLACEMENT_CONFIG) or "", self._regex, REPLACEMENT_CONFIG
        )

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        """Return the record renamed to the new topic, or unchanged if the topic does not match."""
        topic = record.topic
        new_topic = self._routes.get(topic)
        if new_topic is None:
            new_topic = self._route(topic)
        if new_topic is _UNCHANGED:
            return record
        copy = self._copiers.get(type(record)) or add_copier(self._copiers, record, "topic")
        return copy(record, new_topic)

    def _route(self, topic: str) -> str:
        """The new name of ``topic`` (or _UNCHANGED), remembered: a task sees few topics."""
        regex = self._regex
        assert regex is not None, "RegexRouter used before configure()"
        if regex.fullmatch(topic) is None:
            new_topic = _UNCHANGED
        else:
            first = regex.search(topic)
            assert first is not None
            new_topic = (
                topic[: first.start()] + expand(first, self._replacement) + topic[first.end() :]
            )
        if len(self._routes) >= _MAX_ROUTES:
            self._routes.clear()
        self._routes[topic] = new_topic
        return new_topic
