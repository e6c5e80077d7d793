"""A connector's task configs against its ``tasks.max`` (KIP-1004) and a connector whose
``task_configs()`` raises, through ``copycat distributed`` workers on Apache Kafka, with a test
plugin whose connector generates ``task.count`` task configs whatever ``tasks.max`` says.

Kafka's Worker checks ``tasks.max`` both when a connector generates task configs and when each
task starts (against the task configs stored): configs stored before ``tasks.max.enforce`` was
set, or written by another worker, start no task beyond it. And Kafka's DistributedHerder
retries a connector whose ``task_configs()`` raised, with exponential backoff, rather than
failing it: only too many tasks fail it. A standalone worker (one test) retries the same way.

Before the fix, a restart (or a worker reading such configs from its config topic) started
every stored task, with enforcement on; and a connector whose ``task_configs()`` raised once
was FAILED for good, its tasks never updated once the cause was gone.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import DistributedCluster
from tests.support.plugins import catalogue_with
from tests.support.processes import CliWorker, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.apache_kafka_only(reason="distributed mode reads Kafka's high watermarks"),
]

# A source connector generating ``task.count`` task configs (``tasks.max`` if unset), each
# naming the connector's ``generation``; its task_configs() raises while the file named by
# ``fail.if`` exists (the cause of a failure, removable without a config change).
TASK_COUNT_PLUGIN = """
import os, time
from plugin_api import ConfigDef, ConnectException, SourceConnector, SourceTask


class CountTask(SourceTask):
    def version(self):
        return "1.0"

    def start(self, props):
        self.props = props

    def poll(self):
        time.sleep(0.1)
        return []

    def stop(self):
        pass


class CountSource(SourceConnector):
    def version(self):
        return "1.0"

    def start(self, props):
        self.props = dict(props)

    def task_class(self):
        return CountTask

    def task_configs(self, max_tasks):
        fail = self.props.get("fail.if")
        if fail and os.path.exists(fail):
            raise ConnectException(f"no task configs while {fail} exists")
        count = int(self.props.get("task.count", max_tasks))
        generation = self.props.get("generation", "0")
        return [{"task": str(i), "generation": generation} for i in range(count)]

    def stop(self):
        pass

    def config(self):
        return ConfigDef()
