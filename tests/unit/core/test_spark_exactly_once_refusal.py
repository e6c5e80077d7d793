"""Exactly-once source tasks are refused on the Spark runtime, naming the key and the way out
(``core.spark.runner``): their offsets go in the producer's transaction, which the offsets
channel through the worker cannot join."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from core.spark.runner import _refuse_exactly_once_source
from plugin_api import ConfigException


def test_an_exactly_once_source_task_is_refused_naming_the_key() -> None:
    spec = SimpleNamespace(name="orders-0", exactly_once=SimpleNamespace(transactional_id="t"))
    with pytest.raises(ConfigException) as refused:
        _refuse_exactly_once_source(spec)  # type: ignore[arg-type]
    message = str(refused.value)
    assert "task.runtime" in message and "orders-0 is an exactly-once source task" in message
    assert "run this connector with task.runtime=local" in message


def test_an_at_least_once_task_is_not_refused() -> None:
    _refuse_exactly_once_source(SimpleNamespace(name="orders-0", exactly_once=None))  # type: ignore[arg-type]
