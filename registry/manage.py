"""What ``copycat plugins list/info/upgrade/remove`` need beyond install and remove.

Everything here reads plugin.path without importing plugin code (manifests, dist-info
metadata, locks); only :func:`latest_version` talks to an index, through uv. Called from the
CLI and from REST admin threads. Which envs are in use is read from the processes running
(/proc), not from a worker: the CLI has no view of a worker's connectors, which may even run
on another machine sharing plugin.path.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from isolation.environment import PluginEnvironment, PluginEnvironmentError
from plugin_api import ConnectException
from registry.idle_hosts import retire
from registry.installer import (
    PluginInstallError,
    PluginNotFoundError,
    find,
    incompatible_api,
    install,
    primary_name,
    remove,
    run_uv,
    scan,
)
from registry.locks import LOCK_NAME, Lock, LockError

log = logging.getLogger("copycat.registry")

# Where Linux lists processes. Where there is none, no env is seen in use: removals go ahead.
PROC = Path("/proc")
# What a plugin host carries in its environment (isolation/host.py): whom it runs.
_HOST_NAME = b"COPYCAT_PLUGIN="


class PluginInUseError(ConnectException):
    """A plugin env was not removed: live processes (plugin hosts) run from it."""


@dataclass(frozen=True)
class HostProcess:
    """A live process running from a plugin env, and whom it runs when its environment says
    (a host's ``COPYCAT_PLUGIN``: ``<connector>:connector``, ``<connector>-<task>``, ...)."""

    pid: int
    runs: str | None

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.runs})" if self.runs else f"pid {self.pid}"


def processes_using(env: PluginEnvironment, *, retire_idle: bool = False) -> list[HostProcess]:
    """Live processes whose executable or argv[0] lies under ``env``: a venv's plugin hosts run
    as ``<env>/bin/python``. Read from /proc, so only on Linux (elsewhere: none), and only
    venvs: the hosts of a pip --target dir or a zipapp run on the runtime's interpreter.

    With ``retire_idle`` (removing ``env``), a worker's idle warm host (kept after a
    validation, :mod:`registry.idle_hosts`) is taken from its pool and stopped instead of
    counted: no connector uses it."""
    if env.attached or not PROC.is_dir():
        return []
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv0 = os.fsdecode((entry / "cmdline").read_bytes().split(b"\0", 1)[0])
            if argv0 and not os.path.isabs(argv0):
                argv0 = os.path.join(os.readlink(entry / "cwd"), argv0)
        except OSError:
            continue  # gone, or not ours to read
        try:
            exe = os.readlink(entry / "exe")
        except OSError:
            exe = ""
        if not any(
            p and Path(os.path.normpath(p)).is_relative_to(env.location) for p in (argv0, exe)
        ):
            continue
        if retire_idle and retire(env.location, int(entry.name)):
            log.info("stopped idle plugin host pid %s of %s", entry.name, env.location)
            continue
        runs = None
        try:
            for item in (entry / "environ").read_bytes().split(b"\0"):
                if item.startswith(_HOST_NAME):
                    runs = os.fsdecode(item[len(_HOST_NAME) :])
        except OSError:
            pass
        found.append(HostProcess(int(entry.name), runs))
    return found


def remove_unused(
    plugin_paths: Sequence[Path], spec: str, *, force: bool = False
) -> list[PluginEnvironment]:
    """:func:`~registry.installer.remove`, unless live processes run from a matching env.

    Raises:
        PluginNotFoundError: nothing matches ``spec``.
        PluginInUseError: (without ``force``) naming each env in use and its processes;
            nothing is removed.
    """
    if not force:
        busy = {env: processes_using(env, retire_idle=True) for env in find(plugin_paths, spec)}
        in_use = "; ".join(
            f"{env.location} by {', '.join(map(str, procs))}"
            for env, procs in busy.items()
            if procs
        )
        if in_use:
            raise PluginInUseError(
                f"cannot remove {spec}: in use by live plugin hosts: {in_use}; stop the "
                "connectors using it (or move them to another version) first, or use --force"
            )
    return remove(plugin_paths, spec)


