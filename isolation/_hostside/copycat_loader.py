"""Child-first loading of extra plugin locations into a plugin host (stdlib only).

A host always runs from its primary plugin's venv, so that plugin's modules are importable the
normal way. Further locations -- a zipapp of a pure-Python plugin, or the site-packages of a
converter/transform plugin's own venv -- are *attached*: a meta path finder placed ahead of the
normal ones answers for exactly the top-level modules that location provides, so its modules win
over anything else on ``sys.path`` (child-first, like Kafka's PluginClassLoader).

Python keeps one module per dotted name per process (``sys.modules``), so two locations that
ship different versions of the same top-level package cannot both be served in one process.
That case is detected and reported as :class:`ModuleConflictError` naming the module and both
owners, never resolved silently; the worker then gives the plugin a host of its own.

``plugin_api`` is parent-first: it always comes from the runtime, never from a location.

Every host imports this module at start, and most never attach a location: what only
attaching needs (``importlib.metadata``, ``pathlib``, ``zipfile``; ~25-30 ms of a host's start
together) is imported by the functions that use it, not here (tests/unit/isolation/
test_host_start_imports.py).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import zipimport
from collections.abc import Mapping, Sequence
from types import ModuleType

# Provided by the runtime and shared by every plugin, like org.apache.kafka.connect.* in Kafka.
PARENT_FIRST = frozenset(
    {
        "plugin_api",
        "copycat_wire",
        "copycat_loader",
        "copycat_host",
        "copycat_pipeline",
        "copycat_errors",
        "copycat_protocol",
        "copycat_batch",
    }
)


class ModuleConflictError(ImportError):
    """Two plugin locations need different versions of the same top-level module."""


def top_level_names(location: str) -> dict[str, str]:
    """Map each top-level module of ``location`` to the ``dist==version`` that ships it."""
    from importlib import metadata

    owners: dict[str, str] = {}
    for dist in metadata.distributions(path=[location]):
        owner = f"{dist.metadata['Name']}=={dist.version}"
        for file in dist.files or ():
            parts = file.parts
            if not parts or parts[0].endswith((".dist-info", ".egg-info", ".data")):
                continue
            if parts[0] in ("..", "__pycache__", "bin"):
                continue
            name = parts[0]
            if len(parts) == 1:
                if (
                    not name.endswith(".py")
                    and ".cpython-" not in name
                    and not name.endswith(".so")
                ):
                    continue
                name = name.split(".", 1)[0]
            owners.setdefault(name, owner)
    # A location without metadata (plain modules in a zip) still provides its top-level entries.
    for name in _listing(location):
        owners.setdefault(name, f"{location} (no metadata)")
    return owners


def _listing(location: str) -> set[str]:
    names: set[str] = set()
    if location.endswith((".zip", ".pyz")):
        import zipfile

        with zipfile.ZipFile(location) as archive:
            for entry in archive.namelist():
                head = entry.split("/", 1)[0]
                if "/" in entry and not head.endswith((".dist-info", ".egg-info")):
                    if entry.startswith(head + "/__init__.py"):
                        names.add(head)
                elif entry.endswith(".py") and "/" not in entry and entry != "__main__.py":
                    names.add(entry[:-3])
    else:
        from pathlib import Path

        root = Path(location)
        for child in root.iterdir() if root.is_dir() else ():
            if child.is_dir() and (child / "__init__.py").exists():
                names.add(child.name)
            elif child.suffix == ".py":
                names.add(child.stem)
    return names - {"__pycache__"}


def _same_dist(a: str, b: str) -> bool:
    def norm(owner: str) -> str:
        return owner.lower().replace("_", "-").replace(".", "-")

    return norm(a) == norm(b)


class _LocationFinder:
    """Answers imports of the top-level names one location owns, from that location only.

    A meta path finder needs only ``find_spec``; not deriving from ``importlib.abc``'s ABC
    spares every host importing it (and ``importlib.resources`` with it) at start."""

    def __init__(self, location: str, names: Sequence[str]) -> None:
        self.location = location
        self.names = frozenset(names)
        if location.endswith((".zip", ".pyz")):
            self._zip: zipimport.zipimporter | None = zipimport.zipimporter(location)
        else:
            self._zip = None

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        top = fullname.partition(".")[0]
        if top not in self.names:
            return None
        if "." in fullname:
            return None  # submodules follow their package's __path__, which lies in the location
        if self._zip is not None:
            return self._zip.find_spec(fullname)
        return importlib.machinery.PathFinder.find_spec(fullname, [self.location])


class LocationRegistry:
    """The locations attached to this host and which of them owns each top-level module."""

    def __init__(self) -> None:
        self._owners: dict[str, tuple[str, str]] = {}  # module -> (location, dist==version)
        self._attached: list[str] = []
        self._primary_dists: Mapping[str, list[str]] | None = None

    def _primary_owner(self, name: str) -> tuple[str, str] | None:
        """``(origin, dist==version)`` of ``name`` on the host's own sys.path, if importable."""
        spec = importlib.machinery.PathFinder.find_spec(name)
        if spec is None:
            return None
        from importlib import metadata

        if self._primary_dists is None:
            self._primary_dists = metadata.packages_distributions()
        owner = "unknown version"
        for dist_name in self._primary_dists.get(name, ()):
            owner = f"{dist_name}=={metadata.version(dist_name)}"
            break
        return (spec.origin or str(spec.submodule_search_locations), owner)

    def attach(self, location: str) -> list[str]:
        """Make ``location``'s modules importable child-first; return its top-level names.

        Raises:
            ModuleConflictError: ``location`` ships a top-level module that another location
                (or the host's primary environment) ships in a different version.
        """
        if location in self._attached:
            return sorted(n for n, (loc, _) in self._owners.items() if loc == location)
        provided = {
            name: owner
            for name, owner in top_level_names(location).items()
            if name not in PARENT_FIRST
        }
        conflicts: list[str] = []
        shared: set[str] = set()
        for name, owner in sorted(provided.items()):
            if name in self._owners and self._owners[name][1] != owner:
                other_loc, other_owner = self._owners[name]
                conflicts.append(
                    f"module {name!r}: {owner} from {location} vs {other_owner} from {other_loc}"
                )
                continue
            if name in self._owners or name in sys.stdlib_module_names:
                continue  # same version already served; a stdlib backport never shadows stdlib
            primary = self._primary_owner(name)
            if primary is None or primary[0].startswith(location):
                continue
            if _same_dist(primary[1], owner):
                shared.add(name)  # identical version importable already: share that copy
                continue
            conflicts.append(
                f"module {name!r}: {owner} from {location} vs {primary[1]} already "
                f"importable in this host from {primary[0]}"
            )
        if conflicts:
            raise ModuleConflictError(
                "cannot load plugin location child-first in a shared host: " + "; ".join(conflicts)
            )
        fresh = [
            n
            for n in provided
            if n not in self._owners and n not in shared and n not in sys.stdlib_module_names
        ]
        for name in fresh:
            self._owners[name] = (location, provided[name])
        sys.meta_path.insert(0, _LocationFinder(location, fresh))
        self._attached.append(location)
        return sorted(provided)


def resolve(target: str) -> object:
    """Import ``"package.module:Qualified.Name"`` (an entry point value) and return the object."""
    module_name, _, qualname = target.partition(":")
    if not qualname:
        module_name, _, qualname = target.rpartition(".")
    obj: object = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj
