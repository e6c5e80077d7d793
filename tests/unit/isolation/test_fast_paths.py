"""The data path's column fast paths against the straightforward ones, on generated batches.

* sink: a put() of the consumer's own messages (``MessageBatch``, the data path in the host)
  and of their columns (``ConsumedBatch``, across a pipe) give the task exactly the records
  of the per-record path (a ``SinkRecord`` constructed per message), the same failures, and
  the batch's values without building records;
* source: a ``SourceRecordBatch`` polled by column produces exactly the bytes, topics,
  partitions, timestamps and offsets of the same records polled as a list.

confluent-kafka's ``Message`` objects are made directly (its constructor takes every field).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence
from typing import Any

from confluent_kafka import Message
from copycat_converters.json_converter import JsonConverter
from copycat_converters.simple import ByteArrayConverter, StringConverter
from copycat_converters.simple_header import SimpleHeaderConverter
from copycat_file import FileStreamSinkTask
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isolation.host import HOSTSIDE_DIR
from plugin_api import (
    STRING_SCHEMA,
    DataException,
    SinkRecord,
    SinkRecordBatch,
    SinkTask,
    SourceRecord,
    SourceRecordBatch,
    SourceTask,
    Transformation,
)

sys.path.insert(0, str(HOSTSIDE_DIR))  # the host-side modules, as a plugin host imports them
from copycat_batch import ConsumedBatch, MessageBatch, ProducedBatch  # noqa: E402
from copycat_errors import ErrorPolicy  # noqa: E402
from copycat_pipeline import (  # noqa: E402
    HostSinkTaskContext,
    Pipeline,
    SinkRunner,
    SourceRunner,
    TransformStage,
)

# Generated batches are small and many; the shared machine's load must not fail a case.
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOTS = sorted(
    {slot for klass in SinkRecord.__mro__ for slot in klass.__dict__.get("__slots__", ())}
)


class KeepingSink(SinkTask):
    """Keeps what each put() was given: the batch itself, and its records."""

    def __init__(self) -> None:
        self.batches: list[Sequence[SinkRecord]] = []

    def version(self) -> str:
        return "1"

    def start(self, props: Any) -> None:
        pass

    def put(self, records: Sequence[SinkRecord]) -> None:
        self.batches.append(records)

    def stop(self) -> None:
        pass


class Uppercase(Transformation):
    """A transform that copies each record (upper-cases string values)."""

    def configure(self, configs: Any) -> None:
        pass

    def apply(self, record: Any) -> Any:
        value = record.value.upper() if isinstance(record.value, str) else record.value
        return record.new_record(value=value)

    def close(self) -> None:
        pass


def _converter(cls: type, is_key: bool, **configs: Any) -> Any:
    converter = cls()
    converter.configure(configs, is_key)
    return converter


class HeaderCounting(StringConverter):
    """A converter whose answers depend on the headers (it prefixes how many there are)."""

    to_connect_data_reads_headers = True

    def to_connect_data(self, topic: str, data: Any, headers: Any = None) -> Any:
        schema, text = super().to_connect_data(topic, data, headers)
        return schema, f"{len(headers or ())}:{text}"

    def to_connect_data_batch(self, topic: str, data: Any, headers: Any) -> Any:
        return [self.to_connect_data(topic, d, h) for d, h in zip(data, headers, strict=True)]

    def to_connect_data_column(self, topic: str, data: Any, headers: Any) -> Any:
        return None


class StrictHeaders(SimpleHeaderConverter):
    """A header converter that can fail: it refuses empty header values."""

    to_connect_header_never_fails = False

    def to_connect_header(self, topic: str, header_key: str, data: Any) -> Any:
        if data == b"":
            raise DataException(f"empty header {header_key}")
        return super().to_connect_header(topic, header_key, data)


CONVERTERS = {
    "string": lambda is_key: _converter(StringConverter, is_key),
    "bytes": lambda is_key: _converter(ByteArrayConverter, is_key),
    "json": lambda is_key: _converter(JsonConverter, is_key, **{"schemas.enable": "false"}),
    "headers": lambda is_key: _converter(HeaderCounting, is_key),
}
HEADER_CONVERTERS = {
    "none": lambda: None,
    "simple": SimpleHeaderConverter,
    "string": lambda: _converter(StringConverter, False),
    "strict": StrictHeaders,
}


def _sink(name: str, transform: bool, header: str = "none") -> tuple[SinkRunner, KeepingSink]:
    task = KeepingSink()
    stages = [TransformStage("up", Uppercase())] if transform else []
    converters = (CONVERTERS[name](True), CONVERTERS[name](False), HEADER_CONVERTERS[header]())
    runner = SinkRunner(
        task,
        Pipeline(*converters, stages),
        HostSinkTaskContext({}, False),
        ErrorPolicy({"errors.tolerance": "all"}),
    )
    return runner, task


def _slots(record: SinkRecord) -> dict[str, Any]:
    return {slot: getattr(record, slot) for slot in SLOTS}


payloads = st.one_of(
    st.none(),
    st.binary(max_size=12),
    st.text(max_size=8).map(str.encode),
    st.integers(-5, 5).map(lambda i: str(i).encode()),
)
# Header values SimpleHeaderConverter reads as other types, or cannot read.
header_payloads = payloads | st.sampled_from([b"", b"[1,2]", b"{a:1}", b"[1,", b"true", b"2e9"])
header_lists: st.SearchStrategy[Any] = st.lists(
    st.tuples(st.sampled_from(["h", "trace"]), header_payloads), max_size=2
)


@st.composite
def consumed(draw: st.DrawFn) -> list[Message]:
    """Messages as a consumer hands them out: per partition, offsets increasing (gaps
    allowed: compacted topics, transaction markers); partitions interleaved."""
    topics = draw(st.sampled_from([["orders"], ["orders", "audit"]]))
    partitions = draw(st.integers(1, 3))
    count = draw(st.integers(1, 25))
    with_keys = draw(st.booleans())
    with_headers = draw(st.sampled_from([False, False, True]))
    stamp_type = draw(st.sampled_from([0, 1, 2, None]))  # None: mixed
    next_offset: dict[tuple[str, int], int] = {}
    messages = []
    for _ in range(count):
        tp = (draw(st.sampled_from(topics)), draw(st.integers(0, partitions - 1)))
        offset = next_offset.get(tp, draw(st.integers(0, 1000)))
        next_offset[tp] = offset + 1 + draw(st.sampled_from([0, 0, 0, 1, 5]))
        kind = stamp_type if stamp_type is not None else draw(st.sampled_from([0, 1, 2]))
        messages.append(
            Message(
                topic=tp[0],
                partition=tp[1],
                offset=offset,
                key=draw(payloads) if with_keys else None,
                value=draw(payloads),
                headers=draw(header_lists) if with_headers and draw(st.booleans()) else None,
                timestamp=(kind, 1_700_000_000_000 + offset if kind else -1),
            )
        )
    return messages


def _shared_or_none(values: list[Any]) -> Any:
    return values[0] if values.count(values[0]) == len(values) else None


def _put(runner: SinkRunner, task: KeepingSink, wire: tuple[Any, ...]) -> tuple[Any, Any]:
    actions = runner.put(wire)
    return task.batches[-1], actions


@PROPERTY
@given(
    messages=consumed(),
    converter=st.sampled_from(sorted(CONVERTERS)),
    header=st.sampled_from(sorted(HEADER_CONVERTERS)),
    transform=st.booleans(),
    hints=st.booleans(),
)
def test_a_put_of_messages_gives_the_records_of_the_per_record_path(
    messages: list[Message], converter: str, header: str, transform: bool, hints: bool
) -> None:
    topic = _shared_or_none([m.topic() for m in messages]) if hints else None
    partition = _shared_or_none([m.partition() for m in messages]) if hints else None
    columns = ConsumedBatch.from_messages(messages)
    runner, task = _sink(converter, transform, header)
    # The straightforward path: every row through the per-record converter (a SinkRecord
    # constructed per message), failures tolerated and listed by the runner's own recovery.
    expected: list[SinkRecord] = []
    expected_failed: list[tuple[Any, ...]] = []
    for row in columns.rows():
        try:
            record = runner._convert(row)
        except Exception as exc:  # noqa: BLE001 - a StageFailure: listed as the runner lists it
            record = runner._recover(row, exc, expected_failed)  # type: ignore[arg-type]
        if record is not None:
            expected.append(record)
    for wire in (
        MessageBatch(messages, topic, partition).wire(),
        ConsumedBatch.from_messages(messages).wire(),
    ):
        runner, task = _sink(converter, transform, header)
        batch, actions = _put(runner, task, wire)
        assert isinstance(batch, SinkRecordBatch)
        values = batch.values  # read before any record is built
        assert values == tuple(r.value for r in expected)
        assert [_slots(r) for r in batch] == [_slots(r) for r in expected]
        assert batch.values == values
        assert [f[:4] for f in actions[6]] == [f[:4] for f in expected_failed]


@PROPERTY
@given(messages=consumed(), hints=st.booleans(), drop=st.integers(0, 3))
def test_a_message_batch_tells_positions_rows_and_what_it_gives_back_as_its_columns(
    messages: list[Message], hints: bool, drop: int
) -> None:
    topic = _shared_or_none([m.topic() for m in messages]) if hints else None
    partition = _shared_or_none([m.partition() for m in messages]) if hints else None
    batch = MessageBatch(messages, topic, partition)
    columns = ConsumedBatch.from_messages(messages)
    assert len(batch) == len(columns)
    assert batch.positions() == columns.positions()
    assert list(batch.rows()) == list(columns.rows())
    assert list(batch.offsets()) == columns.offsets
    gone = {(m.topic(), m.partition()) for m in messages[: drop + 1]}
    kept, first = batch.without(gone)
    kept_columns, first_columns = columns.without(gone)
    assert first == first_columns
    assert list(kept.rows()) == list(kept_columns.rows())


def test_a_sink_batch_builds_its_records_once_and_only_when_read() -> None:
    built: list[int] = []

    def build() -> list[SinkRecord]:
        built.append(1)
        return [SinkRecord("t", 0, None, None, None, v, i) for i, v in enumerate("ab")]

    batch = SinkRecordBatch(["a", "b"], build)
    assert len(batch) == 2 and batch.values == ("a", "b") and not built
    first = batch[0]
    assert batch[0] is first and list(batch)[1].value == "b" and built == [1]
    assert batch[::-1] == [batch[1], batch[0]]
    assert batch == [first, batch[1]] and batch != [first]
    assert SinkRecordBatch.of([first]).values == ("a",)


def test_a_sink_batch_whose_builder_returns_too_few_records_says_so() -> None:
    batch = SinkRecordBatch(["a", "b"], list)
    try:
        batch[0]
    except ValueError as exc:
        assert "0 records built for 2 values" in str(exc)
    else:
        raise AssertionError("a short build went unnoticed")


class CountingKeys(StringConverter):
    """StringConverter (which cannot fail) counting the keys it converts."""

    converted = 0

    def to_connect_data_batch(self, topic: str, data: Any, headers: Any) -> Any:
        CountingKeys.converted += len(data)
        return super().to_connect_data_batch(topic, data, headers)


class StrictKeys(StringConverter):
    """A key converter that can fail (it refuses b"bad"), one key at a time."""

    to_connect_data_never_fails = False

    def to_connect_data(self, topic: str, data: Any, headers: Any = None) -> Any:
        if data == b"bad":
            raise DataException("bad key")
        return super().to_connect_data(topic, data, headers)

    def to_connect_data_batch(self, topic: str, data: Any, headers: Any) -> Any:
        return [self.to_connect_data(topic, key) for key in data]


def _batch(*, keys: Sequence[Any] = (), headers: Sequence[Any] = ()) -> MessageBatch:
    """Messages of orders-0 with values v0, v1, ... and these keys or headers."""
    messages = [
        Message(
            topic="orders",
            partition=0,
            offset=offset,
            key=key,
            value=b"v%d" % offset,
            headers=raw,
            timestamp=(1, 1_700_000_000_000 + offset),
        )
        for offset, (key, raw) in enumerate(itertools.zip_longest(keys, headers))
    ]
    return MessageBatch(messages, "orders", 0)


def _runner(
    key: Any = None, value: Any = None, header: Any = None
) -> tuple[SinkRunner, KeepingSink]:
    task = KeepingSink()
    runner = SinkRunner(
        task,
        Pipeline(key, value or _converter(StringConverter, False), header),
        HostSinkTaskContext({}, False),
        ErrorPolicy({"errors.tolerance": "all"}),
    )
    return runner, task


def test_keys_a_converter_cannot_fail_on_are_converted_only_when_a_record_is_read() -> None:
    CountingKeys.converted = 0
    runner, task = _runner(_converter(CountingKeys, True))
    runner.put(_batch(keys=[b"k0", b"k1", b"k2"]).wire())
    batch = task.batches[-1]
    assert isinstance(batch, SinkRecordBatch)
    assert batch.values == ("v0", "v1", "v2")
    assert CountingKeys.converted == 0  # a task reading values only never pays for keys
    assert [record.key for record in batch] == ["k0", "k1", "k2"]
    assert CountingKeys.converted == 3


def test_keys_a_converter_can_fail_on_are_converted_before_the_put() -> None:
    runner, task = _runner(_converter(StrictKeys, True))
    actions = runner.put(_batch(keys=[b"k0", b"bad", b"k2"]).wire())
    # The bad key is the record's conversion error, tolerated and reported by its offset,
    # though the task reads only the values: it never reaches the task.
    assert [failed[2] for failed in actions[6]] == [1]
    assert tuple(task.batches[-1].values) == ("v0", "v2")  # type: ignore[attr-defined]


class CountingHeaders(SimpleHeaderConverter):
    """SimpleHeaderConverter (which cannot fail) counting the header values it converts."""

    converted = 0

    def to_connect_header(self, topic: str, header_key: str, data: Any) -> Any:
        CountingHeaders.converted += 1
        return super().to_connect_header(topic, header_key, data)


HEADERS = [[("trace", b"42")], None, [("trace", b""), ("h", b"[1,2]")]]


def test_headers_no_converter_reads_are_converted_only_when_a_record_is_read() -> None:
    CountingHeaders.converted = 0
    runner, task = _runner(header=CountingHeaders())
    runner.put(_batch(headers=HEADERS).wire())
    batch = task.batches[-1]
    assert isinstance(batch, SinkRecordBatch)
    assert batch.values == ("v0", "v1", "v2")
    assert CountingHeaders.converted == 0  # a task reading values only never pays for them
    assert [[(h.key, h.value) for h in record.headers] for record in batch] == [
        [("trace", 42)],
        [],
        [("trace", ""), ("h", [1, 2])],
    ]
    assert CountingHeaders.converted == 3


def test_headers_a_header_converter_can_fail_on_are_converted_before_the_put() -> None:
    runner, task = _runner(header=StrictHeaders())
    actions = runner.put(_batch(headers=HEADERS).wire())
    # The empty header value is the record's conversion error, tolerated and reported by its
    # offset, though the task reads only the values: it never reaches the task.
    assert [failed[2] for failed in actions[6]] == [2]
    assert tuple(task.batches[-1].values) == ("v0", "v1")  # type: ignore[attr-defined]


def test_headers_reach_a_value_converter_that_reads_them() -> None:
    runner, task = _runner(None, _converter(HeaderCounting, False), CountingHeaders())
    runner.put(_batch(headers=HEADERS).wire())
    assert tuple(task.batches[-1].values) == ("1:v0", "0:v1", "2:v2")  # type: ignore[attr-defined]


# -- source ------------------------------------------------------------------------------


class Returning(SourceTask):
    def __init__(self, records: Any) -> None:
        self.records = records

    def version(self) -> str:
        return "1"

    def start(self, props: Any) -> None:
        pass

    def poll(self) -> Any:
        return self.records

    def stop(self) -> None:
        pass


class Acking(Returning):
    def commit_record(self, record: Any, metadata: Any) -> None:
        pass


class FailsOn(StringConverter):
    """A value converter that refuses one value (to see failures attributed alike)."""

    def from_connect_data(self, topic: str, schema: Any, value: Any, headers: Any = None) -> Any:
        if value == "bad":
            raise ValueError("bad value")
        return super().from_connect_data(topic, schema, value, headers)

    def from_connect_data_batch(self, topic: str, schemas: Any, values: Any, headers: Any) -> Any:
        if "bad" in values:
            raise ValueError("bad value")
        return super().from_connect_data_batch(topic, schemas, values, headers)


@PROPERTY
@given(
    values=st.lists(
        st.one_of(st.none(), st.text(max_size=6), st.just("bad"), st.integers(-3, 3)),
        min_size=0,
        max_size=20,
    ),
    partition=st.sampled_from([None, {"file": "a"}]),
    offsets=st.booleans(),
    key=st.sampled_from([None, "k", 7]),
    kafka_partition=st.sampled_from([None, 0, 2]),
    timestamp=st.sampled_from([None, 1_700_000_000_000]),
    transform=st.booleans(),
    acks=st.booleans(),
)
def test_a_source_batch_by_column_produces_what_its_records_produce(
    values: list[Any],
    partition: Any,
    offsets: bool,
    key: Any,
    kafka_partition: Any,
    timestamp: Any,
    transform: bool,
    acks: bool,
) -> None:
    source_offsets = [{"pos": i} for i in range(len(values))] if offsets else None
    batch = SourceRecordBatch(
        partition,
        source_offsets,
        "t",
        values,
        kafka_partition=kafka_partition,
        key_schema=None,
        key=key,
        value_schema=STRING_SCHEMA,
        timestamp=timestamp,
    )
    records = [
        SourceRecord(
            partition,
            None if source_offsets is None else source_offsets[i],
            "t",
            kafka_partition,
            None,
            key,
            STRING_SCHEMA,
            value,
            timestamp,
        )
        for i, value in enumerate(values)
    ]
    assert batch == records and len(batch) == len(records)

    def poll(polled: Any) -> tuple[list[tuple[Any, ...]], Any, Any]:
        stages = [TransformStage("up", Uppercase())] if transform else []
        pipeline = Pipeline(
            _converter(StringConverter, True), _converter(FailsOn, False), None, stages
        )
        task = (Acking if acks else Returning)(polled)
        runner = SourceRunner(task, pipeline, ErrorPolicy({"errors.tolerance": "all"}))
        wire, failures, last, *_ = runner.poll()
        rows = list(ProducedBatch.from_wire(wire).rows())
        in_flight = list(runner._in_flight.values())
        return rows, [f[:3] for f in failures], (last, in_flight)

    by_column, failures, (last, in_flight) = poll(batch)
    by_record, failures_by_record, (last_by_record, in_flight_by_record) = poll(records)
    assert by_column == by_record
    assert failures == failures_by_record
    assert last == last_by_record
    assert in_flight == in_flight_by_record


def test_a_source_batch_shares_nothing_but_what_it_was_given() -> None:
    batch = SourceRecordBatch({"f": 1}, [{"p": 1}, {"p": 2}], "t", ["a", "b"], timestamp=5)
    assert batch.last_source_offset == {"p": 2}
    first, second = batch
    assert (first.value, second.source_offset, second.timestamp) == ("a", {"p": 2}, 5)
    assert batch[0] is first  # built once
    assert first.kafka_partition is None and len(first.headers) == 0


# -- bytes kept as bytes (Utf8Texts) ------------------------------------------------------------


@PROPERTY
@given(values=st.lists(payloads, min_size=1, max_size=25), hints=st.booleans())
def test_a_file_sink_writes_the_bytes_the_per_record_path_writes(
    tmp_path_factory: Any, values: list[bytes | None], hints: bool
) -> None:
    """StringConverter + FileStreamSink, by column (a column of valid UTF-8 is written as the
    bytes consumed, never decoded): the file holds exactly what one record at a time gives,
    each value decoded (U+FFFD for what is not UTF-8), printed as Kafka's task prints it
    ("null" for a null) and encoded again."""
    messages = [
        Message(
            topic="orders",
            partition=0,
            offset=offset,
            key=None,
            value=value,
            timestamp=(1, 1_700_000_000_000),
        )
        for offset, value in enumerate(values)
    ]
    path = tmp_path_factory.mktemp("sink") / "out.txt"
    task = FileStreamSinkTask()
    context = HostSinkTaskContext({}, False)
    task.initialize(context)
    task.start({"file": str(path)})
    converters = (CONVERTERS["string"](True), CONVERTERS["string"](False))
    runner = SinkRunner(task, Pipeline(*converters, None, []), context, ErrorPolicy())
    runner.put(MessageBatch(messages, "orders" if hints else None, 0 if hints else None).wire())
    task.flush({})
    task.stop()
    texts = [converters[1].to_connect_data("orders", value).value for value in values]
    expected = "".join("null\n" if text is None else text + "\n" for text in texts)
    assert path.read_bytes() == expected.encode("utf-8", "replace")
