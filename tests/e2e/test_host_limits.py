"""Bounded resources per plugin host: memory (plugin.host.memory.max.bytes) and log output."""

from __future__ import annotations

import re
import time

import pytest

from isolation.host import OUTPUT_BURST_LINES, OUTPUT_LINES_PER_S
from tests.support.processes import assert_data_path, host_pids, wait_until
from tests.support.rest import BOTH_DATA_PATHS, RestWorker, module_worker

pytestmark = pytest.mark.integration

MEMORY_LIMIT = 512 * 1024 * 1024


# Every test here runs a task, in both places its data path can run (BOTH_DATA_PATHS).
worker = module_worker("limits", faulty=True)


@BOTH_DATA_PATHS
def test_a_host_over_its_memory_limit_fails_its_task_with_that_reason(
    worker: RestWorker, topic_name: str
) -> None:
    http = worker.client()
    name = f"hog-{topic_name}"
    config = {
        "connector.class": "FaultySource",
        "topic": topic_name,
        "allocate.mb.per.poll": "64",
        "plugin.host.memory.max.bytes": str(MEMORY_LIMIT),
    }
    assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
    status = wait_until(
        lambda: (
            (s := http.get(f"/connectors/{name}/status").json())["tasks"]
            and s["tasks"][0]["state"] == "FAILED"
            and s
        ),
        60,
        "the memory hog to fail",
    )
    trace = status["tasks"][0]["trace"]
    assert f"out of memory (plugin.host.memory.max.bytes={MEMORY_LIMIT})" in trace
    assert status["connector"]["state"] == "RUNNING"  # the connector's own host is fine
    assert worker.herder.worker is not None
    runner = worker.herder.worker.connectors[name].tasks[0]
    assert runner.spec.data_path == worker.props["task.data.path"]  # it ran where asked
    wait_until(lambda: not host_pids(f"{name}-0"), 10, "the task's host to be gone")
    # Without the limit the same task keeps running (the worker default is 0: none).
    assert http.delete(f"/connectors/{name}").status_code == 204


def test_a_memory_limit_too_small_to_start_a_host_says_so(
    worker: RestWorker, topic_name: str
) -> None:
    """A limit below what the interpreter needs to start fails the connector's host while it
    loads (a shared library that cannot be mapped): the reason is the limit, not an
    ImportError the user cannot place."""
    http = worker.client()
    name = f"tiny-{topic_name}"
    config = {
        "connector.class": "FaultySource",
        "topic": topic_name,
        "plugin.host.memory.max.bytes": "20000000",
    }
    assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
    status = wait_until(
        lambda: (
            (s := http.get(f"/connectors/{name}/status").json())["connector"]["state"] == "FAILED"
            and s
        ),
        60,
        "the connector to fail",
    )
    trace = status["connector"]["trace"]
    assert "out of memory (plugin.host.memory.max.bytes=20000000)" in trace, trace
    assert http.delete(f"/connectors/{name}").status_code == 204


@BOTH_DATA_PATHS
def test_plugin_output_is_relayed_at_a_bounded_rate(worker: RestWorker, topic_name: str) -> None:
    http = worker.client()
    name = f"chatty-{topic_name}"
    config = {"connector.class": "FaultySource", "topic": topic_name, "print.per.poll": "2000"}
    started = time.monotonic()
    assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
    wait_until(
        lambda: any("lines not logged" in line and name in line for line in worker.log_lines),
        60,
        "the relay to report dropped lines",
    )
    assert_data_path(f"{name}-0", worker.props["task.data.path"])
    time.sleep(2)
    http.delete(f"/connectors/{name}")
    elapsed = time.monotonic() - started
    relayed = [
        line
        for line in worker.log_lines
        if re.search(rf"copycat\.plugin\.{name}-0: faulty output", line)
    ]
    # The host printed tens of thousands of lines a second; the log got at most the burst
    # plus the steady rate over the test's duration.
    assert relayed
    assert len(relayed) <= OUTPUT_BURST_LINES + OUTPUT_LINES_PER_S * elapsed + 10
