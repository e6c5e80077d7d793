"""FileStreamSinkConnector / Task, driven through plugin_api.testing."""

from __future__ import annotations

from pathlib import Path

import pytest
from copycat_file import FileStreamSinkConnector, FileStreamSinkTask, __version__
from plugin_api.testing import MockSinkTaskContext

from plugin_api import ConnectException, TopicPartition, run_connector, run_sink_task, sink_records


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


def test_large_batches_are_written_in_order_by_the_writer_thread(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    values = [f"{i:06d} " + "z" * 2000 for i in range(3000)]  # batches far beyond the buffer
    run_sink_task(
        FileStreamSinkTask, {"file": str(path)}, sink_records("t", values), batch_size=700
    )
    assert path.read_text().splitlines() == values


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_failed_write_fails_the_next_call_before_offsets_move() -> None:
    task = FileStreamSinkTask()
    task.initialize(MockSinkTaskContext({"file": "/dev/full"}))
    task.start({"file": "/dev/full"})
    try:
        task.put(sink_records("t", ["x" * (2 << 20)]))  # larger than the buffer: written now
        with pytest.raises(ConnectException, match="/dev/full"):
            task.flush({TopicPartition("t", 0): 1})
        task.put(sink_records("t", ["small"]))  # buffered: its error surfaces at flush
        with pytest.raises(ConnectException, match="/dev/full"):
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
