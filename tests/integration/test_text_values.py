"""Values that are not text, written as text by the bundled plugins in real pipelines (real
broker, plugins in their own hosts): StringConverter and FileStreamSink print them as Kafka
Connect does, Java's toString(), whatever their depth (up to the 1000 levels Kafka's JSON
parser reads)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from core.plugins import PluginCatalogue
from core.status import State
from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import committed, header_text, produce, read_all, wait_for
from tests.support.workers import in_process_worker, start_connector

pytestmark = pytest.mark.integration


def test_string_converter_writes_structs_and_timestamps_as_kafka_connect_does(
    catalogue: PluginCatalogue, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    # The exploratory user's pipeline, compared byte for byte with Kafka Connect 4.1.1's topic.
    data = tmp_path / "in.txt"
    data.write_text("hello\n")
    worker = in_process_worker(catalogue, bootstrap_servers)
    name = f"text-{topic_name}"
    start_connector(
        worker,
        name,
        {
            "connector.class": "FileStreamSource",
            "file": str(data),
            "topic": topic_name,
            "topic.creation.default.partitions": "1",
            "topic.creation.default.replication.factor": "1",
            "transforms": "hoist,src,ts",
            "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
            "transforms.hoist.field": "line",
            "transforms.src.type": "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.src.static.field": "src",
            "transforms.src.static.value": "file",
            "transforms.ts.type": "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.ts.timestamp.field": "at",
        },
    )
    try:
        (message,) = read_all(bootstrap_servers, topic_name, 1)
    finally:
        worker.stop()
    moment = time.gmtime(message.timestamp()[1] / 1000)
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", moment)  # C locale: English names
    assert message.value() == f"Struct{{line=hello,src=file,at={stamp}}}".encode()


def test_a_deeply_nested_json_value_is_written_and_the_task_runs_on(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    broker: KafkaCluster,
) -> None:
    # 900 and 1000 nested arrays are valid JSON (Kafka's parser takes 1000 levels): Kafka's
    # sink writes them. Copycat's failed the task on a RecursionError, with nothing written,
    # not even the records before it; 1001 levels (which orjson read) and 1100 are refused by
    # the converter, as Kafka's, and go to the DLQ with Kafka's reason in their headers.
    broker.create_topic(topic_name, 1)
    values = [
        b'"start"',
        b"[" * 900 + b"]" * 900,
        b"[" * 1000 + b"]" * 1000,
        b"[" * 1001 + b"]" * 1001,
        b"[" * 1100 + b"]" * 1100,
        b'"end"',
    ]
    produce(bootstrap_servers, topic_name, values)
    out, dlq = tmp_path / "out.txt", f"{topic_name}-dlq"
    worker = in_process_worker(catalogue, bootstrap_servers)
    name = f"deep-{topic_name}"
    start_connector(
        worker,
        name,
        {
            "connector.class": "FileStreamSink",
            "topics": topic_name,
            "file": str(out),
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": dlq,
            "errors.deadletterqueue.topic.replication.factor": "1",
            "errors.deadletterqueue.context.headers.enable": "true",
        },
    )
    try:
        wait_for(
            lambda: committed(bootstrap_servers, f"connect-{name}", topic_name) == len(values),
            60,
            "every offset committed",
        )
        assert worker.status.task(name, 0).state is State.RUNNING
    finally:
        worker.stop()
    assert out.read_text().splitlines() == [
        "start",
        "[" * 900 + "]" * 900,
        "[" * 1000 + "]" * 1000,
        "end",
    ]
    refused = read_all(bootstrap_servers, dlq, 2)
    assert [m.value() for m in refused] == values[3:5]
    for message in refused:
        headers = header_text(message)
        assert headers["__connect.errors.exception.message"] == (
            "Converting byte[] to Kafka Connect data failed due to serialization error: "
            "Document nesting depth (1001) exceeds the maximum allowed (1000)"
        ), headers
