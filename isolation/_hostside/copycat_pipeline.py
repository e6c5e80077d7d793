"""Task-side record pipelines inside the plugin host (stdlib + plugin_api only).

The worker moves only bytes and offsets; this module turns them into records and back:

* source: ``task.poll()`` -> SMT chain -> key/value/header converters -> byte tuples
* sink:   byte tuples -> converters -> SinkRecord -> SMT chain -> ``task.put()``

so that per-record Python work runs here, on the host's core, while the worker produces and
consumes on the other.
"""

from __future__ import annotations

import collections
import itertools
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import copycat_sink_columns as sink_columns
from copycat_batch import ConsumedBatch, MessageBatch, ProducedBatch
from copycat_batch import from_wire as batch_from_wire
from copycat_errors import (
    HEADER_CONVERTER,
    KEY_CONVERTER,
    TASK_PUT,
    TRANSFORMATION,
    VALUE_CONVERTER,
    ContractViolation,
    ErrorPolicy,
    FailedPut,
    NotTolerated,
    RetriablePut,
    RetryStopped,
    StageFailure,
    describe,
    kafka_class_name,
)
from copycat_protocol import SinkActions
from copycat_transactions import HostTransactionContext, batch_boundary
from plugin_api.connector import freeze_partition
from plugin_api.text import java_string

from plugin_api import (
    ConnectException,
    Converter,
    DataException,
    ErrantRecordReporter,
    HeaderConverter,
    Headers,
    OffsetStorageReader,
    Predicate,
    RecordMetadata,
    RetriableException,
    SinkRecord,
    SinkRecordBatch,
    SinkTask,
    SinkTaskContext,
    SourceRecord,
    SourceRecordBatch,
    SourceTask,
    SourceTaskContext,
    TimestampType,
    TopicPartition,
    Transformation,
    validate_offset_format,
)

# ``(source partition, source offset)`` pairs, the last of each partition in a poll.
OffsetPairs = Sequence[tuple[Any, Any]]

# A callback into the worker, answered before the current request completes.
Callback = Callable[[str, tuple[Any, ...]], Any]


_TIMESTAMP_TYPES = list(TimestampType)
# How many of a source task's latest SourceRecordBatch polls the host keeps (references only)
# for SourceRunner.offsets_before: the worker has at most the poll being produced and the one
# after it when a record is refused. Lists of SourceRecord are not kept: holding a poll's
# record objects past its conversion made building the next ones ~70 ns a record dearer
# (100 B records, 2,000 a poll, two polls kept, alternating runs), for a failure path.
RECENT_POLLS_KEPT = 2


def _make_chain(
    stages: Iterable[TransformStage], record_type: type[SourceRecord] | type[SinkRecord]
) -> Callable[[Any], Any] | None:
    """The SMT chain as one function, None without transforms: a failing stage raises
    StageFailure, a stage that drops the record makes it return None. A stage that returns
    anything but a ``record_type`` (or None) fails as one that raised, naming its alias: the
    next stage or the converters would otherwise fail on it naming neither."""
    chain = tuple(stages)
    if not chain:
        return None

    def transform(record: Any) -> Any:
        for stage in chain:
            try:
                record = stage.apply(record)
            except Exception as exc:
                raise StageFailure(TRANSFORMATION, stage.transform, exc) from exc
            if record is None:
                return None
            # The exact type first: ~15 ns against isinstance()'s ~25 ns for the usual record.
            if type(record) is not record_type and not isinstance(record, record_type):
                error = ConnectException(
                    f"transform {stage.alias!r} ({_qualified(stage.transform)}) returned "
                    f"{_qualified(record)}, not a {record_type.__name__} or None"
                )
                raise StageFailure(TRANSFORMATION, stage.transform, error)
        return record

    return transform


def _qualified(value: object) -> str:
    cls = type(value)
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )


class TransformStage:
    """One ``transforms.<alias>`` entry: the SMT and its optional (negated) predicate."""

    def __init__(
        self,
        alias: str,
        transform: Transformation[Any],
        predicate: Predicate[Any] | None = None,
        negate: bool = False,
    ) -> None:
        self.alias = alias
        self.transform = transform
        self.predicate = predicate
        self.negate = negate

    def apply(self, record: Any) -> Any:
        if self.predicate is not None and self.predicate.test(record) == self.negate:
            return record
        return self.transform.apply(record)


class Pipeline:
    """Converters and the SMT chain configured for one task."""

    def __init__(
        self,
        key_converter: Converter | None,
        value_converter: Converter | None,
        header_converter: HeaderConverter | None,
        stages: Sequence[TransformStage] = (),
    ) -> None:
        self.key_converter = key_converter
        self.value_converter = value_converter
        self.header_converter = header_converter
        self.stages = list(stages)

    def close(self) -> None:
        for stage in self.stages:
            stage.transform.close()
            if stage.predicate is not None:
                stage.predicate.close()
        for converter in (self.key_converter, self.value_converter, self.header_converter):
            if converter is not None:
                converter.close()


