"""What a task that is being stopped says about itself (as Kafka's WorkerTask).

* A task that fails while it stops (its host dies during the stop) has stopped: UNASSIGNED,
  not FAILED.
* A task that does not stop in time is given up (its host killed): from then on it writes no
  status, so nothing it says as it dies lands over the next instance's.
* A task that failed is stopped without reporting its failure again: its stop used to send the
  record that failed it once more and log the same error as "did not stop cleanly".

Before, both wrote FAILED with the trace of their host's death: a REST restart of a task hung in
poll() showed FAILED between the two instances.

What a task says as it starts, pauses and resumes is checked here too: its start writes no
UNASSIGNED over a RUNNING or a RESTARTING, and its PAUSED and RUNNING on a pause and a resume
are fresh statuses of this worker's present generation, as Kafka's WorkerTask onPause/onResume.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.distributed import ClusterKeys, KafkaStatusStore
from core.offsets import MemoryOffsetStore
from core.plugins import PluginCatalogue
from core.status import State, Status, StatusBoard
from core.stores import StatusStore
from core.worker import Worker
from registry import install
from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import read_all
from tests.support.processes import wait_until
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.integration

HANGING = "faulty: hanging in task.poll"


class _Writes(StatusBoard):
    """The statuses written to each task, with the thread that wrote each."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[tuple[threading.Thread, Status]] = []

    def set_task(self, name: str, task: int, status: Status) -> None:
        self.writes.append((threading.current_thread(), status))
        super().set_task(name, task, status)

    def by(self, thread: threading.Thread) -> list[State]:
        return [status.state for writer, status in self.writes if writer is thread]

    def statuses_by(self, thread: threading.Thread) -> list[Status]:
        return [status for writer, status in self.writes if writer is thread]


def _worker(
    plugin_dirs: list[Path],
    bootstrap_servers: str,
    props: dict[str, str],
    status: StatusStore | None = None,
) -> Worker:
    """Worker ``w1`` with string converters (``props`` over them) and a memory offset store,
    writing its statuses to ``status`` if given."""
    return Worker(
        "w1",
        {"key.converter": "StringConverter", "value.converter": "StringConverter", **props},
        PluginCatalogue.scan(plugin_dirs),
        MemoryOffsetStore(),
        client_props={"bootstrap.servers": bootstrap_servers},
        status=status,
    )


def _start_file_source(worker: Worker, name: str, data: Path, topic: str) -> None:
    """Connector ``name``, a FileStreamSource of ``data`` into ``topic``, started (its tasks
    not)."""
    worker.start_connector(
        name,
        {"name": name, "connector.class": "FileStreamSource", "file": str(data), "topic": topic},
    )


def hung_in_both_data_paths(graceful_ms: int) -> pytest.MarkDecorator:
    """Run a test on :func:`hung` with the task's data path in its host, then in the worker,
    and stops that give up after ``graceful_ms``."""
    return pytest.mark.parametrize(
        "hung",
        [(path, graceful_ms) for path in ("host", "worker")],
        indirect=True,
        ids=["host", "worker"],
    )


@pytest.fixture
def hung(
    request: pytest.FixtureRequest,
    faulty_plugin_dirs: list[Path],
    bootstrap_servers: str,
    topic_name: str,
    caplog: pytest.LogCaptureFixture,
) -> Iterator[tuple[Worker, _Writes, str]]:
    """A worker whose one FaultySource task hangs in poll() (``graceful_ms`` its stop's
    timeout, the test's ``data_path`` where the task's data path runs)."""
    data_path, graceful_ms = request.param
    status = _Writes()
    worker = _worker(
        faulty_plugin_dirs,
        bootstrap_servers,
        {"task.shutdown.graceful.timeout.ms": str(graceful_ms), "task.data.path": data_path},
        status,
    )
    name = f"stopping-{topic_name}"
    caplog.set_level(logging.INFO, logger=f"copycat.plugin.{name}-0")
    worker.start_connector(
        name,
        {
            "name": name,
            "connector.class": "FaultySource",
            "topic": topic_name,
            "hang.in": "task.poll",
        },
    )
    worker.start_task(name, 0, worker.task_configs(name)[0])
    wait_until(lambda: HANGING in caplog.text, 60, "the task to hang in poll()")
    try:
        yield worker, status, name
    finally:
        worker.stop()


