"""The herder: the seam between the REST API and whatever runs connectors.

:class:`Herder` is what the REST layer calls (standalone now, distributed later). Its methods
take and return Kafka Connect's REST JSON shapes as plain dicts, run on a REST threadpool
thread, may block (starting a connector takes a plugin host start, ~0.1 s), and report failure
only through the :class:`HerderError` tree, which maps one to one onto HTTP statuses::

    plugin_api.ConnectException
     └── HerderError                 500
          ├── BadRequestError        400  (a ConfigException from a herder is also a 400)
          ├── ForbiddenError         403  (topic tracking disabled)
          ├── NotFoundError          404
          ├── ConflictError          409  (exists already; rebalance in progress)
          │    └── NotLeaderError    409  (only the leader can; carries its URL for forwarding)
          └── RequestTimeoutError    500  (the operation goes on; Kafka's "Request timed out")

:class:`AbstractHerder` holds what does not depend on the mode: validation (the framework's
ConfigDef merged with the plugin's own, computed in a plugin host), plugin listings and
config definitions, status rendering and secret scrubbing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from plugin_api.config import ConfigType, config_infos, parse_type

from core import secrets
from core.client_key_types import check_client_override_types
from core.client_overrides import (
    AllPolicy,
    ConnectorClientConfigOverridePolicy,
    clients_used,
    java_hash_order,
    override_errors,
)
from core.config_providers import ConfigResolver, Resolved
from core.connector_config import (
    CONVERTER_KEYS,
    alias_list,
    connector_config_def,
    connector_config_infos,
)
from core.exactly_once_validation import exactly_once_errors
from core.host_pool import HostPool
from core.plugin_versions import plugin_version_key, version_order
from core.plugins import AmbiguousPluginName, PluginCatalogue, VersionNotFound
from core.status import Status
from core.stores.config import TargetState
from core.task_specs import source_dead_letter_queue_errors
from isolation import DEFAULT_CALL_TIMEOUT_S
from isolation.environment import PluginDescriptor
from plugin_api import ConfigException, ConnectException

__all__ = [
    "HEALTHY",
    "AbstractHerder",
    "AlreadyExistsError",
    "BadRequestError",
    "ConflictError",
    "ForbiddenError",
    "Herder",
    "HerderError",
    "Health",
    "NotFoundError",
    "NotLeaderError",
    "RequestTimeoutError",
    "TargetState",
]

log = logging.getLogger("copycat.herder")

# How long a call that needs the plugin catalogue waits for the bundled plugins' first-time
# install (measured at 3-12 s on a busy 2-core machine, see docs/benchmarks.md).
BUNDLED_INSTALL_WAIT_S = 120.0
# How often a start-up wait for that install looks whether a stop was requested.
STOP_CHECK_S = 0.2
# In Kafka Connect's order of GET /connector-plugins (its ConnectorPluginsResource).
PLUGIN_TYPES = ("sink", "source", "transformation", "predicate", "converter", "header_converter")
_INVALID_CONFIG = "Connector configuration is invalid and contains the following {n} error(s):"
_VALIDATE_HINT = (
    "You can also find the above list of errors at the endpoint "
    "`/connector-plugins/{connectorType}/config/validate`"
)
# Kafka's AbstractHerder, on each key of a submitted config whose value is a JSON null.
NULL_VALUE_ERROR = "Null value can not be supplied as the configuration value."


def _embedded_messages(
    bare: str, name: str, type_name: str, props: Mapping[str, str]
) -> dict[str, str]:
    """A transform's or predicate's messages that Kafka words with the full key.

    Kafka embeds the plugin's definition under ``transforms.<alias>.``: a missing key and a
    value that does not parse are reported by the connector's definition, with the full key;
    the plugin's own validators still see the short key (``Invalid value [a] for
    configuration renames``). Converters are validated on their own, all with the short key.
    """
    reworded = {_missing(bare): _missing(name)}
    raw = props.get(bare)
    if raw is not None:
        try:
            parse_type(bare, raw, ConfigType(type_name))
        except ConfigException as exc:
            try:
                parse_type(name, raw, ConfigType(type_name))
            except ConfigException as full:
                reworded[str(exc)] = str(full)
        except ValueError:  # a type this runtime does not know: nothing to reword
            pass
    return reworded


def _missing(name: str) -> str:
    return f'Missing required configuration "{name}" which has no default value.'


@dataclass(frozen=True)
class Health:
    """What ``GET /health`` says (KIP-1017): ``healthy`` (200), ``starting`` (503) or
    ``unhealthy`` (500), and why, appended to Kafka's message (Kafka appends the stage its
    herder thread was stuck in)."""

    status: Literal["healthy", "starting", "unhealthy"]
    detail: str | None = None


HEALTHY = Health("healthy")


class HerderError(ConnectException):
    status = 500


class BadRequestError(HerderError):
    status = 400


class ForbiddenError(HerderError):
    status = 403


class NotFoundError(HerderError):
    status = 404


class ServiceUnavailableError(HerderError):
    status = 503


class ConflictError(HerderError):
    status = 409


class AlreadyExistsError(ConflictError):
    pass


class NotLeaderError(ConflictError):
    """This worker cannot apply the request: only the group's leader can (distributed mode).

    ``leader_url`` is the leader's REST URL when known; REST forwards the request there
    (``?forward=`` semantics as Kafka's), or answers 409 while a rebalance leaves no leader.
    """

    def __init__(self, message: str, leader_url: str | None = None) -> None:
        super().__init__(message)
        self.leader_url = leader_url


class RequestTimeoutError(HerderError):
    """The operation a REST call asked for did not finish in time; it goes on regardless."""

    status = 500


class Herder(Protocol):
    """What REST needs from a herder. Every method may raise :class:`HerderError`."""

    worker_id: str

    def ready(self) -> bool: ...
    def health(self, timeout_s: float) -> Health:
        """The worker's health (KIP-1017): starting until it can serve requests, unhealthy
        if it does not answer within ``timeout_s`` or cannot serve them any more."""
        ...

    def server_info(self) -> dict[str, Any]: ...
    def connectors(self) -> list[str]: ...
    def connector_info(self, name: str) -> dict[str, Any]: ...
    def connector_config(self, name: str) -> dict[str, str]: ...

    def create_connector(
        self, name: str, config: Mapping[str, str], initial_state: TargetState | None = None
    ) -> dict[str, Any]:
        """Create ``name``; ``initial_state`` None: the request gave none (it starts)."""
        ...

    def put_connector_config(
        self, name: str, config: Mapping[str, str]
    ) -> tuple[bool, dict[str, Any]]:
        """Create or replace; returns (created, ConnectorInfo)."""
        ...

    def patch_connector_config(
        self, name: str, patch: Mapping[str, str | None]
    ) -> dict[str, Any]: ...
    def delete_connector(self, name: str) -> None: ...
    def connector_status(self, name: str) -> dict[str, Any]: ...
    def task_status(self, name: str, task: int) -> dict[str, Any]: ...
    def task_configs(self, name: str) -> list[dict[str, Any]]: ...

    def restart_connector(
        self, name: str, include_tasks: bool, only_failed: bool
    ) -> dict[str, Any] | None:
        """None for the legacy connector-only restart, else the 202 status body."""
        ...

    def restart_task(self, name: str, task: int) -> None: ...
    def pause_connector(self, name: str) -> None: ...
    def resume_connector(self, name: str) -> None: ...
    def stop_connector(self, name: str) -> None: ...
    def connector_offsets(self, name: str) -> dict[str, Any]: ...
    def alter_connector_offsets(self, name: str, offsets: list[dict[str, Any]]) -> str: ...
    def reset_connector_offsets(self, name: str) -> str: ...
    def active_topics(self, name: str) -> list[str]: ...
    def reset_active_topics(self, name: str) -> None: ...
    def validate_connector_config(self, config: Mapping[str, str | None]) -> dict[str, Any]: ...
    def ensure_valid(self, config: Mapping[str, str | None]) -> dict[str, Any]:
        """Validate for create/update; a 400 listing every error."""
        ...

    def plugins(self, connectors_only: bool) -> list[dict[str, Any]]: ...
    def plugin_config(self, plugin: str, version: str | None = None) -> list[dict[str, Any]]:
        """Config definitions of ``plugin`` (of ``version``, a KIP-891 version or range)."""
        ...

    def plugins_in_use(self) -> dict[str, list[str]]:
        """Plugin location -> names of the running connectors that use it."""
        ...


def normalized_plugin_name(name: str) -> str:
    """Kafka's ConnectorPluginsResource.normalizedPluginName: drop a ``Connector`` suffix."""
    return name[: -len("Connector")] if name.endswith("Connector") and name != "Connector" else name


def status_entry(status: Status, scrub: Resolved | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"state": status.state.value, "worker_id": status.worker_id}
    if status.trace:  # Kafka omits an empty trace (@JsonInclude(NON_EMPTY))
        trace = scrub.scrub(status.trace) if scrub is not None else status.trace
        body["trace"] = secrets.scrub(trace)
    # Kafka leaves the version out only when it is "undefined" (PluginInfo.NoVersionFilter):
    # one not known yet (a RESTARTING or UNASSIGNED entry) is a null.
    if status.version != "undefined":
        body["version"] = status.version or None
    return body


class AbstractHerder:
    """Mode-independent herder logic; subclasses provide the connector store and the worker."""

    catalogue: PluginCatalogue
    resolver: ConfigResolver
    topic_creation_enabled: bool = True
    # connector.client.config.override.policy: which *.override.* keys connectors may set.
    override_policy: ConnectorClientConfigOverridePolicy = AllPolicy()
    # Deadline of each plugin call made for validation (plugin.call.timeout.ms).
    plugin_call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
    # Warm hosts for validation and config definitions (core/host_pool.py).
    host_pool: HostPool
    # exactly.once.source.support of this worker: with "enabled", source connectors are
    # validated for it (core/exactly_once_validation.py). Standalone workers need each source
    # connector's offsets in a topic of its own for that.
    exactly_once_source: str = "disabled"
    exactly_once_needs_offsets_topic: bool = False
    # Whether that validation runs whatever exactly_once_source is (distributed workers, as
    # Kafka's DistributedHerder: "required" on a worker without the support is an error).
    exactly_once_always_validated: bool = False
    # The first-time install of the bundled plugins, when one runs in the background: calls
    # that resolve plugins wait for it rather than answer "not installed" meanwhile.
    bundled_install: threading.Thread | None = None

    # Whether plugin.path was rescanned after that install ended.
    _bundled_scanned: bool = False
    # Set by the process's SIGTERM/SIGINT/SIGHUP handler (core/bootstrap.py): every start-up
    # wait (for that install, for the Kafka cluster, between reading the internal topics) ends
    # at once, and the worker takes no work (Kafka exits on a signal during its start-up).
    stop_requested: threading.Event | None = None

    def _stop_requested(self) -> bool:
        return self.stop_requested is not None and self.stop_requested.is_set()

    def _plugins_settled(
        self, waiting: str = "waiting for the bundled plugins' first-time install to finish"
    ) -> None:
        """Wait (up to :data:`BUNDLED_INSTALL_WAIT_S`) for the bundled plugins' first-time
        install, and make sure the catalogue has scanned what it installed."""
        install = self.bundled_install
        if install is None:
            return
        if install.is_alive():
            log.info("%s", waiting)
            deadline = time.monotonic() + BUNDLED_INSTALL_WAIT_S
            while install.is_alive() and not self._stop_requested():
                if (left := deadline - time.monotonic()) <= 0:
                    break
                install.join(min(left, STOP_CHECK_S))
        if not install.is_alive() and not self._bundled_scanned:
            # The live catalogue looks at plugin.path at most every RESCAN_INTERVAL_S, and a
            # lookup made while another thread rescans gets the older snapshot: a create
            # that waited for the install was refused "available: none". Rescan now; a
            # concurrent caller waits on the catalogue's lock and sees the new snapshot.
            self.catalogue.refresh(force=True)
            self._bundled_scanned = True

    def _installing_bundled(self) -> str | None:
        """Why the worker is still starting while the bundled plugins' first-time install
        runs (for ``/health``), or None when none runs."""
        install = self.bundled_install
        if install is None or not install.is_alive():
            return None
        return "It is installing the bundled plugins (first start with this plugin.path)."

    def _await_bundled_plugins(self) -> None:
        """Wait for the bundled plugins' first-time install, then rescan plugin.path, before
        this worker takes any work: Kafka Connect scans its plugins before its herder starts
        (before a distributed worker joins its group), so no connector or task lands on a
        worker that has not got its plugin yet. A task that did failed for good ("no
        connector plugin named ... is installed") and nothing retried it.

        Bounded by :data:`BUNDLED_INSTALL_WAIT_S`: an install still running after that is
        logged and the worker starts with what is installed (its progress shows in the log).
        """
        self._plugins_settled(
            "waiting for the bundled plugins' first-time install before taking work"
        )
        install = self.bundled_install
        if self._stop_requested():
            log.info("stopping: the worker takes no work (the bundled plugins' install ends)")
        elif install is not None and install.is_alive():
            log.error(
                "the bundled plugins' first-time install is still running after %.0f s; "
                "starting without them (work naming them fails until they are installed)",
                BUNDLED_INSTALL_WAIT_S,
            )

    # -- plugins -------------------------------------------------------------------------------

    def plugins(self, connectors_only: bool) -> list[dict[str, Any]]:
        self._plugins_settled()
        kinds = PLUGIN_TYPES[:2] if connectors_only else PLUGIN_TYPES
        seen: set[tuple[str, str, str]] = set()
        out = []
        for kind in kinds:
            # by class name, then version, oldest first (Kafka's PluginDesc order)
            plugins = self.catalogue.of_kind(kind)
            for plugin in sorted(plugins, key=lambda p: (p.class_name, version_order(p.version))):
                key = (plugin.class_name, kind, plugin.version)
                if key in seen:
                    continue
                seen.add(key)
                entry = {"class": plugin.class_name, "type": kind}
                if plugin.version and plugin.version != "undefined":
                    entry["version"] = plugin.version
                out.append(entry)
        return out

    def _find_plugin(self, name: str, version: str | None = None) -> PluginDescriptor:
        self._plugins_settled()
        found_other_version: ConfigException | None = None
        ambiguous: AmbiguousPluginName | None = None
        for kind in ("connector", "converter", "header_converter", "transformation", "predicate"):
            try:
                return self.catalogue.resolve(kind, name, version)
            except AmbiguousPluginName as exc:
                ambiguous = exc
            except VersionNotFound as exc:
                found_other_version = exc  # the plugin exists, not in that version
            except ConfigException as exc:
                if version and exc.name and exc.name.endswith("plugin.version"):
                    # Kafka's answer to a range it cannot parse
                    raise BadRequestError(f"Invalid version specification: {version}") from None
                continue
        if found_other_version is not None:
            # Kafka: a 400 with its "not found that matches the version range" message
            raise BadRequestError(str(found_other_version))
        if ambiguous is not None:
            raise NotFoundError(
                f"Unknown plugin {name}: it is ambiguous ({', '.join(ambiguous.claimants)}); "
                "use the full class name"
            )
        raise NotFoundError(f"Unknown plugin {name}.")

    def _plugin_infos(self, plugin: PluginDescriptor, props: Mapping[str, str]) -> dict[str, Any]:
        """The plugin's own ``config/validate`` body, computed in a warm plugin host."""
        env = self.catalogue.environment(plugin)
        with self.host_pool.lease(env, f"validate:{plugin.name}") as host:
            handle = host.new(plugin.target)
            try:
                return host.validate(handle, props)
            finally:
                if host.alive:
                    host.drop(handle)

    def _exactly_once_errors(
        self, plugin: PluginDescriptor, props: Mapping[str, str]
    ) -> list[tuple[str, str]]:
        """KIP-618 pre-flight checks of a source connector, on a fresh instance."""
        env = self.catalogue.environment(plugin)
        with self.host_pool.lease(env, f"validate:{plugin.name}") as host:
            handle = host.new(plugin.target)
            try:
                return exactly_once_errors(
                    host,
                    handle,
                    props,
                    worker_enabled=self.exactly_once_source == "enabled",
                    needs_offsets_topic=self.exactly_once_needs_offsets_topic,
                )
            finally:
                if host.alive:
                    host.drop(handle)

    def plugin_config(self, name: str, version: str | None = None) -> list[dict[str, Any]]:
        """Config definitions of a plugin (KIP-769), of ``version`` if given (KIP-891; the
        newest otherwise); for connectors, framework keys first."""
        plugin = self._find_plugin(name, version)
        own = [c["definition"] for c in self._plugin_infos(plugin, {})["configs"]]
        if plugin.kind not in ("source", "sink"):
            return own
        names = {d["name"] for d in own}
        framework = config_infos(connector_config_def({}, plugin.kind == "sink"), {})
        return [
            c["definition"] for c in framework["configs"] if c["definition"]["name"] not in names
        ] + own

    # -- validation ----------------------------------------------------------------------------

    def validate_connector_config(self, config: Mapping[str, str | None]) -> dict[str, Any]:
        """Kafka's ``ConfigInfos`` for a connector config: framework + plugin keys, always a body.

        Placeholders are resolved for validation; the response shows the submitted values
        (placeholders), PASSWORD values as ``[hidden]``, and no error message quotes a secret.
        A key given a JSON null is, as in Kafka, checked by a framework key's validator as
        null and is an error of its own ("Null value can not be supplied ..."), unless the
        plugin defines the key (Kafka's plugin validation then replaces the key's entry).

        Raises:
            HerderError: a config provider failed (500, its message, as Kafka answers).
        """
        nulls = [key for key, value in config.items() if value is None]
        present = {key: value for key, value in config.items() if value is not None}
        infos, own = self._validate_present(present, nulls)
        for key in nulls:
            if key not in own:
                self._add_error(infos, key, NULL_VALUE_ERROR, defined=False)
        infos["error_count"] = sum(len(c["value"]["errors"]) for c in infos["configs"])
        return infos

    def _validate_present(
        self, config: Mapping[str, str], nulls: list[str]
    ) -> tuple[dict[str, Any], set[str]]:
        """``validate_connector_config`` of the keys with a value (the framework's validators
        also see the ``nulls`` keys as null), and the names of the plugin's own keys."""
        self._plugins_settled()
        connector_class = config.get("connector.class")
        if not connector_class:
            raise BadRequestError("Connector config contains no connector type")
        try:
            resolved = self.resolver.resolve(config)
        except ConfigException as exc:
            # Kafka resolves before it validates: a provider's failure is no validation
            # error but the request's, a 500 with the provider's message (on create too).
            raise HerderError(str(exc)) from None
        try:
            plugin = self.catalogue.resolve(
                "connector", connector_class, config.get("connector.plugin.version")
            )
        except ConfigException as exc:
            own_names: set[str] = set()
            infos = connector_config_infos(
                {**resolved.config, **dict.fromkeys(nulls)},
                None,
                connector_class,
                topic_creation_enabled=self.topic_creation_enabled,
            )
            if isinstance(exc, VersionNotFound):
                self._add_error(infos, exc.class_key, str(exc))
            self._add_error(infos, exc.name or "connector.class", str(exc))
        else:
            infos = connector_config_infos(
                {**resolved.config, **dict.fromkeys(nulls)},
                plugin.kind == "sink",
                plugin.class_name,
                topic_creation_enabled=self.topic_creation_enabled,
            )
            framework_names = {c["value"]["name"] for c in infos["configs"]}
            own = self._plugin_infos(plugin, resolved.config)
            own_names = set()
            by_name = {c["value"]["name"]: c for c in infos["configs"]}
            for entry in own["configs"]:
                framework = by_name.get(entry["value"]["name"])
                if framework is None:
                    own_names.add(entry["value"]["name"])
                    infos["configs"].append(entry)
                    continue
                # A plugin redefining a framework key (FileStreamSink's topics) describes it,
                # but the framework's errors on it stand: replaced, a sink with no topics
                # passed validation and failed on start.
                errors = framework["value"]["errors"] + entry["value"]["errors"]
                framework.update(entry)
                framework["value"]["errors"] = list(dict.fromkeys(errors))
            infos["groups"] += [g for g in own["groups"] if g not in infos["groups"]]
            self._check_component_classes(infos, resolved.config)
            exactly_once = self.exactly_once_source == "enabled"
            try:
                check_client_override_types(
                    clients_used(plugin.kind, resolved.config, exactly_once=exactly_once),
                    resolved.config,
                )
            except ConfigException as exc:
                # Kafka parses an override's value with its client key's type before it asks
                # the policy, and a value that does not parse fails the request (500), as a
                # failing config provider does: no validation error on the key.
                raise HerderError(resolved.scrub(str(exc))) from None
            for key, message in override_errors(
                self.override_policy,
                plugin.kind,
                plugin.class_name,
                resolved.config,
                exactly_once=exactly_once,
            ):
                self._add_error(infos, key, message)
            if plugin.kind == "source":
                for key, message in source_dead_letter_queue_errors(resolved.config):
                    self._add_error(infos, key, message)
            if plugin.kind == "source" and (
                self.exactly_once_source == "enabled" or self.exactly_once_always_validated
            ):
                for key, message in self._exactly_once_errors(plugin, resolved.config):
                    self._add_error(infos, key, message)
            _order_as_kafka(infos, resolved.config, framework_names, own_names)
        self._show_submitted(infos, config, resolved)
        infos["error_count"] = sum(len(c["value"]["errors"]) for c in infos["configs"])
        return infos, own_names

    @staticmethod
    def _add_error(
        infos: dict[str, Any], key: str, message: str, *, defined: bool = True, first: bool = False
    ) -> None:
        """``message`` on ``key``'s entry (before its others when ``first``); for a key with
        none, a new entry (Kafka's has no definition when no ConfigDef knows the key:
        ``defined`` False)."""
        for entry in infos["configs"]:
            if entry["value"]["name"] == key:
                errors = entry["value"]["errors"]
                errors.insert(0 if first else len(errors), message)
                return
        infos["configs"].append(
            {
                "definition": None
                if not defined
                else {
                    "name": key,
                    "type": "STRING",
                    "required": False,
                    "default_value": None,
                    "importance": "HIGH",
                    "documentation": "",
                    "group": None,
                    "width": "NONE",
                    "display_name": key,
                    "dependents": [],
                    "order": -1,
                },
                "value": {
                    "name": key,
                    "value": None,
                    "recommended_values": [],
                    "errors": [message],
                    "visible": True,
                },
            }
        )

    def _check_component_classes(self, infos: dict[str, Any], props: Mapping[str, str]) -> None:
        """Errors for converter, transformation and predicate classes that are not installed."""
        checks = [
            (k, "header_converter" if k == "header.converter" else "converter")
            for k in ("key.converter", "value.converter", "header.converter")
        ]
        # Only the declared aliases' ".type" keys name classes: a transform's own setting may
        # end in ".type" too (TimestampConverter's "transforms.<alias>.target.type").
        for list_key, kind in (("transforms", "transformation"), ("predicates", "predicate")):
            for alias in dict.fromkeys(alias_list(props.get(list_key) or "")):
                if f"{list_key}.{alias}.type" in props:
                    checks.append((f"{list_key}.{alias}.type", kind))
        usable: set[str] = set()
        for key, kind in checks:
            value = props.get(key)
            if value is None:
                # An empty class name is checked (resolve() refuses it): skipped here, it
                # passed validation and the connector was stored and started, to fail only
                # when its task specs were made.
                continue
            version_key = plugin_version_key(key)
            try:
                plugin = self.catalogue.resolve(kind, value, props.get(version_key), key=key)
            except VersionNotFound as exc:
                # Kafka: an error on the class key and on its version key alike
                self._add_error(infos, key, str(exc))
                self._add_error(infos, version_key, str(exc))
                continue
            except ConfigException as exc:
                if exc.name == version_key:
                    # a malformed range: Kafka reports it on a converter's version key, and on
                    # a transform's or predicate's class key too
                    if not key.endswith(".converter"):
                        self._add_error(infos, key, str(exc))
                    self._add_error(infos, version_key, str(exc))
                elif str(exc).endswith("could not be found.") and not key.endswith(".converter"):
                    # the value's parse failing: before any validator's message on the key
                    self._add_error(infos, key, str(exc), first=True)
                elif not _refused_before_class_check(infos, key, str(exc)):
                    self._add_error(infos, key, str(exc))
                continue
            usable.add(key)
            if key.endswith(".converter"):
                self._add_component_infos(
                    infos, key, key + ".", plugin, props, {"converter.type": key.split(".")[0]}
                )
            else:  # transforms.<alias>.type / predicates.<alias>.type
                self._add_component_infos(infos, key, key[: -len("type")], plugin, props, {})
        self._drop_unused_transform_keys(infos, props, usable)

    @staticmethod
    def _drop_unused_transform_keys(
        infos: dict[str, Any], props: Mapping[str, str], usable: set[str]
    ) -> None:
        """Kafka defines a transform's ``predicate`` and ``negate`` keys with the transform's
        own, only once its class is there to be used: for a missing, unknown or abstract
        class they are neither listed nor checked (a ``negate=yes`` is then no error)."""
        unused = {
            prefix + sub
            for alias in dict.fromkeys(alias_list(props.get("transforms") or ""))
            if (prefix := f"transforms.{alias}.") + "type" not in usable
            for sub in ("predicate", "negate")
        }
        infos["configs"] = [c for c in infos["configs"] if c["value"]["name"] not in unused]

    # Keys under a transform's or predicate's prefix that the framework, not the plugin, owns.
    _FRAMEWORK_SUBKEYS = frozenset(
        {"type", "predicate", "negate", "plugin.version", "converter.type"}
    )

    def _add_component_infos(
        self,
        infos: dict[str, Any],
        key: str,
        prefix: str,
        plugin: PluginDescriptor,
        props: Mapping[str, str],
        defaults: Mapping[str, str],
    ) -> None:
        """A converter's, transform's or predicate's own keys, validated by the plugin in a
        host and reported under their prefixed names (``value.converter.schemas.enable``,
        ``transforms.mask.fields``), so a bad SMT or converter config fails before start."""
        sub = {k[len(prefix) :]: v for k, v in props.items() if k.startswith(prefix)}
        sub.pop("plugin.version", None)
        for name, value in defaults.items():
            sub.setdefault(name, value)
        try:
            own = self._plugin_infos(plugin, sub)
        except ConnectException as exc:
            self._add_error(
                infos, key, f"cannot validate the configuration of {plugin.name}: {exc}"
            )
            return
        present = {c["value"]["name"] for c in infos["configs"]}
        # A converter's converter.type is its own key, listed and checked as Kafka does
        # (``key.converter.converter.type=foo`` is an error); ours defaults it by position.
        owned = self._FRAMEWORK_SUBKEYS - ({"converter.type"} if defaults else set())
        entries = own["configs"]
        if key.endswith(".converter"):
            # Kafka validates a converter's config into a HashMap keyed by the bare names:
            # its entries, and a refused create's errors, come in that map's order.
            order = java_hash_order([e["value"]["name"] for e in entries])
            entries = sorted(entries, key=lambda e: order.index(e["value"]["name"]))
        for entry in entries:
            name = prefix + entry["value"]["name"]
            bare = entry["value"]["name"]
            if bare in owned or name in present:
                continue
            entry["definition"]["name"] = entry["value"]["name"] = name
            if not key.endswith(".converter"):
                reworded = _embedded_messages(bare, name, entry["definition"]["type"], sub)
                errors = entry["value"]["errors"]
                entry["value"]["errors"] = [reworded.get(m, m) for m in errors]
            infos["configs"].append(entry)

    @staticmethod
    def _show_submitted(
        infos: dict[str, Any], config: Mapping[str, str], resolved: Resolved
    ) -> None:
        for entry in infos["configs"]:
            value = entry["value"]
            raw = config.get(value["name"])
            if entry["definition"]["type"] == "PASSWORD":
                value["value"] = "[hidden]" if value["value"] is not None else None
            elif raw is not None and "${" in raw:
                value["value"] = raw
            value["errors"] = [resolved.scrub(m) for m in value["errors"]]

    def ensure_valid(self, config: Mapping[str, str | None]) -> dict[str, Any]:
        """Validate for create/update; raise Kafka's 400 listing every error."""
        infos = self.validate_connector_config(config)
        if infos["error_count"]:
            # Every key's errors, the same message on two keys twice, as Kafka lists them
            messages = [m for c in infos["configs"] for m in c["value"]["errors"]]
            raise BadRequestError(
                "\n".join([_INVALID_CONFIG.format(n=len(messages)), *messages, _VALIDATE_HINT])
            )
        return infos

    # -- status rendering ------------------------------------------------------------------------

    @staticmethod
    def render_status(
        name: str,
        kind: str,
        connector: Status | None,
        tasks: Mapping[int, Status],
        scrub: Resolved | None = None,
    ) -> dict[str, Any]:
        if connector is None:
            raise NotFoundError(f"No status found for connector {name}")
        return {
            "name": name,
            "connector": status_entry(connector, scrub),
            "tasks": [{"id": t, **status_entry(s, scrub)} for t, s in sorted(tasks.items())],
            "type": kind,
        }


def _refused_before_class_check(infos: dict[str, Any], key: str, message: str) -> bool:
    """Whether Kafka's validator of a transform's class key stopped before it looked at the
    class: it refuses a ``negate`` without a ``predicate`` first, so an abstract class or one
    of another kind is then not reported (a class that is not there at all still is: that
    is the value's parse failing, before any validator)."""
    if not message.startswith(("This class is abstract", "Class class ")):
        return False
    errors: list[str] = next(
        (c["value"]["errors"] for c in infos["configs"] if c["value"]["name"] == key), []
    )
    return any(e.endswith("defining a predicate to be negated.") for e in errors)


def _order_as_kafka(
    infos: dict[str, Any],
    props: Mapping[str, str],
    framework: set[str],
    own: set[str],
) -> None:
    """Put the entries (and so the errors a refused create lists) in Kafka's order: the
    framework's keys; each transform's (its class, then its own keys with ``predicate`` and
    ``negate``, as Kafka's ``ConfigDef.sortedConfigs`` lists them) and each predicate's in
    the order listed; the connector's own keys; the converters' keys; anything added after
    (client overrides) last, as it came."""
    aliases = {
        group: list(dict.fromkeys(alias_list(props.get(group) or "")))
        for group in ("transforms", "predicates")
    }
    importance = {"HIGH": 0, "MEDIUM": 1, "LOW": 2}

    def rank(entry: dict[str, Any]) -> tuple[int, int, int, int, str]:
        name: str = entry["value"]["name"]
        for place, group in enumerate(("transforms", "predicates"), start=1):
            # the longest alias whose prefix fits: "a.b" before "a" for "transforms.a.b.x"
            fits = [
                (len(a), i)
                for i, a in enumerate(aliases[group])
                if name.startswith(f"{group}.{a}.")
            ]
            if fits:
                size, index = max(fits)
                bare = name[len(group) + size + 2 :]
                if bare == "type":
                    return place, index, 0, 0, ""
                # Kafka embeds a transform's keys (with predicate and negate) as its
                # ConfigDef.sortedConfigs() lists them: those without a default first, then
                # by importance, then by name
                definition = entry["definition"] or {}
                required = 0 if definition.get("required") else 1
                weight = importance.get(definition.get("importance", "LOW"), 2)
                return place, index, 1 + required, weight, bare
        if name in framework:
            return 0, 0, 0, 0, ""
        if name in own:
            return 3, 0, 0, 0, ""
        if name.startswith(tuple(f"{key}." for key in CONVERTER_KEYS)):
            return 4, 0, 0, 0, ""
        return 5, 0, 0, 0, ""

    infos["configs"].sort(key=rank)
