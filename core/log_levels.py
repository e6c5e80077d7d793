"""Kafka's log level names over Python logging, for ``--log-level`` and ``/admin/loggers``.

Kafka's levels map onto Python's: TRACE (5, registered here), DEBUG, INFO, WARN (WARNING),
ERROR, FATAL (CRITICAL) and OFF (above CRITICAL, so nothing is logged). A module of its own,
without the REST server's imports, so that the command line can check ``--log-level`` before
anything slow is loaded.
"""

from __future__ import annotations

import logging

__all__ = ["KAFKA_LEVELS", "OFF", "TRACE", "parse_level"]

TRACE = 5
OFF = logging.CRITICAL + 50
KAFKA_LEVELS = {
    "TRACE": TRACE,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
    "OFF": OFF,
}
logging.addLevelName(TRACE, "TRACE")


def parse_level(text: str) -> int | None:
    """The level Kafka names ``text`` (any case, surrounding blanks ignored), or None."""
    return KAFKA_LEVELS.get(text.strip().upper())
