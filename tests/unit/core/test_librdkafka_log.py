"""The rate limiter every Kafka client of the worker logs through (core.kafka.RateLimitedLog)."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka import KafkaError

from core.kafka import RateLimitedLog, client_config


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _limiter(caplog: pytest.LogCaptureFixture, clock: _Clock, **kwargs: float) -> RateLimitedLog:
    caplog.set_level(logging.DEBUG, logger="test.librdkafka")
    return RateLimitedLog(logging.getLogger("test.librdkafka"), clock=clock, **kwargs)  # type: ignore[arg-type]


def _line(i: int) -> tuple[int, str, str, str, str]:
    return (logging.ERROR, "%s [%s] %s", "FAIL", f"rdkafka#consumer-{i % 3}", f"event {i}")


def test_distinct_lines_are_bounded_by_burst_plus_rate(caplog: pytest.LogCaptureFixture) -> None:
    clock = _Clock()
    limiter = _limiter(caplog, clock, burst=5, interval_s=1.0)
    for i in range(1_000):  # 100 lines a second for 10 s: what a few clients do with no broker
        limiter.log(*_line(i))
        clock.now += 0.01
    written = [r for r in caplog.records if r.getMessage().startswith("FAIL")]
    assert 5 <= len(written) <= 5 + 10
    summaries = [r.getMessage() for r in caplog.records if "suppressed" in r.getMessage()]
    assert summaries and all("librdkafka log lines suppressed" in s for s in summaries)
    counted = sum(int(s.split()[0]) for s in summaries)
    assert counted + len(written) <= 1_000  # the count is of lines really dropped
    assert counted + len(written) >= 1_000 - 100  # only the last second's may be unreported


def test_a_repeated_line_is_written_once_per_window_whichever_client_logs_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = _Clock()
    limiter = _limiter(caplog, clock, burst=100, interval_s=0.01, repeat_window_s=10.0)
    refused = "[thrd:b:9/bootstrap]: b:9/bootstrap: Connect to ipv4#1.2.3.4:9 failed: refused"
    for i in range(300):  # 30 s of a line every 0.1 s from three clients
        limiter.log(logging.ERROR, "%s [%s] %s", "FAIL", f"rdkafka#producer-{i % 3}", refused)
        clock.now += 0.1
    written = [r for r in caplog.records if r.getMessage().startswith("FAIL")]
    assert len(written) == 3  # at 0 s, 10 s and 20 s


def test_error_callback_counts_as_a_repeat_of_the_same_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = _Clock()
    limiter = _limiter(caplog, clock)
    text = "b:9/bootstrap: Connect to ipv4#1.2.3.4:9 failed: Connection refused"
    limiter.log(logging.ERROR, "%s [%s] %s", "FAIL", "rdkafka#consumer-1", f"[thrd:b:9/x]: {text}")
    limiter.error_cb(KafkaError(KafkaError._TRANSPORT, text))
    limiter.error_cb(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    messages = [r.getMessage() for r in caplog.records]
    assert len([m for m in messages if "Connection refused" in m]) == 1
    assert any("_ALL_BROKERS_DOWN: 1/1 brokers are down" in m for m in messages)


def test_every_client_config_routes_through_the_shared_limiter() -> None:
    config = client_config({"bootstrap.servers": "k:9092"}, {"client.id": "x"})
    assert isinstance(config["logger"], RateLimitedLog)
    assert config["error_cb"] == config["logger"].error_cb
    assert client_config({})["logger"] is config["logger"]  # one budget for the process
