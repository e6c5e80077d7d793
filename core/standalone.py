"""Standalone mode (``copycat standalone worker.properties [connector.properties ...]``).

Everything named on the command line is read and validated before anything starts: a missing
required key, an unknown connector class or a malformed line fails fast with a message naming
the file and key, and no task runs. Then (see :mod:`core.bootstrap`) the REST server binds its
listeners and the herder starts the connectors and their tasks; source offsets go to
``offset.storage.file.filename`` every ``offset.flush.interval.ms`` and on shutdown.

Connectors created over REST live in memory, as in Kafka's standalone mode: a restart runs
only the connectors named on the command line. Zero connector files is fine (REST-only use).

:class:`StandaloneHerder` is the shared herder logic (:class:`core.worker_herder.WorkerHerder`)
with a memory config store, file offsets, and every connector run by this worker.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

from core import secrets
from core.bundled import install_bundled_in_background
from core.connect_metrics import metrics_from_config
from core.extensions import config_resolver, override_policy, plugin_manager
from core.fencing import StandaloneFencing
from core.herder import HEALTHY, Health
from core.host_pool import HostPool
from core.kafka import kafka_cluster_id
from core.metric_reporters import add_reporters
from core.offset_topics import ConnectorOffsetStores
from core.offsets import FileOffsetStore
from core.plugins import PluginCatalogue
from core.properties import load_connector_file, load_properties
from core.status import State, StatusBoard
from core.stores.config import MemoryConfigStore, TargetState
from core.stores.status import ScrubbingStatusStore
from core.task_specs import STANDALONE_GROUP_ID, task_transactional_id
from core.worker import Worker
from core.worker_config import WorkerConfig
from core.worker_herder import RECLAIM_MARGIN_S, WorkerHerder
from plugin_api import ConfigException, ConnectException

__all__ = ["ConnectorFile", "StandaloneHerder"]

log = logging.getLogger("copycat.standalone")

# How many connector files start at once. A start is mostly CPU (the connector's plugin host
# and its tasks' start as interpreters, importing the plugin), so more than a few per core
# only makes each slower; fewer leaves cores idle while a start waits on a host's answer.
STARTUP_CONCURRENCY = min(8, 2 * (os.cpu_count() or 1))
# How often a start-up wait looks whether a stop was requested (a signal).
STOP_CHECK_S = 0.2


@dataclass(frozen=True)
class ConnectorFile:
    path: Path
    props: dict[str, str]

    @property
    def name(self) -> str:
        return self.props["name"]


def _software_version() -> tuple[str, str]:
    try:
        version = metadata.version("copycat")
    except metadata.PackageNotFoundError:
        version = "unknown"
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short=16", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = "unknown"
    return version, commit or "unknown"


class _LocalTaskFencing:
    """A standalone exactly-once task's fencing checks (core.runtime.services.TaskFencing):
    the first task of a generation fences the previous one's tasks."""

    def __init__(
        self,
        fencing: StandaloneFencing,
        connector: str,
        generation: int,
        client_config: Mapping[str, Any],
    ) -> None:
        self.fencing = fencing
        self.connector = connector
        self.generation = generation
        self.client_config = dict(client_config)

    def before_producer(self) -> None:
        self.fencing.before_producer(self.connector, self.generation, self.client_config)

    def after_producer(self) -> None:
        self.fencing.check_current(self.connector, self.generation)