class HostOffsetStorageReader(OffsetStorageReader):
    """Reads committed source offsets from the worker through a callback."""

    def __init__(self, callback: Callback) -> None:
        self._callback = callback

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        found: dict[Any, Any] = self._callback("offsets", ([dict(partition)],))
        return found.get(freeze_partition(partition))

    def offsets(self, partitions: Iterable[Mapping[str, Any]]) -> dict[Any, Any]:
        result: dict[Any, Any] = self._callback("offsets", ([dict(p) for p in partitions],))
        return result


class HostSourceTaskContext(SourceTaskContext):
    def __init__(
        self,
        configs: Mapping[str, str],
        callback: Callback,
        transactions: HostTransactionContext | None = None,
    ) -> None:
        self._configs = dict(configs)
        self._reader = HostOffsetStorageReader(callback)
        self._transactions = transactions

    def configs(self) -> dict[str, str]:
        return dict(self._configs)

    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._reader

    def transaction_context(self) -> HostTransactionContext | None:
        return self._transactions


class SourceRunner:
    """Runs one SourceTask: poll + transform + convert, and commit_record on acks."""

    def __init__(
        self,
        task: SourceTask,
        pipeline: Pipeline,
        errors: ErrorPolicy | None = None,
        transactions: HostTransactionContext | None = None,
    ) -> None:
        self.task = task
        self.pipeline = pipeline
        self.errors = errors or ErrorPolicy()
        # Set for transaction.boundary=connector: polls then also answer the task's boundaries.
        self.transactions = transactions
        self._poll_failed_since: float | None = None
        self._poll_attempts = 0
        self._convert = self._make_converter()
        # Without transforms a batch can be converted a column at a time (_convert_columns).
        self._by_column = not pipeline.stages
        self._next_seq = 0
        self._in_flight: dict[int, SourceRecord] = {}
        # ``(first seq, batch, indexes of its records not sent)`` of the latest
        # SourceRecordBatch polls, for :meth:`offsets_before`.
        self._recent_polls: collections.deque[tuple[int, SourceRecordBatch, list[int]]] = (
            collections.deque(maxlen=RECENT_POLLS_KEPT)
        )
        # Kafka calls commit_record() per acknowledged record; when the task keeps the no-op
        # default, neither the records nor their acks need to be kept or sent back.
        self.wants_acks = type(task).commit_record is not SourceTask.commit_record

    def poll(self) -> tuple[Any, ...]:
        """Poll the task; return ``(batch, failures, offsets)``, and ``boundaries`` after them
        when the task defines its transactions (:mod:`copycat_transactions`).

        ``batch`` is the :meth:`ProducedBatch.wire` of the converted records, one per record
        polled, in order. A record the SMT chain dropped, or whose conversion failed and was
        tolerated, has topic ``None``, and its source offset does not count: Kafka Connect
        drops such a record before it tracks its offset, so only a later record of its source
        partition that is sent moves the committed offset past it. ``offsets`` holds
        ``(source partition, source offset)`` of the batch's last record sent per partition:
        the worker commits offsets a whole batch at a time, so it needs no more. A
        failure is ``(seq, description, stage, class, exception class, message, stack trace)``.
        A boundary is ``(record index, "commit" | "abort", offsets up to that record)``.
        """
        transactions = self.transactions
        started = time.monotonic()
        try:
            records = self.task.poll()
        except RetriableException as exc:
            self._poll_retry(exc)
            return _empty_poll(None, self.errors.take_counts())
        # Kafka's poll-batch-time: the polls that returned a list (None is "nothing").
        poll_ms = None if records is None else (time.monotonic() - started) * 1000
        self._poll_failed_since = None
        self._poll_attempts = 0
        try:
            return self._polled(records or [], transactions, poll_ms)
        except (AttributeError, TypeError) as exc:
            # Checked only now, so that a good batch pays nothing for the check.
            wrong = _wrong_poll_result(records)
            if wrong is None:
                raise
            raise ContractViolation(
                f"{type(self.task).__qualname__}.poll() must return a list of SourceRecord "
                f"(or None), got {wrong}"
            ) from exc

    def _polled(
        self,
        records: Sequence[SourceRecord],
        transactions: HostTransactionContext | None,
        poll_ms: float | None,
    ) -> tuple[Any, ...]:
        """:meth:`poll`'s answer for the records the task returned in ``poll_ms``."""
        size = len(records)
        if not size:
            return _empty_poll(poll_ms, None)
        seq = self._next_seq
        self._next_seq = seq + size
        dropped: list[int] = []  # filled by _convert_rows
        if type(records) is SourceRecordBatch:
            self._recent_polls.append((seq, records, dropped))
        if self.wants_acks:
            self._in_flight.update(zip(range(seq, seq + size), records, strict=True))
        failures: list[tuple[Any, ...]] = []
        batch = None
        if self._by_column:
            if type(records) is SourceRecordBatch:
                batch = self._convert_batch(seq, records)
            else:
                batch = self._convert_columns(seq, records)
        if batch is None:
            try:
                batch = self._convert_rows(seq, records, failures, dropped)
            except _StoppedAt as stop:
                # errors.tolerance=none: the records before the failing one are sent (as
                # Kafka's sendRecords() has sent them), the failure is reported, and the
                # worker fails the task.
                batch, records = stop.batch, list(itertools.islice(records, stop.index))
        if batch.timestamps is not None:
            batch.timestamps = _valid_timestamps(batch.timestamps)
        sent = _without(records, dropped) if dropped else records
        offsets = _last_offsets(self.task, sent) if sent else []
        # Once per source partition per poll, before any of its records is produced: what the
        # worker would store. (A record's offset that a later one of its partition replaces
        # is never stored, as in Kafka, which validates at each flush.)
        _check_offsets(self.task, records, offsets)
        errors = self.errors
        counts = errors.take_counts() if errors.failures else None
        if transactions is None:
            return batch.wire(), failures, offsets, [], poll_ms, counts
        boundaries = _record_boundaries(self.task, transactions, records, dropped)
        for _index, _action, ends in boundaries:
            _check_offsets(self.task, records, ends)
        boundaries += batch_boundary(transactions, offsets)
        return batch.wire(), failures, offsets, boundaries, poll_ms, counts

    def _convert_batch(self, seq: int, records: SourceRecordBatch) -> ProducedBatch | None:
        """A :class:`SourceRecordBatch` converted by column without building its records: the
        shared key once (converters are pure functions of their input), the values with
        ``Converter.from_connect_data_batch``. None, as :meth:`_convert_columns`, when a
        converter raised: the records are then built and converted one by one."""
        size, topic = len(records), records.topic
        kc, vc = self.pipeline.key_converter, self.pipeline.value_converter
        key, values = records.key, records.values
        try:
            if kc is not None:
                key = kc.from_connect_data(topic, records.key_schema, key, None)
            if vc is not None:
                values = vc.from_connect_data_batch(
                    topic, [records.value_schema] * size, values, [None] * size
                )
        except Exception:  # noqa: BLE001 - record by record, to name the record at fault
            return None
        if type(values) is not list or vc is None:  # a list of our own (the task may reuse its)
            values = list(values)
        if len(values) != size:
            return None
        keys = None if key is None else [key] * size
        return ProducedBatch(
            size, seq, topic, records.kafka_partition, keys, values, None, records.timestamp
        )

    def _convert_columns(self, seq: int, records: Sequence[SourceRecord]) -> ProducedBatch | None:
        """The usual batch (no transforms, one topic, no headers) converted a column at a
        time (``Converter.from_connect_data_batch``), or None when it is not that batch or a
        converter raised: then :meth:`_convert_rows` converts it record by record, so that a
        failure is reported against its record."""
        size = len(records)
        topics = [r.topic for r in records]
        topic = topics[0]
        if topics.count(topic) != size or topic is None:
            return None
        if [r._headers for r in records].count(None) != size:
            return None
        no_headers: list[Any] = [None] * size
        keys: list[Any] = [r.key for r in records]
        values: list[Any] = [r.value for r in records]
        kc, vc = self.pipeline.key_converter, self.pipeline.value_converter
        try:
            if kc is not None:
                keys = list(
                    kc.from_connect_data_batch(
                        topic, [r.key_schema for r in records], keys, no_headers
                    )
                )
            if vc is not None:
                values = list(
                    vc.from_connect_data_batch(
                        topic, [r.value_schema for r in records], values, no_headers
                    )
                )
        except Exception:  # noqa: BLE001 - record by record, to name the record at fault
            return None
        if len(keys) != size or len(values) != size:
            return None
        return ProducedBatch.of_columns(
            seq,
            topics,
            [r.kafka_partition for r in records],
            keys,
            values,
            None,
            [r.timestamp for r in records],
        )

    def _convert_rows(
        self,
        seq: int,
        records: Sequence[SourceRecord],
        failures: list[tuple[Any, ...]],
        dropped: list[int],
    ) -> ProducedBatch:
        """Transform and convert record by record; failures go to ``failures``, and the
        index in ``records`` of each record not sent (dropped, or its failure tolerated) to
        ``dropped``.

        Raises:
            _StoppedAt: a failure that is not tolerated, or a stop requested while a record
                was retried, with the rows before it.
        """
        convert = self._convert
        rows: list[tuple[Any, ...]] = []
        for index, original in enumerate(records, seq):
            try:
                row = convert(original)
            except StageFailure as failure:
                try:
                    row = self.errors.recover(lambda o=original: convert(o), failure)
                except RetryStopped:
                    # Asked to stop while retrying it: this record and those after it are not
                    # sent, so no offset of theirs is committed; those before it are sent.
                    raise _StoppedAt(index - seq, _rows_batch(seq, rows)) from None
                if isinstance(row, StageFailure):
                    failures.append((index, source_record_text(original), *row.info()))
                    if not self.errors.tolerate_all:
                        raise _StoppedAt(index - seq, _rows_batch(seq, rows)) from None
                    row = None
            if row is None:
                dropped.append(index - seq)
                row = _DROPPED
            rows.append(row)
        return _rows_batch(seq, rows)

    def _make_converter(self) -> Callable[[SourceRecord], tuple[Any, ...] | None]:
        """Build the per-record function once, with the pipeline's parts bound as locals."""
        pipeline = self.pipeline
        transform = _make_chain(pipeline.stages, SourceRecord)
        kc, vc, hc = pipeline.key_converter, pipeline.value_converter, pipeline.header_converter

        def convert(original: SourceRecord) -> tuple[Any, ...] | None:
            """``(topic, partition, key, value, headers, timestamp)`` of one record, or None
            if the chain dropped it."""
            record: Any = original if transform is None else transform(original)
            if record is None:
                return None
            topic = record.topic
            headers = record._headers
            key, value = record.key, record.value
            # Headers first, then key and value, as Kafka's sendRecords(): when more than
            # one converter refuses the record, the header converter's error is reported.
            raw_headers = None
            if headers:
                try:
                    raw_headers = _encode_headers(hc, topic, headers)
                except Exception as exc:
                    raise StageFailure(HEADER_CONVERTER, hc, exc) from exc
            if kc is not None:
                try:
                    key = kc.from_connect_data(topic, record.key_schema, key, headers)
                except Exception as exc:
                    raise StageFailure(KEY_CONVERTER, kc, exc) from exc
            if vc is not None:
                try:
                    value = vc.from_connect_data(topic, record.value_schema, value, headers)
                except Exception as exc:
                    raise StageFailure(VALUE_CONVERTER, vc, exc) from exc
            if headers is not None and len(headers) != (len(raw_headers) if raw_headers else 0):
                # A key or value converter added headers (Converter.from_connect_data may).
                try:
                    raw_headers = _encode_headers(hc, topic, headers)
                except Exception as exc:
                    raise StageFailure(HEADER_CONVERTER, hc, exc) from exc
            return (topic, record.kafka_partition, key, value, raw_headers, record.timestamp)

        return convert

    def _poll_retry(self, exc: RetriableException) -> None:
        """A retriable poll() failure: back off, or fail once errors.retry.timeout ran out."""
        if self._poll_failed_since is None:
            self._poll_failed_since = time.monotonic()
        self._poll_attempts += 1
        errors = self.errors
        if (
            errors.retry_timeout_ms > 0
            and (time.monotonic() - self._poll_failed_since) * 1000 > errors.retry_timeout_ms
        ):
            raise ConnectException(
                f"poll() kept failing with retriable errors for more than "
                f"errors.retry.timeout={errors.retry_timeout_ms} ms: {describe(exc)}"
            ) from exc
        print(f"poll() failed with a retriable error, retrying: {describe(exc)}", file=sys.stderr)
        errors.wait(errors.backoff_s(self._poll_attempts))  # a stop ends it: nothing was polled

    def offsets_before(self, seq: int) -> list[tuple[Any, Any]] | None:
        """``(source partition, source offset)`` of the last record sent before record ``seq``
        in its poll (none when no record before it in the poll was sent: the SMT chain dropped
        them, or their failures were tolerated); None when that poll is not kept: only
        SourceRecordBatch polls are, see RECENT_POLLS_KEPT. The worker commits it when the
        producer refused record ``seq`` and the task fails (errors.tolerance=none): Kafka
        commits a source's offsets record by record, so the records acknowledged before the
        refused one count."""
        for first, batch, dropped in self._recent_polls:
            if first <= seq < first + len(batch):
                partition, offsets = batch.source_partition, batch.source_offsets
                unsent = set(dropped)
                last = next((i for i in range(seq - first - 1, -1, -1) if i not in unsent), None)
                if last is None or partition is None:
                    return []
                return [(partition, None if offsets is None else offsets[last])]
        return None

    def acked(self, acks: Sequence[tuple[int, str | None, int, int, int | None]]) -> None:
        """Call ``commit_record`` for records the broker acknowledged (or that were dropped)."""
        for seq, topic, partition, offset, timestamp in acks:
            record = self._in_flight.pop(seq, None)
            if record is None:
                continue
            metadata = (
                None if topic is None else RecordMetadata(topic, partition, offset, timestamp)
            )
            self.task.commit_record(record, metadata)