def indistinct(
    plugin_paths: Sequence[Path], env: PluginEnvironment
) -> dict[PluginEnvironment, list[str]]:
    """The other installed versions of ``env``'s plugin whose components report the same
    versions as ``env``'s (``"<class> <version>"`` each): a release whose ``version()`` was
    not bumped. A worker cannot tell them apart (``connector.plugin.version`` cannot choose
    one, statuses show one version for both) and uses the newest package (core/plugins.py)."""
    row = describe(env)
    mine = {(p["class"], p["version"]) for p in row["plugins"]}
    out = {}
    for other in find(plugin_paths, row["name"]):
        if other.location.resolve() == env.location.resolve():
            continue
        theirs = {(p["class"], p["version"]) for p in describe(other)["plugins"]}
        same = sorted(f"{c} {v}" for c, v in mine & theirs)
        if same:
            out[other] = same
    return out


def made_by(env: PluginEnvironment, manifest: dict[str, Any]) -> str:
    """How a location was made, as ``plugins list`` shows it: ``copycat``, ``pip venv``,
    ``uv venv``, ``pip --target``, ``zipapp``, ..."""
    if env.is_zip:
        return "zipapp"
    if manifest.get("installer") == "copycat":
        return "copycat"
    primary = primary_name(manifest)
    tool = env.installer_of(primary) if primary else None
    if env.is_target:
        return f"{tool or 'pip'} --target"
    return f"{tool or 'unknown'} venv"


def describe(env: PluginEnvironment) -> dict[str, Any]:
    """One row of ``plugins list``: the location, what made it, its lock and its plugins, and
    why it is ``broken`` (None if it is not; a broken location is described from the manifest
    it last had, and the worker offers none of its plugins), and why it is ``incompatible``
    (its ``copycat-plugin-api`` range excludes this runtime's: the worker offers none of its
    plugins either; described from its metadata and any manifest it has, never probed)."""
    broken = env.broken()
    incompatible = incompatible_api(env) if broken is None else None
    manifest = None
    if broken is None and incompatible is None:
        try:
            manifest = env.current_manifest()
        except PluginEnvironmentError as exc:
            broken = str(exc)
    if manifest is None:
        manifest = env.read_manifest() or {}
    primary = primary_name(manifest)
    dists = manifest.get("distributions", {})
    if incompatible is not None and not primary:
        # Never probed: named after the distribution declaring its entry points.
        declaring = sorted({(ep.distribution, ep.version) for ep in env.entry_points()})
        if declaring:
            primary, dists = declaring[0][0], dict(declaring)
    return {
        "location": str(env.location),
        "name": primary or env.location.name,
        "version": dists.get(primary, "") if primary else "",
        "made_by": made_by(env, {**manifest, "primary": primary} if primary else manifest),
        "layout": env.layout,
        "locked": env.locked,
        "index_url": manifest.get("index_url"),
        "plugins": [
            {
                "class": p["class_name"],
                "name": p["name"],
                "type": p["kind"],
                "version": p["version"],
                "aliases": list(p.get("aliases", [])),
            }
            for p in manifest.get("plugins", [])
        ],
        "broken": broken,
        "incompatible": incompatible,
    }


def info(plugin_paths: Sequence[Path], spec: str) -> list[dict[str, Any]]:
    """Everything known about the installed versions matching ``spec``: components with their
    config definitions, licence and summary, where it came from, its lock."""
    hits = find(plugin_paths, spec)
    if not hits:
        raise PluginNotFoundError(f"no installed plugin matches {spec!r}")
    out = []
    for env in hits:
        row = describe(env)
        manifest = env.read_manifest() or {}  # made current by describe() unless broken
        row["plugins"] = [
            {**p, "config": entry.get("config", [])}
            for p, entry in zip(row["plugins"], manifest.get("plugins", []), strict=True)
        ]
        row["source"] = manifest.get("source")
        row["distributions"] = manifest.get("distributions", {})
        row.update(_metadata(env, row["name"]))
        if row["locked"]:
            try:
                lock = Lock.read(env.location / LOCK_NAME)
                row["lock"] = {
                    "interpreter": lock.interpreter,
                    "packages": [
                        {
                            "name": p.name,
                            "version": p.version,
                            "sha256": [
                                f.sha256 for f in (*p.wheels, *filter(None, [p.archive, p.sdist]))
                            ],
                        }
                        for p in lock.packages
                    ],
                }
            except LockError as exc:
                row["lock"] = {"error": str(exc)}
        out.append(row)
    return out


