"""Connectors, tasks and the contexts the runtime hands them.

Process model: connector and task instances live in a *plugin host* process
started from the plugin's own environment, never in the worker. The worker
drives them through a batched RPC: one round trip per ``poll()`` / ``put()``
batch. Each connector instance and each task instance is driven by its own
thread in the host; a given instance is never called concurrently, except
that ``stop()`` may be called from another thread to interrupt a blocking
call (document what you do about that). A crash of the host process fails
the connector or tasks it hosted and never the worker; the worker reports
them as FAILED and can restart them. ``stop()`` is not called after a crash,
so connectors must tolerate being restarted without a clean shutdown.
"""

from __future__ import annotations

import enum
import math
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, NamedTuple

from plugin_api.components import Versioned
from plugin_api.config import ConfigDef, ConfigValue
from plugin_api.errors import DataException
from plugin_api.records import SinkRecord, SourceRecord, TopicPartition

__all__ = [
    "Connector",
    "ConnectorContext",
    "ConnectorTransactionBoundaries",
    "ErrantRecordReporter",
    "ExactlyOnceSupport",
    "OffsetStorageReader",
    "RecordMetadata",
    "SinkConnector",
    "SinkTask",
    "SinkTaskContext",
    "SourceConnector",
    "SourceTask",
    "SourceTaskContext",
    "Task",
    "TransactionContext",
    "freeze_partition",
    "validate_offset_format",
]

FrozenPartition = tuple[tuple[str, Any], ...]


def freeze_partition(partition: Mapping[str, Any]) -> FrozenPartition:
    """Return a hashable form of a source partition: its items sorted by key.

    Source partitions are dicts and cannot key a dict; this form can. Nested
    dicts and lists are frozen recursively, so equal partitions always freeze
    equally: ``freeze_partition({"b": 1, "a": 2}) == (("a", 2), ("b", 1))``.
    """
    return tuple(sorted((k, _freeze(v)) for k, v in partition.items()))


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return freeze_partition(value)
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


# The range of a Java long. Kafka reads a larger JSON integer as a BigInteger, which no
# Connect type holds, so an offset holding one could not be read back by Kafka Connect.
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def validate_offset_format(data: object) -> None:
    """Refuse a source partition or offset that cannot be stored, as Kafka's
    ``OffsetUtils.validateFormat`` does (with its messages), naming the field at fault.

    ``None`` passes; anything else must be a mapping whose keys are strings and whose values
    are ``None`` or primitive (bool, int within 64 bits, float, str). Kafka refuses maps,
    arrays and other classes. Two more are refused here: a float that is not finite (``nan``,
    ``inf``: JSON has no such number, and an offsets topic holding one is read by no other
    reader), and bytes, which Kafka takes and writes as a base64 string that reads back as a
    str, not the bytes the task stored. The runtime calls this for every source partition
    and offset before it stores them, and for offsets written over REST.

    Raises:
        DataException: ``data`` cannot be stored; the message names the key at fault.
    """
    if data is None:
        return
    if type(data) is dict:
        # The usual offset, at the cost of a few type comparisons per field (it is checked
        # once per source partition per poll, ~0.2 us for one field); anything else, or
        # anything refused, is looked at closely by _check_field.
        for key, value in data.items():
            cls = type(value)
            if type(key) is str and (
                cls is str
                or (cls is int and INT64_MIN <= value <= INT64_MAX)
                or (cls is float and value - value == 0.0)  # finite: not nan, not inf
                or value is None
                or cls is bool
            ):
                continue
            _check_field(key, value)
        return
    if not isinstance(data, Mapping):
        raise DataException(f"Offsets must be specified as a Map, not {_type_name(data)}")
    for key, value in data.items():
        _check_field(key, value)


