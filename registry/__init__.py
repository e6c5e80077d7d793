"""Plugin discovery and installation under plugin.path (the marketplace client builds on it)."""

from __future__ import annotations

from registry.installer import (
    PluginInstallError,
    PluginNotFoundError,
    find,
    install,
    remove,
    scan,
)

__all__ = ["PluginInstallError", "PluginNotFoundError", "find", "install", "remove", "scan"]
