"""``copycat standalone`` with ``task.runtime=spark`` as an operator runs it: a worker process
in a session of its own (a terminal's foreground job, a systemd unit), stopped by a signal to
its whole process group, as a Ctrl-C or systemd's default ``KillMode=control-group`` sends.

Shown here: a Ctrl-C stops the Spark-run tasks gracefully, with their final offset commit,
before Spark stops (the Spark driver JVM and the local cluster it starts are in a session of
their own, so only the worker stops them), and so does systemd's SIGTERM to the group; nothing
of the worker's tree outlives it (a ``kill -9`` of a worker is
tests/e2e/test_distributed_spark.py's); a bad ``spark.master`` ends the worker with one line
naming the key.
"""

from __future__ import annotations

import json
import re
import signal
import time
import uuid
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import read_all
from tests.support.processes import CliWorker, wait_until
from tests.support.spark import descendants, executor_jvm_of, remove_work_dirs

pytestmark = [pytest.mark.integration, pytest.mark.spark]

# A worker process that makes its SparkSession (driver JVM, the local cluster's master and
# worker, an executor JVM) on a busy 2-core machine.
WORKER_START_S = 180.0
# A task's first start on Spark (job, Python worker, env built offline on the executor).
TASK_START_S = 120.0
# A graceful stop: tasks stop (final commits), then the SparkSession.
STOP_S = 120.0
LINES = 50_000
_APPLICATION = re.compile(r"Spark runtime ready: application (\S+)")


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _props(tmp: Path, bootstrap: str, plugin_path: Path, master: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "offset.storage.file.filename": str(tmp / "connect.offsets"),
        # Only the stop's final commit can store the position (the worker lives < 60 s).
        "offset.flush.interval.ms": "60000",
        "plugin.path": str(plugin_path),
        "listeners": "http://127.0.0.1:0",
        "task.runtime": "spark",
        "spark.master": master,
        "spark.driver.host": "127.0.0.1",
        "task.spark.heartbeat.interval.ms": "500",
    }


def _task_on_spark(worker: CliWorker, name: str) -> bool:
    try:
        tasks = httpx.get(f"{worker.url}/connectors/{name}/status", timeout=10).json()["tasks"]
    except (httpx.HTTPError, KeyError, ValueError):
        return False
    return bool(tasks) and tasks[0]["state"] == "RUNNING" and "Spark" in tasks[0]["worker_id"]


def _task_metric(worker: CliWorker, metric: str, connector: str) -> float | None:
    """A source-task-metrics value of task 0 on the worker's ``GET /metrics``."""
    text = httpx.get(f"{worker.url}/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if (
                sample.name == f"kafka_connect_source_task_{metric}"
                and sample.labels.get("connector") == connector
                and sample.labels.get("task") == "0"
            ):
                return float(sample.value)
    return None


def test_ctrl_c_or_sigterm_to_the_process_group_commits_final_offsets_and_leaves_nothing(
    tmp_path: Path,
    broker: KafkaCluster,
    bundled_plugin_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")  # the local cluster binds to loopback
    source = tmp_path / "in.txt"
    source.write_text("".join(f"line-{i:07d}\n" for i in range(LINES)))
    topic = f"ctrl-c-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    name = f"src-{topic}"
    connector = {
        "name": name,
        "connector.class": "FileStreamSource",
        "file": str(source),
        "topic": topic,
        "batch.size": "5000",
    }
    props = _props(
        tmp_path, broker.bootstrap_servers, bundled_plugin_path, "local-cluster[1,1,1024]"
    )
    worker = CliWorker(tmp_path, props, [connector])
    try:
        worker.start(WORKER_START_S)
        assert worker.proc is not None
        wait_until(lambda: _task_on_spark(worker, name), TASK_START_S, f"{name}-0 on Spark")
        assert len(read_all(broker.bootstrap_servers, topic, LINES, timeout_s=120)) == LINES
        # The executor's counters reach the worker's metrics with its heartbeats.
        wait_until(
            lambda: _task_metric(worker, "source_record_write_total", name) == LINES,
            30,
            "the Spark task's source-record-write-total on the worker's /metrics",
        )
        assert _task_metric(worker, "source_record_poll_total", name) == LINES
        tree = descendants(worker.proc.pid)
        assert any(executor_jvm_of(p) for p in tree), "the task's executor is not the worker's"

        worker.signal_group(signal.SIGINT)  # Ctrl-C
        assert worker.wait(STOP_S) == 0, worker.text()
        stored = json.loads((tmp_path / "connect.offsets").read_text())["offsets"]
        key = json.dumps([name, {"filename": str(source)}], separators=(",", ":"))
        assert stored.get(key) == {"position": source.stat().st_size}, "the final commit"
        wait_until(lambda: not any(_alive(p) for p in tree), 60, "no process of the worker left")
        text = worker.text()
        assert "Closing down clientserver connection" not in text  # py4j at INFO
        assert "[Stage " not in text  # Spark's console progress bar

        # Started again, the source resumes at the end of the file: no line twice. Then
        # systemd's stop (SIGTERM to the unit's whole control group) is as graceful.
        mark = len(text)
        worker.start(WORKER_START_S)
        wait_until(lambda: _task_on_spark(worker, name), TASK_START_S, f"{name}-0 on Spark")
        time.sleep(3)
        assert len(read_all(broker.bootstrap_servers, topic, LINES)) == LINES, "duplicates"
        tree = descendants(worker.proc.pid)
        worker.signal_group(signal.SIGTERM)
        assert worker.wait(STOP_S) == 0, worker.text()[mark:]
        assert "Traceback" not in worker.text()[mark:], worker.text()[mark:]
        wait_until(lambda: not any(_alive(p) for p in tree), 60, "no process of the worker left")
    finally:
        worker.close()
        remove_work_dirs(_APPLICATION.findall(worker.text()))


def test_a_malformed_spark_master_ends_the_worker_with_one_line_naming_the_key(
    tmp_path: Path, broker: KafkaCluster, bundled_plugin_path: Path
) -> None:
    props = _props(tmp_path, broker.bootstrap_servers, bundled_plugin_path, "bogus-master")
    worker = CliWorker(tmp_path, props)
    try:
        worker.spawn()
        assert worker.wait(STOP_S) == 1
        text = worker.text()
        errors = [line for line in text.splitlines() if line.startswith("copycat: error:")]
        assert len(errors) == 1, text
        assert "Invalid value bogus-master for configuration spark.master" in errors[0]
        assert "Master must either be yarn or start with spark, k8s, or local" in errors[0]
        assert "Traceback" not in text and "\tat org.apache" not in text, text
    finally:
        worker.close()
