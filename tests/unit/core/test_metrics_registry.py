"""The metrics registry (core/metrics.py), Kafka Connect's groups made from loop counters
(core/connect_metrics.py), the Prometheus exposition (core/prometheus.py) and the loading of
``metric.reporters`` (core/metric_reporters.py), with an injected clock."""

from __future__ import annotations

import logging
import math

import pytest
from prometheus_client.parser import text_string_to_metric_families

from core.connect_metrics import RebalanceMetrics, TaskMetrics
from core.metric_reporters import add_reporters
from core.metrics import Metrics
from core.prometheus import render
from core.runtime.counters import SnapshotsSince, TaskCounters
from core.worker_config import WorkerConfig
from plugin_api import ConfigException

BASE = {
    "bootstrap.servers": "localhost:9092",
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.storage.StringConverter",
}


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000.0

    def __call__(self) -> float:
        return self.ms


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def metrics(clock: Clock) -> Metrics:
    return Metrics(sample_window_ms=1_000, num_samples=2, clock=clock)


def test_windowed_avg_and_max_forget_samples_older_than_all_windows(
    metrics: Metrics, clock: Clock
) -> None:
    sensor = metrics.sensor()
    assert math.isnan(sensor.avg(clock())) and math.isnan(sensor.max(clock()))
    sensor.record(10)
    sensor.record(30)
    assert sensor.avg(clock()) == 20 and sensor.max(clock()) == 30
    clock.ms += 1_000  # a second sample
    sensor.record_many(2, 10, 6)  # two values summing to 10, the larger 6
    assert sensor.avg(clock()) == 50 / 4 and sensor.max(clock()) == 30
    clock.ms += 1_000  # the first sample is now 2 windows old: gone
    assert sensor.avg(clock()) == 5 and sensor.max(clock()) == 6
    clock.ms += 1_000
    assert math.isnan(sensor.avg(clock()))
    assert sensor.total == 50 and sensor.count == 4  # cumulative, never forgotten


def test_windowed_rate_spans_at_least_all_but_one_window(metrics: Metrics, clock: Clock) -> None:
    sensor = metrics.sensor()
    assert sensor.rate(clock()) == 0.0
    sensor.record_many(1, 100, 100)
    # Just recorded: the span is (samples - 1) full windows, 1 s here, not ~0.
    assert sensor.rate(clock()) == 100.0
    clock.ms += 1_500
    sensor.record_many(1, 200, 200)  # a second sample
    assert sensor.rate(clock()) == pytest.approx(300 / 1.5)
    clock.ms += 1_000  # the first sample expired
    assert sensor.rate(clock()) == pytest.approx(200 / 1.0)


def test_record_many_of_nothing_records_nothing(metrics: Metrics, clock: Clock) -> None:
    sensor = metrics.sensor()
    sensor.record_many(0, 0, 0)
    assert sensor.count == 0 and math.isnan(sensor.max(clock()))


def test_a_replaced_group_keeps_its_successors_metrics_when_closed(metrics: Metrics) -> None:
    old = metrics.group("connector-task-metrics", connector="c", task="0")
    old.gauge("status", "", lambda: "running")
    new = metrics.group("connector-task-metrics", connector="c", task="0")
    new.gauge("status", "", lambda: "paused")
    metrics.close_group(old)  # the old task's thread ends after the new one started
    assert metrics.value("connector-task-metrics", "status", task="0", connector="c") == "paused"
    metrics.close_group(new)
    assert metrics.metric("connector-task-metrics", "status", connector="c", task="0") is None


def _snapshot(counters: TaskCounters) -> tuple[float, ...]:
    return counters.take()


