"""A sink connector whose ``task_configs()`` returns ``[{}]`` (Kafka's
EmptyTaskConfigsConnector) reconfigured over REST, through a ``copycat standalone`` and a
``copycat distributed`` worker on Apache Kafka: the tasks follow the new connector config
although the connector itself hands them the same (empty) config every time.

* ``topics`` is the runtime's, not the connector's: Kafka's Worker.connectorTaskConfigs copies
  ``topics`` / ``topics.regex`` into every sink task config, so a new topic list changes the
  task configs and restarts the tasks. Before the fix they were not copied: after a PUT from
  topic A to topic B the task went on reading A only (distributed mode); standalone mode
  restarted it, but ``GET /connectors/{name}/tasks`` showed no ``topics``.
* A new converter leaves the task configs as they were; Kafka 4.1 restarts the tasks all the
  same, as the connector config they were generated from ("applied") is no longer the current
  one (KAFKA-9228, AbstractHerder.taskConfigsChanged). Before the fix a task FAILED on a value
  its old JsonConverter could not read stayed FAILED after a PUT with StringConverter
  (distributed mode; standalone mode already compared the configs).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer

from registry import install
from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import worker_props
from tests.support.processes import CliWorker, wait_until
from tests.support.wheels import build_wheel

pytestmark = [
    pytest.mark.integration,
    pytest.mark.apache_kafka_only(reason="distributed mode reads Kafka's high watermarks"),
]

# Writes each record to <out>/<topic>.txt as it gets it: the task config is empty, so where
# it writes is the plugin's, and what it read from which topic is the file's name.
EMPTY_CONFIGS_SINK = """
import os

from plugin_api import ConfigDef, SinkConnector, SinkTask

OUT = {out!r}


class EmptyConfigsSinkTask(SinkTask):
    def start(self, props):
        self.props = dict(props)

    def put(self, records):
        for r in records:
            with open(os.path.join(OUT, r.topic + ".txt"), "a") as out:
                out.write(f"{{r.value}}\\n")

    def stop(self):
        pass


class EmptyConfigsSink(SinkConnector):
    def start(self, props):
        pass

    def task_class(self):
        return EmptyConfigsSinkTask

    def task_configs(self, n):
        return [{{}}]

    def stop(self):
        pass

    def config(self):
        return ConfigDef()
"""


JSON_VALUES = {
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}
STRING_VALUES = {"value.converter": "org.apache.kafka.connect.storage.StringConverter"}


@pytest.fixture(scope="module", params=["standalone", "distributed"])
def worker(
    request: pytest.FixtureRequest,
    broker: KafkaCluster,
    bundled_plugin_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[CliWorker, Path]]:
    """One worker of each mode with the test sink installed; the directory its tasks write to."""
    tmp = tmp_path_factory.mktemp(f"reconfigure-{request.param}")
    out = tmp / "out"
    out.mkdir()
    wheel = build_wheel(
        tmp / "wheel",
        "empty-configs-sink",
        "1.0",
        {"empty_configs_sink.py": EMPTY_CONFIGS_SINK.format(out=str(out))},
        entry_points={
            "copycat.connectors": {"EmptyConfigsSink": "empty_configs_sink:EmptyConfigsSink"}
        },
    )
    plugins = tmp / "plugins"
    install(str(wheel), plugins, offline=True)
    group = f"reconfigure-{tmp.name}"
    props = worker_props(
        broker.bootstrap_servers,
        group,
        bundled_plugin_path,
        {"plugin.path": f"{bundled_plugin_path},{plugins}"},
    )
    if request.param == "standalone":
        props["offset.storage.file.filename"] = str(tmp / "connect.offsets")
    (tmp / "worker").mkdir()
    cli = CliWorker(tmp / "worker", props, mode=request.param)
    try:
        yield cli.start(), out
    finally:
        cli.close()


def _put(url: str, name: str, config: dict[str, str]) -> None:
    response = httpx.put(f"{url}/connectors/{name}/config", json=config, timeout=90)
    assert response.status_code in (200, 201), response.text


def _status(url: str, name: str) -> dict[str, Any]:
    response = httpx.get(f"{url}/connectors/{name}/status", timeout=30)
    return response.json() if response.status_code == 200 else {}


def _task_state(url: str, name: str) -> str | None:
    tasks = _status(url, name).get("tasks", [])
    return tasks[0]["state"] if len(tasks) == 1 else None


def _produce(bootstrap: str, topic: str, value: bytes) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, value)
    producer.flush(10)


def _written(out: Path, topic: str) -> list[str]:
    path = out / f"{topic}.txt"
    return path.read_text().splitlines() if path.exists() else []


def test_a_new_topic_list_moves_the_tasks_of_a_connector_giving_empty_task_configs(
    worker: tuple[CliWorker, Path], broker: KafkaCluster, topic_name: str
) -> None:
    cli, out = worker
    name = f"topics-{topic_name}"
    old, new = f"{topic_name}-a", f"{topic_name}-b"
    for topic in (old, new):
        broker.create_topic(topic, 1)
    config = {"connector.class": "EmptyConfigsSink", "tasks.max": "1", "topics": old}
    _put(cli.url, name, config)
    _produce(broker.bootstrap_servers, old, b"a-before")
    wait_until(lambda: _written(out, old) == ["a-before"], 60, f"a-before read from {old}")

    _put(cli.url, name, {**config, "topics": new})
    _produce(broker.bootstrap_servers, new, b"b-after")
    wait_until(
        lambda: _written(out, new) == ["b-after"], 60, f"b-after read from {new}\n{cli.text()}"
    )
    _produce(broker.bootstrap_servers, old, b"a-after")
    _produce(broker.bootstrap_servers, new, b"b-last")
    # Read after a-after was produced: a task still reading the old topic had it written by now.
    wait_until(lambda: _written(out, new) == ["b-after", "b-last"], 60, "b-last")
    assert _written(out, old) == ["a-before"]
    tasks = httpx.get(f"{cli.url}/connectors/{name}/tasks", timeout=30).json()
    assert [t["config"].get("topics") for t in tasks] == [new]
    assert _task_state(cli.url, name) == "RUNNING"


def test_a_new_converter_restarts_tasks_whose_configs_stay_the_same(
    worker: tuple[CliWorker, Path], broker: KafkaCluster, topic_name: str
) -> None:
    cli, out = worker
    name = f"converter-{topic_name}"
    broker.create_topic(topic_name, 1)
    config = {
        "connector.class": "EmptyConfigsSink",
        "tasks.max": "1",
        "topics": topic_name,
        **JSON_VALUES,
    }
    _put(cli.url, name, config)
    _produce(broker.bootstrap_servers, topic_name, b"not json")
    wait_until(lambda: _task_state(cli.url, name) == "FAILED", 60, "the task FAILED")
    before = httpx.get(f"{cli.url}/connectors/{name}/tasks", timeout=30).json()

    _put(cli.url, name, {**config, **STRING_VALUES})
    wait_until(
        lambda: _written(out, topic_name) == ["not json"],
        60,
        "the value read with StringConverter",
    )
    assert _task_state(cli.url, name) == "RUNNING"
    # The connector handed its task the same config: only the connector config changed.
    assert httpx.get(f"{cli.url}/connectors/{name}/tasks", timeout=30).json() == before
