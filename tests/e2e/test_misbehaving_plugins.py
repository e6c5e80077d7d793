"""A plugin that misbehaves without hanging costs only the call it misbehaved in, and says so.

Exceptions whose ``str()`` itself raises, ``SystemExit`` and return values of the wrong type
fail the connector, task or REST call they came from with a message naming the plugin method
and what it did; they never crash the plugin host, and no REST answer carries a stack trace.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.faulty import install_faulty
from tests.support.kafka import committed, produce, read_all
from tests.support.rest import RestWorker, wait_for

pytestmark = pytest.mark.integration

UNPRINTABLE = "<Unprintable: str() raised RuntimeError: this exception cannot be printed>"


@pytest.fixture(scope="module")
def worker(
    tmp_path_factory: pytest.TempPathFactory, bootstrap_servers: str, bundled_plugin_path: Path
) -> Iterator[RestWorker]:
    tmp = tmp_path_factory.mktemp("misbehaving")
    faulty = install_faulty(tmp / "plugins")
    extra = {"plugin.path": f"{bundled_plugin_path},{faulty}"}
    with RestWorker(tmp, bootstrap_servers, bundled_plugin_path, extra) as w:
        yield w


def _source(topic: str, **extra: str) -> dict[str, str]:
    return {"connector.class": "FaultySource", "tasks.max": "1", "topic": topic, **extra}


def _create(http: httpx.Client, name: str, config: dict[str, str]) -> None:
    response = http.post("/connectors", json={"name": name, "config": config})
    assert response.status_code == 201, response.text


def _failed(http: httpx.Client, name: str, task: bool) -> dict[str, Any]:
    """The connector's (or its task's) status once FAILED."""

    def failed() -> dict[str, Any] | None:
        status = http.get(f"/connectors/{name}/status").json()
        entry = (status.get("tasks") or [None])[0] if task else status.get("connector")
        return entry if entry and entry.get("state") == "FAILED" else None

    found: dict[str, Any] = wait_for(failed, what=f"{name} FAILED")
    return found


def _no_host_crashed(worker: RestWorker, host: str) -> None:
    """No plugin host whose name starts with ``host`` exited or was killed.

    (The module's last test crashes a validate host on purpose.)"""
    crashes = [
        line
        for line in worker.log_lines
        if f"plugin host for {host}" in line and ("exit" in line or "killed" in line)
    ]
    assert not crashes, crashes


def _no_trace(response: httpx.Response) -> None:
    message = response.json()["message"]
    assert "Traceback" not in message and 'File "' not in message, message


def test_unprintable_exception_from_connector_start_fails_the_connector(
    worker: RestWorker, topic_name: str
) -> None:
    with worker.client() as http:
        _create(
            http, "up-start", _source(topic_name, **{"raise.in": "connector.start:unprintable"})
        )
        status = _failed(http, "up-start", task=False)
    assert UNPRINTABLE in status["trace"], status["trace"]
    _no_host_crashed(worker, "up-start")
    # As Kafka's WorkerConnector logs a start() that threw: one ERROR, the trace after it once
    # (it said "connector up-start failed: <message>", without the trace).
    errors = [
        line
        for line in worker.log_lines
        if line.startswith("ERROR") and "up-start" in line.split("\n")[0]
    ]
    assert [line.split("\n")[0] for line in errors] == [
        "ERROR copycat.herder: WorkerConnector{id=up-start} Error while starting connector"
    ], errors
    assert errors[0].endswith(status["trace"])
    assert errors[0].count(UNPRINTABLE) == status["trace"].count(UNPRINTABLE)


def test_unprintable_exception_from_poll_fails_the_task(
    worker: RestWorker, topic_name: str
) -> None:
    with worker.client() as http:
        _create(http, "up-poll", _source(topic_name, **{"raise.in": "task.poll:unprintable"}))
        status = _failed(http, "up-poll", task=True)
    assert UNPRINTABLE in status["trace"], status["trace"]
    _no_host_crashed(worker, "up-poll")


def test_unprintable_exception_from_validate_is_a_clean_answer(
    worker: RestWorker, topic_name: str
) -> None:
    config = _source(topic_name, **{"raise.in": "connector.validate:unprintable"})
    with worker.client() as http:
        response = http.put("/connector-plugins/FaultySource/config/validate", json=config)
    _no_trace(response)
    assert UNPRINTABLE in response.text, response.text
    _no_host_crashed(worker, "validate:")


def test_unprintable_exception_from_alter_offsets_fails_the_request(
    worker: RestWorker, topic_name: str
) -> None:
    config = _source(topic_name, **{"raise.in": "connector.alter_offsets:unprintable"})
    offsets = {"offsets": [{"partition": {"faulty": "source"}, "offset": {"n": 1}}]}
    with worker.client() as http:
        _create(http, "up-alter", config)
        assert http.put("/connectors/up-alter/stop").status_code == 204
        wait_for(
            lambda: (
                http.get("/connectors/up-alter/status").json()["connector"]["state"] == "STOPPED"
            ),
            what="up-alter STOPPED",
        )
        response = http.patch("/connectors/up-alter/offsets", json=offsets)
    # Kafka's answer to an alter_offsets() failing with anything but a ConnectException: a 500
    # naming the connector; the worker's log names the exception.
    assert response.status_code == 500, response.text
    _no_trace(response)
    assert response.json()["message"] == "Failed to modify offsets for source connector up-alter"
    assert any(UNPRINTABLE in line for line in worker.log_lines)
    _no_host_crashed(worker, "offsets:")


@pytest.mark.parametrize(
    ("what", "expected"), [("str", "got str"), ("ints", "got list holding int at index 0")]
)
def test_poll_returning_no_records_fails_the_task_saying_so(
    worker: RestWorker, topic_name: str, what: str, expected: str
) -> None:
    name = f"wrong-poll-{what}"
    with worker.client() as http:
        _create(http, name, _source(topic_name, **{"wrong.return": f"task.poll:{what}"}))
        status = _failed(http, name, task=True)
    message = "FaultySourceTask.poll() must return a list of SourceRecord (or None), " + expected
    assert message in status["trace"], status["trace"]


@pytest.mark.parametrize(
    ("what", "expected"), [("str", "got str"), ("strs", "got list holding str at index 0")]
)
def test_task_configs_returning_no_configs_fails_the_connector_saying_so(
    worker: RestWorker, topic_name: str, what: str, expected: str
) -> None:
    name = f"wrong-task-configs-{what}"
    config = _source(topic_name, **{"wrong.return": f"connector.task_configs:{what}"})
    with worker.client() as http:
        _create(http, name, config)
        status = _failed(http, name, task=False)
    message = f"connector {name}: task_configs() must return a list of dicts (one config per task)"
    assert f"{message}, {expected}" in status["trace"], status["trace"]


def test_pre_commit_returning_no_offsets_fails_the_task_saying_so(
    worker: RestWorker, topic_name: str
) -> None:
    with worker.client() as http:
        _create(http, "records-for-pre-commit", _source(topic_name, **{"records.per.poll": "5"}))
        sink = {
            "connector.class": "FaultySink",
            "tasks.max": "1",
            "topics": topic_name,
            "wrong.return": "task.pre_commit:str",
        }
        _create(http, "wrong-pre-commit", sink)
        status = _failed(http, "wrong-pre-commit", task=True)
        http.delete("/connectors/records-for-pre-commit")
    message = "FaultySinkTask.pre_commit() must return a mapping of TopicPartition to offset"
    assert f"{message} (or None), got str" in status["trace"], status["trace"]


def test_pre_commit_raising_rewinds_to_the_last_commit_and_the_task_keeps_running(
    worker: RestWorker, broker: KafkaCluster, tmp_path: Path, topic_name: str
) -> None:
    """As Kafka's WorkerSinkTask.commitOffsets: a preCommit() that raises is logged, the
    consumer rewinds to the last committed offset and the records are put again; the task is
    not failed, and commits once pre_commit() succeeds again."""
    broker.create_topic(topic_name, 1)
    values = [f"r{i}" for i in range(20)]
    produce(broker.bootstrap_servers, topic_name, [v.encode() for v in values])
    failing, put_values = tmp_path / "failing", tmp_path / "put-values.txt"
    failing.touch()
    sink = {
        "connector.class": "FaultySink",
        "tasks.max": "1",
        "topics": topic_name,
        "pre_commit.fail.if": str(failing),
        "put.values.log": str(put_values),
    }

    def put() -> list[str]:
        return put_values.read_text().splitlines() if put_values.exists() else []

    with worker.client() as http:
        _create(http, "pre-commit-raising", sink)
        wait_for(lambda: len(put()) >= 3 * len(values), 60, "the records put three times")
        status = http.get("/connectors/pre-commit-raising/status").json()
        assert status["tasks"][0]["state"] == "RUNNING", status
        group = "connect-pre-commit-raising"
        assert committed(broker.bootstrap_servers, group, topic_name) < 0
        failing.unlink()
        wait_for(
            lambda: committed(broker.bootstrap_servers, group, topic_name) == len(values),
            60,
            "the offsets committed once pre_commit() succeeds",
        )
        assert http.delete("/connectors/pre-commit-raising").status_code == 204
    # Each rewind starts again from the first record (nothing was committed before), in order;
    # the last pass, once pre_commit() succeeds, is whole.
    lines = put()
    starts = [i for i, value in enumerate(lines) if value == values[0]]
    passes = [lines[a:b] for a, b in zip(starts, [*starts[1:], len(lines)], strict=True)]
    assert starts[0] == 0 and len(passes) >= 3, lines
    assert all(run == values[: len(run)] for run in passes), lines
    assert passes[-1] == values, lines
    assert any("rewinding to the last committed offsets" in line for line in worker.log_lines)


def test_an_idle_source_tasks_commit_is_called_every_interval(
    worker: RestWorker, topic_name: str, tmp_path: Path
) -> None:
    """Kafka's WorkerSourceTask.commitOffsets calls SourceTask.commit() on every commit, also
    when no record was produced since the last one ("in order to invoke SourceTask::commit")."""
    commits = tmp_path / "commits.log"
    with worker.client() as http:
        _create(http, "idle-commit", _source(topic_name, **{"commit.log": str(commits)}))
        wait_for(
            lambda: commits.exists() and len(commits.read_text().splitlines()) >= 3,
            30,
            "three commit() calls of a source that produced nothing",
        )
        assert http.delete("/connectors/idle-commit").status_code == 204


def test_a_source_tasks_commit_raising_is_logged_not_the_tasks_failure(
    worker: RestWorker, topic_name: str, tmp_path: Path
) -> None:
    """Kafka's commitSourceTask logs whatever SourceTask.commit() throws ("Exception thrown
    while calling task.commit()"); the offsets stay committed and the task runs on."""
    commits, failing = tmp_path / "commits.log", tmp_path / "commit-fails"
    failing.touch()
    config = _source(
        topic_name,
        **{"records.per.poll": "2", "commit.log": str(commits), "commit.fail.if": str(failing)},
    )

    def stored() -> int:
        offsets = http.get("/connectors/commit-raising/offsets").json()["offsets"]
        return max((entry["offset"]["n"] for entry in offsets), default=0)

    with worker.client() as http:
        _create(http, "commit-raising", config)
        wait_for(
            lambda: commits.exists() and len(commits.read_text().splitlines()) >= 3,
            30,
            "three commit() calls, each raising",
        )
        status = http.get("/connectors/commit-raising/status").json()
        assert status["tasks"][0]["state"] == "RUNNING", status
        assert stored() > 0
        failing.unlink()
        before = stored()
        wait_for(lambda: stored() > before, 30, "offsets stored after commit() stops raising")
        assert http.delete("/connectors/commit-raising").status_code == 204
    assert any("task.commit()" in line for line in worker.log_lines)
    _no_host_crashed(worker, "commit-raising")


def test_system_exit_from_alter_offsets_is_logged(worker: RestWorker, topic_name: str) -> None:
    config = _source(topic_name, **{"raise.in": "connector.alter_offsets:exit"})
    offsets = {"offsets": [{"partition": {"faulty": "source"}, "offset": {"n": 1}}]}
    with worker.client() as http:
        _create(http, "exit-alter", config)
        assert http.put("/connectors/exit-alter/stop").status_code == 204
        wait_for(
            lambda: (
                http.get("/connectors/exit-alter/status").json()["connector"]["state"] == "STOPPED"
            ),
            what="exit-alter STOPPED",
        )
        response = http.patch("/connectors/exit-alter/offsets", json=offsets)
    assert response.status_code == 500, response.text
    assert response.json()["message"] == "Failed to modify offsets for source connector exit-alter"
    assert any("alter_offsets() raised SystemExit: 2" in line for line in worker.log_lines)
    _no_host_crashed(worker, "offsets:")


def test_a_plugin_host_crash_answers_500_without_its_trace(
    worker: RestWorker, topic_name: str
) -> None:
    config = _source(topic_name, **{"raise.in": "connector.validate:crash"})
    with worker.client() as http:
        response = http.put("/connector-plugins/FaultySource/config/validate", json=config)
    assert response.status_code == 500, response.text
    _no_trace(response)
    assert "exited with code 1" in response.json()["message"], response.text


# What poll() puts in each record's source partition or offset (tests/support/faulty.py
# ``bad.offset``), and what the task's failure then says of it.
UNSTORABLE = {
    "int": ("source offset", "Offsets must be specified as a Map, not int"),
    "array": (
        "source offset",
        "Offsets may only contain primitive types as values, but field n contains ARRAY",
    ),
    "nan": ("source offset", "but field n contains nan, which is not a finite number"),
    "datetime": ("source offset", "but field ts contains class datetime.datetime"),
    "int-key": ("source offset", "Offsets may only use String keys, but key 1 is int"),
    "partition-list": ("source partition", "Offsets must be specified as a Map, not list"),
}


@pytest.mark.parametrize("shape", sorted(UNSTORABLE))
def test_a_source_offset_that_cannot_be_stored_fails_the_task_before_its_records_are_sent(
    worker: RestWorker,
    broker: KafkaCluster,
    bootstrap_servers: str,
    topic_name: str,
    shape: str,
) -> None:
    """The first poll's offsets are good, the second's are not: the task fails naming the
    record and the field, none of the second poll's records reaches the topic, and the
    offsets store keeps the first poll's offset (GET /offsets still answers)."""
    broker.create_topic(topic_name, 1)
    name = f"unstorable-{shape}"
    config = _source(
        topic_name, **{"records.per.poll": "3", "bad.offset": shape, "bad.offset.after": "3"}
    )
    what, expected = UNSTORABLE[shape]
    with worker.client() as http:
        _create(http, name, config)
        status = _failed(http, name, task=True)
        first = status["trace"].splitlines()[0]
        assert (
            f"FaultySourceTask.poll() returned a source record for topic {topic_name!r}" in first
        ), first
        # The plugin host's error, by its class, on the line after it.
        second = status["trace"].splitlines()[1]
        assert second.startswith(f"isolation.errors.RemotePluginError: {name}-0: "), second
        assert f"record 2 of the batch, whose {what} cannot be stored" in first, first
        assert expected in first, first
        response = http.get(f"/connectors/{name}/offsets")
        assert response.status_code == 200, response.text
        assert response.json() == {
            "offsets": [{"partition": {"faulty": "source"}, "offset": {"n": 3}}]
        }
        http.delete(f"/connectors/{name}")
    values = [m.value() for m in read_all(bootstrap_servers, topic_name, 3)]
    assert values == [b"record-0", b"record-1", b"record-2"], values
    _no_host_crashed(worker, name)


def test_a_transform_returning_no_record_fails_the_task_naming_its_alias(
    worker: RestWorker, topic_name: str
) -> None:
    config = _source(
        topic_name,
        **{
            "records.per.poll": "1",
            "transforms": "shape",
            "transforms.shape.type": "FaultyTransform",
            "transforms.shape.return": "dict",
        },
    )
    with worker.client() as http:
        _create(http, "transform-returns-dict", config)
        status = _failed(http, "transform-returns-dict", task=True)
        http.delete("/connectors/transform-returns-dict")
    trace = status["trace"]
    assert "TRANSFORMATION (faulty_plugin.FaultyTransform) failed on SourceRecord{" in trace
    assert (
        "transform 'shape' (faulty_plugin.FaultyTransform) returned dict, not a SourceRecord "
        "or None" in trace
    ), trace
