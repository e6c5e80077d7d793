"""The runtime's own distribution metadata agrees with the workspace it is built from."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def test_the_runtime_requires_the_plugin_api_it_ships() -> None:
    """The runtime provides plugin_api to every plugin host (parent-first), so its own
    requirement must accept the workspace's version: otherwise an install of the runtime
    from its metadata (pip, `uv pip check`) pulls or reports another plugin_api than the
    one its hosts get."""
    runtime = tomllib.loads((ROOT / "pyproject.toml").read_text())
    api = tomllib.loads((ROOT / "plugin_api" / "pyproject.toml").read_text())
    wanted = [
        Requirement(text)
        for text in runtime["project"]["dependencies"]
        if Requirement(text).name == api["project"]["name"]
    ]
    assert len(wanted) == 1, "the runtime names copycat-plugin-api once"
    assert wanted[0].specifier.contains(api["project"]["version"]), (
        f"pyproject.toml requires {wanted[0]}, the workspace's plugin_api is "
        f"{api['project']['version']}"
    )
