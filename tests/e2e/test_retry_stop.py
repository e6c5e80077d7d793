"""A task retrying a RetriableException stops at once when asked (errors.retry.timeout).

A converter or transform whose backend is down (the Avro converter while the schema registry
is) raises RetriableException on every attempt; with ``errors.retry.timeout=-1`` (or a long
one) the record is retried, with backoff waits, for as long as that lasts. A stop (a task
restart over REST, a delete, a rebalance, the worker's shutdown) used to wait for the whole
retry inside the plugin host: it ran out the graceful timeout, and the host was SIGKILLed.
Kafka's RetryWithToleranceOperator waits on a latch that its task's stop triggers; here the
worker tells the host, whose backoff wait ends at once. The record being retried is not
delivered: a source's is not sent (its offset not committed), a sink's offset is not committed,
so it is read and put again after the restart (at-least-once).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.kafka import produce
from tests.support.processes import assert_data_path, wait_until
from tests.support.rest import BOTH_DATA_PATHS, RestWorker, module_worker

pytestmark = pytest.mark.integration

GRACEFUL_MS = 8_000
# A stop that ends the retry at once: well within the graceful timeout, which is what a stop
# that waits for the retry takes (and then kills the host).
PROMPT_S = 3.0
RETRYING = "faulty: retriable failure in transform.apply"


worker = module_worker(
    "retry-stop", {"task.shutdown.graceful.timeout.ms": str(GRACEFUL_MS)}, faulty=True
)


def _status(http: httpx.Client, name: str) -> dict[str, Any]:
    return http.get(f"/connectors/{name}/status").json()  # type: ignore[no-any-return]


def _task_state(http: httpx.Client, name: str) -> str | None:
    tasks = _status(http, name).get("tasks") or [{}]
    return tasks[0].get("state")  # type: ignore[no-any-return]


def _retries(worker: RestWorker, task: str, since: int = 0) -> int:
    """How many failed attempts ``task``'s transform has printed since log line ``since``."""
    return sum(
        1
        for line in worker.log_lines[since:]
        if RETRYING in line and f"copycat.plugin.{task}" in line
    )


@BOTH_DATA_PATHS
@pytest.mark.parametrize("kind", ["FaultySource", "FaultySink"])
def test_a_restart_ends_a_retry_at_once_and_the_record_is_not_lost(
    worker: RestWorker, bootstrap_servers: str, topic_name: str, tmp_path: Path, kind: str
) -> None:
    http = worker.client()
    name = f"retry-{kind[6:].lower()}-{uuid.uuid4().hex[:6]}"
    task = f"{name}-0"
    down = tmp_path / "backend-down"
    down.touch()
    put_log = tmp_path / "put.log"
    config = {
        "connector.class": kind,
        "tasks.max": "1",
        "transforms": "f",
        "transforms.f.type": "FaultyTransform",
        "transforms.f.retriable.fail.if": str(down),
    }
    if kind == "FaultySource":
        config |= {"topic": topic_name, "records.per.poll": "1", "errors.retry.timeout": "-1"}
    else:
        produce(bootstrap_servers, topic_name, [b"the record being retried"])
        config |= {
            "topics": topic_name,
            "put.log": str(put_log),
            "errors.retry.timeout": "120000",
        }
    assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
    wait_until(lambda: _retries(worker, task) >= 2, 60, f"{task} to retry its record")
    assert_data_path(task, worker.props["task.data.path"])
    assert _task_state(http, name) == "RUNNING"

    mark = len(worker.log_lines)
    started = time.monotonic()
    response = http.post(f"/connectors/{name}/tasks/0/restart")
    took = time.monotonic() - started
    assert response.status_code == 204, response.text
    stop_lines = [line for line in worker.log_lines[mark:] if task in line]
    killed = [
        line
        for line in stop_lines
        if "Graceful stop" in line or "killing its plugin host" in line or "SIGKILL" in line
    ]
    assert not killed, killed
    assert took < PROMPT_S, f"the restart took {took:.1f} s (graceful timeout {GRACEFUL_MS} ms)"

    # The new instance runs (the stopped one's UNASSIGNED was written before the restart
    # answered), and retries the same record: nothing of it was delivered.
    wait_until(lambda: _task_state(http, name) == "RUNNING", 30, f"{task} to run again")
    running = len(worker.log_lines)
    wait_until(lambda: _retries(worker, task, running) >= 1, 60, f"{task} to retry again")
    assert not put_log.exists()

    down.unlink()  # the backend is back
    if kind == "FaultySink":
        # Its offset was not committed at the stop: read again, and put now.
        wait_until(lambda: put_log.exists() and put_log.read_text().split(), 60, "the put")
        assert put_log.read_text().split() == ["1"]
    wait_until(lambda: _task_state(http, name) == "RUNNING", 30, f"{task} to run on")
    assert http.delete(f"/connectors/{name}").status_code == 204
