"""An idle task costs little, and still moves records, pauses, resumes and stops at once.

With the data path in the plugin host (``task.data.path=host``), the host answered each
request after the first iteration that moved nothing, and the worker's driver asked again
10 ms later: an idle FileStreamSource (whose poll() waits 0.1 s) made ~8 round trips a second,
an idle sink (whose consumer poll waits 0.2 s) ~5, each a wake-up of the driver thread and
of the host, pickling and pipe I/O: 60 idle connectors cost ~3x Kafka Connect's CPU. The host
now goes on iterating an idle task for up to a second (core/runtime/hosted.py IDLE_SLICE_S)
and the worker wakes it for a pause, resume or stop (its stop pipe).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.support.apache_kafka import KafkaCluster
from tests.support.processes import host_pids, wait_until
from tests.support.rest import BOTH_DATA_PATHS, RestWorker, module_worker

pytestmark = pytest.mark.integration

# How long an idle task is watched, and what it may cost meanwhile. Its driver thread wakes
# once per answer of its host (once a second, plus the odd offset flush and status write);
# it woke ~15 (source) and ~9 (sink) times a second. Host + driver CPU: an idle source used
# ~11 ms a second, a sink ~5 (each wake-up of a Python thread costs ~0.1-0.3 ms here).
WATCH_S = 5.0
DRIVER_WAKEUPS_PER_S = 4.0
IDLE_CPU_MS_PER_S = 8.0
# A new line of a FileStreamSource's file moves within Kafka's FileStreamSourceTask's wait
# (1 s), a sink's record at once; a pause or resume of an idle task acts within the iterations
# under way (a FileStreamSource's 0.1 s poll, a sink's 0.2 s consumer poll, twice: the one
# that sees the change, then the first in the new state), not after the host's idle slice (1 s).
LINE_MOVES_WITHIN_S = 1.0
ACTS_WITHIN_S = 0.75
STOPS_WITHIN_S = 2.0


worker = module_worker("idle", faulty=True)


def _thread_use(task_dir: Path) -> tuple[float, int]:
    """CPU seconds (ns precision) and voluntary context switches (its wake-ups) of a thread
    so far, from its /proc task directory."""
    cpu_ns = int((task_dir / "schedstat").read_text().split()[0])
    switches = next(
        int(line.split()[1])
        for line in (task_dir / "status").read_text().splitlines()
        if line.startswith("voluntary_ctxt_switches")
    )
    return cpu_ns / 1e9, switches


def _process_cpu_s(pid: int) -> float:
    """CPU seconds of every thread of process ``pid`` alive now."""
    total = 0.0
    for task_dir in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += _thread_use(task_dir)[0]
        except (OSError, StopIteration):
            pass  # ended meanwhile
    return total


def _driver_thread(task: str) -> threading.Thread:
    """The worker's driver thread of ``task`` (this process runs the worker)."""
    (thread,) = [t for t in threading.enumerate() if t.name == f"task-{task}"]
    return thread


def _tasks(http: Any, name: str) -> list[str]:
    return [t["state"] for t in http.get(f"/connectors/{name}/status").json()["tasks"]]


def _all(http: Any, names: Iterable[str], state: str) -> bool:
    return all(_tasks(http, name) == [state] for name in names)


def _assigned(http: Any, name: str) -> bool:
    """A sink task's consumer has its partition: its partition-count metric says so (its
    KIP-558 active topics list the topic only once it consumed a record of it)."""
    metric = "kafka_connect_sink_task_partition_count{"
    return any(
        line.startswith(metric) and f'connector="{name}"' in line and float(line.split()[-1]) >= 1
        for line in http.get("/metrics").text.splitlines()
    )


