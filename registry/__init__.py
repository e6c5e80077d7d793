"""Plugin discovery and installation under plugin.path, locks and wheelhouses, the index.

The public surface: :func:`install` / :func:`remove` / :func:`scan` / :func:`find` (one
locked venv per plugin version), :func:`export_wheelhouse` and :func:`build_env_offline`
(an env's locked wheels out, and the same env built again with no network: what the Spark
data plane ships to executors), and :func:`rebuild_from_lock`. The index server lives in
:mod:`registry.server`, the author tools in :mod:`registry.authoring`.
"""

from __future__ import annotations

from registry.installer import (
    PluginInstallError,
    PluginNotFoundError,
    find,
    install,
    rebuild_from_lock,
    remove,
    scan,
)
from registry.locks import Lock, LockError, build_env_offline, export_wheelhouse

__all__ = [
    "Lock",
    "LockError",
    "PluginInstallError",
    "PluginNotFoundError",
    "build_env_offline",
    "export_wheelhouse",
    "find",
    "install",
    "rebuild_from_lock",
    "remove",
    "scan",
]