@hung_in_both_data_paths(graceful_ms=1000)
def test_a_task_given_up_writes_no_status_over_the_next_instance(
    hung: tuple[Worker, _Writes, str],
) -> None:
    worker, status, name = hung
    old = worker.connectors[name].tasks[0]
    worker.stop_task(name, 0)  # waits 1 s, gives the task up and kills its host
    old.join(10)
    assert not old.is_alive()
    # Its host's death made its poll() fail after it was given up: not reported.
    assert status.by(old) == [State.RUNNING]
    assert old.cancelled
    config: dict[str, Any] = dict(worker.task_configs(name)[0], **{"hang.in": "none"})
    new = worker.start_task(name, 0, config)
    assert new.wait_started(60)
    assert status.by(new) == [State.RUNNING]
    current = worker.status.task(name, 0)
    assert current is not None and current.state is State.RUNNING


@hung_in_both_data_paths(graceful_ms=60_000)
def test_a_task_that_fails_while_stopping_has_stopped(
    hung: tuple[Worker, _Writes, str],
) -> None:
    worker, status, name = hung
    runner = worker.connectors[name].tasks[0]
    assert runner.host is not None
    stopping = threading.Thread(target=worker.stop_task, args=(name, 0))
    stopping.start()
    wait_until(runner.stopping.is_set, 10, "the stop to begin")
    os.kill(runner.host.pid, signal.SIGKILL)  # the task's host dies during its stop
    stopping.join(30)
    assert not stopping.is_alive(), "the stop waited out its 60 s graceful timeout"
    assert status.by(runner) == [State.RUNNING, State.UNASSIGNED]
    assert worker.status.task(name, 0) == Status(State.UNASSIGNED, "w1")
    assert runner.failed and not runner.cancelled


