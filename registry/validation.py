"""Is a wheel a publishable Copycat plugin? The checks an index runs before it serves one.

:func:`validate_wheel` reads the wheel's metadata (complete: name, version, summary, licence,
a ``copycat-plugin-api`` requirement whose range this runtime satisfies, Copycat entry points)
and then installs it exactly as ``copycat plugins install`` would, into a throw-away
plugin.path, resolving dependencies only from the given local directories: every entry point
must load in an isolated plugin host, be what its group says, and have a valid config
definition. The result is the catalogue entry the index publishes. Called on the registry
server's request threads; each call works in its own temporary directory.
"""

from __future__ import annotations

import email.parser
import re
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from isolation.environment import ENTRY_POINT_GROUPS
from plugin_api import ConnectException
from registry.installer import (
    PLUGIN_API_DISTRIBUTION,
    PluginInstallError,
    install,
    runtime_api_version,
)

# Metadata a catalogue entry cannot do without (PyPA core metadata field names).
REQUIRED_FIELDS = ("Name", "Version", "Summary")
# Where a support level may be declared: a keyword ``copycat-support=<level>`` in the
# package's Keywords (core metadata has no field for it). Without one: community.
SUPPORT_KEYWORD = "copycat-support="
DEFAULT_SUPPORT = "community"


class InvalidPluginError(ConnectException):
    """A wheel is not a valid Copycat plugin; ``reasons`` lists every problem found."""

    def __init__(self, wheel: str, reasons: Sequence[str]) -> None:
        super().__init__(f"{wheel} is not a valid Copycat plugin: " + "; ".join(reasons))
        self.wheel = wheel
        self.reasons = list(reasons)


@dataclass(frozen=True)
class WheelMetadata:
    name: str
    version: str
    fields: dict[str, list[str]]
    entry_points: dict[str, dict[str, str]]

    def first(self, key: str) -> str:
        values = self.fields.get(key.lower(), [])
        return values[0].strip() if values else ""

    @property
    def licence(self) -> str:
        found = self.first("License-Expression") or self.first("License")
        if found:
            return found
        for classifier in self.fields.get("classifier", []):
            if classifier.startswith("License ::"):
                return classifier.rsplit("::", 1)[-1].strip()
        return ""

    @property
    def api_requirement(self) -> Requirement | None:
        for text in self.fields.get("requires-dist", []):
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            if canonicalize_name(req.name) == PLUGIN_API_DISTRIBUTION:
                return req
        return None

    @property
    def support(self) -> str:
        for keyword in self.first("Keywords").replace(",", " ").split():
            if keyword.startswith(SUPPORT_KEYWORD):
                return keyword[len(SUPPORT_KEYWORD) :]
        return DEFAULT_SUPPORT


