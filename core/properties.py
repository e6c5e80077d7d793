"""Readers for the files a user hands the worker: ``.properties`` and JSON connector files.

Kafka reads worker and connector files with ``java.util.Properties.load``; this module
implements the same syntax so existing Kafka Connect files work unchanged:

* ``#`` and ``!`` start a comment line; blank lines are skipped;
* a key ends at the first unescaped ``=``, ``:`` or whitespace (``key=value``,
  ``key: value`` and ``key value`` are all the same);
* a line ending in an odd number of backslashes continues on the next line, whose
  leading whitespace is dropped;
* escapes ``\\t \\n \\r \\f \\\\ \\uXXXX`` are decoded and any other escaped character
  stands for itself (``\\=``, ``\\:``, ``\\ ``, ``\\#``);
* a repeated key silently replaces the earlier value.

Unlike Java we refuse two kinds of garbage that ``Properties.load`` accepts without a
word, because both are almost always typos: a line with an empty key (``=value``) and a
malformed ``\\u`` escape. The error names the file and the line.

Connector files may also be JSON, either the flat ``{"name": ..., "connector.class": ...}``
form or the REST request form ``{"name": ..., "config": {...}}``, as ``connect-standalone``
accepts both.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from plugin_api.errors import ConfigException

__all__ = [
    "CONNECTOR_INITIAL_STATES",
    "PropertiesError",
    "load_connector_file",
    "load_connector_request",
    "load_properties",
    "parse_properties",
]

# Whitespace as java.util.Properties defines it; note that form feed is whitespace there,
# not a line break, which is why str.splitlines() (which breaks on \f) is not used.
_WHITESPACE = " \t\f"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
# A malformed line is echoed in the error; beyond this many characters it is cut short
# so that one runaway continuation line does not flood the terminal.
_MAX_ECHOED_LINE_CHARS = 80

# Values of the optional "initial_state" field of the REST create request (KIP-980).
CONNECTOR_INITIAL_STATES = ("RUNNING", "PAUSED", "STOPPED")

StrPath = str | PathLike[str]


class PropertiesError(ConfigException):
    """A worker or connector file cannot be read.

    ``str()`` is ``"<path>:<line>: <message>"`` (or ``"<path>: <message>"`` when no
    single line is at fault), the format compilers use, so editors can jump to it.

    Attributes:
        path: The file as the user named it.
        line_no: 1-based line number of the offending (first physical) line, or ``None``.
        message: What is wrong, without the location.
    """

    def __init__(self, path: StrPath, line_no: int | None, message: str) -> None:
        """Create the error for ``path`` at ``line_no``."""
        self.path = str(path)
        self.line_no = line_no
        self.message = message
        where = self.path if line_no is None else f"{self.path}:{line_no}"
        super().__init__(f"{where}: {message}")


def _echo(text: str) -> str:
    if len(text) > _MAX_ECHOED_LINE_CHARS:
        text = text[: _MAX_ECHOED_LINE_CHARS - 3] + "..."
    return text


def _ends_with_continuation(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Join continued lines; return ``(first line number, logical line)`` pairs.

    Comment and blank lines are dropped here. A comment line never continues, even when
    it ends in a backslash (as in Java).
    """
    natural = _LINE_BREAK.split(text)
    result: list[tuple[int, str]] = []
    index = 0
    while index < len(natural):
        line_no = index + 1
        line = natural[index].lstrip(_WHITESPACE)
        index += 1
        if not line or line[0] in "#!":
            continue
        while _ends_with_continuation(line) and index < len(natural):
            line = line[:-1] + natural[index].lstrip(_WHITESPACE)
            index += 1
        if _ends_with_continuation(line):
            # A continuation on the last line of the file: Java drops the backslash.
            line = line[:-1]
        result.append((line_no, line))
    return result


def _split_key_value(line: str) -> tuple[str, str]:
    """Split a logical line at the first unescaped separator; both parts still escaped."""
    pos = 0
    while pos < len(line):
        char = line[pos]
        if char == "\\":
            pos += 2
            continue
        if char in "=:" or char in _WHITESPACE:
            break
        pos += 1
    key = line[:pos]
    rest = line[pos:].lstrip(_WHITESPACE)
    if rest[:1] in ("=", ":") and rest:
        rest = rest[1:].lstrip(_WHITESPACE)
    return key, rest


def _unescape(raw: str) -> str:
    """Decode escapes.

    Raises:
        ValueError: On a malformed ``\\u`` escape; the message describes it.
    """
    if "\\" not in raw:
        return raw
    out: list[str] = []
    pos = 0
    while pos < len(raw):
        char = raw[pos]
        if char != "\\":
            out.append(char)
            pos += 1
            continue
        if pos + 1 >= len(raw):
            break  # a lone trailing backslash stands for nothing, as in Java
        escaped = raw[pos + 1]
        if escaped == "u":
            digits = raw[pos + 2 : pos + 6]
            if len(digits) < 4 or not set(digits) <= _HEX_DIGITS:
                raise ValueError(f"malformed \\uxxxx escape '\\u{digits}' (needs 4 hex digits)")
            out.append(chr(int(digits, 16)))
            pos += 6
            continue
        out.append(_SIMPLE_ESCAPES.get(escaped, escaped))
        pos += 2
    decoded = "".join(out)
    if any("\ud800" <= c <= "\udfff" for c in decoded):
        # Java strings are UTF-16, so files spell characters beyond the BMP as two \u
        # escapes (a surrogate pair); join them into the one character they mean.
        decoded = decoded.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return decoded