@pytest.mark.parametrize("data_path", ["host", "worker"])
def test_a_failed_task_reports_its_failure_once(
    data_path: str,
    bundled_plugin_path: Path,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A line over the producer's message.max.bytes fails the task: one ERROR with the trace,
    and the stop that follows does not report the same failure again as a warning."""
    data = tmp_path / "big.txt"
    data.write_text("x" * 1_100_000 + "\n")
    worker = _worker([bundled_plugin_path], bootstrap_servers, {"task.data.path": data_path})
    name = f"big-{topic_name}"
    caplog.set_level(logging.INFO, logger="copycat.worker")
    try:
        _start_file_source(worker, name, data, topic_name)
        runner = worker.start_task(name, 0, worker.task_configs(name)[0])
        runner.join(60)
        assert not runner.is_alive()
    finally:
        worker.stop()
    status = worker.status.task(name, 0)
    assert status is not None and status.state is State.FAILED
    about_task = [r for r in caplog.records if f"{name}-0" in r.getMessage()]
    failures = [r for r in about_task if r.levelno >= logging.WARNING]
    # Kafka's WorkerTask words, then the status trace on the lines after them.
    assert [(r.levelname, r.getMessage().split("\n")[0]) for r in failures] == [
        (
            "ERROR",
            f"WorkerSourceTask{{id={name}-0}} Task threw an uncaught and unrecoverable "
            "exception. Task is being killed and will not recover until manually restarted",
        )
    ]
    assert status.trace is not None
    assert failures[0].getMessage().endswith(status.trace)  # the trace, once


BAD_CONVERTER = """
from plugin_api import Converter

class SetupFailingConverter(Converter):
    def configure(self, configs, is_key):
        raise ValueError("cannot use setting " + str(configs.get("mode")))
    def from_connect_data(self, topic, schema, value, headers=None):
        return None
    def to_connect_data(self, topic, data, headers=None):
        return None
"""


@pytest.mark.parametrize("data_path", ["host", "worker"])
def test_a_task_whose_converter_cannot_be_configured_is_logged_as_kafkas_worker(
    data_path: str,
    bundled_plugin_path: Path,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A converter whose configure() raises fails the task before its start() is called: as
    Kafka's Worker.startTask logs a task it could not set up, one ERROR, ``Failed to start
    task <name>-0``, the trace once after it (not WorkerTask's "uncaught and unrecoverable
    exception", which is for a task whose start() threw)."""
    wheel = build_wheel(
        tmp_path / "w",
        "setup-failing-converter",
        "1.0",
        {"setup_failing_converter.py": BAD_CONVERTER},
        entry_points={
            "copycat.converters": {
                "SetupFailingConverter": "setup_failing_converter:SetupFailingConverter"
            }
        },
    )
    install(str(wheel), tmp_path / "pp", offline=True)
    worker = _worker(
        [bundled_plugin_path, tmp_path / "pp"], bootstrap_servers, {"task.data.path": data_path}
    )
    name = f"setup-fails-{topic_name}"
    caplog.set_level(logging.INFO, logger="copycat.worker")
    try:
        worker.start_connector(
            name,
            {
                "name": name,
                "connector.class": "FileStreamSink",
                "file": str(tmp_path / "out.txt"),
                "topics": topic_name,
                "value.converter": "SetupFailingConverter",
                "value.converter.mode": "fast",
            },
        )
        runner = worker.start_task(name, 0, worker.task_configs(name)[0])
        runner.join(60)
        assert not runner.is_alive()
    finally:
        worker.stop()
    status = worker.status.task(name, 0)
    assert status is not None and status.state is State.FAILED and status.trace is not None
    assert "cannot use setting fast" in status.trace
    failures = [
        r for r in caplog.records if f"{name}-0" in r.getMessage() and r.levelno >= logging.WARNING
    ]
    assert [(r.levelname, r.getMessage().split("\n")[0]) for r in failures] == [
        ("ERROR", f"Failed to start task {name}-0")
    ]
    assert failures[0].getMessage().endswith(status.trace)  # the trace, once


@pytest.mark.parametrize("data_path", ["host", "worker"])
def test_a_task_whose_start_throws_is_logged_as_kafkas_worker_task(
    data_path: str,
    bundled_plugin_path: Path,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A FileStreamSink task whose file is a directory fails in start(): as Kafka's WorkerTask
    (doRun) logs it, one ERROR, ``WorkerSinkTask{id=<name>-0} Task threw an uncaught and
    unrecoverable exception...``, the trace with its cause once after it. Copycat logged
    ``task <name>-0 failed to start: <message>``, without the trace."""
    worker = _worker([bundled_plugin_path], bootstrap_servers, {"task.data.path": data_path})
    name = f"start-fails-{topic_name}"
    caplog.set_level(logging.INFO, logger="copycat.worker")
    try:
        worker.start_connector(
            name,
            {
                "name": name,
                "connector.class": "FileStreamSink",
                "file": str(tmp_path),
                "topics": topic_name,
            },
        )
        runner = worker.start_task(name, 0, worker.task_configs(name)[0])
        runner.join(60)
        assert not runner.is_alive()
    finally:
        worker.stop()
    status = worker.status.task(name, 0)
    assert status is not None and status.state is State.FAILED and status.trace is not None
    failures = [
        r for r in caplog.records if f"{name}-0" in r.getMessage() and r.levelno >= logging.WARNING
    ]
    assert [(r.levelname, r.getMessage().split("\n")[0]) for r in failures] == [
        (
            "ERROR",
            f"WorkerSinkTask{{id={name}-0}} Task threw an uncaught and unrecoverable "
            "exception. Task is being killed and will not recover until manually restarted",
        )
    ]
    assert failures[0].getMessage().endswith(status.trace)  # the trace, once
    assert failures[0].getMessage().count(str(tmp_path)) == status.trace.count(str(tmp_path))
    assert str(tmp_path) in status.trace


@hung_in_both_data_paths(graceful_ms=2000)
def test_tasks_stopped_together_share_one_graceful_timeout(
    hung: tuple[Worker, _Writes, str], caplog: pytest.LogCaptureFixture
) -> None:
    """A rebalance stops a connector's revoked tasks together, as Kafka's stopAndAwaitTasks:
    two that hang are given up after one graceful timeout. One after the other they took two,
    longer than a rebalance waits for revoked work ("rejoining regardless")."""
    worker, _status, name = hung
    caplog.set_level(logging.INFO, logger=f"copycat.plugin.{name}-1")
    worker.start_task(name, 1, worker.task_configs(name)[0])
    wait_until(  # task 0 hangs already (the fixture waited for it)
        lambda: any(HANGING in r.getMessage() and f"{name}-1" in r.name for r in caplog.records),
        60,
        "the second task to hang in poll()",
    )
    runners = list(worker.connectors[name].tasks.values())
    started = time.monotonic()
    worker.stop_tasks_of(name, [0, 1])
    took = time.monotonic() - started
    assert not any(runner.is_alive() for runner in runners)
    assert took < 3.5, f"two hung tasks took {took:.1f} s to stop (graceful timeout: 2 s)"


def test_a_task_keeps_a_running_status_while_it_starts_and_stops_in_its_generation(
    bundled_plugin_path: Path, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    """A task starting over a RUNNING status (its previous instance's, on another worker or
    restarted here) writes no UNASSIGNED first: Kafka's WorkerTask writes nothing before it
    has started, so during a rebalance the moved task shows its previous owner's RUNNING
    until the new owner's (it used to show UNASSIGNED for the seconds its host took to
    start). Over anything else (no status, UNASSIGNED, FAILED) it is UNASSIGNED until
    started, as before. Its stop's UNASSIGNED carries the generation its worker was in when
    told to stop: the one a rebalance revoked it in (passed by the herder, which adopts its
    new generation only after), else the worker's present one. A worker that rejoins late
    (a thawed zombie) thus stops the tasks it lost in its old generation, and the status
    topic's readers ignore that UNASSIGNED under the new owner's RUNNING
    (core/distributed/status_store.py)."""
    data = tmp_path / "in.txt"
    data.write_text("a\nb\n")
    status = _Writes()
    status.generation = 4
    worker = _worker([bundled_plugin_path], bootstrap_servers, {}, status)
    name = f"gen-{topic_name}"
    try:
        _start_file_source(worker, name, data, topic_name)
        status.set_task(name, 0, Status(State.RUNNING, "w0"))  # the previous owner's
        first = worker.start_task(name, 0, worker.task_configs(name)[0])
        assert first.wait_started(60)
        status.generation = 6  # the rebalance that revoked it (in generation 5) is adopted
        worker.stop_tasks_of(name, [0], generation=5)
        second = worker.start_task(name, 0, worker.task_configs(name)[0])
        assert second.wait_started(60)
        worker.stop_task(name, 0)
    finally:
        worker.stop()
    written = [status for _, status in status.writes][1:]
    assert [(s.state, s.worker_id) for s in written] == [
        (State.RUNNING, "w1"),
        (State.UNASSIGNED, "w1"),
        (State.UNASSIGNED, "w1"),  # over its own UNASSIGNED: as before
        (State.RUNNING, "w1"),
        (State.UNASSIGNED, "w1"),
    ]
    assert written[0].generation == 0  # the store stamps its present generation
    assert written[1].generation == 5
    assert written[4].generation == 6


def test_a_task_restarted_shows_restarting_until_it_runs(
    bundled_plugin_path: Path, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    """A restart (KIP-745) stops the task, marks it RESTARTING, then starts it, as Kafka's
    herders do: the start writes nothing over the RESTARTING before RUNNING (it wrote
    UNASSIGNED, which REST showed for as long as the task's host took to start)."""
    data = tmp_path / "in.txt"
    data.write_text("a\n")
    status = _Writes()
    worker = _worker([bundled_plugin_path], bootstrap_servers, {}, status)
    name = f"restart-{topic_name}"
    try:
        _start_file_source(worker, name, data, topic_name)
        first = worker.start_task(name, 0, worker.task_configs(name)[0])
        assert first.wait_started(60)
        worker.stop_task(name, 0)
        status.set_task(name, 0, Status(State.RESTARTING, "w1"))
        second = worker.start_task(name, 0, worker.task_configs(name)[0])
        assert second.wait_started(60)
    finally:
        worker.stop()
    assert [s.state for _, s in status.writes] == [
        State.UNASSIGNED,  # the first start, over no status
        State.RUNNING,
        State.UNASSIGNED,  # its stop
        State.RESTARTING,
        State.RUNNING,
        State.UNASSIGNED,  # the worker's stop
    ]


@pytest.mark.apache_kafka_only(reason="reading the status topic to its end needs Kafka's")
def test_pause_and_resume_statuses_are_of_the_present_generation(
    bundled_plugin_path: Path, broker: KafkaCluster, topic_name: str, tmp_path: Path
) -> None:
    """Kafka's WorkerTask writes a fresh PAUSED or RUNNING on a pause or a resume, of this
    worker and the generation it is in now (AbstractHerder.onPause/onResume). They kept the
    generation of the status they replaced: after a rebalance that left the task here, a pause
    and a resume, its stop's UNASSIGNED (of the present generation) replaced its RUNNING, where
    Kafka ignores it (KAFKA-12525), and the status topic's generations went backwards."""
    status_topic = f"{topic_name}-status"
    broker.create_topic(status_topic, 1, {"cleanup.policy": "compact"})
    props = {"bootstrap.servers": broker.bootstrap_servers}
    store = KafkaStatusStore(status_topic, props, ClusterKeys(None))
    reader = KafkaStatusStore(status_topic, props, ClusterKeys(None))
    for each in (store, reader):
        each.start(30)
    data = tmp_path / "in.txt"
    data.write_text("a\n")
    name = f"pause-{topic_name}"
    worker = _worker([bundled_plugin_path], broker.bootstrap_servers, {}, store)
    try:
        store.generation = reader.generation = 4
        _start_file_source(worker, name, data, topic_name)
        runner = worker.start_task(name, 0, worker.task_configs(name)[0])
        assert runner.wait_started(60)
        store.generation = reader.generation = 6  # a rebalance that left the task here
        for paused, state in ((True, State.PAUSED), (False, State.RUNNING)):
            worker.pause(name, paused)

            def reported(state: State = state) -> bool:
                task = store.task(name, 0)
                return task is not None and task.state is state

            wait_until(reported, 30, f"the task's {state.value}")
        worker.stop_task(name, 0)
        store.flush(30)
        reader.log.read_to_end().result(30)
        for each in (store, reader):
            task = each.task(name, 0)
            assert task is not None
            assert (task.state, task.worker_id, task.generation) == (State.RUNNING, "w1", 6)
    finally:
        worker.stop()
        for each in (store, reader):
            each.stop()
    written = [
        (json.loads(m.value())["state"], json.loads(m.value())["generation"])
        for m in read_all(broker.bootstrap_servers, status_topic, 6)
        if m.key() == f"status-task-{name}-0".encode()
    ]
    assert written == [
        ("UNASSIGNED", 4),
        ("RUNNING", 4),
        ("PAUSED", 6),
        ("RUNNING", 6),
        ("UNASSIGNED", 6),  # its stop's, ignored over its RUNNING of the same generation
    ]
