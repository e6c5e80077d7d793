"""KIP-1004, ``tasks.max`` enforcement, on Copycat and on Apache Kafka Connect 4.1.1 standalone
workers side by side, with a source connector of each (``CountSource``: Java in
``tests/differential/java``, compiled here for a worker of Kafka Connect's own; Python, in a
test plugin for Copycat's) that generates ``task.count`` task configs whatever ``tasks.max``
says.

Kafka's Worker checks the count when the connector generates its task configs: more than
``tasks.max`` with ``tasks.max.enforce`` true (the default) fails the connector with "The
connector <name> has generated 2 tasks, which is greater than 1, the maximum number of tasks
it is configured to create. ..." and no task config is stored. ``tasks.max.enforce=false``
only logs a warning: every generated task runs. Set to true again, the connector fails and the
tasks already running run on; restarted with its tasks, each task finds more task configs
stored than ``tasks.max`` and fails with the same message. All of this is the same on both.

Two differences, kept (docs/rest.md, "Differences from Kafka"): Kafka Connect's standalone
worker never answers a create or config ``PUT`` that makes the connector generate too many
tasks (its REST timeout answers 500 "Request timed out" after 90 s, the connector created or
updated all the same, and FAILED); Copycat answers 201/200 at once. And Kafka's standalone
restart starts the connector again without asking it for task configs, so it is RUNNING beside
its FAILED tasks; Copycat's asks, and the connector is FAILED again, saying why.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import (
    SCENARIO_TIMEOUT_S,
    Peer,
    delete,
    standalone_peers,
    wait_running,
)
from tests.support.kafka_jars import kafka_classpath
from tests.support.plugins import catalogue_with
from tests.support.rest import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

JAVA_SOURCES = Path(__file__).parent / "java" / "kip1004"

COUNT_PLUGIN = """
import time
from plugin_api import ConfigDef, SourceConnector, SourceTask


class CountTask(SourceTask):
    def version(self):
        return "1.0"

    def start(self, props):
        pass

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
        count = int(self.props.get("task.count", max_tasks))
        return [{"task": str(i)} for i in range(count)]

    def stop(self):
        pass

    def config(self):
        return ConfigDef()