def _encode_headers(
    converter: HeaderConverter | None, topic: str, headers: Headers
) -> list[tuple[str, Any]]:
    if converter is None:
        return [(h.key, h.value) for h in headers]
    return [
        (h.key, converter.from_connect_header(topic, h.key, h.schema, h.value)) for h in headers
    ]


class _StoppedAt(Exception):
    """A source record failed and is not tolerated: ``batch`` holds the ``index`` records
    of the poll before it."""

    def __init__(self, index: int, batch: ProducedBatch) -> None:
        super().__init__(index)
        self.index = index
        self.batch = batch


def _rows_batch(seq: int, rows: list[tuple[Any, ...]]) -> ProducedBatch:
    """Converted ``(topic, partition, key, value, headers, timestamp)`` rows as a batch."""
    if not rows:
        return ProducedBatch(0, seq, None, None, None, [], None, None)
    topics, partitions, keys, values, headers, timestamps = (
        list(column) for column in zip(*rows, strict=True)
    )
    return ProducedBatch.of_columns(seq, topics, partitions, keys, values, headers, timestamps)


def _valid_timestamps(stamps: Any) -> Any:
    """A batch's timestamps column (shared, or one per record, None where a record has
    none) as Kafka Connect hands it to its producer (ConnectUtils.checkAndConvertTimestamp):
    -1 (Kafka's NO_TIMESTAMP) becomes None, so that the producer stamps the record as it does
    a record without one; any other negative timestamp fails the task, whatever
    errors.tolerance says (Kafka's InvalidRecordException). The usual column (no negative
    timestamp) costs one min() over it.

    Raises:
        ContractViolation: a record has a timestamp below -1.
    """
    try:
        if type(stamps) is not list:
            return stamps if stamps >= 0 else _valid_timestamp(stamps)
        try:
            lowest = min(stamps)
        except TypeError:  # records without a timestamp among those with one
            lowest = min((stamp for stamp in stamps if stamp is not None), default=0)
    except TypeError:
        kinds = sorted({type(s).__name__ for s in (stamps if type(stamps) is list else [stamps])})
        raise ContractViolation(
            f"A record's timestamp must be epoch milliseconds (an int) or None, got {kinds}"
        ) from None
    if lowest >= 0:
        return stamps
    return [stamp if stamp is None or stamp >= 0 else _valid_timestamp(stamp) for stamp in stamps]