def _check_field(key: object, value: object) -> None:
    """One field of :func:`validate_offset_format`: passes, or raises naming it."""
    if not isinstance(key, str):
        raise DataException(
            f"Offsets may only use String keys, but key {key!r} is {_type_name(key)}"
        )
    if value is None or isinstance(value, (bool, str)):
        return
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise DataException(_not_primitive(key, "class java.math.BigInteger"))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise DataException(
                f"Offsets may only contain primitive types as values, but field {key} "
                f"contains {value}, which is not a finite number"
            )
    elif isinstance(value, (bytes, bytearray)):
        raise DataException(
            _not_primitive(key, "BYTES")
            + ", which the offsets store (JSON) cannot hold: encode them as a str"
        )
    elif isinstance(value, Mapping):
        raise DataException(_not_primitive(key, "MAP"))
    elif isinstance(value, (list, tuple)):
        raise DataException(_not_primitive(key, "ARRAY"))
    else:
        raise DataException(_not_primitive(key, f"class {_type_name(value)}"))


def _not_primitive(key: str, what: str) -> str:
    return f"Offsets may only contain primitive types as values, but field {key} contains {what}"


def _type_name(value: object) -> str:
    cls = type(value)
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )


class ExactlyOnceSupport(enum.Enum):
    """Whether a source connector can provide exactly-once delivery (KIP-618)."""

    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class ConnectorTransactionBoundaries(enum.Enum):
    """Whether a source connector can define its own transaction boundaries (KIP-618)."""

    SUPPORTED = "SUPPORTED"
    UNSUPPORTED = "UNSUPPORTED"


class ConnectorContext(ABC):
    """Lets a connector talk back to the runtime; provided by the plugin host."""

    @abstractmethod
    def request_task_reconfiguration(self) -> None:
        """Ask the runtime to call ``task_configs()`` again and restart tasks if they changed.

        Callable from any thread of the connector (e.g. a monitoring thread);
        returns immediately, the work happens asynchronously in the worker.
        """

    @abstractmethod
    def raise_error(self, exc: BaseException) -> None:
        """Report an unrecoverable error from a background thread; the connector becomes FAILED."""


class Connector(Versioned, ABC):
    """Splits a job into task configurations and watches the external system for changes.

    Attributes:
        context: Set by :meth:`initialize` before :meth:`start`.
    """

    context: ConnectorContext

    def initialize(self, context: ConnectorContext) -> None:
        """Receive the context; called once in the plugin host before :meth:`start`."""
        self.context = context

    @abstractmethod
    def start(self, props: Mapping[str, str]) -> None:
        """Start with the user's connector config (strings, secrets resolved).

        Called once on the connector's thread in the plugin host. May block
        briefly (connect, discover partitions); long work belongs in a
        background thread. Raising marks the connector FAILED.
        """

    @abstractmethod
    def task_class(self) -> type[Task]:
        """Return the Task subclass; called after :meth:`start`, must not block."""

    @abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """Return at most ``max_tasks`` task configs (one per task to run).

        Called after :meth:`start` and after each
        ``request_task_reconfiguration()``; may block briefly. The worker
        stores the result in the config topic, so values must be strings.
        Raising fails the connector.
        """

    @abstractmethod
    def stop(self) -> None:
        """Stop and release resources.

        Called once on the connector's thread when the connector is deleted,
        paused, stopped or reconfigured; should finish within
        ``task.shutdown.graceful.timeout.ms`` or the host is terminated. Not
        called if the host crashed.
        """

    @abstractmethod
    def config(self) -> ConfigDef:
        """Return the connector's ConfigDef.

        Called in a plugin host, possibly on a fresh instance that was never
        started (for REST ``config/validate``); must not block or need state.
        """

    def validate(self, connector_configs: Mapping[str, str]) -> list[ConfigValue]:
        """Validate a config for REST ``config/validate`` and before creation.

        Called on a fresh, never started instance. Default: validate against
        :meth:`config`. Override to add cross-key checks. Must not raise for
        invalid values: report them in the returned ConfigValues.
        """
        return self.config().validate(connector_configs)

    def reconfigure(self, props: Mapping[str, str]) -> None:
        """Apply a new config; default: :meth:`stop` then :meth:`start`."""
        self.stop()
        self.start(props)


