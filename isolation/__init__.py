"""Plugin environments and plugin host processes.

Every plugin runs in a host process started from its own venv's interpreter; the worker talks
to it through a batched RPC and survives its crashes and hangs.
"""

from __future__ import annotations

from isolation._hostside.copycat_batch import ConsumedBatch
from isolation.environment import (
    ENTRY_POINT_GROUPS,
    PluginDescriptor,
    PluginEnvironment,
    PluginEnvironmentError,
)
from isolation.host import (
    PluginHost,
    PluginHostCrashed,
    PluginHostError,
    PluginHostTimeout,
    RemotePluginError,
)

__all__ = [
    "ConsumedBatch",
    "ENTRY_POINT_GROUPS",
    "PluginDescriptor",
    "PluginEnvironment",
    "PluginEnvironmentError",
    "PluginHost",
    "PluginHostCrashed",
    "PluginHostError",
    "PluginHostTimeout",
    "RemotePluginError",
]
