"""The worker's side of a :class:`~core.runtime.spec.TaskSpec`: from configs to a spec.

Everything a task needs from the worker is decided here, once, where the worker's config and
plugin catalogue are: which plugin environments hold the connector and each converter,
transform and predicate (KIP-891 version pins honoured), the parsed ``errors.*`` policy, and
each Kafka client's config in Kafka Connect's order of precedence. What comes out is plain
data that any driver can run (:func:`core.runtime.build.build_task`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from core.client_overrides import AllPolicy, ConnectorClientConfigOverridePolicy, override_errors
from core.connector_config import SINK_CONNECTOR_CONFIG_DEF, ConnectorConfig
from core.kafka import (
    SINK_CONSUMER_DEFAULTS,
    SOURCE_PRODUCER_DEFAULTS,
    consumer_keys,
    librdkafka_keys,
)
from core.plugins import PluginCatalogue
from core.runtime.hosted import cannot_share
from core.runtime.spec import (
    DATA_PATH_HOST,
    DATA_PATH_WORKER,
    ClientConfigs,
    ErrorsPolicy,
    ExactlyOnceSpec,
    PipelineSpec,
    PluginRef,
    StageSpec,
    TaskSettings,
    TaskSpec,
    TransformSpec,
)
from core.secrets import secrets_of
from core.worker_config import CONVERTER_KEYS, WorkerConfig
from isolation.environment import PluginDescriptor
from plugin_api import ConfigDef, ConfigException, ConfigValue

__all__ = [
    "STANDALONE_GROUP_ID",
    "TaskSpecFactory",
    "plugin_ref",
    "source_dead_letter_queue_errors",
    "task_transactional_id",
]

log = logging.getLogger("copycat.worker")

# Kafka Connect's dead letter queue producer has its source tasks' settings (both from
# Worker.java's baseProducerConfigs): no record lost on broker failover, none reordered.
DLQ_PRODUCER_DEFAULTS: dict[str, Any] = SOURCE_PRODUCER_DEFAULTS
# The first part of a standalone worker's transactional ids when its config has no group.id
# (Kafka runs exactly-once sources in distributed mode only, where group.id is required).
STANDALONE_GROUP_ID = "connect-standalone"


def task_transactional_id(group_id: str, connector: str, task_id: int) -> str:
    """Kafka's ``Worker.taskTransactionalId``: one id per task of a connector in a cluster, so
    a new instance of the task (anywhere in the cluster) fences out every older one."""
    return f"{group_id}-{connector}-{task_id}"


def plugin_ref(catalogue: PluginCatalogue, plugin: PluginDescriptor) -> PluginRef:
    env = catalogue.environment(plugin)
    return PluginRef(
        kind=plugin.kind,
        target=plugin.target,
        class_name=plugin.class_name,
        version=plugin.version,
        distribution=plugin.distribution,
        location=plugin.location,
        env_hash=env.content_hash(),
    )


class TaskSpecFactory:
    """Makes the specs of one worker's tasks (thread-safe: it only reads)."""

    def __init__(
        self,
        config: WorkerConfig,
        catalogue: PluginCatalogue,
        client_props: Mapping[str, Any],
        *,
        override_policy: ConnectorClientConfigOverridePolicy | None = None,
    ) -> None:
        self.config = config
        self.override_policy = override_policy if override_policy is not None else AllPolicy()
        self.catalogue = catalogue
        self.client_props = dict(client_props)
        self.settings = TaskSettings(
            graceful_timeout_s=config.get("task.shutdown.graceful.timeout.ms") / 1000,
            call_timeout_s=config.get("plugin.call.timeout.ms") / 1000,
            memory_limit_bytes=config.get("plugin.host.memory.max.bytes"),
            commit_interval_s=config.get("offset.flush.interval.ms") / 1000,
            topic_creation_enabled=bool(config.get("topic.creation.enable")),
            finish_join_before_close=bool(config.get("sink.group.join.finish.before.close")),
        )
        self.data_path_choice = str(config.get("task.data.path")).lower()
        # (environment locations and content hashes) -> why not in the host (None: it can).
        self._sharing: dict[tuple[tuple[str, str], ...], str | None] = {}
        self._sharing_lock = threading.Lock()

    def make(
        self,
        connector: str,
        task_id: int,
        plugin: PluginDescriptor,
        connector_props: Mapping[str, str],
        task_props: Mapping[str, str],
        version: str = "",
        *,
        exactly_once: bool = False,
    ) -> TaskSpec:
        """The spec of task ``task_id`` of ``connector`` (configs already resolved);
        ``exactly_once``: a source task run transactionally (the herder decides).

        Raises:
            ConfigException: a converter, transform or predicate is not installed, or a key
                of the connector config is invalid; names the key.
        """
        is_sink = plugin.kind == "sink"
        config = ConnectorConfig.from_properties(
            connector_props,
            is_sink,
            topic_creation_enabled=self.settings.topic_creation_enabled,
        )
        own_limit = connector_props.get("plugin.host.memory.max.bytes")
        settings = self.settings
        if own_limit not in (None, ""):
            settings = TaskSettings(**{**settings.__dict__, "memory_limit_bytes": int(own_limit)})
        self._check_overrides(plugin.kind, plugin.class_name, connector_props, exactly_once)
        eos = self._exactly_once(connector, task_id, config) if exactly_once else None
        clients = self._clients(connector, task_id, config, is_sink)
        if eos is not None:
            clients = ClientConfigs(
                producer=_transactional(
                    clients.producer, eos.transactional_id, connector, self._user_producer(config)
                ),
                consumer=clients.consumer,
                admin=clients.admin,
                dlq_producer=clients.dlq_producer,
            )
        pipeline = self._pipeline(config, plugin)
        return TaskSpec(
            connector=connector,
            task_id=task_id,
            kind=plugin.kind,
            task_config=dict(task_props),
            connector_config=dict(connector_props),
            plugin=plugin_ref(self.catalogue, plugin),
            pipeline=pipeline,
            errors=errors_policy(config),
            clients=clients,
            settings=settings,
            version=version,
            exactly_once=eos,
            data_path=self._data_path(f"{connector}-{task_id}", plugin, pipeline, eos is not None),
            secrets=secrets_of(connector),
        )

    def _check_overrides(
        self, kind: str, class_name: str, props: Mapping[str, str], exactly_once: bool
    ) -> None:
        """Refuse client overrides the worker's policy forbids. Validation refuses them
        first; this catches configs stored before the policy was tightened (Kafka's Worker
        checks again the same way), naming the keys only: their values are credentials."""
        refused = override_errors(
            self.override_policy, kind, class_name, props, exactly_once=exactly_once
        )
        if refused:
            key, message = refused[0]
            keys = ", ".join(dict.fromkeys(k for k, _ in refused))
            exc = ConfigException(f"Client config overrides not allowed: {keys}. {message}")
            exc.name = key
            raise exc

    def offsets_producer(
        self, connector: str, connector_props: Mapping[str, str]
    ) -> dict[str, Any]:
        """The producer config that writes altered or reset offsets of exactly-once source
        connector ``connector`` (configs resolved): its task 0's, transactional id included,
        as Kafka's Worker uses for them. Initialising it fences out task 0's older producers,
        and the offsets are one transaction of their own.

        Raises:
            ConfigException: a key of the connector config is invalid; names the key.
        """
        self._check_overrides(
            "source", connector_props.get("connector.class", ""), connector_props, True
        )
        config = ConnectorConfig.from_properties(
            connector_props, False, topic_creation_enabled=self.settings.topic_creation_enabled
        )
        producer = self._clients(connector, 0, config, False).producer
        return _transactional(
            producer,
            self._exactly_once(connector, 0, config).transactional_id,
            connector,
            self._user_producer(config),
        )

    def _user_producer(self, config: ConnectorConfig) -> dict[str, Any]:
        """The producer settings a user set, without Copycat's defaults: the worker's client
        keys and ``producer.*``, the connector's ``producer.override.*``."""
        return {
            **self.client_props,
            **self.config.producer_overrides(),
            **config.producer_overrides(),
        }

    def _exactly_once(
        self, connector: str, task_id: int, config: ConnectorConfig
    ) -> ExactlyOnceSpec:
        """A source task's KIP-618 settings: its transactional id and transaction boundary
        (``transaction.boundary.interval.ms`` defaults to ``offset.flush.interval.ms``)."""
        group = self.config.group_id or STANDALONE_GROUP_ID
        interval_ms = config.transaction_boundary_interval_ms
        return ExactlyOnceSpec(
            transactional_id=task_transactional_id(group, connector, task_id),
            boundary=(config.transaction_boundary or "poll").lower(),
            interval_s=(
                interval_ms / 1000 if interval_ms is not None else self.settings.commit_interval_s
            ),
        )

    def _data_path(
        self, task: str, plugin: PluginDescriptor, pipeline: PipelineSpec, exactly_once: bool
    ) -> str:
        """Where the task's data path runs (``task.data.path``, see core/runtime/hosted.py).
        An exactly-once source task's runs in the worker (docs/architecture.md, "Exactly-once
        sources keep their data path in the worker").

        Raises:
            ConfigException: ``task.data.path=host`` and the task's plugins cannot share the
                runtime's data path modules, or the task runs exactly-once.
        """
        if self.data_path_choice == DATA_PATH_WORKER:
            return DATA_PATH_WORKER
        if exactly_once:
            if self.data_path_choice == DATA_PATH_HOST:
                raise ConfigException(
                    "task.data.path",
                    DATA_PATH_HOST,
                    f"task {task} runs exactly-once (exactly.once.source.support=enabled), and "
                    "an exactly-once source task's data path runs in the worker: set "
                    "task.data.path=auto or worker",
                )
            return DATA_PATH_WORKER
        envs = [self.catalogue.environment(plugin)]
        envs += [self.catalogue.environment_at(ref.location) for _, ref in pipeline.attachments()]
        key = tuple((str(env.location), env.content_hash()) for env in envs)
        with self._sharing_lock:
            if key not in self._sharing:
                self._sharing[key] = cannot_share(envs)
            reason = self._sharing[key]
        if reason is None:
            return DATA_PATH_HOST
        if self.data_path_choice == DATA_PATH_HOST:
            raise ConfigException(
                "task.data.path", DATA_PATH_HOST, f"task {task} cannot run in its host: {reason}"
            )
        log.info("task %s: data path in the worker: %s", task, reason)
        return DATA_PATH_WORKER

    # -- pipeline ----------------------------------------------------------------------------

    def _stage(
        self,
        kind: str,
        class_name: str,
        version: str | None,
        key: str,
        config: Mapping[str, str],
        home: PluginDescriptor,
    ) -> StageSpec:
        plugin = self.catalogue.resolve(kind, class_name, version, key=key)
        ref = None if plugin.location == home.location else plugin_ref(self.catalogue, plugin)
        return StageSpec(plugin.target, dict(config), ref, key)

    def _converter(
        self, config: ConnectorConfig, which: str, home: PluginDescriptor
    ) -> StageSpec | None:
        own = config.converter_class(which)
        if own is not None:
            class_name: str | None = own
            sub = dict(config.converter_config(which) or {})
        else:
            class_name = self.config.get(which)
            sub = self.config.converter_config(which)
        if not class_name:
            return None
        version = sub.pop("plugin.version", None)
        sub.setdefault("converter.type", which.split(".")[0])
        kind = "header_converter" if which == "header.converter" else "converter"
        return self._stage(kind, class_name, version, which, sub, home)

    def _pipeline(self, config: ConnectorConfig, home: PluginDescriptor) -> PipelineSpec:
        key, value, header = (self._converter(config, w, home) for w in CONVERTER_KEYS)
        predicates = config.predicates()
        transforms = []
        for t in config.transforms():
            sub = dict(t.config)
            version = sub.pop("plugin.version", None)
            prefix = f"transforms.{t.alias}."
            transform = self._stage("transformation", t.type, version, prefix + "type", sub, home)
            predicate = None
            if t.predicate:
                found = predicates.get(t.predicate)
                pkey = f"predicates.{t.predicate}.type"
                if found is None:
                    raise ConfigException(
                        pkey,
                        None,
                        f"predicate {t.predicate!r} used by transform {t.alias!r} is not defined",
                    )
                psub = dict(found.config)
                pversion = psub.pop("plugin.version", None)
                predicate = self._stage("predicate", found.type, pversion, pkey, psub, home)
            transforms.append(TransformSpec(t.alias, transform, predicate, t.negate))
        return PipelineSpec(key, value, header, tuple(transforms))

    # -- clients -----------------------------------------------------------------------------

    def _clients(
        self, connector: str, task_id: int, config: ConnectorConfig, is_sink: bool
    ) -> ClientConfigs:
        """Kafka Connect's order: the worker's client keys, Connect's defaults, the worker's
        ``producer.``/``consumer.``/``admin.`` overrides, the connector's ``*.override.``;
        Java client keys then take their librdkafka names (:func:`librdkafka_keys`)."""
        base = self.client_props
        worker = self.config
        admin = librdkafka_keys({**base, **worker.admin_overrides(), **config.admin_overrides()})
        dlq = librdkafka_keys(
            {
                **base,
                **DLQ_PRODUCER_DEFAULTS,
                "client.id": f"connector-dlq-producer-{connector}-{task_id}",
                **worker.producer_overrides(),
                **config.producer_overrides(),
            }
        )
        if is_sink:
            consumer = consumer_keys(
                librdkafka_keys(
                    {
                        **base,
                        **SINK_CONSUMER_DEFAULTS,
                        "group.id": f"connect-{connector}",
                        "client.id": f"connector-consumer-{connector}-{task_id}",
                        **worker.consumer_overrides(),
                        **config.consumer_overrides(),
                    }
                )
            )
            user_set = {**worker.consumer_overrides(), **config.consumer_overrides()}
            if "metadata.max.age.ms" in user_set and (
                "topic.metadata.refresh.interval.ms" not in user_set
            ):
                consumer["topic.metadata.refresh.interval.ms"] = metadata_refresh_ms(
                    user_set["metadata.max.age.ms"]
                )
            if config.topics_regex:
                # The sink subscribes to the topics its pattern matched, by name (see
                # core.runtime.sink): auto-creation would bring back a matched topic deleted
                # since, which Kafka's pattern subscription never does, whatever the setting.
                consumer["allow.auto.create.topics"] = False
            return ClientConfigs(consumer=consumer, admin=admin, dlq_producer=dlq)
        producer = librdkafka_keys(
            {
                **base,
                **SOURCE_PRODUCER_DEFAULTS,
                "client.id": f"connector-producer-{connector}-{task_id}",
                **worker.producer_overrides(),
                **config.producer_overrides(),
            }
        )
        return ClientConfigs(producer=producer, admin=admin, dlq_producer=dlq)


