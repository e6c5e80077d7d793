"""Kafka Connect's metrics of a real worker, read over HTTP (``GET /metrics``) and through a
metrics reporter: real broker, real plugin hosts, both data paths (``task.data.path``).

Every scrape is parsed with prometheus_client's strict text parser. The module's worker has
three reporters: Kafka's JmxReporter (a Java class: skipped with a warning), one that fails
in every call (logged, the worker goes on), and one that records what it is told; it has the
faulty test plugins (tests/support/faulty.py) beside the bundled ones. The exactly-once
source's transaction metrics need a worker of their own (exactly.once.source.support).
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families

from tests.support.apache_kafka import KafkaCluster
from tests.support.metric_reporters import RecordingReporter
from tests.support.rest import (
    BOTH_DATA_PATHS,
    RestWorker,
    data_path_worker,
    module_worker,
    wait_for,
)

pytestmark = pytest.mark.integration

JMX = "org.apache.kafka.common.metrics.JmxReporter"
REPORTERS = (
    f"{JMX},tests.support.metric_reporters.BrokenReporter,"
    "tests.support.metric_reporters:RecordingReporter"
)


_WORKER_PROPS = {
    "metric.reporters": REPORTERS,
    "metrics.context.connect.kafka.cluster.id": "test-cluster",
    "offset.flush.interval.ms": "200",
    # Windowed stats forget within 2 x 5 s (test_an_idle_source_keeps_committing...).
    "metrics.sample.window.ms": "5000",
}
worker = module_worker("metrics", _WORKER_PROPS, faulty=True)


@pytest.fixture
def http(worker: RestWorker) -> Iterator[httpx.Client]:
    with worker.client() as client:
        yield client


def exposition(http: httpx.Client) -> str:
    """``GET /metrics`` as text."""
    response = http.get("/metrics", headers={"Accept": "text/plain;version=0.0.4;q=0.5,*/*"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return response.text


def scrape(http: httpx.Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """``GET /metrics`` parsed strictly: ``{(sample name, sorted labels): value}``."""
    text = exposition(http)
    series = [line.rsplit(" ", 1)[0] for line in text.splitlines() if not line.startswith("#")]
    assert len(series) == len(set(series)), "a series appears twice"
    names = {line.split("{", 1)[0].split(" ", 1)[0] for line in series}
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = tuple(sorted(sample.labels.items()))
            name = sample.name
            if family.type == "counter" and name not in names:
                # The parser names a counter's sample <family>_total (OpenMetrics' way);
                # Prometheus keeps the exposed name, Kafka's (total-record-errors).
                name = name.removesuffix("_total")
            assert name in names, name
            samples[(name, labels)] = sample.value
    return samples


def task_value(
    http: httpx.Client, name: str, connector: str, task: int = 0, **labels: str
) -> float | None:
    wanted = tuple(
        sorted(
            {
                "connector": connector,
                "task": str(task),
                "connect_kafka_cluster_id": "test-cluster",
                **labels,
            }.items()
        )
    )
    return scrape(http).get((name, wanted))


def _connector_labels(connector: str, **extra: str) -> tuple[tuple[str, str], ...]:
    labels = {"connector": connector, "connect_kafka_cluster_id": "test-cluster", **extra}
    return tuple(sorted(labels.items()))


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _create(http: httpx.Client, prefix: str, config: dict[str, str]) -> str:
    """Create a one-task connector named after ``prefix``; its name."""
    name = _name(prefix)
    body = {"name": name, "config": {"tasks.max": "1", **config}}
    response = http.post("/connectors", json=body)
    assert response.status_code == 201, response.text
    return name


def _file_source(
    http: httpx.Client, prefix: str, tmp_path: Path, topic: str, text: str, **extra: str
) -> str:
    """Create a one-task FileStreamSource of ``text`` (written to a file first) to ``topic``;
    its name."""
    path = tmp_path / "in.txt"
    path.write_text(text)
    config = {"connector.class": "FileStreamSource", "file": str(path), "topic": topic}
    return _create(http, prefix, {**config, **extra})


def _file_sink(
    http: httpx.Client, prefix: str, tmp_path: Path, topic: str, extra: dict[str, str] | None = None
) -> str:
    """Create a one-task FileStreamSink of ``topic`` into a file under ``tmp_path``; its name."""
    config = {
        "connector.class": "FileStreamSink",
        "file": str(tmp_path / "out.txt"),
        "topics": topic,
    }
    return _create(http, prefix, {**config, **(extra or {})})


def _wait_value(
    http: httpx.Client, metric: str, connector: str, expected: float, timeout_s: float = 60
) -> None:
    wait_for(
        lambda: task_value(http, metric, connector) == expected,
        timeout_s,
        f"{metric} of {connector} == {expected}",
    )


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0


# -- source and sink counts (both data paths) ----------------------------------------------------


@BOTH_DATA_PATHS
def test_a_file_source_counts_every_line_polled_and_written(
    worker: RestWorker, http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    lines = 2_000
    name = _file_source(
        http, "source", tmp_path, topic_name, "".join(f"line {i}\n" for i in range(lines))
    )
    _wait_value(http, "kafka_connect_source_task_source_record_write_total", name, lines)
    assert task_value(http, "kafka_connect_source_task_source_record_poll_total", name) == lines
    assert task_value(http, "kafka_connect_source_task_source_record_active_count", name) == 0
    batch_max = task_value(http, "kafka_connect_connector_task_batch_size_max", name)
    assert batch_max is not None and 1 <= batch_max <= lines
    rate = task_value(http, "kafka_connect_source_task_source_record_poll_rate", name)
    assert rate is not None and rate > 0
    _wait_value(http, "kafka_connect_connector_task_offset_commit_success_percentage", name, 1.0)
    assert task_value(http, "kafka_connect_task_error_total_record_errors", name) == 0
    worker_labels = (("connect_kafka_cluster_id", "test-cluster"),)
    samples = scrape(http)
    assert samples[("kafka_connect_connect_worker_task_startup_success_total", worker_labels)] >= 1
    assert samples[("kafka_connect_connect_worker_connector_count", worker_labels)] >= 1
    assert http.delete(f"/connectors/{name}").status_code == 204


@BOTH_DATA_PATHS
def test_a_file_sink_counts_records_read_put_and_committed(
    worker: RestWorker,
    http: httpx.Client,
    broker: KafkaCluster,
    tmp_path: Path,
    topic_name: str,
) -> None:
    records = 1_500
    broker.create_topic(topic_name, 1)
    _produce(broker.bootstrap_servers, topic_name, [f"v{i}".encode() for i in range(records)])
    name = _file_sink(http, "sink", tmp_path, topic_name)
    _wait_value(http, "kafka_connect_sink_task_sink_record_send_total", name, records)
    assert task_value(http, "kafka_connect_sink_task_sink_record_read_total", name) == records
    assert task_value(http, "kafka_connect_sink_task_partition_count", name) == 1
    wait_for(
        lambda: (
            (task_value(http, "kafka_connect_sink_task_offset_commit_completion_total", name) or 0)
            >= 1
        ),
        60,
        "an offset commit completed",
    )
    seq = task_value(http, "kafka_connect_sink_task_offset_commit_seq_no", name)
    assert seq is not None and seq >= 1
    put_avg = task_value(http, "kafka_connect_sink_task_put_batch_avg_time_ms", name)
    put_max = task_value(http, "kafka_connect_sink_task_put_batch_max_time_ms", name)
    assert put_avg is not None and put_max is not None
    assert 0 <= put_avg <= put_max, (put_avg, put_max)
    assert http.delete(f"/connectors/{name}").status_code == 204


@BOTH_DATA_PATHS
def test_tolerated_bad_records_count_as_errors_skipped_and_dead_letters(
    worker: RestWorker,
    http: httpx.Client,
    broker: KafkaCluster,
    tmp_path: Path,
    topic_name: str,
) -> None:
    good, bad = 40, 7
    broker.create_topic(topic_name, 1)
    values = [json.dumps({"n": i}).encode() for i in range(good)]
    values += [b"{not json %d" % i for i in range(bad)]
    _produce(broker.bootstrap_servers, topic_name, values)
    name = _file_sink(
        http,
        "tolerant",
        tmp_path,
        topic_name,
        {
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "errors.tolerance": "all",
            "errors.log.enable": "true",
            "errors.deadletterqueue.topic.name": f"{topic_name}-dlq",
            "errors.deadletterqueue.topic.replication.factor": "1",
        },
    )
    _wait_value(http, "kafka_connect_sink_task_sink_record_read_total", name, good + bad)
    _wait_value(http, "kafka_connect_task_error_total_record_errors", name, bad)
    assert task_value(http, "kafka_connect_task_error_total_records_skipped", name) == bad
    assert task_value(http, "kafka_connect_task_error_total_errors_logged", name) == bad
    _wait_value(http, "kafka_connect_task_error_deadletterqueue_produce_requests", name, bad)
    assert task_value(http, "kafka_connect_task_error_deadletterqueue_produce_failures", name) == 0
    last = task_value(http, "kafka_connect_task_error_last_error_timestamp", name)
    assert last is not None and last > 1_600_000_000_000
    _wait_value(http, "kafka_connect_sink_task_sink_record_send_total", name, good)
    # A DataException is not retriable: one failed attempt per bad record, no retry (Kafka's
    # RetryWithToleranceOperator.execAndHandleError).
    assert task_value(http, "kafka_connect_task_error_total_record_failures", name) == bad
    assert task_value(http, "kafka_connect_task_error_total_retries", name) == 0
    assert http.delete(f"/connectors/{name}").status_code == 204


@BOTH_DATA_PATHS
def test_a_transform_that_fails_twice_then_succeeds_counts_two_failures_and_two_retries(
    worker: RestWorker,
    http: httpx.Client,
    broker: KafkaCluster,
    tmp_path: Path,
    topic_name: str,
) -> None:
    """Kafka's execAndRetry: each failed attempt is a failure (recordFailure), each attempt
    after a backoff a retry (recordRetry); the record that then succeeds is no error."""
    broker.create_topic(topic_name, 1)
    _produce(broker.bootstrap_servers, topic_name, [b"only"])
    name = _file_sink(
        http,
        "retries",
        tmp_path,
        topic_name,
        {
            "errors.retry.timeout": "60000",
            "errors.retry.delay.max.ms": "500",
            "transforms": "flaky",
            "transforms.flaky.type": "FaultyTransform",
            "transforms.flaky.retriable.failures": "2",
        },
    )
    _wait_value(http, "kafka_connect_sink_task_sink_record_send_total", name, 1)
    _wait_value(http, "kafka_connect_task_error_total_retries", name, 2)
    assert task_value(http, "kafka_connect_task_error_total_record_failures", name) == 2
    assert task_value(http, "kafka_connect_task_error_total_record_errors", name) == 0
    assert task_value(http, "kafka_connect_task_error_total_records_skipped", name) == 0
    assert (tmp_path / "out.txt").read_text() == "only\n"
    assert http.delete(f"/connectors/{name}").status_code == 204


@BOTH_DATA_PATHS
def test_a_source_times_each_poll(worker: RestWorker, http: httpx.Client, topic_name: str) -> None:
    """poll-batch-{avg,max}-time-ms: the time of the task's poll() (Kafka's recordPoll), here
    one that sleeps 200 ms before it returns a record."""
    name = _create(
        http,
        "slow-poll",
        {
            "connector.class": "FaultySource",
            "topic": topic_name,
            "records.per.poll": "1",
            "poll.sleep.ms": "200",
        },
    )
    wait_for(
        lambda: (
            (task_value(http, "kafka_connect_source_task_source_record_write_total", name) or 0)
            >= 3
        ),
        60,
        f"3 records of {name} written",
    )
    avg = task_value(http, "kafka_connect_source_task_poll_batch_avg_time_ms", name)
    top = task_value(http, "kafka_connect_source_task_poll_batch_max_time_ms", name)
    assert avg is not None and top is not None
    assert 200 <= avg <= top < 2_000, (avg, top)
    assert http.delete(f"/connectors/{name}").status_code == 204


@BOTH_DATA_PATHS
def test_a_sink_counts_records_consumed_past_its_committed_offsets(
    worker: RestWorker,
    http: httpx.Client,
    broker: KafkaCluster,
    tmp_path: Path,
    topic_name: str,
) -> None:
    """sink-record-active-count: offsets consumed past the last committed ones (Kafka's
    computeSinkRecordLag). A sink whose pre_commit() commits nothing keeps all of them
    active; one that commits what it was given comes back to 0."""
    records = 300
    broker.create_topic(topic_name, 1)
    _produce(broker.bootstrap_servers, topic_name, [f"v{i}".encode() for i in range(records)])
    stuck = _create(
        http,
        "uncommitted",
        {"connector.class": "FaultySink", "topics": topic_name, "commit.nothing": "true"},
    )
    flushed = _file_sink(http, "committed", tmp_path, topic_name)
    _wait_value(http, "kafka_connect_sink_task_sink_record_active_count", stuck, records)
    assert task_value(http, "kafka_connect_sink_task_sink_record_active_count_max", stuck) == (
        records
    )
    avg = task_value(http, "kafka_connect_sink_task_sink_record_active_count_avg", stuck)
    assert avg is not None and 0 < avg <= records
    _wait_value(http, "kafka_connect_sink_task_sink_record_send_total", flushed, records)
    _wait_value(http, "kafka_connect_sink_task_sink_record_active_count", flushed, 0)
    top = task_value(http, "kafka_connect_sink_task_sink_record_active_count_max", flushed)
    assert top is not None and 0 < top <= records
    assert http.delete(f"/connectors/{stuck}").status_code == 204
    assert http.delete(f"/connectors/{flushed}").status_code == 204


@pytest.mark.apache_kafka_only(reason="transactions")
def test_an_exactly_once_source_records_each_transaction_size(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    broker: KafkaCluster,
    bundled_plugin_path: Path,
    tmp_path: Path,
    topic_name: str,
) -> None:
    """transaction-size-{min,max,avg} (Kafka's TransactionMetricsGroup): the records of each
    committed transaction. Poll boundaries and batch.size=4 over 10 lines: 4, 4 and 2."""
    extra = {
        "exactly.once.source.support": "enabled",
        "offset.storage.replication.factor": "1",  # the connector's own offsets topic
        "metrics.context.connect.kafka.cluster.id": "test-cluster",
    }
    with (
        data_path_worker(
            request, tmp_path_factory, broker.bootstrap_servers, bundled_plugin_path, "eos", extra
        ) as eos,
        eos.client() as http,
    ):
        name = _file_source(
            http,
            "eos",
            tmp_path,
            topic_name,
            "".join(f"line {i}\n" for i in range(10)),
            **{
                "batch.size": "4",
                "transaction.boundary": "poll",
                "offsets.storage.topic": f"{topic_name}-offsets",
            },
        )
        wait_for(
            lambda: math.isclose(
                task_value(http, "kafka_connect_source_task_transaction_size_avg", name) or 0,
                10 / 3,
            ),
            60,
            f"transaction-size-avg of {name} == 10/3",
        )
        assert task_value(http, "kafka_connect_source_task_transaction_size_min", name) == 2
        assert task_value(http, "kafka_connect_source_task_transaction_size_max", name) == 4
        assert task_value(http, "kafka_connect_source_task_source_record_write_total", name) == 10
        assert http.delete(f"/connectors/{name}").status_code == 204


# -- status, removal and reporters -----------------------------------------------------------------


def test_status_gauges_follow_pause_and_resume_and_vanish_on_delete(
    worker: RestWorker, http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    name = _file_source(http, "status", tmp_path, topic_name, "a\nb\n")

    def connector_status(state: str) -> bool:
        key = ("kafka_connect_connector_status_info", _connector_labels(name, status=state))
        return scrape(http).get(key) == 1

    def task_status(state: str) -> bool:
        return task_value(http, "kafka_connect_connector_task_status_info", name, status=state) == 1

    wait_for(lambda: connector_status("running") and task_status("running"), 60, "running")
    samples = scrape(http)
    assert (
        samples[
            (
                "kafka_connect_connector_connector_type_info",
                _connector_labels(name, connector_type="source"),
            )
        ]
        == 1
    )
    assert (
        samples[
            ("kafka_connect_connect_worker_connector_running_task_count", _connector_labels(name))
        ]
        == 1
    )
    assert http.put(f"/connectors/{name}/pause").status_code == 202
    wait_for(lambda: connector_status("paused") and task_status("paused"), 60, "paused")
    assert samples_of(http, name)  # still there while paused
    pause_ratio = task_value(http, "kafka_connect_connector_task_pause_ratio", name)
    assert pause_ratio is not None and 0 < pause_ratio < 1
    assert (
        scrape(http)[
            ("kafka_connect_connect_worker_connector_paused_task_count", _connector_labels(name))
        ]
        == 1
    )
    assert http.put(f"/connectors/{name}/resume").status_code == 202
    wait_for(lambda: connector_status("running") and task_status("running"), 60, "resumed")

    reporter = _recording()
    status_key = ("connector-metrics", "status", (("connector", name),))
    assert status_key in reporter.changes
    assert http.delete(f"/connectors/{name}").status_code == 204
    wait_for(lambda: not samples_of(http, name), 60, f"every metric of {name} gone")
    assert status_key in reporter.removals
    task_key = (
        "source-task-metrics",
        "source-record-poll-total",
        (("connector", name), ("task", "0")),
    )
    assert task_key in reporter.changes and task_key in reporter.removals


def samples_of(http: httpx.Client, connector: str) -> list[str]:
    return [sample for sample, labels in scrape(http) if ("connector", connector) in labels]


def _recording() -> RecordingReporter:
    made = [r for r in RecordingReporter.made if not r.closed]
    assert made, "no RecordingReporter was made"
    return made[-1]


def test_reporters_are_configured_and_a_java_or_broken_one_does_not_stop_the_worker(
    worker: RestWorker, http: httpx.Client
) -> None:
    reporter = _recording()
    assert reporter.configs is not None
    assert reporter.configs["metric.reporters"] == REPORTERS
    assert reporter.initial == []  # made before the worker registered its metrics
    assert ("connect-worker-metrics", "connector-count", ()) in reporter.changes
    # (The JmxReporter warning comes while the worker is made: test_metrics_registry.py.)
    log = "\n".join(worker.log_lines)
    assert "metrics reporter tests.support.metric_reporters.BrokenReporter failed in" in log
    samples = scrape(http)
    key = (
        "kafka_connect_connect_worker_connector_count",
        (("connect_kafka_cluster_id", "test-cluster"),),
    )
    assert key in samples and not math.isnan(samples[key])
    assert http.get("/health").status_code == 200


def test_metrics_answer_406_to_a_client_that_accepts_only_json(http: httpx.Client) -> None:
    response = http.get("/metrics", headers={"Accept": "application/json"})
    assert response.status_code == 406
    assert response.json()["error_code"] == 406


# -- failed tasks, failed and stopped connectors, idle sources -------------------------------------


def _task_state(http: httpx.Client, name: str) -> str | None:
    response = http.get(f"/connectors/{name}/status")
    if response.status_code != 200 or not response.json()["tasks"]:
        return None
    return str(response.json()["tasks"][0]["state"])


def _worker_value(http: httpx.Client, metric: str) -> float:
    return scrape(http)[(metric, (("connect_kafka_cluster_id", "test-cluster"),))]


@BOTH_DATA_PATHS
def test_a_failed_task_keeps_its_metrics_until_restarted_or_deleted(
    worker: RestWorker,
    http: httpx.Client,
    broker: KafkaCluster,
    tmp_path: Path,
    topic_name: str,
) -> None:
    """Kafka's WorkerTask only records the failure; Worker.awaitStopTask removes the task's
    metrics when it is stopped (restart, delete), not when it fails."""
    broker.create_topic(topic_name, 1)
    _produce(broker.bootstrap_servers, topic_name, [b'{"n": 1}', b"{not json"])
    name = _file_sink(
        http,
        "failing",
        tmp_path,
        topic_name,
        {
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "errors.tolerance": "none",
        },
    )
    wait_for(lambda: _task_state(http, name) == "FAILED", 60, f"{name}'s task FAILED")
    # Its thread has ended (and closed its plugin host): what follows outlives the task.
    wait_for(lambda: f"task {name}-0 stopped" in "\n".join(worker.log_lines), 60, "ended")

    def failed_series() -> bool:
        return (
            task_value(http, "kafka_connect_connector_task_status_info", name, status="failed") == 1
        )

    wait_for(failed_series, 30, "the failed task's status series")
    assert task_value(http, "kafka_connect_task_error_total_record_errors", name) == 1
    last = task_value(http, "kafka_connect_task_error_last_error_timestamp", name)
    assert last is not None and last > 1_600_000_000_000
    assert task_value(http, "kafka_connect_sink_task_sink_record_read_total", name) == 2
    failed_count = (
        "kafka_connect_connect_worker_connector_failed_task_count",
        _connector_labels(name),
    )
    assert scrape(http)[failed_count] == 1
    reporter = _recording()
    status_key = ("connector-task-metrics", "status", (("connector", name), ("task", "0")))
    assert reporter.live[status_key].metric_value() == "failed"

    # A restart replaces them (one series each), and the new instance fails the same way.
    before = _worker_value(http, "kafka_connect_connect_worker_task_startup_attempts_total")
    assert http.post(f"/connectors/{name}/tasks/0/restart").status_code == 204
    wait_for(
        lambda: (
            _worker_value(http, "kafka_connect_connect_worker_task_startup_attempts_total") > before
        ),
        60,
        "the restarted task's start",
    )
    wait_for(failed_series, 60, "the restarted task failed again")
    wait_for(
        lambda: "\n".join(worker.log_lines).count(f"task {name}-0 stopped") >= 2,
        60,
        "the restarted task's thread ended",
    )
    assert failed_series()
    assert status_key in reporter.removals  # the first instance's, removed on its restart
    assert reporter.live[status_key].metric_value() == "failed"
    text = exposition(http)
    status_lines = [
        line
        for line in text.splitlines()
        if line.startswith("kafka_connect_connector_task_status_info{") and f'"{name}"' in line
    ]
    assert len(status_lines) == 1, status_lines

    assert http.delete(f"/connectors/{name}").status_code == 204
    wait_for(lambda: not samples_of(http, name), 60, f"every metric of {name} gone")
    assert status_key not in reporter.live


def test_a_connector_that_cannot_start_is_a_failed_startup_held_failed(
    worker: RestWorker, http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    """Kafka's WorkerMetricsGroup counts a connector whose start failed; its WorkerConnector
    stays, FAILED, with its connector-metrics, and counts in connector-count."""
    attempts = "kafka_connect_connect_worker_connector_startup_attempts_total"
    failures = "kafka_connect_connect_worker_connector_startup_failure_total"
    count = "kafka_connect_connect_worker_connector_count"
    before = {key: _worker_value(http, key) for key in (attempts, failures, count)}
    name = _file_source(
        http,
        "nohost",
        tmp_path,
        topic_name,
        "a\n",
        # Too little memory for its plugin host to start.
        **{"plugin.host.memory.max.bytes": "20000000"},
    )

    def connector_state() -> str | None:
        response = http.get(f"/connectors/{name}/status")
        return str(response.json()["connector"]["state"]) if response.status_code == 200 else None

    wait_for(lambda: connector_state() == "FAILED", 60, f"{name} FAILED")
    wait_for(lambda: _worker_value(http, failures) == before[failures] + 1, 30, "a failure counted")
    assert _worker_value(http, attempts) == before[attempts] + 1
    assert _worker_value(http, count) == before[count] + 1
    status = ("kafka_connect_connector_status_info", _connector_labels(name, status="failed"))
    assert scrape(http).get(status) == 1
    assert http.delete(f"/connectors/{name}").status_code == 204
    wait_for(lambda: not samples_of(http, name), 60, f"every metric of {name} gone")
    assert _worker_value(http, count) == before[count]


def test_a_stopped_connector_keeps_its_connector_metrics_but_no_tasks(
    worker: RestWorker, http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    """Kafka's WorkerConnector stays in state STOPPED (KIP-875): status stopped, counted in
    connector-count; its tasks (and their counts) are gone."""
    count = "kafka_connect_connect_worker_connector_count"
    before = _worker_value(http, count)
    name = _file_source(http, "stopped", tmp_path, topic_name, "a\n")

    def connector_status(state: str) -> bool:
        key = ("kafka_connect_connector_status_info", _connector_labels(name, status=state))
        return scrape(http).get(key) == 1

    wait_for(lambda: connector_status("running") and _task_state(http, name) == "RUNNING", 60)
    assert _worker_value(http, count) == before + 1
    assert http.put(f"/connectors/{name}/stop").status_code == 204
    wait_for(lambda: connector_status("stopped"), 60, f"{name} stopped")
    samples = scrape(http)
    assert _worker_value(http, count) == before + 1
    assert not [
        s for s, labels in samples if ("task", "0") in labels and ("connector", name) in labels
    ]
    total = ("kafka_connect_connect_worker_connector_total_task_count", _connector_labels(name))
    assert total not in samples
    assert http.put(f"/connectors/{name}/resume").status_code == 202
    wait_for(lambda: connector_status("running") and _task_state(http, name) == "RUNNING", 60)
    assert http.delete(f"/connectors/{name}").status_code == 204
    wait_for(lambda: not samples_of(http, name), 60, f"every metric of {name} gone")
    assert _worker_value(http, count) == before


@BOTH_DATA_PATHS
def test_an_idle_source_keeps_committing_successfully(
    worker: RestWorker, http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    """Kafka's WorkerSourceTask.commitOffsets records a successful commit every interval even
    with nothing to flush: a quiet source's success percentage stays 1 after its last record
    has left the metrics' windows (2 x 5 s here)."""
    name = _file_source(http, "idle", tmp_path, topic_name, "one\n")
    _wait_value(http, "kafka_connect_source_task_source_record_write_total", name, 1)
    success = "kafka_connect_connector_task_offset_commit_success_percentage"
    _wait_value(http, success, name, 1.0)
    quiet_until = time.monotonic() + 13  # past both 5 s samples that held the last record
    while time.monotonic() < quiet_until:
        assert task_value(http, success, name) == 1.0
        avg = task_value(http, "kafka_connect_connector_task_offset_commit_avg_time_ms", name)
        assert avg is not None and not math.isnan(avg), avg
        time.sleep(0.5)  # sampling a value over a span of time, not waiting for a condition
    assert task_value(http, "kafka_connect_source_task_source_record_write_total", name) == 1
    assert http.delete(f"/connectors/{name}").status_code == 204


def test_cumulative_task_error_counts_are_prometheus_counters(
    worker: RestWorker, http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    """Kafka's CumulativeSum stats are counters; last-error-timestamp (a value) a gauge."""
    name = _file_source(http, "types", tmp_path, topic_name, "a\n")
    _wait_value(http, "kafka_connect_source_task_source_record_write_total", name, 1)
    types = dict(
        line.split(" ")[2:4] for line in exposition(http).splitlines() if line.startswith("# TYPE")
    )
    for counter in (
        "total_record_errors",
        "total_records_skipped",
        "total_errors_logged",
        "deadletterqueue_produce_requests",
        "deadletterqueue_produce_failures",
    ):
        assert types[f"kafka_connect_task_error_{counter}"] == "counter", counter
    assert types["kafka_connect_task_error_last_error_timestamp"] == "gauge"
    assert types["kafka_connect_source_task_source_record_poll_total"] == "counter"
    assert types["kafka_connect_connector_task_offset_commit_success_percentage"] == "gauge"
    # The strict parser reads them under their documented names.
    assert task_value(http, "kafka_connect_task_error_total_record_errors", name) == 0
    assert http.delete(f"/connectors/{name}").status_code == 204


@pytest.mark.parametrize("accept", ["text/plain;q=0", "text/plain; q=0, */*", "*/*;q=0"])
def test_metrics_answer_406_to_a_client_that_refuses_text(http: httpx.Client, accept: str) -> None:
    response = http.get("/metrics", headers={"Accept": accept})
    assert response.status_code == 406, response.text
    assert response.json()["error_code"] == 406


@pytest.mark.parametrize("accept", ["text/plain;q=0.1", "text/*;q=0, text/plain", "*/*"])
def test_metrics_answer_text_to_a_client_that_accepts_it(http: httpx.Client, accept: str) -> None:
    assert http.get("/metrics", headers={"Accept": accept}).status_code == 200
