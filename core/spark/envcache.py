"""Plugin environments on an executor: built once from the shipped archives, then hosts.

Runs inside an executor's Python worker (``PYSPARK_PYTHON``), which never imports plugin code:
it finds the archive Spark unpacked for an environment (``SparkFiles.get``), builds the env
offline from its wheelhouse into a cache directory keyed by the environment's content hash
(:func:`registry.locks.build_env_offline`: uv, no network, hashes checked), and starts plugin
hosts from it exactly as the local worker starts them from plugin.path. A zipapp or a
``--target`` directory is used where Spark unpacked it.

The cache is per executor by default (inside its SparkFiles root), or a directory the operator
names (``task.spark.env.cache.dir``), which several executors on one machine may share: each
build holds an exclusive ``flock`` on ``<hash>.lock`` and renames the finished env into place,
so concurrent tasks (or executors) wait for one build and then share it, and a build
interrupted by a killed executor leaves only its staging directory behind.

Threads: a task's thread calls :class:`ExecutorHosts`; hosts are started by isolation's
launcher thread, so they die with this Python worker (``PR_SET_PDEATHSIG``), which dies with its
executor.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from core.runtime.spec import PluginRef
from core.spark.shipping import PAYLOAD_DIR, SHIPPED_MANIFEST
from isolation import HostClient
from isolation.environment import PluginEnvironment, site_packages
from plugin_api import ConnectException
from registry.locks import build_env_offline

__all__ = ["ENV_CACHE_DIRNAME", "ExecutorHosts", "default_cache_dir"]

log = logging.getLogger("copycat.spark.executor")

# Under the executor's SparkFiles root: where envs are built when no cache dir is configured.
ENV_CACHE_DIRNAME = "copycat-envs"


def default_cache_dir() -> Path:
    """The executor's own env cache: inside its SparkFiles root (its working directory on a
    standalone or YARN executor), so it goes away with the executor."""
    from pyspark import SparkFiles

    return Path(SparkFiles.getRootDirectory()).resolve() / ENV_CACHE_DIRNAME


def _shipped(archive: str) -> Path:
    from pyspark import SparkFiles

    path = Path(SparkFiles.get(archive)).resolve()
    if not (path / SHIPPED_MANIFEST).exists():
        raise ConnectException(
            f"the shipped plugin archive {archive} is not unpacked at {path} on this executor"
        )
    return path


class ExecutorHosts:
    """The executor's :class:`core.runtime.services.HostLauncher` (see the module docstring).

    ``archives`` maps each environment's content hash to the archive it was shipped as;
    ``locate`` finds an archive's unpacked directory (SparkFiles on a real executor).
    """

    def __init__(
        self,
        archives: Mapping[str, str],
        cache_dir: Path,
        *,
        locate: Callable[[str], Path] = _shipped,
    ) -> None:
        self.archives = dict(archives)
        self.cache_dir = cache_dir
        self._locate = locate
        self._envs: dict[str, PluginEnvironment] = {}
        self.started: list[HostClient] = []  # every host started, for status and cleanup
        self.built: dict[str, float] = {}  # env hash -> seconds this task spent building it

    def environment(self, plugin: PluginRef) -> PluginEnvironment:
        """The env of ``plugin`` on this executor, built on first use."""
        env = self._envs.get(plugin.env_hash)
        if env is None:
            archive = self.archives.get(plugin.env_hash)
            if archive is None:
                raise ConnectException(
                    f"{plugin.distribution} (env {plugin.env_hash}) was not shipped with this task"
                )
            env = self._prepare(plugin, self._locate(archive))
            self._envs[plugin.env_hash] = env
        return env

    def _prepare(self, plugin: PluginRef, unpacked: Path) -> PluginEnvironment:
        manifest = json.loads((unpacked / SHIPPED_MANIFEST).read_text())
        if manifest["layout"] != "wheelhouse":  # zipapp, --target dir: usable where unpacked
            return PluginEnvironment(unpacked / PAYLOAD_DIR / manifest["name"])
        dest = self.cache_dir / plugin.env_hash
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        lock_path = self.cache_dir / f"{plugin.env_hash}.lock"
        with open(lock_path, "a+b") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # one build per hash; others wait here
            if not dest.exists():
                began = time.monotonic()
                build_env_offline(unpacked, dest)
                self.built[plugin.env_hash] = time.monotonic() - began
                log.info(
                    "built plugin env %s (%s) from %s in %.1f s",
                    dest,
                    plugin.distribution,
                    unpacked,
                    self.built[plugin.env_hash],
                )
        return PluginEnvironment(dest)

    # -- HostLauncher --------------------------------------------------------------------------

    def start(
        self,
        plugin: PluginRef,
        name: str,
        *,
        callbacks: Mapping[str, Callable[..., Any]],
        call_timeout_s: float,
        memory_limit_bytes: int,
        parent_first: tuple[str, ...] = (),
    ) -> HostClient:
        host = self.environment(plugin).start_host(
            name,
            callbacks=callbacks,
            call_timeout_s=call_timeout_s,
            memory_limit_bytes=memory_limit_bytes,
            parent_first=parent_first,
        )
        self.started.append(host)
        return host

    def import_path(self, plugin: PluginRef) -> str:
        return str(self.environment(plugin).import_path)

    # -- diagnostics -----------------------------------------------------------------------------

    def top_level_modules(self) -> set[str]:
        """Top-level module names the environments of this task ship (to check that this
        process never imported any of them)."""
        names: set[str] = set()
        for env in self._envs.values():
            root = env.location if env.attached else site_packages(env.location)
            if env.is_zip:
                continue  # a zipapp's modules are not on this process's path either way
            for child in root.iterdir():
                stem = child.name.split(".", 1)[0] if child.is_file() else child.name
                if child.name.endswith((".dist-info", ".pth")) or stem.startswith(("_", ".")):
                    continue
                if child.is_dir() or child.suffix in (".py", ".so"):
                    names.add(stem)
        return names

    def pids(self) -> list[int]:
        return [h.pid for h in self.started if h.pid is not None and h.alive]


def resolve_cache_dir(configured: str | None) -> Path:
    """The configured cache dir (``~`` expanded), else the executor's own."""
    if configured:
        return Path(os.path.expanduser(configured)).resolve()
    return default_cache_dir()
