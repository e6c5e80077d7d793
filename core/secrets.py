"""Keeping values resolved from config providers out of logs, traces, REST answers and DLQ headers.

Every value a config provider resolves is registered here with the placeholder it replaced,
under the connector whose config held it. Text is scrubbed (the placeholder put back where the
value appears) at two scopes:

* :func:`scrub_for` ``(connector, text)``: text *about that connector*, before it is written
  anywhere: its status traces (before they reach the status store, hence the status topic),
  its DLQ context headers, its failures' log lines and validation errors. Every value of the
  connector worth hiding is replaced; one of fewer than :data:`ANYWHERE_MIN_CHARS` characters
  only as a token (no letter or digit touching it on either side).
* :func:`scrub` ``(text)``: text not tied to a connector (every log record of the worker,
  plugin output lines, REST error bodies). Only values of at least
  :data:`ANYWHERE_MIN_CHARS` characters, of every connector, are replaced. Replacing short
  values there was a leak of its own and corrupted unrelated output: with ``num=2`` resolved
  for one connector, another's ``task plainsink-2 starting`` was logged as
  ``task plainsink-${file:...:num} starting``, which tells the reader the value.

Values not worth hiding are never replaced: numbers and booleans (a ``tasks.max`` or a port
read through a provider is no secret, and replacing ``2`` anywhere corrupts the text), and
blank values. A value is replaced in each form it takes in text the worker writes: as is,
escaped as Python's ``repr`` escapes it (exception messages quote paths so), and escaped as
JSON escapes it.

Scrubbing is a safety net under the rule that comes first: the worker never logs or serves a
resolved config (REST and status keep placeholders; configs are resolved only when handed to
plugins). Data is not scrubbed: offsets, topic names and records are what a connector made of
its config, as in Kafka.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Mapping

__all__ = [
    "ANYWHERE_MIN_CHARS",
    "install_log_scrubber",
    "register",
    "registered",
    "scrub",
    "scrub_for",
    "scrub_with",
    "secrets_of",
    "worth_hiding",
]

# Values at least this long are replaced wherever they occur: they do not turn up inside
# unrelated text by chance. Shorter ones only as whole tokens, and only in text about their
# own connector (see the module docstring).
ANYWHERE_MIN_CHARS = 8

# Values that are no secret in any useful sense: numbers and booleans.
_NOT_SECRET = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|true|false", re.IGNORECASE)

_lock = threading.Lock()
_scoped: dict[str, dict[str, str]] = {}  # connector -> value -> placeholder
_long: dict[str, str] = {}  # value -> placeholder, every connector's long values
_long_pattern: re.Pattern[str] | None = None
_long_forms: dict[str, str] = {}


def worth_hiding(value: str) -> bool:
    """Whether ``value`` is scrubbed at all: not blank, not a number, not a boolean."""
    stripped = value.strip()
    return bool(stripped) and not _NOT_SECRET.fullmatch(stripped)


def _forms(value: str) -> set[str]:
    """The forms ``value`` takes in text: as is, repr-escaped (either quote), JSON-escaped."""
    forms = {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    forms.add(repr(value)[1:-1])
    forms.add(repr("'" + value)[2:-1])  # repr's escaping when the text quotes with "
    forms.add(repr('"' + value)[2:-1])  # ... and with '
    return {f for f in forms if f}


def _compile(secrets: Mapping[str, str]) -> tuple[re.Pattern[str] | None, dict[str, str]]:
    """A pattern matching every form of every value worth hiding, and form -> placeholder."""
    by_form: dict[str, str] = {}
    for value, placeholder in secrets.items():
        if worth_hiding(value):
            for form in _forms(value):
                by_form.setdefault(form, placeholder)
    alternatives = []
    for form in sorted(by_form, key=len, reverse=True):  # longest first: no partial hits
        escaped = re.escape(form)
        if len(form) < ANYWHERE_MIN_CHARS:
            escaped = rf"(?<![A-Za-z0-9]){escaped}(?![A-Za-z0-9])"
        alternatives.append(escaped)
    return (re.compile("|".join(alternatives)) if alternatives else None), by_form


def register(secrets: Mapping[str, str], connector: str = "") -> None:
    """Remember resolved ``value -> placeholder`` pairs of ``connector``'s config."""
    global _long_pattern, _long_forms
    with _lock:
        scoped = _scoped.setdefault(connector, {})
        scoped.update({v: p for v, p in secrets.items() if v})
        new_long = {
            v: p
            for v, p in secrets.items()
            if len(v) >= ANYWHERE_MIN_CHARS and worth_hiding(v) and _long.get(v) != p
        }
        if new_long:
            _long.update(new_long)
            _long_pattern, _long_forms = _compile(_long)


def registered() -> list[str]:
    """Every value registered so far (for tests that check nothing leaked)."""
    with _lock:
        return [v for scoped in _scoped.values() for v in scoped]


def secrets_of(connector: str) -> dict[str, str]:
    """``connector``'s resolved ``value -> placeholder`` pairs (for text made elsewhere,
    e.g. a task's DLQ headers in its plugin host)."""
    with _lock:
        return dict(_scoped.get(connector, {}))


def scrub_with(text: str, secrets: Mapping[str, str]) -> str:
    """``text`` with each of ``secrets`` (value -> placeholder) worth hiding put back as its
    placeholder, in each of its forms (short values as tokens)."""
    if not text or not secrets:
        return text
    pattern, by_form = _compile(secrets)
    if pattern is None:
        return text
    return pattern.sub(lambda m: by_form[m.group(0)], text)


def scrub(text: str) -> str:
    """``text`` with every registered value of :data:`ANYWHERE_MIN_CHARS` characters or more
    replaced by its placeholder (text not tied to one connector)."""
    pattern, by_form = _long_pattern, _long_forms
    if pattern is None or not text:
        return text
    return pattern.sub(lambda m: by_form.get(m.group(0), "[hidden]"), text)


def scrub_for(connector: str, text: str | None) -> str | None:
    """``text`` about ``connector``: its own values (short ones as tokens), then every long
    value (:func:`scrub`)."""
    if not text:
        return text
    return scrub(scrub_with(text, secrets_of(connector)))


_installed = False


def install_log_scrubber() -> None:
    """Scrub every log record of this process as it is made (idempotent), with :func:`scrub`.

    A record factory rather than a handler filter, so records reach *every* handler (the
    console, a file, pytest's capture, an operator's own) already scrubbed, including their
    exception text.
    """
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    make_record = logging.getLogRecordFactory()

    def scrubbing_factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = make_record(*args, **kwargs)
        if _long_pattern is None:
            return record
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string is logging's to report
            return record
        record.msg, record.args = scrub(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = scrub(logging.Formatter().formatException(record.exc_info))
        return record

    logging.setLogRecordFactory(scrubbing_factory)