def _valid_timestamp(stamp: int) -> int | None:
    """None for -1 (no timestamp); raises for any other negative ``stamp``."""
    if stamp == -1:
        return None
    raise ContractViolation(f"Invalid record timestamp {stamp}")


# A record the chain dropped (or whose tolerated failure was reported): topic None.
_DROPPED = (None, None, None, None, None, None)


def _empty_poll(poll_ms: float | None, counts: tuple[int, int] | None) -> tuple[Any, ...]:
    """What a poll() of no records answers (no boundaries either for a task defining its
    transactions): see :class:`copycat_protocol.PollResult`."""
    empty = ProducedBatch(0, 0, None, None, None, [], None, None).wire()
    return (empty, [], [], [], poll_ms, counts)


def _record_boundaries(
    task: SourceTask,
    transactions: HostTransactionContext,
    records: Sequence[SourceRecord],
    dropped: Sequence[int] = (),
) -> list[tuple[int, str, list[tuple[Any, Any]]]]:
    """The boundaries the task asked for after some of ``records``: ``(index, action, offsets
    of the records up to it, the last sent per source partition)``, in record order (a
    SourceRecordBatch's records are built here: the task named some of them). The records
    at the indexes ``dropped`` were not sent: a boundary after one counts, its offset not."""
    if not transactions.any_record_requests:
        return []
    boundaries: list[tuple[int, str, list[tuple[Any, Any]]]] = []
    ends: dict[Any, tuple[Any, Any]] = {}
    unsent = set(dropped)
    for index, record in enumerate(records):
        partition = record.source_partition
        if partition is not None and index not in unsent:
            if not isinstance(partition, Mapping):
                _check_offsets(task, records, [(partition, None)])
            ends[freeze_partition(partition)] = (partition, record.source_offset)
        action = transactions.boundary_of(record)
        if action is not None:
            boundaries.append((index, action, list(ends.values())))
    return boundaries