@pytest.mark.parametrize("worker", ["host"], indirect=True)
@pytest.mark.parametrize("kind", ["source", "sink"])
def test_an_idle_task_seldom_wakes_its_driver_and_host(
    worker: RestWorker, broker: KafkaCluster, topic_name: str, tmp_path: Path, kind: str
) -> None:
    broker.create_topic(topic_name, 1)
    http = worker.client()
    name = f"idle-{kind}-{topic_name}"
    if kind == "source":
        (tmp_path / "in.txt").write_text("")
        config = {"connector.class": "FileStreamSource", "file": str(tmp_path / "in.txt")}
        config["topic"] = topic_name
    else:
        config = {"connector.class": "FileStreamSink", "file": str(tmp_path / "out.txt")}
        config["topics"] = topic_name
    assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
    wait_until(lambda: _tasks(http, name) == ["RUNNING"], 30, "the task to run")
    if kind == "sink":
        wait_until(lambda: _assigned(http, name), 30, "the sink's assignment")
    time.sleep(1.0)  # the clients' first metadata and connections: not what idling costs

    (host,) = host_pids(f"{name}-0")
    driver = Path(f"/proc/self/task/{_driver_thread(f'{name}-0').native_id}")
    host_before = _process_cpu_s(host)
    driver_cpu_before, driver_wakeups_before = _thread_use(driver)
    time.sleep(WATCH_S)
    host_used = _process_cpu_s(host) - host_before
    driver_cpu, driver_wakeups = _thread_use(driver)
    driver_used = driver_cpu - driver_cpu_before
    wakeups_per_s = (driver_wakeups - driver_wakeups_before) / WATCH_S
    cpu_ms_per_s = (host_used + driver_used) * 1000 / WATCH_S
    assert wakeups_per_s <= DRIVER_WAKEUPS_PER_S, (
        f"idle {kind} task: its driver thread woke {wakeups_per_s:.1f} times a second (a round "
        "trip to its host each time)"
    )
    assert cpu_ms_per_s <= IDLE_CPU_MS_PER_S, (
        f"idle {kind} task: its host and driver used {cpu_ms_per_s:.1f} ms of CPU a second "
        f"(host {host_used * 1000 / WATCH_S:.1f}, driver {driver_used * 1000 / WATCH_S:.1f})"
    )
    assert http.delete(f"/connectors/{name}").status_code == 204


@BOTH_DATA_PATHS
def test_an_idle_task_moves_pauses_resumes_and_stops_at_once(
    worker: RestWorker, broker: KafkaCluster, topic_name: str, tmp_path: Path
) -> None:
    broker.create_topic(topic_name, 1)
    http = worker.client()
    source, sink = f"idle-src-{topic_name}", f"idle-sink-{topic_name}"
    lines, puts = tmp_path / "in.txt", tmp_path / "put.log"
    lines.write_text("")
    configs = {
        source: {"connector.class": "FileStreamSource", "file": str(lines), "topic": topic_name},
        sink: {"connector.class": "FaultySink", "topics": topic_name, "put.log": str(puts)},
    }
    for name, config in configs.items():
        assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
    wait_until(lambda: _all(http, configs, "RUNNING"), 30, "the tasks to run")
    wait_until(lambda: _assigned(http, sink), 30, "the sink's assignment")
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"watch-{topic_name}",
            "fetch.wait.max.ms": 10,
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic_name, 0, 0)])
        assert consumer.poll(1.0) is None
        time.sleep(1.5)  # both tasks idle, in the middle of an idle slice
        # A line appended after a while moves at once: to the topic, and on to the sink.
        written = time.monotonic()
        with lines.open("a") as f:
            f.write("after a while\n")
        message = None
        while message is None and time.monotonic() - written < 10:
            message = consumer.poll(0.05)
        produced_after = time.monotonic() - written
        assert message is not None and message.value() == b"after a while"
        wait_until(lambda: puts.exists() and puts.read_text() == "1\n", 10, "the sink's put")
        put_after = time.monotonic() - written
    finally:
        consumer.close()
    assert produced_after < LINE_MOVES_WITHIN_S, f"the line took {produced_after:.2f} s"
    assert put_after < LINE_MOVES_WITHIN_S, f"the line was put after {put_after:.2f} s"

    time.sleep(1.5)  # idle again
    for action, state in (("pause", "PAUSED"), ("resume", "RUNNING")):
        asked = time.monotonic()
        for name in configs:
            assert http.put(f"/connectors/{name}/{action}").status_code == 202
        while not _all(http, configs, state) and time.monotonic() - asked < 30:
            time.sleep(0.02)
        took = time.monotonic() - asked
        assert took < ACTS_WITHIN_S, f"the idle tasks' {action} took {took:.2f} s"
        time.sleep(1.5)

    threads = [_driver_thread(f"{name}-0") for name in configs]
    asked = time.monotonic()
    for name in configs:
        assert http.delete(f"/connectors/{name}").status_code == 204
    for thread in threads:
        thread.join(30)
        assert not thread.is_alive()
    took = time.monotonic() - asked
    assert took < STOPS_WITHIN_S, f"the idle tasks took {took:.2f} s to stop"