def parse_properties(text: str, source: StrPath = "<string>") -> dict[str, str]:
    """Parse the text of a ``.properties`` file.

    Args:
        text: The file contents.
        source: Where the text came from, for error messages.

    Returns:
        The properties in file order; a repeated key keeps its last value.

    Raises:
        PropertiesError: On a line with an empty key or a malformed ``\\u`` escape.
    """
    props: dict[str, str] = {}
    for line_no, line in _logical_lines(text):
        raw_key, raw_value = _split_key_value(line)
        try:
            key = _unescape(raw_key)
            value = _unescape(raw_value)
        except ValueError as exc:
            raise PropertiesError(
                source, line_no, f"malformed line '{_echo(line)}': {exc}"
            ) from None
        if not key:
            raise PropertiesError(source, line_no, f"malformed line '{_echo(line)}': empty key")
        props.pop(key, None)  # so that file order reflects where the winning value was set
        props[key] = value
    return props


def _read_text(path: StrPath) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise PropertiesError(path, None, f"cannot read file: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        # Java reads .properties files as ISO-8859-1; a file that is not UTF-8 is most
        # likely such a legacy file, and Latin-1 decodes any byte sequence.
        return data.decode("latin-1")


def load_properties(path: StrPath) -> dict[str, str]:
    """Read a ``.properties`` file (UTF-8, or Latin-1 if it is not valid UTF-8).

    Raises:
        PropertiesError: If the file cannot be read or has a malformed line.
    """
    return parse_properties(_read_text(path), path)


def _stringify(path: StrPath, key: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    what = "null" if value is None else ("a list" if isinstance(value, list) else "an object")
    raise PropertiesError(
        path, None, f"value of '{key}' must be a string, number or boolean, not {what}"
    )


def _string_map(path: StrPath, raw: Mapping[str, Any]) -> dict[str, str]:
    return {key: _stringify(path, key, value) for key, value in raw.items()}


def _parse_connector_json(path: StrPath, text: str) -> tuple[dict[str, str], str | None]:
    try:
        # Numbers keep the spelling of the file ("1e3" stays "1e3"), as Kafka's Jackson
        # coercion of a JSON number to a String does.
        document = json.loads(text, parse_int=str, parse_float=str)
    except json.JSONDecodeError as exc:
        raise PropertiesError(
            path, exc.lineno, f"invalid JSON: {exc.msg} (column {exc.colno})"
        ) from None
    if not isinstance(document, dict):
        raise PropertiesError(path, None, "a JSON connector file must hold an object")
    if not isinstance(document.get("config"), dict):
        return _string_map(path, document), None

    unexpected = sorted(set(document) - {"name", "config", "initial_state"})
    if unexpected:
        raise PropertiesError(
            path,
            None,
            f"unexpected field(s) {', '.join(map(repr, unexpected))} next to 'config' "
            '(expected {"name": ..., "config": {...}} or a flat object of configs)',
        )
    config = _string_map(path, document["config"])
    if "name" in document:
        name = _stringify(path, "name", document["name"])
        if "name" in config and config["name"] != name:
            raise PropertiesError(
                path,
                None,
                f"connector name '{config['name']}' in 'config' does not match "
                f"the name '{name}' of the request",
            )
        config = {"name": name, **{k: v for k, v in config.items() if k != "name"}}
    initial_state = document.get("initial_state")
    if initial_state is not None:
        state = str(initial_state).upper()
        if state not in CONNECTOR_INITIAL_STATES:
            raise PropertiesError(
                path,
                None,
                f"initial_state must be one of {', '.join(CONNECTOR_INITIAL_STATES)}, "
                f"not '{initial_state}'",
            )
        initial_state = state
    return config, initial_state


def load_connector_request(path: StrPath) -> tuple[dict[str, str], str | None]:
    """Read a connector file and its optional REST ``initial_state`` (KIP-980).

    Returns:
        ``(config, initial_state)``; ``initial_state`` is upper-case or ``None`` (always
        ``None`` for ``.properties`` files and flat JSON).

    Raises:
        PropertiesError: If the file cannot be read or parsed.
    """
    text = _read_text(path)
    if str(path).lower().endswith(".json"):
        return _parse_connector_json(path, text)
    return parse_properties(text, path), None


def load_connector_file(path: StrPath) -> dict[str, str]:
    """Read a connector configuration: JSON if the name ends in ``.json``, else properties.

    JSON may be flat (``{"name": "x", "connector.class": ...}``) or the REST create
    request (``{"name": "x", "config": {...}}``, the name merged into the config).
    Numbers and booleans become strings (``true``/``false``).

    Raises:
        PropertiesError: If the file cannot be read or parsed; invalid JSON names the line.
    """
    return load_connector_request(path)[0]