"""
TASK_CLASS = "taskcount_plugin.CountTask"
TOO_MANY = (
    "The connector {name} has generated 2 tasks, which is greater than 1, the maximum number "
    "of tasks it is configured to create."
)
RETRYING = "Failed to reconfigure connector's tasks ({name}), retrying after backoff."
# A status read while the connector's task_configs() keeps failing: the retries run between
# the connector's other operations, never holding them up for their backoff.
RESPONSIVE_S = 2.0


@pytest.fixture(scope="module")
def plugin_path(bundled_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("taskcount")
    catalogue_with(
        bundled_plugin_path,
        work,
        "taskcount-plugin",
        {"taskcount_plugin.py": TASK_COUNT_PLUGIN},
        {"CountSource": "taskcount_plugin:CountSource"},
    )
    return work / "pp"


def _cluster(
    tmp: Path, broker: KafkaCluster, bundled: Path, plugin_path: Path, group: str | None = None
) -> DistributedCluster:
    return DistributedCluster(
        tmp,
        broker.bootstrap_servers,
        bundled,
        1,
        group=group,
        extra={"plugin.path": f"{bundled},{plugin_path}"},
    )


@pytest.fixture(scope="module")
def cluster(
    broker: KafkaCluster,
    bundled_plugin_path: Path,
    plugin_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[DistributedCluster]:
    cluster = _cluster(tmp_path_factory.mktemp("cluster"), broker, bundled_plugin_path, plugin_path)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _settled(
    cluster: DistributedCluster, name: str, connector: str, tasks: list[str]
) -> dict[str, Any] | None:
    status = cluster.status(name)
    if not status or status["connector"]["state"] != connector:
        return None
    return status if [t["state"] for t in status["tasks"]] == tasks else None


def _wait_settled(
    cluster: DistributedCluster, name: str, connector: str, tasks: list[str]
) -> dict[str, Any]:
    found: dict[str, Any] = wait_until(
        lambda: _settled(cluster, name, connector, tasks),
        60,
        f"{name}: connector {connector}, tasks {tasks}",
    )
    return found


def test_stored_task_configs_beyond_tasks_max_fail_their_tasks_once_enforced(
    cluster: DistributedCluster,
) -> None:
    name = "enforce-later"
    config = {
        "connector.class": "CountSource",
        "tasks.max": "1",
        "task.count": "2",
        "tasks.max.enforce": "false",
    }
    cluster.create(name, config)
    _wait_settled(cluster, name, "RUNNING", ["RUNNING", "RUNNING"])
    log = cluster.workers[0].text()
    assert f"The connector {name} has generated 2 tasks, which is greater than 1" in log
    assert "will be disallowed in future releases of Kafka Connect" in log

    patched = cluster.request(
        "PATCH", f"/connectors/{name}/config", json={"tasks.max.enforce": "true"}
    )
    assert patched.status_code == 200, patched.text
    # The connector fails; the tasks already running run on, as in Kafka.
    status = _wait_settled(cluster, name, "FAILED", ["RUNNING", "RUNNING"])
    assert TOO_MANY.format(name=name) in status["connector"]["trace"]

    restarted = cluster.request("POST", f"/connectors/{name}/restart?includeTasks=true")
    assert restarted.status_code == 202, restarted.text
    # Restarted, each task finds 2 task configs stored for a tasks.max of 1: FAILED.
    status = _wait_settled(cluster, name, "FAILED", ["FAILED", "FAILED"])
    for task in status["tasks"]:
        assert TOO_MANY.format(name=name) in task["trace"]
    assert TOO_MANY.format(name=name) in status["connector"]["trace"]


def test_a_worker_reading_too_many_stored_task_configs_fails_the_connector_and_its_tasks(
    broker: KafkaCluster, bundled_plugin_path: Path, plugin_path: Path, tmp_path: Path
) -> None:
    # Kafka's ConnectWorkerIntegrationTest.testTasksMaxEnforcement: the records written
    # straight to a fresh config topic, then a worker starts on it.
    name = "stored-too-many"
    cluster = _cluster(tmp_path, broker, bundled_plugin_path, plugin_path)
    topic = f"{cluster.group}-configs"
    broker.create_topic(topic, 1, {"cleanup.policy": "compact"})
    connector = {
        "name": name,
        "connector.class": "CountSource",
        "tasks.max": "1",
        "task.count": "2",
    }
    records = [
        (f"connector-{name}", {"properties": connector}),
        *(
            (f"task-{name}-{i}", {"properties": {"task.class": TASK_CLASS, "task": str(i)}})
            for i in range(2)
        ),
        (f"commit-{name}", {"tasks": 2}),
    ]
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for key, value in records:
        producer.produce(topic, key=key.encode(), value=json.dumps(value).encode())
    assert producer.flush(30) == 0
    try:
        cluster.start()
        status = _wait_settled(cluster, name, "FAILED", ["FAILED", "FAILED"])
        assert TOO_MANY.format(name=name) in status["connector"]["trace"]
        for task in status["tasks"]:
            assert TOO_MANY.format(name=name) in task["trace"]
    finally:
        cluster.stop()


def _retries_logged(cluster: DistributedCluster, name: str) -> int:
    return cluster.workers[0].text().count(RETRYING.format(name=name))


def _failed(cluster: DistributedCluster, name: str) -> bool:
    return bool(cluster.status(name).get("connector", {}).get("state") == "FAILED")


def _task_generations(cluster: DistributedCluster, name: str) -> list[str]:
    tasks = cluster.request("GET", f"/connectors/{name}/tasks").json()
    return [t["config"]["generation"] for t in tasks]


def test_a_connector_whose_task_configs_raise_is_retried_not_failed(
    cluster: DistributedCluster, tmp_path: Path
) -> None:
    name = "raises-then-recovers"
    cause = tmp_path / "fail"  # while it exists, the connector's task_configs() raises
    config = {"connector.class": "CountSource", "tasks.max": "2", "fail.if": str(cause)}
    cluster.create(name, config)
    _wait_settled(cluster, name, "RUNNING", ["RUNNING", "RUNNING"])
    assert _task_generations(cluster, name) == ["0", "0"]

    cause.touch()
    patched = cluster.request("PATCH", f"/connectors/{name}/config", json={"generation": "1"})
    assert patched.status_code == 200, patched.text
    wait_until(
        lambda: _retries_logged(cluster, name) >= 3 or _failed(cluster, name),
        30,
        "three attempts logged",
    )
    # Not FAILED: the old tasks run on while the connector is asked again and again.
    assert _settled(cluster, name, "RUNNING", ["RUNNING", "RUNNING"]), cluster.status(name)
    assert _retries_logged(cluster, name) >= 3
    assert _task_generations(cluster, name) == ["0", "0"]
    began = time.monotonic()
    assert cluster.status(name)["connector"]["state"] == "RUNNING"
    assert time.monotonic() - began < RESPONSIVE_S

    cause.unlink()
    # The next attempt (the backoff is still short) publishes the new generation's tasks.
    wait_until(lambda: _task_generations(cluster, name) == ["1", "1"], 30, "generation 1")
    _wait_settled(cluster, name, "RUNNING", ["RUNNING", "RUNNING"])
    settled = _retries_logged(cluster, name)
    time.sleep(3)
    assert _retries_logged(cluster, name) == settled  # the retries ended with the success


def test_the_retries_end_when_the_connector_is_deleted(
    cluster: DistributedCluster, tmp_path: Path
) -> None:
    name = "raises-then-deleted"
    cause = tmp_path / "fail"
    cause.touch()
    config = {"connector.class": "CountSource", "tasks.max": "1", "fail.if": str(cause)}
    cluster.create(name, config)
    wait_until(
        lambda: _retries_logged(cluster, name) >= 2 or _failed(cluster, name),
        30,
        "two attempts logged",
    )
    assert cluster.status(name)["connector"]["state"] == "RUNNING"
    assert cluster.request("DELETE", f"/connectors/{name}").status_code == 204
    wait_until(lambda: not cluster.status(name), 30, f"{name} gone")
    deleted = _retries_logged(cluster, name)
    time.sleep(5)  # attempts 3 and 4 would have come by now (after 1 s and 2 s)
    assert _retries_logged(cluster, name) == deleted


def _standalone_props(
    broker: KafkaCluster, bundled_plugin_path: Path, plugin_path: Path, tmp_path: Path
) -> dict[str, str]:
    """A standalone worker file with the test plugin beside the bundled ones."""
    return {
        "bootstrap.servers": broker.bootstrap_servers,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "offset.storage.file.filename": str(tmp_path / "connect.offsets"),
        "plugin.path": f"{bundled_plugin_path},{plugin_path}",
        "listeners": "http://127.0.0.1:0",
    }


def test_a_standalone_connector_whose_task_configs_raise_is_retried_too(
    broker: KafkaCluster, bundled_plugin_path: Path, plugin_path: Path, tmp_path: Path
) -> None:
    # The herder logic is shared: a standalone worker retries the same way (Kafka's standalone
    # herder loses the error instead, see docs/operator-guide.md).
    name = "standalone-raises"
    cause = tmp_path / "fail"
    cause.touch()
    props = _standalone_props(broker, bundled_plugin_path, plugin_path, tmp_path)
    with CliWorker(tmp_path, props) as worker, worker.client() as rest:
        config = {"connector.class": "CountSource", "tasks.max": "2", "fail.if": str(cause)}
        created = rest.post("/connectors", json={"name": name, "config": config})
        assert created.status_code == 201, created.text

        def status() -> dict[str, Any]:
            found: dict[str, Any] = rest.get(f"/connectors/{name}/status").json()
            return found

        wait_until(
            lambda: (
                worker.text().count(RETRYING.format(name=name)) >= 2
                or status()["connector"]["state"] == "FAILED"
            ),
            30,
            "two attempts logged",
        )
        assert status()["connector"]["state"] == "RUNNING", status()
        assert status()["tasks"] == []
        cause.unlink()
        wait_until(
            lambda: [t["state"] for t in status()["tasks"]] == ["RUNNING", "RUNNING"],
            30,
            "the tasks of the retry that worked",
        )
        assert status()["connector"]["state"] == "RUNNING"


def test_a_restart_starts_a_new_backoff_and_leaves_no_timer_behind(
    broker: KafkaCluster, bundled_plugin_path: Path, plugin_path: Path, tmp_path: Path
) -> None:
    """Each restart of a connector whose task_configs() raises counted as one more failure in
    a row (after 30 restarts: "Attempt 22 in 60 s"), and left the superseded retry's timer
    thread asleep for up to 60 s (the worker's threads went 7 -> 36 after 30 restarts). As
    Kafka's, a restart starts a new chain at the shortest backoff, and the superseded timer
    ends at once."""
    name = "restarted-raises"
    cause = tmp_path / "fail"
    cause.touch()
    props = _standalone_props(broker, bundled_plugin_path, plugin_path, tmp_path)
    first = RETRYING.format(name=name) + " Attempt 1 in 0.25 s"
    restarts = 10
    with CliWorker(tmp_path, props) as worker, worker.client() as rest:
        config = {"connector.class": "CountSource", "tasks.max": "1", "fail.if": str(cause)}
        assert rest.post("/connectors", json={"name": name, "config": config}).status_code == 201
        wait_until(
            lambda: worker.text().count(RETRYING.format(name=name)) >= 3, 30, "three attempts"
        )
        assert worker.proc is not None
        threads = Path(f"/proc/{worker.proc.pid}/task")
        before = len(list(threads.iterdir()))
        for _ in range(restarts):
            assert rest.post(f"/connectors/{name}/restart").status_code == 204
        wait_until(
            lambda: worker.text().count(first) >= 1 + restarts,
            30,
            "each restart's first attempt at the shortest backoff",
        )
        after = len(list(threads.iterdir()))
        assert after < before + restarts // 2, (before, after)
