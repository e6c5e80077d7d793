"""A task's active topics (KIP-558) in both places its data path runs (task.data.path).

Kafka Connect records a topic as active when a sink task consumes a record from it, or a
source task sends one to it, not when a sink is assigned the topic's partitions; a reset
(PUT /connectors/<name>/topics/reset) while the task runs empties the list, and the task
records the topic again with its next record. tests/differential/test_sink_active_topics.py
compares the sink's with Kafka Connect 4.1.1's.

A real standalone worker over HTTP, the bundled FileStreamSink and FileStreamSource.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import produce
from tests.support.rest import BOTH_DATA_PATHS, RestWorker, module_worker, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.also_on_dev_broker]


worker = module_worker("active-topics")


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _topics(http: httpx.Client, name: str) -> list[str]:
    response = http.get(f"/connectors/{name}/topics")
    assert response.status_code == 200, response.text
    topics: list[str] = response.json()[name]["topics"]
    return topics


def _reset(http: httpx.Client, name: str) -> None:
    response = http.put(f"/connectors/{name}/topics/reset")
    assert response.status_code == 202, response.text


@BOTH_DATA_PATHS
def test_a_sink_lists_the_topics_it_consumed_from_and_a_reset_empties_the_list(
    worker: RestWorker, broker: KafkaCluster, topic_name: str, tmp_path: Path
) -> None:
    used, unused = f"{topic_name}-used", f"{topic_name}-unused"
    broker.create_topic(used, 2)
    broker.create_topic(unused, 1)
    produce(broker.bootstrap_servers, used, [b"a", b"b"])
    out = tmp_path / "sink.out"
    name = f"active-sink-{topic_name}"
    http = worker.client()
    created = http.post(
        "/connectors",
        json={
            "name": name,
            "config": {
                "connector.class": "FileStreamSink",
                "topics.regex": f"{topic_name}-.*",
                "file": str(out),
            },
        },
    )
    assert created.status_code == 201, created.text
    try:
        wait_for(lambda: len(_lines(out)) == 2, 60, "the two records in the file")
        # Assigned both topics' partitions, consumed from one.
        assert _topics(http, name) == [used]
        _reset(http, name)
        assert _topics(http, name) == []
        produce(broker.bootstrap_servers, unused, [b"c"])
        wait_for(lambda: len(_lines(out)) == 3, 60, "the third record in the file")
        wait_for(lambda: _topics(http, name) == [unused], 30, f"{unused} active again")
    finally:
        http.delete(f"/connectors/{name}")


@BOTH_DATA_PATHS
def test_a_running_source_records_its_topic_again_after_a_reset(
    worker: RestWorker, broker: KafkaCluster, topic_name: str, tmp_path: Path
) -> None:
    broker.create_topic(topic_name, 1)
    source = tmp_path / "in.txt"
    source.write_text("one\n")
    name = f"active-source-{topic_name}"
    http = worker.client()
    created = http.post(
        "/connectors",
        json={
            "name": name,
            "config": {
                "connector.class": "FileStreamSource",
                "file": str(source),
                "topic": topic_name,
            },
        },
    )
    assert created.status_code == 201, created.text
    try:
        wait_for(lambda: _topics(http, name) == [topic_name], 60, "the source's topic")
        _reset(http, name)
        assert _topics(http, name) == []
        with source.open("a") as appended:
            appended.write("two\n")
        wait_for(lambda: _topics(http, name) == [topic_name], 60, "the topic active again")
    finally:
        http.delete(f"/connectors/{name}")
