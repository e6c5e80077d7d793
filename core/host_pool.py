"""Warm plugin hosts for short calls: validation and config definitions.

Validating a connector config asks the connector plugin and each of its converters,
transforms and predicates (``config/validate``, and every create or update of a connector);
a fresh host for each costs an interpreter start and the plugin's imports, 150-400 ms here,
so a connector with three transforms took over a second to create. A host that has answered
is kept for the next short call on the same plugin environment, then closed after
:data:`IDLE_HOST_S` without use.

Each lease gets a new plugin object (``new``) and drops it afterwards; what a plugin keeps at
module level survives between leases, as it does in Kafka Connect's one JVM. A host that
failed (timed out, crashed) is never returned to the pool.

An idle host is marked as such beside its env (:mod:`registry.idle_hosts`), so that
``plugins remove``/``upgrade`` retire it instead of counting it as a user of the plugin; the
pool takes the mark back before it leases the host again, and starts a new host when the
mark is gone (a remover took it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from isolation import HostClient, PluginEnvironment, PluginHostError
from registry.idle_hosts import claim, mark_idle

__all__ = ["IDLE_HOST_S", "HostPool"]

log = logging.getLogger("copycat.host_pool")

# How long an unused warm host is kept. Validation comes in bursts (a UI validating as the
# user types, a deployment creating many connectors); between bursts a host costs ~20 MB.
IDLE_HOST_S = 30.0
# How often the pool looks for hosts idle longer than IDLE_HOST_S.
REAP_INTERVAL_S = 5.0


class HostPool:
    """At most one idle host per plugin environment; leases are exclusive."""

    def __init__(self, call_timeout_s: float, idle_s: float = IDLE_HOST_S) -> None:
        self.call_timeout_s = call_timeout_s
        self.idle_s = idle_s
        # (location, content hash) -> (host, idle since, its idle marker)
        self._idle: dict[tuple[str, str], tuple[HostClient, float, Path | None]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._reaper: threading.Thread | None = None

    @contextmanager
    def lease(self, env: PluginEnvironment, name: str) -> Iterator[HostClient]:
        """A host of ``env`` for the duration of the ``with`` block."""
        key = (str(env.location), env.content_hash())
        with self._lock:
            idle = self._idle.pop(key, None)
        host = None
        if idle is not None:
            # Unmarked first: a remover that took the mark first has retired the host.
            unmarked = idle[2] is None or claim(idle[2])
            if unmarked and idle[0].alive:
                host = idle[0]
            else:
                idle[0].close()
        if host is None:
            host = env.start_host(name, call_timeout_s=self.call_timeout_s)
        healthy = False
        try:
            yield host
            healthy = True
        except PluginHostError:
            raise
        except Exception:
            healthy = True  # the plugin raised; its host answered and is fine
            raise
        finally:
            self._give_back(env, key, host, healthy and host.alive)

    def _give_back(
        self, env: PluginEnvironment, key: tuple[str, str], host: HostClient, reusable: bool
    ) -> None:
        with self._lock:
            if reusable and not self._closed and key not in self._idle:
                mark = mark_idle(env.location, host.pid) if not env.attached else None
                self._idle[key] = (host, time.monotonic(), mark)
                self._start_reaper()
                return
        host.close()  # failed, or another host of this environment is idle already

    @staticmethod
    def _retire(host: HostClient, mark: Path | None) -> None:
        claim(mark)
        host.close()

    def _start_reaper(self) -> None:
        if self._reaper is None:
            self._reaper = threading.Thread(target=self._reap, name="host-pool-reaper", daemon=True)
            self._reaper.start()

    def _reap(self) -> None:
        while not self._closed:
            time.sleep(REAP_INTERVAL_S)
            now = time.monotonic()
            with self._lock:
                stale = [k for k, (_, since, _) in self._idle.items() if now - since > self.idle_s]
                hosts = [self._idle.pop(k) for k in stale]
            for host, _, mark in hosts:
                self._retire(host, mark)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            hosts = list(self._idle.values())
            self._idle.clear()
        for host, _, mark in hosts:
            self._retire(host, mark)
