"""Standalone mode (``copycat standalone worker.properties connector.properties ...``).

Everything named on the command line is read and validated before anything starts: a missing
required key, an unknown connector class or a malformed line fails fast with a message naming
the file and key, and no task runs. Then the herder starts the embedded dev broker when no
``bootstrap.servers`` is configured, the connectors and their tasks, flushes source offsets to
``offset.storage.file.filename`` every ``offset.flush.interval.ms`` and on shutdown, and stops
gracefully on SIGTERM/SIGINT.
"""

from __future__ import annotations

import logging
import signal
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plugin_api import ConfigException, ConnectException

from core.bundled import ensure_bundled_plugins
from core.connector_config import validate_connector_config
from core.devbroker import DevBroker
from core.offsets import FileOffsetStore
from core.plugins import PluginCatalogue
from core.properties import load_connector_file, load_properties
from core.status import State
from core.worker import Worker
from core.worker_config import WorkerConfig

log = logging.getLogger("copycat.standalone")


@dataclass(frozen=True)
class ConnectorFile:
    path: Path
    props: dict[str, str]

    @property
    def name(self) -> str:
        return self.props["name"]


def _format_errors(source: str, infos: Mapping[str, Any]) -> list[str]:
    errors = []
    for entry in infos.get("configs", []):
        for message in entry["value"]["errors"]:
            errors.append(f"{source}: {entry['value']['name']}: {message}")
    return errors


class StandaloneHerder:
    """Runs the connectors of one standalone worker."""

    def __init__(self, worker_file: Path, connector_files: Sequence[Path]) -> None:
        self.worker_file = worker_file
        self.config = WorkerConfig.from_properties(load_properties(worker_file), str(worker_file))
        self.connector_files = [ConnectorFile(p, load_connector_file(p)) for p in connector_files]
        self.plugin_paths = [Path(p) for p in self.config.plugin_path or ["plugins.d"]]
        self.broker: DevBroker | None = None
        self.worker: Worker | None = None
        self.stopped = threading.Event()

    def prepare(self) -> PluginCatalogue:
        """Install bundled plugins if needed, and validate every connector file before start."""
        ensure_bundled_plugins(self.plugin_paths[0])
        catalogue = PluginCatalogue.scan(self.plugin_paths)
        names: dict[str, Path] = {}
        errors: list[str] = []
        for cf in self.connector_files:
            if not cf.props.get("name"):
                errors.append(f"{cf.path}: name: Missing required configuration \"name\" "
                              "which has no default value.")
                continue
            if cf.name in names:
                errors.append(f"{cf.path}: connector {cf.name!r} is also defined in "
                              f"{names[cf.name]}")
            names[cf.name] = cf.path
            try:
                plugin = catalogue.resolve("connector", cf.props.get("connector.class", ""),
                                           cf.props.get("connector.plugin.version"))
            except ConfigException as exc:
                errors.append(f"{cf.path}: {exc}")
                continue
            for value in validate_connector_config(cf.props, plugin.kind == "sink"):
                errors += [f"{cf.path}: {value.name}: {m}" for m in value.error_messages]
            host = catalogue.environment(plugin).start_host(f"validate:{cf.name}")
            try:
                infos = host.request("validate", host.new_object(plugin.target), cf.props)
            finally:
                host.close()
            errors += _format_errors(str(cf.path), infos)
        if errors:
            raise ConfigException("invalid connector configuration, nothing was started:\n  "
                                  + "\n  ".join(errors))
        return catalogue

    def start(self) -> None:
        catalogue = self.prepare()
        servers = self.config.bootstrap_servers
        bootstrap = ",".join(servers) if servers else None
        if not bootstrap:
            self.broker = DevBroker()
            self.broker.start()
            bootstrap = self.broker.bootstrap_servers
            log.warning("no bootstrap.servers configured: started the embedded dev broker at %s "
                        "(in-memory, for development only)", bootstrap)
        offsets_file = self.config.offset_storage_file_filename
        if not offsets_file:
            raise ConfigException("offset.storage.file.filename", None,
                                  f"standalone mode needs an offsets file ({self.worker_file})")
        client = dict(self.config.client_config())
        client["bootstrap.servers"] = bootstrap
        self.worker = Worker(f"standalone-{uuid.uuid4().hex[:8]}", self.config.originals_strings(),
                             catalogue, FileOffsetStore(Path(offsets_file)), client_props=client)
        for cf in self.connector_files:
            self.worker.start_connector(cf.name, cf.props)
            for task_id, task_props in enumerate(self.worker.task_configs(cf.name)):
                self.worker.start_task(cf.name, task_id, task_props)

    def run(self) -> int:
        """Start, then serve until SIGTERM/SIGINT; returns the process exit code."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stopped.set())
        try:
            self.start()
            assert self.worker is not None
            interval = self.worker.commit_interval_s
            while not self.stopped.wait(min(interval, 1.0)):
                self.worker.offsets.flush()
            return 0
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        if self.worker is not None:
            log.info("stopping connectors")
            self.worker.stop()
            self.worker = None
        if self.broker is not None:
            self.broker.stop()
            self.broker = None

    def task_states(self) -> dict[tuple[str, int], State]:
        assert self.worker is not None
        return {k: s.state for k, s in self.worker.status.tasks.items()}


def run_standalone(worker_file: str, connector_files: Sequence[str]) -> int:
    try:
        herder = StandaloneHerder(Path(worker_file), [Path(p) for p in connector_files])
    except (OSError, ConnectException) as exc:
        raise ConnectException(str(exc)) from exc
    return herder.run()
