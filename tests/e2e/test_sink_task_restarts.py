"""A sink task restarted several times in quick succession keeps consuming.

On the dev broker a consumer that left its group while its JoinGroup was still held by the
broker (about half the session timeout) stayed in the group for good, as the leader of every
later generation: the next task waited for that leader's assignment for ever, RUNNING and
reading nothing, also after stop/resume (see docs/architecture.md, dev broker section).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import produce
from tests.support.processes import wait_until
from tests.support.rest import RestWorker

pytestmark = pytest.mark.integration

# Three restarts 0.3 s apart, as found: the second and third stop a task whose join is held.
RESTARTS = 3
RESTART_GAP_S = 0.3


@pytest.fixture(scope="module")
def worker(
    tmp_path_factory: pytest.TempPathFactory, broker: KafkaCluster, bundled_plugin_path: Path
) -> Iterator[RestWorker]:
    bootstrap_servers = broker.bootstrap_servers
    tmp = tmp_path_factory.mktemp("restarts")
    # The worker's default graceful timeout (5 s), as a user's standalone worker has it.
    extra = {"task.shutdown.graceful.timeout.ms": "5000"}
    if broker.kind == "dev-broker":  # as the embedded dev broker's WORKER_DEFAULTS set it
        extra["sink.group.join.finish.before.close"] = "true"
    with RestWorker(tmp, bootstrap_servers, bundled_plugin_path, extra) as w:
        yield w


@pytest.mark.also_on_dev_broker
def test_a_sink_task_restarted_quickly_several_times_goes_on_consuming(
    worker: RestWorker, broker: KafkaCluster, topic_name: str, tmp_path: Path
) -> None:
    broker.create_topic(topic_name, 1)
    out = tmp_path / "out.txt"
    http = worker.client()
    name = f"restarted-{topic_name}"
    config = {"connector.class": "FileStreamSink", "topics": topic_name, "file": str(out)}

    def lines() -> int:
        return len(out.read_text().splitlines()) if out.exists() else 0

    produce(broker.bootstrap_servers, topic_name, [f"before {i}".encode() for i in range(10)])
    assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
    wait_until(lambda: lines() >= 10, 60, "the first 10 lines")
    for _ in range(RESTARTS):
        assert http.post(f"/connectors/{name}/tasks/0/restart").status_code == 204
        time.sleep(RESTART_GAP_S)
    produce(broker.bootstrap_servers, topic_name, [f"after {i}".encode() for i in range(10)])
    # A join takes about 3 s on the dev broker (half the 6 s session timeout).
    wait_until(lambda: lines() >= 20, 30, "the 10 lines produced after the restarts")
    assert out.read_text().splitlines()[-10:] == [f"after {i}" for i in range(10)]
    assert not [line for line in worker.log_lines if "group join is still in progress" in line]
    http.delete(f"/connectors/{name}")


def test_restarted_tasks_run_the_connector_config_as_resolved_at_their_restart(
    broker: KafkaCluster, bundled_plugin_path: Path, topic_name: str, tmp_path: Path
) -> None:
    """Standalone: each task restarted on its own (POST .../tasks/<n>/restart) starts from
    the connector config resolved now, as Kafka's standalone herder starts it from the
    current config: a transform's field taken from a config provider follows the file. Before,
    the worker started both tasks from the config its connector instance had resolved at its
    start (the tasks' own configs, resolved afresh, were mixed with it)."""
    broker.create_topic(topic_name, 2)
    secret = tmp_path / "hoist.properties"
    secret.write_text("field=first\n")
    out = tmp_path / "out.txt"
    name = f"resolved-{topic_name}"
    config = {
        "connector.class": "FileStreamSink",
        "topics": topic_name,
        "file": str(out),
        "tasks.max": "2",
        "transforms": "h",
        "transforms.h.type": "org.apache.kafka.connect.transforms.HoistField$Value",
        "transforms.h.field": f"${{file:{secret}:field}}",
    }
    extra = {"config.providers": "file", "config.providers.file.class": "FileConfigProvider"}
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})

    def produce_to_both(prefix: str) -> None:
        for partition in (0, 1):
            for i in range(20):
                producer.produce(
                    topic_name, f"{prefix}-{partition}-{i}".encode(), partition=partition
                )
        assert producer.flush(30) == 0

    def lines(prefix: str) -> list[str]:
        text = out.read_text() if out.exists() else ""
        return [line for line in text.splitlines() if f"={prefix}-" in line]

    with RestWorker(tmp_path / "worker", broker.bootstrap_servers, bundled_plugin_path, extra) as w:
        http = w.client()
        assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
        produce_to_both("before")
        wait_until(lambda: len(lines("before")) == 40, 60, "40 lines before the restarts")
        secret.write_text("field=second\n")
        for task in (0, 1):
            assert http.post(f"/connectors/{name}/tasks/{task}/restart").status_code == 204
        produce_to_both("after")
        wait_until(lambda: len(lines("after")) == 40, 60, "40 lines after the restarts")
        http.delete(f"/connectors/{name}")
    assert {line.partition("=")[0] for line in lines("before")} == {"Struct{first"}
    assert {line.partition("=")[0] for line in lines("after")} == {"Struct{second"}
