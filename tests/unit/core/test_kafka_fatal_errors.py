"""confluent-kafka's fatal errors, raised as the KafkaException they are meant to be
(core.kafka.raising_fatal_errors; the real client's case is in
tests/integration/test_fatal_client_errors.py)."""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from typing import NoReturn

import pytest
from confluent_kafka import KafkaError, KafkaException

from core.kafka import raising_fatal_errors

FENCED = KafkaError(KafkaError._FENCED, "fenced by a newer instance", fatal=True)


def _raise_kafka_error_object() -> NoReturn:
    """What confluent-kafka's C code does on Python 3.11 when it restores the fatal error it
    fetched while running a callback: it raises the KafkaError object, class and all."""
    ctypes.pythonapi.PyErr_SetObject(ctypes.py_object(KafkaError), ctypes.py_object(FENCED))
    raise AssertionError("PyErr_SetObject raised nothing")


def _raise_system_error() -> NoReturn:
    """The other shape: a callback ran with the fatal KafkaException still set."""
    try:
        raise KafkaException(FENCED)
    except KafkaException as fatal:
        raise SystemError("<method 'code'> returned a result with an exception set") from fatal


def test_a_kafka_error_object_raised_slips_past_except_base_exception() -> None:
    """Why the wrapper exists: nothing but a bare ``except`` catches it."""
    caught = None
    try:
        try:
            _raise_kafka_error_object()
        except BaseException:  # noqa: BLE001
            pytest.fail("caught as an exception")
    except:  # noqa: E722
        caught = sys.exc_info()[1]
    assert caught is FENCED


@pytest.mark.parametrize("raiser", [_raise_kafka_error_object, _raise_system_error])
def test_fatal_errors_come_out_as_kafka_exceptions(raiser: Callable[[], NoReturn]) -> None:
    with pytest.raises(KafkaException) as raised:
        raising_fatal_errors(raiser)()
    error = raised.value.args[0]
    assert isinstance(error, KafkaError)
    assert error.code() == KafkaError._FENCED and error.fatal()


def test_everything_else_passes_through_unchanged() -> None:
    def unrelated_system_error() -> NoReturn:
        raise SystemError("something else")

    def value_error() -> NoReturn:
        raise ValueError("bad")

    with pytest.raises(SystemError, match="something else"):
        raising_fatal_errors(unrelated_system_error)()
    with pytest.raises(ValueError, match="bad"):
        raising_fatal_errors(value_error)()
    assert raising_fatal_errors(lambda a, b=2: a + b)(1, b=3) == 4
