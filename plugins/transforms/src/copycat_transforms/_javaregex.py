"""Java regular expressions and ``Matcher`` replacement strings, on top of :mod:`re`.

Existing connector configs carry Java regexes (``RegexRouter.regex``,
``TopicNameMatches.pattern``) and Java replacement strings (``processed.$1``).
The two dialects agree on everything topic patterns use in practice; this module
translates the spellings that differ:

* named groups ``(?<name>...)`` become ``(?P<name>...)``;
* ``\\Q...\\E`` literal quoting is escaped;
* ``\\z`` (end of input) becomes ``\\Z``.

Replacement strings use ``$n`` / ``${name}`` group references and ``\\`` to
escape the next character, as in ``Matcher.appendReplacement``.
"""

from __future__ import annotations

import re

from copycat_transforms._util import config_error, invalid_value
from plugin_api import ConfigException

ReplacementPart = str | int


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if nxt == "Q":
                end = pattern.find("\\E", i + 2)
                literal = pattern[i + 2 :] if end < 0 else pattern[i + 2 : end]
                out.append(re.escape(literal))
                i = n if end < 0 else end + 2
                continue
            out.append("\\Z" if nxt == "z" else ch + nxt)
            i += 2
            continue
        if pattern.startswith("(?<", i) and i + 3 < n and pattern[i + 3] not in "=!":
            out.append("(?P<")
            i += 3
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def compile_java_regex(pattern: str) -> re.Pattern[str]:
    """Compile a Java regex.

    Raises:
        re.error: If the pattern is invalid (in either dialect).
    """
    return re.compile(_translate(pattern))


_NULL_REGEX = 'Invalid regex: Cannot invoke "String.isEmpty()" because "this.pattern" is null'


def _java_syntax_error(pattern: str, exc: re.error) -> str:
    """The message java.util.regex.PatternSyntaxException gives for the common mistakes
    (``Unclosed group near index 1`` with the pattern under it, and a caret when the index
    is inside it); :mod:`re`'s own message for the rest."""
    message, pos = exc.msg, exc.pos
    same = _translate(pattern) == pattern  # positions are the translated pattern's
    if message.startswith("missing ), unterminated subpattern"):
        desc, index = "Unclosed group", len(pattern)
    elif message == "unterminated character set":
        desc, index = "Unclosed character class", len(pattern) - 1
    elif message == "unbalanced parenthesis" and same and pos:
        desc, index = "Unmatched closing ')'", pos - 1
    elif message in ("nothing to repeat", "multiple repeat") and same and pos is not None:
        desc, index = f"Dangling meta character '{pattern[pos]}'", pos
    elif message == "bad escape (end of pattern)":
        desc, index = "Unexpected internal error", len(pattern)
    elif message == "min repeat greater than max repeat" and same and pos is not None:
        desc, index = "Illegal repetition range", pattern.find("}", pos)
    else:
        return str(exc)
    text = f"{desc} near index {index}\n{pattern}"
    if 0 <= index < len(pattern):
        text += "\n" + " " * index + "^"
    return text


def regex_validator(name: str, value: object) -> None:
    """ConfigDef validator: the value must be a valid Java regex (Kafka's RegexValidator)."""
    if value is None:
        # Kafka's validator hands null to java.util.regex.Pattern and reports its
        # NullPointerException (a missing key is two errors there)
        raise invalid_value(name, None, _NULL_REGEX)
    pattern = str(value)
    try:
        compile_java_regex(pattern)
    except re.error as exc:
        reason = f"Invalid regex: {_java_syntax_error(pattern, exc)}"
        raise ConfigException(name, value, reason) from None


def parse_replacement(
    replacement: str, regex: re.Pattern[str], key: str = "replacement"
) -> list[ReplacementPart]:
    """Split a Java replacement string into literal text, group numbers and group names.

    Group references are checked against ``regex`` here, so a bad reference fails
    at configuration time rather than on the first matching record.

    Raises:
        ConfigException: Naming ``key``, for a dangling ``\\``/``$`` or an unknown group.
    """
    parts: list[ReplacementPart] = []
    literal: list[str] = []
    i, n = 0, len(replacement)
    while i < n:
        ch = replacement[i]
        if ch == "\\":
            i += 1
            if i >= n:
                raise config_error(key, replacement, "character to be escaped is missing")
            literal.append(replacement[i])
            i += 1
        elif ch == "$":
            i += 1
            if i >= n:
                raise config_error(
                    key, replacement, "Illegal group reference: group index is missing"
                )
            if literal:
                parts.append("".join(literal))
                literal = []
            if replacement[i] == "{":
                end = replacement.find("}", i)
                if end < 0:
                    raise config_error(
                        key, replacement, "named capturing group is missing trailing '}'"
                    )
                group_name = replacement[i + 1 : end]
                if group_name not in regex.groupindex:
                    raise config_error(key, replacement, f"No group with name {{{group_name}}}")
                parts.append(regex.groupindex[group_name])
                i = end + 1
            else:
                if not replacement[i].isdigit():
                    raise config_error(key, replacement, "Illegal group reference")
                # Java reads further digits only while the number stays a valid group.
                number = int(replacement[i])
                i += 1
                while i < n and replacement[i].isdigit():
                    candidate = number * 10 + int(replacement[i])
                    if candidate > regex.groups:
                        break
                    number = candidate
                    i += 1
                if number > regex.groups:
                    raise config_error(key, replacement, f"No group {number}")
                parts.append(number)
        else:
            literal.append(ch)
            i += 1
    if literal:
        parts.append("".join(literal))
    return parts


def expand(match: re.Match[str], parts: list[ReplacementPart]) -> str:
    """Render parsed replacement ``parts`` for ``match`` (unmatched groups are empty)."""
    return "".join(p if isinstance(p, str) else (match.group(p) or "") for p in parts)
