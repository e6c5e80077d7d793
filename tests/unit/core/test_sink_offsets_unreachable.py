"""A sink offsets reset of single partitions while the Kafka cluster cannot be reached: each
attempt's kafka-python admin client is closed again, its IO thread included, and the call
ends with the retriable error naming what could not be done. kafka-python's constructor
leaves the IO thread it started running when its bootstrap fails, so every attempt of a
PATCH during an outage used to leave one thread behind."""

from __future__ import annotations

import socket
import threading

import pytest

from core import sink_offsets
from core.kafka import RetriableKafkaError
from core.sink_offsets import SinkOffsets
from tests.support.kafka import librdkafka_threads, wait_for_librdkafka_threads


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_attempts_against_no_cluster_leave_no_kafka_python_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sink_offsets, "ADMIN_TIMEOUT_S", 2.0)
    monkeypatch.setattr(sink_offsets, "ADMIN_ATTEMPT_TIMEOUT_S", 0.5)
    group = SinkOffsets({"bootstrap.servers": f"127.0.0.1:{_closed_port()}"}, "g")
    before = {t.ident for t in threading.enumerate()}
    with pytest.raises(
        RetriableKafkaError, match="could not delete the offsets of some partitions of group g"
    ) as raised:
        group.alter({("t", 0): None})
    assert "attempts" in str(raised.value)
    left = [t.name for t in threading.enumerate() if t.ident not in before and t.is_alive()]
    assert left == []


def test_reading_offsets_of_no_cluster_ends_retriable_and_closes_its_consumers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sink_offsets, "ADMIN_TIMEOUT_S", 2.0)
    monkeypatch.setattr(sink_offsets, "ADMIN_ATTEMPT_TIMEOUT_S", 0.5)
    group = SinkOffsets({"bootstrap.servers": f"127.0.0.1:{_closed_port()}"}, "g")
    before = len(librdkafka_threads())
    with pytest.raises(RetriableKafkaError, match="could not read the offsets of group g"):
        group.get()
    wait_for_librdkafka_threads(at_most=before)
