"""A source task whose topic is deleted while it writes, on a broker that does not create
topics on first use.

Found by an exploratory comparison with Kafka Connect 4.1.1: Kafka's producer waits for the
topic to come back (its send() blocks on metadata and its delivery timeout is unbounded), so
no line is lost. librdkafka gives the queued records up once the cluster says the topic is
gone ("Local: Unknown partition"); under errors.tolerance=all Copycat skipped them as records
the broker refused and committed its offsets past them: a 90 s deletion lost 3,945 lines
with the task RUNNING. Such a record is not refused, its topic is missing: the task fails,
its offsets stop at the last acknowledged record, and a restart sends the rest again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.apache_kafka import KafkaCluster, needs_own_apache_kafka, own_apache_kafka
from tests.support.differential import FILE_SOURCE, read_records, task_state
from tests.support.kafka import wait_for
from tests.support.rest import RestWorker

pytestmark = [
    pytest.mark.integration,
    needs_own_apache_kafka("deletes a topic on a broker that does not create topics"),
]

STRINGS = "org.apache.kafka.connect.storage.StringConverter"


@pytest.fixture(scope="module")
def no_auto_create(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    with own_apache_kafka(
        tmp_path_factory.mktemp("no-auto-create"), {"auto.create.topics.enable": "false"}
    ) as kafka:
        yield KafkaCluster(kafka.bootstrap_servers)


def test_records_for_a_deleted_topic_fail_the_task_under_tolerance_all(
    no_auto_create: KafkaCluster,
    bundled_plugin_path: Path,
    tmp_path: Path,
) -> None:
    broker, topic = no_auto_create, "deleted-under-source"
    broker.create_topic(topic, 1)
    source = tmp_path / "in.txt"
    source.write_text("".join(f"a{i}\n" for i in range(5)))
    with RestWorker(tmp_path, broker.bootstrap_servers, bundled_plugin_path) as worker:
        config = {
            "connector.class": FILE_SOURCE,
            "file": str(source),
            "topic": topic,
            "tasks.max": "1",
            "value.converter": STRINGS,
            "errors.tolerance": "all",
            # librdkafka gives records for a vanished topic up after these (30 s and 5 min by
            # default, counted from the producer's first use of the topic).
            "producer.override.topic.metadata.propagation.max.ms": "1000",
            "producer.override.topic.metadata.refresh.interval.ms": "1000",
        }
        with worker.client() as client:
            response = client.post("/connectors", json={"name": "deleted", "config": config})
            assert response.status_code == 201, response.text
            assert len(read_records(broker.bootstrap_servers, topic, 5)) == 5
            broker.delete_topics([topic])
            with source.open("a") as appended:
                appended.write("".join(f"b{i}\n" for i in range(5)))

            def outcome() -> str | None:
                if task_state(client, "deleted", "FAILED") is not None:
                    return "FAILED"
                if any("failed to send" in line for line in worker.log_lines):
                    return "skipped"
                return None

            assert wait_for(outcome, 120, "the queued records given up") == "FAILED"
            status = task_state(client, "deleted", "FAILED")
            assert status is not None
            assert "Unknown partition" in status["tasks"][0]["trace"]
            offsets = client.get("/connectors/deleted/offsets").json()["offsets"]
            # Only the acknowledged lines ("a0".."a4", 3 bytes each) are committed.
            assert [o["offset"] for o in offsets] in ([], [{"position": 15}])
