"""Task-side record pipelines inside the plugin host (stdlib + plugin_api only).

The worker moves only bytes and offsets; this module turns them into records and back:

* source: ``task.poll()`` -> SMT chain -> key/value/header converters -> byte tuples
* sink:   byte tuples -> converters -> SinkRecord -> SMT chain -> ``task.put()``

so that per-record Python work runs here, on the host's core, while the worker produces and
consumes on the other.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

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
    SinkRecord,
    SinkTask,
    SinkTaskContext,
    SourceRecord,
    SourceTask,
    SourceTaskContext,
    TimestampType,
    TopicPartition,
    Transformation,
)
from plugin_api.connector import freeze_partition

# A callback into the worker, answered before the current request completes.
Callback = Callable[[str, tuple[Any, ...]], Any]

_TIMESTAMP_TYPES = list(TimestampType)


class TransformStage:
    """One ``transforms.<alias>`` entry: the SMT and its optional (negated) predicate."""

    def __init__(
        self,
        alias: str,
        transform: Transformation[Any],
        predicate: Predicate | None = None,
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

    def transform(self, record: Any) -> Any:
        for stage in self.stages:
            record = stage.apply(record)
            if record is None:
                return None
        return record

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
    def __init__(self, configs: Mapping[str, str], callback: Callback) -> None:
        self._configs = dict(configs)
        self._reader = HostOffsetStorageReader(callback)

    def configs(self) -> dict[str, str]:
        return dict(self._configs)

    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._reader


class SourceRunner:
    """Runs one SourceTask: poll + transform + convert, and commit_record on acks."""

    def __init__(self, task: SourceTask, pipeline: Pipeline) -> None:
        self.task = task
        self.pipeline = pipeline
        self._seq = itertools.count()
        self._in_flight: dict[int, SourceRecord] = {}
        # Kafka calls commit_record() per acknowledged record; when the task keeps the no-op
        # default, neither the records nor their acks need to be kept or sent back.
        self.wants_acks = type(task).commit_record is not SourceTask.commit_record

    def poll(self) -> list[tuple[Any, ...]]:
        """Return ``(seq, topic, partition, key, value, headers, timestamp, src_part, src_off)``.

        A record the SMT chain dropped comes back with topic ``None``: the worker must still
        advance its source offset in order, as Kafka Connect does.
        """
        records = self.task.poll() or []
        out: list[tuple[Any, ...]] = []
        pipeline = self.pipeline
        kc, vc, hc = pipeline.key_converter, pipeline.value_converter, pipeline.header_converter
        in_flight = self._in_flight if self.wants_acks else None
        for original in records:
            seq = next(self._seq)
            if in_flight is not None:
                in_flight[seq] = original
            record = pipeline.transform(original) if pipeline.stages else original
            if record is None:
                out.append((seq, None, None, None, None, None, None,
                             original.source_partition, original.source_offset))
                continue
            topic = record.topic
            try:
                headers = record.headers
                key = kc.from_connect_data(topic, record.key_schema, record.key, headers) if kc \
                    else record.key
                value = vc.from_connect_data(topic, record.value_schema, record.value, headers) \
                    if vc else record.value
                raw_headers = _encode_headers(hc, topic, headers) if headers else None
            except ConnectException:
                raise
            except Exception as exc:
                raise DataException(
                    f"failed to convert source record for topic {topic!r} "
                    f"(source partition {original.source_partition}, "
                    f"offset {original.source_offset}): {exc}"
                ) from exc
            out.append((seq, topic, record.kafka_partition, key, value, raw_headers,
                        record.timestamp, original.source_partition, original.source_offset))
        return out

    def acked(self, acks: Sequence[tuple[int, str | None, int, int, int | None]]) -> None:
        """Call ``commit_record`` for records the broker acknowledged (or that were dropped)."""
        for seq, topic, partition, offset, timestamp in acks:
            record = self._in_flight.pop(seq, None)
            if record is None:
                continue
            metadata = None if topic is None else RecordMetadata(topic, partition, offset, timestamp)
            self.task.commit_record(record, metadata)


def _encode_headers(
    converter: HeaderConverter | None, topic: str, headers: Headers
) -> list[tuple[str, bytes | None]]:
    if converter is None:
        return [(h.key, h.value) for h in headers]
    return [
        (h.key, converter.from_connect_header(topic, h.key, h.schema, h.value)) for h in headers
    ]


class _CollectingReporter(ErrantRecordReporter):
    def __init__(self, sink: HostSinkTaskContext) -> None:
        self._sink = sink

    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        self._sink.reported.append(
            (record.original_topic, record.original_kafka_partition,
             record.original_kafka_offset, f"{type(error).__name__}: {error}")
        )
        done: Future[None] = Future()
        done.set_result(None)
        return done


class HostSinkTaskContext(SinkTaskContext):
    """Records what the task asks of the worker; drained into every put/pre_commit reply."""

    def __init__(self, configs: Mapping[str, str], errant_reporting: bool) -> None:
        self._configs = dict(configs)
        self._assignment: set[TopicPartition] = set()
        self._reporter = _CollectingReporter(self) if errant_reporting else None
        self.reset()

    def reset(self) -> None:
        self.seeks: dict[TopicPartition, int] = {}
        self.paused: list[TopicPartition] = []
        self.resumed: list[TopicPartition] = []
        self.commit_requested = False
        self.timeout_ms: int | None = None
        self.reported: list[tuple[str, int, int, str]] = []

    def drain(self) -> dict[str, Any]:
        actions = {
            "seeks": dict(self.seeks),
            "pause": list(self.paused),
            "resume": list(self.resumed),
            "request_commit": self.commit_requested,
            "timeout_ms": self.timeout_ms,
            "reported": list(self.reported),
        }
        self.reset()
        return actions

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

    def __init__(self, task: SinkTask, pipeline: Pipeline, context: HostSinkTaskContext) -> None:
        self.task = task
        self.pipeline = pipeline
        self.context = context

    def put(self, batch: Sequence[tuple[Any, ...]]) -> dict[str, Any]:
        """``batch`` holds ``(topic, partition, offset, timestamp, ts_type, key, value, headers)``."""
        records = []
        pipeline = self.pipeline
        kc, vc, hc = pipeline.key_converter, pipeline.value_converter, pipeline.header_converter
        stages, timestamp_types = pipeline.stages, _TIMESTAMP_TYPES
        for topic, partition, offset, timestamp, ts_type, key, value, raw_headers in batch:
            try:
                headers = None
                if raw_headers:
                    headers = Headers()
                    for hkey, hvalue in raw_headers:
                        if hc is None:
                            headers.add(hkey, hvalue)
                        else:
                            sv = hc.to_connect_header(topic, hkey, hvalue)
                            headers.add(hkey, sv.value, sv.schema)
                ks, kv = kc.to_connect_data(topic, key, headers) if kc else (None, key)
                vs, vv = vc.to_connect_data(topic, value, headers) if vc else (None, value)
            except ConnectException as exc:
                raise type(exc)(f"{exc} (record {topic}-{partition}@{offset})") from exc
            except Exception as exc:
                raise DataException(
                    f"failed to convert record {topic}-{partition}@{offset}: {exc}"
                ) from exc
            record = SinkRecord(topic, partition, ks, kv, vs, vv, offset, timestamp,
                                timestamp_types[ts_type], headers)
            if stages:
                record = pipeline.transform(record)
                if record is None:
                    continue
            records.append(record)
        self.task.put(records)
        return self.context.drain()

    def pre_commit(self, offsets: Mapping[tuple[str, int], int]) -> dict[str, Any]:
        current = {TopicPartition(*tp): off for tp, off in offsets.items()}
        committable = self.task.pre_commit(current)
        actions = self.context.drain()
        actions["commit"] = {(tp[0], tp[1]): off for tp, off in (committable or {}).items()}
        return actions

    def open(self, partitions: Sequence[tuple[str, int]]) -> dict[str, Any]:
        tps = [TopicPartition(*tp) for tp in partitions]
        self.context._assignment.update(tps)
        self.task.open(tps)
        return self.context.drain()

    def close(self, partitions: Sequence[tuple[str, int]]) -> dict[str, Any]:
        tps = [TopicPartition(*tp) for tp in partitions]
        self.task.close(tps)
        self.context._assignment.difference_update(tps)
        return self.context.drain()
