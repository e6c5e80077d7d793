"""Keeping values resolved from config providers out of logs, traces and REST answers.

Every value a config provider resolves is registered here with the placeholder it replaced.
Text leaving the worker (log records, plugin output, status traces, REST error bodies) goes
through :func:`scrub`, which puts the placeholder back wherever the value appears *as a
token*: a value of fewer than :data:`ANYWHERE_MIN_CHARS` characters is replaced only where
no letter or digit touches it on either side. Replacing a short value everywhere was itself a
leak: with ``num=7`` resolved, a directory ``s7`` in an error message came back as
``s${file:...:num}``, which tells the reader the value.

Scrubbing is a safety net under the rule that comes first: the worker never logs or serves a
resolved config (REST and status keep placeholders; configs are resolved only when handed to
plugins).
"""

from __future__ import annotations

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
    "scrub_with",
]

# Values at least this long are replaced wherever they occur: they do not turn up inside
# unrelated text by chance. Shorter ones only as whole tokens (see the module docstring).
ANYWHERE_MIN_CHARS = 8

_lock = threading.Lock()
_secrets: dict[str, str] = {}  # value -> placeholder
_pattern: re.Pattern[str] | None = None


def _compile(secrets: Mapping[str, str]) -> re.Pattern[str] | None:
    alternatives = []
    for value in sorted(secrets, key=len, reverse=True):  # longest first: no partial hits
        if not value:
            continue
        escaped = re.escape(value)
        if len(value) < ANYWHERE_MIN_CHARS:
            escaped = rf"(?<![A-Za-z0-9]){escaped}(?![A-Za-z0-9])"
        alternatives.append(escaped)
    return re.compile("|".join(alternatives)) if alternatives else None


def register(secrets: Mapping[str, str]) -> None:
    """Remember resolved ``value -> placeholder`` pairs for :func:`scrub` (process-wide)."""
    global _pattern
    new = {v: p for v, p in secrets.items() if v and _secrets.get(v) != p}
    if not new:
        return
    with _lock:
        _secrets.update(new)
        _pattern = _compile(_secrets)


def registered() -> list[str]:
    """Every value registered so far (for tests that check nothing leaked)."""
    with _lock:
        return list(_secrets)


def scrub_with(text: str, secrets: Mapping[str, str]) -> str:
    """``text`` with each of ``secrets`` (value -> placeholder) put back as its placeholder."""
    pattern = _compile(secrets)
    if pattern is None or not text:
        return text
    return pattern.sub(lambda m: secrets[m.group(0)], text)


def scrub(text: str) -> str:
    """``text`` with every registered resolved value replaced by its placeholder."""
    pattern = _pattern
    if pattern is None or not text:
        return text
    secrets = _secrets
    return pattern.sub(lambda m: secrets.get(m.group(0), "[hidden]"), text)


_installed = False


def install_log_scrubber() -> None:
    """Scrub every log record of this process as it is made (idempotent).

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
        if _pattern is None:
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
