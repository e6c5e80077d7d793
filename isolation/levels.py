"""The worker's log levels in its plugin hosts (KIP-495 across processes).

Plugin code logs in its host process, so a level set in the worker (its configuration, or
``PUT /admin/loggers``, see core/rest/loggers.py) must be set there too. Before its first
request a host gets the worker's levels as they are then (:func:`worker_levels`); each later
change (:func:`changed`) reaches every live host ahead of its next request, and at once,
on a thread of its own, a host whose channel is free (a connector's, between calls). A host
that is busy (a task's: the next request follows within a slice) or hung gets it with its
next request: nothing here waits for a host.

In the host a change sets the logger and each of its existing descendants, as Kafka's
``Loggers.setLevel`` does and the worker did: the host's loggers end up where the worker's
are, including loggers only plugin code has.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Protocol

__all__ = ["ROOT", "changed", "pending", "register", "worker_levels"]

ROOT = "root"


class LevelsReceiver(Protocol):
    """A plugin host process (:class:`isolation.host.PluginHost`), as seen from here."""

    def push_levels(self) -> None:
        """Send pending changes now if the channel is free; never blocks."""
        ...


_lock = threading.Lock()
# Every change since this process started, in order; a host remembers how many it has.
_changes: list[tuple[str, int]] = []
_hosts: weakref.WeakSet[LevelsReceiver] = weakref.WeakSet()


def worker_levels() -> list[tuple[str, int]]:
    """This process's levels as changes a new host applies in order: the root's, then every
    logger with a level of its own, ancestors first (a descendant's own level wins)."""
    own = [
        (name, logger.level)
        for name, logger in list(logging.root.manager.loggerDict.items())
        if isinstance(logger, logging.Logger) and logger.level != logging.NOTSET
    ]
    own.sort(key=lambda entry: entry[0].split("."))
    return [(ROOT, logging.getLogger().level), *own]


def generation() -> int:
    """How many changes were made so far (a host that has applied as many is current)."""
    return len(_changes)


def pending(applied: int | None) -> tuple[int, list[tuple[str, int]]]:
    """What a host that has applied ``applied`` changes (None: a new host) still needs, and
    the generation it is at once it has."""
    with _lock:
        if applied is None:
            return len(_changes), worker_levels()
        return len(_changes), _changes[applied:]


def changed(name: str, level: int) -> None:
    """``name`` (or :data:`ROOT`) was set to ``level`` in this process: tell every host."""
    with _lock:
        _changes.append((name, level))
        hosts = list(_hosts)
    for host in hosts:
        host.push_levels()


def register(host: LevelsReceiver) -> None:
    """``host`` gets :func:`changed` levels while it lives (held weakly)."""
    with _lock:
        _hosts.add(host)
