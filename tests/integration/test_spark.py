"""The Spark data plane on a real Spark cluster (``local-cluster[2,1,1024]``: two executor JVMs
of one slot each) and the run's Apache Kafka: tasks run on executors, plugins stay isolated
there, nothing is lost when an executor is killed, offsets move between runtimes, and REST
controls tasks on Spark as it controls local ones.

One SparkSession for the whole module (starting one takes ~20 s); pytest-xdist's ``loadfile``
keeps every test of this module in one process, where the session lives. Each test runs an
in-process standalone worker (``RestWorker``) that joins that session.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import threading
import time
import uuid
import weakref
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from registry import install
from tests.support.kafka import read_all, wait_for
from tests.support.probe_plugins import probe_plugins
from tests.support.processes import runs_kafka_client
from tests.support.rest import RestWorker
from tests.support.spark import (
    executor_jvm_of,
    process_cwd,
    processes_under,
    start_session,
    stop_session,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]

# A task on Spark reports every 0.5 s in these tests (the default is 1 s).
HEARTBEAT_MS = "500"
# Starting a task on a busy 2-core machine: job scheduling, a Python worker fork, an env built
# offline with uv on first use, the plugin host, the Kafka clients.
TASK_START_S = 90.0
# What REST control must take on Spark-run tasks ("within a few seconds"), with slack for
# a loaded machine.
CONTROL_S = 10.0


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = start_session()
    try:
        yield session
    finally:
        stop_session(session)


def _worker(tmp: Path, bootstrap: str, plugin_path: Path, **extra: str) -> RestWorker:
    return RestWorker(
        tmp,
        bootstrap,
        plugin_path,
        {
            "task.runtime": "spark",
            "spark.master": "local-cluster[2,1,1024]",  # joins the module's session
            "task.spark.heartbeat.interval.ms": HEARTBEAT_MS,
            **extra,
        },
    )


def _status(http: httpx.Client, name: str) -> dict[str, Any]:
    response = http.get(f"/connectors/{name}/status")
    return response.json() if response.status_code == 200 else {}


def _task_state(http: httpx.Client, name: str, task: int = 0) -> str | None:
    tasks = _status(http, name).get("tasks", [])
    return next((t["state"] for t in tasks if t["id"] == task), None)


def _wait_state(http: httpx.Client, name: str, state: str, timeout_s: float) -> dict[str, Any]:
    wait_for(lambda: _task_state(http, name) == state, timeout_s, f"{name} task 0 {state}")
    return _status(http, name)


def _task_startups(http: httpx.Client) -> dict[str, float]:
    """The worker's task-startup counters from ``GET /metrics``: attempts, success, failure."""
    from prometheus_client.parser import text_string_to_metric_families

    prefix = "kafka_connect_connect_worker_task_startup_"
    counts = {}
    for family in text_string_to_metric_families(http.get("/metrics").text):
        for sample in family.samples:
            if sample.name.startswith(prefix) and sample.name.endswith("_total"):
                counts[sample.name[len(prefix) :].removesuffix("_total")] = sample.value
    return counts


def _runner(worker: RestWorker, name: str, task: int = 0) -> Any:
    assert worker.herder.worker is not None
    return worker.herder.worker.connectors[name].tasks[task]


@pytest.fixture
def plugins(tmp_path: Path, plugin_index: Any) -> Path:
    """A plugin.path of the test's own (``tmp_path / "plugins"``) with the bundled converters
    (StringConverter) and file connectors, from the session's index."""
    from core.bundled import bundled_plugin_dirs, project_version

    plugin_path = tmp_path / "plugins"
    for project in bundled_plugin_dirs():
        name, version = project_version(project)
        if name in ("copycat-converters", "copycat-file"):
            install(f"{name}=={version}", plugin_path, index_url=plugin_index.index_url)
    return plugin_path


def _new_topic(broker: Any, prefix: str) -> str:
    """A topic ``<prefix>-<random>`` created on ``broker``."""
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic)
    return topic


# -- tests -------------------------------------------------------------------------------------


