"""FileStreamSinkConnector / Task, driven through plugin_api.testing."""

from __future__ import annotations

import datetime
import decimal
import logging
from pathlib import Path

import pytest
from copycat_file import FileStreamSinkConnector, FileStreamSinkTask, __version__
from plugin_api.testing import MockSinkTaskContext

from plugin_api import (
    ConnectException,
    Date,
    Decimal,
    Schema,
    SchemaBuilder,
    Struct,
    Timestamp,
    TopicPartition,
    run_connector,
    run_sink_task,
    sink_records,
)


def test_writes_one_line_per_record_and_commits(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    records = sink_records("t", ["a", 1, b"bytes\xc3\xa9", None], partition=2, start_offset=10)
    run = run_sink_task(
        FileStreamSinkTask, {"file": str(path), "topics": "t"}, records, batch_size=3
    )
    assert path.read_text(encoding="utf-8") == "a\n1\nbytesé\nnull\n"
    assert run.committed == {TopicPartition("t", 2): 14}


def test_values_print_as_java_prints_them(tmp_path: Path) -> None:
    # Kafka's FileStreamSinkTask prints String.valueOf(value); the differential test against
    # Kafka Connect (tests/differential/test_dead_letter_queue.py) compares the files.
    path = tmp_path / "out.txt"
    records = sink_records("t", [True, False, [1, True, "a", None, [2]], 1.5])
    run_sink_task(FileStreamSinkTask, {"file": str(path), "topics": "t"}, records)
    assert path.read_text() == "true\nfalse\n[1, true, a, null, [2]]\n1.5\n"


def test_appends_to_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("old\n")
    run_sink_task(FileStreamSinkTask, {"file": str(path)}, sink_records("t", ["new"]))
    assert path.read_text() == "old\nnew\n"


def test_an_unterminated_last_line_is_ended_before_the_first_record(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # kill -9 during a write leaves a partial last line; the records after the last commit
    # are delivered again and must not be glued to it. The fragment is kept, as its own line.
    path = tmp_path / "out.txt"
    path.write_bytes(b"line 1\nline 2\nline")
    with caplog.at_level(logging.WARNING, logger="copycat_file.sink"):
        run_sink_task(FileStreamSinkTask, {"file": str(path)}, sink_records("t", ["line 2"]))
        run_sink_task(FileStreamSinkTask, {"file": str(path)}, sink_records("t", ["line 3"]))
    assert path.read_bytes() == b"line 1\nline 2\nline\nline 2\nline 3\n"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, caplog.text  # the second start found a whole last line
    assert str(path) in warnings[0].getMessage()
    assert "byte 14" in warnings[0].getMessage()  # where the fragment starts


@pytest.mark.parametrize(
    "content",
    [b"no newline at all", b"\xc3", b"x" * 200_000],
    ids=["text", "half-a-character", "longer-than-a-read"],
)
def test_a_file_of_one_unterminated_line_keeps_its_bytes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, content: bytes
) -> None:
    path = tmp_path / "out.txt"
    path.write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="copycat_file.sink"):
        run_sink_task(FileStreamSinkTask, {"file": str(path)}, sink_records("t", ["new"]))
    assert path.read_bytes() == content + b"\nnew\n"
    assert f"'{path}'" in caplog.text and "byte 0" in caplog.text


