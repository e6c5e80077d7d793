"""Plugin environments: one venv (or one zipapp) per plugin under ``plugin.path``.

A plugin *location* is a child of a ``plugin.path`` directory, as in Kafka Connect:

* a venv directory (``pyvenv.cfg``) built by :mod:`registry` with uv, or by the operator with
  plain ``python -m venv`` + ``pip install`` (or ``uv venv`` + ``uv pip install``), holding the
  plugin distribution and its dependencies;
* a *target directory*: what ``pip install --target DIR PKG`` leaves (distributions and their
  ``.dist-info`` directly in ``DIR``, no interpreter), attached child-first to a host started on
  the runtime's base interpreter with no site-packages;
* a ``.pyz``/``.zip`` zipapp of a pure-Python plugin (with its ``.dist-info``), loaded child-first
  through zipimport into a host started with no site-packages at all.

Each location gets a ``copycat-plugin.json`` manifest (written at install, or on first scan).
The manifest keeps a *fingerprint* of the location's installed distributions, so an env that
someone changes with pip after the manifest was written is probed again on the next scan.

The catalogue (which connectors, converters, transforms, predicates and config providers a
location offers) comes from entry point metadata read with importlib.metadata: plugin code is
never imported into the worker. Whether a connector is a source or a sink, and each plugin's
``version()``, can only be known by importing it, so that is asked of a plugin host once (at
install, or on first scan) and kept in the manifest.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from isolation._hostside.copycat_loader import top_level_names
from isolation.client import HostClient
from isolation.host import PluginHost
from plugin_api import ConnectException

MANIFEST_NAME = "copycat-plugin.json"
# The lock of an environment installed from an index (what was installed, with hashes).
LOCK_NAME = "pylock.toml"
ZIP_SUFFIXES = (".pyz", ".zip")
# Location layouts, as ``copycat plugins list`` shows them.
VENV, TARGET_DIR, ZIPAPP = "venv", "target", "zipapp"

# Entry point group -> plugin kind (connector kinds are refined to source/sink by the probe).
ENTRY_POINT_GROUPS: dict[str, str] = {
    "copycat.connectors": "connector",
    "copycat.converters": "converter",
    "copycat.header_converters": "header_converter",
    "copycat.transforms": "transformation",
    "copycat.predicates": "predicate",
    "copycat.config_providers": "config_provider",
}


@dataclass(frozen=True)
class PluginDescriptor:
    """One class a plugin location offers, as the worker and REST API see it."""

    kind: str  # source | sink | converter | header_converter | transformation | predicate | ...
    name: str  # entry point name, e.g. "FileStreamSourceConnector"
    target: str  # entry point value, e.g. "copycat_file.source:FileStreamSourceConnector"
    class_name: str  # dotted, e.g. "copycat_file.source.FileStreamSourceConnector"
    version: str  # what the plugin's version() returns
    distribution: str  # "copycat-file==0.1.0"
    location: str  # the venv directory or zipapp path
    aliases: tuple[str, ...] = ()  # extra names, e.g. Kafka class names it stands in for


_DESCRIPTOR_FIELDS = frozenset(f.name for f in fields(PluginDescriptor))


@dataclass(frozen=True)
class EntryPointInfo:
    group: str
    name: str
    value: str
    distribution: str
    version: str


class PluginEnvironmentError(ConnectException):
    """A plugin location is unusable (broken venv, unreadable manifest, failing probe).

    ``traces``: the stack traces of the plugin code that failed (a probe's entry points that
    did not load), for the worker's log; the message names each one's step and file:line."""

    def __init__(self, message: str, traces: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.traces = list(traces)


def is_target_dir(path: Path) -> bool:
    """Whether ``path`` is a ``pip install --target`` directory (dist-infos, no pyvenv.cfg)."""
    if not path.is_dir() or (path / "pyvenv.cfg").exists():
        return False
    return any(child.name.endswith(".dist-info") for child in path.iterdir())


def site_packages(venv: Path) -> Path:
    candidates = sorted(venv.glob("lib/python3*/site-packages"))
    if not candidates:
        raise PluginEnvironmentError(f"{venv} is not a Python venv: no lib/python3*/site-packages")
    return candidates[0]


class PluginEnvironment:
    """A plugin location under plugin.path: a venv or a zipapp."""

    def __init__(self, location: Path) -> None:
        self.location = location.resolve()
        self.is_zip = self.location.suffix in ZIP_SUFFIXES
        self.is_target = not self.is_zip and is_target_dir(self.location)
        if not self.is_zip and not self.is_target and not (self.location / "pyvenv.cfg").exists():
            raise PluginEnvironmentError(
                f"{location} is neither a venv, a pip --target directory nor a "
                f"{'/'.join(ZIP_SUFFIXES)} file"
            )

    @property
    def layout(self) -> str:
        """``venv``, ``target`` (pip --target directory) or ``zipapp``."""
        return ZIPAPP if self.is_zip else TARGET_DIR if self.is_target else VENV

    @property
    def attached(self) -> bool:
        """Whether hosts run on the base interpreter with this location attached child-first."""
        return self.is_zip or self.is_target

    def __repr__(self) -> str:
        return f"PluginEnvironment({str(self.location)!r})"

    @property
    def locked(self) -> bool:
        """Whether the location was installed from a lock (by Copycat), not by plain pip."""
        return not self.is_zip and (self.location / LOCK_NAME).exists()

    @property
    def import_path(self) -> Path:
        """What holds the plugin's modules: the venv's site-packages, or the zip/dir itself."""
        return self.location if self.attached else site_packages(self.location)

    @property
    def python(self) -> Path:
        """The interpreter hosts for this location run on."""
        if self.attached:
            return Path(getattr(sys, "_base_executable", sys.executable))
        return self.location / "bin" / "python"

    def broken(self) -> str | None:
        """Why no host can start here, as far as one stat() tells: a venv whose interpreter is
        gone (deleted, or a link to a Python that was removed). None if nothing is known to be
        wrong. A cached manifest cannot tell: it is trusted while the installed distributions
        are unchanged."""
        if self.attached or self.python.exists():
            return None
        return f"its interpreter {self.python} no longer exists"

    @property
    def manifest_path(self) -> Path:
        if self.is_zip:
            return self.location.with_name(self.location.name + "." + MANIFEST_NAME)
        return self.location / MANIFEST_NAME

    def content_hash(self) -> str:
        """Identity of what is installed here: a hash of the manifest (which lists every
        distribution and version) and of the lock beside it where there is one. A remote
        runtime compares it with its own copy's to know whether that copy is this one."""
        digest = hashlib.sha256(self.location.name.encode())
        for path in (self.manifest_path, self.location / LOCK_NAME):
            try:
                digest.update(path.read_bytes())
            except OSError:
                continue
        return digest.hexdigest()[:16]

    # -- metadata, read without importing plugin code --------------------------------------

    def entry_points(self) -> list[EntryPointInfo]:
        found: list[EntryPointInfo] = []
        for dist in importlib.metadata.distributions(path=[str(self.import_path)]):
            for ep in dist.entry_points:
                if ep.group in ENTRY_POINT_GROUPS:
                    found.append(
                        EntryPointInfo(
                            ep.group, ep.name, ep.value, dist.metadata["Name"], dist.version
                        )
                    )
        return sorted(found, key=lambda e: (e.group, e.name))

    def distributions(self) -> dict[str, str]:
        return {
            d.metadata["Name"]: d.version
            for d in importlib.metadata.distributions(path=[str(self.import_path)])
        }

    def fingerprint(self) -> list[str]:
        """What is installed, cheaply: the sorted ``.dist-info`` names (or the zip's size and
        mtime). A manifest written for another fingerprint is stale and the location is probed
        again, so ``pip install`` into an env after the worker saw it is picked up."""
        if self.is_zip:
            stat = self.location.stat()
            return [f"{stat.st_size}:{stat.st_mtime_ns}"]
        try:
            return sorted(
                c.name for c in self.import_path.iterdir() if c.name.endswith(".dist-info")
            )
        except (OSError, PluginEnvironmentError):
            return []

    def top_level_modules(self) -> dict[str, str]:
        """Each top-level module this location ships, and the ``dist==version`` shipping it
        (what a host's child-first loader compares, see copycat_loader)."""
        return top_level_names(str(self.import_path))

    def python_version(self) -> tuple[int, int] | None:
        """``(major, minor)`` of the interpreter a venv's hosts run on, from its
        ``pyvenv.cfg`` (None where it does not say, or for attached layouts)."""
        if self.attached:
            return None
        try:
            text = (self.location / "pyvenv.cfg").read_text()
        except OSError:
            return None
        for line in text.splitlines():
            key, _, value = line.partition("=")
            if key.strip() in ("version_info", "version"):
                parts = value.strip().split(".")
                if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
                    return int(parts[0]), int(parts[1])
        return None

    def installer_of(self, distribution: str) -> str | None:
        """The tool that installed ``distribution`` here (its ``INSTALLER`` file: pip, uv)."""
        try:
            path = [str(self.import_path)]
        except PluginEnvironmentError:  # a broken venv, described anyway
            return None
        for dist in importlib.metadata.distributions(path=path):
            if dist.metadata["Name"] == distribution:
                text = dist.read_text("INSTALLER")
                return text.strip() if text else None
        return None

    def requirements_of(self, distribution: str) -> list[str]:
        for dist in importlib.metadata.distributions(path=[str(self.import_path)]):
            if dist.metadata["Name"] == distribution:
                return list(dist.requires or [])
        return []

    # -- catalogue ---------------------------------------------------------------------------

    def read_manifest(self) -> dict[str, Any] | None:
        try:
            manifest: dict[str, Any] = json.loads(self.manifest_path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise PluginEnvironmentError(
                f"unreadable manifest {self.manifest_path}: {exc}"
            ) from exc
        return manifest

    def current_manifest(self) -> dict[str, Any]:
        """The manifest, probing (and writing it) first if it is missing or stale.

        Raises:
            PluginEnvironmentError: the location is :meth:`broken`, or its probe failed.
        """
        why = self.broken()
        if why is not None:
            raise PluginEnvironmentError(why)
        manifest = self.read_manifest()
        fingerprint = self.fingerprint()
        if manifest is None or manifest.get("fingerprint", fingerprint) != fingerprint:
            previous = manifest or {}
            manifest = self.probe()
            for key in ("installer", "source", "primary", "index_url"):
                if key in previous and previous.get("fingerprint") == manifest["fingerprint"]:
                    manifest[key] = previous[key]
            self.write_manifest(manifest)
            return manifest
        # The .dist-info names are unchanged, but the code they describe may have been deleted
        # (one stat per plugin; manifests written before module files were kept skip this).
        files = [
            (e["class_name"], e["module_file"]) for e in manifest["plugins"] if e.get("module_file")
        ]
        root = self.import_path if files else self.location
        for class_name, file in files:
            if not (root / file).exists():
                raise PluginEnvironmentError(
                    f"the module of {class_name}, {root / file}, is gone "
                    "(its distribution's .dist-info is still there)"
                )
        return manifest

    def catalogue(self) -> list[PluginDescriptor]:
        """Every plugin class this location offers. Reads the manifest; probes if it is missing
        or stale."""
        manifest = self.current_manifest()
        return [
            PluginDescriptor(
                **{
                    **{k: v for k, v in entry.items() if k in _DESCRIPTOR_FIELDS},
                    "location": str(self.location),
                    "aliases": tuple(entry.get("aliases", ())),
                }
            )
            for entry in manifest["plugins"]
        ]

    def start_host(self, name: str, **kwargs: Any) -> HostClient:
        """Start a plugin host process for this location (a zipapp host has its zip
        attached); ``kwargs`` go to :class:`~isolation.host.PluginHost`."""
        python = self.python
        client = HostClient(PluginHost(python, name=name, isolated_site=self.attached, **kwargs))
        try:
            client.channel.start()
            if self.attached:
                client.attach(str(self.location))
        except BaseException:
            client.close()
            raise
        return client

    def probe(self) -> dict[str, Any]:
        """Ask a plugin host what each entry point is (source/sink/...) and its version()."""
        eps = self.entry_points()
        host = self.start_host(f"probe:{self.location.name}")
        try:
            described = host.describe([ep.value for ep in eps])
        finally:
            host.close()
        plugins = []
        errors = []
        traces = []
        for ep, info in zip(eps, described, strict=True):
            if "error" in info:
                errors.append(f"{ep.group}:{ep.name} = {ep.value}: {info['error']}")
                if info.get("trace"):
                    traces.append(f"{ep.group}:{ep.name} = {ep.value}: {info['trace']}")
                continue
            expected = ENTRY_POINT_GROUPS[ep.group]
            kinds = info["kinds"]
            if expected == "connector":
                kind = next((k for k in kinds if k in ("source", "sink")), None)
            else:
                kind = expected if expected in kinds else None
            if kind is None:
                wanted = (
                    "a SourceConnector or SinkConnector"
                    if expected == "connector"
                    else f"a {expected}"
                )
                errors.append(
                    f"{ep.name} = {ep.value} is in group {ep.group} but is not "
                    f"{wanted} (it is a {', '.join(kinds)})"
                )
                continue
            plugins.append(
                asdict(
                    PluginDescriptor(
                        kind=kind,
                        name=ep.name,
                        target=ep.value,
                        class_name=info["class_name"],
                        version=info["version"],
                        distribution=f"{ep.distribution}=={ep.version}",
                        location=str(self.location),
                        aliases=tuple(info.get("aliases", ())),
                    )
                )
                | {
                    "config": info.get("config", []),
                    "config_errors": info.get("config_errors", []),
                    "module_file": self._module_file(info.get("file")),
                }
            )
        if errors:
            raise PluginEnvironmentError(
                f"plugin location {self.location} has broken entry points: " + "; ".join(errors),
                traces,
            )
        return {
            "location": str(self.location),
            "layout": self.layout,
            "distributions": self.distributions(),
            "fingerprint": self.fingerprint(),
            "plugins": plugins,
        }

    def _module_file(self, file: str | None) -> str | None:
        """Where a probed class's module is, relative to :attr:`import_path` (installs are
        probed in a staging directory that is renamed afterwards). None for a zipapp, whose
        fingerprint changes with its contents, and for a module outside the location (the
        runtime's plugin_api, an editable install's source tree): not this location's code."""
        if not file or self.is_zip:
            return None
        try:
            return str(Path(file).resolve().relative_to(self.import_path.resolve()))
        except ValueError:
            return None

    def write_manifest(self, manifest: dict[str, Any]) -> dict[str, Any]:
        tmp = self.manifest_path.with_name(self.manifest_path.name + ".tmp")
        tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True))
        tmp.replace(self.manifest_path)
        return manifest
