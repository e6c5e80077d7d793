"""Retries, tolerance, the dead letter queue, the errant record reporter, back-pressure and
automatic restarts, on a real broker with real plugin hosts."""

from __future__ import annotations

import gc
import json
import logging
import socket
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from core.plugins import PluginCatalogue
from core.status import State
from core.worker import Worker
from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import (
    committed,
    header_text,
    librdkafka_threads,
    produce,
    read_all,
    wait_for,
    wait_for_librdkafka_threads,
)
from tests.support.plugins import catalogue_with, one_task_sink
from tests.support.workers import in_process_worker, start_connector

pytestmark = pytest.mark.integration

SINK = '''
import os, time
from plugin_api import SinkConnector, SinkTask, ConfigDef, RetriableException
from plugin_api import SourceConnector, SourceTask, SourceRecord, INT32_SCHEMA

class ScriptedSinkTask(SinkTask):
    """Writes values to a file; fails, reports or slows down as its config says."""
    def start(self, props):
        self.out = open(props["file"], "a")
        self.transient = int(props.get("transient.failures", "0"))
        self.always_retriable = props.get("always.retriable") == "true"
        self.errant = props.get("errant.value")
        self.fatal = props.get("fatal.value")
        self.slow_flag = props.get("slow.unless.exists")
        self.flush_each_put = props.get("flush.each.put") == "true"
        self.errant_at_flush = props.get("errant.at.flush") == "true"
        self.errant_at_close = props.get("errant.at.close") == "true"
        self.held_errant = []
        self.failures = 0
    def put(self, records):
        if self.always_retriable and records:
            raise RetriableException("target unavailable")
        if records and self.failures < self.transient:
            self.failures += 1
            self.context.timeout(50)
            raise RetriableException(f"transient failure {self.failures}")
        if self.slow_flag and not os.path.exists(self.slow_flag):
            time.sleep(0.002 * len(records))
        reporter = self.context.errant_record_reporter()
        for r in records:
            value = r.value if not isinstance(r.value, dict) else r.value["n"]
            if self.errant is not None and str(value) == self.errant:
                if self.errant_at_flush or self.errant_at_close:  # it finds out later
                    self.held_errant.append(r)
                else:
                    reporter.report(r, ValueError(f"cannot store {value}"))
                continue
            if self.fatal is not None and str(value) == self.fatal:
                raise ArithmeticError(f"crashed on {value}")
            self.out.write(f"{value}\\n")
        if self.flush_each_put:
            self.out.flush()
    def flush(self, offsets):
        if not self.errant_at_close:
            self._report_held()
        self.out.flush()
    def close(self, partitions):
        if self.errant_at_close:
            self._report_held()
    def _report_held(self):
        reporter = self.context.errant_record_reporter()
        held, self.held_errant = self.held_errant, []
        for r in held:
            reporter.report(r, ValueError(f"cannot store {r.value}"))
    def stop(self):
        self.out.close()

class MixedSourceTask(SourceTask):
    """Emits n=0..count-1 as INT32 values; every 10th is a string the converter rejects."""
    def start(self, props):
        self.topic, self.count = props["topic"], int(props["count"])
        stored = self.context.offset_storage_reader().offset({"src": "mixed"})
        self.next = stored["n"] if stored else 0
    def poll(self):
        if self.next >= self.count:
            time.sleep(0.05)
            return []
        batch = []
        for n in range(self.next, min(self.next + 100, self.count)):
            value = f"bad-{n}" if n % 10 == 9 else n
            batch.append(SourceRecord({"src": "mixed"}, {"n": n + 1}, self.topic,
                                      value_schema=INT32_SCHEMA, value=value))
        self.next = min(self.next + 100, self.count)
        return batch
    def stop(self):
        pass

class MixedSource(SourceConnector):
    def start(self, props):
        self.props = dict(props)
    def task_class(self):
        return MixedSourceTask
    def task_configs(self, n):
        return [self.props]
    def stop(self):
        pass
    def config(self):
        return ConfigDef()
''' + one_task_sink("ScriptedSink", "ScriptedSinkTask")


