"""Source task failures under ``errors.tolerance``, on Copycat and on Apache Kafka Connect 4.1.1.

A FileStreamSource on each worker, with the same config; after the task failed (or ran) the
connector is stopped and its committed source offsets (``GET /connectors/<name>/offsets``)
and the records in its topic must be the same on both. Found by an exploratory comparison:
a line the producer refused under ``errors.tolerance=none`` (larger than
``producer.override.max.request.size``) failed the task on both, but Copycat committed no
offset for the lines of the same poll before it, which the broker had acknowledged, so a
restart wrote them again (Kafka commits them: its offsets advance record by record).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import (
    Peer,
    Record,
    create,
    delete,
    differences,
    read_records,
)
from tests.support.kafka import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"


def _task_state(client: httpx.Client, name: str, state: str) -> dict[str, Any] | None:
    response = client.get(f"/connectors/{name}/status")
    if response.status_code != 200:
        return None
    status: dict[str, Any] = response.json()
    tasks = status["tasks"]
    return status if tasks and tasks[0]["state"] == state else None


def _stopped(client: httpx.Client, name: str) -> bool:
    response = client.get(f"/connectors/{name}/status")
    return response.status_code == 200 and response.json()["connector"]["state"] == "STOPPED"


def _run(
    peer: Peer,
    broker: KafkaCluster,
    tmp: Path,
    lines: list[str],
    settings: dict[str, str],
    state: str,
    expected: int,
) -> tuple[list[Record], list[dict[str, Any]], str]:
    """The connector's records, its committed offsets once stopped, and its task's trace's
    first line, after its task reached ``state``."""
    suffix = uuid.uuid4().hex[:8]
    name, topic = f"src-err-{suffix}", f"src-err-{suffix}"
    broker.create_topic(topic, 1)
    source = tmp / f"{name}.txt"
    source.write_text("".join(f"{line}\n" for line in lines))
    config = {"connector.class": SOURCE, "file": str(source), "topic": topic, "tasks.max": "1"}
    with peer.client() as client:
        create(client, name, {**config, **settings})
        try:
            status = wait_for(lambda: _task_state(client, name, state), 90, f"{peer.name} {state}")
            trace = (status["tasks"][0].get("trace") or "").split("\n", 1)[0]
            records = read_records(broker.bootstrap_servers, topic, expected)
            assert client.put(f"/connectors/{name}/stop").status_code == 204
            wait_for(lambda: _stopped(client, name), 90, f"{peer.name} STOPPED")
            response = client.get(f"/connectors/{name}/offsets")
            assert response.status_code == 200, response.text
            offsets: list[dict[str, Any]] = response.json()["offsets"]
        finally:
            delete(client, name)
    for entry in offsets:  # the file's path differs between the runs
        entry["partition"] = {"filename": Path(entry["partition"]["filename"]).suffix}
    return records, offsets, trace


def test_a_record_the_producer_refuses_fails_the_task_after_committing_those_before_it(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    lines = ["a", "b" * 3000, "c"]
    settings = {
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "producer.override.max.request.size": "1500",
        "errors.tolerance": "none",
    }
    ours = _run(copycat, apache_kafka, tmp_path, lines, settings, "FAILED", 1)
    theirs = _run(kafka_connect, apache_kafka, tmp_path, lines, settings, "FAILED", 1)

    assert [value for _key, value, _headers in theirs[0]] == [b"a"]
    assert differences(ours[0], theirs[0]) == []
    assert theirs[1] == [{"partition": {"filename": ".txt"}, "offset": {"position": 2}}]
    assert ours[1] == theirs[1]
