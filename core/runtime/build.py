"""One function turns a :class:`TaskSpec` plus services into a running task loop.

Every driver calls it: the worker's task thread today, a Spark executor and a distributed
worker tomorrow. It starts the task's plugin host, loads the pipeline's converter, transform
and predicate plugins into it child-first, starts the task in the host, makes the Kafka
clients and the error reporter, and returns the loop (:class:`core.runtime.loop.TaskLoop`).
On any failure the host is closed and the exception propagates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.errors import ErrorReporter
from core.runtime.hosted import start_hosted
from core.runtime.loop import TaskLoop
from core.runtime.services import TaskServices
from core.runtime.sink import SinkTaskLoop, cooperative_protocol
from core.runtime.source import SourceTaskLoop, producer_settings
from core.runtime.spec import DATA_PATH_HOST, TaskSpec
from core.topics import TopicCreator
from isolation import HostClient, RemotePluginError
from plugin_api import ConfigException, ConnectException

__all__ = ["build_task"]


def build_task(
    spec: TaskSpec,
    services: TaskServices,
    *,
    on_host: Callable[[HostClient], None] = lambda host: None,
    should_stop: Callable[[], bool] = lambda: False,
) -> TaskLoop:
    """Start ``spec``'s task and return its loop, ready for :meth:`TaskLoop.start`.

    ``on_host`` receives the task's plugin host as soon as it exists, so that a driver can
    reclaim (kill) a task whose ``start()`` hangs; ``should_stop`` lets a stop requested
    meanwhile abandon the start, and lets the loop give up waiting on a dead broker.

    ``spec.data_path`` says where the loop and its Kafka clients run: here (the host sees only
    bytes), or in the plugin host next to the plugin (:mod:`core.runtime.hosted`; the loop
    returned is then the worker's handle on the one running there).
    """
    if spec.data_path == DATA_PATH_HOST:
        return start_hosted(spec, services, on_host=on_host, should_stop=should_stop)
    offsets = services.offsets
    host = services.hosts.start(
        spec.plugin,
        spec.name,
        callbacks={"offsets": lambda partitions: offsets.get(spec.connector, partitions)},
        call_timeout_s=spec.settings.call_timeout_s,
        memory_limit_bytes=spec.settings.memory_limit_bytes,
    )
    on_host(host)
    try:
        if should_stop():
            raise ConnectException(f"task {spec.name} was stopped while it started")
        return _start(spec, services, host, should_stop)
    except BaseException:
        host.close(spec.settings.graceful_timeout_s)
        raise


def _start(
    spec: TaskSpec,
    services: TaskServices,
    host: HostClient,
    should_stop: Callable[[], bool],
) -> TaskLoop:
    for key, plugin in spec.pipeline.attachments():
        try:
            host.attach(services.hosts.import_path(plugin))
        except RemotePluginError as exc:
            raise ConfigException(
                key,
                plugin.class_name,
                f"cannot load {plugin.distribution} into the task's plugin host: "
                f"{exc.remote_message}",
            ) from exc
    task_target = host.task_class(host.new(spec.plugin.target))
    handle = host.next_handle()
    clients = services.clients
    errors = ErrorReporter(
        spec.connector,
        spec.task_id,
        spec.errors,
        producer=lambda: clients.producer(spec.clients.dlq_producer),
        admin=lambda: clients.admin(spec.clients.admin),
    )
    pipeline = spec.pipeline.wire(spec.errors)
    try:
        if spec.kind == "source":
            return _source(spec, services, host, handle, task_target, pipeline, errors, should_stop)
        return _sink(spec, services, host, handle, task_target, pipeline, errors)
    except BaseException:
        errors.close()
        raise


def _source(
    spec: TaskSpec,
    services: TaskServices,
    host: HostClient,
    handle: int,
    task_target: str,
    pipeline: dict[str, Any],
    errors: ErrorReporter,
    should_stop: Callable[[], bool],
) -> SourceTaskLoop:
    started = host.start_source_task(handle, task_target, spec.task_config, pipeline)
    clients = services.clients
    creator = TopicCreator(
        lambda: clients.admin(spec.clients.admin),
        spec.connector_config,
        enabled=spec.settings.topic_creation_enabled,
    )
    holder: list[SourceTaskLoop] = []

    def delivery_failed(error: Any, message: Any) -> None:
        holder[0].delivery_failed(error, message)  # set below, before anything is produced

    producer = clients.producer(
        {
            **spec.clients.producer,
            **producer_settings(started.wants_acks),
            "on_delivery": delivery_failed,
        }
    )
    loop = SourceTaskLoop(
        spec.connector,
        spec.task_id,
        host,
        handle,
        producer,
        services.offsets,
        creator,
        wants_acks=started.wants_acks,
        errors=errors,
        commit_interval_s=spec.settings.commit_interval_s,
        clock=services.clock,
    )
    loop.should_stop = should_stop
    holder.append(loop)
    return loop


def _sink(
    spec: TaskSpec,
    services: TaskServices,
    host: HostClient,
    handle: int,
    task_target: str,
    pipeline: dict[str, Any],
    errors: ErrorReporter,
) -> SinkTaskLoop:
    host.start_sink_task(
        handle, task_target, spec.task_config, pipeline, spec.errors.reports_errant_records
    )
    holder: list[SinkTaskLoop] = []

    def on_commit(error: Any, partitions: Any) -> None:
        holder[0].on_commit(error, partitions)  # set below, before any consume()

    consumer = services.clients.consumer({**spec.clients.consumer, "on_commit": on_commit})
    loop = SinkTaskLoop(
        spec.connector,
        spec.task_id,
        host,
        handle,
        consumer,
        topics=spec.topics,
        topics_regex=spec.topics_regex,
        commit_interval_ms=int(spec.settings.commit_interval_s * 1000),
        clock=services.clock,
        errors=errors,
        cooperative=cooperative_protocol(spec.clients.consumer),
    )
    holder.append(loop)
    return loop
