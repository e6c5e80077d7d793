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
import json
import random
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, Producer
from prometheus_client.parser import text_string_to_metric_families

from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import (
    SCHEDULED_DELAY_MS,
    SESSION_TIMEOUT_MS,
    DistributedCluster,
    post_task_configs,
    worker_props,
)
from tests.support.faulty import install_faulty
from tests.support.kafka import produce, read_all
from tests.support.processes import (
    CliWorker,
    host_pids,
    no_hosts_of,
    signal_while_connecting,
    unreachable_address,
    wait_until,
)
from tests.support.rest import lifecycle_call, lifecycle_storm

pytestmark = [
    pytest.mark.integration,
    pytest.mark.apache_kafka_only(reason="distributed mode reads Kafka's high watermarks"),
]

WORKERS = 3
# How soon a worker waiting for an unreachable cluster is gone after SIGTERM (it looks at the
# stop flag at least every second), on a busy machine. Kafka Connect: within 0.1 s.
SIGNAL_EXIT_S = 5.0
# The bound for a killed worker's tasks to run elsewhere, beyond session timeout and
# scheduled delay.
FAILOVER_SLACK_S = 5.0
# Lines of the long copy (run once, through clean bounces of every worker, a pause and a
# restart).
COPY_LINES = 1_000_000
# It is appended in slices, each just before a change (workers stopping or joining, a pause, a
# restart), so that every change happens mid-copy (a file written at once would be copied
# before the first bounce): 3 per worker, 3 more, and the rest.
COPY_SLICE = 80_000
# Bytes per line of the copy (``_line``): the sink file's size tells its progress cheaply.
LINE_BYTES = len("line 0000000\n")
# A hung plugin call is reclaimed after this (plugin.call.timeout.ms): long enough to measure
# other connectors' calls meanwhile, short enough for the test.
CALL_TIMEOUT_MS = 8_000
# What "unaffected" means for another connector's REST calls while a plugin hangs.
UNAFFECTED_S = 2.0
# The create/delete storm: calls, spread over this many names.
STORM_CALLS = 80
STORM_NAMES = 6
# How long a name may take to settle after a storm: each worker runs a name's operations one
# after another, and a storm leaves a dozen queued for some names. In one CI run (2026-12-02)
# a connector had no status on any worker 60 s after the storm, on a machine where a plugin's
# validate() took over 8 s; in another (120 s) too. A likely cause, fixed since: a rejoin asked
# for during a join in flight was dropped (docs/architecture.md, "A second trap"). The failure's
# log lines (lines_about, without the test's own polling) will say if more is at fault.
STORM_SETTLE_S = 120


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
            "config.providers": "file",
            "config.providers.file.class": "FileConfigProvider",
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


def _rebalance_metrics(url: str) -> dict[str, object]:
    """The connect-worker-rebalance-metrics of the worker at ``url`` (GET /metrics)."""
    text = httpx.get(url + "/metrics", timeout=30).text
    found: dict[str, object] = {}
    prefix = "kafka_connect_connect_worker_rebalance_"
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith(prefix):
                name = sample.name[len(prefix) :]
                value = sample.labels.get(name.removesuffix("_info"))
                found[name] = value if name.endswith("_info") else sample.value
    return found


def test_every_worker_reports_its_rebalances_with_one_leader_and_epoch(
    cluster: DistributedCluster,
) -> None:
    def settled() -> list[dict[str, object]] | None:
        seen = [_rebalance_metrics(url) for url in cluster.urls]
        if any(m.get("rebalancing") != 0 for m in seen):
            return None
        if len({(m["epoch"], m["leader_name_info"]) for m in seen}) != 1:
            return None
        return seen

    seen = wait_until(settled, 120, "every worker out of its rebalance, on one generation")
    for metrics in seen:
        assert metrics["completed_rebalances_total"] >= 1  # type: ignore[operator]
        assert metrics["epoch"] >= 1  # type: ignore[operator]
        assert metrics["time_since_last_rebalance_ms"] >= 0  # type: ignore[operator]
        assert metrics["rebalance_max_time_ms"] >= 0  # type: ignore[operator]
        assert metrics["connect_protocol_info"] == "SESSIONED"
    leader = str(seen[0]["leader_name_info"]).rstrip("/")
    assert leader in {url.rstrip("/") for url in cluster.urls}, (leader, cluster.urls)


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


def _active_topics(cluster: DistributedCluster, name: str, via: int) -> list[str]:
    response = cluster.request("GET", f"/connectors/{name}/topics", via=via)
    assert response.status_code == 200, response.text
    topics: list[str] = response.json()[name]["topics"]
    return topics


