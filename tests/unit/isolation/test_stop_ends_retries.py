"""A stop ends the host's retries at once (copycat_errors.StopRequest), and what is retried then
is not delivered: the end-to-end case (a task restart over REST, both data paths) is
tests/e2e/test_retry_stop.py; here each retry loop of the host, on a real pipe.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from isolation.host import HOSTSIDE_DIR
from plugin_api import RetriableException, SinkRecord, SinkTask, SourceRecord, SourceTask

sys.path.insert(0, str(HOSTSIDE_DIR))  # the host-side modules, as a plugin host imports them
from copycat_batch import ConsumedBatch, ProducedBatch  # noqa: E402
from copycat_errors import STOP_BYTE, WAKE_BYTE, ErrorPolicy, StopRequest  # noqa: E402
from copycat_pipeline import (  # noqa: E402
    HostSinkTaskContext,
    Pipeline,
    RetriablePut,
    SinkRunner,
    SourceRunner,
    TransformStage,
)

# Far longer than any test waits: a wait that a stop did not end fails the test.
LONG_DELAY_MS = "60000"
PROMPT_S = 2.0


@pytest.fixture
def stop_pipe() -> Iterator[tuple[StopRequest, int]]:
    """A host process's StopRequest on a real pipe, and the pipe's write end (the worker's)."""
    read, write = os.pipe()
    try:
        yield StopRequest(read), write
    finally:
        os.close(read)
        try:
            os.close(write)
        except OSError:
            pass


def _stop_later(write_fd: int, after_s: float = 0.2) -> None:
    threading.Timer(after_s, os.write, (write_fd, b"s")).start()


class BackendDown(TransformStage):
    """Fails every record whose value is ``down`` with a RetriableException."""

    def __init__(self) -> None:
        super().__init__("down", self)  # type: ignore[arg-type]
        self.attempts = 0

    def apply(self, record: Any) -> Any:
        if record.value in ("down", b"down"):
            self.attempts += 1
            raise RetriableException("the backend is down")
        return record

    def close(self) -> None:
        pass


class Polls(SourceTask):
    def __init__(self, records: list[SourceRecord] | None = None) -> None:
        self.records = records

    def version(self) -> str:
        return "1"

    def start(self, props: Any) -> None:
        pass

    def poll(self) -> list[SourceRecord]:
        if self.records is None:
            raise RetriableException("nothing to read from yet")
        return self.records

    def stop(self) -> None:
        pass


def test_the_wait_ends_when_the_worker_writes_or_goes_away(
    stop_pipe: tuple[StopRequest, int],
) -> None:
    stop, write = stop_pipe
    assert stop.wait(0.01) is False
    _stop_later(write)
    started = time.monotonic()
    assert stop.wait(60) is True
    assert time.monotonic() - started < PROMPT_S
    assert stop.wait(60) is True  # and every later one, at once

    read, gone = os.pipe()
    os.close(gone)  # the worker died: EOF ends retries too
    try:
        assert StopRequest(read).wait(60) is True
    finally:
        os.close(read)


def test_a_wake_ends_an_idle_wait_but_not_a_retry(stop_pipe: tuple[StopRequest, int]) -> None:
    """The worker's wake-up (a pause or resume for a task idling in its host) shares the pipe:
    it ends one idle wait (``wait_woken``), never a retry's backoff, which a wake read while
    it waits does not lose; a stop ends both, for good."""
    stop, write = stop_pipe
    assert stop.wait_woken(0.01) is False
    os.write(write, WAKE_BYTE)
    assert stop.wait(0.05) is False  # read by the retry's wait, and kept
    assert stop.wait_woken(60) is True
    assert stop.wait_woken(0.01) is False  # taken
    os.write(write, WAKE_BYTE)
    started = time.monotonic()
    assert stop.wait_woken(60) is True
    assert time.monotonic() - started < PROMPT_S
    os.write(write, WAKE_BYTE + STOP_BYTE + WAKE_BYTE)
    assert stop.wait_woken(60) is True
    assert stop.wait(60) is True
    assert stop.wait_woken(60) is True  # and every later one, at once


def test_a_stop_ends_a_retriable_poll_backoff(stop_pipe: tuple[StopRequest, int]) -> None:
    stop, write = stop_pipe
    errors = ErrorPolicy({"errors.retry.delay.max.ms": LONG_DELAY_MS}, stop)
    runner = SourceRunner(Polls(), Pipeline(None, None, None), errors)
    runner._poll_attempts = 10  # as after 10 failed polls: the next backoff is the 60 s cap
    _stop_later(write)
    started = time.monotonic()
    wire, failures, offsets, *_ = runner.poll()
    assert time.monotonic() - started < PROMPT_S
    assert (len(ProducedBatch.from_wire(wire)), failures, offsets) == (0, [], [])


def test_a_source_record_retried_at_a_stop_is_not_sent_nor_its_offset_kept(
    stop_pipe: tuple[StopRequest, int],
) -> None:
    stop, write = stop_pipe
    partition = {"file": "in"}
    records = [
        SourceRecord(partition, {"line": n}, "t", value=value)
        for n, value in enumerate(["up", "down", "up again"])
    ]
    errors = ErrorPolicy(
        {"errors.retry.timeout": "-1", "errors.retry.delay.max.ms": LONG_DELAY_MS}, stop
    )
    down = BackendDown()
    runner = SourceRunner(Polls(records), Pipeline(None, None, None, [down]), errors)
    _stop_later(write, 1.0)  # after a few attempts
    started = time.monotonic()
    wire, failures, offsets, *_ = runner.poll()
    assert time.monotonic() - started < 1.0 + PROMPT_S
    assert down.attempts >= 2
    # The record before it is sent, and only its offset is stored; no failure is reported
    # (the record was not given up on: it is polled again when the task runs next).
    assert [row[4] for row in ProducedBatch.from_wire(wire).rows()] == ["up"]
    assert (failures, offsets) == ([], [(partition, {"line": 0})])


class Puts(SinkTask):
    def __init__(self) -> None:
        self.put_records: list[SinkRecord] = []

    def version(self) -> str:
        return "1"

    def start(self, props: Any) -> None:
        pass

    def put(self, records: Any) -> None:
        self.put_records.extend(records)

    def stop(self) -> None:
        pass


def test_a_sink_batch_retried_at_a_stop_is_not_put(stop_pipe: tuple[StopRequest, int]) -> None:
    stop, write = stop_pipe
    errors = ErrorPolicy(
        {"errors.retry.timeout": "120000", "errors.retry.delay.max.ms": LONG_DELAY_MS}, stop
    )
    task = Puts()
    runner = SinkRunner(
        task, Pipeline(None, None, None, [BackendDown()]), HostSinkTaskContext({}, False), errors
    )
    batch = ConsumedBatch.from_rows(
        [("t", 0, offset, 0, 0, None, value, None) for offset, value in enumerate([b"up", b"down"])]
    )
    _stop_later(write)
    started = time.monotonic()
    with pytest.raises(RetriablePut, match="asked to stop while retrying a record"):
        runner.put(batch.wire())
    assert time.monotonic() - started < PROMPT_S
    assert task.put_records == []  # nothing of the batch: the worker keeps it, uncommitted
