"""FileStreamSourceConnector / Task, driven through plugin_api.testing."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from copycat_converters import StringConverter
from copycat_file import FileStreamSourceConnector, FileStreamSourceTask, __version__
from copycat_file import source as source_module
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_api.testing import MockSourceTaskContext

from plugin_api import (
    STRING_SCHEMA,
    ConfigException,
    ExactlyOnceSupport,
    SourceRecord,
    SourceRecordBatch,
    freeze_partition,
    run_connector,
    run_source_task,
)


def started_task(path: Path, **extra: str) -> FileStreamSourceTask:
    task = FileStreamSourceTask()
    config = {"file": str(path), "topic": "lines", **extra}
    task.initialize(MockSourceTaskContext(config))
    task.start(config)
    return task


@pytest.fixture(autouse=True)
def fast_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source_module, "IDLE_WAIT_SECONDS", 0.01)


def kafka_lines(data: bytes) -> list[tuple[bytes, int]]:
    """Each complete line of ``data`` and the byte position after its line end, written as
    Kafka's FileStreamSourceTask reads a buffer (extractLine): byte by byte, a line ends at
    ``\\n``, or at ``\\r`` (taking a ``\\n`` right after it too); a ``\\r`` with nothing read
    after it yet ends nothing."""
    found, start, i = [], 0, 0
    while i < len(data):
        byte = data[i : i + 1]
        if byte == b"\n" or (byte == b"\r" and i + 1 < len(data)):
            end = i + 2 if data[i : i + 2] == b"\r\n" else i + 1
            found.append((data[start:i], end))
            start = i = end
            continue
        if byte == b"\r":
            break
        i += 1
    return found


def test_reads_every_line_with_byte_offsets(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes("a\nbé\r\n\nlast\n".encode())
    run = run_source_task(FileStreamSourceTask, {"file": str(path), "topic": "lines"})
    assert run.values == ["a", "bé", "", "last"]
    assert [r.source_offset for r in run.records] == [
        {"position": 2},
        {"position": 7},
        {"position": 8},
        {"position": 13},
    ]
    record = run.records[0]
    assert record.topic == "lines" and record.value_schema == STRING_SCHEMA
    assert record.source_partition == {"filename": str(path)}
    assert run.offset_for({"filename": str(path)}) == {"position": path.stat().st_size}


def test_resumes_from_stored_offset(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_text("one\ntwo\nthree\n")
    offsets = [({"filename": str(path)}, {"position": 4})]
    run = run_source_task(FileStreamSourceTask, {"file": str(path), "topic": "t"}, offsets=offsets)
    assert run.values == ["two", "three"]
    assert run.records[-1].source_offset == {"position": 14}


def test_batch_size_is_respected(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_text("".join(f"line {i}\n" for i in range(10)))
    run = run_source_task(
        FileStreamSourceTask, {"file": str(path), "topic": "t", "batch.size": "3"}
    )
    assert run.values == [f"line {i}" for i in range(10)]
    assert run.polls >= 4
    task = started_task(path, **{"batch.size": "3"})
    try:
        assert [len(task.poll() or []) for _ in range(5)] == [3, 3, 3, 1, 0]
    finally:
        task.stop()


@pytest.mark.parametrize("batch_size", ["0", "-1"])
def test_a_batch_size_below_one_reads_a_line_per_poll_as_kafka(
    tmp_path: Path, batch_size: str
) -> None:
    """Kafka's batch.size has no validator, and its task returns a poll's records once they
    are batch.size or more: below 1, after each line."""
    path = tmp_path / "in.txt"
    path.write_text("".join(f"line {i}\n" for i in range(3)))
    config = {"file": str(path), "topic": "t", "batch.size": batch_size}
    assert not [v for v in FileStreamSourceConnector().validate(config) if v.error_messages]
    assert run_connector(FileStreamSourceConnector, config) == [config]
    task = started_task(path, **{"batch.size": batch_size})
    try:
        assert [len(task.poll() or []) for _ in range(4)] == [1, 1, 1, 0]
    finally:
        task.stop()


def test_follows_appended_lines_and_holds_back_partial_line(tmp_path: Path) -> None:
    path = tmp_path / "grow.txt"
    path.write_text("first\npart")
    task = started_task(path)
    try:
        assert [r.value for r in task.poll() or []] == ["first"]
        assert task.poll() == []
        with path.open("a") as f:
            f.write("ial\nnext\n")
        records = task.poll() or []
        assert [r.value for r in records] == ["partial", "next"]
        assert records[-1].source_offset == {"position": path.stat().st_size}
        assert task.poll() == []
    finally:
        task.stop()


def test_lines_end_as_in_kafka_with_a_cr_a_crlf_or_a_newline(tmp_path: Path) -> None:
    """A lone CR ends a line as in Kafka's task (a file written with old Mac line ends is not
    one record); a CR last in the file waits for the next byte: a LF after it belongs to it."""
    path = tmp_path / "cr.txt"
    path.write_bytes(b"cr-only\rafter-cr\r\n\rnext\r")
    task = started_task(path)
    try:
        records = task.poll() or []
        assert [r.value for r in records] == ["cr-only", "after-cr", ""]
        assert [r.source_offset for r in records] == [
            {"position": 8},
            {"position": 18},
            {"position": 19},
        ]
        assert task.poll() == []  # "next\r": is it "next" + CRLF?
        with path.open("ab") as f:
            f.write(b"\nlast\n")
        records = task.poll() or []
        assert [r.value for r in records] == ["next", "last"]
        assert records[-1].source_offset == {"position": path.stat().st_size}
    finally:
        task.stop()


def test_waits_for_missing_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "later.txt"
    task = started_task(path)
    try:
        assert task.poll() == []
        assert task.poll() == []
        assert sum("Couldn't find file" in m for m in caplog.messages) == 1
        path.write_text("hello\n")
        assert [r.value for r in task.poll() or []] == ["hello"]
    finally:
        task.stop()


def test_long_lines_spanning_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source_module, "READ_CHUNK_BYTES", 7)
    path = tmp_path / "long.txt"
    lines = ["x" * 30, "y", "z" * 15]
    path.write_text("".join(f"{line}\n" for line in lines))
    run = run_source_task(FileStreamSourceTask, {"file": str(path), "topic": "t"})
    assert run.values == lines


def test_stop_wakes_an_idle_poll(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source_module, "IDLE_WAIT_SECONDS", 5.0)
    path = tmp_path / "idle.txt"
    path.write_text("")
    task = started_task(path)
    threading.Timer(0.05, task.stop).start()
    started = time.monotonic()
    assert task.poll() == []
    assert time.monotonic() - started < 2.0


def test_bad_stored_offset_type(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_text("a\n")
    with pytest.raises(Exception, match="incorrect type"):
        run_source_task(
            FileStreamSourceTask,
            {"file": str(path), "topic": "t"},
            offsets=[({"filename": str(path)}, {"position": "4"})],
        )


def test_connector_single_task_and_validation(tmp_path: Path) -> None:
    config = {"file": str(tmp_path / "f"), "topic": "t"}
    # One task, with the connector's config as given (as Kafka's connector does).
    assert run_connector(FileStreamSourceConnector, config, max_tasks=5) == [config]
    assert run_connector(FileStreamSourceConnector, {"topic": "t"}) == [{"topic": "t"}]
    with pytest.raises(ConfigException, match="must be a single topic"):
        run_connector(FileStreamSourceConnector, {"topic": "a,b"})
    with pytest.raises(ConfigException, match="topic"):
        run_connector(FileStreamSourceConnector, {"file": "x"})
    errors = {
        v.name: v.error_messages
        for v in FileStreamSourceConnector().validate({"topic": "a,b", "batch.size": "many"})
    }
    assert errors["topic"] and errors["batch.size"] and not errors["file"]


def test_connector_metadata() -> None:
    connector = FileStreamSourceConnector()
    assert connector.version() == __version__
    assert FileStreamSourceConnector.KAFKA_CLASS_ALIASES == (
        "org.apache.kafka.connect.file.FileStreamSourceConnector",
    )
    assert (
        connector.exactly_once_support({"file": "f", "topic": "t"}) is ExactlyOnceSupport.SUPPORTED
    )
    assert connector.exactly_once_support({"topic": "t"}) is ExactlyOnceSupport.UNSUPPORTED
    partition = freeze_partition({"filename": "f"})
    assert connector.alter_offsets({"file": "f"}, {partition: {"position": 3}})
    with pytest.raises(Exception, match=r"should be a non-negative value \(the offset of partit"):
        connector.alter_offsets({"file": "f"}, {partition: {"position": -1}})
    with pytest.raises(Exception, match=r"expected to be a Long value \(.*has \"3\"\)"):
        connector.alter_offsets({"file": "f"}, {partition: {"position": "3"}})
    # Kafka's message when the key is missing, with the partition and what was given.
    with pytest.raises(Exception, match="should either be null or contain the key 'position'"):
        connector.alter_offsets({"file": "f"}, {partition: {"pos": 11}})
    # A partition that is not a file's (Kafka's check); a reset of it is let through, so stray
    # partitions can be cleaned up.
    stray = freeze_partition({"file": "x"})
    with pytest.raises(Exception, match="Partition objects should contain the key 'filename'"):
        connector.alter_offsets({"file": "f"}, {stray: {"position": 1}})
    assert connector.alter_offsets({"file": "f"}, {stray: None})


def test_a_large_file_is_read_whole_and_in_order(tmp_path: Path) -> None:
    """200,000 lines through poll() batches: every line once, in order. (How fast is the
    business of bench/pipeline_bench.py, measured beside a bare loop, not of a test.)"""
    path = tmp_path / "big.txt"
    count = 200_000
    path.write_text("".join(f"{i:099d}\n" for i in range(count)))
    task = started_task(path)
    try:
        values: list[str] = []
        while len(values) < count:
            values += [r.value for r in task.poll() or []]
    finally:
        task.stop()
    assert values == [f"{i:099d}" for i in range(count)]


line_text = st.text(alphabet=st.sampled_from(["a", "z", " ", "é", "€", "\r", "\x00"]), max_size=6)


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(line_text, min_size=1, max_size=12),
    batch_size=st.integers(1, 5),
    crlf=st.booleans(),
)
def test_batched_polls_give_the_records_of_one_record_per_line(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], batch_size: int, crlf: bool
) -> None:
    """poll() returns SourceRecordBatches (offsets made on demand); read as records they are
    exactly one SourceRecord per line with the byte position after its newline."""
    path = tmp_path_factory.mktemp("lines") / "in.txt"
    data = "".join(line + ("\r\n" if crlf else "\n") for line in lines).encode()
    path.write_bytes(data)
    task = started_task(path, **{"batch.size": str(batch_size)})
    polled: list[SourceRecord] = []
    wanted = len(kafka_lines(data))
    for _ in range(wanted + 20):  # bounded: a reader that finds fewer lines fails, not hangs
        if len(polled) >= wanted:
            break
        batch = task.poll()
        assert isinstance(batch, SourceRecordBatch) and len(batch) <= batch_size
        if batch:
            assert batch.last_source_offset == batch[-1].source_offset
        polled.extend(batch)
    task.stop()
    expected = []
    for raw, position in kafka_lines(data):
        text = raw.decode("utf-8", "replace")
        expected.append(
            SourceRecord(
                {"filename": str(path)},
                {"position": position},
                "lines",
                None,
                None,
                None,
                STRING_SCHEMA,
                text,
                polled[0].timestamp,
            )
        )
    assert [r.timestamp is not None for r in polled] == [True] * len(polled)
    assert [dict(r.source_offset) for r in polled] == [r.source_offset for r in expected]
    assert [r.value for r in polled] == [r.value for r in expected]
    assert [(r.topic, r.source_partition, r.value_schema) for r in polled] == [
        (r.topic, r.source_partition, r.value_schema) for r in expected
    ]


# Line bytes as files hold them: ASCII, multi-byte characters, CRs, and bytes that are not
# UTF-8 (a lone lead byte, a stray continuation byte, 0xff).
line_bytes = st.lists(
    st.sampled_from(
        [b"a", b"z", b" ", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\r"]
        + [b"\xc3", b"\x80", b"\xff"]
    ),
    max_size=8,
).map(b"".join)
long_or_short = st.one_of(
    line_bytes, st.tuples(line_bytes, st.integers(100, 300)).map(lambda p: p[0] * p[1])
)


@settings(max_examples=80, deadline=None)
@given(
    lines=st.lists(long_or_short, min_size=1, max_size=10),
    chunk=st.sampled_from([7, 64, 1 << 20]),
    batch_size=st.integers(1, 6),
)
def test_lines_reach_kafka_as_the_straight_path_encodes_them(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[bytes],
    chunk: int,
    batch_size: int,
) -> None:
    """Whatever the bytes, and wherever a read cuts a line or a character: each record's text
    is a line as Kafka splits them (:func:`kafka_lines`) decoded as Kafka decodes it (U+FFFD
    for what is not UTF-8), and
    what StringConverter makes of a poll by column (the lines' own bytes, for Utf8Texts) is
    exactly what it makes of each record's text on its own."""
    path = tmp_path_factory.mktemp("raw") / "in.txt"
    data = b"".join(line + b"\n" for line in lines)
    path.write_bytes(data)
    expected = [raw.decode("utf-8", "replace") for raw, _ in kafka_lines(data)]
    converter = StringConverter()
    converter.configure({}, False)
    task = started_task(path, **{"batch.size": str(batch_size)})
    texts: list[str] = []
    produced: list[bytes | None] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(source_module, "READ_CHUNK_BYTES", chunk)
        for _ in range(len(expected) + 20):  # bounded, as above
            if len(texts) >= len(expected):
                break
            batch = task.poll()
            assert isinstance(batch, SourceRecordBatch)
            nothing = [None] * len(batch)
            produced += converter.from_connect_data_batch("lines", nothing, batch.values, nothing)
            texts += [record.value for record in batch]
        task.stop()
    assert texts == expected
    assert produced == [converter.from_connect_data("lines", STRING_SCHEMA, t) for t in expected]
