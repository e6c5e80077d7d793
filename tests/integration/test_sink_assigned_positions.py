"""A sink commits the position of every partition it is assigned, as Kafka Connect does.

Kafka's WorkerSinkTask takes ``consumer.position()`` of each partition it is assigned (the
group's committed offset, else where ``auto.offset.reset`` puts it) as that partition's
current and last committed offset, and each commit that has anything new commits the whole
map: a partition the task never read from gets its position committed all the same. Copycat
committed only the partitions the task had consumed from, so with
``auto.offset.reset=latest`` a topic that was quiet while the connector ran started again at
its end after a stop/resume: the records written to it meanwhile were never delivered. And
GET /connectors/<name>/offsets did not list the partitions not consumed from yet.

Real Apache Kafka, a real standalone worker over HTTP, the bundled FileStreamSink.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import group_offsets, produce
from tests.support.rest import RestWorker, wait_for

pytestmark = pytest.mark.integration

# How long a probe record may take to be delivered before the next one is produced.
PROBE_WAIT_S = 2.0


@pytest.fixture(scope="module")
def worker(
    tmp_path_factory: pytest.TempPathFactory, broker: KafkaCluster, bundled_plugin_path: Path
) -> Iterator[RestWorker]:
    tmp = tmp_path_factory.mktemp("assigned-positions")
    with RestWorker(tmp, broker.bootstrap_servers, bundled_plugin_path) as w:
        yield w


def _group_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """What ``group`` has committed, per partition."""
    return {(tp.topic, tp.partition): tp.offset for tp in group_offsets(bootstrap, group)}


def _rest_offsets(http: httpx.Client, name: str) -> dict[tuple[str, int], int]:
    response = http.get(f"/connectors/{name}/offsets")
    assert response.status_code == 200, response.text
    return {
        (o["partition"]["kafka_topic"], o["partition"]["kafka_partition"]): o["offset"][
            "kafka_offset"
        ]
        for o in response.json()["offsets"]
    }


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _records(path: Path) -> list[str]:
    """The lines of ``path`` but the probes (see :func:`_probe_until_delivered`)."""
    return [line for line in _lines(path) if line != "probe"]


def _probe_until_delivered(bootstrap: str, topic: str, out: Path) -> int:
    """Produce a record "probe" to ``topic`` each PROBE_WAIT_S until one is in ``out``;
    returns how many were produced."""
    deadline = time.monotonic() + 60
    probes = 0
    while time.monotonic() < deadline:
        produce(bootstrap, topic, [b"probe"])
        probes += 1
        try:
            wait_for(lambda: "probe" in _lines(out), PROBE_WAIT_S, "a probe record")
        except AssertionError:
            continue
        return probes
    raise AssertionError(f"none of {probes} probe records to {topic} was delivered")


def test_a_quiet_topic_keeps_its_position_across_stop_and_resume_under_latest(
    worker: RestWorker, broker: KafkaCluster, topic_name: str, tmp_path: Path
) -> None:
    """auto.offset.reset=latest, a busy topic and a quiet one: Kafka commits quiet's position
    (2) with busy's first commit, and after stop, 7 records to quiet, resume, delivers all 7.
    Before the fix the group held only busy:0, and the 7 records were skipped on resume."""
    bootstrap = broker.bootstrap_servers
    busy, quiet = f"{topic_name}-busy", f"{topic_name}-quiet"
    broker.create_topic(busy, 1)
    broker.create_topic(quiet, 1)
    produce(bootstrap, busy, [f"old {i}".encode() for i in range(5)])
    produce(bootstrap, quiet, [f"oldq {i}".encode() for i in range(2)])
    out = tmp_path / "out.txt"
    name = f"latest-{topic_name}"
    group = f"connect-{name}"
    config = {
        "connector.class": "FileStreamSink",
        "topics": f"{busy},{quiet}",
        "file": str(out),
        "consumer.override.auto.offset.reset": "latest",
    }
    http = worker.client()
    assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
    # The task reads busy from its end once assigned: records produced before that are not
    # delivered, so busy gets a probe record until one is.
    probes = _probe_until_delivered(bootstrap, busy, out)
    produce(bootstrap, busy, [f"busy {i}".encode() for i in range(10)])
    wait_for(lambda: len(_records(out)) >= 10, 60, "the 10 busy records")
    assert _records(out) == [f"busy {i}" for i in range(10)]  # none of the 5 before
    end = 5 + probes + 10
    expected = {(busy, 0): end, (quiet, 0): 2}
    wait_for(lambda: _group_offsets(bootstrap, group) == expected, 30, f"{expected} committed")
    assert _rest_offsets(http, name) == expected

    assert http.put(f"/connectors/{name}/stop").status_code == 204
    wait_for(
        lambda: http.get(f"/connectors/{name}/status").json()["connector"]["state"] == "STOPPED",
        30,
        "STOPPED",
    )
    produce(bootstrap, quiet, [f"quiet {i}".encode() for i in range(7)])
    produce(bootstrap, busy, [f"busy2 {i}".encode() for i in range(3)])
    assert http.put(f"/connectors/{name}/resume").status_code == 202
    wait_for(lambda: len(_records(out)) >= 20, 60, "the 10 records produced while stopped")
    lines = _records(out)[10:]
    assert sorted(line for line in lines if line.startswith("quiet")) == [
        f"quiet {i}" for i in range(7)
    ]
    assert sorted(line for line in lines if line.startswith("busy2")) == [
        f"busy2 {i}" for i in range(3)
    ]
    expected = {(busy, 0): end + 3, (quiet, 0): 9}
    wait_for(lambda: _group_offsets(bootstrap, group) == expected, 30, f"{expected} committed")
    assert http.delete(f"/connectors/{name}").status_code == 204


def test_offsets_list_the_partitions_of_an_empty_topic(
    worker: RestWorker, broker: KafkaCluster, topic_name: str, tmp_path: Path
) -> None:
    """The default auto.offset.reset (earliest): an empty 2-partition topic read beside one with
    records is committed at 0 with the first commit, and GET /offsets lists it, as Kafka
    Connect's; before, neither the group nor GET /offsets had it."""
    bootstrap = broker.bootstrap_servers
    busy, other = f"{topic_name}-busy", f"{topic_name}-other"
    broker.create_topic(busy, 1)
    broker.create_topic(other, 2)
    produce(bootstrap, busy, [f"busy {i}".encode() for i in range(3)])
    out = tmp_path / "out.txt"
    name = f"empty-{topic_name}"
    config = {"connector.class": "FileStreamSink", "topics": f"{busy},{other}", "file": str(out)}
    http = worker.client()
    assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
    wait_for(lambda: len(_lines(out)) >= 3, 60, "the 3 records")
    expected = {(busy, 0): 3, (other, 0): 0, (other, 1): 0}
    wait_for(lambda: _rest_offsets(http, name) == expected, 30, "busy:0=3, other:0=0, other:1=0")
    assert _group_offsets(bootstrap, f"connect-{name}") == expected
    assert http.delete(f"/connectors/{name}").status_code == 204
