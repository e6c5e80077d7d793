"""One function turns a :class:`TaskSpec` plus services into a running task loop.

Every driver calls it: the worker's task thread today, a Spark executor and a distributed
worker tomorrow. It starts the task's plugin host, loads the pipeline's converter, transform
and predicate plugins into it child-first, starts the task in the host, makes the Kafka
clients and the error reporter, and returns the loop (:class:`core.runtime.loop.TaskLoop`).
On any failure the host is closed and the exception propagates.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaException

from core.errors import ErrorReporter
from core.kafka import JAVA_MAX_REQUEST_SIZE, wrap_kafka_error
from core.runtime.exactly_once import TRANSACTION_TIMEOUT_S, ExactlyOnceSourceTaskLoop
from core.runtime.hosted import start_hosted
from core.runtime.loop import TaskLoop
from core.runtime.services import TaskFencing, TaskServices
from core.runtime.sink import (
    TOPICS_REGEX_REFRESH_S,
    SinkTaskLoop,
    cooperative_protocol,
    max_records_per_put,
    offset_reset,
)
from core.runtime.source import LIBRDKAFKA_BATCH_SIZE, SourceTaskLoop, producer_settings
from core.runtime.spec import DATA_PATH_HOST, TaskSpec
from core.runtime.topic_ids import AdminTopicIds
from core.runtime.transactions import boundary_for
from core.stores.task_offsets import TaskOffsetStore
from core.topics import TopicCreator
from isolation import TASK_SETUP_FAILED, HostClient, RemotePluginError
from plugin_api import ConfigException, ConnectException

__all__ = ["build_task"]

log = logging.getLogger("copycat.worker")


def build_task(
    spec: TaskSpec,
    services: TaskServices,
    *,
    on_host: Callable[[HostClient], None] = lambda host: None,
    should_stop: Callable[[], bool] = lambda: False,
    fencing: TaskFencing | None = None,
) -> TaskLoop:
    """Start ``spec``'s task and return its loop, ready for :meth:`TaskLoop.start`.

    ``on_host`` receives the task's plugin host as soon as it exists, so that a driver can
    reclaim (kill) a task whose ``start()`` hangs; ``should_stop`` lets a stop requested
    meanwhile abandon the start, and lets the loop give up waiting on a dead broker.
    ``fencing`` runs around an exactly-once task's producer initialisation (KIP-618).

    ``spec.data_path`` says where the loop and its Kafka clients run: here (the host sees only
    bytes), or in the plugin host next to the plugin (:mod:`core.runtime.hosted`; the loop
    returned is then the worker's handle on the one running there). An exactly-once task's
    always runs here (:meth:`core.task_specs.TaskSpecFactory` decides).
    """
    if spec.data_path == DATA_PATH_HOST:
        return start_hosted(spec, services, on_host=on_host, should_stop=should_stop)
    offsets = services.offsets_for(spec) if spec.kind == "source" else None
    try:
        host = services.hosts.start(
            spec.plugin,
            spec.name,
            callbacks={
                "offsets": lambda partitions: (
                    offsets.get(spec.connector, partitions) if offsets is not None else {}
                )
            },
            call_timeout_s=spec.settings.call_timeout_s,
            memory_limit_bytes=spec.settings.memory_limit_bytes,
        )
    except BaseException:
        if offsets is not None:
            offsets.close()
        raise
    on_host(host)
    try:
        if should_stop():
            raise ConnectException(f"task {spec.name} was stopped while it started")
        return _start(spec, services, host, should_stop, offsets, fencing)
    except BaseException:
        host.close(spec.settings.graceful_timeout_s)
        if offsets is not None:
            offsets.close()
        raise


def _start(
    spec: TaskSpec,
    services: TaskServices,
    host: HostClient,
    should_stop: Callable[[], bool],
    offsets: TaskOffsetStore | None,
    fencing: TaskFencing | None,
) -> TaskLoop:
    clients = services.clients
    try:
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
    except BaseException as exc:
        # What Kafka's Worker.startTask sets up before the task runs (the plugins it loads,
        # its class; the host tags its converters and transforms the same way): "Failed to
        # start task", not WorkerTask's words for a start() that threw. Its dead letter queue
        # is WorkerTask's (doStart), as its consumer's subscription.
        setattr(exc, TASK_SETUP_FAILED, True)
        raise
    handle = host.next_handle()
    errors = ErrorReporter(
        spec.connector,
        spec.task_id,
        spec.errors,
        producer=lambda: clients.producer(spec.clients.dlq_producer),
        admin=lambda: clients.admin(spec.clients.admin),
        secrets=spec.secrets,
    )
    pipeline = spec.pipeline.wire(spec.errors)
    try:
        if spec.kind == "source":
            assert offsets is not None
            return _source(
                spec,
                services,
                host,
                handle,
                task_target,
                pipeline,
                errors,
                should_stop,
                offsets,
                fencing,
            )
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
    offsets: TaskOffsetStore,
    fencing: TaskFencing | None,
) -> SourceTaskLoop:
    clients = services.clients
    eos = spec.exactly_once
    holder: list[SourceTaskLoop] = []

    def delivery_failed(error: Any, message: Any) -> None:
        holder[0].delivery_failed(error, message)  # set below, before anything is produced

    producer: Any = None
    if eos is not None:
        # Before the task starts (and reads its offsets): the producer's initialisation
        # fences out older instances of the task, whose offsets could still change otherwise.
        # Whether the task wants per-record acks is known only once it started, so this
        # producer reports every delivery (a transaction's commit needs none of them).
        producer = clients.producer(
            {
                **spec.clients.producer,
                **producer_settings(per_record_acks=True),
                "on_delivery": delivery_failed,
            }
        )
        _init_transactions(spec, producer, fencing, should_stop)
    started = host.start_source_task(
        handle,
        task_target,
        spec.task_config,
        pipeline,
        connector_boundaries=eos is not None and eos.connector_boundaries,
    )
    creator = TopicCreator(
        lambda: clients.admin(spec.clients.admin),
        spec.connector_config,
        enabled=spec.settings.topic_creation_enabled,
    )
    if producer is None:
        producer = clients.producer(
            {
                **spec.clients.producer,
                **producer_settings(started.wants_acks),
                "on_delivery": delivery_failed,
            }
        )
    args = (spec.connector, spec.task_id, host, handle, producer, offsets, creator)
    kwargs: dict[str, Any] = {
        "wants_acks": started.wants_acks,
        "errors": errors,
        "commit_interval_s": spec.settings.commit_interval_s,
        "clock": services.clock,
        "on_stop": offsets.close,
        "max_request_size": int(
            spec.clients.producer.get("message.max.bytes", JAVA_MAX_REQUEST_SIZE)
        ),
        "batch_size": int(spec.clients.producer.get("batch.size", LIBRDKAFKA_BATCH_SIZE)),
    }
    loop: SourceTaskLoop
    if eos is None:
        loop = SourceTaskLoop(*args, **kwargs)
    else:
        loop = ExactlyOnceSourceTaskLoop(
            *args,
            exactly_once=eos,
            task_offsets=offsets,
            boundary=boundary_for(eos.boundary, eos.interval_s, services.clock),
            **kwargs,
        )
    loop.should_stop = should_stop
    holder.append(loop)
    return loop


def _init_transactions(
    spec: TaskSpec,
    producer: Any,
    fencing: TaskFencing | None,
    should_stop: Callable[[], bool],
) -> None:
    """Fence older generations (the herder), initialise the transactional producer (which
    fences older instances of this very task), then check the task is still current, as
    Kafka's ExactlyOnceWorkerSourceTask does before it starts its task.

    Raises:
        ConnectException: fencing failed, the producer could not be initialised, or the
            task's configs or assignment changed meanwhile; says which.
    """
    eos = spec.exactly_once
    assert eos is not None
    if fencing is not None:
        fencing.before_producer()
    if should_stop():  # do not fence a newer generation that may already have started
        raise ConnectException(f"task {spec.name} was stopped while it started")
    try:
        producer.init_transactions(TRANSACTION_TIMEOUT_S)
    except KafkaException as exc:
        raise wrap_kafka_error(
            exc,
            f"task {spec.name} could not initialise its transactional producer "
            f"(transactional.id {eos.transactional_id!r})",
        ) from exc
    if fencing is not None:
        fencing.after_producer()
    log.info(
        "task %s runs exactly-once: transactional.id %s, transaction.boundary %s",
        spec.name,
        eos.transactional_id,
        eos.boundary,
    )


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

    def new_consumer() -> Any:
        return services.clients.consumer({**spec.clients.consumer, "on_commit": on_commit})

    consumer = new_consumer()
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
        finish_join=spec.settings.finish_join_before_close,
        join_hold_s=int(spec.clients.consumer.get("session.timeout.ms") or 45_000) / 1000,
        max_records=max_records_per_put(spec.clients.consumer),
        new_consumer=new_consumer,
        reset=offset_reset(spec.clients.consumer),
        topics_regex_refresh_s=int(
            spec.clients.consumer.get("topic.metadata.refresh.interval.ms")
            or TOPICS_REGEX_REFRESH_S * 1000
        )
        / 1000,
        create_missing_topics=str(spec.clients.consumer.get("allow.auto.create.topics"))
        .strip()
        .lower()
        == "true",
        # To notice a topic deleted and created again under its name (core.runtime.topic_ids).
        topic_ids=AdminTopicIds(services.clients, spec.clients.admin),
    )
    holder.append(loop)
    return loop