class SourceConnector(Connector):
    """A connector that imports data from an external system into Kafka."""

    def exactly_once_support(self, props: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """Say whether exactly-once is possible for ``props``; ``None`` means unknown.

        Called on a fresh instance during validation of a config with
        ``exactly.once.support=required`` (by a distributed worker, or a standalone one
        with exactly-once source support enabled); must not block.
        """
        return None

    def can_define_transaction_boundaries(
        self, props: Mapping[str, str]
    ) -> ConnectorTransactionBoundaries | None:
        """Say whether tasks can define transaction boundaries; ``None`` means unsupported."""
        return None

    def alter_offsets(
        self, connector_config: Mapping[str, str], offsets: Mapping[Any, Any]
    ) -> bool:
        """React to a REST request altering or resetting offsets (KIP-875).

        Called on a fresh instance while the connector is STOPPED. Return True
        if the connector handled it (e.g. manages offsets externally). Raising
        ConnectException (or a subclass) rejects the request with its message (a
        500, as Kafka Connect); any other exception rejects it with "Failed to modify
        offsets for ... connector <name>", the exception in the worker's log.
        """
        return False


class SinkConnector(Connector):
    """A connector that exports data from Kafka to an external system."""

    TOPICS_CONFIG = "topics"
    TOPICS_REGEX_CONFIG = "topics.regex"

    def alter_offsets(
        self, connector_config: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        """React to a REST request altering consumer offsets (KIP-875); see SourceConnector."""
        return False


class Task(Versioned, ABC):
    """A unit of work that actually copies data."""

    @abstractmethod
    def start(self, props: Mapping[str, str]) -> None:
        """Start with one of the connector's task configs.

        Called once on the task's thread in the plugin host, after
        ``initialize()``. May block while connecting. Raising marks the task
        FAILED.
        """

    @abstractmethod
    def stop(self) -> None:
        """Stop the task.

        May be called from another thread while ``poll()``/``put()`` is
        blocked; it should make them return promptly. Not called after a crash.
        """


class OffsetStorageReader(ABC):
    """Reads committed source offsets; backed by the worker's offset store."""

    @abstractmethod
    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        """Return the last committed offset of ``partition``, or ``None``.

        Blocks on an RPC to the worker; call it in ``start()``, not per record.
        """

    def offsets(
        self, partitions: Iterable[Mapping[str, Any]]
    ) -> dict[FrozenPartition, dict[str, Any] | None]:
        """Return offsets for several partitions, keyed by :func:`freeze_partition`."""
        return {freeze_partition(p): self.offset(p) for p in partitions}


class SourceTaskContext(ABC):
    """What a source task can ask of the runtime."""

    @abstractmethod
    def configs(self) -> dict[str, str]:
        """Return the task's config."""

    @abstractmethod
    def offset_storage_reader(self) -> OffsetStorageReader:
        """Return the reader of committed offsets."""

    def transaction_context(self) -> TransactionContext | None:
        """Return the task's :class:`TransactionContext` when the connector runs with
        ``transaction.boundary=connector`` under exactly-once support, else ``None``."""
        return None


class TransactionContext(ABC):
    """Lets a source task say where its transactions end (KIP-618 connector-defined
    boundaries, ``transaction.boundary=connector``); provided by the runtime.

    Called from the task's thread, usually in :meth:`SourceTask.poll` for records it is about
    to return. The runtime acts on a request when it sends the records of the poll that made
    it (a request made outside ``poll()`` applies to the next one): right after the named
    record, or after the whole batch for the forms without a record, it commits or aborts
    the open transaction. An aborted transaction's records are never visible to
    ``read_committed`` consumers, but their source offsets are still committed (in a
    transaction of their own), so the task does not see them again. Asking both to commit
    and to abort the same record, or the same batch, fails the task.
    """

    @abstractmethod
    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        """Commit the open transaction after ``record`` is sent (it included), or after the
        current batch when ``record`` is None."""

    @abstractmethod
    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        """Abort the open transaction after ``record`` is sent (it included, so it is
        dropped too), or after the current batch when ``record`` is None."""


class RecordMetadata(NamedTuple):
    """Where a source record landed in Kafka."""

    topic: str
    partition: int
    offset: int
    timestamp: int | None = None


class SourceTask(Task):
    """Reads from an external system and returns records for the worker to produce.

    Delivery: at-least-once. The offsets of returned records are committed
    periodically after Kafka acknowledged them; after a crash the task resumes
    from the last committed offsets and records since then are produced again.
    """

    context: SourceTaskContext

    def initialize(self, context: SourceTaskContext) -> None:
        """Receive the context; called once before :meth:`start`."""
        self.context = context

    @abstractmethod
    def poll(self) -> Sequence[SourceRecord] | None:
        """Return the next batch of records, or ``None``/``[]`` when nothing is ready.

        A list, or a :class:`~plugin_api.SourceRecordBatch` for records that share all but
        their value and source offset (the runtime then converts and produces them by
        column, without a record object each).

        Called repeatedly on the task's thread. May block briefly (e.g. up to
        a second) waiting for data, but must return regularly so the task can
        be paused or stopped. Raising a RetriableException retries the poll;
        any other exception fails the task.
        """

    def commit(self) -> None:
        """Called after offsets were committed, to acknowledge upstream; default no-op.

        Runs on the task's thread; may block briefly.
        """

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        """Called after ``record`` was written to Kafka (``metadata``) or dropped (``None``).

        Runs on the task's thread in batches after acknowledgements; default no-op.
        """


class ErrantRecordReporter(ABC):
    """Sends records a sink task could not process to the dead letter queue."""

    @abstractmethod
    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        """Report ``record``; the future completes when the DLQ write is done.

        Raises if ``errors.tolerance`` is ``none`` (the task then fails).
        """


class SinkTaskContext(ABC):
    """What a sink task can ask of the runtime; calls are recorded and applied after put()."""

    @abstractmethod
    def configs(self) -> dict[str, str]:
        """Return the task's config."""

    @abstractmethod
    def offset(
        self,
        offsets_or_tp: Mapping[TopicPartition, int] | TopicPartition,
        offset: int | None = None,
    ) -> None:
        """Rewind or skip consumption: ``offset({tp: n})`` or ``offset(tp, n)``."""

    @abstractmethod
    def timeout(self, timeout_ms: int) -> None:
        """Ask the runtime to retry the last ``put()`` batch after ``timeout_ms``."""

    @abstractmethod
    def assignment(self) -> set[TopicPartition]:
        """Return the currently assigned partitions."""

    @abstractmethod
    def pause(self, *partitions: TopicPartition) -> None:
        """Stop fetching from ``partitions`` until resumed."""

    @abstractmethod
    def resume(self, *partitions: TopicPartition) -> None:
        """Resume fetching from ``partitions``."""

    @abstractmethod
    def request_commit(self) -> None:
        """Ask for an offset commit as soon as possible."""

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        """Return the DLQ reporter, or ``None`` if the worker offers none."""
        return None


class SinkTask(Task):
    """Writes records consumed from Kafka to an external system.

    The runtime calls :meth:`put` with batches; offsets returned by
    :meth:`pre_commit` are committed to Kafka only after it returns, so
    delivery is at-least-once. ``close()`` is not called on a crash.
    """

    TOPICS_CONFIG = "topics"
    TOPICS_REGEX_CONFIG = "topics.regex"

    context: SinkTaskContext

    def initialize(self, context: SinkTaskContext) -> None:
        """Receive the context; called once before :meth:`start`."""
        self.context = context

    @abstractmethod
    def put(self, records: Sequence[SinkRecord]) -> None:
        """Write (or buffer) a batch of records.

        ``records`` is a read-only sequence: usually a :class:`~plugin_api.SinkRecordBatch`,
        whose records are built when first read and whose ``values`` a task that writes
        values only can read without building any; a list elsewhere (tests, harnesses).

        Called on the task's thread with each consumed batch (possibly empty).
        May block on the external system. Raise RetriableException to have the
        same batch redelivered (after ``context.timeout()``); any other
        exception fails the task.
        """

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        """Make everything passed to :meth:`put` durable; default no-op."""

    def pre_commit(
        self, current_offsets: Mapping[TopicPartition, int]
    ) -> Mapping[TopicPartition, int]:
        """Return the offsets safe to commit (KIP-89).

        ``current_offsets`` hold the *next* offset to consume for each
        partition. Called on the task's thread before each offset commit.
        Default: :meth:`flush` everything and commit it all.
        """
        self.flush(current_offsets)
        return current_offsets

    def open(self, partitions: Collection[TopicPartition]) -> None:
        """Called after ``partitions`` were assigned, before records arrive from them."""

    def close(self, partitions: Collection[TopicPartition]) -> None:
        """Called before ``partitions`` are revoked; release writers for them."""
