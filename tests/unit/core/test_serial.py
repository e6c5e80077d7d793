"""KeyedSerialExecutor: operations queued by callers that do not wait for them."""

from __future__ import annotations

import logging
import threading

import pytest

from core.serial import KeyedSerialExecutor

WAIT_S = 10.0


def _fail() -> None:
    raise RuntimeError("the connector's config could not be read")


def test_a_posted_operation_that_raises_is_logged_with_its_connector_and_what_it_was(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ops = KeyedSerialExecutor("connector")
    after = threading.Event()
    with caplog.at_level(logging.ERROR, logger="copycat.serial"):
        ops.post("orders-sink", "task reconfiguration", _fail)
        ops.post("orders-sink", "start task 0", after.set)  # the queue goes on behind it
        assert after.wait(WAIT_S)
        ops.submit("orders-sink", "barrier", lambda: None).result(WAIT_S)
    [record] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert record.getMessage() == (
        "connector orders-sink: task reconfiguration failed: "
        "the connector's config could not be read"
    )
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError


def test_a_submitted_operation_leaves_its_exception_to_whoever_waits(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ops = KeyedSerialExecutor("connector")
    with caplog.at_level(logging.DEBUG, logger="copycat.serial"):
        future = ops.submit("orders-sink", "start", _fail)
        with pytest.raises(RuntimeError, match="could not be read"):
            future.result(WAIT_S)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_posted_operation_that_succeeds_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    ops = KeyedSerialExecutor("connector")
    done = threading.Event()
    with caplog.at_level(logging.DEBUG, logger="copycat.serial"):
        ops.post("orders-sink", "restart", done.set)
        assert done.wait(WAIT_S)
        ops.submit("orders-sink", "barrier", lambda: None).result(WAIT_S)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