def _without(records: Sequence[SourceRecord], dropped: Sequence[int]) -> list[SourceRecord]:
    """``records`` but those at the indexes ``dropped`` (ascending)."""
    unsent = set(dropped)
    return [record for index, record in enumerate(records) if index not in unsent]


def _wrong_poll_result(records: object) -> str | None:
    """What is wrong with what ``poll()`` returned (None if nothing is)."""
    if type(records) is SourceRecordBatch:
        return None
    if isinstance(records, (str, bytes)) or not isinstance(records, Sequence):
        return type(records).__name__
    for index, record in enumerate(records):
        if not isinstance(record, SourceRecord):
            return f"{type(records).__name__} holding {type(record).__name__} at index {index}"
    return None


def _last_offsets(task: SourceTask, records: Sequence[SourceRecord]) -> list[tuple[Any, Any]]:
    """``(source partition, source offset)`` of the last record of each source partition.
    Usually the whole batch has one partition object (checked at C speed); else record by
    record, partitions compared by value. A SourceRecordBatch has one, and its last offset
    is read without building its records.

    Raises:
        ConnectException: a partition is not a mapping (so it cannot be compared by value).
    """
    if type(records) is SourceRecordBatch:
        partition = records.source_partition
        return [] if partition is None else [(partition, records.last_source_offset)]
    partitions = [r.source_partition for r in records]
    first = partitions[0]
    if partitions.count(first) == len(partitions):
        return [] if first is None else [(records[-1].source_partition, records[-1].source_offset)]
    ends: dict[Any, tuple[Any, Any]] = {}
    last: Any = None
    frozen: Any = None
    for record in records:
        partition = record.source_partition
        if partition is not None:
            if partition is not last:  # usually one object for a run of records
                if not isinstance(partition, Mapping):
                    _check_offsets(task, records, [(partition, None)])
                last, frozen = partition, freeze_partition(partition)
            ends[frozen] = (partition, record.source_offset)
    return list(ends.values())


def _check_offsets(task: SourceTask, records: Sequence[SourceRecord], offsets: OffsetPairs) -> None:
    """Refuse a poll holding a source partition or offset that cannot be stored
    (:func:`plugin_api.validate_offset_format`), naming the task, the record and the field.

    Raises:
        ConnectException: one of ``offsets`` cannot be stored; caused by the DataException.
    """
    for partition, offset in offsets:
        what = "source partition"
        try:
            validate_offset_format(partition)
            what = "source offset"
            validate_offset_format(offset)
        except DataException as exc:
            raise _unstorable(task, records, partition, what, exc) from exc