def test_an_active_topics_reset_through_another_worker_reaches_the_running_task(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    """KIP-558: a reset through a worker that does not run the sink's task empties the list
    on every worker, the task's own included (its task forgets its topic, where before it
    kept it and the worker published it again), until the next record."""
    source, sink = _file_pipeline(cluster, tmp_path, "active", broker)
    topic = f"{cluster.group}-active"
    source.write_text("".join(_line(i) for i in range(5)))
    _wait_lines(sink, 5)
    owner_id = cluster.status("active-sink", via=0)["tasks"][0]["worker_id"]
    owner = next(i for i in range(WORKERS) if cluster.worker_id(i) == owner_id)
    everywhere = range(WORKERS)
    wait_until(
        lambda: all(_active_topics(cluster, "active-sink", i) == [topic] for i in everywhere),
        60,
        "the sink's topic on every worker",
    )
    reset = cluster.request("PUT", "/connectors/active-sink/topics/reset", via=(owner + 1) % 3)
    assert reset.status_code == 202, reset.text
    wait_until(
        lambda: all(_active_topics(cluster, "active-sink", i) == [] for i in everywhere),
        60,
        "no active topic on any worker, the task's own included",
    )
    with source.open("a") as fh:
        fh.write(_line(5))
    _wait_lines(sink, 6)
    try:
        wait_until(
            lambda: all(_active_topics(cluster, "active-sink", i) == [topic] for i in everywhere),
            60,
            "the sink's topic again on every worker",
        )
    except AssertionError as exc:
        seen = {i: _active_topics(cluster, "active-sink", i) for i in everywhere}
        statuses = {i: cluster.status("active-sink", via=i) for i in everywhere}
        raise AssertionError(
            f"{exc}\nowner {owner}, reset via {(owner + 1) % 3}; topics {seen}\n"
            f"statuses {statuses}\n{cluster.lines_about('active-sink')}\n{cluster.warnings()}"
        ) from exc


def test_a_deleted_connectors_active_topics_go_with_it(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    """KIP-558 on a delete, as Kafka's leader does: the connector's topic records are
    tombstoned, so a connector created again under its name lists no topic until it uses one.
    Before, every worker kept listing the deleted connector's topics for the new one (found by
    a churn soak: the status store kept 4 such records a cycle)."""
    source, sink = _file_pipeline(cluster, tmp_path, "gone", broker)
    topic, other = f"{cluster.group}-gone", f"{cluster.group}-gone-other"
    source.write_text("".join(_line(i) for i in range(3)))
    _wait_lines(sink, 3)
    everywhere = range(WORKERS)
    wait_until(
        lambda: all(_active_topics(cluster, "gone-sink", i) == [topic] for i in everywhere),
        60,
        "the sink's topic on every worker",
    )
    assert cluster.request("DELETE", "/connectors/gone-sink", via=2).status_code == 204
    wait_until(
        lambda: all(
            cluster.request("GET", "/connectors/gone-sink/status", via=i).status_code == 404
            for i in everywhere
        ),
        60,
        "the sink gone from every worker",
    )
    # The new one reads another topic, empty for now: whatever the old one committed, it
    # uses no topic until a record arrives there.
    broker.create_topic(other, 1)
    again = tmp_path / "gone-again.out"
    config = {"connector.class": "FileStreamSink", "file": str(again), "topics": other}
    cluster.create("gone-sink", config, via=1)
    cluster.wait_running("gone-sink", 1)
    time.sleep(6)  # a sweep of every worker's topics (5 s) has come and gone
    assert [_active_topics(cluster, "gone-sink", i) for i in everywhere] == [[]] * WORKERS
    produce(broker.bootstrap_servers, other, [_line(9).encode()])
    _wait_lines(again, 1)
    wait_until(
        lambda: all(_active_topics(cluster, "gone-sink", i) == [other] for i in everywhere),
        60,
        "the new sink's topic on every worker once it used it",
    )


def _paused_without_tasks(cluster: DistributedCluster, name: str) -> bool:
    return all(
        cluster.status(name, via=i).get("connector", {}).get("state") == "PAUSED"
        and cluster.status(name, via=i).get("tasks") == []
        for i in range(WORKERS)
    )


def test_a_connector_paused_from_stopped_has_no_task_until_resumed(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    # Kafka reconfigures tasks only for a connector whose target state is STARTED: stopping
    # empties its task configs, and a pause after it starts the connector paused, taskless.
    source, sink = _file_pipeline(cluster, tmp_path, "stoppause", broker)
    assert cluster.request("PUT", "/connectors/stoppause-sink/stop").status_code == 204
    wait_until(
        lambda: cluster.status("stoppause-sink").get("connector", {}).get("state") == "STOPPED",
        30,
        "stoppause-sink STOPPED",
    )
    assert cluster.request("PUT", "/connectors/stoppause-sink/pause", via=1).status_code == 202
    wait_until(lambda: _paused_without_tasks(cluster, "stoppause-sink"), 30, "PAUSED, no task")
    time.sleep(3)  # nothing generates tasks behind the answer
    assert _paused_without_tasks(cluster, "stoppause-sink")
    assert cluster.request("GET", "/connectors/stoppause-sink/tasks", via=2).json() == []
    assert cluster.request("PUT", "/connectors/stoppause-sink/resume", via=2).status_code == 202
    cluster.wait_running("stoppause-sink", 1)
    source.write_text("".join(_line(i) for i in range(10)))
    assert _wait_lines(sink, 10) == [_line(i).strip() for i in range(10)]


def test_a_stopped_connector_resumed_answers_before_it_has_started(
    cluster: DistributedCluster,
) -> None:
    # Kafka's herder writes the target state and answers 202: the start, however long the
    # connector's start() takes, goes on behind.
    name = "slowresume"
    start_ms = 6_000
    config = {
        "connector.class": "FaultySource",
        "topic": "unused",
        "connector.start.ms": str(start_ms),
    }
    created = cluster.request("POST", "/connectors", json={"name": name, "config": config})
    assert created.status_code == 201, created.text
    cluster.wait_running(name, 1)
    assert cluster.request("PUT", f"/connectors/{name}/stop").status_code == 204
    cluster.wait_running(name, 0, state="STOPPED")
    for via in range(WORKERS):
        asked = time.monotonic()
        assert cluster.request("PUT", f"/connectors/{name}/resume", via=via).status_code == 202
        took = time.monotonic() - asked
        assert took < start_ms / 1000 / 3, f"the resume answered after {took:.1f} s (via {via})"
    cluster.wait_running(name, 1)
    assert cluster.request("PUT", "/connectors/no-such-one/resume").status_code == 404
    assert cluster.request("DELETE", f"/connectors/{name}").status_code == 204


def _connector_statuses_on(url: str, name: str) -> list[str]:
    """The connector-metrics status values of ``name`` that the worker at ``url`` exposes."""
    text = httpx.get(url + "/metrics", timeout=30).text
    return [
        sample.labels["status"]
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "kafka_connect_connector_status_info"
        and sample.labels.get("connector") == name
    ]


def test_a_stopped_connector_keeps_its_connector_metrics_on_the_worker_holding_it(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    """Kafka's WorkerConnector stays, STOPPED, on the worker it is assigned to: one worker
    exposes its connector-metrics (status stopped) until it is deleted."""
    source = tmp_path / "in.txt"
    source.touch()
    name = "stopped-metrics"
    cluster.create(
        name, {"connector.class": "FileStreamSource", "file": str(source), "topic": name}
    )
    cluster.wait_running(name, 1)
    assert cluster.request("PUT", f"/connectors/{name}/stop").status_code == 204

    def stopped_on_one_worker() -> bool:
        seen = [_connector_statuses_on(url, name) for url in cluster.urls]
        return sorted(seen) == [[], [], ["stopped"]]

    wait_until(stopped_on_one_worker, 60, f"{name}'s connector-metrics say stopped, once")
    assert cluster.request("DELETE", f"/connectors/{name}").status_code == 204
    wait_until(
        lambda: not any(_connector_statuses_on(url, name) for url in cluster.urls),
        60,
        f"{name}'s connector-metrics gone everywhere",
    )


def _stored_tasks(cluster: DistributedCluster, name: str) -> list[Any]:
    return [
        task
        for i in range(WORKERS)
        for task in cluster.request("GET", f"/connectors/{name}/tasks", via=i).json()
    ]


def test_a_stop_landing_while_a_restarted_connector_generates_task_configs_wins(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    # A restart, then a stop while the restarted instance is still in task_configs(): the
    # configs it returns after the stop must not be written (Kafka's leader refuses a
    # non-empty set for a STOPPED connector, its check and write on one thread), or their
    # task runs under a connector that says STOPPED (seen 1 in ~40 restart/stop cycles).
    name = "stoprace"
    gate = tmp_path / "task_configs.gate"
    config = {
        "connector.class": "FaultySource",
        "topic": "unused",
        "tasks.max": "1",
        "task_configs.wait.while": str(gate),
    }
    created = cluster.request("POST", "/connectors", json={"name": name, "config": config})
    assert created.status_code == 201, created.text
    cluster.wait_running(name, 1)
    gate.touch()
    restarted = cluster.request(
        "POST",
        f"/connectors/{name}/restart",
        params={"includeTasks": "true", "onlyFailed": "false"},
    )
    assert restarted.status_code == 202, restarted.text
    wait_until(
        lambda: any(
            "faulty: waiting in connector.task_configs" in w.text() for w in cluster.workers
        ),
        30,
        "the restarted connector to wait in task_configs()",
    )
    assert cluster.request("PUT", f"/connectors/{name}/stop", via=1).status_code == 204
    wait_until(lambda: _stored_tasks(cluster, name) == [], 30, "the stop read everywhere")
    gate.unlink()  # the configs come back now, after the stop
    dropped = f"connector {name} is stopped: its task configs are dropped"
    wait_until(
        lambda: _stored_tasks(cluster, name) or any(dropped in w.text() for w in cluster.workers),
        30,
        "the late task configs to be written or dropped",
    )
    assert _stored_tasks(cluster, name) == []
    cluster.wait_running(name, 0, state="STOPPED")
    time.sleep(3)  # a rebalance assigning a late task would have started it by now
    for i in range(WORKERS):
        assert cluster.status(name, via=i)["tasks"] == []
    assert _stored_tasks(cluster, name) == []
    # The leader's check itself, as any worker (or Kafka Connect's) would meet it.
    refused = post_task_configs(cluster, broker, name, [config])
    assert refused.status_code == 400, refused.text
    assert (
        refused.json()["message"]
        == f"Cannot submit non-empty set of task configs for stopped connector {name}"
    )
    assert _stored_tasks(cluster, name) == []
    assert cluster.request("DELETE", f"/connectors/{name}").status_code == 204


def test_task_configs_written_for_a_stopped_connector_start_no_task_until_it_resumes(
    cluster: DistributedCluster, broker: KafkaCluster
) -> None:
    # Written behind the leader's check (a zombie leader, a peer without the check): Kafka's
    # task ends as soon as it sees its connector STOPPED. Ours is not started; the resume
    # starts it, even though the connector then generates the very same configs.
    name = "stoppedtasks"
    config = {"connector.class": "FaultySource", "topic": "unused", "tasks.max": "1"}
    created = cluster.request("POST", "/connectors", json={"name": name, "config": config})
    assert created.status_code == 201, created.text
    cluster.wait_running(name, 1)
    [task] = cluster.request("GET", f"/connectors/{name}/tasks").json()
    assert cluster.request("PUT", f"/connectors/{name}/stop").status_code == 204
    cluster.wait_running(name, 0, state="STOPPED")
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for key, value in [
        (f"task-{name}-0", {"properties": task["config"]}),
        (f"commit-{name}", {"tasks": 1}),
    ]:
        producer.produce(f"{cluster.group}-configs", key=key, value=json.dumps(value))
    assert producer.flush(10) == 0
    wait_until(lambda: len(_stored_tasks(cluster, name)) == WORKERS, 30, "the task read everywhere")
    held_back = f"task {name}-0: its connector is STOPPED; not starting it"
    wait_until(
        lambda: (
            cluster.status(name).get("tasks") or any(held_back in w.text() for w in cluster.workers)
        ),
        30,
        "the task to be assigned",
    )
    time.sleep(2)  # the status topic carries a task that started anyway by now
    for i in range(WORKERS):
        assert cluster.status(name, via=i) == cluster.status(name) != {}
        assert cluster.status(name, via=i)["connector"]["state"] == "STOPPED"
        assert cluster.status(name, via=i)["tasks"] == []
    assert cluster.request("PUT", f"/connectors/{name}/resume").status_code == 202
    cluster.wait_running(name, 1)
    unchanged = f"connector {name}: task configs unchanged (1 tasks)"
    assert any(unchanged in w.text() for w in cluster.workers)  # started by the resume itself
    assert cluster.request("DELETE", f"/connectors/{name}").status_code == 204


def test_a_paused_connectors_stored_task_configs_are_not_rewritten_when_it_starts(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    # Task configs Kafka Connect wrote (its task.class) for a connector it paused: a Copycat
    # worker starting that connector (a takeover, a restart) must leave them as they are,
    # or Kafka Connect, taking over again, fails the task on a class it cannot load.
    source, _sink = _file_pipeline(cluster, tmp_path, "keeptasks", broker)
    name = "keeptasks-src"
    assert cluster.request("PUT", f"/connectors/{name}/pause").status_code == 202
    cluster.wait_running(name, 1, state="PAUSED")
    kafka_task = {
        "task.class": "org.apache.kafka.connect.file.FileStreamSourceTask",
        "file": str(source),
        "topic": f"{cluster.group}-keeptasks",
        "batch.size": "2000",
    }
    written = post_task_configs(cluster, broker, name, [kafka_task])
    assert written.status_code == 204, written.text
    wait_until(
        lambda: (
            cluster.request("GET", f"/connectors/{name}/tasks").json()[0]["config"] == kafka_task
        ),
        30,
        "Kafka's task config stored",
    )
    assert cluster.request("POST", f"/connectors/{name}/restart").status_code == 204
    time.sleep(3)  # the restarted instance would have published its own by now
    for i in range(WORKERS):
        tasks = cluster.request("GET", f"/connectors/{name}/tasks", via=i).json()
        assert [t["config"] for t in tasks] == [kafka_task]
    cluster.wait_running(name, 1, state="PAUSED")
    # Resumed, the connector is asked again, as Kafka does: its own task configs replace them.
    assert cluster.request("PUT", f"/connectors/{name}/resume").status_code == 202
    wait_until(
        lambda: (
            cluster.request("GET", f"/connectors/{name}/tasks").json()[0]["config"]["task.class"]
            != kafka_task["task.class"]
        ),
        30,
        "the connector's own task configs after the resume",
    )
    cluster.wait_running(name, 1)


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


def _failures_logged(cluster: DistributedCluster, name: str) -> int:
    """How many times the workers logged connector ``name``'s instance failing."""
    words = f"WorkerConnector{{id={name}}} Error while starting connector"
    return sum(w.text().count(words) for w in cluster.workers)


def _connector_failed_tasks_running(
    cluster: DistributedCluster, name: str, tasks: int
) -> dict[str, Any] | None:
    """The status every worker reports once the connector is FAILED and ``tasks`` tasks RUNNING."""
    seen = [cluster.status(name, via=i) for i in range(WORKERS)]
    if not seen[0] or any(s != seen[0] for s in seen):
        return None
    settled = (
        seen[0]["connector"]["state"] == "FAILED"
        and [t["state"] for t in seen[0]["tasks"]] == ["RUNNING"] * tasks
    )
    return seen[0] if settled else None


def test_a_connector_that_fails_again_on_restart_still_gets_its_tasks_restarted(
    cluster: DistributedCluster, tmp_path: Path
) -> None:
    """KIP-745 as Kafka's DistributedHerder.doRestartConnectorAndTasks does it: each worker
    plans from the status, stops the planned instance and tasks it runs, then starts them
    again, the tasks from their stored configs whatever the connector's start does."""
    name = "refail"
    marker = tmp_path / f"{name}.fail"  # while it exists, the connector's start() raises
    config = {
        "connector.class": "FaultySource",
        "topic": "unused",
        "tasks.max": "2",
        "connector.start.fail.if": str(marker),
    }
    cluster.create(name, config, via=1)
    cluster.wait_running(name, 2)
    stored = cluster.request("GET", f"/connectors/{name}/tasks").json()
    before = set(host_pids(f"{name}-"))
    assert len(before) == 2
    marker.touch()

    failures = _failures_logged(cluster, name)
    response = cluster.request("POST", f"/connectors/{name}/restart?includeTasks=true", via=2)
    assert response.status_code == 202, response.text
    assert response.json()["connector"]["state"] == "RESTARTING"
    assert [t["state"] for t in response.json()["tasks"]] == ["RESTARTING", "RESTARTING"]
    wait_until(lambda: _failures_logged(cluster, name) > failures, 60, "the restart to fail")
    wait_until(
        lambda: (
            _connector_failed_tasks_running(cluster, name, 2)
            and len(set(host_pids(f"{name}-")) - before) == 2
        ),
        60,
        "the connector FAILED and both tasks running again in new hosts",
    )
    restarted = set(host_pids(f"{name}-"))
    assert len(restarted) == 2
    assert cluster.request("GET", f"/connectors/{name}/tasks").json() == stored

    # Only the failed connector is planned: it fails again, its running tasks run on.
    failures = _failures_logged(cluster, name)
    response = cluster.request(
        "POST", f"/connectors/{name}/restart?includeTasks=true&onlyFailed=true", via=0
    )
    assert response.status_code == 202, response.text
    assert response.json()["connector"]["state"] == "RESTARTING"
    assert [t["state"] for t in response.json()["tasks"]] == ["RUNNING", "RUNNING"]
    wait_until(lambda: _failures_logged(cluster, name) > failures, 60, "the restart to fail")
    wait_until(
        lambda: _connector_failed_tasks_running(cluster, name, 2), 60, "the connector FAILED"
    )
    assert set(host_pids(f"{name}-")) == restarted

    marker.unlink()
    response = cluster.request("POST", f"/connectors/{name}/restart?onlyFailed=true", via=1)
    assert response.status_code == 202, response.text
    assert response.json()["connector"]["state"] == "RESTARTING"
    assert [t["state"] for t in response.json()["tasks"]] == ["RUNNING", "RUNNING"]
    cluster.wait_running(name, 2)
    assert set(host_pids(f"{name}-")) == restarted
    assert cluster.request("GET", f"/connectors/{name}/tasks").json() == stored
    assert cluster.request("DELETE", f"/connectors/{name}").status_code == 204


def _wait_size(path: Path, lines: int, timeout_s: float = 120) -> None:
    """Until ``path`` holds ``lines`` lines' bytes (every line of the copy is LINE_BYTES long):
    a cheap progress check; the final comparison is line by line."""
    wait_until(
        lambda: path.exists() and path.stat().st_size >= lines * LINE_BYTES,
        timeout_s,
        f"{lines} lines in {path.name}",
    )


def _tasks_on(cluster: DistributedCluster, names: list[str], index: int) -> bool:
    """Whether task 0 of each connector in ``names`` is RUNNING on worker ``index``."""
    for name in names:
        tasks = cluster.status(name, via=index).get("tasks") or [{}]
        if tasks[0].get("state") != "RUNNING" or tasks[0].get("worker_id") != cluster.worker_id(
            index
        ):
            return False
    return True


def test_a_million_lines_copied_through_every_worker_lose_and_duplicate_nothing(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    """Kafka's clean-bounce scenario, made to move the copy: the source and sink tasks run on
    each worker in turn. For each worker, the other two are stopped cleanly (SIGTERM) while
    lines are in flight, the work moves to the one left, which copies alone, and the two come
    back (load balancing moves work to them, again mid-copy). Then a pause/resume and a restart
    of both connectors, mid-copy as well. Zero lines lost, zero duplicated, in order."""
    source, sink = _file_pipeline(cluster, tmp_path, "copy", broker)
    names = ["copy-src", "copy-sink"]
    written = 0

    def append() -> None:
        """The next slice of the copy (the last slice takes the remainder)."""
        nonlocal written
        end = COPY_LINES if written + 2 * COPY_SLICE > COPY_LINES else written + COPY_SLICE
        with source.open("a") as fh:
            fh.write("".join(_line(i) for i in range(written, end)))
        written = end

    ran_on: dict[str, set[int]] = {name: set() for name in names}
    for alone in range(WORKERS):
        others = [i for i in range(WORKERS) if i != alone]
        append()
        cluster.stop_workers(others)
        wait_until(
            partial(_tasks_on, cluster, names, alone),
            (SESSION_TIMEOUT_MS + SCHEDULED_DELAY_MS) / 1000 + 60,
            f"both tasks running on worker {alone}, the only one left",
        )
        append()
        _wait_size(sink, written)  # copied by worker `alone` on its own
        for name in names:
            ran_on[name].add(alone)
        append()
        cluster.restart_workers(others)
    assert ran_on == {name: set(range(WORKERS)) for name in names}

    append()
    for name in names:
        assert cluster.request("PUT", f"/connectors/{name}/pause", via=1).status_code == 202
    for name in names:
        cluster.wait_running(name, 1, state="PAUSED")
    append()
    for name in names:
        assert cluster.request("PUT", f"/connectors/{name}/resume", via=2).status_code == 202
    append()
    for name in names:
        response = cluster.request("POST", f"/connectors/{name}/restart?includeTasks=true", via=0)
        assert response.status_code == 202, response.text
    while written < COPY_LINES:
        append()

    _wait_lines(sink, COPY_LINES, timeout_s=240)
    time.sleep(1)  # anything duplicated would arrive now
    lines = _lines(sink)
    counts = collections.Counter(lines)
    assert len(counts) == COPY_LINES  # zero lost
    assert [k for k, n in counts.items() if n > 1] == []  # zero duplicated
    assert lines == [_line(i).strip() for i in range(COPY_LINES)]  # in order


@pytest.mark.parametrize("victim", ["follower", "leader"])
def test_a_killed_workers_tasks_move_within_the_bound_and_no_other_task_stops(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path, victim: str
) -> None:
    """Kafka's hard-bounce scenario: ``kill -9`` of a follower (the leader holds its work back
    for the scheduled delay) or of the leader (a new leader has no memory of the lost work and
    assigns it at once). Every task the killed worker ran is running elsewhere within session
    timeout + delay + 5 s; the survivors start exactly those tasks and stop none (their logs'
    task start and stop lines, and their tasks' plugin host pids, are counted)."""
    names = [f"kill-{victim}-{i}" for i in range(3)]
    pipelines = [_file_pipeline(cluster, tmp_path, n, broker) for n in names]
    for source, _ in pipelines:
        source.write_text("".join(_line(i) for i in range(1000)))
    for _, sink in pipelines:
        _wait_lines(sink, 1000)

    leader = cluster.leader()
    before = cluster.placement()
    load = collections.Counter(worker for _, worker in before.values())
    index = (
        leader
        if victim == "leader"
        else max(
            (i for i in range(WORKERS) if i != leader),
            key=lambda i: load[cluster.worker_id(i)],
        )
    )
    killed = cluster.worker_id(index)
    lost = {task for task, (_, worker) in before.items() if worker == killed}
    assert lost, f"worker {index} runs no task: {before}"
    survivors = [i for i in range(WORKERS) if i != index]
    ours = [f"{n}-{kind}" for n in names for kind in ("src", "sink")]
    hosts = {c: set(host_pids(f"{c}-0")) for c in ours if f"{c}-0" not in lost}
    assert all(hosts.values()), hosts
    marks = {i: cluster.log_mark(i) for i in survivors}

    killed_at, killed_wall = time.monotonic(), time.time()
    cluster.kill(index)
    try:

        def moved() -> bool:
            now = cluster.placement(via=survivors[0])
            return all(
                task in now and now[task][1] != killed and now[task][0] == before[task][0]
                for task in lost
            )

        bound_s = (SESSION_TIMEOUT_MS + SCHEDULED_DELAY_MS) / 1000 + FAILOVER_SLACK_S
        wait_until(moved, bound_s * 3, "the killed worker's tasks running elsewhere")
        elapsed = time.monotonic() - killed_at

        for source, _ in pipelines:
            with source.open("a") as fh:
                fh.write("".join(_line(i) for i in range(1000, 2000)))
        duplicates = 0
        for name, (_, sink) in zip(names, pipelines, strict=True):
            lines = _wait_lines(sink, 2000)
            assert set(lines) == {_line(i).strip() for i in range(2000)}, name  # zero lost
            duplicates += len(lines) - len(set(lines))

        # Counted after the copy went on, so late stops would show too.
        events = [e for i in survivors for e in cluster.task_events(i, marks[i])]
        starts = sorted(task for task, what in events if what == "starting")
        stops = sorted(task for task, what in events if what == "stopped")
        print(
            f"\nkill -9 of the {victim}: {len(lost)} tasks running elsewhere after {elapsed:.1f} s "
            f"(bound {bound_s:.0f} s); survivors: {len(starts)} task starts, {len(stops)} stops; "
            f"{duplicates} duplicated lines (at-least-once after a hard bounce)"
        )
        timeline = cluster.timeline(survivors, marks, killed_wall)
        print(f"survivors' steps since the kill:\n{timeline}")
        assert elapsed <= bound_s, f"{elapsed:.1f} s > {bound_s:.1f} s; steps:\n{timeline}"
        assert stops == [], "tasks on surviving workers were stopped"
        assert starts == sorted(lost)  # each lost task started once, nothing else
        for connector, pids in hosts.items():  # same plugin host, still alive
            assert set(host_pids(f"{connector}-0")) == pids, connector
    finally:  # a failed check must not leave the module's cluster a worker short
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
    # Created PAUSED, it has no task configs until resumed (as in Kafka).
    wait_until(lambda: _paused_without_tasks(cluster, "restore-paused"), 30, "restore-paused")
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
    wait_until(lambda: _paused_without_tasks(cluster, "restore-paused"), 30, "restore-paused")
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
            if what == "create":  # this worker reads the new config from the config topic
                wait_until(
                    lambda: other in cluster.request("GET", "/connectors", via).json(),  # noqa: B023
                    30,
                    f"worker {via} to know {other}",
                )
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


def test_stopping_a_connector_whose_start_hangs_reclaims_it(cluster: DistributedCluster) -> None:
    """A stop, like a delete, reclaims a start that hangs after the graceful timeout
    (docs/operator-guide.md), not at the call's deadline; while it starts, the connector's
    status is UNASSIGNED, not a 404."""
    name = "hung-stop"
    config = {"connector.class": "FaultySource", "topic": "unused", "hang.in": "connector.start"}
    created = cluster.request("POST", "/connectors", 0, json={"name": name, "config": config})
    assert created.status_code == 201, created.text
    wait_until(
        lambda: any("faulty: hanging in connector.start" in w.text() for w in cluster.workers),
        30,
        "the plugin to hang in connector.start",
    )

    def status() -> httpx.Response | None:
        response = cluster.request("GET", f"/connectors/{name}/status", 1)
        return response if response.status_code == 200 else None

    # Statuses travel through the status topic: another worker reads this one shortly after.
    starting = wait_until(status, 10, "another worker to read the starting connector's status")
    assert starting.json()["connector"]["state"] == "UNASSIGNED"
    started = time.monotonic()
    assert cluster.request("PUT", f"/connectors/{name}/stop", 1).status_code in (202, 204)
    wait_until(
        lambda: cluster.status(name).get("connector", {}).get("state") == "STOPPED",
        CALL_TIMEOUT_MS / 1000 + 30,
        "the connector STOPPED",
    )
    assert time.monotonic() - started < CALL_TIMEOUT_MS / 1000  # reclaimed, not waited out
    wait_until(partial(no_hosts_of, name), 10, "its hung host to be gone")
    said = [line for w in cluster.workers for line in w.text().splitlines() if name in line]
    assert any("connector stopped; killing its plugin host" in line for line in said), said
    assert not any("did not complete within" in line for line in said), said
    assert cluster.request("DELETE", f"/connectors/{name}").status_code == 204


def _listed_everywhere(cluster: DistributedCluster, prefix: str) -> set[str]:
    """The connectors named ``prefix...``, once every worker lists the same ones."""

    def listed(via: int) -> set[str]:
        found = cluster.request("GET", "/connectors", via).json()
        return {name for name in found if name.startswith(prefix)}

    def agreed() -> list[set[str]] | None:
        seen = [listed(i) for i in range(WORKERS)]
        return [seen[0]] if all(s == seen[0] for s in seen) else None

    agreement: list[set[str]] = wait_until(agreed, 60, "every worker listing the same")
    return agreement[0]


def test_a_create_delete_storm_through_every_worker_leaves_one_consistent_cluster(
    cluster: DistributedCluster,
) -> None:
    """Concurrent creates and deletes of a few names, sent to any worker (forwarded to the
    leader), as a script or a UI's users would: every answer is one Kafka gives (201, 204,
    404, 409), each name ends created exactly as often as deleted plus whether it is listed,
    every worker lists the same, what is listed runs its tasks, and nothing deleted keeps a
    plugin host anywhere (the standalone storm found a re-created connector FAILED by the
    previous one's reclaim)."""
    names = [f"dstorm{i}" for i in range(STORM_NAMES)]
    config = {"connector.class": "FaultySource", "topic": "unused", "tasks.max": "2"}
    statuses: list[int] = []
    net = dict.fromkeys(names, 0)
    lock = threading.Lock()

    def call(i: int) -> None:
        rng = random.Random(i)
        name, via = rng.choice(names), rng.randrange(WORKERS)
        response = lifecycle_call(cluster.urls[via], "create" if i % 2 else "delete", name, config)
        with lock:
            statuses.append(response.status_code)
            net[name] += {201: 1, 204: -1}.get(response.status_code, 0)

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(call, range(STORM_CALLS)))
    assert set(statuses) <= {201, 204, 404, 409}, collections.Counter(statuses)
    assert 201 in statuses and 204 in statuses, collections.Counter(statuses)

    everywhere = _listed_everywhere(cluster, "dstorm")
    assert net == {name: int(name in everywhere) for name in names}
    for name in sorted(everywhere):
        cluster.wait_running(name, 2, STORM_SETTLE_S)
    for name in set(names) - everywhere:
        wait_until(partial(no_hosts_of, name), 30, f"no plugin host left of deleted {name}")
    for name in everywhere:
        assert cluster.request("DELETE", f"/connectors/{name}").status_code == 204


def test_a_connector_created_again_while_its_removal_runs_is_assigned_and_runs(
    cluster: DistributedCluster,
) -> None:
    """A delete followed at once by a create of the same name (a script re-deploying, or the
    storm above): the worker holding the old connector is still removing it (here its stop()
    hangs until the graceful timeout reclaims it) when the leader assigns the next round and
    reads the name configured again, so it counts the connector as still running there. Once
    that worker has let go of the old one, it rejoins and the new one is assigned and runs.
    Before, nobody ran it and its status was a 404 until something else rebalanced the
    group (CI saw a create-delete storm leave one such connector for 60 s)."""
    name = "recreated"
    hanging = {
        "connector.class": "FaultySource",
        "topic": "unused",
        "tasks.max": "2",
        "hang.in": "connector.stop",
    }
    plain = {k: v for k, v in hanging.items() if k != "hang.in"}
    for round_ in range(3):
        created = lifecycle_call(cluster.urls[round_ % WORKERS], "create", name, hanging)
        assert created.status_code == 201, created.text
        cluster.wait_running(name, 2)
        deleted = lifecycle_call(cluster.urls[(round_ + 1) % WORKERS], "delete", name, {})
        assert deleted.status_code == 204, deleted.text
        again = lifecycle_call(cluster.urls[(round_ + 2) % WORKERS], "create", name, plain)
        assert again.status_code == 201, again.text
        cluster.wait_running(name, 2, timeout_s=45)
        assert cluster.request("DELETE", f"/connectors/{name}").status_code == 204
        wait_until(partial(no_hosts_of, name), 30, f"no plugin host left of {name}")


def test_tasks_removed_by_a_lower_tasks_max_never_show_again_while_they_stop(
    cluster: DistributedCluster,
) -> None:
    """tasks.max lowered from 3 to 1 while the tasks take seconds to stop (a sink's final
    commit on a loaded machine does): once a worker's status lists task 0 alone, tasks 1 and 2
    never come back in it. Before, the leader removed their statuses after the rebalance the
    new task configs caused, and their stops wrote UNASSIGNED after that: the side-by-side
    run in CI listed tasks [0, 2] after it had listed [0]."""
    name = "shrunk-slow-stop"
    config = {
        "connector.class": "FaultySource",
        "topic": "unused",
        "tasks.max": "3",
        "task.stop.ms": "2000",
    }
    cluster.create(name, config)
    cluster.wait_running(name, 3)
    put = cluster.request("PUT", f"/connectors/{name}/config", json={**config, "tasks.max": "1"})
    assert put.status_code == 200, put.text
    listed: list[list[list[int]]] = [[] for _ in range(WORKERS)]  # each worker's, in turn
    deadline = time.monotonic() + 3 * 2 + 6  # the stops, one after another, and their hosts
    while time.monotonic() < deadline:
        for via in range(WORKERS):
            tasks = cluster.status(name, via=via).get("tasks", [])
            ids = sorted(t["id"] for t in tasks)
            if not listed[via] or listed[via][-1] != ids:
                listed[via].append(ids)
        time.sleep(0.05)
    for via, seen in enumerate(listed):
        assert [0] in seen, (via, listed)
        assert seen[seen.index([0]) :] == [[0]], (via, listed)
    cluster.wait_running(name, 1)
    assert cluster.request("DELETE", f"/connectors/{name}").status_code == 204


def _settled_everywhere(cluster: DistributedCluster, name: str, tasks: int) -> str | None:
    """The connector's state when every worker reports the same status and its tasks agree
    with it (RUNNING or PAUSED with ``tasks`` tasks in that state, STOPPED with none)."""
    seen = [cluster.status(name, via=i) for i in range(WORKERS)]
    if not seen[0] or any(s != seen[0] for s in seen):
        return None
    state = seen[0]["connector"]["state"]
    task_states = [t["state"] for t in seen[0]["tasks"]]
    if state == "STOPPED":
        return state if not task_states else None
    if state == "PAUSED" and not task_states:
        return state  # paused from STOPPED: no task until resumed (Kafka's KIP-980)
    if state in ("RUNNING", "PAUSED") and task_states == [state] * tasks:
        return str(state)
    return None


def test_a_storm_of_every_lifecycle_call_through_every_worker_leaves_each_connector_settled(
    cluster: DistributedCluster,
) -> None:
    """Creates, config updates, deletes, pauses, resumes, stops and restarts of a few names
    from many threads, each sent to any worker: only Kafka's answers (409 while the group
    rebalances), and afterwards every worker lists the same connectors, each settled in one
    state with its tasks agreeing and running again once resumed; nothing deleted keeps a
    plugin host."""
    names = [f"dmix{i}" for i in range(STORM_NAMES)]
    config = {"connector.class": "FaultySource", "topic": "unused", "tasks.max": "2"}
    lifecycle_storm(cluster.urls, names, config, STORM_CALLS, 16, rebalancing=True)

    everywhere = _listed_everywhere(cluster, "dmix")
    for name in sorted(everywhere):
        try:
            wait_until(
                partial(_settled_everywhere, cluster, name, 2), STORM_SETTLE_S, f"{name} settled"
            )
        except AssertionError as exc:
            seen = [cluster.status(name, via=i) for i in range(WORKERS)]
            raise AssertionError(
                f"{exc}; its status on each worker: {seen}\n{cluster.warnings()}\n"
                f"{cluster.lines_about(name)}"
            ) from None
        assert cluster.request("PUT", f"/connectors/{name}/resume").status_code == 202
        cluster.wait_running(name, 2)
    for name in set(names) - everywhere:
        wait_until(partial(no_hosts_of, name), 30, f"no plugin host left of deleted {name}")
    for name in everywhere:
        assert cluster.request("DELETE", f"/connectors/{name}").status_code == 204


def test_a_patch_whose_connector_is_deleted_while_it_validates_is_404(
    cluster: DistributedCluster,
) -> None:
    """A PATCH reads the config, validates the patched one (plugin code, outside the leader's
    writes), then writes it: a delete in between makes it a 404, never a create of the
    patched config (the connector came back after its delete answered 204)."""
    name, leader = "patched-while-deleted", cluster.leader()
    cluster.create(name, {"connector.class": "FaultySource", "topic": "unused"}, via=leader)
    slow = "4001"  # this test's own: the log line it prints tells validation has begun
    patched: list[httpx.Response] = []
    thread = threading.Thread(
        target=lambda: patched.append(
            cluster.request(
                "PATCH", f"/connectors/{name}/config", leader, json={"connector.validate.ms": slow}
            )
        ),
        daemon=True,
    )
    thread.start()
    wait_until(
        lambda: f"faulty: validating for {slow} ms" in cluster.workers[leader].text(),
        30,
        "the PATCH's validation to begin",
    )
    assert cluster.request("DELETE", f"/connectors/{name}", leader).status_code == 204
    thread.join(60)
    assert patched and patched[0].status_code == 404, patched[0].text
    for via in range(WORKERS):
        assert cluster.request("GET", f"/connectors/{name}", via).status_code == 404


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


def test_a_transform_patched_in_reaches_every_task_also_on_workers_without_the_instance(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    """The tester's case: a worker holding two or more tasks of a connector whose instance
    runs elsewhere restarted them on the config it had first seen (its tasks restart one at
    a time, so its entry of the connector never went idle): their lines stayed plain."""
    name, tasks = "hoisted", 6
    topic = f"{cluster.group}-{name}"
    broker.create_topic(topic, tasks)
    out = tmp_path / "hoisted.out"
    config = {
        "connector.class": "FileStreamSink",
        "file": str(out),
        "topics": topic,
        "tasks.max": str(tasks),
    }
    cluster.create(name, config, via=1)
    status = cluster.wait_running(name, tasks)
    held = collections.Counter(t["worker_id"] for t in status["tasks"])
    assert any(
        count >= 2 and worker != status["connector"]["worker_id"] for worker, count in held.items()
    ), f"no worker holds two tasks without the instance: {held}"
    marks = {i: cluster.log_mark(i) for i in range(WORKERS)}
    hoist = {
        "transforms": "h",
        "transforms.h.type": "org.apache.kafka.connect.transforms.HoistField$Value",
        "transforms.h.field": "line",
    }
    response = cluster.request("PATCH", f"/connectors/{name}/config", 2, json=hoist)
    assert response.status_code == 200, response.text

    def restarted() -> bool:
        started = {
            task
            for i in range(WORKERS)
            for task, event in cluster.task_events(i, marks[i])
            if event == "starting" and task.startswith(f"{name}-")
        }
        return len(started) == tasks

    wait_until(restarted, 60, f"every task of {name} restarted")
    cluster.wait_running(name, tasks)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for partition in range(tasks):
        for i in range(20):
            producer.produce(topic, f"after-{partition}-{i}".encode(), partition=partition)
    assert producer.flush(30) == 0
    lines = _wait_lines(out, tasks * 20, 60)
    plain = [line for line in lines if not line.startswith("Struct{line=after-")]
    assert plain == [], f"{len(plain)} lines written without the transform: {plain[:3]}"
    assert cluster.request("DELETE", f"/connectors/{name}", 0).status_code == 204


def test_a_connector_created_stopped_has_its_offsets_altered_before_its_first_start(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    """KIP-980 and KIP-875 across workers: created STOPPED through one worker, offsets altered
    through another, resumed through the third; the source starts at the altered position."""
    name, source = "altered", tmp_path / "altered.in"
    source.write_text("".join(_line(i) for i in range(100)))
    topic = f"{cluster.group}-{name}"
    broker.create_topic(topic, 1)
    config = {"connector.class": "FileStreamSource", "file": str(source), "topic": topic}
    cluster.create(name, config, via=0, initial_state="STOPPED")
    wait_until(
        lambda: cluster.status(name, via=2).get("connector", {}).get("state") == "STOPPED",
        30,
        f"{name} STOPPED",
    )
    skipped = len(_line(0)) * 40  # the first 40 lines, in bytes (FileStreamSource's position)
    offsets = {
        "offsets": [{"partition": {"filename": str(source)}, "offset": {"position": skipped}}]
    }
    response = cluster.request("PATCH", f"/connectors/{name}/offsets", 1, json=offsets)
    assert response.status_code == 200, response.text
    assert cluster.request("GET", f"/connectors/{name}/offsets", 2).json() == offsets
    assert cluster.request("PUT", f"/connectors/{name}/resume", 2).status_code == 202
    cluster.wait_running(name, 1)
    records = read_all(broker.bootstrap_servers, topic, 60)
    assert [m.value().decode() for m in records] == [_line(i).strip() for i in range(40, 100)]
    assert cluster.request("DELETE", f"/connectors/{name}", 0).status_code == 204


def test_a_cluster_scope_logger_level_reaches_every_worker(cluster: DistributedCluster) -> None:
    namespace = "copycat.e2e.cluster-scope"  # a logger of this test's own: no other is touched

    def everywhere(level: str) -> bool:
        return all(
            cluster.request("GET", f"/admin/loggers/{namespace}", i).json().get("level") == level
            for i in range(WORKERS)
        )

    for level in ("TRACE", "WARN"):  # set, then changed again
        response = cluster.request(
            "PUT", f"/admin/loggers/{namespace}?scope=cluster", 1, json={"level": level}
        )
        assert response.status_code == 204, response.text
        wait_until(partial(everywhere, level), 30, f"{namespace} at {level} on every worker")


def test_a_cluster_scope_logger_level_reaches_plugin_code_on_any_worker(
    cluster: DistributedCluster, tmp_path: Path
) -> None:
    """Whichever worker runs the task applies the record, and its plugin host gets the level
    without a restart: the running task, waiting for its file, logs its DEBUG line."""
    name, source = "cluster-debug", tmp_path / "later.txt"
    config = {"connector.class": "FileStreamSource", "file": str(source), "topic": "unused"}
    cluster.create(name, config, via=0)
    cluster.wait_running(name, 1)
    opened = f"DEBUG copycat_file.source: [{name}-0] Opened {source} for reading"
    try:
        response = cluster.request(
            "PUT", "/admin/loggers/copycat_file?scope=cluster", 2, json={"level": "DEBUG"}
        )
        assert response.status_code == 204, response.text
        wait_until(
            lambda: all(
                cluster.request("GET", "/admin/loggers/copycat_file", i).json().get("level")
                == "DEBUG"
                for i in range(WORKERS)
            ),
            30,
            "copycat_file at DEBUG on every worker",
        )
        time.sleep(1)  # far more than one slice of the task's loop (RUN_SLICE_S)
        source.write_text("a\n")
        wait_until(
            lambda: any(opened in worker.text() for worker in cluster.workers),
            30,
            "the running task's DEBUG line",
        )
    finally:
        cluster.request(
            "PUT", "/admin/loggers/copycat_file?scope=cluster", 0, json={"level": "INFO"}
        )
        assert cluster.request("DELETE", f"/connectors/{name}", 0).status_code == 204


def test_a_task_on_the_spark_runtime_of_a_worker_without_spark_fails_naming_the_key(
    cluster: DistributedCluster, tmp_path: Path
) -> None:
    """Spark runs in distributed mode (tests/e2e/test_distributed_spark.py); a worker that has
    no spark.master cannot run a task on it, and says so in the task's status instead of
    crashing or leaving it UNASSIGNED."""
    config = {
        "connector.class": "FileStreamSource",
        "file": str(tmp_path / "in.txt"),
        "topic": "unused",
        "task.runtime": "spark",
    }
    cluster.create("on-spark", config, via=1)
    status = cluster.wait_running("on-spark", 1, state="FAILED")
    assert "task.runtime=spark needs spark.master" in status["tasks"][0]["trace"]
    assert cluster.request("DELETE", "/connectors/on-spark", 2).status_code == 204


def _topic_values(bootstrap: str, topic: str, timeout_s: float = 10) -> list[bytes]:
    """Every record value of every partition of ``topic`` (read until it is quiet)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline, quiet_since = time.monotonic() + timeout_s, time.monotonic()
    try:
        while time.monotonic() < deadline and time.monotonic() - quiet_since < 3:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value() or b"")
                quiet_since = time.monotonic()
    finally:
        consumer.close()
    return values


def test_a_task_trace_quoting_a_resolved_value_is_scrubbed_in_the_status_topic_and_everywhere(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    """The worker that resolved the value scrubs the trace before it writes it: the status
    topic, which every worker reads and serves, never holds it, in any of the forms the trace
    quotes it (as is, and escaped as Python's repr escapes a backslash and a tab)."""
    secret_dir = f"SECRETDIR{uuid.uuid4().hex[:8]}"
    missing = tmp_path / "nonexistent" / secret_dir
    secrets = tmp_path / "db.properties"
    # properties escapes: "\\" is one backslash, "\t" a tab
    secrets.write_text(f"inpath={missing}\\\\Bs\\tTab/in.txt\n")
    resolved = f"{missing}\\Bs\tTab/in.txt"
    placeholder = f"${{file:{secrets}:inpath}}"
    topic = f"{cluster.group}-dt2"
    broker.create_topic(topic, 1)
    cluster.create(
        "dsink2",
        {"connector.class": "FileStreamSink", "topics": topic, "file": placeholder},
        via=0,
    )

    def failed_everywhere() -> list[dict[str, Any]] | None:
        statuses = [cluster.status("dsink2", via=i) for i in range(WORKERS)]
        done = all(s.get("tasks") and s["tasks"][0]["state"] == "FAILED" for s in statuses)
        return statuses if done else None

    statuses = wait_until(failed_everywhere, 60, "dsink2's task FAILED on every worker")
    for status in statuses:
        trace = status["tasks"][0]["trace"]
        assert placeholder in trace
        assert secret_dir not in trace, trace
    stored = b"\n".join(_topic_values(broker.bootstrap_servers, f"{cluster.group}-status"))
    assert b"dsink2" in stored
    assert secret_dir.encode() not in stored
    assert resolved.encode() not in stored


def test_sigterm_ends_the_wait_for_an_unreachable_cluster_at_once(
    tmp_path: Path, bundled_plugin_path: Path
) -> None:
    """A distributed worker waiting for its Kafka cluster at start-up stops at once on
    SIGTERM, as Kafka Connect exits at once. It used to run on until default.api.timeout.ms
    (60 s) was out, then exit 1."""
    closed, address = unreachable_address()
    with closed:
        worker = CliWorker(
            tmp_path, worker_props(address, "never-joined", bundled_plugin_path), mode="distributed"
        )
        try:
            elapsed = signal_while_connecting(worker, signal.SIGTERM, SIGNAL_EXIT_S)
        finally:
            worker.close()
    assert elapsed < SIGNAL_EXIT_S, (elapsed, worker.text()[-3000:])
    assert worker.wait() == 0, worker.text()[-3000:]  # a graceful stop, not a failure
    assert "copycat: error" not in worker.text()
    assert "Traceback" not in worker.text()


# Past the group's session timeout and rebalance timeout (60 s), the consumers' session
# timeout (45 s) and AnyIO's idle-thread retirement (10 s).
IDLE_S = 150


# The idle alone is half of pytest's default timeout (300 s, setup included).
@pytest.mark.timeout(600)
def test_a_pipeline_left_idle_for_minutes_moves_new_lines_at_once_without_a_rebalance(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    """As a user leaves a pipeline deployed through REST: it moves a first batch, the cluster
    sits idle for minutes, and the next lines move as soon as they are written; meanwhile no
    worker rebalanced (an idle member that missed heartbeats would make one) and every
    worker still reports the same owners."""
    source, sink = _file_pipeline(cluster, tmp_path, "idle", broker)
    source.write_text("".join(_line(i) for i in range(100)))
    _wait_lines(sink, 100)
    urls = list(cluster.urls)

    def generations() -> list[object]:
        return [
            (m["epoch"], m["completed_rebalances_total"])
            for m in (_rebalance_metrics(url) for url in urls)
        ]

    before = generations()
    statuses = {name: cluster.status(name) for name in ("idle-src", "idle-sink")}
    time.sleep(IDLE_S)
    assert generations() == before, "a rebalance while the cluster was idle"
    for name, status in statuses.items():
        assert [cluster.status(name, via=i) for i in range(len(urls))] == [status] * len(urls)
    with source.open("a") as fh:
        fh.write("".join(_line(i) for i in range(100, 200)))
    assert _wait_lines(sink, 200, 30) == [_line(i).strip() for i in range(200)]
    for name in statuses:
        assert cluster.request("DELETE", f"/connectors/{name}").status_code == 204
