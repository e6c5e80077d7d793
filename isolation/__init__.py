"""Plugin environments and plugin host processes.

Every plugin runs in a host process started from its own venv's interpreter; the worker talks
to it through a typed client (:class:`HostClient`) over a channel (:class:`HostChannel`: a host
process, the in-process twin for tests, or :class:`DirectHost` where a task's data path runs
in the plugin's own host) and survives its crashes and hangs.
"""

from __future__ import annotations

from isolation._hostside.copycat_batch import ConsumedBatch, MessageBatch, ProducedBatch
from isolation._hostside.copycat_errors import exception_trace, retry_backoff_s
from isolation._hostside.copycat_protocol import (
    NO_SINK_ACTIONS,
    TASK_SETUP_FAILED,
    ConnectorEvent,
    ErrorInfo,
    HostInfo,
    PollResult,
    SinkActions,
    SourceStarted,
)
from isolation.channel import Frame, HostChannel
from isolation.client import HostClient
from isolation.direct import DirectHost
from isolation.environment import (
    ENTRY_POINT_GROUPS,
    PluginDescriptor,
    PluginEnvironment,
    PluginEnvironmentError,
)
from isolation.errors import (
    PluginHostCrashed,
    PluginHostError,
    PluginHostTimeout,
    RemoteConfigError,
    RemoteDataError,
    RemotePluginError,
    RemoteRetriableError,
)
from isolation.host import DEFAULT_CALL_TIMEOUT_S, SHUTDOWN_GRACE_S, PluginHost
from isolation.inprocess import InProcessHost

__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "ENTRY_POINT_GROUPS",
    "NO_SINK_ACTIONS",
    "SHUTDOWN_GRACE_S",
    "TASK_SETUP_FAILED",
    "ConnectorEvent",
    "ConsumedBatch",
    "MessageBatch",
    "ProducedBatch",
    "DirectHost",
    "ErrorInfo",
    "Frame",
    "HostChannel",
    "HostClient",
    "HostInfo",
    "InProcessHost",
    "PluginDescriptor",
    "PluginEnvironment",
    "PluginEnvironmentError",
    "PluginHost",
    "PluginHostCrashed",
    "PluginHostError",
    "PluginHostTimeout",
    "PollResult",
    "RemoteConfigError",
    "RemoteDataError",
    "RemotePluginError",
    "RemoteRetriableError",
    "SinkActions",
    "SourceStarted",
    "exception_trace",
    "retry_backoff_s",
]
