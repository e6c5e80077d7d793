"""Process bootstrap: what turns a herder into a running worker process.

Signals, the REST server, the embedded dev broker and the periodic offset flush are process
concerns, kept here so that no herder has them (a Spark driver or a test embeds a herder
without any of it). Order, as Kafka Connect's: validate the connector files (nothing is bound
or started if one is bad), start the dev broker when no ``bootstrap.servers`` is configured,
bind REST, start the herder, serve until SIGTERM, SIGINT or SIGHUP, then stop REST, the herder
(every task gracefully, with final commits), and the dev broker last. A signal during start-up
ends the wait it interrupts and stops the worker the same way.
"""

from __future__ import annotations

import logging
import resource
import signal
import threading
from collections.abc import Sequence
from pathlib import Path

from core.dev.broker import WORKER_DEFAULTS, DevBroker
from core.standalone import StandaloneHerder
from plugin_api import ConnectException

__all__ = ["run_distributed", "run_standalone"]

log = logging.getLogger("copycat.bootstrap")

# Longest wait between two looks at the stop flag while serving (also bounds how late the
# periodic offset flush can be).
SERVE_TICK_S = 1.0
# offset.flush.interval.ms=0 means "every tick", not a busy loop.
MIN_TICK_S = 0.05
# The signals that stop the worker gracefully (final offset flush and sink commits). SIGHUP
# too: the JVM runs Kafka Connect's shutdown hook on it, and a worker whose terminal closed
# (or a supervisor's "hang up") used to die at once without committing anything.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def raise_open_files_limit() -> None:
    """Raise this process's soft limit of open files to its hard limit, as the JVM does for
    Kafka Connect (HotSpot's MaxFDLimit). A worker holds ~9 descriptors per connector or task
    (each plugin host's pipes, its shared memory, clients' sockets), and its plugin hosts
    inherit the limit: with a shell's usual soft 1,024, a worker of ~110 connectors would fail
    to start hosts where Kafka Connect runs them."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard or (hard != resource.RLIM_INFINITY and soft > hard):
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:  # an unlimited hard limit the kernel caps (nr_open)
        log.debug("open files limit stays %d: %s", soft, exc)
    else:
        log.debug("open files limit raised from %d to %d", soft, hard)


def _stop_on_signals(stopped: threading.Event) -> None:
    """Make every signal of :data:`STOP_SIGNALS` set ``stopped``. The herder's start-up waits
    (the cluster id, the internal topics, the bundled plugins' install) end on it, and the
    serving loop returns, so the worker stops gracefully from wherever it is."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda *_: stopped.set())


def run_standalone(worker_file: str, connector_files: Sequence[str]) -> int:
    """``copycat standalone``: run until SIGTERM/SIGINT/SIGHUP; returns the exit code."""
    raise_open_files_limit()
    try:
        herder = StandaloneHerder(Path(worker_file), [Path(p) for p in connector_files])
    except (OSError, ConnectException) as exc:
        raise ConnectException(str(exc)) from exc
    stopped = threading.Event()
    herder.stop_requested = stopped  # every start-up wait ends on it
    _stop_on_signals(stopped)
    from core.rest.server import RestServer  # after the config parsed: a bad file fails fast

    broker: DevBroker | None = None
    server: RestServer | None = None
    try:
        herder.prepare()  # a bad connector file fails before any port is bound
        bootstrap = ",".join(herder.config.bootstrap_servers or [])
        defaults: dict[str, str] = {}
        if not bootstrap:
            defaults = WORKER_DEFAULTS
            broker = DevBroker()
            broker.start()
            bootstrap = broker.bootstrap_servers
            log.warning(
                "no bootstrap.servers configured: started the embedded dev broker at %s "
                "(in-memory, for development only)",
                bootstrap,
            )
            # On stdout too: the user needs the address for their own clients.
            print(f"dev broker (in memory, for development only): {bootstrap}", flush=True)
        server = RestServer(herder, herder.config, herder.extensions)
        server.start()
        herder.worker_id = server.worker_id
        herder.start(bootstrap, defaults)
        interval = herder.config.get("offset.flush.interval.ms") / 1000
        while not stopped.wait(max(MIN_TICK_S, min(interval, SERVE_TICK_S))):
            herder.flush_offsets()
        return 0
    finally:
        if server is not None:
            server.stop()
        herder.shutdown()
        if broker is not None:
            broker.stop()


def run_distributed(worker_file: str) -> int:
    """``copycat distributed``: one worker of a Connect cluster, until SIGTERM/SIGINT/SIGHUP.

    Needs a Kafka cluster (``bootstrap.servers``): the internal topics and the group live
    there. REST is bound first (its URL is what the other workers forward to), then the
    herder reads the internal topics and joins the group. On a signal: REST stops, then the
    herder stops its connectors and tasks (final commits), leaves the group and closes.
    """
    from core.distributed.herder import DistributedHerder

    raise_open_files_limit()
    try:
        herder = DistributedHerder(Path(worker_file))
    except (OSError, ConnectException) as exc:
        raise ConnectException(str(exc)) from exc
    stopped = threading.Event()
    herder.stop_requested = stopped  # every start-up wait ends on it
    _stop_on_signals(stopped)
    from core.rest.server import RestServer

    server: RestServer | None = None
    try:
        herder.prepare()
        if not herder.config.bootstrap_servers:
            raise ConnectException(
                "distributed mode needs bootstrap.servers: its configs, offsets, statuses and "
                "worker group live in Kafka (the dev broker is for standalone mode)"
            )
        server = RestServer(herder, herder.config, herder.extensions)
        server.start()
        herder.worker_id = server.worker_id
        herder.url = server.advertised_url
        herder.start()
        interval = herder.config.get("offset.flush.interval.ms") / 1000
        while not stopped.wait(max(MIN_TICK_S, min(interval, SERVE_TICK_S))):
            herder.flush_offsets()
        return 0
    finally:
        if server is not None:
            server.stop()
        herder.shutdown()
