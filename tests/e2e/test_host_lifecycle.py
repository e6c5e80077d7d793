"""Plugin hosts live and die with the worker *process*, as a user runs it (issue: robustness).

Reproductions of what new users hit in their first hour:

* hosts started from a REST call were SIGKILLed 10-15 s later, when the REST server retired
  the idle thread that had forked them (PR_SET_PDEATHSIG follows the thread);
* a Ctrl-C in the terminal reached every host directly ("killed by SIGINT"), and a SIGTERM
  killed REST-created hosts instead of stopping them;
* a ``kill -9`` of a connector's own host left the connector RUNNING.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import httpx
import pytest

from tests.support.faulty import install_faulty
from tests.support.processes import (
    CliWorker,
    assert_data_path,
    host_pids,
    no_hosts_of,
    wait_until,
)
from tests.support.rest import lifecycle_call, lifecycle_storm

pytestmark = pytest.mark.integration

# AnyIO retires a threadpool thread after 10 s idle; a minute leaves no doubt.
IDLE_S = 60
STORM_CALLS = 200
STORM_NAMES = 12
# The storm of every lifecycle call: calls, spread over this many names.
MIX_STORM_CALLS = 240
MIX_NAMES = 6


@pytest.fixture(scope="module")
def plugin_path(bundled_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    faulty = install_faulty(tmp_path_factory.mktemp("faulty") / "plugins")
    return f"{bundled_plugin_path},{faulty}"


# Tests of how tasks stop (or die) run in both places a task's data path can run.
BOTH_DATA_PATHS = pytest.mark.parametrize("worker", ["host", "worker"], indirect=True)


def _props(tmp: Path, bootstrap: str, plugin_path: str, data_path: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "offset.storage.file.filename": str(tmp / "connect.offsets"),
        "offset.flush.interval.ms": "1000",
        "plugin.path": plugin_path,
        "listeners": "http://127.0.0.1:0",
        "task.shutdown.graceful.timeout.ms": "5000",
        "task.data.path": data_path,
    }


@pytest.fixture
def worker(
    request: pytest.FixtureRequest, tmp_path: Path, bootstrap_servers: str, plugin_path: str
) -> Iterator[CliWorker]:
    props = _props(tmp_path, bootstrap_servers, plugin_path, getattr(request, "param", "auto"))
    with CliWorker(tmp_path, props) as w:
        yield w


def _source(topic: str, marker: Path, **extra: str) -> dict[str, str]:
    return {
        "connector.class": "FaultySource",
        "topic": topic,
        "records.per.poll": "1",
        "tasks.max": "2",
        "stop.marker": str(marker),
        **extra,
    }


def _states(http: httpx.Client, name: str) -> tuple[str, list[str]]:
    body = http.get(f"/connectors/{name}/status").json()
    return body["connector"]["state"], [t["state"] for t in body["tasks"]]


def _running(http: httpx.Client, name: str, tasks: int) -> bool:
    return _states(http, name) == ("RUNNING", ["RUNNING"] * tasks)


def _wait_running(http: httpx.Client, name: str, tasks: int, timeout_s: float) -> None:
    """Wait for ``name`` and its tasks to be RUNNING; a timeout shows its whole status."""
    _wait_showing_status(http, name, partial(_running, http, name, tasks), timeout_s)


def _wait_showing_status(
    http: httpx.Client, name: str, predicate: Callable[[], object], timeout_s: float
) -> None:
    try:
        wait_until(predicate, timeout_s, f"{name}'s tasks")
    except AssertionError as timed_out:
        status = http.get(f"/connectors/{name}/status").json()
        raise AssertionError(f"{timed_out}; its status: {status}") from None


def test_rest_created_connectors_survive_idle_threads_and_a_create_delete_storm(
    worker: CliWorker, tmp_path: Path, topic_name: str
) -> None:
    marker = tmp_path / "stopped.txt"
    http = worker.client()
    first = f"idle-{topic_name}"
    assert http.post("/connectors", json={"name": first, "config": _source(topic_name, marker)})
    wait_until(lambda: _running(http, first, 2), 60, "the first connector's tasks")
    first_hosts = host_pids(f"{first}")
    assert len(first_hosts) == 3  # the connector's host and one per task

    # The storm: concurrent creates and deletes of a small set of names, from many threads.
    names = [f"storm{i}-{topic_name}" for i in range(STORM_NAMES)]
    statuses: list[int] = []
    net: dict[str, int] = dict.fromkeys(names, 0)  # successful creates minus deletes
    lock = threading.Lock()

    def call(i: int) -> None:
        name = random.Random(i).choice(names)
        what = "create" if i % 2 else "delete"
        r = lifecycle_call(worker.url, what, name, _source(topic_name, marker))
        with lock:
            statuses.append(r.status_code)
            net[name] += {201: 1, 204: -1}.get(r.status_code, 0)

    with ThreadPoolExecutor(max_workers=32) as pool:
        list(pool.map(call, range(STORM_CALLS)))
    assert set(statuses) <= {201, 204, 404, 409}, sorted(set(statuses))
    assert len(statuses) == STORM_CALLS

    listed = [n for n in http.get("/connectors").json() if n.startswith("storm")]
    # Each name was created and deleted alternately: never deleted twice, never created twice.
    assert net == {n: int(n in listed) for n in names}
    for name in listed:
        _wait_running(http, name, 2, 60)
    for name in set(names) - set(listed):
        wait_until(
            partial(no_hosts_of, name),
            30,
            f"no host left of deleted {name}",
        )

    # Now idle: every thread that served the calls above is retired meanwhile.
    time.sleep(IDLE_S)
    assert _running(http, first, 2)
    assert set(host_pids(first)) == set(first_hosts), "the first connector's hosts were replaced"
    for name in listed:
        assert _running(http, name, 2), (name, _states(http, name))
        assert len(host_pids(f"{name}:")) + len(host_pids(f"{name}-")) == 3


@BOTH_DATA_PATHS
def test_sigterm_stops_rest_created_tasks_gracefully(
    worker: CliWorker, tmp_path: Path, topic_name: str
) -> None:
    marker = tmp_path / "stopped.txt"
    http = worker.client()
    name = f"term-{topic_name}"
    http.post("/connectors", json={"name": name, "config": _source(topic_name, marker)})
    wait_until(lambda: _running(http, name, 2), 60, "tasks running")
    assert_data_path(f"{name}-", worker.props["task.data.path"])
    time.sleep(12)  # past the idle-thread retirement that used to kill REST-created hosts
    hosts = host_pids(name)
    assert worker.proc is not None
    worker.proc.send_signal(signal.SIGTERM)
    assert worker.wait(60) == 0
    assert marker.read_text().count("stopped") == 2, worker.text()[-3000:]
    assert "killed by" not in worker.text()
    assert not [p for p in hosts if Path(f"/proc/{p}").exists() and p in host_pids(name)]


@BOTH_DATA_PATHS
def test_ctrl_c_reaches_only_the_worker_which_stops_its_hosts_gracefully(
    worker: CliWorker, tmp_path: Path, topic_name: str
) -> None:
    marker = tmp_path / "stopped.txt"
    http = worker.client()
    source, sink = f"ctrlc-src-{topic_name}", f"ctrlc-sink-{topic_name}"
    http.post("/connectors", json={"name": source, "config": _source(topic_name, marker)})
    http.post(
        "/connectors",
        json={
            "name": sink,
            "config": {
                "connector.class": "FaultySink",
                "topics": topic_name,
                "stop.marker": str(marker),
            },
        },
    )
    wait_until(lambda: _running(http, source, 2) and _running(http, sink, 1), 60, "tasks")
    for name in (source, sink):
        assert_data_path(f"{name}-", worker.props["task.data.path"])
    worker.signal_group(signal.SIGINT)  # what a terminal's Ctrl-C does
    assert worker.wait(60) in (0, 130)
    log = worker.text()
    assert "KeyboardInterrupt" not in log
    assert "killed by SIGINT" not in log
    assert marker.read_text().count("stopped") == 3, log[-3000:]
    assert not host_pids(source) and not host_pids(sink)


@BOTH_DATA_PATHS
def test_kill_9_of_the_worker_takes_its_hosts_with_it(
    worker: CliWorker, tmp_path: Path, topic_name: str
) -> None:
    http = worker.client()
    name = f"orphan-{topic_name}"
    http.post("/connectors", json={"name": name, "config": _source(topic_name, tmp_path / "m")})
    wait_until(lambda: _running(http, name, 2), 60, "tasks running")
    assert len(host_pids(name)) == 3
    assert_data_path(f"{name}-", worker.props["task.data.path"])
    assert worker.proc is not None
    worker.proc.kill()
    worker.proc.wait()
    wait_until(lambda: not host_pids(name), 10, "the hosts to die with the worker")


def test_a_killed_connector_host_fails_the_connector(
    worker: CliWorker, tmp_path: Path, topic_name: str
) -> None:
    http = worker.client()
    name = f"conn-kill-{topic_name}"
    http.post("/connectors", json={"name": name, "config": _source(topic_name, tmp_path / "m")})
    wait_until(lambda: _running(http, name, 2), 60, "tasks running")
    (pid,) = host_pids(f"{name}:connector")
    os.kill(pid, signal.SIGKILL)
    status = wait_until(
        lambda: (
            (s := http.get(f"/connectors/{name}/status").json())["connector"]["state"] == "FAILED"
            and s
        ),
        10,
        "the connector to be FAILED",
    )
    assert "SIGKILL" in status["connector"]["trace"]
    assert [t["state"] for t in status["tasks"]] == ["RUNNING", "RUNNING"]  # tasks unaffected
    # A restart brings it back with a new host.
    assert http.post(f"/connectors/{name}/restart").status_code == 204
    wait_until(lambda: _running(http, name, 2), 30, "the restarted connector")
    assert list(host_pids(f"{name}:connector")) != [pid]


def _settled(http: httpx.Client, name: str, tasks: int) -> str | None:
    """The connector's state when it and its tasks agree (RUNNING or PAUSED with ``tasks``
    tasks in that state, STOPPED with none, PAUSED with none when paused from STOPPED), else
    None."""
    state, task_states = _states(http, name)
    if state == "STOPPED":
        return state if not task_states else None
    if state == "PAUSED" and not task_states:
        return state  # paused from STOPPED: no task until resumed (Kafka's KIP-980)
    if state in ("RUNNING", "PAUSED") and task_states == [state] * tasks:
        return state
    return None


def test_a_storm_of_every_lifecycle_call_leaves_each_connector_settled_and_controllable(
    worker: CliWorker, tmp_path: Path, topic_name: str
) -> None:
    """Creates, deletes, config updates, pauses, resumes, stops and restarts of a few names,
    all at once from many threads (a UI's users, a script retrying): only the answers Kafka
    gives, and afterwards every connector still listed settles in one state with its tasks
    agreeing, then runs again when resumed; nothing deleted keeps a host."""
    marker = tmp_path / "stopped.txt"
    names = [f"mix{i}-{topic_name}" for i in range(MIX_NAMES)]
    config = _source(topic_name, marker)
    lifecycle_storm([worker.url], names, config, MIX_STORM_CALLS, 32, rebalancing=False)

    http = worker.client()
    listed = [n for n in http.get("/connectors").json() if n.startswith("mix")]
    for name in listed:
        _wait_showing_status(http, name, partial(_settled, http, name, 2), 60)
        assert http.put(f"/connectors/{name}/resume").status_code == 202
        _wait_running(http, name, 2, 60)
    for name in set(names) - set(listed):
        wait_until(partial(no_hosts_of, name), 30, f"no host left of deleted {name}")


def test_stop_resume_stop_resume_in_quick_succession_runs_one_instance(
    worker: CliWorker, tmp_path: Path, topic_name: str
) -> None:
    """Each stop records STOPPED by starting the connector in its target state; with resumes
    queued behind it, that start found STARTED and ran the connector, and the resume's own
    start then ran a second instance, whose predecessor's hosts nobody owned any more (found
    by the lifecycle storm above)."""
    http = worker.client()
    name = f"flip-{topic_name}"
    http.post("/connectors", json={"name": name, "config": _source(topic_name, tmp_path / "m")})
    _wait_running(http, name, 2, 60)
    answers: list[int] = []

    def put(what: str) -> None:
        with httpx.Client(base_url=worker.url, timeout=120) as client:
            answers.append(client.put(f"/connectors/{name}/{what}").status_code)

    calls = []
    for what in ("stop", "resume", "stop", "resume"):  # each queued behind the first stop
        calls.append(threading.Thread(target=put, args=(what,)))
        calls[-1].start()
        time.sleep(0.05)
    for call in calls:
        call.join(120)
    assert sorted(answers) == [202, 202, 204, 204]
    # Threads 50 ms apart may still reach the worker out of order on a loaded machine (a stop
    # last: STOPPED, seen twice at load ~20); one more resume, after all were answered, makes
    # the end state RUNNING whatever their order. A second instance would still be running.
    assert http.put(f"/connectors/{name}/resume").status_code == 202
    _wait_running(http, name, 2, 60)

    def hosts() -> dict[int, str]:
        return {**host_pids(f"{name}:"), **host_pids(f"{name}-")}

    # The connector's host and one per task. A stopped instance's hosts may take a few
    # seconds more to exit on a loaded machine (a stop waits for the task, not for its
    # process's exit), so wait for them to go; a second running instance never would.
    wait_until(lambda: len(hosts()) == 3, 30, f"the hosts of {name}'s stopped instances to exit")
    time.sleep(2)  # any second instance would be up by now
    assert len(hosts()) == 3, hosts()
    assert http.delete(f"/connectors/{name}").status_code == 204
    wait_until(partial(no_hosts_of, name), 30, f"no host left of {name}")