# librdkafka's bounds for topic.metadata.refresh.interval.ms (its maximum, an hour), and the
# shortest refresh a sink takes (Java's metadata.max.age.ms=0 refreshes at every poll; a
# topics.regex sink lists the cluster's topics at this interval).
METADATA_REFRESH_MIN_MS = 1_000
METADATA_REFRESH_MAX_MS = 3_600_000


def metadata_refresh_ms(max_age_ms: Any) -> int:
    """A sink consumer's ``topic.metadata.refresh.interval.ms`` for Java's ``metadata.max.age.ms``
    (how often Kafka's consumer refreshes its metadata, so sees new topics and partitions;
    librdkafka's key of that name is only its cache's expiry), within librdkafka's bounds."""
    try:
        wanted = int(str(max_age_ms).strip())
    except ValueError:
        return int(SINK_CONSUMER_DEFAULTS["topic.metadata.refresh.interval.ms"])
    return min(max(wanted, METADATA_REFRESH_MIN_MS), METADATA_REFRESH_MAX_MS)


def _transactional(
    producer: Mapping[str, Any],
    transactional_id: str,
    connector: str,
    user_set: Mapping[str, Any],
) -> dict[str, Any]:
    """An exactly-once task's producer config: Kafka's ``ensureProperty`` for idempotence
    (required by transactions) and the transactional id (never the user's: two tasks sharing
    one would fence each other), each overriding what was set. As in Kafka, a warning only
    for a value the user set (``user_set``): Copycat's own default enable.idempotence=false
    is no one's mistake."""
    config = dict(producer)
    for key, value in (("enable.idempotence", True), ("transactional.id", transactional_id)):
        given = user_set.get(key)
        if given is not None and str(given).lower() != str(value).lower():
            log.warning(
                "connector %s: ignoring %s=%s in its producer config; exactly-once source "
                "support needs %s",
                connector,
                key,
                given,
                value,
            )
        config[key] = value
    return config


