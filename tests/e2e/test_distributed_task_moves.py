"""What REST says about tasks a rebalance moves, with real ``copycat distributed`` workers on
Apache Kafka, as Kafka Connect says it.

Kafka Connect's status store ignores a stopping task's UNASSIGNED over a RUNNING of the same or
a newer generation (KafkaStatusBackingStore.readTaskStatus, KAFKA-12525), its worker stops
revoked tasks before it adopts the new generation, and a task writes nothing before it has
started: a task that a worker joining the group takes over, when it started in the generation
before, reads RUNNING (its old worker's) until it reads RUNNING (its new worker's). Copycat
showed such tasks UNASSIGNED for the seconds between the revocation and the new host's start,
so an "all tasks RUNNING" check failed on every scale-out (found side by side with Kafka
Connect 4.1.1 by an exploratory tester).

A restart with its tasks (KIP-745) is Kafka's DistributedHerder.doRestartConnectorAndTasks:
stop, then RESTARTING, then start, so a task that runs in the worker's generation reads
RUNNING, RESTARTING, RUNNING (its stop's UNASSIGNED is ignored over its RUNNING, and its start
writes nothing before RUNNING). Copycat wrote RESTARTING first, so its tasks read RESTARTING,
UNASSIGNED (for the new host's start), RUNNING.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import DistributedCluster
from tests.support.processes import wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.apache_kafka_only(reason="distributed mode reads Kafka's high watermarks"),
]

CONNECTORS = 3
TASKS = 2
# A worker joining: two rebalances (revoke, then assign) and the new tasks' host starts.
MOVE_TIMEOUT_S = 120.0
# How often REST is asked: a task's host starts in ~0.3 s even when the machine is idle.
POLL_S = 0.05


@pytest.fixture
def cluster(
    broker: KafkaCluster, bundled_plugin_path: Path, tmp_path: Path
) -> Iterator[DistributedCluster]:
    cluster = DistributedCluster(tmp_path, broker.bootstrap_servers, bundled_plugin_path, 1)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _task_states(url: str, connectors: bool = False) -> dict[str, tuple[str, str]] | None:
    """``{"<connector>-<task>": (state, worker_id)}`` as worker ``url`` says, with
    ``connectors`` each connector's too (under its name); None if it does not answer."""
    try:
        response = httpx.get(f"{url}/connectors?expand=status", timeout=30)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    states = {
        f"{name}-{task['id']}": (task["state"], task["worker_id"])
        for name, entry in response.json().items()
        for task in entry["status"]["tasks"]
    }
    if connectors:
        for name, entry in response.json().items():
            states[name] = (
                entry["status"]["connector"]["state"],
                entry["status"]["connector"]["worker_id"],
            )
    return states


class _Poller:
    """REST's statuses, asked every POLL_S on a thread of its own while in use."""

    def __init__(self, url: str, connectors: bool = False) -> None:
        self.url, self.connectors = url, connectors
        self.seen: list[tuple[float, dict[str, tuple[str, str]]]] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._done.is_set():
            states = _task_states(self.url, self.connectors)
            if states is not None:
                self.seen.append((time.monotonic(), states))
            time.sleep(POLL_S)

    def __enter__(self) -> _Poller:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join(30)

    def sequence(self, key: str) -> list[str]:
        """The states ``key`` went through, each once in a row."""
        states: list[str] = []
        for _, seen in list(self.seen):
            state = seen.get(key, ("(missing)", ""))[0]
            if not states or states[-1] != state:
                states.append(state)
        return states


def test_tasks_a_joining_worker_takes_over_read_running_throughout(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    topic = f"moves-{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic, TASKS)
    names = [f"{topic}-{i}" for i in range(CONNECTORS)]
    for name in names:
        config = {
            "connector.class": "FileStreamSink",
            "tasks.max": str(TASKS),
            "topics": topic,
            "file": str(tmp_path / f"{name}.txt"),
        }
        cluster.create(name, config)
    for name in names:
        cluster.wait_running(name, TASKS)
    # Each task's RUNNING in the generation the worker is in now (the connectors above were
    # created over several rebalances, and a task that ran through one reads UNASSIGNED once
    # stopped, in Kafka Connect too): restarted in place, which moves nothing.
    for name in names:
        response = cluster.request("POST", f"/connectors/{name}/restart?includeTasks=true", 0)
        assert response.status_code == 202, response.text
    for name in names:
        cluster.wait_running(name, TASKS)
    old = cluster.worker_id(0)
    before = _task_states(cluster.urls[0])
    assert before is not None and len(before) == CONNECTORS * TASKS
    assert {where for _, where in before.values()} == {old}

    with _Poller(cluster.urls[0]) as poller:
        joined = cluster.add_worker()
        new = cluster.worker_id(joined)

        def moved() -> bool:
            states = _task_states(cluster.urls[0])
            return bool(
                states
                and len(states) == CONNECTORS * TASKS
                and all(state == "RUNNING" for state, _ in states.values())
                and any(where == new for _, where in states.values())
            )

        wait_until(moved, MOVE_TIMEOUT_S, "tasks running on the joining worker")
    seen = poller.seen
    assert len(seen) > 20, "REST was asked too seldom to tell"
    # Every task, every time REST was asked: listed, and RUNNING on its old or new worker.
    odd = [
        (round(t - seen[0][0], 2), task, state)
        for t, states in seen
        for task in before
        if (state := states.get(task, ("(missing)", "")))[0] != "RUNNING"
        or state[1] not in (old, new)
    ]
    assert not odd, f"tasks not RUNNING while they moved (seconds, task, status): {odd[:10]}"


def test_a_restart_with_tasks_reads_running_restarting_running(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    topic = f"restarts-{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic, TASKS)
    name = topic
    config = {
        "connector.class": "FileStreamSink",
        "tasks.max": str(TASKS),
        "topics": topic,
        "file": str(tmp_path / f"{name}.txt"),
    }
    cluster.create(name, config)
    cluster.wait_running(name, TASKS)
    restart = f"/connectors/{name}/restart?includeTasks=true"
    # Once, so that every task's RUNNING is of the worker's present generation (a task that
    # ran through a rebalance reads UNASSIGNED once stopped, in Kafka Connect too).
    assert cluster.request("POST", restart).status_code == 202
    cluster.wait_running(name, TASKS)
    keys = [name] + [f"{name}-{task}" for task in range(TASKS)]
    with _Poller(cluster.urls[0], connectors=True) as poller:
        wait_until(lambda: poller.seen, 30, "REST's answer before the restart")
        response = cluster.request("POST", restart)
        assert response.status_code == 202, response.text

        def restarted() -> bool:
            """Everything left RUNNING (REST is asked often enough to see it) and is back."""
            sequences = [poller.sequence(key) for key in keys]
            return all(len(states) > 1 and states[-1] == "RUNNING" for states in sequences)

        wait_until(restarted, MOVE_TIMEOUT_S, "the restart seen, then everything RUNNING")
    sequences = {key: poller.sequence(key) for key in keys}
    odd = {
        k: states
        for k, states in sequences.items()
        if states != ["RUNNING", "RESTARTING", "RUNNING"]
    }
    assert not odd, f"states other than RUNNING, RESTARTING, RUNNING on REST: {odd}"
