"""The worker's view of installed plugins: resolve a configured class name to a plugin location.

A class may be named as in Kafka Connect: the full class name (ours, or the Kafka class it
stands in for, e.g. ``org.apache.kafka.connect.file.FileStreamSourceConnector``), the simple
name, or the simple name without its type suffix (``FileStreamSource``); an alias that two
different plugins claim is dropped, as Kafka does (with a warning, and an error naming the
claimants when a config uses it). Several versions may be installed side by
side; the newest is used unless the config pins one (``connector.plugin.version``, KIP-891,
read by :mod:`core.plugin_versions`). The same class in the same version in two locations (a
plain pip venv beside a Copycat install, or a release whose version() was not bumped) resolves
to a locked env first, then to the newest package, then to the first in plugin.path order, and
is logged once as a warning.

The catalogue of a worker is *live*: it notices changes to plugin.path and rescans, so plugins
installed or removed while the worker runs are seen without a restart (see
:class:`PluginCatalogue`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from packaging.version import Version

from core.plugin_versions import plugin_version_key, range_text, requirement, version_order
from core.runtime.spec import PluginRef
from isolation import HostClient
from isolation.environment import (
    ENTRY_POINT_GROUPS,
    MANIFEST_NAME,
    EntryPointInfo,
    PluginDescriptor,
    PluginEnvironment,
)
from plugin_api import ConfigException, ConnectException
from registry.installer import incompatible_api, rebuild_from_lock, scan
from registry.locks import interpreter_changed

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

# The plugin interfaces' names, as Kafka's errors say them ("Not a Transformation").
_KIND_NAMES = {
    "connector": "Connector",
    "source": "SourceConnector",
    "sink": "SinkConnector",
    "converter": "Converter",
    "header_converter": "HeaderConverter",
    "transformation": "Transformation",
    "predicate": "Predicate",
    "config_provider": "ConfigProvider",
}


# Kinds a connector config names by a key of their own (value.converter, transforms.x.type);
# Kafka words a class it cannot use there differently from an unknown connector.class.
_COMPONENT_KINDS = frozenset({"converter", "header_converter", "transformation", "predicate"})


def _component_not_found(
    snapshot: _Snapshot, kinds: tuple[str, ...], key: str, name: str
) -> ConfigException:
    """Kafka's error for a converter, transform or predicate class that is not installed: an
    abstract transform (``Cast``, whose ``Cast$Key``/``Cast$Value`` are) is named as such."""
    variants = [
        f"{name}${side}"
        for side in ("Key", "Value")
        if any(p.kind in kinds for p in snapshot.by_name.get(f"{name}${side}", []))
    ]
    if len(variants) == 2:
        exc = ConfigException(
            f"This class is abstract and cannot be created. Did you mean {', '.join(variants)}?"
        )
        exc.name, exc.value = key, name
        return exc
    return ConfigException(key, name, f"Class {name} could not be found.")


class VersionNotFound(ConfigException):
    """A ``*.plugin.version`` (``name``, the version key) that no installed version of the
    plugin the class key (``class_key``) names satisfies, worded as Kafka Connect words it
    (the range as Maven shows it, and every version of that class installed, of any kind)."""

    def __init__(
        self, class_key: str, version_key: str, spec: str, plugin: str, versions: Sequence[str]
    ) -> None:
        super().__init__(
            f"Plugin {plugin} not found that matches the version range {range_text(spec)}, "
            f"available versions: [{', '.join(versions)}]"
        )
        self.name, self.value, self.class_key = version_key, spec, class_key


class AmbiguousPluginName(ConfigException):
    """A config names a plugin by an alias that several plugins claim, so it names none of
    them (as in Kafka); ``claimants`` are their full class names."""

    def __init__(self, key: str, name: str, claimants: Sequence[str]) -> None:
        self.claimants = list(claimants)
        super().__init__(
            key, name, f"{name} is ambiguous ({', '.join(claimants)}): use the full class name"
        )


def _names(plugin: PluginDescriptor) -> set[str]:
    names = {plugin.name, plugin.class_name, *plugin.aliases}
    for full in (plugin.class_name, *plugin.aliases):
        simple = full.rsplit(".", 1)[-1]
        names.add(simple)
        suffix = _SUFFIXES.get(plugin.kind, "")
        if suffix and simple.endswith(suffix) and simple != suffix:
            names.add(simple[: -len(suffix)])
    return names


def _entry_point_names(ep: EntryPointInfo) -> set[str]:
    """The names a config may use for an entry point's class, from its metadata alone."""
    module, _, attr = ep.value.partition(":")
    full = f"{module}.{attr}" if attr else module
    simple = full.rsplit(".", 1)[-1]
    names = {ep.name, ep.value, full, simple}
    if simple.endswith("Connector") and simple != "Connector":
        names.add(simple[: -len("Connector")])
    return names


