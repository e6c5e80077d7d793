"""Distributed mode with 3 ``copycat distributed`` worker processes on Apache Kafka: Kafka's
Connect system-test scenarios, re-created (``tests/kafkatest/tests/connect/
connect_distributed_test.py``: clean and hard bounces, pause/resume, restarts of failed
connectors and tasks, a file source -> sink copy), plus failover timing and the restore of a
whole cluster from its topics.

One cluster of three workers serves the module (each test its own connectors and files): a
worker process takes seconds to start on two busy cores. Files are compared line by line:
nothing lost, nothing duplicated (clean bounces), duplicates counted and reported (kill -9).
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import SCHEDULED_DELAY_MS, SESSION_TIMEOUT_MS, DistributedCluster
from tests.support.faulty import install_faulty
from tests.support.processes import host_pids, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.apache_kafka_only(reason="distributed mode reads Kafka's high watermarks"),
]

WORKERS = 3
# The bound for a killed worker's tasks to run elsewhere, beyond session timeout and
# scheduled delay.
FAILOVER_SLACK_S = 5.0
# Lines of the long copy (run once, through clean bounces of every worker).
COPY_LINES = 1_000_000
# Appending them over the bounces, in chunks of this size, keeps the copy busy while workers
# come and go (a file written at once would be copied before the first bounce).
APPEND_CHUNK = 50_000
# A hung plugin call is reclaimed after this (plugin.call.timeout.ms): long enough to measure
# other connectors' calls meanwhile, short enough for the test.
CALL_TIMEOUT_MS = 8_000
# What "unaffected" means for another connector's REST calls while a plugin hangs.
UNAFFECTED_S = 2.0


def _line(i: int) -> str:
    return f"line {i:07d}\n"


@pytest.fixture(scope="module")
def cluster(
    broker: KafkaCluster,
    bundled_plugin_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[DistributedCluster]:
    tmp = tmp_path_factory.mktemp("distributed")
    faulty = install_faulty(tmp / "plugins")
    cluster = DistributedCluster(
        tmp,
        broker.bootstrap_servers,
        bundled_plugin_path,
        WORKERS,
        extra={
            "plugin.path": f"{bundled_plugin_path},{faulty}",
            "plugin.call.timeout.ms": str(CALL_TIMEOUT_MS),
        },
    )
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _file_pipeline(
    cluster: DistributedCluster, tmp: Path, name: str, broker: KafkaCluster, via: int = 1
) -> tuple[Path, Path]:
    source, sink = tmp / f"{name}.in", tmp / f"{name}.out"
    source.touch()
    topic = f"{cluster.group}-{name}"
    broker.create_topic(topic, 1)
    cluster.create(
        f"{name}-src",
        {"connector.class": "FileStreamSource", "file": str(source), "topic": topic},
        via=via,
    )
    cluster.create(
        f"{name}-sink",
        {"connector.class": "FileStreamSink", "file": str(sink), "topics": topic},
        via=(via + 1) % WORKERS,
    )
    cluster.wait_running(f"{name}-src", 1)
    cluster.wait_running(f"{name}-sink", 1)
    return source, sink


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _wait_lines(path: Path, count: int, timeout_s: float = 120) -> list[str]:
    def enough() -> list[str] | None:
        lines = _lines(path)
        return lines if len(set(lines)) >= count else None

    found: list[str] = wait_until(enough, timeout_s, f"{count} distinct lines in {path.name}")
    return found


def test_a_connector_created_through_any_worker_runs_with_one_status_everywhere(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    source, sink = _file_pipeline(cluster, tmp_path, "basic", broker, via=2)
    source.write_text("".join(_line(i) for i in range(100)))
    assert _wait_lines(sink, 100) == [_line(i).strip() for i in range(100)]
    statuses = [cluster.status("basic-src", via=i) for i in range(WORKERS)]
    assert statuses[0] == statuses[1] == statuses[2]
    assert statuses[0]["connector"]["worker_id"] in {cluster.worker_id(i) for i in range(WORKERS)}
    for i in range(WORKERS):  # every worker lists and describes it
        assert "basic-src" in httpx.get(cluster.urls[i] + "/connectors").json()
        tasks = httpx.get(cluster.urls[i] + "/connectors/basic-src/tasks").json()
        assert tasks[0]["config"]["file"] == str(source)


def test_pause_and_resume_through_different_workers(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    source, sink = _file_pipeline(cluster, tmp_path, "pause", broker)
    source.write_text("".join(_line(i) for i in range(10)))
    _wait_lines(sink, 10)
    assert cluster.request("PUT", "/connectors/pause-src/pause", via=0).status_code == 202
    cluster.wait_running("pause-src", 1, state="PAUSED")
    with source.open("a") as fh:
        fh.write("".join(_line(i) for i in range(10, 20)))
    time.sleep(2)
    assert len(_lines(sink)) == 10  # nothing moves while paused
    assert cluster.request("PUT", "/connectors/pause-src/resume", via=2).status_code == 202
    cluster.wait_running("pause-src", 1)
    assert _wait_lines(sink, 20) == [_line(i).strip() for i in range(20)]


def test_failed_connectors_and_tasks_are_restarted(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    topic = f"{cluster.group}-failing"
    broker.create_topic(topic, 1)
    missing = tmp_path / "not-yet" / "out.txt"  # the sink cannot open it: its task fails
    cluster.create(
        "failing-sink",
        {"connector.class": "FileStreamSink", "file": str(missing), "topics": topic},
    )
    cluster.wait_running("failing-sink", 1, state="FAILED")
    missing.parent.mkdir()
    response = cluster.request(
        "POST", "/connectors/failing-sink/restart?includeTasks=true&onlyFailed=true", via=1
    )
    assert response.status_code == 202, response.text
    assert response.json()["tasks"][0]["state"] == "RESTARTING"
    cluster.wait_running("failing-sink", 1)
    assert missing.exists()

    # A single task restart, asked of a worker that does not run it, is forwarded to the one
    # that does (through the leader) and restarts that task only.
    owner = cluster.status("failing-sink")["tasks"][0]["worker_id"]
    other = next(i for i in range(WORKERS) if cluster.worker_id(i) != owner)
    before = set(host_pids("failing-sink-0"))
    assert (
        cluster.request("POST", "/connectors/failing-sink/tasks/0/restart", via=other).status_code
        == 204
    )
    wait_until(lambda: set(host_pids("failing-sink-0")) - before, 30, "a new host for the task")
    cluster.wait_running("failing-sink", 1)


def test_clean_bounces_of_every_worker_lose_and_duplicate_nothing(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    source, sink = _file_pipeline(cluster, tmp_path, "bounce", broker)
    written = 0
    done = threading.Event()

    def writer() -> None:
        nonlocal written
        with source.open("a") as fh:
            while written < COPY_LINES and not done.is_set():
                chunk = min(APPEND_CHUNK, COPY_LINES - written)
                fh.write("".join(_line(i) for i in range(written, written + chunk)))
                fh.flush()
                written += chunk
                time.sleep(0.5)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        for index in range(WORKERS):
            cluster.bounce(index)
        thread.join(120)
        lines = _wait_lines(sink, COPY_LINES, timeout_s=240)
    finally:
        done.set()
    counts = collections.Counter(lines)
    assert len(counts) == COPY_LINES
    assert [k for k, n in counts.items() if n > 1] == []  # zero duplicated
    assert lines == [_line(i).strip() for i in range(COPY_LINES)]  # in order, zero lost


def test_a_killed_workers_tasks_move_within_the_bound_and_others_never_stop(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    names = [f"kill{i}" for i in range(3)]
    pipelines = [_file_pipeline(cluster, tmp_path, n, broker) for n in names]
    for source, _ in pipelines:
        source.write_text("".join(_line(i) for i in range(1000)))
    for _, sink in pipelines:
        _wait_lines(sink, 1000)
    placed = {
        f"{n}-{kind}": cluster.status(f"{n}-{kind}")["tasks"][0]["worker_id"]
        for n in names
        for kind in ("src", "sink")
    }
    victim = collections.Counter(placed.values()).most_common(1)[0][0]
    index = next(i for i in range(WORKERS) if cluster.worker_id(i) == victim)
    survivors = {c for c, w in placed.items() if w != victim}
    lost = {c for c, w in placed.items() if w == victim}
    hosts = {c: set(host_pids(f"{c}-0")) for c in survivors}
    assert all(hosts.values()), hosts

    killed_at = time.monotonic()
    cluster.kill(index)

    def moved() -> bool:
        for connector in lost:
            tasks = cluster.status(connector, via=(index + 1) % WORKERS).get("tasks", [])
            if not tasks or tasks[0]["state"] != "RUNNING" or tasks[0]["worker_id"] == victim:
                return False
        return True

    bound_s = (SESSION_TIMEOUT_MS + SCHEDULED_DELAY_MS) / 1000 + FAILOVER_SLACK_S
    wait_until(moved, bound_s * 3, "the killed worker's tasks running elsewhere")
    elapsed = time.monotonic() - killed_at
    print(f"\nkill -9 failover: {len(lost)} tasks running elsewhere after {elapsed:.1f} s")
    assert elapsed <= bound_s, f"{elapsed:.1f} s > {bound_s:.1f} s"
    for connector, pids in hosts.items():  # never stopped: same plugin host, still alive
        assert set(host_pids(f"{connector}-0")) == pids, connector

    for source, _ in pipelines:
        with source.open("a") as fh:
            fh.write("".join(_line(i) for i in range(1000, 2000)))
    duplicates = 0
    for name, (_, sink) in zip(names, pipelines, strict=True):
        lines = _wait_lines(sink, 2000)
        assert set(lines) == {_line(i).strip() for i in range(2000)}, name  # zero lost
        duplicates += len(lines) - len(set(lines))
    print(f"kill -9: {duplicates} duplicated lines (at-least-once after a hard bounce)")
    cluster.restart(index)


def test_new_workers_restore_everything_from_the_topics_alone(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    source, sink = _file_pipeline(cluster, tmp_path, "restore", broker)
    source.write_text("".join(_line(i) for i in range(500)))
    _wait_lines(sink, 500)
    cluster.create(
        "restore-paused",
        {"connector.class": "FileStreamSource", "file": str(source), "topic": "unused-p"},
        initial_state="PAUSED",
    )
    cluster.create(
        "restore-stopped",
        {"connector.class": "FileStreamSource", "file": str(source), "topic": "unused-s"},
        initial_state="STOPPED",
    )
    cluster.wait_running("restore-paused", 1, state="PAUSED")
    wait_until(
        lambda: cluster.status("restore-stopped").get("connector", {}).get("state") == "STOPPED",
        30,
        "restore-stopped STOPPED",
    )
    before = {
        name: (
            cluster.request("GET", f"/connectors/{name}").json(),
            cluster.request("GET", f"/connectors/{name}/tasks").json(),
        )
        for name in ("restore-src", "restore-sink", "restore-paused", "restore-stopped")
    }
    offsets = cluster.request("GET", "/connectors/restore-src/offsets").json()

    cluster.stop()  # every worker, then new processes
    for index in range(WORKERS):
        cluster.restart(index)
    for name, (info, tasks) in before.items():
        assert cluster.request("GET", f"/connectors/{name}").json() == info
        assert cluster.request("GET", f"/connectors/{name}/tasks").json() == tasks
    assert cluster.request("GET", "/connectors/restore-src/offsets").json() == offsets
    cluster.wait_running("restore-paused", 1, state="PAUSED")
    assert cluster.status("restore-stopped")["connector"]["state"] == "STOPPED"
    cluster.wait_running("restore-src", 1)
    with source.open("a") as fh:  # resumes from its offset: nothing copied twice
        fh.write("".join(_line(i) for i in range(500, 600)))
    lines = _wait_lines(sink, 600)
    assert lines == [_line(i).strip() for i in range(600)]


@pytest.mark.parametrize("where", ["connector.start", "connector.validate"])
def test_a_hung_plugin_delays_nothing_else_on_any_worker(
    cluster: DistributedCluster, tmp_path: Path, where: str
) -> None:
    name = f"hung-{where.replace('.', '-')}"
    config = {"connector.class": "FaultySource", "topic": "unused", "hang.in": where}
    hung: list[httpx.Response] = []
    thread = threading.Thread(
        target=lambda: hung.append(
            cluster.request("POST", "/connectors", 0, json={"name": name, "config": config})
        ),
        daemon=True,
    )
    thread.start()
    wait_until(
        lambda: any(f"faulty: hanging in {where}" in w.text() for w in cluster.workers),
        30,
        f"the plugin to hang in {where}",
    )
    for via in range(WORKERS):  # every worker answers for other connectors at once
        other = f"other-{via}-{where.replace('.', '-')}"
        source = tmp_path / f"{other}.in"
        source.touch()
        timings = {}
        for what, method, path, body in [
            (
                "create",
                "POST",
                "/connectors",
                {
                    "name": other,
                    "config": {
                        "connector.class": "FileStreamSource",
                        "file": str(source),
                        "topic": other,
                    },
                },
            ),
            ("list", "GET", "/connectors", None),
            ("pause", "PUT", f"/connectors/{other}/pause", None),
            ("delete", "DELETE", f"/connectors/{other}", None),
        ]:
            started = time.monotonic()
            response = cluster.request(method, path, via, json=body)
            timings[what] = time.monotonic() - started
            assert response.status_code < 300, (what, response.text)
        slow = {w: round(t, 2) for w, t in timings.items() if t >= UNAFFECTED_S}
        assert not slow, f"worker {via} waited for the hung plugin: {slow}"
    thread.join(CALL_TIMEOUT_MS / 1000 * 3 + 30)
    assert hung, "the request on the hung plugin never answered"
    if where == "connector.validate":
        assert hung[0].status_code == 500 and "did not complete within" in hung[0].text
    else:
        assert hung[0].status_code == 201
        wait_until(
            lambda: cluster.status(name).get("connector", {}).get("state") == "FAILED",
            CALL_TIMEOUT_MS / 1000 + 30,
            "the hung connector FAILED by its deadline",
        )
        assert cluster.request("DELETE", f"/connectors/{name}").status_code == 204


def test_tasks_max_changes_flow_through_the_leader_and_spread_the_tasks(
    cluster: DistributedCluster,
) -> None:
    name = "grow"
    config = {"connector.class": "FaultySource", "topic": "unused", "tasks.max": "2"}
    cluster.create(name, config, via=1)
    cluster.wait_running(name, 2)
    response = cluster.request(
        "PUT", f"/connectors/{name}/config", 2, json={**config, "tasks.max": "6"}
    )
    assert response.status_code == 200, response.text
    status = cluster.wait_running(name, 6)
    per_worker = collections.Counter(t["worker_id"] for t in status["tasks"])
    assert len(per_worker) >= 2  # spread by the leader, not all on the connector's worker
    tasks = cluster.request("GET", f"/connectors/{name}/tasks", 0).json()
    assert [t["config"]["tasks.max"] for t in tasks] == ["6"] * 6
    assert cluster.request("DELETE", f"/connectors/{name}", 0).status_code == 204
