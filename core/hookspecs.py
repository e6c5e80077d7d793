"""How the worker can be extended: every pluggy hook, grouped by when the worker calls it.

Worker extensions run *inside* the worker process (unlike connector plugins, which run in
plugin hosts), so they are installed into the worker's own environment. They are found in
two ways:

* ``rest.extension.classes`` in the worker config names classes (``module.Class`` or
  ``module:Class``; Kafka's ``BasicAuthSecurityRestExtension`` maps to ours). Each is
  instantiated with no arguments, given the worker config through ``configure(props)`` if it
  has that method, and registered as a pluggy plugin.
* Distributions may declare entry points in the group ``copycat.worker_extensions``; each
  entry point's object is registered as a plugin.

A plugin implements any subset of the hooks below with ``@core.hookspecs.hookimpl``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import ssl

    from core.client_overrides import ConnectorClientConfigOverridePolicy
    from core.config_providers import ConfigProvider
    from core.worker_config import WorkerConfig

PROJECT = "copycat"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# -- worker start-up -------------------------------------------------------------------------


@hookspec
def copycat_config_providers() -> Mapping[str, Callable[[], ConfigProvider]]:
    """Config provider classes this plugin offers, by class name (and any aliases).

    Called once while the worker starts, before any connector config is resolved; the
    results of all plugins are merged (a later plugin does not replace a built-in name).
    ``config.providers.<alias>.class`` may then name any of them.
    """
    raise NotImplementedError


@hookspec
def copycat_client_config_override_policies() -> Mapping[
    str, Callable[[], ConnectorClientConfigOverridePolicy]
]:
    """Client config override policies this plugin offers (KIP-458), by name and aliases.

    Called once while the worker starts; the results of all plugins are merged (a later
    plugin does not replace a built-in name: All, None, Principal and Kafka's class names).
    ``connector.client.config.override.policy`` may then name any of them; a name nobody
    offers stops the worker from starting. See :mod:`core.client_overrides`.
    """
    raise NotImplementedError


# -- REST server -----------------------------------------------------------------------------


@hookspec
def copycat_rest_extension(app: Any, worker_config: WorkerConfig) -> None:
    """Extend the REST application (a FastAPI app) before it serves its first request.

    Called once per listener app, on the worker's main thread, after every built-in route is
    registered. Typical uses: ``app.add_middleware(...)`` for authentication, extra routes.
    Raising stops the worker from starting (a misconfigured security extension must never
    leave the API open).
    """


@hookspec(firstresult=True)
def copycat_rest_ssl_context(listener: str, worker_config: WorkerConfig) -> ssl.SSLContext | None:
    """The TLS context for an ``https://`` listener; ``firstresult``: the first non-None wins.

    Called once per https listener while the REST server binds. Returning None from every
    plugin makes the worker refuse to start that listener.
    """


# -- metrics ---------------------------------------------------------------------------------


@hookspec
def copycat_metrics_reporters(worker_config: WorkerConfig) -> list[Any]:
    """Metrics reporters this plugin adds to the worker's (besides ``metric.reporters``).

    Called once while the worker starts. Each reporter gets ``configure(props)`` with the
    worker config, then ``init(metrics)``, ``metric_change(metric)``,
    ``metric_removal(metric)`` and ``close()`` (Kafka's MetricsReporter, snake_case; any
    subset). See :mod:`core.metric_reporters`.
    """
    raise NotImplementedError