def read_wheel_metadata(wheel: Path) -> WheelMetadata:
    """METADATA and entry_points.txt of a wheel, read from the archive (nothing imported)."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
            meta_name = next(
                (n for n in names if n.count("/") == 1 and n.endswith(".dist-info/METADATA")),
                None,
            )
            if meta_name is None:
                raise InvalidPluginError(wheel.name, ["the wheel has no .dist-info/METADATA"])
            raw = archive.read(meta_name).decode("utf-8", "replace")
            ep_name = meta_name.rsplit("/", 1)[0] + "/entry_points.txt"
            ep_text = archive.read(ep_name).decode() if ep_name in names else ""
    except (zipfile.BadZipFile, OSError) as exc:
        raise InvalidPluginError(wheel.name, [f"not a readable wheel: {exc}"]) from exc
    message = email.parser.Parser().parsestr(raw)
    fields: dict[str, list[str]] = {}
    for key, value in message.items():
        fields.setdefault(key.lower(), []).append(str(value))
    entry_points: dict[str, dict[str, str]] = {}
    group = None
    for line in ep_text.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1].strip()
        elif "=" in line and group is not None:
            key, _, value = line.partition("=")
            entry_points.setdefault(group, {})[key.strip()] = value.strip()
    return WheelMetadata(
        fields.get("name", [""])[0].strip(),
        fields.get("version", [""])[0].strip(),
        fields,
        entry_points,
    )


def metadata_problems(meta: WheelMetadata) -> list[str]:
    """What is missing or incompatible in a plugin wheel's metadata (empty: nothing)."""
    problems = [f"metadata has no {f}" for f in REQUIRED_FIELDS if not meta.first(f)]
    if not meta.licence:
        problems.append("metadata has no licence (License-Expression, License or a classifier)")
    ours = {g: eps for g, eps in meta.entry_points.items() if g in ENTRY_POINT_GROUPS}
    if not ours:
        problems.append(
            "the wheel declares no Copycat entry points (groups: "
            + ", ".join(ENTRY_POINT_GROUPS)
            + ")"
        )
    requirement = meta.api_requirement
    runtime = runtime_api_version()
    if requirement is None:
        problems.append(
            f"the wheel does not declare which {PLUGIN_API_DISTRIBUTION} versions it needs "
            f"(e.g. Requires-Dist: {PLUGIN_API_DISTRIBUTION}>=0.1,<0.2)"
        )
    elif runtime and not requirement.specifier.contains(runtime, prereleases=True):
        problems.append(
            f"{meta.name} {meta.version} requires {PLUGIN_API_DISTRIBUTION}"
            f"{requirement.specifier}, but this runtime provides "
            f"{PLUGIN_API_DISTRIBUTION} {runtime}"
        )
    return problems


def _without_paths(message: str, wheel: Path, workdir: Path) -> str:
    """An install error as the uploader should read it: the wheel named by its file name, and
    no temporary directories (where the server put the upload, the throw-away env)."""
    for path in {str(wheel.resolve()), str(wheel)}:
        message = message.replace(path, wheel.name)
    for root in {str(workdir.resolve()), str(workdir)}:
        env = re.escape(root) + r"/plugins/\.staging-[0-9a-f]+"
        message = re.sub("plugin location " + env, "the plugin", message)
        message = re.sub(env, "the plugin's env", message)
    return message


def validate_wheel(
    wheel: Path, dependency_dirs: Sequence[Path] = (), upstream: str | None = None
) -> dict[str, Any]:
    """Validate ``wheel`` as a plugin and return its catalogue entry.

    Dependencies are resolved from ``dependency_dirs`` (the index's own files) and, only if
    given, the ``upstream`` index; without one nothing touches the network (air-gapped). The
    reasons name the wheel by its file name, never the temporary paths validation used.

    Raises:
        InvalidPluginError: with every reason found (metadata first; then what the isolated
            install and probe report).
    """
    meta = read_wheel_metadata(wheel)
    problems = metadata_problems(meta)
    if problems:
        raise InvalidPluginError(wheel.name, problems)
    with tempfile.TemporaryDirectory(prefix="copycat-validate-") as tmp:
        try:
            env = install(
                str(wheel),
                Path(tmp) / "plugins",
                find_links=[str(d) for d in dependency_dirs if d.is_dir()],
                index_url=upstream,
                no_index=upstream is None,
                offline=upstream is None,
            )
        except PluginInstallError as exc:
            reason = _without_paths(str(exc), wheel, Path(tmp))
            raise InvalidPluginError(wheel.name, [reason]) from exc
        manifest = env.read_manifest() or {}
    requirement = meta.api_requirement
    return {
        "name": meta.name,
        "version": meta.version,
        "filename": wheel.name,
        "summary": meta.first("Summary"),
        "description_content_type": meta.first("Description-Content-Type"),
        "licence": meta.licence,
        "author": meta.first("Author") or meta.first("Author-email"),
        "home_page": meta.first("Home-page"),
        "plugin_api": str(requirement.specifier) if requirement is not None else "",
        "support": meta.support,
        "distributions": manifest.get("distributions", {}),
        "components": [
            {
                "class": p["class_name"],
                "name": p["name"],
                "type": p["kind"],
                "version": p["version"],
                "aliases": list(p.get("aliases", [])),
                "config": p.get("config", []),
            }
            for p in manifest.get("plugins", [])
        ],
    }
