"""Migration from Apache Kafka Connect: Copycat workers take over a Kafka Connect cluster's
group and internal topics, and its connectors go on from where Kafka Connect left them.

A real ``connect-distributed`` worker runs FileStreamSource (file -> topic) and FileStreamSink
(topic -> file) and keeps a third connector paused; it is stopped. Two Copycat distributed
workers start with the same ``group.id`` and topics: they show the three connectors with
Kafka Connect's configs and target states, the source resumes at Kafka Connect's offset (no
line sent twice or skipped) and the sink at its ``connect-<name>`` group's committed offset.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import DistributedCluster
from tests.support.jvm import run_owner_pid
from tests.support.kafka import read_all
from tests.support.kafka_connect import KafkaConnect
from tests.support.processes import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

LINES_BEFORE = 300
LINES_AFTER = 200


def _lines(start: int, end: int) -> str:
    return "".join(f"migrated line {i:05d}\n" for i in range(start, end))


def test_copycat_workers_take_over_a_kafka_connect_cluster(
    apache_kafka: KafkaCluster, bundled_plugin_path: Path, tmp_path: Path
) -> None:
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.write_text(_lines(0, LINES_BEFORE))
    group = f"connect-migrate-{int(time.time() * 1000) % 10**8}"
    topic = f"{group}-lines"
    apache_kafka.create_topic(topic, 1)
    connect = KafkaConnect(
        tmp_path / "kafka-connect",
        apache_kafka.bootstrap_servers,
        mode="distributed",
        group_id=group,
    ).start(run_owner_pid())
    try:
        with connect.client() as rest:
            for name, config in {
                "src": {
                    "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                    "file": str(source_file),
                    "topic": topic,
                },
                "sink": {
                    "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
                    "file": str(sink_file),
                    "topics": topic,
                },
                "idle": {
                    "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                    "file": str(source_file),
                    "topic": f"{topic}-idle",
                },
            }.items():
                assert rest.post("/connectors", json={"name": name, "config": config}).is_success
            assert rest.put("/connectors/idle/pause").status_code == 202

            def copied() -> bool:
                offsets = rest.get("/connectors/src/offsets").json().get("offsets", [])
                position = offsets[0]["offset"]["position"] if offsets else -1
                return position == source_file.stat().st_size and (
                    sink_file.exists() and len(sink_file.read_text().splitlines()) == LINES_BEFORE
                )

            wait_until(copied, 90, "Kafka Connect copying every line and committing offsets")
            wait_until(
                lambda: (
                    rest.get("/connectors/idle/status").json()["connector"]["state"] == "PAUSED"
                ),
                30,
                "idle PAUSED",
            )
            configs = {
                n: rest.get(f"/connectors/{n}/config").json() for n in ("src", "sink", "idle")
            }
            assert all("connector.class" in c for c in configs.values()), configs
    finally:
        connect.stop()

    copycat = DistributedCluster(
        tmp_path / "copycat",
        apache_kafka.bootstrap_servers,
        bundled_plugin_path,
        2,
        group=group,
        extra={
            # The Kafka Connect worker's own settings (tests/support/kafka_connect.py): same
            # topic names, same converters, so the same bytes go on being written.
            "config.storage.topic": f"{group}-configs",
            "offset.storage.topic": f"{group}-offsets",
            "status.storage.topic": f"{group}-status",
            "key.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        },
    )
    try:
        copycat.start()
        for via in range(2):
            assert sorted(copycat.request("GET", "/connectors", via).json()) == [
                "idle",
                "sink",
                "src",
            ]
            for name, config in configs.items():
                assert copycat.request("GET", f"/connectors/{name}/config", via).json() == config
        copycat.wait_running("idle", 1, state="PAUSED")
        copycat.wait_running("src", 1)
        copycat.wait_running("sink", 1)
        with source_file.open("a") as fh:
            fh.write(_lines(LINES_BEFORE, LINES_BEFORE + LINES_AFTER))
        total = LINES_BEFORE + LINES_AFTER
        wait_until(
            lambda: len(sink_file.read_text().splitlines()) >= total, 90, "the appended lines"
        )
        time.sleep(1)  # anything duplicated would arrive now
        assert sink_file.read_text() == _lines(0, total)  # the sink: nothing twice, nothing lost
        records = read_all(apache_kafka.bootstrap_servers, topic, total)
        payloads = [json.loads(m.value())["payload"] for m in records]
        assert payloads == _lines(0, total).splitlines()  # the source: resumed at its offset
        status = httpx.get(f"{copycat.urls[0]}/connectors/src/status", timeout=30).json()
        assert status["connector"]["worker_id"] in {copycat.worker_id(i) for i in range(2)}
    finally:
        copycat.stop()