def _unstorable(
    task: SourceTask,
    records: Sequence[SourceRecord],
    partition: Any,
    what: str,
    exc: DataException,
) -> ConnectException:
    """The error for a poll whose last record of ``partition`` carries what cannot be stored
    (searched for only now: a good poll pays nothing for it)."""
    found = [i for i, r in enumerate(records) if r.source_partition is partition]
    index = found[-1] if found else len(records) - 1
    return ConnectException(
        f"{type(task).__qualname__}.poll() returned a {_describe_source(records[index])}, "
        f"record {index} of the batch, whose {what} cannot be stored: {exc}. Source "
        "partitions and offsets are maps of str to None, bool, int, finite float or str."
    )


def _describe_source(record: SourceRecord) -> str:
    return (
        f"source record for topic {record.topic!r} (source partition "
        f"{record.source_partition}, offset {record.source_offset})"
    )


def source_record_text(record: SourceRecord) -> str:
    """A failed source record as Kafka's LogReporter.Source logs it with
    errors.log.include.messages: its ``SourceRecord.toString()``, the ConnectRecord part
    after it (``SourceRecord{sourcePartition={f=a}, sourceOffset={p=1}} ConnectRecord{topic='t',
    kafkaPartition=null, key=null, keySchema=null, value=x, valueSchema=Schema{STRING},
    timestamp=null, headers=ConnectHeaders(headers=)}``), values as Java prints them
    (:func:`plugin_api.text.java_string`). A bytes key or value is written as
    ``Arrays.toString`` where Java writes the array's identity (``[B@1b6d3586``). Never
    raises: a value that cannot be printed leaves the record described by where it is."""
    try:
        headers = record._headers
        listed = (
            "["
            + ", ".join(
                f"ConnectHeader(key={h.key}, value={_java_value(h.value, h.schema)}, "
                f"schema={_schema_text(h.schema)})"
                for h in headers
            )
            + "]"
            if headers
            else ""
        )
        partition = record.kafka_partition
        return (
            f"SourceRecord{{sourcePartition={_java_value(record.source_partition, None)}, "
            f"sourceOffset={_java_value(record.source_offset, None)}}} "
            f"ConnectRecord{{topic='{record.topic}', "
            f"kafkaPartition={'null' if partition is None else partition}, "
            f"key={_java_value(record.key, record.key_schema)}, "
            f"keySchema={_schema_text(record.key_schema)}, "
            f"value={_java_value(record.value, record.value_schema)}, "
            f"valueSchema={_schema_text(record.value_schema)}, "
            f"timestamp={'null' if record.timestamp is None else record.timestamp}, "
            f"headers=ConnectHeaders(headers={listed})}}"
        )
    except Exception:  # noqa: BLE001 - the log line must not fail the error handling
        return _describe_source(record)


def _java_value(value: object, schema: Any) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in bytes(value)) + "]"
    return java_string(value, schema)


def _schema_text(schema: Any) -> str:
    """Kafka's ConnectSchema.toString: ``Schema{name:TYPE}``, ``Schema{TYPE}``, or null."""
    if schema is None:
        return "null"
    name = schema.name
    if name is None:
        return f"Schema{{{schema.type.name}}}"
    return f"Schema{{{name}:{schema.type.name}}}"


class _CollectingReporter(ErrantRecordReporter):
    """The errant record reporter: reports go back to the worker with the put() reply, and the
    worker writes them to the dead letter queue before it commits their offsets."""

    def __init__(self, sink: HostSinkTaskContext) -> None:
        self._sink = sink
        self.task_class = "unknown"

    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        failure = StageFailure(TASK_PUT, None, error)
        failure.component = self.task_class
        report = (
            record.original_topic,
            record.original_kafka_partition,
            record.original_kafka_offset,
            *failure.info(),
        )
        with self._sink.reported_lock:  # any thread of the task's, as Kafka's reporter
            self._sink.reported.append(report)
        done: Future[None] = Future()
        done.set_result(None)
        return done


