"""Test harnesses: run connectors, tasks, converters and transforms without a broker or worker.

They drive a plugin through the same lifecycle the runtime uses (initialize,
start, poll/put, commit, stop), in-process and synchronously, and record what
the plugin asked of its context so tests can assert on it.

Example:
    >>> run = run_source_task(MyTask, {"file": "in.txt"}, max_records=10)
    >>> [r.value for r in run.records]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

from plugin_api._schema import Schema, SchemaAndValue
from plugin_api.batches import SinkRecordBatch
from plugin_api.components import Converter, Transformation
from plugin_api.connector import (
    Connector,
    ConnectorContext,
    ErrantRecordReporter,
    FrozenPartition,
    OffsetStorageReader,
    RecordMetadata,
    SinkTask,
    SinkTaskContext,
    SourceTask,
    SourceTaskContext,
    freeze_partition,
    validate_offset_format,
)
from plugin_api.errors import ConnectException, DataException, RetriableException
from plugin_api.records import ConnectRecord, Headers, SinkRecord, SourceRecord, TopicPartition

__all__ = [
    "InMemoryErrantRecordReporter",
    "InMemoryOffsetStorageReader",
    "MockConnectorContext",
    "MockSinkTaskContext",
    "MockSourceTaskContext",
    "SinkTaskRun",
    "SourceTaskRun",
    "apply_transform",
    "converter_round_trip",
    "run_connector",
    "run_sink_task",
    "run_source_task",
    "sink_records",
]

OffsetsInput = (
    Mapping[FrozenPartition, Mapping[str, Any]]
    | Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]]
)

# How often run_sink_task redelivers a batch whose put() raised RetriableException
# before giving up; the real runtime retries until the task is stopped.
MAX_PUT_RETRIES = 3


def _normalize_offsets(offsets: OffsetsInput | None) -> dict[FrozenPartition, dict[str, Any]]:
    if not offsets:
        return {}
    pairs = offsets.items() if isinstance(offsets, Mapping) else offsets
    result: dict[FrozenPartition, dict[str, Any]] = {}
    for partition, offset in pairs:
        key = partition if isinstance(partition, tuple) else freeze_partition(partition)
        result[key] = dict(offset)
    return result


class InMemoryOffsetStorageReader(OffsetStorageReader):
    """Offsets from a dict keyed by :func:`freeze_partition` (or ``(partition, offset)`` pairs)."""

    def __init__(self, offsets: OffsetsInput | None = None) -> None:
        """Create the reader."""
        self._offsets = _normalize_offsets(offsets)

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        """Return a copy of the stored offset, or ``None``."""
        found = self._offsets.get(freeze_partition(partition))
        return dict(found) if found is not None else None


class MockConnectorContext(ConnectorContext):
    """Records reconfiguration requests (``reconfigurations``) and errors (``errors``)."""

    def __init__(self) -> None:
        """Create the context."""
        self.reconfigurations = 0
        self.errors: list[BaseException] = []

    def request_task_reconfiguration(self) -> None:
        """Count the request."""
        self.reconfigurations += 1

    def raise_error(self, exc: BaseException) -> None:
        """Record the error."""
        self.errors.append(exc)


class MockSourceTaskContext(SourceTaskContext):
    """A source task context over a config and in-memory offsets."""

    def __init__(self, configs: Mapping[str, str], offsets: OffsetsInput | None = None) -> None:
        """Create the context."""
        self._configs = dict(configs)
        self._reader = InMemoryOffsetStorageReader(offsets)

    def configs(self) -> dict[str, str]:
        """Return a copy of the task config."""
        return dict(self._configs)

    def offset_storage_reader(self) -> OffsetStorageReader:
        """Return the in-memory reader."""
        return self._reader


class InMemoryErrantRecordReporter(ErrantRecordReporter):
    """Collects reported ``(record, error)`` pairs in ``reported``."""

    def __init__(self) -> None:
        """Create the reporter."""
        self.reported: list[tuple[SinkRecord, BaseException]] = []

    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        """Record the pair and return a completed future."""
        self.reported.append((record, error))
        future: Future[None] = Future()
        future.set_result(None)
        return future


class MockSinkTaskContext(SinkTaskContext):
    """A sink task context that records every request.

    Attributes:
        requested_offsets: Offsets passed to :meth:`offset`, by partition.
        paused: Currently paused partitions.
        commit_requested: Whether :meth:`request_commit` was called.
        timeout_ms: The last value passed to :meth:`timeout`, or ``None``.
        reporter: The errant record reporter (also returned by ``errant_record_reporter()``).
    """

    def __init__(
        self, configs: Mapping[str, str], assignment: Iterable[TopicPartition] = ()
    ) -> None:
        """Create the context."""
        self._configs = dict(configs)
        self._assignment = set(assignment)
        self.requested_offsets: dict[TopicPartition, int] = {}
        self.paused: set[TopicPartition] = set()
        self.commit_requested = False
        self.timeout_ms: int | None = None
        self.reporter = InMemoryErrantRecordReporter()

    def configs(self) -> dict[str, str]:
        """Return a copy of the task config."""
        return dict(self._configs)

    def offset(
        self,
        offsets_or_tp: Mapping[TopicPartition, int] | TopicPartition,
        offset: int | None = None,
    ) -> None:
        """Record requested offsets."""
        if isinstance(offsets_or_tp, TopicPartition):
            if offset is None:
                raise ValueError("offset(tp, offset) needs an offset")
            self.requested_offsets[offsets_or_tp] = offset
        else:
            self.requested_offsets.update(offsets_or_tp)

    def timeout(self, timeout_ms: int) -> None:
        """Record the timeout."""
        self.timeout_ms = timeout_ms

    def assignment(self) -> set[TopicPartition]:
        """Return a copy of the assignment."""
        return set(self._assignment)

    def pause(self, *partitions: TopicPartition) -> None:
        """Mark partitions paused."""
        self.paused.update(partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        """Unmark paused partitions."""
        self.paused.difference_update(partitions)

    def request_commit(self) -> None:
        """Record the request."""
        self.commit_requested = True

    def errant_record_reporter(self) -> InMemoryErrantRecordReporter:
        """Return the collecting reporter."""
        return self.reporter


SourceT = TypeVar("SourceT", bound=SourceTask)
SinkT = TypeVar("SinkT", bound=SinkTask)


class SourceTaskRun(Generic[SourceT]):
    """Outcome of :func:`run_source_task`; ``task`` has the type of the class it was given.

    Attributes:
        records: Every record returned by ``poll()``, in order.
        committed_offsets: Latest source offset per :func:`freeze_partition` key.
        polls: Number of ``poll()`` calls.
        task: The task instance (stopped).
        context: The context it ran with.
    """

    def __init__(self, task: SourceT, context: MockSourceTaskContext) -> None:
        """Create an empty run."""
        self.task = task
        self.context = context
        self.records: list[SourceRecord] = []
        self.committed_offsets: dict[FrozenPartition, Any] = {}
        self.polls = 0

    def offset_for(self, partition: Mapping[str, Any]) -> Any:
        """Return the committed offset of ``partition`` (given as a dict), or ``None``."""
        return self.committed_offsets.get(freeze_partition(partition))

    @property
    def values(self) -> list[object]:
        """The record values, in order."""
        return [r.value for r in self.records]


def run_source_task(
    task_cls: type[SourceT],
    config: Mapping[str, str],
    *,
    max_polls: int = 100,
    max_records: int | None = None,
    offsets: OffsetsInput | None = None,
    stop_when_idle: bool = True,
) -> SourceTaskRun[SourceT]:
    """Run a source task until ``max_polls``, ``max_records`` or an idle poll.

    Each record is "written" to a fake Kafka log (offsets count per topic
    partition) and acknowledged with ``commit_record``; ``commit()`` is called
    once at the end, then ``stop()`` (also when the task raises).

    Args:
        task_cls: The task class (instantiated without arguments).
        config: The task config.
        max_polls: Upper bound on ``poll()`` calls.
        max_records: Stop once this many records arrived (the last batch is cut).
        offsets: Previously committed offsets the task should resume from.
        stop_when_idle: Stop at the first poll returning ``None`` or ``[]``.

    Raises:
        ConnectException: A poll's last record of a source partition carries a partition
            or offset the worker could not store (:func:`validate_offset_format`); the
            worker fails the task on it, before any record of that poll is sent.
    """
    task = task_cls()
    context = MockSourceTaskContext(config, offsets)
    run = SourceTaskRun(task, context)
    log_end: dict[tuple[str, int], int] = {}
    task.initialize(context)
    task.start(dict(config))
    try:
        while run.polls < max_polls:
            batch = task.poll()
            run.polls += 1
            if not batch:
                if stop_when_idle:
                    break
                continue
            if max_records is not None:
                batch = batch[: max_records - len(run.records)]
            _check_offsets(task, batch)
            for record in batch:
                partition = record.kafka_partition or 0
                position = log_end.get((record.topic, partition), 0)
                log_end[(record.topic, partition)] = position + 1
                run.records.append(record)
                if record.source_partition is not None:
                    run.committed_offsets[freeze_partition(record.source_partition)] = (
                        record.source_offset
                    )
                task.commit_record(
                    record, RecordMetadata(record.topic, partition, position, record.timestamp)
                )
            if max_records is not None and len(run.records) >= max_records:
                break
        task.commit()
    finally:
        task.stop()
    return run


def _check_offsets(task: SourceTask, batch: Iterable[SourceRecord]) -> None:
    """Refuse a poll whose last offset of a source partition cannot be stored, as the
    worker does (once per partition per poll, before the poll's records are sent)."""
    last: dict[Any, tuple[int, SourceRecord]] = {}
    for index, record in enumerate(batch):
        partition = record.source_partition
        if partition is None:
            continue
        try:
            validate_offset_format(partition)
        except DataException as exc:
            raise _unstorable(task, index, record, "source partition", exc) from exc
        last[freeze_partition(partition)] = (index, record)
    for index, record in last.values():
        try:
            validate_offset_format(record.source_offset)
        except DataException as exc:
            raise _unstorable(task, index, record, "source offset", exc) from exc


def _unstorable(
    task: SourceTask, index: int, record: SourceRecord, what: str, exc: DataException
) -> ConnectException:
    return ConnectException(
        f"{type(task).__qualname__}.poll() returned a source record for topic "
        f"{record.topic!r} (source partition {record.source_partition}, offset "
        f"{record.source_offset}), record {index} of the batch, whose {what} cannot be "
        f"stored: {exc}. Source partitions and offsets are maps of str to None, bool, int, "
        "finite float or str."
    )


class SinkTaskRun(Generic[SinkT]):
    """Outcome of :func:`run_sink_task`; ``task`` has the type of the class it was given.

    Attributes:
        committed: Offsets returned by ``pre_commit`` (next offset to consume).
        context: The context, with everything the task requested.
        task: The task instance (stopped).
        batches: Number of ``put()`` calls that succeeded.
    """

    def __init__(self, task: SinkT, context: MockSinkTaskContext) -> None:
        """Create an empty run."""
        self.task = task
        self.context = context
        self.committed: dict[TopicPartition, int] = {}
        self.batches = 0


def run_sink_task(
    task_cls: type[SinkT],
    config: Mapping[str, str],
    records: Iterable[SinkRecord],
    *,
    batch_size: int = 500,
) -> SinkTaskRun[SinkT]:
    """Deliver ``records`` to a sink task in batches, then commit and close.

    Lifecycle: initialize, start, open(partitions of the records), put per
    batch (a :class:`~plugin_api.SinkRecordBatch`, as the runtime's; a batch raising
    RetriableException is redelivered up to ``MAX_PUT_RETRIES`` times), pre_commit(next
    offsets), close, stop.

    A partition the task rewinds in ``start()`` or ``open()`` (``context.offset()``, as an
    exactly-once sink does from what its target holds) is delivered from that offset on:
    its records at lower offsets are left out, as the runtime's consumer would never fetch
    them. Rewinds asked later (during ``put()``) are recorded in the context, not replayed.
    """
    records = list(records)
    partitions = list(
        dict.fromkeys(TopicPartition(r.topic, r.kafka_partition or 0) for r in records)
    )
    task = task_cls()
    context = MockSinkTaskContext(config, partitions)
    run = SinkTaskRun(task, context)
    next_offsets: dict[TopicPartition, int] = {}
    task.initialize(context)
    task.start(dict(config))
    try:
        task.open(list(partitions))
        starts = dict(context.requested_offsets)
        if starts:
            records = [
                r
                for r in records
                if r.kafka_offset >= starts.get(TopicPartition(r.topic, r.kafka_partition or 0), 0)
            ]
        for start in range(0, len(records), batch_size):
            batch = records[start : start + batch_size]
            for attempt in range(MAX_PUT_RETRIES + 1):
                try:
                    task.put(SinkRecordBatch.of(batch))  # what the runtime hands to put()
                    break
                except RetriableException:
                    if attempt == MAX_PUT_RETRIES:
                        raise
            run.batches += 1
            for record in batch:
                tp = TopicPartition(record.original_topic, record.original_kafka_partition or 0)
                next_offsets[tp] = max(next_offsets.get(tp, 0), record.original_kafka_offset + 1)
        run.committed = dict(task.pre_commit(dict(next_offsets)))
        task.close(list(partitions))
    finally:
        task.stop()
    return run


def run_connector(
    connector_cls: type[Connector], config: Mapping[str, str], max_tasks: int = 1
) -> list[dict[str, str]]:
    """Validate ``config``, start the connector, return its task configs, stop it.

    Raises:
        ConfigException: If ``config`` does not parse against ``config()``.
        ConnectException: If the connector returns more than ``max_tasks``
            configs or non-string values (they could not be stored).
    """
    connector = connector_cls()
    connector.initialize(MockConnectorContext())
    connector.config().parse(config)
    connector.start(dict(config))
    try:
        task_configs = connector.task_configs(max_tasks)
    finally:
        connector.stop()
    if len(task_configs) > max_tasks:
        raise ConnectException(
            f"{connector_cls.__name__} returned {len(task_configs)} task configs, "
            f"max is {max_tasks}"
        )
    for task_config in task_configs:
        for key, value in task_config.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise ConnectException(f"Task config entry {key!r}={value!r} is not a string pair")
    return task_configs


def apply_transform(
    transform_cls_or_instance: type[Transformation[Any]] | Transformation[Any],
    config: Mapping[str, object],
    record: ConnectRecord,
) -> ConnectRecord | None:
    """Configure a transformation, apply it to ``record`` and close it.

    Raises:
        AssertionError: If the transformation mutated its input record.
        ConnectException: If it returned neither None nor a record of its input's kind
            (the runtime fails such a record as if the transform raised).
    """
    transform = (
        transform_cls_or_instance()
        if isinstance(transform_cls_or_instance, type)
        else transform_cls_or_instance
    )
    transform.configure(config)
    before = repr(record)
    try:
        result = transform.apply(record)
    finally:
        transform.close()
    if repr(record) != before:
        raise AssertionError(f"{type(transform).__name__} mutated its input record")
    expected = next((t for t in (SourceRecord, SinkRecord) if isinstance(record, t)), ConnectRecord)
    if result is not None and not isinstance(result, expected):
        # What the runtime refuses too, failing the record as a transform that raised.
        raise ConnectException(
            f"transform {type(transform).__qualname__} returned {type(result).__qualname__}, "
            f"not a {expected.__name__} or None"
        )
    return result


def converter_round_trip(
    converter_cls: type[Converter],
    config: Mapping[str, object],
    topic: str,
    schema: Schema | None,
    value: object,
    is_key: bool = False,
) -> SchemaAndValue:
    """Serialize ``value`` with a converter and deserialize the bytes again."""
    converter = converter_cls()
    converter.configure(config, is_key)
    headers = Headers()
    try:
        data = converter.from_connect_data(topic, schema, value, headers)
        return converter.to_connect_data(topic, data, headers)
    finally:
        converter.close()


def sink_records(
    topic: str,
    values: Iterable[object],
    partition: int = 0,
    start_offset: int = 0,
    key: object = None,
    *,
    value_schema: Schema | None = None,
    key_schema: Schema | None = None,
) -> list[SinkRecord]:
    """Build schemaless (unless schemas are given) sink records with consecutive offsets."""
    return [
        SinkRecord(topic, partition, key_schema, key, value_schema, value, start_offset + i)
        for i, value in enumerate(values)
    ]