def errors_policy(config: ConnectorConfig) -> ErrorsPolicy:
    """``errors.*`` of a parsed connector config (sink-only keys default for sources)."""
    if config.is_sink:
        dlq_topic = config.errors_deadletterqueue_topic_name
        configured = config.errors_deadletterqueue_topic_replication_factor
        replication = 3 if configured is None else configured
        context_headers = config.errors_deadletterqueue_context_headers_enable
    else:
        values = _source_dead_letter_queue(config.originals())
        for value in values.values():
            if value.error_messages:  # each message names the key and the value
                raise ConfigException(value.error_messages[0])
        dlq_topic = values["errors.deadletterqueue.topic.name"].value or None
        replication = values["errors.deadletterqueue.topic.replication.factor"].value or 3
        context_headers = bool(values["errors.deadletterqueue.context.headers.enable"].value)
    return ErrorsPolicy(
        tolerance_all=config.errors_tolerance == "all",
        log_enable=config.errors_log_enable,
        log_include_messages=config.errors_log_include_messages,
        retry_timeout_ms=config.errors_retry_timeout_ms,
        retry_delay_max_ms=config.errors_retry_delay_max_ms,
        dlq_topic=dlq_topic or None,
        dlq_replication_factor=replication,
        dlq_context_headers=context_headers,
    )


# A dead letter queue for sources is ours, beyond Kafka: its keys are not in the source
# ConfigDef (so config/validate lists them only when wrong), and mean what a sink's do.
_SOURCE_DLQ_KEYS = (
    "errors.deadletterqueue.topic.name",
    "errors.deadletterqueue.topic.replication.factor",
    "errors.deadletterqueue.context.headers.enable",
)
_SOURCE_DLQ_DEF = ConfigDef(SINK_CONNECTOR_CONFIG_DEF.keys[k] for k in _SOURCE_DLQ_KEYS)


def _source_dead_letter_queue(props: Mapping[str, object]) -> dict[str, ConfigValue]:
    return {v.name: v for v in _SOURCE_DLQ_DEF.validate(props)}


def source_dead_letter_queue_errors(props: Mapping[str, object]) -> list[tuple[str, str]]:
    """``(key, message)`` for each invalid dead letter queue key of a source connector, so
    validation refuses what making its task specs would (a replication factor of "abc")."""
    return [
        (value.name, message)
        for value in _source_dead_letter_queue(props).values()
        for message in value.error_messages
    ]
