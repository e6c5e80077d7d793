"""Bundled plugins (file connectors, converters, ...) installed into plugin.path on first use.

They are separate distributions under ``plugins/`` and are installed exactly like third-party
plugins (their own venv each), so that what ships with Copycat proves the plugin API suffices.
"""

from __future__ import annotations

import logging
import os
import re
import tomllib
from pathlib import Path

from registry.installer import find, install

log = logging.getLogger("copycat.bundled")

BUNDLED_DIR_ENV = "COPYCAT_BUNDLED_PLUGINS"


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


def ensure_bundled_plugins(plugin_path: Path) -> list[Path]:
    """Install each bundled plugin whose version is not yet in ``plugin_path``."""
    installed = []
    for project in bundled_plugin_dirs():
        name, version = project_version(project)
        if find([plugin_path], f"{name}=={version}"):
            continue
        log.info("installing bundled plugin %s %s into %s", name, version, plugin_path)
        installed.append(install(str(project), plugin_path).location)
    return installed