def test_an_empty_or_whole_file_gets_no_extra_newline(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    empty, whole = tmp_path / "empty.txt", tmp_path / "whole.txt"
    empty.touch()
    whole.write_bytes(b"a\n\n")
    with caplog.at_level(logging.WARNING, logger="copycat_file.sink"):
        run_sink_task(FileStreamSinkTask, {"file": str(empty)}, sink_records("t", ["x"]))
        run_sink_task(FileStreamSinkTask, {"file": str(whole)}, sink_records("t", ["x"]))
    assert empty.read_bytes() == b"x\n"
    assert whole.read_bytes() == b"a\n\nx\n"
    assert not caplog.records


def test_flush_makes_data_visible(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    task = FileStreamSinkTask()
    task.initialize(MockSinkTaskContext({"file": str(path)}))
    task.start({"file": str(path)})
    try:
        task.put(sink_records("t", ["x", "y"]))
        assert path.read_text() == ""  # still buffered
        task.flush({TopicPartition("t", 0): 2})
        assert path.read_text() == "x\ny\n"
        assert task.pre_commit({TopicPartition("t", 0): 2}) == {TopicPartition("t", 0): 2}
    finally:
        task.stop()


def test_large_batches_are_written_in_order(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    values = [f"{i:06d} " + "z" * 2000 for i in range(3000)]  # batches far beyond the buffer
    run_sink_task(
        FileStreamSinkTask, {"file": str(path)}, sink_records("t", values), batch_size=700
    )
    assert path.read_text().splitlines() == values


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="needs /dev/null")
def test_a_file_that_cannot_be_synced_still_commits() -> None:
    """``file=/dev/null`` (a pipe, a terminal): fsync refuses such files (EINVAL), and
    Kafka's task only flushes its stream, so its offsets are committed; they were not."""
    run = run_sink_task(FileStreamSinkTask, {"file": "/dev/null"}, sink_records("t", ["x", "y"]))
    assert run.committed == {TopicPartition("t", 0): 2}


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_failed_write_fails_its_put_or_the_flush_before_offsets_move() -> None:
    task = FileStreamSinkTask()
    task.initialize(MockSinkTaskContext({"file": "/dev/full"}))
    task.start({"file": "/dev/full"})
    try:
        with pytest.raises(ConnectException, match="Failed to write to file '/dev/full'"):
            task.put(sink_records("t", ["x" * (2 << 20)]))  # larger than the buffer: written now
        task.put(sink_records("t", ["small"]))  # buffered: its error surfaces at flush
        with pytest.raises(ConnectException, match="Failed to flush file '/dev/full'"):
            task.flush({TopicPartition("t", 0): 2})
    finally:
        task.stop()


def test_stdout_when_no_file(capsys: pytest.CaptureFixture[str]) -> None:
    run_sink_task(FileStreamSinkTask, {"topics": "t"}, sink_records("t", ["to stdout"]))
    assert capsys.readouterr().out == "to stdout\n"


def test_missing_directory_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "no" / "such" / "out.txt"
    with pytest.raises(ConnectException, match=str(path)):
        run_sink_task(FileStreamSinkTask, {"file": str(path)}, [])


def test_connector_task_configs_and_validation(tmp_path: Path) -> None:
    config = {"file": str(tmp_path / "o"), "topics": "a,b"}
    assert run_connector(FileStreamSinkConnector, config, max_tasks=3) == [config] * 3
    values = {v.name: v for v in FileStreamSinkConnector().validate({"topics.regex": "t.*"})}
    assert set(values) == {"file", "topics", "topics.regex"}
    assert not any(v.error_messages for v in values.values())


def test_connector_metadata() -> None:
    assert FileStreamSinkConnector().version() == __version__
    assert FileStreamSinkConnector.KAFKA_CLASS_ALIASES == (
        "org.apache.kafka.connect.file.FileStreamSinkConnector",
    )
    from importlib.metadata import entry_points

    names = {ep.name for ep in entry_points(group="copycat.connectors")}
    assert {"FileStreamSourceConnector", "FileStreamSinkConnector"} <= names


# What Kafka's FileStreamSinkTask writes for each value: String.valueOf(value), i.e. Java's
# toString() of the Connect value (Struct.toString, AbstractMap.toString, Double.toString...).
_USER = (
    SchemaBuilder.struct()
    .field("user", Schema.STRING_SCHEMA)
    .field("age", Schema.OPTIONAL_INT32_SCHEMA)
    .field("score", Schema.OPTIONAL_FLOAT32_SCHEMA)
    .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build())
    .field("raw", Schema.OPTIONAL_BYTES_SCHEMA)
    .build()
)
_ENVELOPE = SchemaBuilder.struct().field("inner", _USER).field("n", Schema.INT64_SCHEMA).build()


@pytest.mark.parametrize(
    ("value", "schema", "line"),
    [
        ({"a": 1}, None, "{a=1}"),
        ({"a": 1, "b": "x", "c": None}, None, "{a=1, b=x, c=null}"),
        ({"m": {"k": [1, 2]}}, None, "{m={k=[1, 2]}}"),
        (["a", "b"], None, "[a, b]"),
        ([], None, "[]"),
        ({}, None, "{}"),
        (True, None, "true"),
        (1.0, None, "1.0"),
        (100.0, None, "100.0"),
        (1e7, None, "1.0E7"),
        (0.0001, None, "1.0E-4"),
        (0.001, None, "0.001"),
        (12345678.9, None, "1.23456789E7"),
        (-0.0, None, "-0.0"),
        (float("nan"), None, "NaN"),
        (float("-inf"), None, "-Infinity"),
        (5e-324, None, "4.9E-324"),
        (0.1, Schema.FLOAT32_SCHEMA, "0.1"),
        (3.4028234663852886e38, Schema.FLOAT32_SCHEMA, "3.4028235E38"),
        (Struct(_USER).put("user", "v2"), _USER, "Struct{user=v2}"),
        (
            Struct(_USER)
            .put("user", "ann")
            .put("age", 7)
            .put("score", 2.5)
            .put("tags", ["a", "b"])
            .put("raw", b"hi\xff"),
            _USER,
            "Struct{user=ann,age=7,score=2.5,tags=[a, b],raw=[104, 105, -1]}",
        ),
        (
            Struct(_ENVELOPE).put("inner", Struct(_USER).put("user", "x")).put("n", 3),
            _ENVELOPE,
            "Struct{inner=Struct{user=x},n=3}",
        ),
        ([Struct(_USER).put("user", "x"), None], None, "[Struct{user=x}, null]"),
        (decimal.Decimal("1.50"), Decimal.schema(2), "1.50"),
        (
            datetime.datetime(2026, 11, 24, 7, 8, 9, tzinfo=datetime.UTC),
            Timestamp.SCHEMA,
            "Tue Nov 24 07:08:09 UTC 2026",
        ),
        (datetime.date(1970, 1, 2), Date.SCHEMA, "Fri Jan 02 00:00:00 UTC 1970"),
    ],
)
def test_values_are_written_as_kafkas_task_writes_them(
    tmp_path: Path, value: object, schema: Schema | None, line: str
) -> None:
    path = tmp_path / "out.txt"
    records = sink_records("t", [value], value_schema=schema)
    run_sink_task(FileStreamSinkTask, {"file": str(path)}, records)
    assert path.read_text(encoding="utf-8") == line + "\n"


def test_a_batch_mixing_strings_and_structs_keeps_order(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    records = sink_records("t", ["plain", {"a": 1}, "again", None])
    run_sink_task(FileStreamSinkTask, {"file": str(path)}, records)
    assert path.read_text() == "plain\n{a=1}\nagain\nnull\n"


def test_a_value_nested_deeper_than_pythons_stack_is_written(tmp_path: Path) -> None:
    # A schemaless JsonConverter accepts 900 nested arrays (Kafka's parser 1000); printing
    # them recursed past Python's limit and failed the task, even with errors.tolerance=all.
    path = tmp_path / "out.txt"
    deep: object = []
    for _ in range(899):
        deep = [deep]
    run_sink_task(FileStreamSinkTask, {"file": str(path)}, sink_records("t", ["start", deep]))
    assert path.read_text() == "start\n" + "[" * 900 + "]" * 900 + "\n"


class _Unprintable:
    def __str__(self) -> str:
        raise ValueError("cannot print")


def test_the_lines_before_a_record_that_cannot_be_printed_are_written(tmp_path: Path) -> None:
    # Kafka's task prints record by record: a failure on one record leaves the records before
    # it in the file (their offsets are not committed: at-least-once, as any failed put).
    path = tmp_path / "out.txt"
    task = FileStreamSinkTask()
    task.initialize(MockSinkTaskContext({"file": str(path)}))
    task.start({"file": str(path)})
    try:
        with pytest.raises(ValueError, match="cannot print"):
            task.put(sink_records("t", ["a", {"k": 1}, _Unprintable(), "after"]))
    finally:
        task.stop()
    assert path.read_text() == "a\n{k=1}\n"
