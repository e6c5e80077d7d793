"""Bundled plugins (file connectors, converters, ...): installed into plugin.path like any other.

They are separate distributions under ``plugins/`` and are installed exactly like third-party
plugins (their own venv each, from wheels, with a lock), so that what ships with Copycat proves
the plugin API and the install path suffice.

REST must not wait for them to answer: building four wheels and four envs took ~9 s. So

* their wheels are built once into a *prebuilt wheelhouse* (``$COPYCAT_BUNDLED_WHEELHOUSE``,
  else a cache directory keyed by a hash of their sources, so an edited plugin is rebuilt);
* a worker whose plugin.path lacks them installs them on a background thread
  (:func:`install_bundled_in_background`), in parallel, while REST already answers; the live
  plugin catalogue lists each as soon as its env is renamed into place. REST calls that need
  plugins wait for the install, and the worker takes no work before it ends (a distributed
  worker joins its group after it, as Kafka Connect scans its plugins before joining):
  ``/health`` says starting meanwhile.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import re
import shutil
import threading
import time
import tomllib
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from packaging.utils import canonicalize_name

from registry.installer import PluginInstallError, find, install, run_uv

log = logging.getLogger("copycat.bundled")

BUNDLED_DIR_ENV = "COPYCAT_BUNDLED_PLUGINS"
WHEELHOUSE_ENV = "COPYCAT_BUNDLED_WHEELHOUSE"
# Installs run uv and a probe host each, mostly waiting on subprocesses; this many at once
# keeps the machine's two cores busy without making each install slower than serially.
PARALLEL_INSTALLS = 4
# Niceness of the background install of missing bundled plugins (0 = normal, 19 = lowest):
# low enough that REST start-up and running tasks win the CPU.
BACKGROUND_NICENESS = 10
# The lock file (hidden: scans skip it) a process installing the bundled plugins holds in the
# plugin.path dir it installs into.
INSTALL_LOCK_NAME = ".copycat-bundled-install.lock"
# Source files that do not change what a plugin's wheel holds.
_IGNORED_PARTS = frozenset({"tests", "__pycache__", ".pytest_cache", "dist", "build"})


def bundled_plugin_dirs() -> list[Path]:
    """Project directories of the bundled plugins (``plugins/*`` of a source checkout)."""
    root = Path(os.environ.get(BUNDLED_DIR_ENV) or Path(__file__).resolve().parents[1] / "plugins")
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if (p / "pyproject.toml").exists())


def project_version(project: Path) -> tuple[str, str]:
    """Name and version of a plugin project (static, or hatch's ``__version__`` file)."""
    data = tomllib.loads((project / "pyproject.toml").read_text())
    meta = data["project"]
    if "version" in meta:
        return meta["name"], meta["version"]
    version_file = project / data["tool"]["hatch"]["version"]["path"]
    found = re.search(r"__version__\s*=\s*[\"']([^\"']+)", version_file.read_text())
    if found is None:
        raise ValueError(f"no __version__ in {version_file}")
    return meta["name"], found.group(1)


def _sources_hash(projects: list[Path]) -> str:
    digest = hashlib.sha256()
    for project in projects:
        for path in sorted(project.rglob("*")):
            rel = path.relative_to(project)
            if path.is_dir() or _IGNORED_PARTS.intersection(rel.parts) or path.suffix == ".pyc":
                continue
            digest.update(str(rel).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _wheel_present(wheelhouse: Path, name: str, version: str) -> bool:
    prefix = f"{canonicalize_name(name).replace('-', '_')}-{version}-"
    return any(w.name.startswith(prefix) for w in wheelhouse.glob("*.whl"))


def _cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "copycat"


def _build_into(wheelhouse: Path, projects: list[Path]) -> None:
    """``uv build`` each project's wheel into ``wheelhouse`` (private dir, then renamed in)."""
    wheelhouse.mkdir(parents=True, exist_ok=True)
    out = wheelhouse / f".build-{uuid.uuid4().hex[:12]}"
    try:

        def build(project: Path) -> None:
            run_uv(
                ["build", "--wheel", "--quiet", "--out-dir", str(out), str(project)],
                f"building the wheel of {project}",
            )

        with ThreadPoolExecutor(PARALLEL_INSTALLS, thread_name_prefix="wheel-build") as pool:
            list(pool.map(build, projects))
        for wheel in out.glob("*.whl"):
            wheel.replace(wheelhouse / wheel.name)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def bundled_wheelhouse(projects: list[Path] | None = None) -> Path:
    """The directory of prebuilt bundled wheels, building the missing ones (``uv build``).

    Safe to call from several processes at once: a build goes to a private directory that is
    renamed into place.
    """
    projects = bundled_plugin_dirs() if projects is None else projects
    configured = os.environ.get(WHEELHOUSE_ENV)
    if configured:
        wheelhouse = Path(configured)
    else:
        wheelhouse = _cache_root() / "bundled" / _sources_hash(projects)
    missing = [p for p in projects if not _wheel_present(wheelhouse, *project_version(p))]
    if missing:
        _build_into(wheelhouse, missing)
    return wheelhouse


def prebuilt_wheel(project: Path) -> Path:
    """One project's wheel, built once per version of its sources into the cache."""
    wheelhouse = _cache_root() / "wheels" / _sources_hash([project])
    name, version = project_version(project)
    if not _wheel_present(wheelhouse, name, version):
        _build_into(wheelhouse, [project])
    prefix = f"{canonicalize_name(name).replace('-', '_')}-{version}-"
    return next(w for w in wheelhouse.glob("*.whl") if w.name.startswith(prefix))


def _paths(plugin_path: Path | Sequence[Path]) -> list[Path]:
    return [plugin_path] if isinstance(plugin_path, Path) else list(plugin_path)


def missing_bundled(plugin_path: Path | Sequence[Path]) -> list[tuple[str, str]]:
    """(name, version) of each bundled plugin installed in none of the plugin.path dirs."""
    wanted = [project_version(p) for p in bundled_plugin_dirs()]
    return [(n, v) for n, v in wanted if not find(_paths(plugin_path), f"{n}=={v}")]


@contextlib.contextmanager
def _install_lock(target: Path) -> Iterator[None]:
    """Hold the bundled-install lock of plugin.path dir ``target`` (an exclusive ``flock`` on a
    hidden file there, which plugin scans skip): the workers of a group started together on
    one plugin.path install the bundled plugins one at a time, the later ones finding them
    installed, instead of each building them and all but the first failing at the rename."""
    target.mkdir(parents=True, exist_ok=True)
    with open(target / INSTALL_LOCK_NAME, "a") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("waiting for another process installing the bundled plugins into %s", target)
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def ensure_bundled_plugins(plugin_path: Path | Sequence[Path]) -> list[Path]:
    """Install each bundled plugin found in none of the plugin.path dirs into the first (in
    parallel), from the prebuilt wheelhouse; dependencies come from the default index or uv's
    cache. Safe to run in several processes at once (:func:`_install_lock`; where the lock does
    not reach, e.g. a plugin.path shared over a network filesystem, a version another process
    installed meanwhile counts as installed, not as a failure)."""
    if not missing_bundled(plugin_path):
        return []
    target = _paths(plugin_path)[0]
    with _install_lock(target):
        missing = missing_bundled(plugin_path)  # another process may have installed them
        if not missing:
            log.info("the bundled plugins were installed into %s by another process", target)
            return []
        wheelhouse = bundled_wheelhouse()

        def one(name: str, version: str) -> Path:
            log.info("installing bundled plugin %s %s into %s", name, version, target)
            try:
                return install(f"{name}=={version}", target, find_links=[str(wheelhouse)]).location
            except (PluginInstallError, OSError):
                there = find(_paths(plugin_path), f"{name}=={version}")
                if not there:
                    raise
                log.info("bundled plugin %s %s was installed by another process", name, version)
                return there[0].location

        with ThreadPoolExecutor(PARALLEL_INSTALLS, thread_name_prefix="bundled-install") as pool:
            futures = [pool.submit(one, n, v) for n, v in missing]
            return [f.result() for f in futures]


def install_bundled_in_background(plugin_path: Path | Sequence[Path]) -> threading.Thread | None:
    """Start installing missing bundled plugins on a daemon thread; None if none is missing.

    Called by the herder at start-up; a failure is logged (the worker keeps running with what
    is installed), and ``join()`` on the thread waits for the installs to finish.
    """
    if not missing_bundled(plugin_path):
        return None

    def run() -> None:
        try:
            # Linux nice values are per thread and inherited by the processes a thread starts
            # (uv, probe hosts): the worker's own start-up gets the CPU first.
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICENESS)
        except (AttributeError, OSError):
            pass
        started = time.monotonic()
        try:
            installed = ensure_bundled_plugins(plugin_path)
            log.info(
                "installed the bundled plugins (%d) in %.1f s",
                len(installed),
                time.monotonic() - started,
            )
        except Exception as exc:  # noqa: BLE001 - the worker runs on without them
            log.error("installing the bundled plugins into %s failed: %s", plugin_path, exc)

    thread = threading.Thread(target=run, name="bundled-plugins", daemon=True)
    thread.start()
    return thread
