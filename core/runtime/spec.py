"""What a task is, as data: :class:`TaskSpec`, picklable, complete, and resolved.

A spec carries everything a driver needs to run one task anywhere (a worker thread, a Spark
executor, a distributed worker): the resolved task and connector configs, the plugin and the
environment it lives in (with a content hash, so a remote runtime can tell whether its copy of
the environment is the right one), the converter/transform pipeline with each stage's own
plugin location, the Kafka client configs already merged and filtered, and the policies parsed
once. :func:`core.runtime.build.build_task` turns a spec plus injected services into a running
task; nothing else about the worker is needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DATA_PATH_HOST",
    "DATA_PATH_WORKER",
    "ClientConfigs",
    "ErrorsPolicy",
    "ExactlyOnceSpec",
    "PipelineSpec",
    "PluginRef",
    "StageSpec",
    "TaskSettings",
    "TaskSpec",
    "TransformSpec",
]


# Where a task's data path runs (the worker's ``task.data.path``, decided per task by the
# worker; see docs/architecture.md): the Kafka client and the loop in the worker, bytes crossing
# to the plugin host ...
DATA_PATH_WORKER = "worker"
# ... or everything in the plugin host, next to the plugin, the worker keeping the control plane.
DATA_PATH_HOST = "host"


@dataclass(frozen=True)
class PluginRef:
    """One plugin class and the environment it is installed in."""

    kind: str  # source | sink | converter | header_converter | transformation | predicate
    target: str  # entry point value, "module:Class"
    class_name: str
    version: str
    distribution: str  # "name==version"
    location: str  # the environment's path where the spec was made
    env_hash: str  # content identity of that environment (its manifest), see PluginEnvironment


@dataclass(frozen=True)
class StageSpec:
    """A converter, transformation or predicate: its class and its own config.

    ``plugin`` is where it is installed; None when it comes from the task's own environment
    (nothing to attach to the task's host).
    """

    target: str
    config: Mapping[str, str]
    plugin: PluginRef | None = None
    key: str = ""  # the connector config key that named it, for errors

    def wire(self) -> tuple[str, dict[str, str]]:
        return self.target, dict(self.config)


@dataclass(frozen=True)
class TransformSpec:
    alias: str
    transform: StageSpec
    predicate: StageSpec | None = None
    negate: bool = False


@dataclass(frozen=True)
class ErrorsPolicy:
    """``errors.*`` of one connector, parsed once (Kafka's ConnectorConfig error keys)."""

    tolerance_all: bool = False
    log_enable: bool = False
    log_include_messages: bool = False
    retry_timeout_ms: int = 0
    retry_delay_max_ms: int = 60_000
    dlq_topic: str | None = None
    dlq_replication_factor: int = 3
    dlq_context_headers: bool = False

    def host_config(self) -> dict[str, Any]:
        """What the plugin host's per-record error handling needs (as its config keys)."""
        return {
            "errors.retry.timeout": self.retry_timeout_ms,
            "errors.retry.delay.max.ms": self.retry_delay_max_ms,
            "errors.tolerance": "all" if self.tolerance_all else "none",
            "errors.deadletterqueue.topic.name": self.dlq_topic or "",
        }

    @property
    def reports_errant_records(self) -> bool:
        """Whether a sink task gets an errant record reporter (Kafka: DLQ or tolerance all)."""
        return self.dlq_topic is not None or self.tolerance_all


@dataclass(frozen=True)
class PipelineSpec:
    key_converter: StageSpec | None = None
    value_converter: StageSpec | None = None
    header_converter: StageSpec | None = None
    transforms: tuple[TransformSpec, ...] = ()

    def attachments(self) -> list[tuple[str, PluginRef]]:
        """``(config key, plugin)`` of each plugin environment the task's host must load
        child-first, each environment once, in pipeline order."""
        found: list[tuple[str, PluginRef]] = []
        seen: set[str] = set()
        stages: list[StageSpec | None] = [self.key_converter, self.value_converter]
        stages.append(self.header_converter)
        for t in self.transforms:
            stages += [t.transform, t.predicate]
        for stage in stages:
            if stage is not None and stage.plugin is not None:
                if stage.plugin.location not in seen:
                    seen.add(stage.plugin.location)
                    found.append((stage.key, stage.plugin))
        return found

    def wire(self, errors: ErrorsPolicy) -> dict[str, Any]:
        """The pipeline as the plugin host's start_*_task operations take it."""
        spec: dict[str, Any] = {}
        for key, stage in (
            ("key_converter", self.key_converter),
            ("value_converter", self.value_converter),
            ("header_converter", self.header_converter),
        ):
            if stage is not None:
                spec[key] = stage.wire()
        spec["transforms"] = [
            (
                t.alias,
                t.transform.wire(),
                t.predicate.wire() if t.predicate else None,
                t.negate,
                # the predicate's alias, so a config error of it names its key
                t.predicate.key.removeprefix("predicates.").removesuffix(".type")
                if t.predicate
                else None,
            )
            for t in self.transforms
        ]
        spec["errors"] = errors.host_config()
        return spec


@dataclass(frozen=True)
class ClientConfigs:
    """Every Kafka client a task makes, its config merged in Kafka Connect's order (worker
    client keys, Connect's defaults, worker ``producer.``/``consumer.``/``admin.`` overrides,
    the connector's ``*.override.`` keys) and filtered to client keys."""

    producer: Mapping[str, Any] = field(default_factory=dict)
    consumer: Mapping[str, Any] = field(default_factory=dict)
    admin: Mapping[str, Any] = field(default_factory=dict)
    dlq_producer: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskSettings:
    """The worker settings a task runs with."""

    graceful_timeout_s: float = 5.0
    call_timeout_s: float = 300.0
    memory_limit_bytes: int = 0
    commit_interval_s: float = 60.0
    topic_creation_enabled: bool = True
    # sink.group.join.finish.before.close (the dev broker's quirk, see SinkTaskLoop._finish_join)
    finish_join_before_close: bool = False


@dataclass(frozen=True)
class ExactlyOnceSpec:
    """How a source task runs exactly-once (KIP-618): set on the spec when the worker runs the
    task transactionally (``exactly.once.source.support=enabled``).

    ``transactional_id`` is Kafka's ``<group id>-<connector>-<task>``: a new instance of the
    task fences out every older one by initialising a producer with it. ``boundary`` is
    ``transaction.boundary`` (``poll``, ``interval`` or ``connector``); ``interval_s`` the
    length of an ``interval`` transaction.
    """

    transactional_id: str
    boundary: str = "poll"
    interval_s: float = 60.0

    @property
    def connector_boundaries(self) -> bool:
        return self.boundary == "connector"


@dataclass(frozen=True)
class TaskSpec:
    """One task of one connector, ready to run anywhere (see the module docstring)."""

    connector: str
    task_id: int
    kind: str  # "source" or "sink"
    task_config: Mapping[str, str]
    connector_config: Mapping[str, str]
    plugin: PluginRef
    pipeline: PipelineSpec = PipelineSpec()
    errors: ErrorsPolicy = ErrorsPolicy()
    clients: ClientConfigs = ClientConfigs()
    settings: TaskSettings = TaskSettings()
    version: str = ""  # the connector plugin's version(), shown in statuses
    exactly_once: ExactlyOnceSpec | None = None  # a source task run transactionally
    data_path: str = DATA_PATH_WORKER  # DATA_PATH_WORKER or DATA_PATH_HOST
    # The connector's values resolved by config providers (value -> placeholder), to scrub
    # from text the task writes where the worker's registry is not (DLQ headers in a host).
    secrets: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.connector}-{self.task_id}"

    @property
    def topics(self) -> list[str]:
        """A sink's ``topics`` (empty for sources or a ``topics.regex`` sink)."""
        raw = self.connector_config.get("topics", "")
        return [t.strip() for t in raw.split(",") if t.strip()]

    @property
    def topics_regex(self) -> str | None:
        return self.connector_config.get("topics.regex") or None

    @property
    def offsets_topic(self) -> str | None:
        """A source connector's own ``offsets.storage.topic`` (KIP-618), if it has one."""
        if self.kind != "source":
            return None
        return self.connector_config.get("offsets.storage.topic", "").strip() or None
