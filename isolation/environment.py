"""Plugin environments: one venv (or one zipapp) per plugin under ``plugin.path``.

A plugin *location* is a child of a ``plugin.path`` directory, as in Kafka Connect:

* a venv directory (``pyvenv.cfg``) built by :mod:`registry` with uv, holding the plugin
  distribution and its dependencies, and a ``copycat-plugin.json`` manifest written at install;
* a ``.pyz``/``.zip`` zipapp of a pure-Python plugin (with its ``.dist-info``), loaded child-first
  through zipimport into a host started with no site-packages at all.

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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from isolation.client import HostClient
from isolation.host import PluginHost
from plugin_api import ConnectException

MANIFEST_NAME = "copycat-plugin.json"
# The lock of an environment installed from an index (what was installed, with hashes).
LOCK_NAME = "pylock.toml"
ZIP_SUFFIXES = (".pyz", ".zip")

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


@dataclass(frozen=True)
class EntryPointInfo:
    group: str
    name: str
    value: str
    distribution: str
    version: str


class PluginEnvironmentError(ConnectException):
    """A plugin location is unusable (broken venv, unreadable manifest, failing probe)."""


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
        if not self.is_zip and not (self.location / "pyvenv.cfg").exists():
            raise PluginEnvironmentError(f"{location} is neither a venv nor a {ZIP_SUFFIXES} file")

    def __repr__(self) -> str:
        return f"PluginEnvironment({str(self.location)!r})"

    @property
    def import_path(self) -> Path:
        """What holds the plugin's modules: the venv's site-packages, or the zip itself."""
        return self.location if self.is_zip else site_packages(self.location)

    @property
    def python(self) -> Path:
        """The interpreter hosts for this location run on."""
        if self.is_zip:
            return Path(getattr(sys, "_base_executable", sys.executable))
        return self.location / "bin" / "python"

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

    def catalogue(self) -> list[PluginDescriptor]:
        """Every plugin class this location offers. Reads the manifest; probes if it is missing."""
        manifest = self.read_manifest()
        if manifest is None:
            manifest = self.write_manifest(self.probe())
        return [
            PluginDescriptor(
                **{
                    **entry,
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
        client = HostClient(PluginHost(python, name=name, isolated_site=self.is_zip, **kwargs))
        try:
            client.channel.start()
            if self.is_zip:
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
        for ep, info in zip(eps, described, strict=True):
            if "error" in info:
                errors.append(f"{ep.group}:{ep.name} = {ep.value}: {info['error']}")
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
            )
        if errors:
            raise PluginEnvironmentError(
                f"plugin location {self.location} has broken entry points: " + "; ".join(errors)
            )
        return {
            "location": str(self.location),
            "distributions": self.distributions(),
            "plugins": plugins,
        }

    def write_manifest(self, manifest: dict[str, Any]) -> dict[str, Any]:
        tmp = self.manifest_path.with_name(self.manifest_path.name + ".tmp")
        tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True))
        tmp.replace(self.manifest_path)
        return manifest