# How often a live catalogue may look at plugin.path for changes: a look is a few stat()
# calls per plugin, cheap, but REST storms resolve plugins hundreds of times a second.
RESCAN_INTERVAL_S = 0.1


class _Snapshot:
    """An immutable index of the plugins of some locations (swapped whole on a rescan)."""

    def __init__(self, environments: Iterable[PluginEnvironment]) -> None:
        self.environments: dict[str, PluginEnvironment] = {}
        self.plugins: list[PluginDescriptor] = []
        # Names the entry points of unusable locations declare (read from their metadata,
        # never imported) -> (location, why it is unusable): a config naming one hears that
        # the plugin is installed but does not load, and why, not that it is not installed.
        self.unusable: dict[str, list[tuple[str, str]]] = defaultdict(list)
        # Names the entry points of locations whose plugin API range excludes this runtime's
        # declare -> (entry point kind, version, location, why): not offered, so an unpinned
        # config gets an older compatible version, and a pin naming one hears why not.
        self.incompatible: dict[str, list[tuple[str, str, str, str]]] = defaultdict(list)
        self.incompatible_envs: dict[str, str] = {}
        for env in environments:
            mismatch = incompatible_api(env)
            if mismatch is not None:
                self._note_incompatible(env, mismatch)
                continue
            try:
                found = env.catalogue()
            except Exception as exc:  # noqa: BLE001 - one bad location never fails the worker
                # A half-installed env (pip still running) or a broken one: skipped until
                # plugin.path changes again; never a reason to fail the whole worker.
                traces = "".join(f"\n{t}" for t in getattr(exc, "traces", ()))
                log.warning("plugin location %s is not usable: %s%s", env.location, exc, traces)
                self._note_unusable(env, str(exc))
                continue
            self.environments[str(env.location)] = env
            self.plugins.extend(found)
        self.locked = {location for location, env in self.environments.items() if env.locked}
        # The same class in the same version in several locations: locations -> those classes.
        places: dict[tuple[str, str], list[str]] = defaultdict(list)
        for plugin in self.plugins:
            where = places[(plugin.class_name, plugin.version)]
            if plugin.location not in where:
                where.append(plugin.location)
        self.duplicates: dict[tuple[str, ...], list[str]] = defaultdict(list)
        for (class_name, version), locations in sorted(places.items()):
            if len(locations) > 1:
                self.duplicates[tuple(locations)].append(f"{class_name} {version}")
        claims: dict[str, set[str]] = defaultdict(set)
        for plugin in self.plugins:
            for name in _names(plugin):
                claims[name].add(plugin.class_name)
        self.by_name: dict[str, list[PluginDescriptor]] = defaultdict(list)
        for plugin in self.plugins:
            for name in _names(plugin):
                if len(claims[name]) == 1:
                    self.by_name[name].append(plugin)
        # Names dropped because different classes claim them -> those classes.
        self.ambiguous = {
            name: sorted(classes) for name, classes in claims.items() if len(classes) > 1
        }

    def _note_unusable(self, env: PluginEnvironment, why: str) -> None:
        try:
            eps = env.entry_points()
        except Exception:  # noqa: BLE001 - unreadable metadata: nothing to name
            return
        for ep in eps:
            for name in _entry_point_names(ep):
                self.unusable[name].append((str(env.location), why))

    def _note_incompatible(self, env: PluginEnvironment, why: str) -> None:
        """``env`` needs another plugin API: indexed by name with each component's version
        (from a manifest an earlier scan wrote, else its distribution's), never probed."""
        location = str(env.location)
        self.incompatible_envs[location] = why
        try:
            manifest = env.read_manifest() or {}
            eps = env.entry_points()
        except Exception:  # noqa: BLE001 - unreadable metadata: nothing to name
            return
        versions = {
            entry.get("target"): entry.get("version")
            for entry in manifest.get("plugins", [])
            if manifest.get("fingerprint") == env.fingerprint()
        }
        for ep in eps:
            version = str(versions.get(ep.value) or ep.version)
            for name in _entry_point_names(ep):
                self.incompatible[name].append(
                    (ENTRY_POINT_GROUPS[ep.group], version, location, why)
                )

    def incompatible_with(self, name: str, kinds: Sequence[str]) -> list[tuple[str, str, str, str]]:
        """The incompatible components ``name`` names among ``kinds`` (a connector's entry
        point is of kind ``connector``, which both source and sink look up)."""
        wanted = set(kinds) | ({"connector"} if {"source", "sink"} & set(kinds) else set())
        return [entry for entry in self.incompatible.get(name, []) if entry[0] in wanted]

    def preference(
        self, plugin: PluginDescriptor
    ) -> tuple[tuple[int, Version | str], bool, tuple[int, Version | str]]:
        """Sort key among the candidates for one name: the newest version, then a locked env
        over a plain pip one (the same version in both is most likely one installed twice, and
        only the locked one can be rebuilt), then the newest package (a release whose
        ``version()`` was not bumped still replaces the one before it, as its upgrade meant);
        ``max()`` keeps plugin.path order among equals."""
        package = plugin.distribution.partition("==")[2]
        return version_order(plugin.version), plugin.location in self.locked, version_order(package)

    def warnings(self) -> dict[tuple[str, ...], str]:
        """What an operator should hear about this plugin.path, keyed by what it is about."""
        out: dict[tuple[str, ...], str] = {}
        for location, why in self.incompatible_envs.items():
            out[("incompatible", location, why)] = (
                f"plugin location {location} is not used: {why}; its plugins are not offered "
                "(other installed versions of them are used instead)"
            )
        for locations, plugins in self.duplicates.items():
            by_location = {
                p.location: p
                for p in self.plugins
                if p.location in locations and f"{p.class_name} {p.version}" == plugins[0]
            }
            used = max(locations, key=lambda loc: self.preference(by_location[loc]))
            out[("duplicate", *locations, *plugins)] = (
                f"the same plugins ({', '.join(plugins)}) are installed in {len(locations)} "
                f"locations: {', '.join(locations)}; {used} is used (a locked env first, then "
                "the newest package, then the first in plugin.path order); remove the others, "
                "and have version() change with every release so they can be told apart"
            )
        aliases: dict[tuple[str, ...], list[str]] = defaultdict(list)
        for name, classes in sorted(self.ambiguous.items()):
            aliases[tuple(classes)].append(repr(name))
        for claimants, names in aliases.items():
            out[("ambiguous", *claimants, *names)] = (
                f"{', '.join(names)} is claimed by several plugins ({', '.join(claimants)}): a "
                "config naming a class so no longer resolves; use the full class name"
            )
        return out