def _metadata(env: PluginEnvironment, name: str) -> dict[str, str]:
    import importlib.metadata

    for dist in importlib.metadata.distributions(path=[str(env.import_path)]):
        if canonicalize_name(dist.metadata["Name"] or "") == canonicalize_name(name):
            meta = dist.metadata

            def first(key: str, meta: Any = meta) -> str:
                return str((meta.get_all(key) or [""])[0])

            licence = first("License-Expression") or first("License")
            if not licence:
                for classifier in meta.get_all("Classifier") or []:
                    if classifier.startswith("License ::"):
                        licence = classifier.rsplit("::", 1)[-1].strip()
            return {"summary": first("Summary"), "licence": licence}
    return {"summary": "", "licence": ""}


def latest_version(
    name: str, *, index_url: str | None = None, find_links: Sequence[str] = ()
) -> str | None:
    """The newest version of ``name`` an index offers (uv resolves it), or None."""
    args = ["pip", "compile", "--quiet", "--no-header", "--no-deps", "--python", sys.executable]
    for link in find_links:
        args += ["--find-links", link]
    if index_url:
        args += ["--index-url", index_url]
    try:
        out = run_uv([*args, "-"], f"looking up {name}", stdin=name + "\n")
    except PluginInstallError:
        return None
    for line in out.splitlines():
        left, _, version = line.partition("==")
        if canonicalize_name(left.strip()) == canonicalize_name(name):
            return version.split()[0].strip()
    return None


def _newer(a: str, b: str) -> bool:
    try:
        return Version(a) > Version(b)
    except InvalidVersion:
        return False


def outdated(
    plugin_paths: Sequence[Path], *, index_url: str | None = None, find_links: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Installed plugins for which the index (given, or the one each was installed from) has
    a newer version: ``{"name", "installed", "latest", "location"}``."""
    newest: dict[str, str] = {}
    rows = [describe(env) for env in scan(plugin_paths)]
    for row in rows:
        key = canonicalize_name(row["name"])
        if row["version"] and (key not in newest or _newer(row["version"], newest[key])):
            newest[key] = row["version"]
    out = []
    seen = set()
    for row in rows:
        key = canonicalize_name(row["name"])
        if key in seen or not row["version"] or row["version"] != newest[key]:
            continue
        seen.add(key)
        latest = latest_version(
            row["name"], index_url=index_url or row["index_url"], find_links=find_links
        )
        if latest and _newer(latest, row["version"]):
            out.append(
                {
                    "name": row["name"],
                    "installed": row["version"],
                    "latest": latest,
                    "location": row["location"],
                }
            )
    return out


def upgrade(
    plugin_paths: Sequence[Path],
    name: str,
    *,
    index_url: str | None = None,
    find_links: Sequence[str] = (),
    keep: bool = False,
) -> tuple[
    PluginEnvironment | None, list[PluginEnvironment], dict[PluginEnvironment, list[HostProcess]]
]:
    """Install the newest version of an installed plugin beside the others and, unless
    ``keep``, remove the older versions, except those live processes run from
    (:func:`processes_using`), which are kept. Returns (new env or None if already newest,
    removed, kept because in use with their processes).

    Raises:
        PluginNotFoundError: ``name`` is not installed.
        PluginInstallError: the new version cannot be installed (the old ones stay).
    """
    envs = find(plugin_paths, name)
    installed = [describe(env) for env in envs]
    if not installed:
        raise PluginNotFoundError(f"no installed plugin matches {name!r}")
    current = max(installed, key=lambda r: _sort_key(r["version"]))
    latest = latest_version(
        current["name"], index_url=index_url or current["index_url"], find_links=find_links
    )
    if latest is None or not _newer(latest, current["version"]):
        return None, [], {}
    env = install(
        f"{current['name']}=={latest}",
        plugin_paths[0],
        index_url=index_url or current["index_url"],
        find_links=find_links,
    )
    removed: list[PluginEnvironment] = []
    in_use: dict[PluginEnvironment, list[HostProcess]] = {}
    if not keep:
        for old, row in zip(envs, installed, strict=True):
            procs = processes_using(old, retire_idle=True)
            if procs:
                in_use[old] = procs
            else:
                removed += remove(plugin_paths, f"{row['name']}=={row['version']}")
    return env, removed, in_use


def _sort_key(version: str) -> tuple[int, Any]:
    try:
        return (1, Version(version))
    except InvalidVersion:
        return (0, version)
