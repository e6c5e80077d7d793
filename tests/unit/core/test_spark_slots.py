"""Task slots of a Spark application (``core.spark.driver``): held per task by its runner,
reserved all at once for a standalone connector, one by one in distributed mode; a shortage
fails with the counts, except while a young application's executors are still registering.

The SparkContext is replaced by the two attributes the accounting reads (the slot count comes
from Spark's status API, which tests/integration/test_spark.py and
tests/e2e/test_distributed_spark.py exercise on a real cluster).
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from core.spark import driver as driver_module
from core.spark.driver import SparkDriver, _Slots
from plugin_api import ConnectException

# An application started this long ago has all its executors (beyond the registration wait).
OLD_APPLICATION_MS = 3_600_000


def _driver(total: list[int], slots: _Slots | None = None, age_ms: int = OLD_APPLICATION_MS) -> Any:
    """A driver of an application with ``total[0]`` slots (each call to slots() takes the next
    value, the last one repeating)."""
    driver = SparkDriver.__new__(SparkDriver)
    driver.sc = SimpleNamespace(applicationId="app-1", startTime=time.time() * 1000 - age_ms)
    driver._slots = slots or _Slots()
    driver._closed = threading.Event()
    counts = list(total)
    driver.slots = lambda: counts.pop(0) if len(counts) > 1 else counts[0]  # type: ignore[method-assign]
    return driver


def test_a_standalone_connector_reserves_all_its_tasks_or_none() -> None:
    driver = _driver([2])
    driver.reserve("orders", 2)
    with pytest.raises(ConnectException) as refused:
        driver.reserve("users", 1)
    assert (
        "connector users needs 1 Spark task slots, but the Spark application app-1 has 0 free "
        "of 2 (held by the Copycat tasks of: orders (2))" in str(refused.value)
    )
    driver.reserve("orders", 1)  # fewer tasks now: one slot is free again
    driver.reserve("users", 1)


def test_a_runner_takes_the_slot_its_connector_reserved_and_frees_only_its_own() -> None:
    driver = _driver([1])
    driver.reserve("orders", 1)
    first, second = object(), object()
    driver.reserve_task("orders", 0, first)  # the application is full, but this one is ours
    driver.reserve_task("orders", 0, second)  # the task started again before the first ended
    driver.release_task("orders", 0, first)  # the first runner ends late: not its slot now
    with pytest.raises(ConnectException, match="task users-0 needs a Spark task slot"):
        driver.reserve_task("users", 0, object())
    driver.release_task("orders", 0, second)
    driver.reserve_task("users", 0, object())


def test_distributed_tasks_that_do_not_fit_fail_naming_the_counts_and_holders() -> None:
    shared = _Slots()  # one application, two drivers in the process (as in the test suite)
    a, b = _driver([2], shared), _driver([2], shared)
    a.reserve_task("orders", 0, object())
    b.reserve_task("users", 1, object())
    with pytest.raises(ConnectException) as refused:
        a.reserve_task("orders", 1, object())
    message = str(refused.value)
    assert "task orders-1 needs a Spark task slot" in message
    assert "has 0 free of 2 (held by the Copycat tasks of: orders (1), users (1))" in message
    assert "add executors or cores, or lower tasks.max" in message
    b.release("users")
    a.reserve_task("orders", 1, object())


def test_a_young_application_waits_for_its_executors_to_register(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(driver_module, "SLOT_RETRY_S", 0.01)
    driver = _driver([0, 0, 1], age_ms=0)  # executors register on the third look
    driver.reserve_task("orders", 0, object())
    old = _driver([0, 1])  # an old application's shortage is real at once
    with pytest.raises(ConnectException, match="has 0 free of 0"):
        old.reserve_task("orders", 0, object())
