"""How a plugin host's failures reach the worker.

Exceptions::

    plugin_api.ConnectException
     ├── PluginHostError            the host itself failed (not plugin code)
     │    ├── PluginHostCrashed      it exited or was killed (exit reason + output tail)
     │    └── PluginHostTimeout      a request outlived its deadline (the host was killed)
     └── RemotePluginError          plugin code raised; carries the plugin's own traceback
          ├── RemoteRetriableError   (also a RetriableException; ``retry_after_ms``)
          ├── RemoteDataError        (also a DataException)
          └── RemoteConfigError      (also a ConfigException)

A plugin's exception crosses the channel as data (:class:`ErrorInfo`) and is rebuilt here by
its kind, so ``except RetriableException`` in the worker catches a plugin's retriable error.
"""

from __future__ import annotations

import signal

from isolation._hostside import copycat_protocol as protocol
from isolation._hostside.copycat_protocol import ErrorInfo
from plugin_api import ConfigException, ConnectException, DataException, RetriableException

__all__ = [
    "ErrorInfo",
    "PluginHostCrashed",
    "PluginHostError",
    "PluginHostTimeout",
    "RemoteConfigError",
    "RemoteDataError",
    "RemotePluginError",
    "RemoteRetriableError",
    "describe_exit",
    "remote_error",
]


class PluginHostError(ConnectException):
    """The plugin host process failed (as opposed to plugin code raising an exception)."""


class PluginHostCrashed(PluginHostError):
    """The plugin host exited or was killed while the worker needed it."""

    def __init__(self, message: str, exit_reason: str, stderr_tail: str) -> None:
        super().__init__(message)
        self.exit_reason = exit_reason
        self.stderr_tail = stderr_tail


class PluginHostTimeout(PluginHostError):
    """A request to the plugin host did not complete in time; the host was killed."""


class RemotePluginError(ConnectException):
    """Plugin code raised inside its host; ``remote_traceback`` is the plugin's traceback."""

    def __init__(self, plugin: str, info: ErrorInfo) -> None:
        super().__init__(f"{plugin}: {info.type}: {info.message}")
        self.plugin = plugin
        self.info = info
        self.remote_type = info.type
        self.remote_message = info.message
        self.remote_traceback = info.traceback
        self.kind = info.kind
        # The plugin returned what the API forbids, rather than raising an error of its own.
        self.broke_contract = info.kind == protocol.CONTRACT
        # Re-raised through an enclosing host, it crosses as the plugin's error (see there).
        setattr(self, protocol.CARRIED_ERROR_INFO, tuple(info))
        if info.setup:  # a task's setup failed in the host, before its start()
            setattr(self, protocol.TASK_SETUP_FAILED, True)


class RemoteRetriableError(RemotePluginError, RetriableException):
    @property
    def retry_after_ms(self) -> int | None:
        """For a retriable put(): the delay the task asked for with ``context.timeout()``."""
        return self.info.retry_after_ms


class RemoteDataError(RemotePluginError, DataException):
    pass


class RemoteConfigError(RemotePluginError, ConfigException):
    def __init__(self, plugin: str, info: ErrorInfo) -> None:
        RemotePluginError.__init__(self, plugin, info)
        self.name = None


_REMOTE_BY_KIND: dict[str, type[RemotePluginError]] = {
    protocol.RETRIABLE: RemoteRetriableError,
    protocol.DATA: RemoteDataError,
    protocol.CONFIG: RemoteConfigError,
}


def remote_error(plugin: str, info: ErrorInfo) -> RemotePluginError:
    """The worker-side exception for a plugin's exception described by ``info``."""
    return _REMOTE_BY_KIND.get(info.kind, RemotePluginError)(plugin, info)


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name} (signal {-returncode})"
    return f"exited with code {returncode}"
