"""The stack traces in statuses and dead letter queue headers read in Kafka's order."""

from __future__ import annotations

from isolation import exception_trace
from plugin_api import ConnectException, DataException


def _raise_chained() -> None:
    try:
        raise DataException("bad record at t-0@5")
    except DataException as exc:
        raise ConnectException("Tolerance exceeded in error handler") from exc


def test_the_exception_comes_first_then_its_frames_then_its_causes() -> None:
    try:
        _raise_chained()
    except ConnectException as exc:
        trace = exception_trace(exc)
    lines = trace.splitlines()
    assert lines[0] == (
        "org.apache.kafka.connect.errors.ConnectException: Tolerance exceeded in error handler"
    )
    assert lines[1] == "Traceback (most recent call last):"
    cause = lines.index(
        "Caused by: org.apache.kafka.connect.errors.DataException: bad record at t-0@5"
    )
    assert any("_raise_chained" in line for line in lines[1:cause])
    assert lines[cause + 1] == "Traceback (most recent call last):"
    assert trace.count("ConnectException: Tolerance exceeded") == 1  # each message once


def test_an_implicit_context_and_a_bare_exception() -> None:
    try:
        try:
            raise KeyError("k")
        except KeyError:
            raise ValueError("v")  # noqa: B904 - the implicit context is what is tested
    except ValueError as exc:
        trace = exception_trace(exc)
    assert trace.splitlines()[0] == "ValueError: v"
    assert "Raised while handling: KeyError: 'k'" in trace
    assert exception_trace(RuntimeError("never raised")) == "RuntimeError: never raised\n"
