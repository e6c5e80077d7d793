"""ExactlyOnceFileSinkConnector / Task, driven through plugin_api.testing and by hand where two
task instances must own one partition at once (a stale owner being fenced)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from copycat_file import ExactlyOnceFileSinkConnector, ExactlyOnceFileSinkTask
from copycat_file._committed_files import WORK_DIR, committed_name, parse_committed_name
from plugin_api.testing import MockSinkTaskContext

from plugin_api import (
    ConfigException,
    ConnectException,
    SinkRecord,
    TopicPartition,
    run_connector,
    run_sink_task,
    sink_records,
)

TP = TopicPartition("t", 0)


def _config(directory: Path, flush_size: int = 3) -> dict[str, str]:
    return {"directory": str(directory), "flush.size": str(flush_size), "topics": "t"}


def _committed(directory: Path) -> dict[str, str]:
    """Committed files by name, with their text; temporary files are not among them."""
    return {
        p.name: p.read_text(encoding="utf-8")
        for p in sorted(directory.iterdir())
        if p.is_file() and parse_committed_name(p.name)
    }


def _temp_files(directory: Path) -> list[Path]:
    return sorted((directory / WORK_DIR).rglob("*.tmp"))


def _task(directory: Path, partitions: list[TopicPartition]) -> ExactlyOnceFileSinkTask:
    task = ExactlyOnceFileSinkTask()
    task.initialize(MockSinkTaskContext(_config(directory), partitions))
    task.start(_config(directory))
    task.open(partitions)
    return task


def test_files_are_named_by_their_offset_range_and_hold_one_line_per_record(
    tmp_path: Path,
) -> None:
    records = sink_records("t", [f"v{i}" for i in range(10, 17)], start_offset=10)
    run = run_sink_task(ExactlyOnceFileSinkTask, _config(tmp_path), records, batch_size=2)
    assert _committed(tmp_path) == {
        committed_name("t", 0, 10, 12): "v10\nv11\nv12\n",
        committed_name("t", 0, 13, 15): "v13\nv14\nv15\n",
        committed_name("t", 0, 16, 16): "v16\n",  # committed by pre_commit, not full
    }
    assert run.committed == {TP: 17}
    assert "t-0-0000000000000000010-0000000000000000012.txt" in _committed(tmp_path)
    assert _temp_files(tmp_path) == []


def test_a_restarted_task_resumes_after_the_last_committed_file(tmp_path: Path) -> None:
    run_sink_task(
        ExactlyOnceFileSinkTask, _config(tmp_path), sink_records("t", ["a", "b", "c", "d"])
    )
    # Redelivered from offset 0 (the group's offsets were never committed, say): the task
    # rewinds to 4, so only e and f are new.
    again = sink_records("t", ["a", "b", "c", "d", "e", "f"])
    run = run_sink_task(ExactlyOnceFileSinkTask, _config(tmp_path), again)
    assert run.context.requested_offsets == {TP: 4}
    assert "".join(_committed(tmp_path).values()) == "a\nb\nc\nd\ne\nf\n"


def test_records_at_offsets_already_written_are_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    task = _task(tmp_path, [TP])
    task.put(sink_records("t", ["a", "b"]))
    with caplog.at_level(logging.WARNING):
        task.put(sink_records("t", ["b", "c"], start_offset=1))
    assert "skipped 1 records at offsets already written" in caplog.text
    assert task.pre_commit({TP: 3}) == {TP: 3}
    task.stop()
    assert "".join(_committed(tmp_path).values()) == "a\nb\nc\n"


def test_a_crash_leaves_only_a_temporary_file_which_the_next_owner_deletes(
    tmp_path: Path,
) -> None:
    crashed = _task(tmp_path, [TP])
    crashed.put(sink_records("t", ["a", "b", "c", "d"]))  # a-c committed (flush.size 3)
    assert len(_temp_files(tmp_path)) == 1  # d: never stopped, never closed
    assert list(_committed(tmp_path).values()) == ["a\nb\nc\n"]

    run = run_sink_task(
        ExactlyOnceFileSinkTask, _config(tmp_path), sink_records("t", ["a", "b", "c", "d", "e"])
    )
    assert run.context.requested_offsets == {TP: 3}
    assert _temp_files(tmp_path) == []
    assert "".join(_committed(tmp_path).values()) == "a\nb\nc\nd\ne\n"


def test_offsets_with_gaps_keep_their_range_in_the_name(tmp_path: Path) -> None:
    # Transaction markers and compaction leave offsets without records.
    records = [SinkRecord("t", 0, None, None, None, f"v{o}", o) for o in (0, 1, 4, 9)]
    run = run_sink_task(ExactlyOnceFileSinkTask, _config(tmp_path, flush_size=10), records)
    assert _committed(tmp_path) == {committed_name("t", 0, 0, 9): "v0\nv1\nv4\nv9\n"}
    assert run.committed == {TP: 10}


def test_topics_whose_names_end_like_a_partition_number_recover_separately(
    tmp_path: Path,
) -> None:
    # "a-1" partition 2 and "a" partition 1 give names starting alike: a-1-2-... and a-1-...
    one, two = TopicPartition("a", 1), TopicPartition("a-1", 2)
    task = _task(tmp_path, [one, two])
    task.put(
        [
            SinkRecord("a", 1, None, None, None, "x", 5),
            SinkRecord("a-1", 2, None, None, None, "y", 70),
        ]
    )
    assert task.pre_commit({one: 6, two: 71}) == {one: 6, two: 71}
    task.stop()
    again = _task(tmp_path, [one, two])
    assert again.context.requested_offsets == {one: 6, two: 71}  # type: ignore[attr-defined]
    again.stop()


def test_a_stale_owner_cannot_commit_after_the_partition_moved(tmp_path: Path) -> None:
    stale = _task(tmp_path, [TP])
    stale.put(sink_records("t", ["a", "b"]))  # in its temporary file
    # The partition moves while the stale owner is stalled: the new owner deletes its file.
    owner = _task(tmp_path, [TP])
    assert _temp_files(tmp_path) == []
    owner.put(sink_records("t", ["a", "b", "c"]))  # committed: a full file
    # The stale owner wakes up: its commit is refused, and it rewinds to where the files end.
    assert stale.pre_commit({TP: 2}) == {TP: 3}
    assert stale.context.requested_offsets == {TP: 3}  # type: ignore[attr-defined]
    stale.put(sink_records("t", ["d"], start_offset=3))
    stale.stop()
    owner.stop()
    assert _committed(tmp_path) == {committed_name("t", 0, 0, 2): "a\nb\nc\n"}


def test_an_owner_that_lost_the_race_to_commit_rewinds_to_the_winner(tmp_path: Path) -> None:
    first = _task(tmp_path, [TP])
    second = _task(tmp_path, [TP])  # took the partition over (first's old files deleted)
    first.put(sink_records("t", ["a", "b", "c", "d"]))  # a new temp file; a-c commit first
    second.put(sink_records("t", ["a", "b"]))
    assert second.pre_commit({TP: 2}) == {TP: 3}  # fenced: a-c are already there
    assert second.context.requested_offsets == {TP: 3}  # type: ignore[attr-defined]
    second.put(sink_records("t", ["d", "e"], start_offset=3))
    assert second.pre_commit({TP: 5}) is not None
    first.stop()
    second.stop()
    names = list(_committed(tmp_path))
    assert [parse_committed_name(n)[2:] for n in names] == [(0, 2), (3, 4)]  # type: ignore[index]
    assert "".join(_committed(tmp_path).values()) == "a\nb\nc\nd\ne\n"


def test_records_of_a_partition_that_is_not_open_are_refused(tmp_path: Path) -> None:
    task = _task(tmp_path, [TP])
    with pytest.raises(ConnectException, match="t-1, which is not open"):
        task.put(sink_records("t", ["x"], partition=1))
    task.stop()


def test_close_drops_what_was_not_committed(tmp_path: Path) -> None:
    task = _task(tmp_path, [TP])
    task.put(sink_records("t", ["a"]))
    task.close([TP])
    assert _temp_files(tmp_path) == []
    assert _committed(tmp_path) == {}
    task.stop()


def test_the_connector_needs_a_directory() -> None:
    with pytest.raises(ConfigException, match="directory"):
        run_connector(ExactlyOnceFileSinkConnector, {"topics": "t"})
    configs = run_connector(
        ExactlyOnceFileSinkConnector, {"topics": "t", "directory": "/d"}, max_tasks=2
    )
    assert configs == [{"topics": "t", "directory": "/d"}] * 2
