"""The same-thread channel of a data path that runs in the plugin's host (isolation/direct.py).

It must keep what the pipes guaranteed where it matters: a plugin's later changes to objects
it handed over never reach what the loop keeps (source offsets, a put batch's columns), and
plugin errors arrive as the worker's exception tree with the plugin's own type and trace.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from isolation import (
    ConsumedBatch,
    DirectHost,
    HostClient,
    PluginHostError,
    ProducedBatch,
    RemoteDataError,
    RemotePluginError,
)
from plugin_api import (
    Converter,
    DataException,
    SchemaAndValue,
    SinkRecord,
    SinkTask,
    SourceRecord,
    SourceTask,
)

HERE = __name__


class ReusedOffsetSource(SourceTask):
    """Hands out one offset dict and keeps changing it, as a careless task might."""

    polled_on: list[int] = []  # the thread of each poll()

    def start(self, props: Mapping[str, str]) -> None:
        self.offset = {"position": 0}
        ReusedOffsetSource.polled_on = []

    def poll(self) -> list[SourceRecord]:
        ReusedOffsetSource.polled_on.append(threading.get_ident())
        self.offset["position"] += 1
        return [SourceRecord({"file": "f"}, self.offset, "t", value="v")]

    def stop(self) -> None:
        pass

    def version(self) -> str:
        return "1"


class FailingSource(ReusedOffsetSource):
    def poll(self) -> list[SourceRecord]:
        raise DataException("the source's own error")


class CommitRaisingSource(ReusedOffsetSource):
    def commit(self) -> None:
        raise DataException("the source's commit() failing")


class ListRewritingConverter(Converter):
    """A converter that reuses the list it is given for its answer."""

    def configure(self, configs: Mapping[str, Any], is_key: bool) -> None:
        pass

    def from_connect_data(self, topic: str, schema: Any, value: Any, headers: Any = None) -> Any:
        return value

    def to_connect_data(self, topic: str, value: Any, headers: Any = None) -> SchemaAndValue:
        return SchemaAndValue(None, value)

    def to_connect_data_batch(
        self, topic: str, data: Sequence[bytes | None], headers: Sequence[Any]
    ) -> list[tuple[Any, Any]]:
        rewritten: list[Any] = data  # type: ignore[assignment]  # the loop's own list
        for index, value in enumerate(data):
            rewritten[index] = (None, b"rewritten " + (value or b""))
        return rewritten


class KeepingSink(SinkTask):
    kept: list[Any] = []

    def start(self, props: Mapping[str, str]) -> None:
        KeepingSink.kept = []

    def put(self, records: Sequence[SinkRecord]) -> None:
        KeepingSink.kept += [r.value for r in records]

    def stop(self) -> None:
        pass

    def version(self) -> str:
        return "1"


@pytest.fixture
def host() -> Iterator[HostClient]:
    asked: list[Any] = []
    channel = DirectHost(name="direct-test", callbacks={"offsets": lambda parts: asked or {}})
    channel.start()
    client = HostClient(channel)
    yield client
    client.close()


def _source(host: HostClient, target: str) -> int:
    handle = host.next_handle()
    host.start_source_task(handle, f"{HERE}:{target}", {}, {})
    return handle


def test_requests_run_on_the_callers_thread_when_collected(host: HostClient) -> None:
    handle = _source(host, "ReusedOffsetSource")
    host.submit_poll(handle, [])
    assert host.pending and ReusedOffsetSource.polled_on == []  # nothing ran yet
    result = host.poll_result()
    assert ProducedBatch.from_wire(result.batch).values == ["v"] and result.failures == []
    assert ReusedOffsetSource.polled_on == [threading.get_ident()]
    assert not host.pending


def test_source_offsets_are_snapshots_the_task_cannot_change(host: HostClient) -> None:
    handle = _source(host, "ReusedOffsetSource")
    first = host.poll(handle).offsets
    second = host.poll(handle).offsets
    # The task bumped the same dict twice; each answer kept the value it had.
    assert first == [({"file": "f"}, {"position": 1})]
    assert second == [({"file": "f"}, {"position": 2})]


def test_a_plugin_error_arrives_as_the_workers_exception_with_the_plugins_type(
    host: HostClient,
) -> None:
    handle = _source(host, "FailingSource")
    with pytest.raises(RemoteDataError) as caught:
        host.poll(handle)
    assert isinstance(caught.value, RemotePluginError)
    assert caught.value.remote_type.endswith("DataException")
    assert "the source's own error" in caught.value.remote_message
    assert "raise DataException(" in caught.value.remote_traceback


def test_a_converter_rewriting_its_input_list_never_changes_the_loops_batch(
    host: HostClient,
) -> None:
    handle = host.next_handle()
    converter: tuple[str, dict[str, str]] = (f"{HERE}:ListRewritingConverter", {})
    host.start_sink_task(
        handle, f"{HERE}:KeepingSink", {}, {"value_converter": converter, "transforms": []}, False
    )
    values = [b"a", b"b"]
    batch = ConsumedBatch(2, "t", 0, [0, 1], [1, 2], 1, None, values, None)
    host.put(handle, batch.wire())
    assert KeepingSink.kept == [b"rewritten a", b"rewritten b"]
    assert batch.values == [b"a", b"b"]  # what the loop keeps for dead letter reports


def test_one_request_at_a_time(host: HostClient) -> None:
    handle = _source(host, "ReusedOffsetSource")
    host.submit_poll(handle, [])
    with pytest.raises(PluginHostError, match="submitted while poll is pending"):
        host.submit_poll(handle, [])
    host.poll_result()


def test_a_commit_that_raises_is_logged_and_the_poll_goes_on(
    host: HostClient, caplog: pytest.LogCaptureFixture
) -> None:
    """The commit() an exactly-once loop asks for with its next poll: what it raises is
    logged, as Kafka's commitSourceTask, not the poll's failure."""
    handle = _source(host, "CommitRaisingSource")
    host.submit_poll(handle, [], commit=True)
    result = host.poll_result()
    assert ProducedBatch.from_wire(result.batch).values == ["v"] and result.failures == []
    logged = [r for r in caplog.records if "task.commit()" in r.getMessage()]
    assert logged and "the source's commit() failing" in (logged[0].exc_text or ""), logged
