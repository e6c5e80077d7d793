"""The FileStream tasks driven through the host boundary, in a plugin host process and in the
in-process twin, by one parametrised fixture: the isolation layer must not change behaviour
(STYLE.md section 9). The other tests of this plugin use plugin_api.testing directly."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from isolation import ConsumedBatch, HostClient, InProcessHost, PluginHost, ProducedBatch

STRING_VALUES = {
    "value_converter": ("copycat_converters:StringConverter", {"converter.type": "value"}),
    "transforms": [],
}
STORED: dict[tuple[tuple[str, Any], ...], Any] = {}


def _stored_offsets(partitions: list[dict[str, Any]]) -> dict[Any, Any]:
    """The worker's side of the offsets callback: what this test 'committed' before."""
    found = {}
    for partition in partitions:
        key = tuple(sorted(partition.items()))
        if key in STORED:
            found[key] = STORED[key]
    return found


@pytest.fixture(params=["process", "in-process"])
def host(request: pytest.FixtureRequest) -> Iterator[HostClient]:
    callbacks = {"offsets": _stored_offsets}
    if request.param == "process":
        # This environment's own interpreter: copycat_file is installed in it, as in a plugin
        # venv; the host runs it with -I, in a process of its own.
        channel: PluginHost | InProcessHost = PluginHost(
            sys.executable, name="file-both-ways", callbacks=callbacks
        )
    else:
        channel = InProcessHost(name="file-both-ways", callbacks=callbacks)
    channel.start()
    client = HostClient(channel)
    try:
        yield client
    finally:
        client.close()


def test_source_task_polls_the_same_rows(host: HostClient, tmp_path: Path) -> None:
    data = tmp_path / "in.txt"
    data.write_text("one\ntwo\nthree\n")
    handle = host.next_handle()
    props = {"file": str(data), "topic": "t"}
    started = host.start_source_task(
        handle, "copycat_file.source:FileStreamSourceTask", props, STRING_VALUES
    )
    assert started.wants_acks is False
    wire, failures, offsets, *_ = host.poll(handle)
    assert failures == []
    rows = ProducedBatch.from_wire(wire).rows()
    assert [(r[1], r[4]) for r in rows] == [("t", b"one"), ("t", b"two"), ("t", b"three")]
    assert offsets == [({"filename": str(data)}, {"position": 14})]
    host.stop_task(handle)


def test_source_task_resumes_from_the_offset_the_worker_holds(
    host: HostClient, tmp_path: Path
) -> None:
    data = tmp_path / "in.txt"
    data.write_text("one\ntwo\nthree\n")
    STORED[(("filename", str(data)),)] = {"position": 4}  # "one\n" was committed
    handle = host.next_handle()
    host.start_source_task(
        handle,
        "copycat_file.source:FileStreamSourceTask",
        {"file": str(data), "topic": "t"},
        STRING_VALUES,
    )
    wire = host.poll(handle).batch
    assert ProducedBatch.from_wire(wire).values == [b"two", b"three"]
    host.stop_task(handle)


def test_sink_task_writes_and_pre_commit_agrees(host: HostClient, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    handle = host.next_handle()
    host.start_sink_task(
        handle,
        "copycat_file.sink:FileStreamSinkTask",
        {"file": str(out), "topics": "t"},
        STRING_VALUES,
        False,
    )
    host.open(handle, [("t", 0)])
    batch = ConsumedBatch.from_rows(
        [("t", 0, offset, 0, 1, None, value, None) for offset, value in enumerate([b"a", b"b"])]
    )
    actions = host.put(handle, batch.wire())
    assert actions.failed == [] and actions.reported == []
    committed = host.pre_commit(handle, {("t", 0): 2})
    assert committed.commit == {("t", 0): 2}
    host.close_partitions(handle, [("t", 0)])
    host.stop_task(handle)
    assert out.read_text() == "a\nb\n"


def test_exactly_once_sink_rewinds_to_its_committed_files_through_the_boundary(
    host: HostClient, tmp_path: Path
) -> None:
    config = {"directory": str(tmp_path), "flush.size": "2", "topics": "t"}
    values = [bytes([v]) for v in b"abc"]
    rows = [("t", 0, offset, 0, 1, None, value, None) for offset, value in enumerate(values)]
    for attempt in range(2):
        handle = host.next_handle()
        host.start_sink_task(
            handle,
            "copycat_file.exactly_once:ExactlyOnceFileSinkTask",
            config,
            STRING_VALUES,
            False,
        )
        opened = host.open(handle, [("t", 0)])
        # The first time there are no files (the group decides); then a file ends at 1.
        assert opened.seeks == ({} if attempt == 0 else {("t", 0): 2})
        host.put(handle, ConsumedBatch.from_rows(rows).wire())  # c stays in a temp file
        host.stop_task(handle)  # without pre_commit: as after a failure
    assert sorted(p.name for p in tmp_path.glob("*.txt")) == [
        "t-0-0000000000000000000-0000000000000000001.txt"
    ]