def _signature(plugin_paths: Sequence[Path]) -> tuple[tuple[str, int, int, int, bool], ...]:
    """What changes when a plugin is installed, removed or pip-installed into: each location's
    name, its mtime, its packages directory's mtime (pip adding a dist-info), its manifest's
    mtime and whether its interpreter exists (deleting it changes none of the others)."""
    out = []
    for root in plugin_paths:
        try:
            children = sorted(root.iterdir())
        except OSError:
            continue
        for child in children:
            if child.name.startswith("."):
                continue
            try:
                own = child.stat().st_mtime_ns
            except OSError:
                continue
            packages = manifest = 0
            python = False
            if child.is_dir():
                python = (child / "bin" / "python").exists()
                lib = sorted(child.glob("lib/python3*/site-packages"))
                try:
                    packages = (lib[0] if lib else child).stat().st_mtime_ns
                    manifest = (child / MANIFEST_NAME).stat().st_mtime_ns
                except OSError:
                    pass
            out.append((str(child), own, packages, manifest, python))
    return tuple(out)


class PluginCatalogue:
    """Every plugin under plugin.path, indexed by every name a config may use for it.

    A catalogue made by :meth:`scan` is *live*: each lookup first checks (at most every
    :data:`RESCAN_INTERVAL_S`) whether plugin.path changed and, if so, rescans it, so a plugin
    installed into a running worker's plugin.path (by the CLI, REST, or plain pip) is usable at
    once and a removed one disappears. Thread-safe: lookups run on REST threads and task
    threads; a rescan builds a new immutable snapshot under a lock and swaps it in.
    """

    def __init__(
        self,
        environments: Iterable[PluginEnvironment] = (),
        *,
        plugin_paths: Sequence[Path] | None = None,
    ) -> None:
        self.plugin_paths = [Path(p) for p in plugin_paths] if plugin_paths is not None else None
        self._lock = threading.Lock()
        self._signature = _signature(self.plugin_paths) if self.plugin_paths else ()
        self._checked = time.monotonic()
        # Warnings already logged: a rescan that finds the same problem stays quiet.
        self._warned: set[tuple[str, ...]] = set()
        self._snapshot = self._warn(_Snapshot(environments))

    @classmethod
    def scan(cls, plugin_paths: Sequence[Path]) -> PluginCatalogue:
        """A live catalogue of ``plugin_paths`` (envs whose interpreter changed are rebuilt)."""
        return cls(_usable(plugin_paths), plugin_paths=plugin_paths)

    def refresh(self, force: bool = False) -> bool:
        """Rescan plugin.path if it changed since the last look; return whether it did."""
        if self.plugin_paths is None:
            return False
        now = time.monotonic()
        if not force and now - self._checked < RESCAN_INTERVAL_S:
            return False
        with self._lock:
            self._checked = time.monotonic()
            signature = _signature(self.plugin_paths)
            if signature == self._signature and not force:
                return False
            self._snapshot = self._warn(_Snapshot(_usable(self.plugin_paths)))
            # Probing a new env may have written its manifest: look again next time.
            self._signature = signature
        log.info(
            "plugin.path changed: %d plugin locations, %d plugins",
            len(self._snapshot.environments),
            len(self._snapshot.plugins),
        )
        return True

    def _warn(self, snapshot: _Snapshot) -> _Snapshot:
        for key, message in snapshot.warnings().items():
            if key not in self._warned:
                self._warned.add(key)
                log.warning("%s", message)
        return snapshot

    def _current(self) -> _Snapshot:
        self.refresh()
        return self._snapshot

    @property
    def environments(self) -> dict[str, PluginEnvironment]:
        return self._current().environments

    @property
    def plugins(self) -> list[PluginDescriptor]:
        return self._current().plugins

    def environment(self, plugin: PluginDescriptor) -> PluginEnvironment:
        env = self._snapshot.environments.get(plugin.location)
        if env is None:  # removed since it was resolved: a plain error, not a KeyError
            raise ConfigException(
                "connector.class",
                plugin.class_name,
                f"plugin {plugin.distribution} at {plugin.location} is no longer installed",
            )
        return env

    def environment_at(self, location: str) -> PluginEnvironment:
        """The environment at ``location`` (a :class:`PluginRef`'s)."""
        env = self._current().environments.get(location)
        if env is None:
            raise ConfigException(
                "connector.class", location, f"no plugin is installed at {location} any more"
            )
        return env

    def of_kind(self, *kinds: str) -> list[PluginDescriptor]:
        return [p for p in self._current().plugins if p.kind in kinds]

    def resolve(
        self, kind: str, name: str, version: str | None = None, key: str = "connector.class"
    ) -> PluginDescriptor:
        """The plugin a config names, or a ConfigException naming ``key`` and what exists."""
        if not name.strip():
            # Kafka's ConfigDef.parseType for a CLASS key: an empty name is no class at all.
            raise ConfigException(key, name, f"Class {name} could not be found.")
        kinds = KIND_GROUPS[kind]
        snapshot = self._current()
        candidates = [p for p in snapshot.by_name.get(name.strip(), []) if p.kind in kinds]
        claimed = snapshot.ambiguous.get(name.strip())
        if not candidates and claimed:
            raise AmbiguousPluginName(key, name, claimed)
        if not candidates:
            other_kinds = sorted(
                {_KIND_NAMES[p.kind] for p in snapshot.by_name.get(name.strip(), [])}
            )
            component = kind in _COMPONENT_KINDS and key != "connector.class"
            if other_kinds and component:  # Kafka's words for a class of another kind
                exc = ConfigException(
                    f"Class class {name.strip()} does not implement the "
                    f"{_KIND_NAMES[kind]} interface"
                )
                exc.name, exc.value = key, name
                raise exc
            if other_kinds:  # Kafka's "Not a Transformation", and what it is instead
                raise ConfigException(
                    key,
                    name,
                    f"Not a {_KIND_NAMES[kind]} (it is installed as a "
                    f"{' and as a '.join(other_kinds)})",
                )
            incompatible = snapshot.incompatible_with(name.strip(), kinds)
            if incompatible:
                raise ConfigException(
                    key,
                    name,
                    f"plugin {name!r} is installed but cannot run on this runtime: "
                    + "; ".join(
                        sorted({f"{why} (at {where})" for _, _, where, why in incompatible})
                    ),
                )
            broken = snapshot.unusable.get(name.strip())
            if broken:
                raise ConfigException(
                    key,
                    name,
                    f"plugin {name!r} is installed but failed to load: "
                    + "; ".join(
                        f"{why} (at {where})" if where not in why else why for where, why in broken
                    ),
                )
            if component:
                raise _component_not_found(snapshot, kinds, key, name.strip())
            available = sorted({p.class_name for p in self.of_kind(*kinds)})
            raise ConfigException(
                key,
                name,
                f"no {kind.replace('_', ' ')} plugin named {name!r} is installed; "
                f"available: {', '.join(available) or 'none'}",
            )
        version_key = plugin_version_key(key)
        allowed = requirement(version, version_key)
        if allowed is not None:
            pinned = [p for p in candidates if allowed(p.version)]
            if not pinned:
                have = ", ".join(sorted(p.version for p in candidates))
                refused = sorted(
                    {
                        f"{why} (at {where})"
                        for _, v, where, why in snapshot.incompatible_with(name.strip(), kinds)
                        if allowed(v)
                    }
                )
                if refused:
                    raise ConfigException(
                        version_key,
                        version,
                        f"the version of {name} it names cannot run on this runtime: "
                        f"{'; '.join(refused)}; versions this runtime can run: {have}",
                    )
                named = name.strip()
                if "." not in named:  # an alias: Kafka names the class it stands for
                    named = next(
                        (a for a in candidates[0].aliases if "." in a), candidates[0].class_name
                    )
                every = sorted(
                    (p.version for p in snapshot.by_name.get(name.strip(), [])), key=version_order
                )
                raise VersionNotFound(key, version_key, version or "", named, every)
            candidates = pinned
        return max(candidates, key=snapshot.preference)