def test_tasks_run_in_executor_processes_from_envs_built_there_with_conflicting_libraries(
    spark: Any,
    tmp_path: Path,
    bootstrap_servers: str,
    plugins: Path,
    broker: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    lib, mod_a, mod_b = probe_plugins(tmp_path, plugins)
    topics = {m: f"probe-{m}-{uuid.uuid4().hex[:6]}" for m in (mod_a, mod_b)}
    for topic in topics.values():
        broker.create_topic(topic)
    with _worker(tmp_path, bootstrap_servers, plugins) as worker, worker.client() as http:
        for module, topic in topics.items():
            config = {"connector.class": f"{module}.Source", "topic": topic, "tasks.max": "1"}
            assert http.put(f"/connectors/{module}/config", json=config).status_code == 201
        statuses = {m: _wait_state(http, m, "RUNNING", TASK_START_S) for m in topics}
        records = {
            m: [json.loads(r.value()) for r in read_all(bootstrap_servers, t, 3)]
            for m, t in topics.items()
        }
        sc = spark.sparkContext
        jvms = {}
        for module, status in statuses.items():
            runner = _runner(worker, module)
            placement = runner.placement
            # Spark's status API: the task's job group has a running job whose task runs on
            # the executor its status names.
            assert placement is not None and placement.job_id is not None
            assert placement.job_id in sc.statusTracker().getJobIdsForGroup(runner.group)
            assert sc.statusTracker().getJobInfo(placement.job_id).status == "RUNNING"
            worker_id = status["tasks"][0]["worker_id"]
            assert f"executor {placement.executor_id} on {placement.host}" in worker_id
            assert runner.group in worker_id
            latest = records[module][-1]
            jvm = executor_jvm_of(latest["pid"])
            assert jvm is not None, f"host {latest['pid']} is not under an executor JVM"
            jvms[module] = jvm
            # The host runs from the env cache inside that executor's working directory,
            # built from the archive Spark shipped to it.
            cache = process_cwd(jvm) / "copycat-envs"
            prefix = Path(latest["prefix"])
            assert prefix.parent == cache, (prefix, cache)
            lock = (prefix / "pylock.toml").read_text()
            assert f'"{process_cwd(jvm)}/copycat-env-' in lock  # built-from-wheelhouse
            assert runner.remote.get("plugin_modules_here") == []
            # One attempt, one host: a second pid means the task was started again (say when).
            assert all(r["pid"] == latest["pid"] for r in records[module]), (
                f"attempts: {runner.attempts}, status: {_status(http, module)}, records "
                f"(n, host pid): {[(r['n'], r['pid']) for r in records[module]]}, Spark log: "
                f"{[r.getMessage() for r in caplog.records if r.name.startswith('copycat.spark')]}"
            )
            # task.data.path=auto: the task's Kafka client runs in its host on the executor too.
            assert runner.spec.data_path == "host" and runs_kafka_client(latest["pid"])
        # Both connectors at once, one per executor, each with its own library version.
        assert jvms[mod_a] != jvms[mod_b]
        assert {r["lib"] for r in records[mod_a]} == {"1.0"}
        assert {r["lib"] for r in records[mod_b]} == {"2.0"}
        # Both slots of the cluster are held: a third connector is refused, saying why.
        third = {"connector.class": f"{mod_a}.Source", "topic": topics[mod_a], "tasks.max": "1"}
        assert http.put("/connectors/third/config", json=third).status_code == 201
        wait_for(lambda: _status(http, "third")["connector"]["state"] == "FAILED", 60)
        trace = _status(http, "third")["connector"]["trace"]
        assert "connector third needs 1 Spark task slots" in trace and "0 free of 2" in trace
        # The executors' Python (PYSPARK_PYTHON) cannot import any of it.
        for module in (lib, mod_a, mod_b):
            probe = subprocess.run(
                [os.environ["PYSPARK_PYTHON"], "-c", f"import {module}"], capture_output=True
            )
            assert probe.returncode != 0 and b"ModuleNotFoundError" in probe.stderr


def _file_pipeline(
    http: httpx.Client, topic: str, source_file: Path, sink_file: Path, **extra: str
) -> tuple[str, str]:
    source, sink = f"src-{topic}", f"sink-{topic}"
    configs = {
        source: {
            "connector.class": "FileStreamSource",
            "file": str(source_file),
            "topic": topic,
            "batch.size": "5000",
            **extra,
        },
        sink: {
            "connector.class": "FileStreamSink",
            "file": str(sink_file),
            "topics": topic,
            **extra,
        },
    }
    for name, config in configs.items():
        response = http.put(f"/connectors/{name}/config", json=config)
        assert response.status_code == 201, response.text
    return source, sink


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


# "line-0000000\n": the kill test's lines all have this length.
LINE_BYTES = 13


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_kill_9_of_an_executor_mid_run_loses_no_line_of_a_million(
    spark: Any, tmp_path: Path, bootstrap_servers: str, plugins: Path, broker: Any
) -> None:
    lines = 1_000_000
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.write_text("".join(f"line-{i:07d}\n" for i in range(lines)))
    topic = _new_topic(broker, "kill")
    with _worker(tmp_path, bootstrap_servers, plugins) as worker, worker.client() as http:
        source, sink = _file_pipeline(http, topic, source_file, sink_file)
        for name in (source, sink):
            _wait_state(http, name, "RUNNING", TASK_START_S)
        # Shipped: plugin.path is not needed on executors any more, nor when a task is
        # submitted again.
        plugins.rename(tmp_path / "plugins.moved")
        src, snk = _runner(worker, source), _runner(worker, sink)
        wait_for(lambda: src.remote.get("host_pids") and snk.remote.get("host_pids"), 30)
        src_pids, snk_pids = list(src.remote["host_pids"]), list(snk.remote["host_pids"])
        victim = executor_jvm_of(src_pids[0])
        survivor = executor_jvm_of(snk_pids[0])
        assert victim is not None and survivor is not None and victim != survivor
        victim_cache = process_cwd(victim) / "copycat-envs"
        sink_placement = snk.placement
        # Progress by file size (every line is LINE_BYTES long): reading a million lines ten
        # times a second would take a core from the pipeline under test.
        wait_for(lambda: _size(sink_file) >= lines // 4 * LINE_BYTES, 240, "a quarter")
        moved_before = _size(sink_file) // LINE_BYTES
        os.kill(victim, signal.SIGKILL)
        # The killed executor's Python worker and plugin hosts go with it: no orphans.
        wait_for(lambda: not any(_alive(p) for p in src_pids), 30, "the source's hosts gone")
        wait_for(lambda: not processes_under(victim_cache), 30, "nothing left of its env cache")
        assert moved_before < lines, "the run ended before the kill: nothing was proven"
        wait_for(lambda: _size(sink_file) >= lines * LINE_BYTES, 300, f"{lines} lines out")
        settled = -1
        while settled != _size(sink_file):  # duplicates may still be on their way
            settled = _size(sink_file)
            time.sleep(2)
        output = _lines(sink_file)
        counts = Counter(output)
        expected = {f"line-{i:07d}" for i in range(lines)}
        assert set(counts) == expected, "lines lost or made up"
        duplicates = len(output) - lines
        print(
            f"\nkill -9 of executor JVM {victim} after {moved_before} of {lines} lines: "
            f"{duplicates} duplicate lines ({len(counts)} distinct, {len(output)} written)"
        )
        # The source's task ran again elsewhere; the sink's task was never touched.
        assert src.attempts >= 2
        assert _task_state(http, source) == "RUNNING"
        assert snk.attempts == 1 and snk.placement == sink_placement
        assert all(_alive(p) for p in snk_pids)
        worker.tmp.joinpath("duplicates.txt").write_text(str(duplicates))


def _active_executors(spark: Any) -> dict[str, str]:
    """Spark's own view (its status API, as its UI shows): active executor id -> host."""
    sc = spark.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/executors"
    executors = httpx.get(url, timeout=10).json()
    return {
        e["id"]: e["hostPort"].rsplit(":", 1)[0]
        for e in executors
        if e["id"] != "driver" and e.get("isActive", True)
    }


def test_a_task_on_an_executor_killed_leaves_running_at_once_not_after_the_heartbeat_timeout(
    spark: Any, tmp_path: Path, bootstrap_servers: str, plugins: Path, broker: Any
) -> None:
    _, module, _ = probe_plugins(tmp_path, plugins)
    topic = _new_topic(broker, "lost")
    # The heartbeat watchdog cannot be what notices: it would wait ten minutes.
    extra = {"task.spark.heartbeat.timeout.ms": "600000"}
    with _worker(tmp_path, bootstrap_servers, plugins, **extra) as worker, worker.client() as http:
        config = {"connector.class": f"{module}.Source", "topic": topic, "interval.ms": "200"}
        assert http.put(f"/connectors/{module}/config", json=config).status_code == 201
        status = _wait_state(http, module, "RUNNING", TASK_START_S)
        runner = _runner(worker, module)
        wait_for(lambda: runner.remote.get("host_pids"), 30, "the task's plugin host")
        placement = runner.placement
        assert placement is not None
        # worker_id names the executor's host as Spark does (its UI), not the machine's name.
        hosts = _active_executors(spark)
        expected = f"executor {placement.executor_id} on {hosts[placement.executor_id]} ("
        assert expected in status["tasks"][0]["worker_id"], (status, hosts)
        # The other slot busy, so Spark cannot retry the task at once on the other executor
        # (its retry, seen in the next heartbeat, was then what noticed: "lost (retried)").
        busy = f"{module}-busy"
        assert http.put(f"/connectors/{busy}/config", json=config).status_code == 201
        _wait_state(http, busy, "RUNNING", TASK_START_S)
        victim = executor_jvm_of(runner.remote["host_pids"][0])
        assert victim is not None
        traces = _record_task_traces(worker, module)
        os.kill(victim, signal.SIGKILL)
        killed = time.monotonic()
        wait_for(lambda: _task_state(http, module) != "RUNNING", 20, "the task not RUNNING")
        left_running_s = time.monotonic() - killed
        task = _status(http, module)["tasks"][0]
        assert task["state"] == "UNASSIGNED", task
        assert f"executor {placement.executor_id} on {placement.host}" in task["trace"], task
        assert "was lost" in task["trace"], task
        # Submitted again (on the other executor, or the one Spark launches instead).
        status = _wait_state(http, module, "RUNNING", TASK_START_S)
        assert runner.attempts >= 2
        placement = runner.placement
        assert placement is not None
        wait_for(lambda: len(_active_executors(spark)) == 2, 120, "a replacement executor")
        host = _active_executors(spark)[placement.executor_id]
        assert f"executor {placement.executor_id} on {host} (" in status["tasks"][0]["worker_id"]
    print(f"\nthe task left RUNNING {left_running_s:.1f} s after its executor was killed")
    # Each status the task had on the way says why it was lost, and none is the Spark job's
    # cancellation the watchdog itself caused (Py4J's text and the JVM's stack were appended
    # when the cancelled job returned). Which of Spark's two views says so first is a race:
    # its executor list dropping the executor, or (seen once in CI on a loaded machine) its
    # status API failing the task with ExecutorLostFailure.
    lost = ("was lost (Spark lost executor", "ExecutorLostFailure")
    assert any(reason in t for t in traces for reason in lost), traces
    assert not [t for t in traces if "SPARK_JOB_CANCELLED" in t or "error occurred" in t], traces


def _record_task_traces(worker: RestWorker, name: str, task: int = 0) -> list[str]:
    """Every trace the worker writes for the task from now on (its StatusBoard's set_task)."""
    assert worker.herder.worker is not None
    board = worker.herder.worker.status
    traces: list[str] = []
    write = board.set_task

    def recording(connector: str, task_id: int, status: Any) -> None:
        if (connector, task_id) == (name, task) and status.trace:
            traces.append(status.trace)
        write(connector, task_id, status)

    board.set_task = recording  # type: ignore[method-assign,assignment]
    return traces


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_a_task_whose_python_worker_dies_leaves_running_at_once(
    spark: Any, tmp_path: Path, bootstrap_servers: str, plugins: Path, broker: Any
) -> None:
    """The executor lives on, the Python worker running the task (and its plugin host) dies:
    Spark fails its task and runs it again, which hands the decision back to the worker. The
    task showed RUNNING until that retry came back (2.5 s idle, 14 s at load, an exploratory
    tester found; 5.7 s, and once over 30 s, at load 8 here), its trace "lost (retried)"; the
    watchdog now sees Spark fail the task, gives the attempt up and says why."""
    _, module, _ = probe_plugins(tmp_path, plugins)
    topic = _new_topic(broker, "pyworker")
    extra = {"task.spark.heartbeat.timeout.ms": "600000"}
    with _worker(tmp_path, bootstrap_servers, plugins, **extra) as worker, worker.client() as http:
        config = {"connector.class": f"{module}.Source", "topic": topic, "interval.ms": "200"}
        assert http.put(f"/connectors/{module}/config", json=config).status_code == 201
        _wait_state(http, module, "RUNNING", TASK_START_S)
        runner = _runner(worker, module)
        wait_for(lambda: runner.remote.get("host_pids"), 30, "the task's plugin host")
        placement = runner.placement
        assert placement is not None
        host = runner.remote["host_pids"][0]
        python_worker = _parent(host)
        jvm = executor_jvm_of(host)
        assert jvm is not None and python_worker != jvm, (host, python_worker, jvm)
        executors = set(_active_executors(spark))
        os.kill(python_worker, signal.SIGKILL)
        killed = time.monotonic()
        seen: list[tuple[float, str | None]] = []

        def left_running() -> bool:
            seen.append((round(time.monotonic() - killed, 2), _task_state(http, module)))
            return seen[-1][1] != "RUNNING"

        wait_for(left_running, 30, "the task not RUNNING")
        left_running_s = time.monotonic() - killed
        task = _status(http, module)["tasks"][0]
        # Submitted again; no executor was lost.
        _wait_state(http, module, "RUNNING", TASK_START_S)
        assert runner.attempts >= 2
        assert set(_active_executors(spark)) == executors
    print(f"\nthe task left RUNNING {left_running_s:.1f} s after its Python worker died: {seen}")
    assert task["state"] == "UNASSIGNED", task
    assert "was lost (Spark failed its task on executor " in task["trace"], task
    assert "Python worker exited unexpectedly" in task["trace"], task


def _py4j_commands(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The py4j commands the calling thread sends to the JVM from now on (until the test ends).
    Other threads of this process are left out: the SparkSession is shared by the module, and an
    earlier test's worker may still be winding down threads that talk to the JVM meanwhile."""
    from py4j.clientserver import ClientServerConnection

    sent: list[str] = []
    original = ClientServerConnection.send_command
    caller = threading.get_ident()

    def counted(self: Any, command: str) -> Any:
        if threading.get_ident() == caller:
            sent.append(command)
        return original(self, command)

    monkeypatch.setattr(ClientServerConnection, "send_command", counted)
    return sent


def test_the_watchdogs_failure_check_of_a_healthy_task_is_cheap_and_leaves_no_garbage(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watchdog asks every second, per task, whether Spark failed the task. pyspark's
    getStageInfo made nine py4j round trips per check (an idle worker with two tasks grew
    0.7 MB/min), so a healthy task's check asks Spark's Java tracker for the stage and its
    failed-task count only (the third command is the stage object's release). And it leaves
    no reference cycle behind: a py4j JavaObject whose method is called through an attribute
    keeps that method, which points back at it, and an idle worker makes too few objects for
    a full collection to free such cycles (its RSS grew 0.15 MB/min, flat when collected)."""
    from py4j.java_gateway import JavaObject

    from core.spark.driver import Placement, SparkDriver

    sc = spark.sparkContext
    group = f"watchdog-{uuid.uuid4().hex[:6]}"
    sc.setJobGroup(group, "a finished job whose task never failed")
    sc.parallelize([1], 1).count()
    tracker = sc.statusTracker()
    job = tracker.getJobInfo(max(tracker.getJobIdsForGroup(group)))
    stage = max(int(s) for s in job.stageIds)
    driver = SparkDriver.__new__(SparkDriver)
    driver.sc = sc
    placement = Placement("0", "127.0.0.1", job.jobId, stage, 0)
    assert driver.task_failure(placement) is None  # warmed up (first use may resolve names)

    # Only this thread's commands and objects count: the SparkSession is shared by the module,
    # and an earlier test's worker (run in this process) may still be winding down its threads,
    # which release their own py4j objects meanwhile (CI once counted 19 such releases here).
    caller = threading.get_ident()
    made: list[weakref.ref[Any]] = []
    original_init = JavaObject.__init__

    def recorded(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        if threading.get_ident() == caller:
            made.append(weakref.ref(self))

    gc.collect()
    sent = _py4j_commands(monkeypatch)
    monkeypatch.setattr(JavaObject, "__init__", recorded)
    gc.disable()  # a collection in the loop would free cycles and hide them
    try:
        for _ in range(5):
            assert driver.task_failure(placement) is None
        left = sum(ref() is not None for ref in made)
    finally:
        gc.enable()
    assert len(sent) <= 3 * 5, sent
    assert made, "the checks made no JavaObject"
    assert left == 0, f"{left} JavaObjects left for the cyclic collector"


def test_the_watchdogs_executor_listing_takes_no_py4j_round_trip(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watchdog lists the application's executors every second through Spark's status API
    (HTTP): the API's address (UI URL, application id) does not change while the application
    runs, so it is not asked of the JVM again each time (five round trips a second)."""
    from core.spark.driver import SparkDriver

    driver = SparkDriver.__new__(SparkDriver)
    driver.sc = spark.sparkContext
    assert driver.executors()  # warmed up: the address is asked for once
    sent = _py4j_commands(monkeypatch)
    for _ in range(5):
        assert driver.executors()
    assert sent == []


def _values(bootstrap: str, topic: str, expected: int) -> list[str]:
    return [m.value().decode() for m in read_all(bootstrap, topic, expected, timeout_s=120)]


def test_offsets_written_on_spark_are_read_locally_and_back(
    spark: Any, tmp_path: Path, bootstrap_servers: str, plugins: Path, broker: Any
) -> None:
    source_file = tmp_path / "in.txt"
    topic = _new_topic(broker, "switch")
    name = f"src-{topic}"
    written = 0

    def append(n: int) -> None:
        nonlocal written
        with open(source_file, "a") as fh:
            fh.writelines(f"line-{i:07d}\n" for i in range(written, written + n))
        written += n

    append(20_000)
    with _worker(tmp_path, bootstrap_servers, plugins) as worker, worker.client() as http:
        config = {"connector.class": "FileStreamSource", "file": str(source_file), "topic": topic}
        for runtime in ("local", "spark", "local"):
            response = http.put(
                f"/connectors/{name}/config", json={**config, "task.runtime": runtime}
            )
            assert response.status_code in (200, 201), response.text
            if runtime != "local" or written > 20_000:
                assert http.put(f"/connectors/{name}/resume").status_code == 202
            status = _wait_state(http, name, "RUNNING", TASK_START_S)
            on_spark = "Spark job group" in status["tasks"][0]["worker_id"]
            assert on_spark == (runtime == "spark"), status
            values = _values(bootstrap_servers, topic, written)
            assert values == [f"line-{i:07d}" for i in range(written)], f"after {runtime}"
            assert http.put(f"/connectors/{name}/stop").status_code == 204
            wait_for(lambda: _status(http, name)["connector"]["state"] == "STOPPED", CONTROL_S)
            # The final commit of the stop: the whole file, whoever ran the task.
            stored = json.loads((tmp_path / "connect.offsets").read_text())["offsets"]
            key = json.dumps([name, {"filename": str(source_file)}], separators=(",", ":"))
            assert stored[key] == {"position": source_file.stat().st_size}, runtime
            append(10_000)
        assert _values(bootstrap_servers, topic, written - 10_000) == [
            f"line-{i:07d}" for i in range(written - 10_000)
        ]


def _active_topics(http: Any, name: str) -> list[str]:
    topics: list[str] = http.get(f"/connectors/{name}/topics").json()[name]["topics"]
    return topics


def test_rest_controls_a_task_on_spark_within_seconds(
    spark: Any, tmp_path: Path, bootstrap_servers: str, plugins: Path, broker: Any
) -> None:
    _, module, _ = probe_plugins(tmp_path, plugins)
    topic = _new_topic(broker, "control")
    taken: dict[str, float] = {}

    def timed(what: str, predicate: Any, timeout_s: float = CONTROL_S) -> None:
        began = time.monotonic()
        wait_for(predicate, timeout_s, what)
        taken[what] = round(time.monotonic() - began, 2)

    def numbers() -> list[int]:
        return [json.loads(v)["n"] for v in _values(bootstrap_servers, topic, 1)]

    # Offsets are committed only when a task stops (the interval is an hour): what the
    # offsets file holds after a stop is the stop's own final commit.
    extra = {"offset.flush.interval.ms": "3600000"}
    with _worker(tmp_path, bootstrap_servers, plugins, **extra) as worker, worker.client() as http:
        config = {"connector.class": f"{module}.Source", "topic": topic, "interval.ms": "50"}
        assert http.put(f"/connectors/{module}/config", json=config).status_code == 201
        _wait_state(http, module, "RUNNING", TASK_START_S)
        runner = _runner(worker, module)
        wait_for(lambda: len(numbers()) >= 10, 30)

        assert http.put(f"/connectors/{module}/pause").status_code == 202
        timed("pause", lambda: runner.remote.get("state") == "PAUSED")
        assert _task_state(http, module) == "PAUSED"
        time.sleep(1)
        paused_at = len(numbers())
        time.sleep(2)
        assert len(numbers()) == paused_at, "records moved while paused"
        # KIP-558: a reset empties the list; the executor's loop forgets its topic (its next
        # report says it has), and records it again with the next record sent.
        assert _active_topics(http, module) == [topic]
        assert http.put(f"/connectors/{module}/topics/reset").status_code == 202
        assert _active_topics(http, module) == []
        wait_for(lambda: runner.remote.get("topic_resets") == 1, CONTROL_S, "the reset applied")
        assert _active_topics(http, module) == []

        assert http.put(f"/connectors/{module}/resume").status_code == 202
        timed("resume", lambda: len(numbers()) > paused_at)
        wait_for(lambda: _active_topics(http, module) == [topic], CONTROL_S, "the topic again")
        assert _task_state(http, module) == "RUNNING"

        before = len(numbers())
        assert http.post(f"/connectors/{module}/tasks/0/restart").status_code == 204
        timed(
            "restart",
            lambda: (
                _runner(worker, module) is not runner
                and _task_state(http, module) == "RUNNING"
                and len(numbers()) > before + 5
            ),
        )
        runner = _runner(worker, module)

        assert http.put(f"/connectors/{module}/stop").status_code == 204
        timed("stop", lambda: _status(http, module)["connector"]["state"] == "STOPPED")
        seen = numbers()
        stored = json.loads((tmp_path / "connect.offsets").read_text())["offsets"]
        key = json.dumps([module, {"probe": module.replace("_", "-")}], separators=(",", ":"))
        assert stored[key] == {"n": seen[-1]}, "the stop's final commit"
        # Every stop committed its last record, so nothing repeats and nothing is skipped.
        assert seen == list(range(1, len(seen) + 1))

        assert http.put(f"/connectors/{module}/resume").status_code == 202
        timed("start after stop", lambda: len(numbers()) > len(seen), TASK_START_S)
        runner = _runner(worker, module)
        pids = list(runner.remote.get("host_pids", []))
        group = runner.group
        assert http.delete(f"/connectors/{module}").status_code == 204
        timed("delete", lambda: http.get(f"/connectors/{module}").status_code == 404)
        tracker = spark.sparkContext.statusTracker()
        timed(
            "job ended",
            lambda: all(
                tracker.getJobInfo(j).status == "SUCCEEDED"
                for j in tracker.getJobIdsForGroup(group)
            ),
        )
        timed("hosts gone", lambda: not any(_alive(p) for p in pids))
        final = numbers()
        assert final == list(range(1, len(final) + 1)), "a number repeated or skipped"
    print(f"\nREST control on Spark, seconds: {taken}")


def test_a_pause_or_resume_shows_in_status_once_applied_not_a_heartbeat_interval_later(
    spark: Any, tmp_path: Path, bootstrap_servers: str, plugins: Path, broker: Any
) -> None:
    """The executor's heartbeat that followed a new target carried the state from before the
    loop applied it, and the worker held that report for the heartbeat interval: a pause or
    resume reached the task at once but its status only an interval later (1.2 s with the
    default 1 s; 20 s here). Kafka's task reports PAUSED as soon as its thread has paused."""
    source = tmp_path / "in.txt"
    source.write_text("")  # nobody appends: an idle source
    topic = _new_topic(broker, "pause-status")
    name = f"src-{topic}"
    # A long interval, so that a report held for it cannot pass for a prompt one.
    extra = {"task.spark.heartbeat.interval.ms": "20000"}
    with _worker(tmp_path, bootstrap_servers, plugins, **extra) as worker, worker.client() as http:
        config = {"connector.class": "FileStreamSource", "file": str(source), "topic": topic}
        assert http.put(f"/connectors/{name}/config", json=config).status_code == 201
        _wait_state(http, name, "RUNNING", TASK_START_S)
        for verb, state in (("pause", "PAUSED"), ("resume", "RUNNING"), ("pause", "PAUSED")):
            assert http.put(f"/connectors/{name}/{verb}").status_code == 202
            _wait_state(http, name, state, CONTROL_S)
        assert http.delete(f"/connectors/{name}").status_code == 204


def test_a_connector_refused_for_want_of_slots_stays_failed_until_a_restart_starts_its_tasks(
    spark: Any, tmp_path: Path, bootstrap_servers: str, plugins: Path, broker: Any
) -> None:
    _, module, _ = probe_plugins(tmp_path, plugins)
    topic = _new_topic(broker, "slots")
    source = {"connector.class": f"{module}.Source", "topic": topic, "interval.ms": "200"}
    with _worker(tmp_path, bootstrap_servers, plugins) as worker, worker.client() as http:
        assert (
            http.put("/connectors/y/config", json={**source, "tasks.max": "1"}).status_code == 201
        )
        _wait_state(http, "y", "RUNNING", TASK_START_S)
        # A task started on Spark counts in the worker's task-startup metrics, as a local one
        # (they stayed at 0 for Spark-run tasks).
        assert _task_startups(http) == {"attempts": 1, "success": 1, "failure": 0}
        assert (
            http.put("/connectors/x/config", json={**source, "tasks.max": "2"}).status_code == 201
        )
        wait_for(lambda: _status(http, "x")["connector"]["state"] == "FAILED", 60)
        trace = _status(http, "x")["connector"]["trace"]
        assert "connector x needs 2 Spark task slots" in trace and "1 free of 2" in trace
        # As in Kafka, a FAILED connector stays FAILED through a pause and a resume: no
        # instance of it runs to report RUNNING with no task.
        for verb in ("pause", "resume"):
            assert http.put(f"/connectors/x/{verb}").status_code == 202
            status = _status(http, "x")
            assert status["connector"]["state"] == "FAILED" and status["tasks"] == [], verb

        assert http.delete("/connectors/y").status_code == 204
        response = http.post("/connectors/x/restart?includeTasks=true&onlyFailed=true")
        assert response.status_code == 202, response.text
        assert response.json()["connector"]["state"] == "RESTARTING"
        wait_for(
            lambda: [t["state"] for t in _status(http, "x")["tasks"]] == ["RUNNING", "RUNNING"],
            TASK_START_S,
            "x's two tasks RUNNING",
        )
        assert _status(http, "x")["connector"]["state"] == "RUNNING"
        assert len(http.get("/connectors/x/tasks").json()) == 2
        # x refused for want of slots started no task; its restart started two.
        assert _task_startups(http) == {"attempts": 3, "success": 3, "failure": 0}
        assert all("Spark job group" in t["worker_id"] for t in _status(http, "x")["tasks"])


# Past Spark's spark.network.timeout (120 s: executor heartbeats, RPC asks), the consumer's
# session timeout (45 s) and AnyIO's idle-thread retirement (10 s).
IDLE_S = 150


# The idle alone is half of pytest's default timeout (300 s, setup included).
@pytest.mark.timeout(600)
def test_a_pipeline_on_spark_left_idle_for_minutes_moves_new_lines_at_once(
    spark: Any, tmp_path: Path, bootstrap_servers: str, plugins: Path, broker: Any
) -> None:
    """As a user leaves a pipeline deployed through REST: a file source and sink on Spark
    move a first batch, sit idle for minutes, and move the next lines as soon as they are
    written, by the same task attempts in the same plugin hosts (no restart hid a failure)."""
    topic = _new_topic(broker, "idle")
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.write_text("".join(f"line-{i:07d}\n" for i in range(100)))
    with _worker(tmp_path, bootstrap_servers, plugins) as worker, worker.client() as http:
        source, sink = _file_pipeline(http, topic, source_file, sink_file)
        for name in (source, sink):
            _wait_state(http, name, "RUNNING", TASK_START_S)
        wait_for(lambda: len(_lines(sink_file)) == 100, TASK_START_S, "the first 100 lines")
        runners = {name: _runner(worker, name) for name in (source, sink)}
        hosts = {name: set(r.remote.get("host_pids", [])) for name, r in runners.items()}
        assert all(hosts.values()), hosts
        started = _task_startups(http)

        time.sleep(IDLE_S)
        for name, runner in runners.items():
            assert _task_state(http, name) == "RUNNING", (name, _status(http, name))
            assert _runner(worker, name) is runner, f"{name}'s task was started again"
            assert set(runner.remote.get("host_pids", [])) == hosts[name], name
            assert all(_alive(pid) for pid in hosts[name]), name
        with open(source_file, "a") as fh:
            fh.writelines(f"line-{i:07d}\n" for i in range(100, 200))
        wait_for(lambda: len(_lines(sink_file)) >= 200, 30, "the lines written after the idle")
        assert _lines(sink_file) == [f"line-{i:07d}" for i in range(200)]
        assert _task_startups(http) == started, "a task was started again meanwhile"
        for name in (source, sink):
            assert http.delete(f"/connectors/{name}").status_code == 204
