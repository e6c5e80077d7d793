"""Kafka's REST header settings: ``response.http.headers.config`` and the CORS origins.

``response.http.headers.config`` is a comma-separated list of rules ``[action] [name]:[value]``
(a rule holding a comma goes in double quotes), checked as Kafka's RestServerConfig checks it,
with its messages, and applied as Jetty's HeaderFilter applies it: ``set`` and ``add`` set or
add the header; ``setDate`` and ``addDate`` take a number of milliseconds and write the current
time plus that many as an HTTP date. ``access.control.allow.origin`` is a comma-separated list
of ``*`` or regular expressions an ``Origin`` must match whole (Jetty's CrossOriginHandler).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from plugin_api.errors import ConfigException

RESPONSE_HEADERS_KEY = "response.http.headers.config"
ALLOW_ORIGIN_KEY = "access.control.allow.origin"
ALLOW_METHODS_KEY = "access.control.allow.methods"
ACTIONS = ("set", "add", "setDate", "addDate")


@dataclass(frozen=True)
class HeaderRule:
    """One rule: the header ``name`` gets ``value`` (``add``: beside any other value; ``date``:
    ``value`` is milliseconds from now, written as an HTTP date)."""

    name: str
    value: str
    add: bool
    date: bool


def split_csv(text: str) -> list[str]:
    """Split as Jetty's ``StringUtil.csvSplit``: items separated by commas, the whitespace
    around each dropped; an item in double quotes keeps its commas, and a backslash in it
    takes the next character as it is."""
    items: list[str] = []
    i, end = 0, len(text)
    while i < end:
        while i < end and text[i].isspace():
            i += 1
        if i == end:
            break
        if text[i] == '"':
            i += 1
            quoted: list[str] = []
            while i < end and text[i] != '"':
                if text[i] == "\\" and i + 1 < end:
                    i += 1
                quoted.append(text[i])
                i += 1
            items.append("".join(quoted))
            comma = text.find(",", i)
            i = end if comma < 0 else comma
        else:
            comma = text.find(",", i)
            stop = end if comma < 0 else comma
            items.append(text[i:stop].rstrip())
            i = stop
        i += 1  # past the comma
    return items


def parse_rule(rule: str) -> HeaderRule:
    """One rule, refused with Kafka's messages.

    Raises:
        ConfigException: the rule is not ``[action] [name]:[value]`` with a known action and
            a header name without whitespace.
    """
    parts = rule.strip().split(None, 1)
    if len(parts) != 2:
        raise ConfigException(
            RESPONSE_HEADERS_KEY,
            rule,
            f"Invalid format of header config '{rule}'. "
            "Expected: '[action] [header name]:[header value]'",
        )
    action, pair = parts[0].strip(), parts[1]
    if action.lower() not in (known.lower() for known in ACTIONS):
        raise ConfigException(
            RESPONSE_HEADERS_KEY,
            rule,
            f"Invalid header config action: '{action}'. Expected one of [{', '.join(ACTIONS)}]",
        )
    pieces = pair.strip().split(":")
    while pieces and not pieces[-1]:  # Java's split drops trailing empty strings
        pieces.pop()
    if len(pieces) != 2:
        raise ConfigException(
            RESPONSE_HEADERS_KEY,
            rule,
            f"Invalid format of header name and header value pair '{pair}'. "
            "Expected: '[header name]:[header value]'",
        )
    name, value = pieces[0].strip(), pieces[1].strip()
    if not name or re.search(r"\s", name):
        raise ConfigException(
            RESPONSE_HEADERS_KEY,
            rule,
            f"Invalid header name '{name}'. The '[header name]' cannot contain whitespace",
        )
    date = action.endswith("Date")
    if date and not re.fullmatch(r"[+-]?\d+", value):
        raise ConfigException(
            RESPONSE_HEADERS_KEY, rule, f"The value of a {action} rule is milliseconds from now"
        )
    return HeaderRule(name, value, add=action.startswith("add"), date=date)


def parse_rules(config: str | None) -> list[HeaderRule]:
    """Every rule of a ``response.http.headers.config`` value (none when it is blank)."""
    if config is None or not config.strip():
        return []
    return [parse_rule(rule) for rule in split_csv(config)]


def origin_patterns(config: str | None) -> list[re.Pattern[str]] | None:
    """The patterns of ``access.control.allow.origin`` (``*`` allows any origin); None when
    CORS is off (blank).

    Raises:
        ConfigException: a pattern is not a regular expression.
    """
    if config is None or not config.strip():
        return None
    patterns = []
    for origin in (item.strip() for item in config.split(",")):
        if not origin:
            continue
        if origin == "*":
            return [re.compile(".*", re.DOTALL)]
        try:
            patterns.append(re.compile(origin))
        except re.error as exc:
            raise ConfigException(
                ALLOW_ORIGIN_KEY, config, f"'{origin}' is not a regular expression: {exc}"
            ) from None
    return patterns


def check_response_headers(name: str, value: Any) -> None:
    """The ConfigDef validator of ``response.http.headers.config``."""
    parse_rules(value)


def check_allowed_origins(name: str, value: Any) -> None:
    """The ConfigDef validator of ``access.control.allow.origin``."""
    origin_patterns(value)