def _usable(plugin_paths: Sequence[Path]) -> list[PluginEnvironment]:
    """The locations under plugin.path, each locked env whose interpreter is gone rebuilt from
    its lock first (a runtime upgraded from one Python to another keeps its plugins)."""
    out = []
    for env in scan(plugin_paths):
        why = interpreter_changed(env)
        if why is not None:
            log.warning("rebuilding plugin env %s from its lock: %s", env.location, why)
            try:
                env = rebuild_from_lock(env)
            except ConnectException as exc:
                log.error("cannot rebuild plugin env %s: %s", env.location, exc)
                continue
        out.append(env)
    return out


# Config keys naming a component class, and the catalogue kind each resolves to.
_CONVERTER_KINDS = {
    "key.converter": "converter",
    "value.converter": "converter",
    "header.converter": "header_converter",
}


def component_locations(
    catalogue: PluginCatalogue, props: Mapping[str, str], worker_props: Mapping[str, str]
) -> set[str]:
    """Plugin locations a connector's converters, transforms and predicates resolve to (the
    resolution the worker makes when it starts a task); unresolvable ones are skipped."""
    wanted: list[tuple[str, str, str | None]] = []
    for key, kind in _CONVERTER_KINDS.items():
        source = props if props.get(key) else worker_props
        if source.get(key):
            wanted.append((kind, source[key], source.get(f"{key}.plugin.version")))
    for group, kind in (("transforms", "transformation"), ("predicates", "predicate")):
        for alias in (a.strip() for a in props.get(group, "").split(",")):
            type_name = props.get(f"{group}.{alias}.type") if alias else None
            if type_name:
                wanted.append((kind, type_name, props.get(f"{group}.{alias}.plugin.version")))
    out = set()
    for kind, name, version in wanted:
        try:
            out.add(catalogue.resolve(kind, name, version).location)
        except ConfigException:
            continue
    return out


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
        parent_first: tuple[str, ...] = (),
    ) -> HostClient:
        env = self.catalogue.environment_at(plugin.location)
        return env.start_host(
            name,
            callbacks=callbacks,
            call_timeout_s=call_timeout_s,
            memory_limit_bytes=memory_limit_bytes,
            parent_first=parent_first,
        )

    def import_path(self, plugin: PluginRef) -> str:
        return str(self.catalogue.environment_at(plugin.location).import_path)