class StandaloneHerder(WorkerHerder):
    """Runs the connectors of one standalone worker, from files and from REST."""

    def __init__(
        self,
        worker_file: Path | None,
        connector_files: Sequence[Path] = (),
        *,
        worker_props: Mapping[str, str] | None = None,
    ) -> None:
        self.worker_file = worker_file
        props = dict(worker_props) if worker_props is not None else load_properties(worker_file)  # type: ignore[arg-type]
        self.config = WorkerConfig.from_properties(props, str(worker_file or "<worker config>"))
        self.connector_files = [ConnectorFile(p, load_connector_file(p)) for p in connector_files]
        self.plugin_paths = [Path(p) for p in self.config.plugin_path or ["plugins.d"]]
        secrets.install_log_scrubber()  # before any config is resolved or plugin speaks
        self.extensions = plugin_manager(self.config)
        self.resolver = config_resolver(self.config, self.extensions)
        # Kafka resolves config-provider placeholders in the worker's own properties too
        # (client credentials, REST keystores); the values are registered with the log
        # scrubber as they are resolved, and raw_originals() keeps what was written.
        self.config = self.config.resolved(lambda props: self.resolver.resolve(props).config)
        self.override_policy = override_policy(self.config, self.extensions)
        # The worker's metrics (GET /metrics, metric.reporters), for as long as it runs.
        self.metrics = metrics_from_config(self.config)
        add_reporters(self.metrics, self.config, self.extensions)
        self.topic_creation_enabled = bool(self.config.topic_creation_enable)
        # Exactly-once sources (KIP-618) run here too when a connector keeps its offsets in a
        # Kafka topic of its own (offsets.storage.topic); Kafka's standalone mode has none.
        self.exactly_once_source = self.config.exactly_once_source_support
        self.exactly_once_needs_offsets_topic = True
        self._fencing = StandaloneFencing(
            lambda connector, task: task_transactional_id(
                self.config.group_id or STANDALONE_GROUP_ID, connector, task
            )
        )
        self._generations: dict[str, int] = {}
        self.plugin_call_timeout_s = self.config.get("plugin.call.timeout.ms") / 1000
        self.host_pool = HostPool(self.plugin_call_timeout_s)
        self.worker_id = f"standalone-{uuid.uuid4().hex[:8]}"
        self.catalogue = PluginCatalogue([])
        self.configs = MemoryConfigStore()
        self._init_herding()
        self._ready = threading.Event()
        self._cluster_id: str | None = None
        self._prepared = False
        self._version = _software_version()

    # -- life cycle ------------------------------------------------------------------------------

    def prepare(self) -> PluginCatalogue:
        """Start installing missing bundled plugins (in the background: REST does not wait,
        the live catalogue lists them when done), and validate every connector file before
        start (those do wait, since they may name a bundled plugin)."""
        pending = install_bundled_in_background(self.plugin_paths)
        self.bundled_install = pending
        if pending is not None and self.connector_files:
            pending.join()
        self.catalogue = PluginCatalogue.scan(self.plugin_paths)
        names: dict[str, Path] = {}
        errors: list[str] = []
        for cf in self.connector_files:
            if not cf.props.get("name"):
                errors.append(
                    f'{cf.path}: name: Missing required configuration "name" '
                    "which has no default value."
                )
                continue
            if cf.name in names:
                errors.append(
                    f"{cf.path}: connector {cf.name!r} is also defined in {names[cf.name]}"
                )
            names[cf.name] = cf.path
            try:
                infos = self.validate_connector_config(cf.props)
            except ConnectException as exc:
                errors.append(f"{cf.path}: {exc}")
                continue
            for entry in infos["configs"]:
                errors += [
                    f"{cf.path}: {entry['value']['name']}: {m}" for m in entry["value"]["errors"]
                ]
        if errors:
            raise ConfigException(
                "invalid connector configuration, nothing was started:\n  " + "\n  ".join(errors)
            )
        self._prepared = True
        return self.catalogue

    def start(
        self, bootstrap_servers: str | None = None, defaults: Mapping[str, str] | None = None
    ) -> None:
        """Start the worker against ``bootstrap_servers`` (default: the config's) and deploy
        the connector files in order. ``defaults`` are worker settings taken for the keys the
        worker file does not set (the embedded dev broker's).

        Raises:
            ConfigException: no ``bootstrap.servers`` at all, or no offsets file.
            ConnectException: the Kafka cluster cannot be reached (one line, see
                :func:`core.kafka.kafka_cluster_id`).
        """
        catalogue = self.catalogue if self._prepared else self.prepare()
        if defaults:
            taken = {k: v for k, v in defaults.items() if k not in self.config.originals()}
            self.config = self.config.with_defaults(taken)
            for key, value in taken.items():
                log.info(
                    "%s=%s (the dev broker's default; set it in %s to change it)",
                    key,
                    value,
                    self.worker_file,
                )
        servers = bootstrap_servers or ",".join(self.config.bootstrap_servers or [])
        if not servers:
            raise ConfigException(
                "bootstrap.servers", None, "the worker needs a Kafka cluster to talk to"
            )
        self.config.require(["offset.storage.file.filename"], "standalone mode")
        offsets_file: str = self.config.get("offset.storage.file.filename")
        client = dict(self.config.client_config())
        client["bootstrap.servers"] = servers
        self.client_props = client
        timeout_ms = int(self.config.get("default.api.timeout.ms"))
        self._cluster_id = kafka_cluster_id(
            client, timeout_ms, "default.api.timeout.ms", self._stop_requested
        )
        if self._stop_requested():
            log.info("stopping: the worker takes no work (a signal during start-up)")
            return
        file_offsets = FileOffsetStore(Path(offsets_file))
        self.offset_stores = stores = ConnectorOffsetStores(self.config, file_offsets, client)
        self.worker = worker = Worker(
            self.worker_id,
            self.config,
            catalogue,
            file_offsets,
            client_props=client,
            override_policy=self.override_policy,
            task_offsets=lambda spec: stores.store_for(spec.connector, spec.connector_config),
            source_offsets_check=stores.check_connector_topic,
            metrics=self.metrics,
        )
        worker.on_reconfiguration_requested = self._reconfiguration_requested
        # No work before the plugins are there, as Kafka scans them before its herder starts
        # (connector files already waited in prepare()); REST calls that need plugins wait
        # for them, and /health says starting until then.
        self._await_bundled_plugins()
        if self._stop_requested():
            return
        if not self._start_connector_files():
            return  # the ones started so far are stopped by shutdown()
        self._ready.set()

    def _start_connector_files(self) -> bool:
        """Start the connectors of the command line, :data:`STARTUP_CONCURRENCY` at a time;
        False when a stop was requested meanwhile (those not begun are not started).

        Kafka's ConnectStandalone creates them one after another, each in milliseconds (a
        connector is a thread in its JVM); here each start spawns the connector's plugin
        host and its tasks' (an interpreter and the plugin's imports each, ~0.3 s of CPU),
        so 60 files one after another took over a minute until all ran. They begin in
        command-line order and each connector's start runs on its own operation thread
        (behind it, REST requests on that connector wait, as they did); which one finishes
        first is not defined, so neither is the order of their "started" log lines (Kafka
        documents none either). A connector that fails to start is FAILED in its status and
        does not hold up the others.
        """
        slots = threading.BoundedSemaphore(STARTUP_CONCURRENCY)
        starts: list[tuple[str, Future[None]]] = []
        for cf in self.connector_files:
            while not slots.acquire(timeout=STOP_CHECK_S):
                if self._stop_requested():
                    return False
            if self._stop_requested():
                slots.release()
                return False
            with self._lock:
                self._add(cf.name, cf.props, TargetState.STARTED)
            started = self._ops.submit(cf.name, "start", partial(self._start, cf.name))
            started.add_done_callback(lambda _: slots.release())
            starts.append((cf.name, started))
        for name, started in starts:
            while not self._stop_requested():
                try:
                    started.result(STOP_CHECK_S)
                except FutureTimeout:
                    continue
                except Exception as exc:  # noqa: BLE001 - the others run on
                    log.error("start of connector %s failed: %s", name, exc, exc_info=exc)
                break
        return not self._stop_requested()

    def flush_offsets(self) -> None:
        """Make the source offsets committed so far durable (the bootstrap calls this every
        ``offset.flush.interval.ms``; tasks' commits already put them)."""
        worker = self.worker
        if worker is None:
            return
        try:
            worker.offsets.flush()
        except (OSError, ConnectException) as exc:
            # As Kafka's offset committer: logged, and the offsets stay pending for the next
            # flush (a task's own wait for its write sees the failure too).
            log.error(
                "could not write the source offsets to %s: %s; will try again in "
                "offset.flush.interval.ms",
                self.config.get("offset.storage.file.filename"),
                exc,
            )

    def shutdown(self) -> None:
        self._ready.clear()
        worker = self.worker
        if worker is not None:
            log.info("stopping connectors")
            names = list(self._runtime)
            for name in names:
                self._reclaim_if_stuck(name)
            stopping = [
                self._ops.submit(name, "shutdown", partial(self._stop, name)) for name in names
            ]
            for future in stopping:
                try:
                    future.result(worker.graceful_timeout_s * 2 + RECLAIM_MARGIN_S)
                except Exception as exc:  # noqa: BLE001 - shutting down regardless
                    log.warning("a connector did not stop cleanly: %s", exc)
        with self._lock:
            if self.worker is not None:
                self.worker.stop()
                self.worker = None
            self.host_pool.close()
            self.resolver.close()
            self.metrics.close()

    # -- exactly-once source tasks (KIP-618) ---------------------------------------------------

    def _runs_exactly_once(self, name: str) -> bool:
        runtime = self._runtime.get(name)
        return (
            self.exactly_once_source == "enabled"
            and runtime is not None
            and runtime.kind == "source"
            and ConnectorOffsetStores.own_topic(self._config(name)) is not None
        )

    def _new_task_generation(self, name: str, tasks: int) -> None:
        if self._runs_exactly_once(name):
            self._generations[name] = self._fencing.new_generation(name, tasks)

    def _task_options(self, name: str, task: int) -> dict[str, Any]:
        if not self._runs_exactly_once(name):
            return {}
        config = self.resolver.resolve(self._config(name)).config
        admin = {
            k[len("admin.override.") :]: v
            for k, v in config.items()
            if k.startswith("admin.override.")
        }
        return {
            "exactly_once": True,
            "fencing": _LocalTaskFencing(
                self._fencing,
                name,
                self._generations.get(name, 0),
                {**self.client_props, **admin},
            ),
        }

    def task_states(self) -> dict[tuple[str, int], State]:
        assert self.worker is not None
        board = self.worker.status
        if isinstance(board, ScrubbingStatusStore):
            board = board.inner
        assert isinstance(board, StatusBoard)  # standalone keeps statuses in memory
        return {k: s.state for k, s in board.tasks.items()}

    # -- Herder: server ----------------------------------------------------------------------------

    def ready(self) -> bool:
        return self._ready.is_set()

    def health(self, timeout_s: float) -> Health:
        if not self.ready():
            return Health("starting", self._installing_bundled())
        if not self._lock.acquire(timeout=timeout_s):
            return Health("unhealthy")
        self._lock.release()
        return HEALTHY if self.worker is not None else Health("unhealthy")

    def server_info(self) -> dict[str, Any]:
        return {
            "version": self._version[0],
            "commit": self._version[1],
            "kafka_cluster_id": self._cluster_id,
        }
