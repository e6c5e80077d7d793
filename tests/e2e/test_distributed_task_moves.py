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


def _task_states(url: str) -> dict[str, tuple[str, str]] | None:
    try:
        response = httpx.get(f"{url}/connectors?expand=status", timeout=30)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    return {
        f"{name}-{task['id']}": (task["state"], task["worker_id"])
        for name, entry in response.json().items()
        for task in entry["status"]["tasks"]
    }


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

    seen: list[tuple[float, dict[str, tuple[str, str]]]] = []
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            states = _task_states(cluster.urls[0])
            if states is not None:
                seen.append((time.monotonic(), states))
            time.sleep(POLL_S)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
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
    finally:
        done.set()
        poller.join(30)
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
