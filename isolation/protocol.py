"""The host boundary's operation names, event kinds and answer shapes, for the worker side.

They are defined in :mod:`isolation._hostside.copycat_protocol`, which plugin hosts import
too; the worker's code reaches them here (the import contract keeps ``core`` off the host
side's private modules).
"""

from __future__ import annotations

from isolation._hostside.copycat_protocol import (
    NO_SINK_ACTIONS,
    RAISE_ERROR,
    REQUEST_TASK_RECONFIGURATION,
    ConnectorEvent,
    ErrorInfo,
    HostInfo,
    PollResult,
    SinkActions,
    SourceStarted,
)

__all__ = [
    "NO_SINK_ACTIONS",
    "RAISE_ERROR",
    "REQUEST_TASK_RECONFIGURATION",
    "ConnectorEvent",
    "ErrorInfo",
    "HostInfo",
    "PollResult",
    "SinkActions",
    "SourceStarted",
]
