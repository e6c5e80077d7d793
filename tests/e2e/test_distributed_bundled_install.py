"""A distributed worker whose plugin.path lacks the bundled plugins joins its group only once
it has installed and scanned them, as Kafka Connect scans its plugins before it joins.

The bug: a fourth worker started with an empty plugin.path installed the bundled plugins on a
background thread and joined the group meanwhile; the rebalance gave it a FileStreamSink task,
which went FAILED ("no connector plugin named 'FileStreamSink' is installed; available: none")
and stayed FAILED after the plugins appeared. /health said healthy before the install ended.

The install is made measurably slower than the join by a real means: a cold bundled
wheelhouse (``$COPYCAT_BUNDLED_WHEELHOUSE`` an empty directory), so the worker builds the
bundled wheels before it installs them, as on a first start after an upgrade.
"""

from __future__ import annotations

import re
import signal
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.bundled import WHEELHOUSE_ENV, missing_bundled
from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import DistributedCluster, worker_props
from tests.support.processes import CliWorker, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.apache_kafka_only(reason="distributed mode reads Kafka's high watermarks"),
]

TASKS = 3
# A first start with a cold wheelhouse: four wheel builds and four env installs on a busy
# machine, then the join and the rebalance that hands the new worker its tasks.
SETTLE_S = 180.0


@pytest.fixture
def cluster(
    broker: KafkaCluster, bundled_plugin_path: Path, tmp_path: Path
) -> Iterator[DistributedCluster]:
    cluster = DistributedCluster(tmp_path, broker.bootstrap_servers, bundled_plugin_path, 1)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def test_a_worker_installing_the_bundled_plugins_takes_no_task_before_they_are_there(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    topic = f"bundled-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, TASKS)
    sink = tmp_path / "sink.txt"
    cluster.create(
        "snk",
        {
            "connector.class": "FileStreamSink",
            "tasks.max": str(TASKS),
            "topics": topic,
            "file": str(sink),
        },
    )
    cluster.wait_running("snk", TASKS)

    empty = tmp_path / "fresh-plugins"
    empty.mkdir()
    cold = tmp_path / "cold-wheelhouse"
    cold.mkdir()
    (tmp_path / "fresh-worker").mkdir()
    fresh = CliWorker(
        tmp_path / "fresh-worker",
        {**cluster.props, "plugin.path": str(empty)},
        mode="distributed",
        env={WHEELHOUSE_ENV: str(cold)},
    )
    cluster.workers.append(fresh)  # stopped with the cluster
    fresh.spawn().wait_listening(60)
    assert missing_bundled(empty), "the install ended before the test could look"

    # Every task state any worker reports, from now until the new worker runs its share.
    failed: list[dict[str, Any]] = []
    healthy_too_early: list[tuple[int, str]] = []
    starting: list[str] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.2):
            for via in range(len(cluster.workers)):
                for task in cluster.status("snk", via=via).get("tasks", []):
                    if task["state"] == "FAILED" and task not in failed:
                        failed.append(task)
            installing = bool(missing_bundled(empty))
            response = httpx.get(fresh.url + "/health", timeout=30)
            if installing and response.status_code == 200:
                healthy_too_early.append((response.status_code, response.text))
            if response.status_code == 503:
                starting.append(response.json()["message"])

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        # A request that needs the plugins waits for them, as Kafka's REST is not up before
        # its plugins are scanned: the bundled ones are listed, never "available: none".
        plugins = httpx.get(fresh.url + "/connector-plugins", timeout=SETTLE_S)
        assert plugins.status_code == 200, plugins.text
        assert "copycat_file.sink.FileStreamSinkConnector" in {
            p["class"] for p in plugins.json()
        }, plugins.text
        mine = fresh.url.removeprefix("http://")

        def fresh_runs_tasks() -> dict[str, Any] | None:
            status = cluster.status("snk")
            tasks = status.get("tasks", [])
            running = [t for t in tasks if t["state"] == "RUNNING"]
            if len(running) == TASKS and any(t["worker_id"] == mine for t in running):
                return status
            return None

        status = wait_until(
            lambda: failed or fresh_runs_tasks(), SETTLE_S, "the new worker running tasks"
        )
    finally:
        stop.set()
        watcher.join(60)
    assert not failed, f"tasks failed on the new worker: {failed}\n{cluster.warnings()}"
    assert not healthy_too_early, healthy_too_early
    # KIP-1017's 503 while it cannot run work yet, saying why.
    assert any("installing the bundled plugins" in m for m in starting), starting
    assert isinstance(status, dict)
    assert not missing_bundled(empty)
    log = fresh.text()
    joined = re.search(r"rebalance \d+ done", log)
    assert joined is not None, log
    installed = log.rfind("installed the bundled plugins")
    assert 0 <= installed < joined.start(), log


@pytest.mark.parametrize("mode", ["distributed", "standalone"])
def test_a_worker_stopped_while_it_installs_the_bundled_plugins_stops_at_once(
    broker: KafkaCluster, tmp_path: Path, mode: str
) -> None:
    """SIGTERM while a first start waits for the bundled plugins' install: the worker went on
    waiting until the install ended (up to 120 s with a slow index), then stopped; Kafka
    Connect exits at once on a signal during its plugin scan. It now stops without waiting
    (the install is left unfinished) and never joins its group."""
    empty = tmp_path / "fresh-plugins"
    empty.mkdir()
    cold = tmp_path / "cold-wheelhouse"
    cold.mkdir()
    group = f"stop-install-{uuid.uuid4().hex[:8]}"
    props = worker_props(broker.bootstrap_servers, group, empty)
    if mode == "standalone":
        props["offset.storage.file.filename"] = str(tmp_path / "connect.offsets")
    worker = CliWorker(tmp_path, props, mode=mode, env={WHEELHOUSE_ENV: str(cold)})
    try:
        worker.spawn().wait_listening(60)
        wait_until(
            lambda: "installing the bundled plugins" in httpx.get(worker.url + "/health").text,
            60,
            "/health to say the worker is installing the bundled plugins",
        )
        assert worker.proc is not None
        worker.proc.send_signal(signal.SIGTERM)
        assert worker.wait(30) == 0, worker.text()
        # It stopped waiting (the install may still end during the shutdown that follows).
        assert "stopping: the worker takes no work" in worker.text(), worker.text()
        assert "rebalance" not in worker.text()
    finally:
        worker.close()
