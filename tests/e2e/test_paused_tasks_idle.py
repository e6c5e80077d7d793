"""A paused task costs (almost) nothing, and pause, resume and stop still act at once; a
resume (or pause) of a STOPPED connector answers before the connector has started.

A paused source task's iteration returns at once with nothing moved, and its driver waited
only the idle backoff (10 ms) before the next: ~100 round trips a second to its plugin host
per paused source, more CPU than a running idle task. Kafka's WorkerTask.awaitUnpause()
waits until resumed or stopped.

A resume of a STOPPED connector answered only once the connector had started (its start()
may take long); Kafka's herder writes the target state and answers 202 at once.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import read_all
from tests.support.processes import host_pids, wait_until
from tests.support.rest import BOTH_DATA_PATHS, RestWorker, module_worker

pytestmark = pytest.mark.integration

# How long a paused task is watched, and the CPU it may use meanwhile (its host's, its
# driver thread's): a few ticks of librdkafka's own housekeeping. Spinning, each used
# ~0.04-0.1 CPU s a second.
WATCH_S = 4.0
PAUSED_CPU_S = 0.04
# How soon a resume or stop must take effect (the task's status, its thread's end).
ACTS_WITHIN_S = 1.0
SLOW_START_MS = 6_000


worker = module_worker("paused", faulty=True)


def _cpu_s(stat: Path) -> float:
    """User + system CPU seconds of a process or thread so far (its /proc stat file)."""
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _driver_thread(task: str) -> threading.Thread:
    """The worker's driver thread of ``task`` (this process runs the worker)."""
    (thread,) = [t for t in threading.enumerate() if t.name == f"task-{task}"]
    return thread


def _state(http: Any, name: str) -> tuple[str, list[str]]:
    status = http.get(f"/connectors/{name}/status").json()
    return status["connector"]["state"], [t["state"] for t in status["tasks"]]


@BOTH_DATA_PATHS
def test_a_paused_source_task_waits_without_spinning(
    worker: RestWorker, broker: KafkaCluster, topic_name: str, tmp_path: Path
) -> None:
    broker.create_topic(topic_name, 1)
    source = tmp_path / "in.txt"
    source.write_text("one\n")
    http = worker.client()
    name = f"paused-source-{topic_name}"
    config = {"connector.class": "FileStreamSource", "file": str(source), "topic": topic_name}
    assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
    read_all(broker.bootstrap_servers, topic_name, 1)
    assert http.put(f"/connectors/{name}/pause").status_code == 202
    wait_until(lambda: _state(http, name) == ("PAUSED", ["PAUSED"]), 30, "the task to pause")

    (host,) = host_pids(f"{name}-0")
    host_stat = Path(f"/proc/{host}/stat")
    thread = _driver_thread(f"{name}-0")
    thread_stat = Path(f"/proc/self/task/{thread.native_id}/stat")
    host_before, thread_before = _cpu_s(host_stat), _cpu_s(thread_stat)
    time.sleep(WATCH_S)
    host_used = _cpu_s(host_stat) - host_before
    thread_used = _cpu_s(thread_stat) - thread_before
    assert host_used <= PAUSED_CPU_S and thread_used <= PAUSED_CPU_S, (
        f"paused for {WATCH_S} s, the task's host used {host_used:.2f} CPU s and its driver "
        f"thread {thread_used:.2f}: it spins"
    )

    # Resumed: RUNNING at once, and the line written meanwhile is sent.
    with source.open("a") as f:
        f.write("two\n")
    asked = time.monotonic()
    assert http.put(f"/connectors/{name}/resume").status_code == 202
    wait_until(lambda: _state(http, name)[1] == ["RUNNING"], 30, "the task to resume")
    assert time.monotonic() - asked < ACTS_WITHIN_S, "the resume waited for the pause to end"
    values = [m.value() for m in read_all(broker.bootstrap_servers, topic_name, 2)]
    assert values == [b"one", b"two"]

    # Paused again, then deleted: the driver thread ends without waiting out the pause.
    assert http.put(f"/connectors/{name}/pause").status_code == 202
    wait_until(lambda: _state(http, name) == ("PAUSED", ["PAUSED"]), 30, "the task to pause")
    thread = _driver_thread(f"{name}-0")
    time.sleep(0.2)  # in its paused wait
    asked = time.monotonic()
    assert http.delete(f"/connectors/{name}").status_code == 204
    thread.join(30)
    assert not thread.is_alive()
    # Its stop is a graceful one (a final commit): well within the graceful timeout.
    graceful_s = int(worker.props["task.shutdown.graceful.timeout.ms"]) / 1000
    assert time.monotonic() - asked < graceful_s


@pytest.mark.parametrize("previous", ["resume", "pause"])
def test_a_stopped_connector_resumed_answers_before_it_has_started(
    worker: RestWorker, topic_name: str, previous: str
) -> None:
    http = worker.client()
    name = f"slow-start-{previous}-{topic_name}"
    config = {
        "connector.class": "FaultySource",
        "topic": topic_name,
        "connector.start.ms": str(SLOW_START_MS),
    }
    assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
    wait_until(lambda: _state(http, name)[0] == "RUNNING", 30, "the connector to run")
    assert http.put(f"/connectors/{name}/stop").status_code == 204
    assert _state(http, name) == ("STOPPED", [])

    asked = time.monotonic()
    answer = http.put(f"/connectors/{name}/{previous}")
    took = time.monotonic() - asked
    assert answer.status_code == 202, answer.text
    assert took < SLOW_START_MS / 1000 / 3, (
        f"PUT /{previous} of a STOPPED connector answered after {took:.1f} s: it waited for "
        f"the connector's start ({SLOW_START_MS} ms)"
    )
    expected = "RUNNING" if previous == "resume" else "PAUSED"
    wait_until(
        lambda: _state(http, name)[0] == expected,
        SLOW_START_MS / 1000 + 30,
        f"the connector to be {expected}",
    )
    if previous == "resume":
        wait_until(lambda: _state(http, name)[1] == ["RUNNING"], 30, "its task to run")
    # Still answered at once: an unknown connector.
    assert http.put(f"/connectors/no-such-{name}/{previous}").status_code == 404
    assert http.delete(f"/connectors/{name}").status_code == 204
