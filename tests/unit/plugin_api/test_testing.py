"""The plugin_api.testing harnesses, driven with tiny example plugins."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pytest
from plugin_api.connector import ExactlyOnceSupport
from plugin_api.records import Headers
from plugin_api.testing import (
    InMemoryOffsetStorageReader,
    MockSinkTaskContext,
    apply_transform,
    converter_round_trip,
    run_connector,
    run_sink_task,
    run_source_task,
    sink_records,
)

from plugin_api import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectException,
    Converter,
    DataException,
    Importance,
    Range,
    RetriableException,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Struct,
    Task,
    TopicPartition,
    Transformation,
    freeze_partition,
)

# --- example plugins -----------------------------------------------------------------


class LinesSourceTask(SourceTask):
    """Emits the comma-separated ``lines`` of its config, two per poll, resuming from offsets."""

    acked: ClassVar[list[int]] = []
    committed_calls: ClassVar[int] = 0

    def start(self, props: Mapping[str, str]) -> None:
        self.lines = props["lines"].split(",")
        self.partition = {"source": props["name"]}
        stored = self.context.offset_storage_reader().offset(self.partition)
        self.position = stored["line"] if stored else 0
        self.stopped = False

    def poll(self) -> list[SourceRecord] | None:
        batch = []
        for _ in range(2):
            if self.position >= len(self.lines):
                break
            line = self.lines[self.position]
            self.position += 1
            batch.append(SourceRecord(self.partition, {"line": self.position}, "lines", value=line))
        return batch or None

    def commit_record(self, record: SourceRecord, metadata: Any) -> None:
        type(self).acked.append(metadata.offset)

    def commit(self) -> None:
        type(self).committed_calls += 1

    def stop(self) -> None:
        self.stopped = True


class CollectingSinkTask(SinkTask):
    """Stores values in memory; durable only after flush; fails once on 'flaky'."""

    def start(self, props: Mapping[str, str]) -> None:
        self.buffer: list[object] = []
        self.durable: list[object] = []
        self.opened: list[TopicPartition] = []
        self.closed: list[TopicPartition] = []
        self.failed_once = False

    def open(self, partitions: Any) -> None:
        self.opened = list(partitions)

    def put(self, records: Sequence[SinkRecord]) -> None:
        if any(r.value == "flaky" for r in records) and not self.failed_once:
            self.failed_once = True
            self.context.timeout(100)
            raise RetriableException("try again")
        for record in records:
            if record.value == "bad":
                self.context.errant_record_reporter().report(record, DataException("bad value"))
            else:
                self.buffer.append(record.value)

    def flush(self, current_offsets: Mapping[TopicPartition, int]) -> None:
        self.durable += self.buffer
        self.buffer = []

    def close(self, partitions: Any) -> None:
        self.closed = list(partitions)

    def stop(self) -> None:
        pass


class LinesConnector(SourceConnector):
    CONFIG = (
        ConfigDef()
        .define(
            "lines", ConfigType.LIST, importance=Importance.HIGH, documentation="Lines to emit."
        )
        .define("tasks.max", ConfigType.INT, 1, Range.at_least(1))
    )

    def start(self, props: Mapping[str, str]) -> None:
        self.lines = self.CONFIG.parse(props)["lines"]

    def task_class(self) -> type[Task]:
        return LinesSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        count = min(max_tasks, len(self.lines))
        return [
            {"name": f"part-{i}", "lines": ",".join(self.lines[i::count])} for i in range(count)
        ]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return self.CONFIG

    def version(self) -> str:
        return "1.2.3"


class GreedyConnector(LinesConnector):
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{"n": str(i)} for i in range(max_tasks + 1)]


class JsonConverter(Converter):
    """Schemaless JSON values; ``charset`` is configurable."""

    def configure(self, configs: Mapping[str, object], is_key: bool) -> None:
        self.charset = str(configs.get("charset", "utf-8"))
        self.is_key = is_key

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: object, headers: Headers | None = None
    ) -> bytes | None:
        if value is None:
            return None
        if isinstance(value, Struct):
            value = value.to_dict()
        if headers is not None:
            headers.add("content-type", "application/json")
        return json.dumps(value).encode(self.charset)

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: Headers | None = None
    ) -> SchemaAndValue:
        if data is None:
            return SchemaAndValue(None, None)
        assert headers is not None and headers.last_with_name("content-type") is not None
        return SchemaAndValue(None, json.loads(data.decode(self.charset)))


class Upper(Transformation[SinkRecord]):
    """Upper-cases string values; drops values equal to ``drop``."""

    def configure(self, configs: Mapping[str, object]) -> None:
        self.drop = configs.get("drop")

    def apply(self, record: SinkRecord) -> SinkRecord | None:
        if record.value == self.drop:
            return None
        return record.new_record(value=str(record.value).upper())


class Mutator(Transformation[SinkRecord]):
    def apply(self, record: SinkRecord) -> SinkRecord | None:
        record.value = "mutated"
        return record


# --- tests --------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _reset() -> None:
    LinesSourceTask.acked = []
    LinesSourceTask.committed_calls = 0


def test_run_source_task_reads_everything_and_tracks_offsets() -> None:
    run = run_source_task(LinesSourceTask, {"name": "a", "lines": "l1,l2,l3,l4,l5"})
    assert run.values == ["l1", "l2", "l3", "l4", "l5"]
    assert run.polls == 4  # 3 with data, 1 idle
    assert run.offset_for({"source": "a"}) == {"line": 5}
    assert run.committed_offsets == {freeze_partition({"source": "a"}): {"line": 5}}
    assert LinesSourceTask.acked == [0, 1, 2, 3, 4]
    assert LinesSourceTask.committed_calls == 1
    assert run.task.stopped


def test_run_source_task_resumes_from_offsets_and_limits() -> None:
    offsets = {freeze_partition({"source": "a"}): {"line": 3}}
    run = run_source_task(
        LinesSourceTask, {"name": "a", "lines": "l1,l2,l3,l4,l5"}, offsets=offsets
    )
    assert run.values == ["l4", "l5"]
    limited = run_source_task(
        LinesSourceTask, {"name": "a", "lines": "l1,l2,l3,l4,l5"}, max_records=3
    )
    assert limited.values == ["l1", "l2", "l3"]
    assert limited.offset_for({"source": "a"}) == {"line": 3}
    polls = run_source_task(LinesSourceTask, {"name": "a", "lines": "l1,l2,l3"}, max_polls=1)
    assert polls.values == ["l1", "l2"]
    idle = run_source_task(
        LinesSourceTask, {"name": "a", "lines": "x"}, max_polls=5, stop_when_idle=False
    )
    assert idle.polls == 5 and idle.values == ["x"]


def test_offset_storage_reader_accepts_pairs_and_freezes_nested() -> None:
    reader = InMemoryOffsetStorageReader([({"db": "x", "table": "t"}, {"id": 9})])
    assert reader.offset({"table": "t", "db": "x"}) == {"id": 9}
    assert reader.offset({"db": "y"}) is None
    assert reader.offsets([{"db": "x", "table": "t"}]) == {(("db", "x"), ("table", "t")): {"id": 9}}
    assert freeze_partition({"k": {"b": [1, 2], "a": 1}}) == (("k", (("a", 1), ("b", (1, 2)))),)


def test_run_sink_task_commits_next_offsets_after_flush() -> None:
    records = sink_records("in", ["a", "b", "c"], partition=0) + sink_records(
        "in", ["d", "e"], partition=1, start_offset=10
    )
    run = run_sink_task(CollectingSinkTask, {"topics": "in"}, records, batch_size=2)
    assert run.committed == {TopicPartition("in", 0): 3, TopicPartition("in", 1): 12}
    assert run.task.durable == ["a", "b", "c", "d", "e"]
    assert run.task.opened == [TopicPartition("in", 0), TopicPartition("in", 1)]
    assert run.task.closed == run.task.opened
    assert run.batches == 3


def test_run_sink_task_retries_and_reports_errant_records() -> None:
    records = sink_records("in", ["ok", "flaky", "bad", "fine"])
    run = run_sink_task(CollectingSinkTask, {}, records, batch_size=10)
    assert run.task.durable == ["ok", "flaky", "fine"]
    assert run.context.timeout_ms == 100
    reported = run.context.reporter.reported
    assert [(r.value, r.kafka_offset, str(e)) for r, e in reported] == [("bad", 2, "bad value")]
    assert run.committed == {TopicPartition("in", 0): 4}


def test_mock_sink_context_records_requests() -> None:
    tp = TopicPartition("t", 0)
    ctx = MockSinkTaskContext({"a": "b"}, assignment=[tp])
    ctx.offset(tp, 5)
    ctx.offset({TopicPartition("t", 1): 7})
    ctx.pause(tp)
    ctx.request_commit()
    assert ctx.requested_offsets == {tp: 5, TopicPartition("t", 1): 7}
    assert ctx.paused == {tp} and ctx.commit_requested and ctx.assignment() == {tp}
    ctx.resume(tp)
    assert ctx.paused == set()
    assert ctx.errant_record_reporter().report(sink_records("t", [1])[0], ValueError()).done()


def test_run_connector_splits_work() -> None:
    configs = run_connector(LinesConnector, {"lines": "a,b,c", "tasks.max": "2"}, max_tasks=2)
    assert configs == [{"name": "part-0", "lines": "a,c"}, {"name": "part-1", "lines": "b"}]
    assert LinesConnector().version() == "1.2.3"
    # Each task config runs through the source task harness.
    values = [v for c in configs for v in run_source_task(LinesSourceTask, c).values]
    assert sorted(map(str, values)) == ["a", "b", "c"]


def test_run_connector_rejects_bad_config_and_too_many_tasks() -> None:
    with pytest.raises(ConfigException, match='"lines"'):
        run_connector(LinesConnector, {})
    with pytest.raises(ConfigException, match="tasks.max"):
        run_connector(LinesConnector, {"lines": "a", "tasks.max": "0"})
    with pytest.raises(ConnectException, match="max is 2"):
        run_connector(GreedyConnector, {"lines": "a"}, max_tasks=2)


def test_connector_defaults() -> None:
    connector = LinesConnector()
    errors = {v.name: v.error_messages for v in connector.validate({"tasks.max": "x"})}
    assert errors["lines"] and errors["tasks.max"]
    assert connector.exactly_once_support({}) is None
    assert connector.can_define_transaction_boundaries({}) is None
    assert connector.alter_offsets({}, {}) is False
    assert ExactlyOnceSupport.SUPPORTED.value == "SUPPORTED"
    assert SinkConnector.TOPICS_CONFIG == SinkTask.TOPICS_CONFIG == "topics"
    assert SinkTask.TOPICS_REGEX_CONFIG == "topics.regex"


def test_apply_transform() -> None:
    record = sink_records("t", ["hello"])[0]
    result = apply_transform(Upper, {"drop": "skip"}, record)
    assert result is not None and result.value == "HELLO" and record.value == "hello"
    assert apply_transform(Upper(), {"drop": "hello"}, record) is None
    with pytest.raises(AssertionError, match="mutated"):
        apply_transform(Mutator, {}, record)


def test_converter_round_trip() -> None:
    value = {"id": 1, "tags": ["a", "é"]}
    assert converter_round_trip(
        JsonConverter, {"charset": "utf-16"}, "t", None, value
    ) == SchemaAndValue(None, value)
    assert converter_round_trip(JsonConverter, {}, "t", None, None) == SchemaAndValue(None, None)
    schema = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).build()
    back = converter_round_trip(
        JsonConverter, {}, "t", schema, Struct(schema).put("id", 5), is_key=True
    )
    assert back.value == {"id": 5}


class _UnstorableOffsetTask(SourceTask):
    """One poll of two records; the second's offset cannot be stored."""

    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        self.polled = False

    def poll(self) -> list[SourceRecord]:
        if self.polled:
            return []
        self.polled = True
        return [
            SourceRecord({"p": 0}, {"n": 1}, "t", value="a"),
            SourceRecord({"p": 0}, {"n": float("nan")}, "t", value="b"),
        ]

    def stop(self) -> None:
        pass


def test_run_source_task_refuses_what_the_worker_cannot_store() -> None:
    with pytest.raises(ConnectException) as refused:
        run_source_task(_UnstorableOffsetTask, {})
    message = str(refused.value)
    assert "_UnstorableOffsetTask.poll() returned a source record for topic 't'" in message
    assert "record 1 of the batch, whose source offset cannot be stored" in message
    assert "field n contains nan, which is not a finite number" in message


class _ReturnsDict(Transformation[SourceRecord]):
    def apply(self, record: SourceRecord) -> Any:
        return {"not": "a record"}


def test_apply_transform_refuses_a_result_that_is_no_record() -> None:
    with pytest.raises(ConnectException, match="returned dict, not a SourceRecord or None"):
        apply_transform(_ReturnsDict, {}, SourceRecord(None, None, "t", value="v"))
