"""Loading worker extensions into one pluggy plugin manager (the hooks are in core.hookspecs)."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

import pluggy

from core import hookspecs
from core.client_overrides import (
    BUILTIN_POLICIES,
    POLICY_KEY,
    ConnectorClientConfigOverridePolicy,
)
from core.config_providers import BUILTIN_PROVIDERS, ConfigProvider, ConfigResolver
from core.hookspecs import hookimpl
from core.worker_config import WorkerConfig
from plugin_api import ConfigException

log = logging.getLogger("copycat.extensions")

ENTRY_POINT_GROUP = "copycat.worker_extensions"
# Kafka's REST extension class names and the Copycat classes that stand in for them.
KAFKA_REST_EXTENSIONS = {
    "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension": (
        "core.rest.basic_auth:BasicAuthSecurityRestExtension"
    ),
    "BasicAuthSecurityRestExtension": "core.rest.basic_auth:BasicAuthSecurityRestExtension",
}


class _Builtins:
    """The config providers and client override policies every worker has."""

    @hookimpl
    def copycat_config_providers(self) -> Mapping[str, Callable[[], ConfigProvider]]:
        return BUILTIN_PROVIDERS

    @hookimpl
    def copycat_client_config_override_policies(
        self,
    ) -> Mapping[str, Callable[[], ConnectorClientConfigOverridePolicy]]:
        return BUILTIN_POLICIES


def import_class(target: str, key: str, what: str) -> Any:
    """The object a worker config's ``key`` names as ``module.Class`` or ``module:Class``.

    Raises:
        ConfigException: it cannot be imported (naming ``key``, ``target`` and ``what``).
    """
    module, sep, attr = target.partition(":")
    if not sep:
        module, _, attr = target.rpartition(".")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigException(key, target, f"cannot load the {what}: {exc}") from exc
    return obj


def plugin_manager(config: WorkerConfig) -> pluggy.PluginManager:
    """The worker's extensions: built-ins, ``rest.extension.classes`` and entry points."""
    from core.rest.tls import TlsExtension  # the https listener support is itself a plugin

    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    pm.register(_Builtins(), name="copycat-builtin-providers")
    pm.register(TlsExtension(), name="copycat-tls")
    for name in config.get("rest.extension.classes") or []:
        cls = import_class(
            KAFKA_REST_EXTENSIONS.get(name, name), "rest.extension.classes", "REST extension"
        )
        extension = cls() if isinstance(cls, type) else cls
        configure = getattr(extension, "configure", None)
        if callable(configure):
            configure(config.originals_strings())
        pm.register(extension, name=name)
        log.info("loaded REST extension %s", name)
    pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    return pm


def config_resolver(config: WorkerConfig, pm: pluggy.PluginManager) -> ConfigResolver:
    factories: dict[str, Callable[[], ConfigProvider]] = {}
    # pluggy calls the last registered first, so the built-ins come last and win on clashes.
    for offered in pm.hook.copycat_config_providers():
        factories.update(offered)
    return ConfigResolver.from_worker_config(
        config.config_providers, config.provider_configs(), factories
    )


def override_policy(
    config: WorkerConfig, pm: pluggy.PluginManager
) -> ConnectorClientConfigOverridePolicy:
    """The worker's ``connector.client.config.override.policy``, made and configured.

    Raises:
        ConfigException: no built-in or extension offers a policy of that name (the worker
            must not start with a policy it cannot enforce).
    """
    factories: dict[str, Callable[[], ConnectorClientConfigOverridePolicy]] = {}
    # pluggy calls the last registered first, so the built-ins come last and win on clashes.
    for offered in pm.hook.copycat_client_config_override_policies():
        factories.update(offered)
    name = str(config.connector_client_config_override_policy).strip()
    factory = factories.get(name)
    if factory is None:
        known = ", ".join(n for n in factories if "." not in n)
        raise ConfigException(
            POLICY_KEY, name, f"unknown client config override policy (known: {known})"
        )
    policy = factory()
    configure = getattr(policy, "configure", None)
    if callable(configure):
        configure(config.originals_strings())
    log.info("connector client config override policy: %s", name)
    return policy