def test_task_metrics_record_the_differences_between_snapshots(
    metrics: Metrics, clock: Clock
) -> None:
    task = TaskMetrics(metrics, "c", 0, "sink")
    counters = TaskCounters()
    counters.records_in += 500
    counters.batch(300)
    counters.batch(200)
    counters.records_out += 500
    counters.operation(4.0)
    counters.operation(2.0)
    counters.commit(3.0, ok=True)
    counters.commit(0.0, ok=False)
    counters.partitions = 3
    counters.commit_seq = 2
    task.absorb(_snapshot(counters))
    task.absorb(_snapshot(counters))  # nothing new: nothing recorded twice
    counters.batch(100)
    counters.records_in += 100
    counters.records_out += 100
    counters.operation(1.0)
    counters.commit_skips += 1
    task.absorb(_snapshot(counters))

    def value(group: str, name: str) -> object:
        return metrics.value(group, name, connector="c", task="0")

    assert value("sink-task-metrics", "sink-record-read-total") == 600
    assert value("sink-task-metrics", "sink-record-send-total") == 600
    assert value("connector-task-metrics", "batch-size-avg") == 200
    assert value("connector-task-metrics", "batch-size-max") == 300
    assert value("sink-task-metrics", "put-batch-avg-time-ms") == pytest.approx(7 / 3)
    assert value("sink-task-metrics", "put-batch-max-time-ms") == 4.0
    assert value("connector-task-metrics", "offset-commit-avg-time-ms") == 3.0
    assert value("connector-task-metrics", "offset-commit-success-percentage") == 0.5
    assert value("connector-task-metrics", "offset-commit-failure-percentage") == 0.5
    assert value("sink-task-metrics", "offset-commit-completion-total") == 1
    assert value("sink-task-metrics", "offset-commit-skip-total") == 1
    assert value("sink-task-metrics", "partition-count") == 3
    assert value("sink-task-metrics", "offset-commit-seq-no") == 2
    task.close()
    assert metrics.metrics() == []


def test_source_poll_times_transaction_sizes_and_error_attempts(
    metrics: Metrics, clock: Clock
) -> None:
    """poll-batch-time, transaction-size (an exactly-once source's, their minimum carried
    across snapshots merged by SnapshotsSince), total-record-failures and total-retries."""
    task = TaskMetrics(metrics, "c", 0, "source", transactional=True)
    counters = TaskCounters()
    counters.poll(10.0)
    counters.poll(30.0)
    counters.transaction(4)
    counters.transaction(2)
    counters.record_failures += 2
    counters.retries += 2
    merged = SnapshotsSince()
    merged.add(counters.take())
    counters.transaction(5)
    counters.poll(5.0)
    merged.add(counters.take())
    task.absorb(tuple(merged.take() or ()))

    def value(name: str, group: str = "source-task-metrics") -> object:
        return metrics.value(group, name, connector="c", task="0")

    assert value("poll-batch-avg-time-ms") == pytest.approx(15.0)
    assert value("poll-batch-max-time-ms") == 30.0
    assert value("transaction-size-min") == 2
    assert value("transaction-size-max") == 5
    assert value("transaction-size-avg") == pytest.approx(11 / 3)
    assert value("total-record-failures", "task-error-metrics") == 2
    assert value("total-retries", "task-error-metrics") == 2
    # Not an exactly-once source: no transaction metrics (Kafka's TransactionMetricsGroup
    # exists only for ExactlyOnceWorkerSourceTask).
    plain = TaskMetrics(metrics, "d", 0, "source")
    assert (
        metrics.metric("source-task-metrics", "transaction-size-avg", connector="d", task="0")
        is None
    )
    plain.close()
    task.close()


def test_sink_active_records_are_the_last_value_and_its_windowed_max_and_avg(
    metrics: Metrics, clock: Clock
) -> None:
    task = TaskMetrics(metrics, "c", 0, "sink")
    counters = TaskCounters()
    for active in (100, 300, 0):  # two batches, then a commit of everything
        counters.active_records(active)
    task.absorb(counters.take())

    def value(name: str) -> object:
        return metrics.value("sink-task-metrics", name, connector="c", task="0")

    assert value("sink-record-active-count") == 0
    assert value("sink-record-active-count-max") == 300
    assert value("sink-record-active-count-avg") == pytest.approx(400 / 3)
    task.close()


