"""The Spark data plane in distributed mode: two ``copycat distributed`` worker processes with
``task.runtime=spark`` on Apache Kafka, each the driver of a Spark application of its own
(``local-cluster[1,2,1024]``: one executor JVM of two slots), running the tasks the group
assigned it as Spark jobs on its own executors.

Shown here: a task runs in an executor of its owning worker's application; a file source ->
topic -> file sink across the two workers delivers every line, through a ``kill -9`` of the
worker that runs the source (its driver, executors and plugin hosts die with it, the other
worker resumes the source from the offsets topic, its own task is not restarted); REST through
either worker acts on a Spark-run task within seconds, with a final offset commit on stop; and
switching a connector's runtime resumes where the other runtime stopped.

One cluster serves the module (a worker with its Spark application takes ~30 s to start on two
busy cores); the kill test runs last, as it leaves one worker. Each test deletes its connectors:
a task holds an executor slot while it runs, and each worker has two.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import DistributedCluster
from tests.support.kafka import read_all
from tests.support.probe_plugins import probe_plugins
from tests.support.processes import host_pids, wait_until
from tests.support.spark import ancestors, descendants, executor_jvm_of, remove_work_dirs

pytestmark = [
    pytest.mark.integration,
    pytest.mark.spark,
    pytest.mark.apache_kafka_only(reason="distributed mode reads Kafka's high watermarks"),
]

WORKERS = 2
# Each worker's Spark application: one executor JVM with two task slots, so the survivor of a
# kill can run both tasks of the pipeline.
SPARK_MASTER = "local-cluster[1,2,1024]"
# A worker process that makes its SparkSession (driver JVM, the local cluster's master and
# worker, an executor JVM) before it joins the group; two at once on a busy 2-core machine.
WORKER_START_S = 180.0
# A task's first start on Spark: job scheduling, a Python worker, the plugin env built offline
# with uv on the executor, the plugin host, the Kafka clients.
TASK_START_S = 120.0
# What REST control must take on a Spark-run task ("within seconds"), with slack for load.
CONTROL_S = 15.0
# A killed worker's tasks run elsewhere after session.timeout.ms (6 s) and
# scheduled.rebalance.max.delay.ms (5 s) in tests/support/distributed.py, plus a task start.
FAILOVER_S = 120.0
_WHERE = re.compile(
    r"executor (?P<executor>\S+) on (?P<host>\S+) \(Spark job group (?P<group>copycat-\S+), "
    r"driver (?P<driver>\S+)\)"
)
_APPLICATION = re.compile(r"Spark runtime ready: application (\S+)")


@dataclass
class SparkCluster:
    cluster: DistributedCluster
    probe: str  # the module of a probe source plugin (tests/support/probe_plugins.py)


@pytest.fixture(scope="module")
def spark_cluster(
    broker: KafkaCluster, bundled_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SparkCluster]:
    tmp = tmp_path_factory.mktemp("distributed-spark")
    probes = tmp / "probe-plugins"
    _, probe, _ = probe_plugins(tmp, probes)
    cluster = DistributedCluster(
        tmp,
        broker.bootstrap_servers,
        bundled_plugin_path,
        WORKERS,
        extra={
            "plugin.path": f"{bundled_plugin_path},{probes}",
            "task.runtime": "spark",
            "spark.master": SPARK_MASTER,
            "spark.driver.host": "127.0.0.1",
            "spark.ui.showConsoleProgress": "false",
            "spark.executorEnv.PYTHONUNBUFFERED": "1",
            "task.spark.heartbeat.interval.ms": "500",
        },
    )
    # Spark's own servers (the local cluster's master and workers) bind to loopback.
    previous = os.environ.get("SPARK_LOCAL_IP")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    try:
        for worker in cluster.workers:  # both at once: each makes its SparkSession
            worker.spawn()
        for worker in cluster.workers:
            worker.wait_ready(WORKER_START_S)
        yield SparkCluster(cluster, probe)
    finally:
        cluster.stop()
        if previous is None:
            os.environ.pop("SPARK_LOCAL_IP", None)
        else:
            os.environ["SPARK_LOCAL_IP"] = previous
        logs = [p.read_text(errors="replace") for p in tmp.glob("worker-*/worker.log")]
        remove_work_dirs([app for text in logs for app in _APPLICATION.findall(text)])


def _where(cluster: DistributedCluster, name: str, via: int = 0) -> dict[str, str]:
    """Where task 0 of ``name`` runs, from its status ``worker_id`` (empty if not on Spark)."""
    tasks = cluster.status(name, via).get("tasks") or [{}]
    found = _WHERE.fullmatch(tasks[0].get("worker_id", ""))
    return found.groupdict() if found else {}


def _owner(cluster: DistributedCluster, name: str) -> int:
    """The index of the worker whose Spark application runs task 0 of ``name``."""
    driver = _where(cluster, name)["driver"]
    return next(i for i in range(len(cluster.workers)) if cluster.worker_id(i) == driver)


def _running_on_spark(cluster: DistributedCluster, name: str, timeout_s: float) -> None:
    cluster.wait_running(name, 1, timeout_s)
    wait_until(lambda: _where(cluster, name), timeout_s, f"{name}-0 placed on an executor")


def _offsets(cluster: DistributedCluster, name: str, via: int) -> list[dict[str, Any]]:
    response = cluster.request("GET", f"/connectors/{name}/offsets", via)
    assert response.status_code == 200, response.text
    offsets: list[dict[str, Any]] = response.json()["offsets"]
    return offsets


def _delete(cluster: DistributedCluster, *names: str, via: int = 0) -> None:
    for name in names:
        assert cluster.request("DELETE", f"/connectors/{name}", via).status_code == 204
    for name in names:
        wait_until(partial(_no_hosts, name), CONTROL_S, f"{name}'s task hosts gone")


def _no_hosts(name: str) -> bool:
    return not host_pids(f"{name}-")


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_rest_through_either_worker_controls_a_spark_task_within_seconds(
    spark_cluster: SparkCluster, broker: KafkaCluster
) -> None:
    cluster, module = spark_cluster.cluster, spark_cluster.probe
    topic = f"{cluster.group}-control"
    broker.create_topic(topic, 1)
    name = f"control-{uuid.uuid4().hex[:6]}"
    taken: dict[str, float] = {}

    def timed(what: str, predicate: Any, timeout_s: float = CONTROL_S) -> None:
        began = time.monotonic()
        wait_until(predicate, timeout_s, what)
        taken[what] = round(time.monotonic() - began, 2)

    def numbers() -> list[int]:
        values = read_all(broker.bootstrap_servers, topic, 1)
        return [json.loads(m.value())["n"] for m in values]

    # A record every 50 ms, offsets committed every 500 ms (offset.flush.interval.ms): a stop
    # or restart without its final commit would send some numbers again.
    config = {"connector.class": f"{module}.Source", "topic": topic, "interval.ms": "50"}
    cluster.create(name, config, via=0)
    _running_on_spark(cluster, name, TASK_START_S)
    owner = _owner(cluster, name)
    other = 1 - owner
    wait_until(lambda: len(numbers()) >= 10, 60, "ten records")

    assert cluster.request("PUT", f"/connectors/{name}/pause", other).status_code == 202
    timed("paused", lambda: cluster.status(name, owner)["tasks"][0]["state"] == "PAUSED")
    time.sleep(1)  # a record in flight when the executor paused
    paused_at = len(numbers())
    time.sleep(2)
    assert len(numbers()) == paused_at, "records moved while paused"

    assert cluster.request("PUT", f"/connectors/{name}/resume", owner).status_code == 202
    timed("resume", lambda: len(numbers()) > paused_at)

    hosts = set(host_pids(f"{name}-0"))
    before = len(numbers())
    # Asked of the worker that does not run the task: forwarded to its owner.
    assert cluster.request("POST", f"/connectors/{name}/tasks/0/restart", other).status_code == 204
    timed(
        "restart",
        lambda: set(host_pids(f"{name}-0")) - hosts and len(numbers()) > before + 5,
    )

    assert cluster.request("PUT", f"/connectors/{name}/stop", other).status_code == 204
    timed("stop", lambda: cluster.status(name, owner)["connector"]["state"] == "STOPPED")
    timed("hosts gone after stop", lambda: not host_pids(f"{name}-0"))
    seen = numbers()
    # The stop's final commit reached the offsets topic: the last number sent, read back
    # through the other worker.
    stored = _offsets(cluster, name, other)
    assert [o["offset"] for o in stored] == [{"n": seen[-1]}], (stored, seen[-5:])
    assert seen == list(range(1, len(seen) + 1)), "a number repeated or skipped"

    assert cluster.request("PUT", f"/connectors/{name}/resume", other).status_code == 202
    timed("start after stop", lambda: len(numbers()) > len(seen), TASK_START_S)
    _running_on_spark(cluster, name, CONTROL_S)
    assert cluster.request("DELETE", f"/connectors/{name}", other).status_code == 204
    timed(
        "deleted", lambda: cluster.request("GET", f"/connectors/{name}", owner).status_code == 404
    )
    timed("hosts gone after delete", lambda: not host_pids(f"{name}-0"))
    final = numbers()
    assert final == list(range(1, len(final) + 1)), "a number repeated or skipped"
    print(f"\nREST control of a Spark task in distributed mode, seconds: {taken}")


def test_switching_a_connectors_runtime_resumes_where_the_other_stopped(
    spark_cluster: SparkCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    cluster = spark_cluster.cluster
    topic = f"{cluster.group}-switch"
    broker.create_topic(topic, 1)
    name = f"switch-{uuid.uuid4().hex[:6]}"
    source_file = tmp_path / "in.txt"
    written = 0

    def append(n: int) -> None:
        nonlocal written
        with open(source_file, "a") as fh:
            fh.writelines(f"line-{i:07d}\n" for i in range(written, written + n))
        written += n

    append(20_000)
    config = {"connector.class": "FileStreamSource", "file": str(source_file), "topic": topic}
    for step, runtime in enumerate(("local", "spark", "local")):
        via = step % WORKERS
        response = cluster.request(
            "PUT", f"/connectors/{name}/config", via, json={**config, "task.runtime": runtime}
        )
        assert response.status_code in (200, 201), response.text
        if step:
            assert cluster.request("PUT", f"/connectors/{name}/resume", via).status_code == 202
        status = cluster.wait_running(name, 1, TASK_START_S)
        on_spark = "Spark job group" in status["tasks"][0]["worker_id"]
        assert on_spark == (runtime == "spark"), status
        values = [
            m.value().decode()
            for m in read_all(broker.bootstrap_servers, topic, written, timeout_s=120)
        ]
        assert values == [f"line-{i:07d}" for i in range(written)], f"after {runtime}"
        assert cluster.request("PUT", f"/connectors/{name}/stop", via).status_code == 204
        cluster.wait_running(name, 0, CONTROL_S, state="STOPPED")
        # Whoever ran the task committed the whole file to the offsets topic on its stop.
        stored = _offsets(cluster, name, 1 - via)
        assert [o["offset"] for o in stored] == [{"position": source_file.stat().st_size}]
        append(10_000)
    _delete(cluster, name)


def test_tasks_moved_by_rebalances_stop_with_a_final_commit_and_resume_on_the_new_owner(
    spark_cluster: SparkCluster, broker: KafkaCluster
) -> None:
    """A clean stop of a worker moves its task to the other worker's application; when it
    comes back, the rebalance revokes one of the other's two tasks, which stops there (final
    commit, job ended) before the returning worker submits it on its own driver. Records are
    numbered from the stored offset, one every 50 ms, offsets committed every 500 ms: a move
    without its final commit would send numbers again."""
    cluster, module = spark_cluster.cluster, spark_cluster.probe
    uid = uuid.uuid4().hex[:6]
    names = [f"moving-{i}-{uid}" for i in range(2)]
    topics = {name: f"{cluster.group}-{name}" for name in names}
    for name in names:
        broker.create_topic(topics[name], 1)
        config = {"connector.class": f"{module}.Source", "topic": topics[name], "interval.ms": "50"}
        cluster.create(name, config)
    for name in names:
        _running_on_spark(cluster, name, TASK_START_S)

    def numbers(name: str) -> list[int]:
        return [
            json.loads(m.value())["n"] for m in read_all(broker.bootstrap_servers, topics[name], 1)
        ]

    def drivers() -> set[str]:
        return {_where(cluster, name, via).get("driver", "") for name in names}

    leaving = _owner(cluster, names[0])
    via = stay = 1 - leaving
    cluster.stop_workers([leaving])  # exits 0: its tasks stopped, its application ended
    wait_until(
        lambda: drivers() == {cluster.worker_id(stay)}, FAILOVER_S, "both tasks on one worker"
    )
    mark = cluster.log_mark(stay)
    cluster.restart_workers([leaving], WORKER_START_S)
    wait_until(
        lambda: drivers() == {cluster.worker_id(stay), cluster.worker_id(leaving)},
        FAILOVER_S,
        "one task back on the returning worker's executors",
    )
    [moved] = [n for n in names if _where(cluster, n, via)["driver"] == cluster.worker_id(leaving)]
    # The worker that stayed stopped only the revoked task, and started nothing.
    assert cluster.task_events(stay, mark) == [(f"{moved}-0", "stopped")]
    for name in names:
        before = len(numbers(name))
        wait_until(lambda: len(numbers(name)) > before + 5, 60, f"{name} moving on")  # noqa: B023
        seen = numbers(name)
        assert seen == list(range(1, len(seen) + 1)), f"{name}: a number repeated or skipped"
    _delete(cluster, *names)


# Lines of the kill test's copy, appended by a writer thread at LINES_PER_SLICE every
# SLICE_S (~20,000 lines/s): the source is still reading when its worker is killed, and goes on
# reading on the survivor.
LINES = 200_000
LINES_PER_SLICE = 2_000
SLICE_S = 0.1
# "line-0000000\n": every line has this length, so a file's size tells its progress.
LINE_BYTES = 13


def test_a_pipeline_across_two_spark_workers_survives_kill_9_of_one(
    spark_cluster: SparkCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    cluster = spark_cluster.cluster
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.touch()
    topic = f"{cluster.group}-kill"
    broker.create_topic(topic, 1)
    src, sink = f"kill-src-{uuid.uuid4().hex[:6]}", f"kill-sink-{uuid.uuid4().hex[:6]}"
    cluster.create(
        src,
        {
            "connector.class": "FileStreamSource",
            "file": str(source_file),
            "topic": topic,
            "batch.size": "5000",
        },
        via=0,
    )
    cluster.create(
        sink, {"connector.class": "FileStreamSink", "file": str(sink_file), "topics": topic}, via=1
    )
    for name in (src, sink):
        _running_on_spark(cluster, name, TASK_START_S)

    # Each task runs in an executor of the Spark application of the worker that owns it: the
    # executor JVM its plugin host descends from is a child of that worker's process tree.
    owners = {name: _owner(cluster, name) for name in (src, sink)}
    assert sorted(owners.values()) == [0, 1], f"one task per worker: {owners}"
    for name, owner in owners.items():
        [host] = host_pids(f"{name}-0")
        jvm = executor_jvm_of(host)
        assert jvm is not None, f"{name}'s host {host} is not under an executor JVM"
        proc = cluster.workers[owner].proc
        assert proc is not None and proc.pid in ancestors(jvm), f"{name}: not worker {owner}'s"

    def write() -> None:
        for start in range(0, LINES, LINES_PER_SLICE):
            with open(source_file, "a") as fh:
                fh.writelines(f"line-{i:07d}\n" for i in range(start, start + LINES_PER_SLICE))
            time.sleep(SLICE_S)

    writer = threading.Thread(target=write, name="writer", daemon=True)
    writer.start()
    victim, survivor = owners[src], owners[sink]
    victim_proc = cluster.workers[victim].proc
    assert victim_proc is not None
    wait_until(
        lambda: sink_file.exists() and sink_file.stat().st_size >= LINES // 2 * LINE_BYTES,
        120,
        "half the lines copied",
    )
    # Everything of the victim: its driver JVM, its executor JVM, Python workers, plugin hosts.
    doomed = descendants(victim_proc.pid)
    assert any(executor_jvm_of(p) for p in doomed), "the victim's executor is not its own"
    sink_hosts = set(host_pids(f"{sink}-0"))
    mark = cluster.log_mark(survivor)
    moved_before = sink_file.stat().st_size // LINE_BYTES
    cluster.kill(victim)
    assert writer.is_alive(), "the source had read everything before the kill: nothing proven"
    wait_until(lambda: not any(_alive(p) for p in doomed), 60, "no process of the victim left")

    wait_until(
        lambda: _where(cluster, src, survivor).get("driver") == cluster.worker_id(survivor),
        FAILOVER_S,
        f"{src}-0 on the survivor's executors",
    )
    writer.join()
    wait_until(lambda: sink_file.stat().st_size >= LINES * LINE_BYTES, 300, f"{LINES} lines copied")
    settled = -1
    while settled != sink_file.stat().st_size:  # duplicates may still be on their way
        settled = sink_file.stat().st_size
        time.sleep(2)
    output = sink_file.read_text().splitlines()
    counts = Counter(output)
    assert set(counts) == {f"line-{i:07d}" for i in range(LINES)}, "lines lost or made up"
    duplicates = len(output) - LINES
    repeated = sorted(line for line, n in counts.items() if n > 1)
    print(
        f"\nkill -9 of worker {victim} (the source's driver) after {moved_before} of {LINES} "
        f"lines: {duplicates} duplicate lines"
        + (f" ({repeated[0]} .. {repeated[-1]})" if repeated else "")
    )
    # Resumed from the offsets topic, not from the file's start: what was committed long before
    # the kill (the first tenth; commits every 500 ms) came once.
    assert all(counts[f"line-{i:07d}"] == 1 for i in range(LINES // 10))
    # The survivor's own task was neither stopped nor restarted; its host lives on.
    events = cluster.task_events(survivor, mark)
    assert (f"{src}-0", "starting") in events
    assert not [e for e in events if e[0] == f"{sink}-0"], events
    assert set(host_pids(f"{sink}-0")) == sink_hosts and all(_alive(p) for p in sink_hosts)
    _delete(cluster, src, sink, via=survivor)