@pytest.fixture(scope="module")
def catalogue(
    bundled_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> PluginCatalogue:
    return catalogue_with(
        bundled_plugin_path,
        tmp_path_factory.mktemp("errors-plugins"),
        "scripted-sink",
        {"scripted_sink.py": SINK},
        {
            "ScriptedSink": "scripted_sink:ScriptedSink",
            "MixedSource": "scripted_sink:MixedSource",
        },
    )


def _failed_trace(worker: Worker, name: str) -> str:
    """The trace of task 0 of ``name`` once it is FAILED."""
    wait_for(lambda: worker.status.task(name, 0).state is State.FAILED, 60, "task FAILED")
    trace: str = worker.status.task(name, 0).trace
    return trace


def _commits_through_a_restart(
    worker: Worker, name: str, bootstrap: str, topic: str, offset: int
) -> None:
    """The sink that failed at offset ``offset`` of partition 0 committed exactly the records
    before it, and a restarted task failing there again keeps that commit."""
    group = f"connect-{name}"
    assert f"{topic}-0@{offset}" in _failed_trace(worker, name)
    wait_for(
        lambda: committed(bootstrap, group, topic) == offset,
        30,
        "the records put before the failure committed",
    )
    worker.stop_task(name, 0)
    [config] = worker.task_configs(name)
    assert worker.start_task(name, 0, config).wait_started(60)
    assert f"{topic}-0@{offset}" in _failed_trace(worker, name)
    time.sleep(1)  # the restarted task's closing commit
    assert committed(bootstrap, group, topic) == offset


def _tolerant_json_sink(topic: str, out: Path, dlq: str, **extra: str) -> dict[str, str]:
    """ScriptedSink writing ``topic``'s schemaless JSON values to ``out``, with records that
    fail conversion tolerated and sent to ``dlq``; ``extra`` is added to the config."""
    return {
        "connector.class": "ScriptedSink",
        "topics": topic,
        "file": str(out),
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        **extra,
    }


def _errant_sink(topic: str, out: Path, dlq: str, errant: str, **extra: str) -> dict[str, str]:
    """ScriptedSink writing ``topic`` to ``out`` and reporting the record whose value is
    ``errant`` through the errant record reporter, tolerated and sent to ``dlq``; ``extra``
    is added to the config."""
    return {
        "connector.class": "ScriptedSink",
        "topics": topic,
        "file": str(out),
        "errant.value": errant,
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        **extra,
    }


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _json_mix(good: int, bad_every: int) -> tuple[list[bytes], set[int]]:
    """``good`` JSON records with a malformed one after every ``bad_every - 1`` good ones."""
    values, bad_offsets = [], set()
    n = 0
    for i in range(good + good // (bad_every - 1)):
        if i % bad_every == bad_every - 1:
            bad_offsets.add(i)
            values.append(b'{"n": ' + str(n).encode() + b", broken")
        else:
            values.append(json.dumps({"n": n}).encode())
            n += 1
    assert n == good
    return values, bad_offsets


@pytest.mark.also_on_dev_broker
def test_malformed_records_go_to_the_dlq_with_context_and_the_rest_arrive_in_order(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
) -> None:
    broker.create_topic(topic_name, 1)
    values, bad_offsets = _json_mix(100_000, 101)
    assert len(bad_offsets) == 1000
    produce(bootstrap_servers, topic_name, values)
    out, dlq = tmp_path / "out.txt", f"{topic_name}-dlq"
    worker = in_process_worker(catalogue, bootstrap_servers)
    name = f"tolerant-{topic_name}"
    start_connector(
        worker,
        name,
        _tolerant_json_sink(
            topic_name,
            out,
            dlq,
            **{
                "errors.log.enable": "true",
                "errors.deadletterqueue.context.headers.enable": "true",
            },
        ),
    )
    try:
        wait_for(
            lambda: committed(bootstrap_servers, f"connect-{name}", topic_name) == len(values),
            120,
            "every offset committed",
        )
        assert worker.status.task(name, 0).state is State.RUNNING
    finally:
        worker.stop()
    assert _lines(out) == [str(n) for n in range(100_000)]
    dead = read_all(bootstrap_servers, dlq, 1000)
    assert len(dead) == 1000
    assert sorted(int(dict(m.headers())["__connect.errors.offset"]) for m in dead) == sorted(
        bad_offsets
    )
    for message in dead:
        headers = header_text(message)
        offset = int(headers["__connect.errors.offset"])
        assert message.value() == values[offset]  # the original bytes, untouched
        assert headers["__connect.errors.topic"] == topic_name
        assert headers["__connect.errors.partition"] == "0"
        assert headers["__connect.errors.connector.name"] == name
        assert headers["__connect.errors.task.id"] == "0"
        assert headers["__connect.errors.stage"] == "VALUE_CONVERTER"
        assert headers["__connect.errors.class.name"].endswith("JsonConverter")
        assert headers["__connect.errors.exception.class.name"]
        assert headers["__connect.errors.exception.message"]
        stacktrace = headers["__connect.errors.exception.stacktrace"]
        assert "Traceback" in stacktrace
        # Kafka's order: the exception itself first, its frames and causes after it.
        first = stacktrace.splitlines()[0]
        assert first.startswith(headers["__connect.errors.exception.class.name"] + ": "), first


def test_with_tolerance_none_the_first_bad_record_fails_the_task_and_nothing_past_it_commits(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
) -> None:
    broker.create_topic(topic_name, 1)
    values, bad_offsets = _json_mix(5_000, 1001)
    first_bad = min(bad_offsets)
    produce(bootstrap_servers, topic_name, values)
    worker = in_process_worker(catalogue, bootstrap_servers)
    name = f"strict-{topic_name}"
    start_connector(
        worker,
        name,
        {
            "connector.class": "ScriptedSink",
            "topics": topic_name,
            "file": str(tmp_path / "out.txt"),
            "value.converter": "JsonConverter",
            "value.converter.schemas.enable": "false",
        },
    )
    try:
        trace = _failed_trace(worker, name)
        assert "Tolerance exceeded in error handler" in trace
        assert f"{topic_name}-0@{first_bad}" in trace
        # The first line is the error (Kafka's "...ConnectException: Tolerance exceeded in
        # error handler"), not "Traceback (most recent call last):".
        assert "Tolerance exceeded in error handler" in trace.splitlines()[0], trace
        time.sleep(1)
        offset = committed(bootstrap_servers, f"connect-{name}", topic_name)
        assert offset <= first_bad
    finally:
        worker.stop()
    assert len(_lines(tmp_path / "out.txt")) <= first_bad


@pytest.mark.parametrize("data_path", ["host", "worker"])
def test_with_tolerance_none_the_failing_record_is_logged_and_in_the_dlq_before_the_task_fails(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
    caplog: pytest.LogCaptureFixture,
    data_path: str,
) -> None:
    """As Kafka's RetryWithToleranceOperator: the record is reported (error log, dead letter
    queue with its headers and the error context) and then the task fails."""
    broker.create_topic(topic_name, 1)
    values = [b'{"n": 0}', b'{"n": 1}', b"not json at all", b'{"n": 3}']
    producer = Producer({"bootstrap.servers": bootstrap_servers})
    for value in values:
        producer.produce(topic_name, value, headers=[("trace", b"t-1")])
    assert producer.flush(30) == 0
    dlq = f"{topic_name}-dlq"
    worker = in_process_worker(catalogue, bootstrap_servers, **{"task.data.path": data_path})
    name = f"strict-dlq-{topic_name}"
    caplog.set_level(logging.ERROR, logger="copycat.errors")
    start_connector(
        worker,
        name,
        _tolerant_json_sink(
            topic_name,
            tmp_path / "out.txt",
            dlq,
            **{
                "errors.tolerance": "none",
                "errors.log.enable": "true",
                "errors.log.include.messages": "true",
                "errors.deadletterqueue.context.headers.enable": "true",
            },
        ),
    )
    try:
        trace = _failed_trace(worker, name)
        assert "Tolerance exceeded in error handler" in trace
        assert f"{topic_name}-0@2" in trace
        dead = read_all(bootstrap_servers, dlq, 1)
    finally:
        worker.stop()
    assert [m.value() for m in dead] == [b"not json at all"]
    headers = header_text(dead[0])
    assert headers["trace"] == "t-1"
    assert headers["__connect.errors.offset"] == "2"
    assert headers["__connect.errors.stage"] == "VALUE_CONVERTER"
    assert headers["__connect.errors.connector.name"] == name
    logged = [r.getMessage() for r in caplog.records if r.name == "copycat.errors"]
    assert any(f"Error encountered in task {name}-0" in m and "offset=2" in m for m in logged), (
        logged
    )
    assert committed(bootstrap_servers, f"connect-{name}", topic_name) <= 2


@pytest.mark.parametrize("data_path", ["host", "worker"])
def test_a_failed_source_record_is_logged_as_kafkas_source_record_to_string(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    broker: KafkaCluster,
    caplog: pytest.LogCaptureFixture,
    data_path: str,
) -> None:
    """With errors.log.include.messages, Kafka's LogReporter.Source appends the record as
    polled, ``SourceRecord.toString()`` (Kafka 4.1.1's form, checked with its connect-api):
    the source partition and offset, then ConnectRecord's fields, values as Java prints
    them. Copycat wrote ``source record for topic 't' (source partition {...}, offset
    {...})``."""
    broker.create_topic(topic_name, 1)
    worker = in_process_worker(catalogue, bootstrap_servers, **{"task.data.path": data_path})
    name = f"source-log-{topic_name}"
    caplog.set_level(logging.ERROR, logger="copycat.errors")
    start_connector(
        worker,
        name,
        {
            "connector.class": "MixedSource",
            "topic": topic_name,
            "count": "10",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "errors.tolerance": "all",
            "errors.log.enable": "true",
            "errors.log.include.messages": "true",
        },
    )

    def logged() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "copycat.errors"]

    try:
        wait_for(logged, 30, "the failed record logged")
    finally:
        worker.stop()
    first_line = logged()[0].splitlines()[0]
    assert first_line == (
        f"Error encountered in task {name}-0. Executing stage 'VALUE_CONVERTER' with class "
        "'org.apache.kafka.connect.json.JsonConverter', where source record is = "
        "SourceRecord{sourcePartition={src=mixed}, sourceOffset={n=10}} "
        f"ConnectRecord{{topic='{topic_name}', kafkaPartition=null, key=null, keySchema=null, "
        "value=bad-9, valueSchema=Schema{INT32}, timestamp=null, "
        "headers=ConnectHeaders(headers=)}."
    )


@pytest.mark.parametrize("include_messages", [True, False])
def test_the_error_log_names_the_stage_and_the_record_as_kafkas_log_reporter(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
    caplog: pytest.LogCaptureFixture,
    include_messages: bool,
) -> None:
    """As Kafka's LogReporter: the stage and class, the consumed record's coordinates and
    timestamp when errors.log.include.messages is set (never its key or value), then the
    exception with its stack trace."""
    broker.create_topic(topic_name, 1)
    producer = Producer({"bootstrap.servers": bootstrap_servers})
    producer.produce(topic_name, b'{"n": 0}', b"k0", timestamp=1_700_000_000_000)
    producer.produce(topic_name, b"poison-value", b"k1", timestamp=1_700_000_000_001)
    assert producer.flush(30) == 0
    worker = in_process_worker(catalogue, bootstrap_servers)
    name = f"logged-{topic_name}"
    caplog.set_level(logging.DEBUG, logger="copycat.errors")
    start_connector(
        worker,
        name,
        {
            **_tolerant_json_sink(topic_name, tmp_path / "out.txt", f"{topic_name}-dlq"),
            "errors.log.enable": "true",
            "errors.log.include.messages": str(include_messages).lower(),
        },
    )
    try:
        wait_for(
            lambda: committed(bootstrap_servers, f"connect-{name}", topic_name) == 2,
            60,
            "both offsets committed",
        )
    finally:
        worker.stop()
    logged = [r.getMessage() for r in caplog.records if r.name == "copycat.errors"]
    assert len(logged) == 1, logged
    first, *trace = logged[0].splitlines()
    record = (
        f", where consumed record is {{topic='{topic_name}', partition=0, offset=1, "
        "timestamp=1700000000001, timestampType=CreateTime}"
        if include_messages
        else ""
    )
    assert first == (
        f"Error encountered in task {name}-0. Executing stage 'VALUE_CONVERTER' with class "
        f"'org.apache.kafka.connect.json.JsonConverter'{record}."
    )
    assert trace[0].startswith("org.apache.kafka.connect.errors.DataException: "), trace
    assert "Traceback (most recent call last):" in trace
    assert "poison-value" not in logged[0] and "k1" not in logged[0]


def test_with_the_error_log_off_a_failing_task_is_logged_once_as_kafkas_worker_task(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """errors.log.enable=false (the default) logs no record error, also under
    errors.tolerance=none (Kafka's LogReporter is off); the task's failure is logged once,
    in Kafka's WorkerTask words, with its cause."""
    broker.create_topic(topic_name, 1)
    produce(bootstrap_servers, topic_name, [b'{"n": 0}', b"not json at all"])
    worker = in_process_worker(catalogue, bootstrap_servers)
    name = f"unlogged-{topic_name}"
    caplog.set_level(logging.INFO)
    start_connector(
        worker,
        name,
        {
            "connector.class": "ScriptedSink",
            "topics": topic_name,
            "file": str(tmp_path / "out.txt"),
            "value.converter": "JsonConverter",
            "value.converter.schemas.enable": "false",
        },
    )
    try:
        _failed_trace(worker, name)
    finally:
        worker.stop()
    assert [r.getMessage() for r in caplog.records if r.name == "copycat.errors"] == []
    failures = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.ERROR and name in r.getMessage()
    ]
    assert len(failures) == 1, failures
    first, *trace = failures[0].splitlines()
    assert first == (
        f"WorkerSinkTask{{id={name}-0}} Task threw an uncaught and unrecoverable exception. "
        "Task is being killed and will not recover until manually restarted"
    )
    assert any("DataException" in line for line in trace), trace


@pytest.mark.parametrize("problem", ["replication", "name", "zero replicas"])
def test_a_dlq_that_cannot_be_created_fails_the_task_in_kafkas_words(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
    problem: str,
) -> None:
    """As Kafka's DeadLetterQueueReporter: "Could not initialize dead letter queue with
    topic=<name>" first, the broker's reason after it."""
    broker.create_topic(topic_name, 1)
    dlq = "bad name!" if problem == "name" else f"{topic_name}-dlq"
    worker = in_process_worker(catalogue, bootstrap_servers)
    name = f"dlq-{problem.replace(' ', '-')}-{topic_name}"
    config = _tolerant_json_sink(topic_name, tmp_path / "out.txt", dlq)
    if problem == "replication":
        config["errors.deadletterqueue.topic.replication.factor"] = "3"  # one broker
    elif problem == "zero replicas":  # valid config, as in Kafka; the broker refuses it
        config["errors.deadletterqueue.topic.replication.factor"] = "0"
    worker.start_connector(name, {"name": name, **config})
    try:
        worker.start_task(name, 0, worker.task_configs(name)[0]).wait_started(60)
        trace = _failed_trace(worker, name)
    finally:
        worker.stop()
    first, *rest = trace.splitlines()
    assert first == (
        "org.apache.kafka.connect.errors.ConnectException: Could not initialize dead letter "
        f"queue with topic={dlq}"
    ), trace
    reason = {
        "replication": "replication factor",
        "name": "Topic name is invalid",
        "zero replicas": "Replication factor must be larger than 0",
    }[problem]
    assert any(line.startswith("Caused by") and reason in line for line in rest), trace


@pytest.mark.parametrize("data_path", ["host", "worker"])
def test_a_failed_sink_commits_the_records_put_before_the_failing_batch_and_restarts_after_them(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
    data_path: str,
) -> None:
    """As Kafka's WorkerSinkTask, whose closing commit runs also after a failure: the records
    put before the failing batch are committed (through pre_commit), the failing batch is not,
    so a restart fails on the same record again without writing the earlier ones twice."""
    broker.create_topic(topic_name, 1)
    out = tmp_path / "out.txt"
    # No periodic commit during the test: only the closing commit can commit anything.
    worker = in_process_worker(
        catalogue,
        bootstrap_servers,
        **{"task.data.path": data_path, "offset.flush.interval.ms": "600000"},
    )
    name = f"failed-commit-{topic_name}"
    start_connector(
        worker,
        name,
        {
            "connector.class": "ScriptedSink",
            "topics": topic_name,
            "file": str(out),
            "flush.each.put": "true",
            "value.converter": "JsonConverter",
            "value.converter.schemas.enable": "false",
        },
    )
    try:
        produce(bootstrap_servers, topic_name, [b'{"n": 0}', b'{"n": 1}'])
        wait_for(lambda: _lines(out) == ["0", "1"], 60, "the good records written")
        produce(bootstrap_servers, topic_name, [b"not json at all", b'{"n": 3}'])
        _commits_through_a_restart(worker, name, bootstrap_servers, topic_name, 2)
    finally:
        worker.stop()
    assert _lines(out) == ["0", "1"]


def test_with_tolerance_none_a_failing_source_record_is_logged_and_those_before_it_sent(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    broker: KafkaCluster,
    caplog: pytest.LogCaptureFixture,
) -> None:
    worker = in_process_worker(catalogue, bootstrap_servers)
    name = f"mixed-strict-{topic_name}"
    caplog.set_level(logging.ERROR, logger="copycat.errors")
    start_connector(
        worker,
        name,
        {
            "connector.class": "MixedSource",
            "topic": topic_name,
            "count": "100",
            "value.converter": "JsonConverter",
            "value.converter.schemas.enable": "true",
            "topic.creation.default.partitions": "1",
            "topic.creation.default.replication.factor": "1",
            "errors.log.enable": "true",
        },
    )
    try:
        trace = _failed_trace(worker, name)
        assert "Tolerance exceeded in error handler" in trace
        assert "failed on SourceRecord{sourcePartition={src=mixed}, sourceOffset={n=10}}:" in trace
    finally:
        worker.stop()
    sent = read_all(bootstrap_servers, topic_name, 9)
    assert [json.loads(m.value())["payload"] for m in sent] == list(range(9))
    assert [o for _, o in worker.offsets.connector_offsets(name)] == [{"n": 9}]
    logged = [r.getMessage() for r in caplog.records if r.name == "copycat.errors"]
    assert any(f"Error encountered in task {name}-0" in m for m in logged), logged


@pytest.mark.parametrize("data_path", ["host", "worker"])
def test_with_tolerance_none_records_before_the_failing_one_are_sent_after_a_wait_for_room(
    catalogue: PluginCatalogue,
    broker: KafkaCluster,
    topic_name: str,
    tmp_path: Path,
    data_path: str,
) -> None:
    """Kafka's sendRecords() has handed a poll's records before the failing one to its
    producer when it fails the task, and they reach the topic. Copycat's loop sent them too,
    but a wait for room in the producer's queue (or for a topic the broker was still
    creating) that its driver cut short made it fail at once, dropping the rest: only ``1``
    was written. Here the producer holds one message and lingers 2 s, so ``2`` waits."""
    broker.create_topic(topic_name, 1)
    source = tmp_path / "in.txt"
    source.write_text("1\n2\nabc\n4\n")
    worker = in_process_worker(catalogue, broker.bootstrap_servers)
    name = f"wait-strict-{topic_name}"
    start_connector(
        worker,
        name,
        {
            "connector.class": "FileStreamSource",
            "topic": topic_name,
            "file": str(source),
            "task.data.path": data_path,
            "transforms": "c",
            "transforms.c.type": "org.apache.kafka.connect.transforms.Cast$Value",
            "transforms.c.spec": "int32",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "producer.override.linger.ms": "2000",
            "producer.override.queue.buffering.max.messages": "1",
        },
    )
    try:
        assert "Value (abc) was out of range" in _failed_trace(worker, name)
    finally:
        worker.stop()
    sent = read_all(broker.bootstrap_servers, topic_name, 2, timeout_s=10)
    assert [m.value() for m in sent] == [b"1", b"2"]
    assert [o for _, o in worker.offsets.connector_offsets(name)] == [{"position": 4}]


def test_transient_put_failures_are_retried_and_a_permanent_one_fails_after_the_timeout(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
) -> None:
    broker.create_topic(topic_name, 1)
    produce(bootstrap_servers, topic_name, [f"v{i}".encode() for i in range(1000)])
    worker = in_process_worker(catalogue, bootstrap_servers)
    flaky, broken = f"flaky-{topic_name}", f"broken-{topic_name}"
    start_connector(
        worker,
        flaky,
        {
            "connector.class": "ScriptedSink",
            "topics": topic_name,
            "file": str(tmp_path / "flaky.txt"),
            "transient.failures": "5",
        },
    )
    start_connector(
        worker,
        broken,
        {
            "connector.class": "ScriptedSink",
            "topics": topic_name,
            "file": str(tmp_path / "broken.txt"),
            "always.retriable": "true",
            "errors.retry.timeout": "2000",
            "errors.retry.delay.max.ms": "200",
        },
    )
    try:
        wait_for(
            lambda: (
                len(_lines(tmp_path / "flaky.txt")) >= 1000
                and worker.status.task(broken, 0).state is State.FAILED
            ),
            60,
            "the flaky sink to deliver and the broken one to fail",
        )
        assert _lines(tmp_path / "flaky.txt") == [f"v{i}" for i in range(1000)]
        assert worker.status.task(flaky, 0).state is State.RUNNING
        trace = worker.status.task(broken, 0).trace
        assert "errors.retry.timeout=2000" in trace and "target unavailable" in trace
    finally:
        worker.stop()


def test_errant_record_reporter_sends_reported_records_to_the_dlq_before_their_commit(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
) -> None:
    broker.create_topic(topic_name, 1)
    produce(bootstrap_servers, topic_name, [str(i).encode() for i in range(2000)])
    worker = in_process_worker(catalogue, bootstrap_servers)
    name, dlq = f"errant-{topic_name}", f"{topic_name}-errant-dlq"
    start_connector(
        worker,
        name,
        _errant_sink(
            topic_name,
            tmp_path / "out.txt",
            dlq,
            "1234",
            **{"errors.deadletterqueue.context.headers.enable": "true"},
        ),
    )
    try:
        wait_for(
            lambda: committed(bootstrap_servers, f"connect-{name}", topic_name) == 2000,
            60,
            "all offsets committed",
        )
        # Committed implies the DLQ write was acknowledged first: it must be readable now.
        dead = read_all(bootstrap_servers, dlq, 1, timeout_s=10)
        assert [m.value() for m in dead] == [b"1234"]
        headers = header_text(dead[0])
        assert headers["__connect.errors.stage"] == "TASK_PUT"
        assert headers["__connect.errors.offset"] == "1234"
        assert headers["__connect.errors.class.name"].endswith("ScriptedSinkTask")
        assert headers["__connect.errors.exception.message"] == "cannot store 1234"
    finally:
        worker.stop()
    assert "1234" not in _lines(tmp_path / "out.txt")
    assert len(_lines(tmp_path / "out.txt")) == 1999


@pytest.mark.parametrize("data_path", ["host", "worker"])
def test_a_reported_record_the_dlq_refuses_fails_the_task_and_is_never_committed_past(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
    data_path: str,
) -> None:
    """As Kafka's WorkerSinkTask awaits the errant record reporter's DLQ writes before it
    commits: a record the task reported in put() that the DLQ refuses (the DLQ topic's
    max.message.bytes is below the record with its context headers) fails the task at the
    next commit, and no commit goes past it, also the failed task's closing one (Kafka's
    awaitFutures forgets the futures it awaited, so its closing commit goes past the record:
    a documented deviation). Once the DLQ takes it, a restarted task writes it there
    and commits everything: the record is never in neither the sink nor the DLQ."""
    broker.create_topic(topic_name, 1)
    dlq = f"{topic_name}-dlq"
    broker.create_topic(dlq, 1, {"max.message.bytes": "300"})
    produce(bootstrap_servers, topic_name, [str(i).encode() for i in range(10)])
    out = tmp_path / "out.txt"
    worker = in_process_worker(
        catalogue,
        bootstrap_servers,
        **{"task.data.path": data_path, "offset.flush.interval.ms": "200"},
    )
    name = f"errant-refused-{topic_name}"
    group = f"connect-{name}"
    start_connector(
        worker,
        name,
        _errant_sink(
            topic_name, out, dlq, "5", **{"errors.deadletterqueue.context.headers.enable": "true"}
        ),
    )
    try:
        assert f"dead letter queue {dlq}" in _failed_trace(worker, name)
        assert 0 <= committed(bootstrap_servers, group, topic_name) <= 5
        worker.stop_task(name, 0)
        assert 0 <= committed(bootstrap_servers, group, topic_name) <= 5
        bigger = ConfigEntry(
            "max.message.bytes", "1048588", incremental_operation=AlterConfigOpType.SET
        )
        resource = ConfigResource(ResourceType.TOPIC, dlq, incremental_configs=[bigger])
        broker.admin.incremental_alter_configs([resource])[resource].result(timeout=30)
        [task_config] = worker.task_configs(name)
        assert worker.start_task(name, 0, task_config).wait_started(60)
        wait_for(
            lambda: committed(bootstrap_servers, group, topic_name) == 10,
            60,
            "everything committed once the DLQ takes the reported record",
        )
        dead = read_all(bootstrap_servers, dlq, 1, timeout_s=10)
        assert worker.status.task(name, 0).state is State.RUNNING
    finally:
        worker.stop()
    assert [m.value() for m in dead] == [b"5"]
    assert set(_lines(out)) == {str(i) for i in range(10) if i != 5}


def test_records_reported_errant_outside_put_reach_the_dlq_before_their_commit(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
) -> None:
    """Kafka's errant record reporter takes reports at any time, not only inside put(): an
    asynchronous sink that learns of a bad record only in flush() (pre_commit) reports it
    there, and the record is in the DLQ, not dropped, before the offsets past it commit."""
    broker.create_topic(topic_name, 1)
    produce(bootstrap_servers, topic_name, [str(i).encode() for i in range(10)])
    dlq = f"{topic_name}-dlq"
    worker = in_process_worker(catalogue, bootstrap_servers, **{"offset.flush.interval.ms": "200"})
    name = f"errant-flush-{topic_name}"
    start_connector(
        worker,
        name,
        _errant_sink(topic_name, tmp_path / "out.txt", dlq, "5", **{"errant.at.flush": "true"}),
    )
    try:
        wait_for(
            lambda: committed(bootstrap_servers, f"connect-{name}", topic_name) == 10,
            60,
            "all offsets committed",
        )
        dead = read_all(bootstrap_servers, dlq, 1, timeout_s=10)
    finally:
        worker.stop()
    assert [m.value() for m in dead] == [b"5"]


def test_a_stop_with_dead_letters_the_dlq_does_not_acknowledge_keeps_to_the_graceful_timeout(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A task's stop is bounded by task.shutdown.graceful.timeout.ms, as Kafka's worker
    bounds it, also when the DLQ's broker does not answer (here a socket that accepts and
    never replies): the closing commit waits for the DLQ only part of that time, then
    commits the records before the first dead letter not acknowledged, never past it, and
    the stop ends in time, with no "Graceful stop of task ... failed" and no host killed."""
    broker.create_topic(topic_name, 1)
    produce(bootstrap_servers, topic_name, [str(i).encode() for i in range(10)])
    silent = socket.create_server(("127.0.0.1", 0))
    out = tmp_path / "out.txt"
    worker = in_process_worker(
        catalogue,
        bootstrap_servers,
        **{"offset.flush.interval.ms": "600000", "task.shutdown.graceful.timeout.ms": "4000"},
    )
    name = f"dlq-silent-{topic_name}"
    start_connector(
        worker,
        name,
        _errant_sink(
            topic_name,
            out,
            f"{topic_name}-dlq",
            "5",
            **{
                "flush.each.put": "true",
                "producer.override.bootstrap.servers": f"127.0.0.1:{silent.getsockname()[1]}",
            },
        ),
    )
    try:
        wait_for(lambda: len(_lines(out)) == 9, 60, "the records but the reported one put")
        caplog.set_level(logging.INFO, logger="copycat.worker")
        began = time.monotonic()
        worker.stop_task(name, 0)
        elapsed = time.monotonic() - began
        assert committed(bootstrap_servers, f"connect-{name}", topic_name) == 5
    finally:
        worker.stop()
        silent.close()
    assert not [r for r in caplog.records if "Graceful stop of task" in r.getMessage()]
    assert elapsed < 4.0


@pytest.mark.parametrize("data_path", ["host", "worker"])
@pytest.mark.parametrize("where", ["flush", "close"])
def test_with_tolerance_none_a_record_reported_errant_while_stopping_commits_nothing(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
    caplog: pytest.LogCaptureFixture,
    where: str,
    data_path: str,
) -> None:
    """Under errors.tolerance=none Kafka's errant record reporter throws "Tolerance exceeded
    in error handler" into the task's own call. A task that reports a record in flush()
    (preCommit) or close() of its closing commit therefore fails that commit: Kafka logs
    "Offset commit failed during close" (or, from close(), "After being scheduled for
    shutdown, task threw an uncaught exception") and commits nothing (it closes the partitions
    between preCommit and the consumer's commit); its stopping task is not FAILED. The stop
    ends in time, logged as that commit's failure (not as a stop that failed), the record is
    in the DLQ, and nothing past it (nor before it) is committed."""
    broker.create_topic(topic_name, 1)
    produce(bootstrap_servers, topic_name, [str(i).encode() for i in range(10)])
    out = tmp_path / "out.txt"
    dlq = f"{topic_name}-dlq"
    worker = in_process_worker(
        catalogue,
        bootstrap_servers,
        **{
            "task.data.path": data_path,
            "offset.flush.interval.ms": "600000",
            "task.shutdown.graceful.timeout.ms": "4000",
        },
    )
    name = f"errant-stop-{where}-{topic_name}"
    start_connector(
        worker,
        name,
        {
            "connector.class": "ScriptedSink",
            "topics": topic_name,
            "file": str(out),
            "errant.value": "5",
            f"errant.at.{where}": "true",
            "flush.each.put": "true",
            "errors.tolerance": "none",
            "errors.deadletterqueue.topic.name": dlq,
            "errors.deadletterqueue.topic.replication.factor": "1",
        },
    )
    try:
        wait_for(lambda: len(_lines(out)) == 9, 60, "the records but the held one put")
        began = time.monotonic()
        worker.stop_task(name, 0)
        elapsed = time.monotonic() - began
        state = worker.status.task(name, 0).state
        assert committed(bootstrap_servers, f"connect-{name}", topic_name) < 0
        dead = read_all(bootstrap_servers, dlq, 1, timeout_s=10)
    finally:
        worker.stop()
    assert elapsed < 4.0
    assert state is State.UNASSIGNED
    assert [m.value() for m in dead] == [b"5"]
    messages = [r.getMessage() for r in caplog.records]
    assert not [m for m in messages if "did not stop cleanly" in m]
    expected = {
        "flush": "offset commit failed while closing its partitions",
        "close": "reported errant while closing failed the task while stopping",
    }[where]
    assert any(expected in m and "Tolerance exceeded" in m for m in messages)


def test_with_tolerance_none_a_record_reported_errant_in_a_periodic_flush_rewinds(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
) -> None:
    """Under errors.tolerance=none a record the task reports errant in a periodic flush()
    makes Kafka's reporter throw into preCommit(): that offset commit fails ("Offset commit
    failed, rewinding to last committed offsets"), the records are delivered again from the
    last committed offset, and the task runs on (not FAILED). Each time the record goes to
    the DLQ, and nothing past it is committed."""
    broker.create_topic(topic_name, 1)
    produce(bootstrap_servers, topic_name, [str(i).encode() for i in range(10)])
    dlq = f"{topic_name}-dlq"
    worker = in_process_worker(catalogue, bootstrap_servers, **{"offset.flush.interval.ms": "300"})
    name = f"errant-periodic-{topic_name}"
    start_connector(
        worker,
        name,
        {
            **_errant_sink(
                topic_name, tmp_path / "out.txt", dlq, "5", **{"errant.at.flush": "true"}
            ),
            "errors.tolerance": "none",
        },
    )
    try:
        dead = read_all(bootstrap_servers, dlq, 2, timeout_s=60)
        state = worker.status.task(name, 0).state
        assert committed(bootstrap_servers, f"connect-{name}", topic_name) < 0
    finally:
        worker.stop()
    assert len(dead) >= 2 and {m.value() for m in dead} == {b"5"}
    assert state is State.RUNNING


def test_a_record_reported_errant_long_after_its_batch_reaches_the_dlq_whole(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
) -> None:
    """Kafka's errant record reporter has the whole record, however long ago it was put: an
    asynchronous sink that reports a record many put() batches later (here in the closing
    commit's flush(), one record per batch) still has its key, value and timestamp in the
    DLQ, not only its topic, partition and offset."""
    broker.create_topic(topic_name, 1)
    producer = Producer({"bootstrap.servers": bootstrap_servers})
    for i in range(10):
        producer.produce(topic_name, str(i).encode(), f"k{i}".encode(), timestamp=1_000 + i)
    producer.flush(30)
    out = tmp_path / "out.txt"
    dlq = f"{topic_name}-dlq"
    worker = in_process_worker(
        catalogue, bootstrap_servers, **{"offset.flush.interval.ms": "600000"}
    )
    name = f"errant-late-{topic_name}"
    start_connector(
        worker,
        name,
        {
            **_errant_sink(topic_name, out, dlq, "2", **{"errant.at.flush": "true"}),
            "flush.each.put": "true",
            "consumer.override.max.poll.records": "1",
        },
    )
    try:
        wait_for(lambda: len(_lines(out)) == 9, 60, "the records but the held one put")
        worker.stop_task(name, 0)
        [dead] = read_all(bootstrap_servers, dlq, 1, timeout_s=10)
        assert committed(bootstrap_servers, f"connect-{name}", topic_name) == 10
    finally:
        worker.stop()
    assert (dead.key(), dead.value(), dead.timestamp()[1]) == (b"k2", b"2", 1_002)


@pytest.mark.parametrize("data_path", ["host", "worker"])
def test_a_put_that_crashes_still_sends_its_batchs_failed_and_errant_records_to_the_dlq(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
    data_path: str,
) -> None:
    """Kafka converts a whole batch (reporting each failure to the DLQ as it goes) before
    put(), and its errant record reporter sends at once: put() raising an unexpected error
    afterwards fails the task, but the records reported before are in the DLQ (its producer
    is flushed as it closes)."""
    broker.create_topic(topic_name, 1)
    values = [b'{"n": 0}', b'{"n": 1, broken', b'{"n": 2}', b'{"n": 3}']
    produce(bootstrap_servers, topic_name, values)
    dlq = f"{topic_name}-dlq"
    worker = in_process_worker(catalogue, bootstrap_servers, **{"task.data.path": data_path})
    name = f"crash-{topic_name}"
    start_connector(
        worker,
        name,
        _tolerant_json_sink(
            topic_name,
            tmp_path / "out.txt",
            dlq,
            **{
                "errant.value": "0",
                "fatal.value": "3",
                "errors.deadletterqueue.context.headers.enable": "true",
            },
        ),
    )
    try:
        trace = _failed_trace(worker, name)
        assert "crashed on 3" in trace
        dead = read_all(bootstrap_servers, dlq, 2, timeout_s=15)
    finally:
        worker.stop()
    stages = {header_text(m)["__connect.errors.offset"]: header_text(m) for m in dead}
    assert sorted(stages) == ["0", "1"], [m.value() for m in dead]
    assert stages["0"]["__connect.errors.stage"] == "TASK_PUT"
    assert stages["1"]["__connect.errors.stage"] == "VALUE_CONVERTER"


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_a_sink_100x_slower_than_its_source_keeps_worker_memory_bounded(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
) -> None:
    broker.create_topic(topic_name, 1)
    count, size = 100_000, 4096
    started = time.monotonic()
    produce(
        bootstrap_servers,
        topic_name,
        [f"{i:08d}".encode() + b"x" * (size - 8) for i in range(count)],
    )
    produce_rate = count / (time.monotonic() - started)
    gc.collect()
    baseline = _rss_mb()
    flag = tmp_path / "go-fast"
    worker = in_process_worker(catalogue, bootstrap_servers)
    name = f"slow-{topic_name}"
    start_connector(
        worker,
        name,
        {
            "connector.class": "ScriptedSink",
            "topics": topic_name,
            "file": str(tmp_path / "out.txt"),
            "slow.unless.exists": str(flag),
        },
    )  # 500 records/s while slow
    peak = baseline
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            peak = max(peak, _rss_mb())
            time.sleep(0.1)
        slow_done = len(_lines(tmp_path / "out.txt"))
        flag.touch()
        wait_for(lambda: len(_lines(tmp_path / "out.txt")) >= count, 120, "the backlog to drain")
    finally:
        worker.stop()
    backlog_mb = count * size / 2**20
    print(
        f"\nsource wrote {produce_rate:,.0f} rec/s; slow sink took {slow_done} records in "
        f"10 s ({produce_rate / max(slow_done / 10, 1):.0f}x slower); backlog "
        f"{backlog_mb:.0f} MiB; worker RSS {baseline:.0f} MiB -> peak {peak:.0f} MiB "
        f"(+{peak - baseline:.0f} MiB)"
    )
    assert produce_rate / max(slow_done / 10, 1) >= 20  # the sink really was much slower
    # The backlog stayed in Kafka, not in the worker: librdkafka's prefetch (64 MiB by
    # default), the batch in put() and the next one are all the worker may hold, whatever
    # the backlog's size.
    assert peak - baseline < min(128, backlog_mb / 3)
    lines = _lines(tmp_path / "out.txt")
    assert lines == [f"{i:08d}" + "x" * (size - 8) for i in range(count)]


def test_opt_in_automatic_restart_policy_restarts_a_failed_task_with_backoff(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
) -> None:
    broker.create_topic(topic_name, 1)
    produce(bootstrap_servers, topic_name, [b"1", b"2", b"3"])
    worker = in_process_worker(catalogue, bootstrap_servers)
    name = f"restart-{topic_name}"
    start_connector(
        worker,
        name,
        {
            "connector.class": "ScriptedSink",
            "topics": topic_name,
            "file": str(tmp_path / "out.txt"),
            "always.retriable": "true",
            "errors.retry.timeout": "300",
            "errors.retry.delay.max.ms": "100",
            "task.restart.policy": "on-failure",
            "task.restart.max.attempts": "2",
            "task.restart.backoff.initial.ms": "500",
        },
    )
    try:
        wait_for(lambda: worker.status.task(name, 0).state is State.RESTARTING, 30, "RESTARTING")
        assert "automatic restart 1 of 2 in 500 ms" in worker.status.task(name, 0).trace
        wait_for(
            lambda: (
                "gave up after 2 automatic restarts" in (worker.status.task(name, 0).trace or "")
            ),
            60,
            "the policy to give up",
        )
        assert worker.status.task(name, 0).state is State.FAILED
    finally:
        worker.stop()


def test_source_records_failing_conversion_are_tolerated_logged_and_sent_to_a_source_dlq(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    broker: KafkaCluster,
) -> None:
    dlq = f"{topic_name}-source-dlq"
    worker = in_process_worker(catalogue, bootstrap_servers)
    name = f"mixed-{topic_name}"
    start_connector(
        worker,
        name,
        {
            "connector.class": "MixedSource",
            "topic": topic_name,
            "count": "1000",
            "value.converter": "JsonConverter",
            "value.converter.schemas.enable": "true",
            "topic.creation.default.partitions": "1",
            "topic.creation.default.replication.factor": "1",
            "errors.tolerance": "all",
            "errors.log.enable": "true",
            "errors.deadletterqueue.topic.name": dlq,
            "errors.deadletterqueue.topic.replication.factor": "1",
            "errors.deadletterqueue.context.headers.enable": "true",
        },
    )
    try:
        # Offsets move past a failed record only with a later record written, as in Kafka,
        # which commits no offset for a record it skipped (nor one a transform drops): the
        # last record (bad-999) failed, so the offset is that of the one before it.
        wait_for(
            lambda: [o for _, o in worker.offsets.connector_offsets(name)] == [{"n": 999}],
            60,
            "the source offset to reach the end",
        )
        assert worker.status.task(name, 0).state is State.RUNNING
    finally:
        worker.stop()
    good = read_all(bootstrap_servers, topic_name, 900)
    assert [json.loads(m.value())["payload"] for m in good] == [
        n for n in range(1000) if n % 10 != 9
    ]
    dead = read_all(bootstrap_servers, dlq, 100)
    assert len(dead) == 100
    headers = header_text(dead[0])
    assert headers["__connect.errors.stage"] == "VALUE_CONVERTER"
    assert headers["__connect.errors.connector.name"] == name
    assert (
        "bad-9" in json.loads(dead[0].value())["record"]
        or "'n': 10" in json.loads(dead[0].value())["record"]
    )


def test_a_record_of_about_1_mib_goes_to_the_dlq_and_the_sink_runs_on(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
) -> None:
    """The DLQ producer takes records up to Kafka's default request size (1 MiB), as Kafka
    Connect's does: a 1,040,000-byte bad value is dead-lettered and its offset committed."""
    broker.create_topic(topic_name, 1)
    big = b"<" + b"x" * 1_039_999
    producer = Producer({"bootstrap.servers": bootstrap_servers, "message.max.bytes": 1_048_576})
    for value in (b'{"n": 0}', b'{"n": 1}', big, b'{"n": 3}'):
        producer.produce(topic_name, value)
    assert producer.flush(30) == 0
    out, dlq = tmp_path / "out.txt", f"{topic_name}-dlq"
    worker = in_process_worker(catalogue, bootstrap_servers)
    name = f"big-dlq-{topic_name}"
    start_connector(worker, name, _tolerant_json_sink(topic_name, out, dlq))
    try:
        wait_for(
            lambda: committed(bootstrap_servers, f"connect-{name}", topic_name) == 4,
            60,
            "every offset committed",
        )
        assert worker.status.task(name, 0).state is State.RUNNING
        dead = read_all(bootstrap_servers, dlq, 1)
    finally:
        worker.stop()
    assert [m.value() for m in dead] == [big]
    assert _lines(out) == ["0", "1", "3"]


def test_dlq_records_keep_their_timestamp_and_name_kafkas_classes(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
) -> None:
    """As Kafka's DeadLetterQueueReporter: the DLQ record carries the original record's
    timestamp, and the context headers name the component and exception by their Kafka
    classes where they have one (the converter and SMT configured by Kafka class name, the
    plugin_api exceptions that mirror Kafka's): DLQ tooling filters on them. They carried the
    producer's clock and Python names (copycat_converters.json_converter.JsonConverter,
    plugin_api.errors.DataException)."""
    broker.create_topic(topic_name, 1)
    stamps = {
        b'{"n": 0}': 1_600_000_000_000,
        b"not json": 1_600_000_001_000,
        b"42": 1_600_000_002_000,
    }
    producer = Producer({"bootstrap.servers": bootstrap_servers})
    for value, stamp in stamps.items():
        producer.produce(topic_name, value, timestamp=stamp)
    assert producer.flush(30) == 0
    out, dlq = tmp_path / "out.txt", f"{topic_name}-dlq"
    worker = in_process_worker(catalogue, bootstrap_servers)
    name = f"dlq-kafka-names-{topic_name}"
    config = _tolerant_json_sink(
        topic_name,
        out,
        dlq,
        **{
            "errors.deadletterqueue.context.headers.enable": "true",
            "transforms": "mask",
            "transforms.mask.type": "org.apache.kafka.connect.transforms.MaskField$Value",
            "transforms.mask.fields": "n",
        },
    )
    start_connector(worker, name, config)
    try:
        dead = read_all(bootstrap_servers, dlq, 2, timeout_s=15)
    finally:
        worker.stop()
    assert [m.value() for m in dead] == [b"not json", b"42"]
    assert [m.timestamp()[1] for m in dead] == [stamps[b"not json"], stamps[b"42"]]
    converter, transform = (header_text(m) for m in dead)
    assert converter["__connect.errors.stage"] == "VALUE_CONVERTER"
    assert converter["__connect.errors.class.name"] == "org.apache.kafka.connect.json.JsonConverter"
    assert transform["__connect.errors.stage"] == "TRANSFORMATION"
    assert (
        transform["__connect.errors.class.name"]
        == "org.apache.kafka.connect.transforms.MaskField$Value"
    )
    # Kafka's message names the Java class of the value (a schemaless number is a Long).
    assert transform["__connect.errors.exception.message"] == (
        "Only Map objects supported in absence of schema for [mask fields], found: java.lang.Long"
    )
    for headers in (converter, transform):
        exception = headers["__connect.errors.exception.class.name"]
        assert exception == "org.apache.kafka.connect.errors.DataException", exception
        assert headers["__connect.errors.exception.stacktrace"].startswith(exception + ": ")


@pytest.mark.parametrize("data_path", ["host", "worker"])
def test_a_failed_sink_whose_dlq_refuses_a_record_commits_the_records_put_before_it(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
    data_path: str,
) -> None:
    """A record the DLQ refuses (too large) fails the task, a documented deviation; the
    batches put before its own are committed all the same, as a failed task commits what it
    put, and the refused record is not: a restart fails on it again without writing k0 twice.
    k0 was not committed and was written again after each restart. (A record of the refused
    one's own batch is not put at all: see the test after this one.)"""
    broker.create_topic(topic_name, 1)
    producer = Producer({"bootstrap.servers": bootstrap_servers, "message.max.bytes": 1_048_576})
    producer.produce(topic_name, b'{"n": 0}', key=b"k")
    assert producer.flush(30) == 0
    out, dlq = tmp_path / "out.txt", f"{topic_name}-dlq"
    worker = in_process_worker(catalogue, bootstrap_servers, **{"task.data.path": data_path})
    name = f"dlq-refuses-commit-{topic_name}"
    config = _tolerant_json_sink(
        topic_name, out, dlq, **{"errors.deadletterqueue.context.headers.enable": "true"}
    )
    start_connector(worker, name, config)
    try:
        wait_for(
            lambda: committed(bootstrap_servers, f"connect-{name}", topic_name) == 1,
            30,
            "k0 put and committed",
        )
        producer.produce(topic_name, b"<" + b"x" * 1_048_399, key=b"k")
        assert producer.flush(30) == 0
        assert f"record {topic_name}-0@1" in _failed_trace(worker, name)
        _commits_through_a_restart(worker, name, bootstrap_servers, topic_name, 1)
    finally:
        worker.stop()
    assert _lines(out) == ["0"]


def test_a_record_the_dlq_refuses_fails_the_task_naming_the_dlq_and_the_record(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
) -> None:
    broker.create_topic(topic_name, 1)
    produce(bootstrap_servers, topic_name, [b'{"n": 0}', b"<" + b"x" * 5_000])
    dlq = f"{topic_name}-dlq"
    worker = in_process_worker(catalogue, bootstrap_servers)
    name = f"dlq-refuses-{topic_name}"
    sink = _tolerant_json_sink(
        topic_name, tmp_path / "out.txt", dlq, **{"producer.override.max.request.size": "2000"}
    )
    start_connector(worker, name, sink)
    try:
        trace = _failed_trace(worker, name)
    finally:
        worker.stop()
    assert f"dead letter queue {dlq}" in trace
    assert f"record {topic_name}-0@1" in trace
    assert committed(bootstrap_servers, f"connect-{name}", topic_name) <= 1


@pytest.mark.parametrize("data_path", ["host", "worker"])
def test_no_record_is_put_past_a_dlq_record_the_broker_refused(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
    data_path: str,
) -> None:
    """A batch with a record that fails conversion waits for the DLQ's acknowledgement before
    its records are put: when the broker refuses the DLQ record (its topic's max.message.bytes
    is smaller than the record with its context headers) the task fails having put nothing of
    the batch, and once the DLQ topic takes it, a restarted task delivers each good record
    once and the poison record reaches the DLQ. The records after the poison one were put
    before the DLQ answered, and each restart put them again."""
    broker.create_topic(topic_name, 1)
    dlq = f"{topic_name}-dlq"
    broker.create_topic(dlq, 1, {"max.message.bytes": "300"})
    values = [b'"good0"', b'"good1"', b"poison", b'"good3"', b'"good4"']
    producer = Producer({"bootstrap.servers": bootstrap_servers, "linger.ms": 1000})
    for value in values:  # one producer batch: the task consumes them in one batch
        producer.produce(topic_name, value, key=b"k")
    assert producer.flush(30) == 0
    out = tmp_path / "out.txt"
    worker = in_process_worker(catalogue, bootstrap_servers, **{"task.data.path": data_path})
    name = f"dlq-refused-batch-{topic_name}"
    group = f"connect-{name}"
    config = {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "topics": topic_name,
        "file": str(out),
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.context.headers.enable": "true",
    }
    start_connector(worker, name, config)
    try:
        assert f"record {topic_name}-0@2" in _failed_trace(worker, name)
        assert committed(bootstrap_servers, group, topic_name) <= 2
        # Restarted while the DLQ still refuses: it fails again, putting nothing twice.
        worker.stop_task(name, 0)
        [task_config] = worker.task_configs(name)
        assert worker.start_task(name, 0, task_config).wait_started(60)
        assert f"record {topic_name}-0@2" in _failed_trace(worker, name)
        worker.stop_task(name, 0)
        assert committed(bootstrap_servers, group, topic_name) <= 2
        bigger = ConfigEntry(
            "max.message.bytes", "1048588", incremental_operation=AlterConfigOpType.SET
        )
        resource = ConfigResource(ResourceType.TOPIC, dlq, incremental_configs=[bigger])
        broker.admin.incremental_alter_configs([resource])[resource].result(timeout=30)
        assert worker.start_task(name, 0, task_config).wait_started(60)
        dead = read_all(bootstrap_servers, dlq, 1, timeout_s=30)
        wait_for(
            lambda: committed(bootstrap_servers, group, topic_name) == 5,
            60,
            "the whole batch committed once the DLQ takes the poison record",
        )
        assert worker.status.task(name, 0).state is State.RUNNING
    finally:
        worker.stop()
    assert [m.value() for m in dead] == [b"poison"]
    assert _lines(out) == ["good0", "good1", "good3", "good4"]


@pytest.mark.parametrize("data_path", ["host", "worker"])
def test_a_retried_put_of_a_batch_with_dead_letters_sends_them_once(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
    data_path: str,
) -> None:
    """The put() of a batch whose failed records went to the DLQ first is retried with the
    records already converted (as Kafka redelivers its batch), so the failed ones are not
    reported again."""
    broker.create_topic(topic_name, 1)
    producer = Producer({"bootstrap.servers": bootstrap_servers, "linger.ms": 1000})
    for value in (b'{"n": 0}', b"not json", b'{"n": 2}'):  # one batch
        producer.produce(topic_name, value)
    assert producer.flush(30) == 0
    out, dlq = tmp_path / "out.txt", f"{topic_name}-dlq"
    worker = in_process_worker(catalogue, bootstrap_servers, **{"task.data.path": data_path})
    name = f"dlq-retried-{topic_name}"
    start_connector(
        worker, name, _tolerant_json_sink(topic_name, out, dlq, **{"transient.failures": "2"})
    )
    try:
        wait_for(
            lambda: committed(bootstrap_servers, f"connect-{name}", topic_name) == 3,
            60,
            "the batch put after its retries and committed",
        )
        dead = read_all(bootstrap_servers, dlq, 1, timeout_s=10)
    finally:
        worker.stop()
    assert [m.value() for m in dead] == [b"not json"]
    assert _lines(out) == ["0", "2"]


BIG_LINE_BYTES = 2_000_000  # over the producer's request size (Kafka's default: 1 MiB)


@pytest.mark.parametrize(
    ("data_path", "refused_by"), [("host", "producer"), ("worker", "producer"), ("host", "broker")]
)
def test_with_tolerance_all_a_record_the_producer_refuses_is_skipped_and_logged(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
    caplog: pytest.LogCaptureFixture,
    data_path: str,
    refused_by: str,
) -> None:
    """KIP-779: under errors.tolerance=all a record the producer refuses is skipped (logged,
    its offset committed) and the task runs on, as Kafka's WorkerSourceTask does. Refused by
    the producer itself (produce() raises), or, with a request size over the topic's
    max.message.bytes, by the broker (the delivery report says so)."""
    size = {"producer.override.max.request.size": "3000000"} if refused_by == "broker" else {}
    data = tmp_path / "in.txt"
    data.write_text(f"first\n{'x' * BIG_LINE_BYTES}\nlast\n")
    worker = in_process_worker(catalogue, bootstrap_servers, **{"task.data.path": data_path})
    name = f"refused-{topic_name}"
    caplog.set_level(logging.ERROR, logger="copycat.errors")
    start_connector(
        worker,
        name,
        {
            "connector.class": "FileStreamSource",
            "file": str(data),
            "topic": topic_name,
            "topic.creation.default.partitions": "1",
            "topic.creation.default.replication.factor": "1",
            "errors.tolerance": "all",
            "errors.log.enable": "true",
            **size,
        },
    )
    try:
        sent = read_all(bootstrap_servers, topic_name, 2)
        wait_for(
            lambda: (
                [o for _, o in worker.offsets.connector_offsets(name)]
                == [{"position": data.stat().st_size}]
            ),
            30,
            "the offset past the last line",
        )
        assert worker.status.task(name, 0).state is State.RUNNING
    finally:
        worker.stop()
    assert [m.value() for m in sent] == [b"first", b"last"]
    logged = [r.getMessage() for r in caplog.records if r.name == "copycat.errors"]
    assert any("KAFKA_PRODUCE" in m and topic_name in m for m in logged), logged
    # The size at fault, and whose limit it is over, as Java's RecordTooLargeException says.
    limit = "max.message.bytes" if refused_by == "broker" else "max.request.size, 1048576 bytes"
    assert any(f"are {BIG_LINE_BYTES} bytes" in m and limit in m for m in logged), logged


def test_with_tolerance_none_a_record_the_producer_refuses_fails_the_task(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
) -> None:
    data = tmp_path / "in.txt"
    data.write_text(f"first\n{'x' * BIG_LINE_BYTES}\nlast\n")
    worker = in_process_worker(catalogue, bootstrap_servers)
    name = f"refused-strict-{topic_name}"
    start_connector(
        worker,
        name,
        {
            "connector.class": "FileStreamSource",
            "file": str(data),
            "topic": topic_name,
            "topic.creation.default.partitions": "1",
            "topic.creation.default.replication.factor": "1",
        },
    )
    try:
        trace = _failed_trace(worker, name)
        assert topic_name in trace and "too large" in trace.lower()
        assert f"are {BIG_LINE_BYTES} bytes" in trace and "max.request.size" in trace, trace
        sent = read_all(bootstrap_servers, topic_name, 1)
    finally:
        worker.stop()
    assert [m.value() for m in sent] == [b"first"]


@pytest.mark.also_on_dev_broker
def test_a_stopped_sink_closes_its_dlq_producer_at_once(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
) -> None:
    """A sink task's dead letter queue producer is flushed and closed when the task stops
    (it was left to the garbage collector, and kept connections and threads until then).
    Garbage collection is off here, so that only an explicit close can end it."""
    broker.create_topic(topic_name, 1)
    values, bad_offsets = _json_mix(200, 11)
    produce(bootstrap_servers, topic_name, values)
    dlq = f"{topic_name}-dlq"
    gc.collect()
    before = librdkafka_threads()
    gc.disable()
    try:
        worker = in_process_worker(catalogue, bootstrap_servers, **{"task.data.path": "worker"})
        name = f"dlq-closes-{topic_name}"
        start_connector(worker, name, _tolerant_json_sink(topic_name, tmp_path / "out.txt", dlq))
        wait_for(
            lambda: committed(bootstrap_servers, f"connect-{name}", topic_name) == len(values),
            60,
            "every offset committed",
        )
        worker.stop()
        wait_for_librdkafka_threads(len(before))
    finally:
        gc.enable()
    assert len(read_all(bootstrap_servers, dlq, len(bad_offsets))) == len(bad_offsets)