class HostSinkTaskContext(SinkTaskContext):
    """Records what the task asks of the worker; drained into every put/pre_commit reply."""

    def __init__(self, configs: Mapping[str, str], errant_reporting: bool) -> None:
        self._configs = dict(configs)
        self._assignment: set[TopicPartition] = set()
        self._reporter = _CollectingReporter(self) if errant_reporting else None
        # Reports wait here for the reply of the task's next call, whichever it is (put,
        # pre_commit, open, close), also one that ends in a retriable error: a report is never
        # dropped, as Kafka's reporter sends each at once.
        self.reported: list[tuple[Any, ...]] = []
        self.reported_lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.seeks: dict[TopicPartition, int] = {}
        self.paused: list[TopicPartition] = []
        self.resumed: list[TopicPartition] = []
        self.commit_requested = False
        self.timeout_ms: int | None = None

    def drain(
        self,
        failed: list[tuple[Any, ...]] | None = None,
        commit: dict[tuple[str, int], int] | None = None,
        put: tuple[int, float] | None = None,
        errors: tuple[int, int] | None = None,
    ) -> tuple[Any, ...]:
        """The :class:`SinkActions` of the call that just ended (as a plain tuple, the
        shape that crosses the channel), and a clean slate for the next one."""
        with self.reported_lock:
            reported, self.reported = self.reported, []
        actions = SinkActions(
            {(tp[0], tp[1]): off for tp, off in self.seeks.items()},
            [(tp[0], tp[1]) for tp in self.paused],
            [(tp[0], tp[1]) for tp in self.resumed],
            self.commit_requested,
            self.timeout_ms,
            reported,
            failed or [],
            commit or {},
            put,
            errors,
        )
        self.reset()
        return tuple(actions)

    def configs(self) -> dict[str, str]:
        return dict(self._configs)

    def offset(self, offsets_or_tp: Any, offset: int | None = None) -> None:
        if offset is not None:
            self.seeks[TopicPartition(*offsets_or_tp)] = offset
        else:
            for tp, off in dict(offsets_or_tp).items():
                self.seeks[TopicPartition(*tp)] = off

    def timeout(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms

    def assignment(self) -> set[TopicPartition]:
        return set(self._assignment)

    def pause(self, *partitions: TopicPartition) -> None:
        self.paused.extend(TopicPartition(*tp) for tp in partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        self.resumed.extend(TopicPartition(*tp) for tp in partitions)

    def request_commit(self) -> None:
        self.commit_requested = True

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        return self._reporter


class SinkRunner:
    """Runs one SinkTask: convert + transform byte tuples into SinkRecords and ``put()``."""

    def __init__(
        self,
        task: SinkTask,
        pipeline: Pipeline,
        context: HostSinkTaskContext,
        errors: ErrorPolicy | None = None,
    ) -> None:
        self.task = task
        self.pipeline = pipeline
        self.context = context
        self.errors = errors or ErrorPolicy()
        self._transform = _make_chain(pipeline.stages, SinkRecord)
        self._convert = self._make_converter()
        self._headers_later = sink_columns.headers_later(
            pipeline.key_converter, pipeline.value_converter, pipeline.header_converter
        )
        # The records of a batch with tolerated failures, converted and not yet put, while the
        # worker waits for the dead letter queue to take the failed ones (see put()).
        self._held: SinkRecordBatch | None = None
        if context._reporter is not None:
            context._reporter.task_class = kafka_class_name(type(task))

    def put(self, wire: Sequence[Any]) -> tuple[Any, ...]:
        """``wire`` is a :class:`ConsumedBatch`'s or :class:`MessageBatch`'s ``wire()``.

        Returns the task's :class:`SinkActions`, whose ``failed`` lists each record whose
        conversion or transformation failed and was tolerated (it is not put). Under
        ``errors.tolerance=none`` the first such record ends the call: ``failed`` holds it
        alone, nothing is put, and the worker fails the task once it has reported it.

        With a dead letter queue, a batch with tolerated failures is not put either: its
        records are held, the answer's ``put`` is None, and the worker calls
        :meth:`put_held` once the dead letter queue has acknowledged the failed records (a
        record it refuses fails the task before anything past it is put). A batch without
        failures is put at once.
        """
        self._held = None
        batch = batch_from_wire(wire)
        failed: list[tuple[Any, ...]] = []
        try:
            records = self._by_column(batch, failed)
            if records is None:
                built: list[SinkRecord] = []
                convert = self._convert
                for row in batch.rows():
                    try:
                        record = convert(row)
                    except StageFailure as failure:
                        record = self._recover(row, failure, failed)
                    if record is not None:
                        built.append(record)
                records = SinkRecordBatch.of(built)
        except NotTolerated:
            # Nothing of the batch is put (Kafka converts a whole batch before put()): the
            # worker reports the record (log, dead letter queue), then fails the task.
            self.context.reset()
            return self.context.drain(failed=failed, errors=self.errors.take_counts())
        except RetryStopped as stopped:
            # Asked to stop while a record was retried: nothing of the batch is put, and the
            # worker keeps it for redelivery, which the stop ends, so none of its offsets is
            # committed and it is read again when the task runs next.
            self.context.reset()
            cause = RetriableException(
                f"the task was asked to stop while retrying a record ({stopped.failure}); "
                "its batch is not put"
            )
            raise RetriablePut(cause, None) from stopped
        if failed and self.errors.dead_letters:
            self._held = records
            return self.context.drain(failed=failed, errors=self.errors.take_counts())
        return self._put(records, failed)

    def put_held(self) -> tuple[Any, ...]:
        """``put()`` the records :meth:`put` held, now that the dead letter queue has taken
        the batch's failed records; they stay held if the task raises a retriable error (the
        worker asks again later, and the failed records are not reported twice)."""
        records, self._held = self._held, None
        if records is None:
            raise ConnectException("put_held() without a held batch")
        try:
            return self._put(records, [])
        except RetriablePut:
            self._held = records
            raise

    def _put(self, records: SinkRecordBatch, failed: list[tuple[Any, ...]]) -> tuple[Any, ...]:
        """The task's ``put()`` of the converted ``records`` and the call's answer."""
        started = time.monotonic()
        try:
            self.task.put(records)
        except RetriableException as exc:
            # The task may have called context.timeout() before raising: that is when the
            # worker should redeliver, so it travels with the error.
            retry_after_ms = self.context.timeout_ms
            self.context.reset()
            raise RetriablePut(exc, retry_after_ms) from exc
        except Exception as exc:
            # The task fails, but what the batch reported before (failures tolerated while
            # converting it, errant records) still goes to the dead letter queue.
            actions = self.context.drain(failed=failed, errors=self.errors.take_counts())
            raise FailedPut(exc, actions) from exc
        put = (len(records), (time.monotonic() - started) * 1000)
        errors = self.errors
        counts = errors.take_counts() if errors.failures else None
        return self.context.drain(failed=failed, put=put, errors=counts)

    def _recover(
        self, row: tuple[Any, ...], failure: StageFailure, failed: list[tuple[Any, ...]]
    ) -> SinkRecord | None:
        """Retry a record whose conversion or transformation failed (errors.retry.*); a record
        that still fails is added to ``failed``: skipped (None returned) when tolerated, else
        :class:`NotTolerated` is raised."""
        convert = self._convert
        record = self.errors.recover(lambda: convert(row), failure)
        if isinstance(record, StageFailure):
            failed.append((row[0], row[1], row[2], *record.info()))
            if not self.errors.tolerate_all:
                raise NotTolerated
            return None
        return record  # type: ignore[no-any-return]

    def _by_column(
        self, batch: ConsumedBatch | MessageBatch, failed: list[tuple[Any, ...]]
    ) -> SinkRecordBatch | None:
        """The put() batch converted column by column (:mod:`copycat_sink_columns`), or None,
        having added nothing to ``failed``, when the batch does not qualify or a converter
        raised on a column: the per-record path then converts it again and attributes the
        failure to its record. Without transforms the records are built when first read."""
        prepared = sink_columns.prepare(batch, self._headers_later)
        if prepared is None:
            return None
        converters = (self.pipeline.key_converter, self.pipeline.value_converter)
        hc = self.pipeline.header_converter
        try:
            key_pairs, schemas, values = sink_columns.convert(prepared, *converters)
        except sink_columns.BatchSizeError:
            raise
        except Exception:  # noqa: BLE001 - record by record, to name the record at fault
            return None
        transform = self._transform
        if transform is None:
            deferred: SinkRecordBatch = sink_columns.deferred(
                prepared, key_pairs, schemas, values, hc
            )
            return deferred
        records: list[SinkRecord] = []
        built = sink_columns.build(prepared, key_pairs, schemas, values, hc)
        for index, record in enumerate(built):
            try:
                transformed = transform(record)
            except StageFailure as failure:
                row = next(itertools.islice(batch.rows(), index, None))
                transformed = self._recover(row, failure, failed)
            if transformed is not None:
                records.append(transformed)
        return SinkRecordBatch.of(records)

    def _make_converter(self) -> Callable[[tuple[Any, ...]], SinkRecord | None]:
        """Build the per-record function once, with the pipeline's parts bound as locals."""
        pipeline = self.pipeline
        transform = self._transform
        kc, vc, hc = pipeline.key_converter, pipeline.value_converter, pipeline.header_converter
        timestamp_types = _TIMESTAMP_TYPES

        def convert(row: tuple[Any, ...]) -> SinkRecord | None:
            topic, partition, offset, timestamp, ts_type, key, value, raw_headers = row
            headers = None
            if raw_headers:
                try:
                    headers = sink_columns.connect_headers(hc, topic, raw_headers)
                except Exception as exc:
                    raise StageFailure(HEADER_CONVERTER, hc, exc) from exc
            ks, kv = None, key
            if kc is not None:
                try:
                    ks, kv = kc.to_connect_data(topic, key, headers)
                except Exception as exc:
                    raise StageFailure(KEY_CONVERTER, kc, exc) from exc
            vs, vv = None, value
            if vc is not None:
                try:
                    vs, vv = vc.to_connect_data(topic, value, headers)
                except Exception as exc:
                    raise StageFailure(VALUE_CONVERTER, vc, exc) from exc
            record = SinkRecord(
                topic,
                partition,
                ks,
                kv,
                vs,
                vv,
                offset,
                timestamp,
                timestamp_types[ts_type],
                headers,
            )
            return record if transform is None else transform(record)

        return convert

    def pre_commit(self, offsets: Mapping[tuple[str, int], int]) -> tuple[Any, ...]:
        current = {TopicPartition(*tp): off for tp, off in offsets.items()}
        committable = self.task.pre_commit(current)
        if committable is not None and not isinstance(committable, Mapping):
            raise ContractViolation(
                f"{type(self.task).__qualname__}.pre_commit() must return a mapping of "
                f"TopicPartition to offset (or None), got {type(committable).__name__}"
            )
        commit = {(tp[0], tp[1]): off for tp, off in (committable or {}).items()}
        return self.context.drain(commit=commit)

    def open(self, partitions: Sequence[tuple[str, int]]) -> tuple[Any, ...]:
        tps = [TopicPartition(*tp) for tp in partitions]
        self.context._assignment.update(tps)
        self.task.open(tps)
        return self.context.drain()

    def close(self, partitions: Sequence[tuple[str, int]]) -> tuple[Any, ...]:
        tps = [TopicPartition(*tp) for tp in partitions]
        self.task.close(tps)
        self.context._assignment.difference_update(tps)
        return self.context.drain()