"""

TOO_MANY = (
    "The connector {name} has generated 2 tasks, which is greater than 1, the maximum number "
    "of tasks it is configured to create. This behaviour should be considered a bug and is "
    "disallowed. If necessary, it can be permitted by reconfiguring the connector with "
    "'tasks.max.enforce' set to false; however, this option will be removed in a future "
    "release of Kafka Connect."
)


def _java_plugin_path(work: Path) -> Path:
    """A plugin.path holding the Java CountSource, compiled against Kafka's jars."""
    javac = shutil.which("javac")
    # The JDK (Java 17) runs Kafka Connect here too: a missing javac is a broken machine.
    assert javac is not None, "compiling the Java CountSource needs a JDK's javac on PATH"
    plugins = work / "plugins"
    subprocess.run(
        [
            javac,
            "--release",
            "17",
            "-d",
            str(plugins / "count-source"),
            "-cp",
            f"{kafka_classpath()}/*",
            *(str(p) for p in sorted(JAVA_SOURCES.glob("*.java"))),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return plugins


@pytest.fixture(scope="module")
def peers(
    apache_kafka: KafkaCluster, bundled_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Peer, Peer]]:
    """(Copycat, Kafka Connect), each with its CountSource installed."""
    work = tmp_path_factory.mktemp("count-source")
    catalogue_with(
        bundled_plugin_path,
        work,
        "count-source-plugin",
        {"count_source_plugin.py": COUNT_PLUGIN},
        {"CountSource": "count_source_plugin:CountSource"},
    )
    with standalone_peers(
        apache_kafka.bootstrap_servers,
        bundled_plugin_path,
        tmp_path_factory,
        {},
        copycat={"plugin.path": f"{bundled_plugin_path},{work / 'pp'}"},
        kafka_connect={"plugin.path": str(_java_plugin_path(work))},
    ) as both:
        yield both


def _seen(client: httpx.Client, name: str, connector: str, tasks: list[str]) -> dict[str, Any]:
    """The status once the connector is in state ``connector`` and its tasks in ``tasks``:
    those states, and whether each FAILED one's trace holds Kafka's message."""

    def settled() -> dict[str, Any] | None:
        response = client.get(f"/connectors/{name}/status")
        if response.status_code != 200:
            return None
        status: dict[str, Any] = response.json()
        states = [t["state"] for t in status["tasks"]]
        if status["connector"]["state"] != connector or states != tasks:
            return None
        return status

    status: dict[str, Any] = wait_for(
        settled, SCENARIO_TIMEOUT_S, f"{client.base_url} {name}: {connector}, tasks {tasks}"
    )
    message = TOO_MANY.format(name=name)
    entries = [status["connector"], *status["tasks"]]
    return {
        "states": [e["state"] for e in entries],
        "traces with the message": [
            message in e.get("trace", "") for e in entries if e["state"] == "FAILED"
        ],
        "task configs": len(client.get(f"/connectors/{name}/tasks").json()),
    }


def _answer(client: httpx.Client, method: str, path: str, body: Any, patient: bool) -> Any:
    """The status code of a request that makes the connector generate too many tasks; None
    when an impatient caller gave up waiting (Kafka Connect's standalone worker holds such a
    request until its 90 s REST timeout, then answers 500 "Request timed out")."""
    try:
        return client.request(method, path, json=body, timeout=60 if patient else 10).status_code
    except httpx.ReadTimeout:
        if patient:
            raise
        return None


def _enforced(peer: Peer, patient: bool, restarted: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the worker showed at each step, and its answers to the requests that made the
    connector generate too many tasks. ``restarted``: the connector's state expected after a
    restart with its tasks (Kafka Connect's standalone worker starts it again without asking
    it for task configs: RUNNING; Copycat's asks, and it fails again)."""
    name = f"kip1004-{peer.name.split()[0].lower()}"
    config = {"connector.class": "CountSource", "tasks.max": "1", "task.count": "2"}
    seen: dict[str, Any] = {}
    answers: dict[str, Any] = {}
    with peer.client() as client:
        body = {"name": name, "config": config}
        answers["create"] = _answer(client, "POST", "/connectors", body, patient)
        try:
            seen["created"] = _seen(client, name, "FAILED", [])
            put = client.put(
                f"/connectors/{name}/config", json={**config, "tasks.max.enforce": "false"}
            )
            seen["enforce false"] = put.status_code
            wait_running(client, name, 2)
            seen["not enforced"] = _seen(client, name, "RUNNING", ["RUNNING", "RUNNING"])
            path, enforced = f"/connectors/{name}/config", {**config, "tasks.max.enforce": "true"}
            answers["enforce true"] = _answer(client, "PUT", path, enforced, patient)
            seen["enforced again"] = _seen(client, name, "FAILED", ["RUNNING", "RUNNING"])
            restart = client.post(f"/connectors/{name}/restart?includeTasks=true")
            seen["restart"] = restart.status_code
            seen["restarted"] = _seen(client, name, restarted, ["FAILED", "FAILED"])
        finally:
            delete(client, name)
    return seen, answers


def test_a_connector_generating_more_tasks_than_tasks_max_fails_as_in_kafka_connect(
    peers: tuple[Peer, Peer],
) -> None:
    copycat, kafka_connect = peers
    ours, our_answers = _enforced(copycat, patient=True, restarted="FAILED")
    theirs, _ = _enforced(kafka_connect, patient=False, restarted="RUNNING")
    # Copycat answers at once, the connector created or updated (and FAILED).
    assert our_answers == {"create": 201, "enforce true": 200}
    # After the restart, the connector's state differs (see _enforced): its trace with it.
    assert ours["restarted"].pop("traces with the message") == [True] * 3
    assert theirs["restarted"].pop("traces with the message") == [True] * 2
    ours["restarted"]["states"][0] = theirs["restarted"]["states"][0] = "<connector>"
    assert ours == theirs
    assert theirs == {
        "created": {"states": ["FAILED"], "traces with the message": [True], "task configs": 0},
        "enforce false": 200,
        "not enforced": {
            "states": ["RUNNING"] * 3,
            "traces with the message": [],
            "task configs": 2,
        },
        "enforced again": {
            "states": ["FAILED", "RUNNING", "RUNNING"],
            "traces with the message": [True],
            "task configs": 2,
        },
        "restart": 202,
        "restarted": {"states": ["<connector>", "FAILED", "FAILED"], "task configs": 2},
    }
