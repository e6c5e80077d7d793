"""Shipping plugin environments to executors, on the driver (the worker process).

Each plugin environment a task on Spark needs (its connector's, and each converter's,
transform's and predicate's) travels once per Spark application as one archive registered
with ``SparkContext.addArchive``; Spark copies it to every executor that runs a task and
unpacks it there. What is in it depends on the environment's layout:

* a locked venv (every env ``copycat plugins install`` and REST installs build): its
  *wheelhouse* (:func:`registry.locks.export_wheelhouse`: every wheel of its lock, copied
  from the env's own ``copycat-wheels`` store, so no index is asked; the lock rewritten to
  point at them; the manifest), from which executors build the env offline;
* a zipapp: the ``.pyz``/``.zip`` itself; a ``pip --target`` directory: the directory.

The archive's file name carries the environment's content hash
(``copycat-env-<hash>.tar.gz``): Spark registers a file name once per application, and an env
changed in place (a new content hash) must travel under a new name. A venv made by hand without
a lock cannot be shipped (there is nothing to rebuild it from): the task fails naming it.

Archives are staged in one directory per Spark application that lives as long as the process:
Spark serves them from there to executors that start later (after an executor is lost, its
replacement fetches every archive added so far). The process removes it when it exits; a
process that cannot (``kill -9``, a crash) leaves it behind, so each directory names its owner
(pid and start time, in :data:`OWNER_FILE`) and a Shipper that starts removes those whose owner
is gone: crashes and restarts do not pile archives up in the temp directory.

Threads: :meth:`Shipper.ship` is called by task runner threads, concurrently; one lock makes
each environment ship once.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import Any

from core.runtime.spec import PluginRef, TaskSpec
from isolation.environment import LOCK_NAME, TARGET_DIR, VENV, ZIPAPP, PluginEnvironment
from plugin_api import ConfigException
from registry.locks import export_wheelhouse

__all__ = ["OWNER_FILE", "SHIPPED_MANIFEST", "STAGING_PREFIX", "Shipper", "archive_name"]

log = logging.getLogger("copycat.spark.shipping")

# Inside an archive: what it holds ({"layout": ..., "name": ...}), read on the executor.
SHIPPED_MANIFEST = "copycat-shipped.json"
# Where a zipapp or a --target directory sits inside its archive.
PAYLOAD_DIR = "payload"
# A staging directory's name starts with this; OWNER_FILE in it: "<pid> <start time>" of the
# process it belongs to.
STAGING_PREFIX = "copycat-spark-ship-"
OWNER_FILE = "owner"


def archive_name(env_hash: str) -> str:
    """The file name an environment travels under (its content hash makes it unique)."""
    return f"copycat-env-{env_hash}.tar.gz"


class Shipper:
    """Ships environments to one Spark application (see the module docstring)."""

    def __init__(self, spark_context: Any) -> None:
        self._sc = spark_context
        self._lock = threading.Lock()
        self._shipped: dict[str, str] = {}  # env hash -> archive name
        root = Path(tempfile.gettempdir())
        remove_orphans(root)
        self._staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=root))
        (self._staging / OWNER_FILE).write_text(_owner(os.getpid()))
        atexit.register(shutil.rmtree, self._staging, True)

    def ship(self, spec: TaskSpec, environment: Any) -> dict[str, str]:
        """Make sure every environment ``spec`` needs is registered with Spark; return
        ``{env hash: archive name}`` for the executor.

        ``environment`` maps a :class:`PluginRef` to its local :class:`PluginEnvironment`
        (the worker's plugin catalogue).

        Raises:
            ConfigException: an environment cannot be shipped (a venv without a lock), naming
                the config key that chose it.
        """
        wanted: list[tuple[str, PluginRef]] = [("connector.class", spec.plugin)]
        wanted += spec.pipeline.attachments()
        out: dict[str, str] = {}
        for key, plugin in wanted:
            with self._lock:
                name = self._shipped.get(plugin.env_hash)
                if name is None:
                    name = self._ship(key, plugin, environment(plugin))
                    self._shipped[plugin.env_hash] = name
            out[plugin.env_hash] = name
        return out

    def _ship(self, key: str, plugin: PluginRef, env: PluginEnvironment) -> str:
        name = archive_name(plugin.env_hash)
        work = self._staging / plugin.env_hash
        if work.exists():
            shutil.rmtree(work)
        work.mkdir()
        layout = env.layout
        if layout == VENV:
            if not (env.location / LOCK_NAME).exists():
                raise ConfigException(
                    key,
                    plugin.class_name,
                    f"plugin environment {env.location} has no lock ({LOCK_NAME}), so it cannot "
                    "be rebuilt on Spark executors; install it with `copycat plugins install` "
                    "(which locks it) to run it with task.runtime=spark",
                )
            export_wheelhouse(env, work)
            manifest: dict[str, Any] = {"layout": "wheelhouse"}
        elif layout in (ZIPAPP, TARGET_DIR):
            payload = work / PAYLOAD_DIR
            payload.mkdir()
            if layout == ZIPAPP:
                shutil.copy2(env.location, payload / env.location.name)
            else:
                shutil.copytree(env.location, payload / env.location.name, symlinks=True)
            manifest = {"layout": layout, "name": env.location.name}
        else:  # pragma: no cover - PluginEnvironment knows no other layout
            raise ConfigException(key, plugin.class_name, f"unknown plugin layout {layout}")
        manifest.update(distribution=plugin.distribution, env_hash=plugin.env_hash)
        (work / SHIPPED_MANIFEST).write_text(json.dumps(manifest, sort_keys=True))
        archive = self._staging / name
        with tarfile.open(archive, "w:gz") as tar:
            for child in sorted(work.iterdir()):
                tar.add(child, arcname=child.name)
        shutil.rmtree(work)
        self._sc.addArchive(str(archive))
        log.info(
            "shipped plugin env %s (%s, %s) to Spark as %s (%d bytes)",
            env.location,
            plugin.distribution,
            manifest["layout"],
            name,
            archive.stat().st_size,
        )
        return name


def remove_orphans(root: Path) -> list[Path]:
    """Remove this user's staging directories under ``root`` whose owning process is gone (it
    was killed before it could remove them); return them. A directory without an owner file
    (being made right now, or staged by an older Copycat) is left alone."""
    removed = []
    for staging in root.glob(f"{STAGING_PREFIX}*"):
        try:
            if not staging.is_dir() or staging.stat().st_uid != os.getuid():
                continue
            owner = (staging / OWNER_FILE).read_text()
        except OSError:
            continue
        if _owner_alive(owner):
            continue
        shutil.rmtree(staging, ignore_errors=True)
        log.info("removed %s, the plugin shipping directory of a process gone (%s)", staging, owner)
        removed.append(staging)
    return removed


def _start_time(pid: int) -> str | None:
    """The process's start time (clock ticks after boot, /proc/<pid>/stat), None if it is not
    running (or is a zombie) or the system has no /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def _owner(pid: int) -> str:
    return f"{pid} {_start_time(pid) or ''}".strip()


def _owner_alive(owner: str) -> bool:
    """Whether the process an owner file names still runs (the same process: a pid reused
    by another process has another start time)."""
    pid_text, _, started = owner.strip().partition(" ")
    try:
        pid = int(pid_text)
    except ValueError:
        return True  # not ours to judge
    if Path("/proc/self/stat").exists():
        current = _start_time(pid)
        return current is not None and (not started or current == started)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, owned by someone else
    return True