def test_task_ratios_follow_its_states(metrics: Metrics, clock: Clock) -> None:
    task = TaskMetrics(metrics, "c", 1, "source", counted=False)
    task.state("RUNNING")
    clock.ms += 3_000
    task.state("PAUSED")
    clock.ms += 1_000
    assert metrics.value("connector-task-metrics", "status", connector="c", task="1") == "paused"
    running = metrics.value("connector-task-metrics", "running-ratio", connector="c", task="1")
    paused = metrics.value("connector-task-metrics", "pause-ratio", connector="c", task="1")
    assert (running, paused) == (0.75, 0.25)
    # Not counted (a task on Spark): no metric that would always read 0.
    assert (
        metrics.metric("source-task-metrics", "source-record-poll-total", connector="c", task="1")
        is None
    )


def test_rebalance_metrics(metrics: Metrics, clock: Clock) -> None:
    rebalance = RebalanceMetrics(metrics, lambda: "SESSIONED")
    group = "connect-worker-rebalance-metrics"
    assert metrics.value(group, "time-since-last-rebalance-ms") == math.inf
    rebalance.rebalance_started()
    assert metrics.value(group, "rebalancing") == 1.0
    clock.ms += 250
    rebalance.rebalance_succeeded(7, "http://leader:8083/")
    clock.ms += 100
    assert metrics.value(group, "rebalancing") == 0.0
    assert metrics.value(group, "epoch") == 7
    assert metrics.value(group, "leader-name") == "http://leader:8083/"
    assert metrics.value(group, "completed-rebalances-total") == 1
    assert metrics.value(group, "rebalance-max-time-ms") == 250
    assert metrics.value(group, "time-since-last-rebalance-ms") == 100
    assert metrics.value(group, "connect-protocol") == "SESSIONED"


def test_the_exposition_parses_strictly_and_escapes_labels(metrics: Metrics) -> None:
    group = metrics.group("connector-metrics", connector='we"ird\\name\nx')
    group.gauge("status", "The status.\nSecond line \\ here", lambda: "running")
    group.gauge("connector-class", "", lambda: "a.B")
    sensor = metrics.sensor()
    sensor.record(5)
    task = metrics.group("source-task-metrics", connector="c", task="0")
    task.total("source-record-poll-total", "Polled.", sensor)
    task.avg("poll-batch-avg-time-ms", "", metrics.sensor())  # NaN: no samples
    text = render(metrics.metrics(), {"connect.kafka.cluster.id": "k1"})
    families = {f.name: f for f in text_string_to_metric_families(text)}
    status = families["kafka_connect_connector_status_info"]
    assert status.type == "gauge"
    [sample] = status.samples
    assert sample.labels == {
        "connector": 'we"ird\\name\nx',
        "status": "running",
        "connect_kafka_cluster_id": "k1",
    }
    assert sample.value == 1
    assert status.documentation == "The status.\nSecond line \\ here"
    poll = families["kafka_connect_source_task_source_record_poll"]
    assert poll.type == "counter"
    assert poll.samples[0].name == "kafka_connect_source_task_source_record_poll_total"
    assert poll.samples[0].value == 5
    assert math.isnan(families["kafka_connect_source_task_poll_batch_avg_time_ms"].samples[0].value)


def test_reporters_java_ones_skipped_unknown_ones_refused_broken_ones_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = WorkerConfig.from_properties(
        {
            **BASE,
            "metric.reporters": "org.apache.kafka.common.metrics.JmxReporter,"
            "tests.support.metric_reporters.BrokenReporter",
        }
    )
    metrics = Metrics()
    with caplog.at_level(logging.WARNING, logger="copycat.metrics"):
        add_reporters(metrics, config)
        metrics.group("connect-worker-metrics").gauge("connector-count", "", lambda: 0.0)
    text = caplog.text
    assert "skipping org.apache.kafka.common.metrics.JmxReporter" in text
    assert "BrokenReporter failed in init()" in text
    assert "BrokenReporter failed in metric_change()" in text
    assert metrics.value("connect-worker-metrics", "connector-count") == 0.0
    unknown = WorkerConfig.from_properties({**BASE, "metric.reporters": "no.such.Reporter"})
    with pytest.raises(ConfigException, match="no.such.Reporter for configuration metric.rep"):
        add_reporters(Metrics(), unknown)
