"""Run-time log levels (KIP-495) over Python logging, with Kafka's level names.

Kafka's levels map onto Python's as :mod:`core.log_levels` says. Setting a level on a
logger sets it on every existing descendant too, as Kafka's ``Loggers.setLevel`` does, and
returns the affected names.

Plugin code logs in its plugin host, so every change is made there too, and each new host
starts with the worker's levels (:mod:`isolation.levels`). The worker knows a logger of plugin
code once a record of it reached the worker's log (the host writes its records under their
own logger names) or once it was set here: only those are listed and answered by name, and
only those are in the names a change returns.
"""

from __future__ import annotations

import logging
import threading
import time

from core.log_levels import KAFKA_LEVELS
from isolation import levels as host_levels

ROOT = "root"

_lock = threading.Lock()
_last_modified: dict[str, int] = {}


def kafka_level(level: int) -> str:
    for name, value in sorted(KAFKA_LEVELS.items(), key=lambda kv: kv[1]):
        if level <= value:
            return name
    return "OFF"


def _logger(name: str) -> logging.Logger | None:
    if name == ROOT:
        return logging.getLogger()
    found = logging.root.manager.loggerDict.get(name)
    return found if isinstance(found, logging.Logger) else None


def _entry(name: str, logger: logging.Logger) -> dict[str, object]:
    return {
        "level": kafka_level(logger.getEffectiveLevel()),
        "last_modified": _last_modified.get(name),
    }


def all_levels() -> dict[str, dict[str, object]]:
    """Every logger with a level of its own, plus root, by name with root among them (Kafka's
    listing is a sorted map)."""
    out = {ROOT: _entry(ROOT, logging.getLogger())}
    for name, logger in logging.root.manager.loggerDict.items():
        if isinstance(logger, logging.Logger) and logger.level != logging.NOTSET:
            out[name] = _entry(name, logger)
    return dict(sorted(out.items()))


def level(name: str) -> dict[str, object] | None:
    logger = _logger(name)
    return _entry(name, logger) if logger is not None else None


def set_level(name: str, value: int) -> list[str]:
    """Set ``name`` and its existing descendants to ``value``; returns the names changed.

    A logger already at ``value`` (its own level, else its effective one) is left as it is,
    its ``last_modified`` included, and is not among the names returned, as Kafka's."""
    with _lock:
        now = int(time.time() * 1000)
        candidates = [logging.getLogger() if name == ROOT else logging.getLogger(name)]
        prefix = "" if name == ROOT else name + "."
        for other, logger in list(logging.root.manager.loggerDict.items()):
            if isinstance(logger, logging.Logger) and other.startswith(prefix) and other != name:
                candidates.append(logger)
        # Each logger's level before any changes: a descendant that only inherits is set too.
        current = [logger.level or logger.getEffectiveLevel() for logger in candidates]
        affected = []
        for logger, before in zip(candidates, current, strict=True):
            if before == value:
                continue
            logger.setLevel(value)
            _last_modified[logger.name] = now  # the root logger's name is ROOT
            affected.append(logger.name)
        # Under the lock: hosts apply changes in the order the worker made them.
        host_levels.changed(name, value)  # ROOT is the same name there
        return sorted(affected)
