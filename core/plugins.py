"""The worker's view of installed plugins: resolve a configured class name to a plugin location.

A class may be named as in Kafka Connect: the full class name (ours, or the Kafka class it
stands in for, e.g. ``org.apache.kafka.connect.file.FileStreamSourceConnector``), the simple
name, or the simple name without its type suffix (``FileStreamSource``); an alias that two
different plugins claim is dropped, as Kafka does. Several versions may be installed side by
side; the newest is used unless the config pins one (``connector.plugin.version``, KIP-891).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from core.runtime.spec import PluginRef
from isolation import HostClient
from isolation.environment import PluginDescriptor, PluginEnvironment
from plugin_api import ConfigException
from registry.installer import scan

log = logging.getLogger("copycat.plugins")

# The suffix Kafka strips from a simple class name to make the short alias, per plugin kind.
_SUFFIXES = {
    "source": "Connector",
    "sink": "Connector",
    "converter": "Converter",
    "header_converter": "HeaderConverter",
    "transformation": "",
    "predicate": "",
    "config_provider": "ConfigProvider",
}
KIND_GROUPS = {
    "connector": ("source", "sink"),
    "converter": ("converter",),
    "header_converter": ("header_converter", "converter"),
    "transformation": ("transformation",),
    "predicate": ("predicate",),
    "config_provider": ("config_provider",),
}


def _names(plugin: PluginDescriptor) -> set[str]:
    names = {plugin.name, plugin.class_name, *plugin.aliases}
    for full in (plugin.class_name, *plugin.aliases):
        simple = full.rsplit(".", 1)[-1]
        names.add(simple)
        suffix = _SUFFIXES.get(plugin.kind, "")
        if suffix and simple.endswith(suffix) and simple != suffix:
            names.add(simple[: -len(suffix)])
    return names


def _version_key(version: str) -> tuple[int, Version | str]:
    try:
        return (1, Version(version))
    except InvalidVersion:
        return (0, version)


class PluginCatalogue:
    """Every plugin under plugin.path, indexed by every name a config may use for it."""

    def __init__(self, environments: Iterable[PluginEnvironment]) -> None:
        self.environments = {str(env.location): env for env in environments}
        self.plugins: list[PluginDescriptor] = []
        for env in self.environments.values():
            self.plugins.extend(env.catalogue())
        claims: dict[str, set[str]] = defaultdict(set)
        for plugin in self.plugins:
            for name in _names(plugin):
                claims[name].add(plugin.class_name)
        self._by_name: dict[str, list[PluginDescriptor]] = defaultdict(list)
        for plugin in self.plugins:
            for name in _names(plugin):
                if len(claims[name]) == 1:
                    self._by_name[name].append(plugin)
                else:
                    log.debug("alias %s is ambiguous (%s); dropped", name, sorted(claims[name]))

    @classmethod
    def scan(cls, plugin_paths: Sequence[Path]) -> PluginCatalogue:
        return cls(scan(plugin_paths))

    def environment(self, plugin: PluginDescriptor) -> PluginEnvironment:
        return self.environments[plugin.location]

    def environment_at(self, location: str) -> PluginEnvironment:
        """The environment at ``location`` (a :class:`PluginRef`'s)."""
        return self.environments[location]

    def of_kind(self, *kinds: str) -> list[PluginDescriptor]:
        return [p for p in self.plugins if p.kind in kinds]

    def resolve(
        self, kind: str, name: str, version: str | None = None, key: str = "connector.class"
    ) -> PluginDescriptor:
        """The plugin a config names, or a ConfigException naming ``key`` and what exists."""
        kinds = KIND_GROUPS[kind]
        candidates = [p for p in self._by_name.get(name.strip(), []) if p.kind in kinds]
        if not candidates:
            available = sorted({p.class_name for p in self.of_kind(*kinds)})
            raise ConfigException(
                key,
                name,
                f"no {kind.replace('_', ' ')} plugin named {name!r} is installed; "
                f"available: {', '.join(available) or 'none'}",
            )
        if version:
            try:
                spec = (
                    SpecifierSet(version) if version[0] in "<>=!~" else SpecifierSet(f"=={version}")
                )
            except InvalidSpecifier as exc:
                raise ConfigException(key + ".plugin.version", version, str(exc)) from exc
            pinned = [
                p
                for p in candidates
                if p.version in spec
                or _version_key(p.version)[0]
                and spec.contains(p.version, prereleases=True)
            ]
            if not pinned:
                have = ", ".join(sorted(p.version for p in candidates))
                raise ConfigException(
                    f"{key.rsplit('.', 1)[0]}.plugin.version",
                    version,
                    f"{name} is installed only in versions {have}",
                )
            candidates = pinned
        return max(candidates, key=lambda p: _version_key(p.version))


class LocalHosts:
    """Starts plugin hosts from the environments under this worker's plugin.path (the local
    :class:`core.runtime.services.HostLauncher`)."""

    def __init__(self, catalogue: PluginCatalogue) -> None:
        self.catalogue = catalogue

    def start(
        self,
        plugin: PluginRef,
        name: str,
        *,
        callbacks: Mapping[str, Callable[..., Any]],
        call_timeout_s: float,
        memory_limit_bytes: int,
    ) -> HostClient:
        env = self.catalogue.environment_at(plugin.location)
        return env.start_host(
            name,
            callbacks=callbacks,
            call_timeout_s=call_timeout_s,
            memory_limit_bytes=memory_limit_bytes,
        )

    def import_path(self, plugin: PluginRef) -> str:
        return str(self.catalogue.environment_at(plugin.location).import_path)
