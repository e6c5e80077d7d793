"""A standalone worker whose offsets file cannot be written for a while (a directory
read-only, a disk full; here a directory stands where the file goes), as Kafka Connect 4.1.1
takes it: each failed flush is logged and the worker runs on, its SIGTERM stop included
("Failed to commit offsets" / "Flush of offsets threw an unexpected exception", exit as
usual), and once the file can be written again it gets the offsets. Kafka Connect cannot be
compared here beyond that: its rewrite is in place, so the same fault leaves its file empty.

Found by an exploratory run: a failed write cleared the store's pending flag, so a task's
wait for its offsets could return as if they were written and later flushes wrote nothing;
with the flag kept, the worker's periodic flush and its shutdown flush meet the failure too,
and must log it rather than end the worker with a traceback.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx
import pytest

from tests.support.differential import create
from tests.support.kafka import wait_for
from tests.support.rest import RestWorker

pytestmark = [pytest.mark.integration]

SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"


def _position(url: str, name: str) -> int | None:
    response = httpx.get(f"{url}/connectors/{name}/offsets", timeout=30)
    offsets = response.json().get("offsets") if response.status_code == 200 else None
    return offsets[0]["offset"]["position"] if offsets else None


def _file_position(path: Path) -> int:
    (value,) = json.loads(path.read_text())["offsets"].values()
    position: int = value["position"]
    return position


def test_an_offsets_file_that_cannot_be_written_is_logged_and_written_once_it_can(
    bootstrap_servers: str, bundled_plugin_path: Path, tmp_path: Path
) -> None:
    offsets = tmp_path / "connect.offsets"
    source = tmp_path / "in.txt"
    source.write_text("a\nb\n")
    name = topic = f"unwritable-{uuid.uuid4().hex[:8]}"
    config = {"connector.class": SOURCE, "file": str(source), "topic": topic, "tasks.max": "1"}
    extra = {"offset.storage.file.filename": str(offsets), "offset.flush.interval.ms": "200"}
    worker = RestWorker(tmp_path / "copycat", bootstrap_servers, bundled_plugin_path, extra)
    with worker:
        with httpx.Client(base_url=worker.url, timeout=60) as client:
            create(client, name, config)
        wait_for(lambda: offsets.exists() and _file_position(offsets) == 4, 60, "first flush")

        offsets.unlink()
        offsets.mkdir()
        (offsets / "keep").touch()
        with source.open("a") as fh:
            fh.write("c\n")
        wait_for(
            lambda: any("could not flush offsets" in line for line in worker.log_lines),
            60,
            "the task's failed flush",
        )
        worker.herder.flush_offsets()  # the worker's periodic flush: logged, not raised
        assert any(
            line.startswith("ERROR") and str(offsets) in line and "will try again" in line
            for line in worker.log_lines
        ), worker.log_lines[-5:]

        (offsets / "keep").unlink()
        offsets.rmdir()
        worker.herder.flush_offsets()
        assert _file_position(offsets) == 6
        assert _position(worker.url, name) == 6

        offsets.unlink()
        offsets.mkdir()  # unwritable again for the stop
    # the stop's final flush failed and was logged; the stop went on
    assert any(
        line.startswith("ERROR") and "at shutdown" in line and str(offsets) in line
        for line in worker.log_lines
    ), worker.log_lines[-5:]
    assert not list(tmp_path.glob(".connect.offsets.*.tmp"))  # no temporary file left
