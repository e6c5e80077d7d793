"""Every REST endpoint against a real standalone worker over HTTP, including the error cases.

One worker (a real broker, real plugin hosts) serves the whole module; each test uses its own
connector names so tests stay independent.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import copycat_file
import httpx
import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions
from confluent_kafka import TopicPartition as KafkaTopicPartition

from tests.support.apache_kafka import KafkaCluster
from tests.support.faulty import install_faulty
from tests.support.kafka import group_offsets
from tests.support.processes import host_pids
from tests.support.rest import RestWorker, wait_for

pytestmark = pytest.mark.integration

# How soon a sink offsets call must be refused while the group has a member: at once, as
# Kafka's is (one admin round trip), not after retrying for 30 s.
MEMBER_REFUSAL_S = 10.0


@pytest.fixture(scope="module")
def worker(
    tmp_path_factory: pytest.TempPathFactory, bootstrap_servers: str, bundled_plugin_path: Path
) -> Iterator[RestWorker]:
    tmp = tmp_path_factory.mktemp("rest-worker")
    faulty = install_faulty(tmp / "plugins")  # a connector that fails on demand (restarts)
    with RestWorker(
        tmp,
        bootstrap_servers,
        bundled_plugin_path,
        {"plugin.path": f"{bundled_plugin_path},{faulty}"},
    ) as running:
        yield running


@pytest.fixture(scope="module")
def http(worker: RestWorker) -> Iterator[httpx.Client]:
    with worker.client() as client:
        yield client


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _source(tmp: Path, topic: str, lines: int = 5) -> dict[str, str]:
    path = tmp / f"{topic}.in"
    path.write_text("".join(f"line {i}\n" for i in range(lines)))
    return {
        "connector.class": "FileStreamSource",
        "file": str(path),
        "topic": topic,
        "tasks.max": "1",
    }


def _sink(tmp: Path, topic: str) -> dict[str, str]:
    return {
        "connector.class": "FileStreamSink",
        "file": str(tmp / f"{topic}.out"),
        "topics": topic,
        "tasks.max": "1",
    }


def _assert_error(response: httpx.Response, status: int, contains: str = "") -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error_code", "message"}, body
    assert body["error_code"] == status
    assert contains in body["message"], body["message"]


def _state(http: httpx.Client, name: str) -> tuple[str, list[str]]:
    body = http.get(f"/connectors/{name}/status").json()
    return body["connector"]["state"], [t["state"] for t in body["tasks"]]


def _settled(
    http: httpx.Client, name: str, expected: tuple[str, list[str]], timeout_s: float = 30
) -> tuple[str, list[str]]:
    """The state once it is ``expected`` (or the last seen): tasks start asynchronously, so
    they are UNASSIGNED until their start() returns, as in Kafka Connect."""
    deadline = time.monotonic() + timeout_s
    while True:
        seen = _state(http, name)
        if seen == expected or time.monotonic() > deadline:
            return seen
        time.sleep(0.05)


# -- root ----------------------------------------------------------------------------------------


def test_root_and_health(http: httpx.Client) -> None:
    info = http.get("/").json()
    assert set(info) == {"version", "commit", "kafka_cluster_id"}
    assert info["version"]
    health = http.get("/health")
    assert health.status_code == 200
    assert health.json() == {
        "status": "healthy",
        "message": "Worker has completed startup and is ready to handle requests.",
    }


def test_unknown_paths_and_methods_use_the_error_shape(http: httpx.Client) -> None:
    _assert_error(http.get("/no/such/path"), 404, "HTTP 404 Not Found")
    _assert_error(http.delete("/connector-plugins"), 405)


def test_a_content_type_other_than_json_is_415_before_the_body_is_read(
    http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    """Kafka's resources are Jersey @Consumes(APPLICATION_JSON): 415 in the error shape."""
    name = _name("ctype")
    body = json.dumps({"name": name, "config": _source(tmp_path, topic_name)}).encode()
    # curl -d without -H sends the form type
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "application/x+json"):
        _assert_error(
            http.post("/connectors", content=body, headers={"content-type": content_type}),
            415,
            "HTTP 415 Unsupported Media Type",
        )
    text = {"content-type": "text/plain"}
    _assert_error(http.post("/connectors", content=b"{not json", headers=text), 415)
    _assert_error(http.get("/connectors", headers=text), 415)  # Jersey checks GETs too
    _assert_error(
        http.put("/admin/loggers/copycat", content=b'{"level": "INFO"}', headers=text), 415
    )
    _assert_error(http.delete("/connector-plugins", headers=text), 405)  # path and method first
    assert name not in http.get("/connectors").json()
    assert http.get("/", headers=text).status_code == 200  # the root resource reads no body

    # A body without a Content-Type: Jersey reads it as application/octet-stream (none: 415),
    # while an endpoint that reads no body ignores it.
    untyped = http.post("/connectors", content=body)
    assert "content-type" not in untyped.request.headers
    _assert_error(untyped, 415)
    _assert_error(http.put("/connectors/nope/pause", content=b"{}"), 404)

    created = http.post(  # JSON in any case, with parameters
        "/connectors", content=body, headers={"content-type": "Application/JSON; charset=utf-8"}
    )
    assert created.status_code == 201, created.text
    assert http.delete(f"/connectors/{name}").status_code == 204


def test_an_accept_ruling_json_out_is_406(http: httpx.Client) -> None:
    """Kafka's resources are Jersey @Produces(APPLICATION_JSON): 406 in the error shape."""
    for accept in ("application/xml", "text/html", "text/*", "nonsense"):
        _assert_error(
            http.get("/connectors", headers={"accept": accept}), 406, "HTTP 406 Not Acceptable"
        )
    xml = {"accept": "application/xml"}
    _assert_error(http.get("/connectors/nope", headers=xml), 406)  # before the handler runs
    _assert_error(http.get("/health", headers=xml), 406)
    _assert_error(http.get("/no/such/path", headers=xml), 404)  # an unknown path first
    _assert_error(  # the Content-Type before the Accept
        http.post("/connectors", content=b"{}", headers={**xml, "content-type": "text/plain"}),
        415,
    )
    # Jersey weighs no quality factors; Java's HttpURLConnection sends "*; q=.2"
    for accept in ("application/json", "*/*", "application/*", "*; q=.2", "text/xml, */*;q=0.1"):
        assert http.get("/connectors", headers={"accept": accept}).status_code == 200, accept
    assert http.get("/connectors", headers={"accept": "application/json;q=0"}).status_code == 200


def test_a_trailing_slash_is_served_like_the_path_without_it(
    http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    """Jersey matches a path with one trailing slash too: no redirect, the same answer."""
    name = _name("slash")
    created = http.post(
        "/connectors/", json={"name": name, "config": _source(tmp_path, topic_name)}
    )
    assert created.status_code == 201, created.text
    assert created.headers["location"].endswith(f"/connectors/{name}")
    assert name in http.get("/connectors/").json()
    assert http.get(f"/connectors/{name}/").json() == created.json()
    assert http.get(f"/connectors/{name}/config/").json()["name"] == name
    assert http.get("/health/").json()["status"] == "healthy"
    _assert_error(http.get("/connectors/nope/"), 404, "Connector nope not found")
    _assert_error(http.get("/no/such/path/"), 404, "HTTP 404 Not Found")
    _assert_error(http.get(f"/connectors/{name}//"), 404)  # one slash only
    assert http.delete(f"/connectors/{name}/").status_code == 204
    assert name not in http.get("/connectors").json()


def test_request_bodies_over_the_limit_are_413_before_being_read(
    http: httpx.Client, worker: RestWorker, tmp_path: Path, topic_name: str
) -> None:
    limit = worker.herder.config.get("rest.request.max.bytes")
    assert limit == 1 << 20  # the documented default
    name = _name("huge")
    config = {**_sink(tmp_path, topic_name), "padding": "x" * (limit + 1)}
    _assert_error(
        http.post("/connectors", json={"name": name, "config": config}),
        413,
        "rest.request.max.bytes=1048576",
    )

    def chunks() -> Iterator[bytes]:  # no Content-Length: the server has to count
        yield json.dumps({"name": name, "config": {"padding": ""}})[:-3].encode()
        for _ in range(limit // 65_536 + 2):
            yield b"x" * 65_536
        yield b'"}}'

    _assert_error(
        http.post("/connectors", content=chunks(), headers={"content-type": "application/json"}),
        413,
        "rest.request.max.bytes",
    )
    assert name not in http.get("/connectors").json()
    # Just under the limit is an ordinary request.
    fits = {**_sink(tmp_path, topic_name), "padding": "x" * (limit - 4096)}
    created = http.post("/connectors", json={"name": name, "config": fits})
    assert created.status_code == 201, created.text[:300]
    assert http.delete(f"/connectors/{name}").status_code == 204

    # A declared 50 MB body is answered before a byte of it is sent: the worker reads nothing.
    host, port = worker.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            b"POST /connectors HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 50000000\r\n\r\n"
        )
        head, _, body = _read_response(sock).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 "), head
    assert json.loads(body)["error_code"] == 413


def _read_response(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
        chunk = sock.recv(65_536)
        if not chunk:
            break
        data += chunk
    return data


# -- create, read, update, delete ----------------------------------------------------------------


def test_connector_lifecycle(
    http: httpx.Client, tmp_path: Path, topic_name: str, worker: RestWorker
) -> None:
    name = _name("life")
    config = _source(tmp_path, topic_name)
    created = http.post("/connectors", json={"name": name, "config": config})
    assert created.status_code == 201, created.text
    assert created.headers["location"].endswith(f"/connectors/{name}")
    info = created.json()
    assert info == {
        "name": name,
        "config": {**config, "name": name},
        "tasks": [{"connector": name, "task": 0}],
        "type": "source",
    }
    _assert_error(
        http.post("/connectors", json={"name": name, "config": config}),
        409,
        f"Connector {name} already exists",
    )

    assert name in http.get("/connectors").json()
    assert http.get(f"/connectors/{name}").json() == info
    assert http.get(f"/connectors/{name}/config").json() == {**config, "name": name}
    expanded = http.get("/connectors", params=[("expand", "status"), ("expand", "info")]).json()
    assert expanded[name]["info"] == info
    assert expanded[name]["status"]["connector"]["state"] == "RUNNING"
    assert set(http.get("/connectors?expand=status").json()[name]) == {"status"}
    # Kafka's answer to an expansion it does not know: the map, with nothing in the entries.
    assert http.get("/connectors?expand=bogus").json()[name] == {}
    assert http.get("/connectors?expand=").json()[name] == {}

    status = http.get(f"/connectors/{name}/status").json()
    assert status["name"] == name and status["type"] == "source"
    assert status["connector"]["state"] == "RUNNING"
    assert status["connector"]["worker_id"] == worker.herder.worker_id
    assert "trace" not in status["connector"]
    assert [t["id"] for t in status["tasks"]] == [0]
    # A task is UNASSIGNED until its start() returns on its own thread (its host loading the
    # Kafka client too, with the data path in the host): Kafka Connect's status is as racy.
    task_status = wait_for(
        lambda: (
            (s := http.get(f"/connectors/{name}/tasks/0/status").json())["state"] == "RUNNING" and s
        ),
        30,
        "the task running",
    )
    assert task_status["id"] == 0 and task_status["worker_id"] == worker.herder.worker_id

    tasks = http.get(f"/connectors/{name}/tasks").json()
    assert tasks[0]["id"] == {"connector": name, "task": 0}
    assert tasks[0]["config"]["task.class"].endswith("FileStreamSourceTask")
    assert tasks[0]["config"]["topic"] == topic_name
    # Removed in Kafka 4.0 (KIP-970): an unknown path, as in Kafka Connect 4.1
    _assert_error(http.get(f"/connectors/{name}/tasks-config"), 404, "HTTP 404 Not Found")

    # PUT updates (200), PATCH merges and null removes a key
    updated = http.put(f"/connectors/{name}/config", json={**config, "batch.size": "10"})
    assert updated.status_code == 200 and updated.json()["config"]["batch.size"] == "10"
    null_patch = http.request(
        "PATCH",
        f"/connectors/{name}/config",
        content=b"null",
        headers={"content-type": "application/json"},
    )
    _assert_error(null_patch, 400, "JSON object")
    patched = http.patch(f"/connectors/{name}/config", json={"batch.size": None, "tasks.max": 1})
    assert patched.status_code == 200
    assert "batch.size" not in patched.json()["config"]
    assert patched.json()["config"]["tasks.max"] == "1"

    assert http.delete(f"/connectors/{name}").status_code == 204
    _assert_error(http.get(f"/connectors/{name}"), 404, f"Connector {name} not found")
    assert name not in http.get("/connectors").json()


def test_put_creates_with_201(http: httpx.Client, tmp_path: Path, topic_name: str) -> None:
    name = _name("put")
    created = http.put(f"/connectors/{name}/config", json=_source(tmp_path, topic_name))
    assert created.status_code == 201, created.text
    assert created.headers["location"].endswith(f"/connectors/{name}")
    assert created.json()["config"]["name"] == name
    _assert_error(
        http.put(
            f"/connectors/{name}/config", json={**_source(tmp_path, topic_name), "name": "other"}
        ),
        400,
        f"Connector name configuration (other) doesn't match connector name in the URL ({name})",
    )
    http.delete(f"/connectors/{name}")


def test_create_takes_the_name_from_the_top_level_only(
    http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    """Kafka's createConnector reads the top-level "name" (trimmed, "" when absent) and
    requires a "name" inside the config to equal it."""
    name = _name("cfgname")
    _assert_error(
        http.post("/connectors", json={"config": {**_source(tmp_path, topic_name), "name": name}}),
        400,
        f"Connector name configuration ({name}) doesn't match connector name in the URL ()",
    )
    _assert_error(
        http.post(
            "/connectors",
            json={
                "name": f" {name} ",
                "config": {**_source(tmp_path, topic_name), "name": f" {name} "},
            },
        ),
        400,
        f"Connector name configuration ( {name} ) doesn't match connector name in the URL ({name})",
    )
    assert name not in http.get("/connectors").json()
    _assert_error(http.post("/connectors", json={"config": {"name": ""}}), 400, "name")


def test_invalid_configs_are_400_listing_every_error(http: httpx.Client) -> None:
    response = http.post(
        "/connectors",
        json={
            "name": _name("bad"),
            "config": {
                "connector.class": "FileStreamSource",
                "tasks.max": "zero",
                "batch.size": "x",
            },
        },
    )
    # tasks.max: "Not a number" and, as in Kafka, its validator on null ("Value must be non-null")
    _assert_error(
        response, 400, "Connector configuration is invalid and contains the following 4 error(s):"
    )
    message = response.json()["message"]
    assert "tasks.max" in message and "batch.size" in message and '"topic"' in message
    assert message.endswith("`/connector-plugins/{connectorType}/config/validate`")
    _assert_error(
        http.post(
            "/connectors",
            json={"name": _name("bad"), "config": {"connector.class": "com.example.Missing"}},
        ),
        400,
        "com.example.Missing",
    )
    _assert_error(http.post("/connectors", json={"config": {"connector.class": "X"}}), 400, "name")
    _assert_error(
        http.post("/connectors", json={"name": "a", "config": {"name": "b"}}), 400, "doesn't match"
    )
    _assert_error(
        http.post("/connectors", json={"name": "a", "config": {}, "initial_state": "DANCING"}),
        400,
        "initial state",
    )
    # FastAPI's own validation errors are 400 in Kafka's shape too
    _assert_error(
        http.post(
            "/connectors", content=b"{not json", headers={"content-type": "application/json"}
        ),
        400,
    )
    _assert_error(http.post("/connectors", json=[1, 2]), 400)
    _assert_error(http.put("/connectors/x/config", json={"a": {"nested": 1}}), 400, "'a'")
    _assert_error(http.patch("/connectors/missing/config", json={"a": "b"}), 404)
    # A null patch: the connector is looked up first, as Kafka does (its 404), then refused.
    null_patch = http.request(
        "PATCH",
        "/connectors/missing/config",
        content=b"null",
        headers={"content-type": "application/json"},
    )
    _assert_error(null_patch, 404, "not found")


def test_sink_topic_errors_are_400_although_the_plugin_redefines_topics(
    http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    # FileStreamSink's ConfigDef defines topics and topics.regex itself; the framework's
    # errors on them must survive the merge, or the connector is created and goes FAILED.
    name = _name("topics")
    no_topics = {"connector.class": "FileStreamSink", "file": str(tmp_path / "nt.out")}
    infos = http.put(
        "/connector-plugins/FileStreamSink/config/validate", json={**no_topics, "name": name}
    ).json()
    by_name = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"]}
    assert by_name["topics"] == ["Must configure one of topics or topics.regex"]
    assert infos["error_count"] == 2  # topics and topics.regex, as Kafka reports it
    for config, message in [
        (no_topics, "Must configure one of topics or topics.regex"),
        ({**no_topics, "topics": "t2", "topics.regex": "t.*"}, "mutually exclusive"),
        ({**no_topics, "topics.regex": "["}, "Invalid regex"),
        # Java's syntax, as the sink's consumer matches it: Python's named groups are not.
        ({**no_topics, "topics.regex": "(?P<n>t2)"}, "Invalid regex"),
        ({**no_topics, "topics": "t2,bad topic!"}, 'Topic name "bad topic!" is illegal'),
    ]:
        _assert_error(
            http.post("/connectors", json={"name": name, "config": config}),
            400,
            "Connector configuration is invalid",
        )
        _assert_error(http.put(f"/connectors/{name}/config", json=config), 400, message)
        _assert_error(http.get(f"/connectors/{name}"), 404)
    # An update that would break a running sink is refused and changes nothing.
    good = _sink(tmp_path, topic_name)
    assert http.post("/connectors", json={"name": name, "config": good}).status_code == 201
    assert _settled(http, name, ("RUNNING", ["RUNNING"])) == ("RUNNING", ["RUNNING"])
    _assert_error(
        http.patch(f"/connectors/{name}/config", json={"topics": None}),
        400,
        "Must configure one of topics or topics.regex",
    )
    assert http.get(f"/connectors/{name}/config").json()["topics"] == topic_name
    assert _state(http, name) == ("RUNNING", ["RUNNING"])
    assert http.delete(f"/connectors/{name}").status_code == 204


def test_unknown_connector_is_404_everywhere(http: httpx.Client) -> None:
    for method, path in [
        ("GET", "/connectors/nope"),
        ("GET", "/connectors/nope/config"),
        ("DELETE", "/connectors/nope"),
        ("GET", "/connectors/nope/status"),
        ("GET", "/connectors/nope/tasks"),
        ("GET", "/connectors/nope/tasks/0/status"),
        ("POST", "/connectors/nope/tasks/0/restart"),
        ("POST", "/connectors/nope/restart"),
        ("PUT", "/connectors/nope/pause"),
        ("PUT", "/connectors/nope/resume"),
        ("PUT", "/connectors/nope/stop"),
        ("GET", "/connectors/nope/offsets"),
        ("DELETE", "/connectors/nope/offsets"),
        ("GET", "/connectors/nope/topics"),
        ("PUT", "/connectors/nope/topics/reset"),
    ]:
        _assert_error(http.request(method, path), 404)
    _assert_error(http.get("/connectors/nope/status"), 404, "No status found for connector nope")
    _assert_error(
        http.get("/connectors/nope/tasks/3/status"), 404, "No status found for task nope-3"
    )
    _assert_error(http.post("/connectors/nope/tasks/3/restart"), 404, "Connector nope not found")


# -- pause, resume, stop, restart ------------------------------------------------------------------


def test_pause_resume_stop_and_initial_state(
    http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    name = _name("states")
    assert (
        http.post(
            "/connectors",
            json={"name": name, "config": _source(tmp_path, topic_name), "initial_state": "PAUSED"},
        ).status_code
        == 201
    )
    # As Kafka: a connector created PAUSED generates no task configs until it is resumed.
    assert _settled(http, name, ("PAUSED", [])) == ("PAUSED", [])
    assert http.get(f"/connectors/{name}/tasks").json() == []
    assert http.put(f"/connectors/{name}/resume").status_code == 202
    assert _settled(http, name, ("RUNNING", ["RUNNING"])) == ("RUNNING", ["RUNNING"])
    assert http.put(f"/connectors/{name}/pause").status_code == 202
    assert http.put(f"/connectors/{name}/pause").status_code == 202  # idempotent
    assert _settled(http, name, ("PAUSED", ["PAUSED"])) == ("PAUSED", ["PAUSED"])
    assert http.put(f"/connectors/{name}/stop").status_code == 204
    assert _settled(http, name, ("STOPPED", [])) == ("STOPPED", [])
    # As Kafka, a STOPPED connector's status still names its plugin's version.
    status = http.get(f"/connectors/{name}/status").json()
    assert status["connector"]["version"] == copycat_file.__version__
    assert http.get(f"/connectors/{name}").json()["tasks"] == []
    assert http.get(f"/connectors/{name}/tasks").json() == []
    # Paused from STOPPED: the instance runs paused, with no task (Kafka: "tasks": []).
    assert http.put(f"/connectors/{name}/pause").status_code == 202
    assert _settled(http, name, ("PAUSED", [])) == ("PAUSED", [])
    time.sleep(1)  # nothing generates tasks behind the answer
    assert _state(http, name) == ("PAUSED", [])
    assert http.get(f"/connectors/{name}/tasks").json() == []
    assert http.put(f"/connectors/{name}/resume").status_code == 202
    assert _settled(http, name, ("RUNNING", ["RUNNING"])) == ("RUNNING", ["RUNNING"])
    http.delete(f"/connectors/{name}")

    stopped = _name("stopped")
    assert (
        http.post(
            "/connectors",
            json={
                "name": stopped,
                "config": _source(tmp_path, topic_name),
                "initial_state": "STOPPED",
            },
        ).status_code
        == 201
    )
    assert _settled(http, stopped, ("STOPPED", [])) == ("STOPPED", [])
    http.delete(f"/connectors/{stopped}")


def test_a_pause_queued_behind_a_stop_leaves_the_connector_paused_without_tasks(
    http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    """A stop, then a pause queued behind it while the connector is busy: the stop's own
    record of STOPPED found the target PAUSED already and started the instance paused, but
    kept the stopped tasks' configs and their UNASSIGNED statuses, so the connector said
    PAUSED with tasks that would never run, for good (found by the lifecycle storm). Kafka
    writes a stop's empty task configs with its target state: paused from STOPPED, the
    connector has no task until resumed (KIP-980)."""
    name = _name("stop-pause")
    config = {
        "connector.class": "FaultySource",
        "topic": topic_name,
        "records.per.poll": "1",
        "tasks.max": "2",
    }
    assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
    running = ("RUNNING", ["RUNNING", "RUNNING"])
    assert _settled(http, name, running) == running
    # A new config whose instance takes 2 s to start keeps the connector's queue busy.
    slow = {**config, "connector.start.ms": "2000"}
    with ThreadPoolExecutor(2) as pool:
        reconfigured = pool.submit(http.put, f"/connectors/{name}/config", json=slow)
        time.sleep(0.5)
        stopped = pool.submit(http.put, f"/connectors/{name}/stop")
        time.sleep(0.5)
        assert http.put(f"/connectors/{name}/pause").status_code == 202
        assert reconfigured.result().status_code == 200
        assert stopped.result().status_code == 204
    assert _settled(http, name, ("PAUSED", [])) == ("PAUSED", [])
    assert http.get(f"/connectors/{name}/tasks").json() == []
    assert http.put(f"/connectors/{name}/resume").status_code == 202
    assert _settled(http, name, running) == running
    http.delete(f"/connectors/{name}")


def test_a_paused_connector_reconfigured_keeps_its_tasks_until_it_is_resumed(
    http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    # Kafka's standalone herder: a new config restarts the connector's instance, but its
    # tasks are reconfigured only once its target state is STARTED again.
    name = _name("paused-update")
    config = _source(tmp_path, topic_name)
    assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
    assert _settled(http, name, ("RUNNING", ["RUNNING"])) == ("RUNNING", ["RUNNING"])
    assert http.put(f"/connectors/{name}/pause").status_code == 202
    assert _settled(http, name, ("PAUSED", ["PAUSED"])) == ("PAUSED", ["PAUSED"])
    other = tmp_path / "other.in"
    other.write_text("x\n")
    assert http.put(f"/connectors/{name}/config", json={**config, "file": str(other)}).is_success
    assert _settled(http, name, ("PAUSED", ["PAUSED"])) == ("PAUSED", ["PAUSED"])
    assert http.get(f"/connectors/{name}/tasks").json()[0]["config"]["file"] == config["file"]
    assert http.put(f"/connectors/{name}/resume").status_code == 202
    deadline = time.monotonic() + 30
    while http.get(f"/connectors/{name}/tasks").json()[0]["config"]["file"] != str(other):
        assert time.monotonic() < deadline, "the resumed connector's new task configs"
        time.sleep(0.05)
    assert _settled(http, name, ("RUNNING", ["RUNNING"])) == ("RUNNING", ["RUNNING"])
    http.delete(f"/connectors/{name}")


def test_restart_semantics(http: httpx.Client, tmp_path: Path, topic_name: str) -> None:
    name = _name("restart")
    config = {**_source(tmp_path, topic_name), "tasks.max": "1"}
    http.post("/connectors", json={"name": name, "config": config})
    legacy = http.post(f"/connectors/{name}/restart")
    assert legacy.status_code == 204 and legacy.content == b""
    assert _settled(http, name, ("RUNNING", ["RUNNING"])) == ("RUNNING", ["RUNNING"])

    # nothing failed: onlyFailed restarts nothing, and says so
    only_failed = http.post(
        f"/connectors/{name}/restart", params={"includeTasks": "true", "onlyFailed": "true"}
    )
    assert only_failed.status_code == 202
    body = only_failed.json()
    assert body["connector"]["state"] == "RUNNING"
    assert [t["state"] for t in body["tasks"]] == ["RUNNING"]

    everything = http.post(f"/connectors/{name}/restart", params={"includeTasks": "true"})
    assert everything.status_code == 202
    assert everything.json()["connector"]["state"] == "RESTARTING"
    assert [t["state"] for t in everything.json()["tasks"]] == ["RESTARTING"]
    assert _settled(http, name, ("RUNNING", ["RUNNING"])) == ("RUNNING", ["RUNNING"])

    assert http.post(f"/connectors/{name}/tasks/0/restart").status_code == 204
    assert _settled(http, name, ("RUNNING", ["RUNNING"])) == ("RUNNING", ["RUNNING"])
    _assert_error(http.post(f"/connectors/{name}/tasks/7/restart"), 404, f"Task {name}-7 not found")
    http.delete(f"/connectors/{name}")


def test_failed_task_shows_trace_and_restarts_only_failed(
    http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    name = _name("failing")
    missing = tmp_path / "a-directory"
    missing.mkdir()  # reading a directory fails the task
    config = {**_source(tmp_path, topic_name), "file": str(missing)}
    http.post("/connectors", json={"name": name, "config": config})
    wait_for(lambda: _state(http, name)[1] == ["FAILED"], 30, "the task to fail")
    status = http.get(f"/connectors/{name}/status").json()
    assert status["tasks"][0]["trace"]
    assert status["connector"]["state"] == "RUNNING"
    missing.rmdir()
    missing.write_text("now it is a file\n")
    restarted = http.post(
        f"/connectors/{name}/restart", params={"includeTasks": "true", "onlyFailed": "true"}
    ).json()
    assert restarted["connector"]["state"] == "RUNNING"  # not failed: not restarted
    assert [t["state"] for t in restarted["tasks"]] == ["RESTARTING"]
    wait_for(lambda: _state(http, name) == ("RUNNING", ["RUNNING"]), 30, "recovery")
    http.delete(f"/connectors/{name}")


def test_restarting_a_connector_that_fails_again_restarts_its_tasks_from_their_stored_configs(
    http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    """KIP-745 as Kafka's StandaloneHerder.restartConnectorAndTasks does it: a plan made from
    the current status, then the planned connector and tasks stopped and started again, the
    tasks from their stored configs whatever the connector's own start does. Before, a
    restart that included the connector stopped everything and started afresh through the
    connector: when its start failed again, no task ran any more."""
    name = _name("refail")
    marker = tmp_path / f"{name}.fail"  # while it exists, the connector's start() raises
    config = {
        "connector.class": "FaultySource",
        "topic": topic_name,
        "tasks.max": "2",
        "connector.start.fail.if": str(marker),
    }
    assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
    running = ("RUNNING", ["RUNNING", "RUNNING"])
    assert _settled(http, name, running) == running
    stored = http.get(f"/connectors/{name}/tasks").json()
    before = set(host_pids(f"{name}-"))
    marker.touch()

    everything = http.post(f"/connectors/{name}/restart", params={"includeTasks": "true"})
    assert everything.status_code == 202, everything.text
    assert everything.json()["connector"]["state"] == "RESTARTING"
    assert [t["state"] for t in everything.json()["tasks"]] == ["RESTARTING", "RESTARTING"]
    failed = ("FAILED", ["RUNNING", "RUNNING"])
    assert _settled(http, name, failed) == failed
    assert http.get(f"/connectors/{name}/status").json()["connector"]["trace"]
    restarted = set(host_pids(f"{name}-"))
    assert len(restarted) == 2 and not restarted & before  # both tasks in new hosts
    assert http.get(f"/connectors/{name}/tasks").json() == stored

    # Only the failed connector is planned: it fails again, and its running tasks run on.
    only_failed = http.post(
        f"/connectors/{name}/restart", params={"includeTasks": "true", "onlyFailed": "true"}
    )
    assert only_failed.status_code == 202, only_failed.text
    assert only_failed.json()["connector"]["state"] == "RESTARTING"
    assert [t["state"] for t in only_failed.json()["tasks"]] == ["RUNNING", "RUNNING"]
    assert _settled(http, name, failed) == failed
    assert set(host_pids(f"{name}-")) == restarted

    # The legacy restart (the instance only) of the failed connector, now able to start: as
    # in Kafka, the started instance is asked for task configs, and unchanged ones restart
    # no task.
    marker.unlink()
    legacy = http.post(f"/connectors/{name}/restart")
    assert legacy.status_code == 204 and legacy.content == b""
    assert _settled(http, name, running) == running
    assert set(host_pids(f"{name}-")) == restarted
    assert http.get(f"/connectors/{name}/tasks").json() == stored
    http.delete(f"/connectors/{name}")

    # A connector whose very first start failed has no task configs yet: once a restart
    # starts it, it is asked for them, and its tasks run.
    first = _name("refail-first")
    marker.touch()
    assert http.post("/connectors", json={"name": first, "config": config}).status_code == 201
    assert _settled(http, first, ("FAILED", [])) == ("FAILED", [])
    marker.unlink()
    recovered = http.post(f"/connectors/{first}/restart", params={"onlyFailed": "true"})
    assert recovered.status_code == 202, recovered.text
    assert recovered.json()["connector"]["state"] == "RESTARTING"
    assert recovered.json()["tasks"] == []
    assert _settled(http, first, running) == running
    http.delete(f"/connectors/{first}")


# -- offsets (KIP-875) and active topics (KIP-558) -------------------------------------------------


def test_source_offsets(http: httpx.Client, tmp_path: Path, topic_name: str) -> None:
    name = _name("srcoff")
    config = _source(tmp_path, topic_name, lines=3)
    http.post("/connectors", json={"name": name, "config": config})
    partition = {"filename": config["file"]}
    wait_for(
        lambda: http.get(f"/connectors/{name}/offsets").json()["offsets"], 30, "committed offsets"
    )
    _assert_error(
        http.patch(
            f"/connectors/{name}/offsets",
            json={"offsets": [{"partition": partition, "offset": {"position": 0}}]},
        ),
        400,
        "Connectors must be in the STOPPED state",
    )
    _assert_error(http.delete(f"/connectors/{name}/offsets"), 400, "STOPPED")
    http.put(f"/connectors/{name}/stop")
    offsets = http.get(f"/connectors/{name}/offsets").json()
    assert offsets == {"offsets": [{"partition": partition, "offset": {"position": 21}}]}
    _assert_error(
        http.patch(f"/connectors/{name}/offsets", json={"offsets": []}),
        400,
        "Partitions / offsets need to be provided",
    )
    # The body is checked before the connector is looked up (Kafka's ConnectorsResource).
    _assert_error(
        http.patch("/connectors/no-such-connector/offsets", json={"offsets": []}),
        400,
        "Partitions / offsets need to be provided",
    )
    _assert_error(
        http.patch(
            f"/connectors/{name}/offsets",
            json={"offsets": [{"partition": None, "offset": {"position": 1}}]},
        ),
        400,
        "may not be null",
    )
    altered = http.patch(
        f"/connectors/{name}/offsets",
        json={"offsets": [{"partition": partition, "offset": {"position": 8}}]},
    )
    assert altered.status_code == 200
    assert "altered successfully" in altered.json()["message"]
    assert http.get(f"/connectors/{name}/offsets").json()["offsets"][0]["offset"] == {"position": 8}
    reset = http.delete(f"/connectors/{name}/offsets")
    assert reset.status_code == 200 and "reset successfully" in reset.json()["message"]
    assert http.get(f"/connectors/{name}/offsets").json() == {"offsets": []}
    http.delete(f"/connectors/{name}")


def test_source_offsets_that_are_not_primitives_are_refused_and_nothing_written(
    http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    name = _name("srcoff-format")
    config = _source(tmp_path, topic_name, lines=3)
    created = http.post(
        "/connectors", json={"name": name, "config": config, "initial_state": "STOPPED"}
    )
    assert created.status_code == 201, created.text
    partition = {"filename": config["file"]}
    first = http.patch(
        f"/connectors/{name}/offsets",
        json={"offsets": [{"partition": partition, "offset": {"position": 7}}]},
    )
    assert first.status_code == 200, first.text
    kept = {"offsets": [{"partition": partition, "offset": {"position": 7}}]}
    primitive = "Offsets may only contain primitive types as values, but field"
    big = 12345678901234567890123
    for entry, message in [
        (
            {"partition": partition, "offset": {"position": big}},
            f"{primitive} position contains class java.math.BigInteger",
        ),
        (
            {"partition": partition, "offset": {"position": -(2**63) - 1}},
            f"{primitive} position contains class java.math.BigInteger",
        ),
        (
            {"partition": {**partition, "shard": big}, "offset": {"position": 1}},
            f"{primitive} shard contains class java.math.BigInteger",
        ),
        (
            {"partition": partition, "offset": {"position": {"line": 1}}},
            f"{primitive} position contains MAP",
        ),
        (
            {"partition": partition, "offset": {"position": [1]}},
            f"{primitive} position contains ARRAY",
        ),
        (
            {"partition": {"filename": [config["file"]]}, "offset": {"position": 1}},
            f"{primitive} filename contains ARRAY",
        ),
    ]:
        response = http.patch(f"/connectors/{name}/offsets", json={"offsets": [entry]})
        _assert_error(response, 400, message)
        assert http.get(f"/connectors/{name}/offsets").json() == kept
    # floats JSON cannot hold in a double, and Python's NaN / Infinity, sent as raw JSON
    for raw in ("1e400", "-1e400", "NaN", "Infinity"):
        entry = {"partition": partition, "offset": {"position": "RAW"}}
        body = json.dumps({"offsets": [entry]}).replace('"RAW"', raw)
        response = http.patch(
            f"/connectors/{name}/offsets",
            content=body,
            headers={"Content-Type": "application/json"},
        )
        _assert_error(response, 400, f"{primitive} position contains")
        assert "not a finite number" in response.json()["message"]
        assert http.get(f"/connectors/{name}/offsets").json() == kept
    # the largest long and plain primitives still go through
    fine = {"position": 2**63 - 1, "ratio": 0.5, "done": False, "tag": "x", "none": None}
    altered = http.patch(
        f"/connectors/{name}/offsets", json={"offsets": [{"partition": partition, "offset": fine}]}
    )
    assert altered.status_code == 200, altered.text
    assert http.get(f"/connectors/{name}/offsets").json() == {
        "offsets": [{"partition": partition, "offset": fine}]
    }
    http.delete(f"/connectors/{name}")


def test_sink_offsets_and_active_topics(
    http: httpx.Client, tmp_path: Path, topic_name: str, broker: KafkaCluster
) -> None:
    broker.create_topic(topic_name, 1)
    src, sink = _name("src"), _name("sink")
    http.post("/connectors", json={"name": src, "config": _source(tmp_path, topic_name, 4)})
    sink_config = _sink(tmp_path, topic_name)
    http.post("/connectors", json={"name": sink, "config": sink_config})
    out = Path(sink_config["file"])
    wait_for(lambda: out.exists() and out.read_text().count("\n") == 4, 60, "the sink output")
    assert http.get(f"/connectors/{src}/topics").json() == {src: {"topics": [topic_name]}}
    assert http.get(f"/connectors/{sink}/topics").json() == {sink: {"topics": [topic_name]}}

    http.put(f"/connectors/{sink}/stop")
    tp = {"kafka_topic": topic_name, "kafka_partition": 0}

    def committed() -> bool:
        response = http.get(f"/connectors/{sink}/offsets")
        assert response.status_code == 200, response.text
        return bool(response.json()["offsets"])

    wait_for(committed, 30, "the sink's committed offsets")
    answer = http.get(f"/connectors/{sink}/offsets").json()
    assert answer == {"offsets": [{"partition": tp, "offset": {"kafka_offset": 4}}]}
    # Kafka's key order, which clients comparing the text see.
    assert list(answer["offsets"][0]["partition"]) == ["kafka_partition", "kafka_topic"]
    for bad, message in [
        ({"partition": {"kafka_topic": topic_name}}, "kafka_partition"),
        (
            {"partition": {**tp, "kafka_partition": "x"}, "offset": None},
            "Failed to parse the following Kafka partition value in the provided offsets: 'x'",
        ),
        ({"partition": {**tp, "kafka_partition": None}, "offset": None}, "valid numbers"),
        (
            {"partition": tp, "offset": {"kafka_offset": "x"}},
            "Failed to parse the following Kafka offset value in the provided offsets: 'x'",
        ),
        # beyond a Java long / int: refused as Kafka does, not a 500
        (
            {"partition": tp, "offset": {"kafka_offset": 12345678901234567890123}},
            "Failed to parse the following Kafka offset value in the provided offsets: "
            "'12345678901234567890123'. Offset values for sink connectors need to be integers.",
        ),
        (
            {"partition": {**tp, "kafka_partition": 2**31}, "offset": {"kafka_offset": 1}},
            "Kafka partition value in the provided offsets: '2147483648'",
        ),
        ({"partition": tp, "offset": {"position": 1}}, "kafka_offset"),
    ]:
        _assert_error(
            http.patch(f"/connectors/{sink}/offsets", json={"offsets": [bad]}), 400, message
        )
    altered = http.patch(
        f"/connectors/{sink}/offsets",
        json={"offsets": [{"partition": tp, "offset": {"kafka_offset": 1}}]},
    )
    assert altered.status_code == 200, altered.text
    # FileStreamSink keeps no offsets of its own (its alter_offsets says so), so no caveat
    assert altered.json() == {
        "message": "The offsets for this connector have been altered successfully"
    }
    assert http.get(f"/connectors/{sink}/offsets").json()["offsets"][0]["offset"] == {
        "kafka_offset": 1
    }
    reset_one = http.patch(
        f"/connectors/{sink}/offsets", json={"offsets": [{"partition": tp, "offset": None}]}
    )
    assert reset_one.status_code == 200, reset_one.text
    assert http.get(f"/connectors/{sink}/offsets").json() == {"offsets": []}
    http.patch(
        f"/connectors/{sink}/offsets",
        json={"offsets": [{"partition": tp, "offset": {"kafka_offset": "0"}}]},
    )
    assert http.get(f"/connectors/{sink}/offsets").json()["offsets"][0]["offset"] == {
        "kafka_offset": 0
    }
    reset = http.delete(f"/connectors/{sink}/offsets")
    assert reset.status_code == 200, reset.text
    assert reset.json() == {
        "message": "The offsets for this connector have been reset successfully"
    }
    assert http.get(f"/connectors/{sink}/offsets").json() == {"offsets": []}

    # the stopped sink keeps its active topics until reset
    assert http.get(f"/connectors/{sink}/topics").json() == {sink: {"topics": [topic_name]}}
    assert http.put(f"/connectors/{sink}/topics/reset").status_code == 202
    assert http.get(f"/connectors/{sink}/topics").json() == {sink: {"topics": []}}

    # resumed from the reset offsets: the whole topic is copied again
    http.put(f"/connectors/{sink}/resume")
    wait_for(lambda: out.read_text().count("\n") == 8, 60, "the re-copied output")
    http.delete(f"/connectors/{sink}")
    http.delete(f"/connectors/{src}")


def test_sink_offsets_for_partitions_that_do_not_exist_change_nothing(
    http: httpx.Client, tmp_path: Path, topic_name: str, broker: KafkaCluster
) -> None:
    broker.create_topic(topic_name, 1)
    sink = _name("sink-missing")
    config = _sink(tmp_path, topic_name)
    created = http.post(
        "/connectors", json={"name": sink, "config": config, "initial_state": "STOPPED"}
    )
    assert created.status_code == 201, created.text
    tp = {"kafka_topic": topic_name, "kafka_partition": 0}
    first = http.patch(
        f"/connectors/{sink}/offsets",
        json={"offsets": [{"partition": tp, "offset": {"kafka_offset": 2}}]},
    )
    assert first.status_code == 200, first.text
    kept = {"offsets": [{"partition": tp, "offset": {"kafka_offset": 2}}]}
    seven = {"kafka_topic": topic_name, "kafka_partition": 7}
    nosuch = {"kafka_topic": f"{topic_name}-nosuch", "kafka_partition": 0}
    for offsets, named in [
        (
            [{"partition": seven, "offset": {"kafka_offset": 1}}],
            f"partition 7 of topic {topic_name}",
        ),
        ([{"partition": nosuch, "offset": {"kafka_offset": 1}}], f"topic {topic_name}-nosuch"),
        # mixed with a partition that exists: that one is not applied either
        (
            [
                {"partition": tp, "offset": {"kafka_offset": 1}},
                {"partition": seven, "offset": {"kafka_offset": 1}},
            ],
            f"partition 7 of topic {topic_name}",
        ),
        # a reset (null offset) of a partition that does not exist: the others are kept
        ([{"partition": nosuch, "offset": None}], f"topic {topic_name}-nosuch"),
        (
            [{"partition": tp, "offset": None}, {"partition": seven, "offset": None}],
            f"partition 7 of topic {topic_name}",
        ),
    ]:
        response = http.patch(f"/connectors/{sink}/offsets", json={"offsets": offsets})
        _assert_error(response, 400, f"Failed to alter consumer group offsets for connector {sink}")
        assert named in response.json()["message"]
        assert http.get(f"/connectors/{sink}/offsets").json() == kept
    http.delete(f"/connectors/{sink}")


@pytest.mark.apache_kafka_only(
    reason="the dev broker has no OffsetDelete: a partition is reset by rewriting the group"
)
def test_sink_offsets_reset_of_some_partitions_leaves_the_others_untouched(
    http: httpx.Client, tmp_path: Path, topic_name: str, broker: KafkaCluster
) -> None:
    """A PATCH resetting one partition (offset null) deletes that partition's offset alone, as
    Kafka Connect does with the admin client's per-partition OffsetDelete: the others are not
    rewritten. Before, the whole group was deleted and the others written back, so an error in
    between lost them; their commit metadata (which a rewrite drops) shows they were kept."""
    broker.create_topic(topic_name, 3)
    sink = _name("sink-reset-one")
    created = http.post(
        "/connectors",
        json={"name": sink, "config": _sink(tmp_path, topic_name), "initial_state": "STOPPED"},
    )
    assert created.status_code == 201, created.text
    group = f"connect-{sink}"
    committed = [KafkaTopicPartition(topic_name, p, 10 + p, metadata="kept") for p in range(3)]
    broker.admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, committed)])[
        group
    ].result(30)

    reset = http.patch(
        f"/connectors/{sink}/offsets",
        json={
            "offsets": [
                {"partition": {"kafka_topic": topic_name, "kafka_partition": 1}, "offset": None}
            ]
        },
    )
    assert reset.status_code == 200, reset.text
    assert http.get(f"/connectors/{sink}/offsets").json() == {
        "offsets": [
            {
                "partition": {"kafka_topic": topic_name, "kafka_partition": p},
                "offset": {"kafka_offset": 10 + p},
            }
            for p in (0, 2)
        ]
    }
    listed = group_offsets(broker.bootstrap_servers, group)
    kept = {(tp.partition, tp.offset, tp.metadata) for tp in listed}
    assert kept == {(0, 10, "kept"), (2, 12, "kept")}
    http.delete(f"/connectors/{sink}")


def test_unknown_fields_in_offsets_and_create_bodies_are_refused(
    http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    """A field Kafka's entity does not have is refused, naming it (Kafka Connect answers a 500
    "Unrecognized field ..."; a 400 here, as for every malformed body), and nothing changes.
    Before, it was ignored: the offsets were altered and the connector created."""
    name = _name("unknown-fields")
    config = _source(tmp_path, topic_name)
    created = http.post(
        "/connectors", json={"name": name, "config": config, "initial_state": "STOPPED"}
    )
    assert created.status_code == 201, created.text
    partition = {"filename": config["file"]}
    for body, named in [
        (
            {"offsets": [{"partition": partition, "offset": {"position": 1}}], "foo": 1},
            'Unrecognized field "foo" (known fields: "offsets")',
        ),
        (
            {"offsets": [{"partition": partition, "offset": None, "bar": 2}]},
            'offsets.0: Unrecognized field "bar" (known fields: "partition", "offset")',
        ),
    ]:
        _assert_error(http.patch(f"/connectors/{name}/offsets", json=body), 400, named)
    assert http.get(f"/connectors/{name}/offsets").json() == {"offsets": []}

    other = _name("unknown-fields-create")
    refused = http.post("/connectors", json={"name": other, "config": config, "foo": 1})
    _assert_error(
        refused,
        400,
        'Unrecognized field "foo" (known fields: "name", "config", "initial_state")',
    )
    assert http.get(f"/connectors/{other}").status_code == 404
    http.delete(f"/connectors/{name}")


def _group_member(
    bootstrap: str, group: str, topic: str, stop: threading.Event, assigned: threading.Event
) -> None:
    """A consumer outside the worker, in ``group``, polling ``topic`` until ``stop``."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    consumer.subscribe([topic], on_assign=lambda _c, partitions: assigned.set())
    try:
        while not stop.is_set():
            consumer.poll(0.2)
    finally:
        consumer.close()


def test_sink_offsets_of_a_group_with_a_member_are_refused_at_once(
    http: httpx.Client, tmp_path: Path, topic_name: str, broker: KafkaCluster
) -> None:
    """As Kafka Connect: PATCH and DELETE of a STOPPED sink's offsets while another consumer is
    in its group answer at once, a 500 with Kafka's message naming the connector, and change
    nothing. Before, PATCH was a 400 "...: Broker: Unknown member" and DELETE retried for 30 s
    before a 500 that blamed the cluster ("did not answer successfully within 30 s")."""
    broker.create_topic(topic_name, 1)
    sink = _name("sink-member")
    created = http.post(
        "/connectors",
        json={"name": sink, "config": _sink(tmp_path, topic_name), "initial_state": "STOPPED"},
    )
    assert created.status_code == 201, created.text
    tp = {"kafka_topic": topic_name, "kafka_partition": 0}
    kept = {"offsets": [{"partition": tp, "offset": {"kafka_offset": 2}}]}
    assert http.patch(f"/connectors/{sink}/offsets", json=kept).status_code == 200
    stop, assigned = threading.Event(), threading.Event()
    member = threading.Thread(
        target=_group_member,
        args=(broker.bootstrap_servers, f"connect-{sink}", topic_name, stop, assigned),
        daemon=True,
    )
    member.start()
    try:
        assert assigned.wait(60), "the outside consumer was never assigned"
        tail = (
            "its offsets could be successfully completed. If the connector is in a stopped "
            "state, this operation can be safely retried. If it doesn't eventually succeed, "
            "the Connect cluster may need to be restarted to get rid of the zombie sink tasks."
        )
        for method, offsets, verb in [
            ("PATCH", [{"partition": tp, "offset": {"kafka_offset": 5}}], "alter"),
            ("PATCH", [{"partition": tp, "offset": None}], "alter"),  # a reset of one partition
            ("DELETE", None, "reset"),
        ]:
            began = time.monotonic()
            body = {"offsets": offsets} if offsets is not None else None
            response = http.request(method, f"/connectors/{sink}/offsets", json=body)
            took = time.monotonic() - began
            expected = (
                f"Failed to {verb} consumer group offsets for connector {sink} either because "
                "its tasks haven't stopped completely yet or the connector was resumed before "
                f"the request to {verb} {tail}"
            )
            _assert_error(response, 500)
            assert response.json()["message"] == expected
            assert took < MEMBER_REFUSAL_S, f"{method} took {took:.1f} s"
            assert http.get(f"/connectors/{sink}/offsets").json() == kept
    finally:
        stop.set()
        member.join(30)
    http.delete(f"/connectors/{sink}")


# -- plugins and validation ------------------------------------------------------------------------


def test_connector_plugins(http: httpx.Client) -> None:
    connectors = http.get("/connector-plugins").json()
    assert {p["type"] for p in connectors} == {"source", "sink"}
    assert any(
        p["class"].endswith("FileStreamSourceConnector") and p["version"] for p in connectors
    )
    everything = http.get("/connector-plugins", params={"connectorsOnly": "false"}).json()
    types = {p["type"] for p in everything}
    assert {"source", "sink", "converter", "header_converter"} <= types
    for plugin in ("FileStreamSource", "org.apache.kafka.connect.file.FileStreamSinkConnector"):
        keys = http.get(f"/connector-plugins/{plugin}/config").json()
        names = [k["name"] for k in keys]
        assert "connector.class" in names and "file" in names
        assert set(keys[0]) == {
            "name",
            "type",
            "required",
            "default_value",
            "importance",
            "documentation",
            "group",
            "order",
            "width",
            "display_name",
            "dependents",
        }
    converter = http.get("/connector-plugins/StringConverter/config").json()
    assert all(k["name"] != "connector.class" for k in converter)
    _assert_error(
        http.get("/connector-plugins/NoSuchPlugin/config"), 404, "Unknown plugin NoSuchPlugin."
    )


def test_validate_always_200_with_kafkas_shape(http: httpx.Client) -> None:
    path = "/connector-plugins/FileStreamSourceConnector/config/validate"
    body = http.put(
        path,
        json={"connector.class": "FileStreamSource", "name": "v", "topic": "t", "tasks.max": "x"},
    )
    assert body.status_code == 200
    infos = body.json()
    assert set(infos) == {"name", "error_count", "groups", "configs"}
    assert infos["name"].endswith("FileStreamSourceConnector")
    assert infos["error_count"] == 2  # "Not a number", then (as Kafka) the validator on null
    assert "Common" in infos["groups"]
    by_name = {c["value"]["name"]: c for c in infos["configs"]}
    assert by_name["tasks.max"]["value"]["errors"]
    assert set(by_name["topic"]["value"]) == {
        "name",
        "value",
        "recommended_values",
        "errors",
        "visible",
    }
    assert "file" in by_name  # the plugin's own keys are merged in
    good = http.put(
        path,
        json={
            "connector.class": "FileStreamSource",
            "name": "v",
            "topic": "t",
            "value.converter": "NoSuchConverter",
        },
    ).json()
    assert good["error_count"] == 1
    assert {c["value"]["name"]: c for c in good["configs"]}["value.converter"]["value"]["errors"]
    empty_topic = http.put(
        path,
        json={
            "connector.class": "FileStreamSource",
            "name": "v",
            "topic": "t",
            "offsets.storage.topic": "",
        },
    ).json()
    assert empty_topic["error_count"] == 1
    assert {c["value"]["name"]: c for c in empty_topic["configs"]}["offsets.storage.topic"][
        "value"
    ]["errors"] == [
        "Invalid value  for configuration offsets.storage.topic: String must be non-empty"
    ]
    unknown = http.put(
        "/connector-plugins/Missing/config/validate", json={"connector.class": "Missing"}
    )
    assert unknown.status_code == 200 and unknown.json()["error_count"] >= 1
    _assert_error(
        http.put(path, json={"connector.class": "FileStreamSink"}),
        400,
        "does not match request type",
    )
    _assert_error(http.put(path, json={"topic": "t"}), 400, "contains no connector type")


def test_validate_reports_smt_and_converter_configs_per_key_before_start(
    http: httpx.Client, tmp_path: Path
) -> None:
    path = "/connector-plugins/FileStreamSourceConnector/config/validate"
    config = {
        **_source(tmp_path, "smt-validate"),
        "name": "smt-validate",
        "transforms": "mask,route",
        "transforms.mask.type": "org.apache.kafka.connect.transforms.MaskField$Value",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "(unclosed",
        "transforms.route.replacement": "x",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "maybe",
    }
    infos = http.put(path, json=config).json()
    by_name = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"]}
    assert by_name["transforms.mask.fields"], by_name.get("transforms.mask.fields")
    assert by_name["transforms.route.regex"], by_name.get("transforms.route.regex")
    assert by_name["value.converter.schemas.enable"]
    assert infos["error_count"] >= 3
    # ... and creating it fails with the same errors, starting nothing.
    _assert_error(
        http.post("/connectors", json={"name": "smt-validate", "config": config}),
        400,
        "transforms.mask.fields",
    )
    _assert_error(http.get("/connectors/smt-validate"), 404)
    fixed = {
        **config,
        "transforms.mask.fields": "email",
        "transforms.route.regex": "(.*)",
        "value.converter.schemas.enable": "false",
    }
    assert http.put(path, json=fixed).json()["error_count"] == 0


def test_avro_converter_strategy_and_unsupported_options_fail_validate_not_the_task(
    http: httpx.Client, tmp_path: Path
) -> None:
    """An unknown subject name strategy used to pass config/validate and fail the task after
    POST's 201; it is now an error on its key, as a missing schema.registry.url is."""
    path = "/connector-plugins/FileStreamSourceConnector/config/validate"
    config = {
        **_source(tmp_path, "avro-validate"),
        "name": "avro-validate",
        "value.converter": "io.confluent.connect.avro.AvroConverter",
        "value.converter.schema.registry.url": "http://localhost:1",
        "value.converter.value.subject.name.strategy": "com.nope.Strategy",
        "value.converter.enhanced.avro.schema.support": "true",
        "value.converter.scrub.invalid.names": "true",
        "value.converter.connect.meta.data": "false",
    }
    infos = http.put(path, json=config).json()
    by_name = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"]}
    (message,) = by_name["value.converter.value.subject.name.strategy"]
    assert message.startswith(
        # a converter's own messages name its own key, as Kafka's converter validation does
        "Invalid value com.nope.Strategy for configuration "
        "value.subject.name.strategy: Unknown subject name strategy"
    ), message
    (message,) = by_name["value.converter.enhanced.avro.schema.support"]
    assert "does not support" in message, message
    assert by_name["value.converter.scrub.invalid.names"] == []
    assert by_name["value.converter.connect.meta.data"] == []
    assert infos["error_count"] == 2
    _assert_error(
        http.post("/connectors", json={"name": "avro-validate", "config": config}),
        400,
        "com.nope.Strategy",
    )
    _assert_error(http.get("/connectors/avro-validate"), 404)
    fixed = {
        **config,
        "value.converter.value.subject.name.strategy": "RecordNameStrategy",
        "value.converter.enhanced.avro.schema.support": "false",
    }
    assert http.put(path, json=fixed).json()["error_count"] == 0


def test_empty_component_classes_are_invalid_and_nothing_is_stored(
    http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    # An empty class name passed validation, so the connector was stored and started before
    # its task specs refused it: a 400 without Kafka's shape, and a connector left RUNNING
    # with no tasks. Kafka's ConfigDef refuses the empty class on validation.
    name = _name("empty-class")
    base = _sink(tmp_path, topic_name)
    for key, extra in [
        ("transforms.a.type", {"transforms": "a", "transforms.a.type": ""}),
        (
            "predicates.p.type",
            {
                "transforms": "a",
                "transforms.a.type": "org.apache.kafka.connect.transforms.InsertHeader",
                "transforms.a.header": "h",
                "transforms.a.value.literal": "v",
                "transforms.a.predicate": "p",
                "predicates": "p",
                "predicates.p.type": "",
            },
        ),
        ("key.converter", {"key.converter": ""}),
        ("header.converter", {"header.converter": ""}),
    ]:
        config = {**base, **extra}
        infos = http.put(
            "/connector-plugins/FileStreamSink/config/validate", json={**config, "name": name}
        ).json()
        by_name = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"]}
        expected = f"Invalid value  for configuration {key}: Class  could not be found."
        assert by_name[key] == [expected], (key, by_name.get(key))
        assert infos["error_count"] == 1, infos
        response = http.post("/connectors", json={"name": name, "config": config})
        _assert_error(response, 400, "contains the following 1 error(s):\n" + expected)
        _assert_error(http.put(f"/connectors/{name}/config", json=config), 400, expected)
        _assert_error(http.get(f"/connectors/{name}"), 404)
        assert name not in http.get("/connectors").json()


def test_negate_without_a_predicate_is_invalid_on_the_transform_type(
    http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    # Kafka's validator of transforms.<alias>.type refuses a negate key without a predicate
    # key; Copycat accepted the connector (the negate meaning nothing).
    name = _name("negate-alone")
    config = {
        **_sink(tmp_path, topic_name),
        "transforms": "x",
        "transforms.x.type": "org.apache.kafka.connect.transforms.InsertHeader",
        "transforms.x.header": "h",
        "transforms.x.value.literal": "v",
        "transforms.x.negate": "true",
    }
    expected = (
        "Config 'transforms.x.negate' was provided but there is no config "
        "'transforms.x.predicate' defining a predicate to be negated."
    )
    infos = http.put(
        "/connector-plugins/FileStreamSink/config/validate", json={**config, "name": name}
    ).json()
    by_name = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"]}
    assert by_name["transforms.x.type"] == [expected], by_name
    assert infos["error_count"] == 1, infos
    response = http.post("/connectors", json={"name": name, "config": config})
    _assert_error(response, 400, "contains the following 1 error(s):\n" + expected)
    _assert_error(http.get(f"/connectors/{name}"), 404)


def test_a_source_dead_letter_queue_key_task_specs_would_refuse_is_invalid(
    http: httpx.Client, tmp_path: Path, topic_name: str
) -> None:
    # A source's dead letter queue keys (ours, beyond Kafka) were read only when its task
    # specs were made, after the config was stored and the connector started.
    name = _name("source-dlq")
    key = "errors.deadletterqueue.topic.replication.factor"
    config = {
        **_source(tmp_path, topic_name),
        "errors.deadletterqueue.topic.name": f"{topic_name}-dlq",
        key: "abc",
    }
    infos = http.put(
        "/connector-plugins/FileStreamSource/config/validate", json={**config, "name": name}
    ).json()
    by_name = {c["value"]["name"]: c["value"]["errors"] for c in infos["configs"]}
    expected = f"Invalid value abc for configuration {key}: Not a number of type SHORT"
    assert by_name[key] == [expected] and infos["error_count"] == 1, infos
    _assert_error(http.post("/connectors", json={"name": name, "config": config}), 400, expected)
    _assert_error(http.get(f"/connectors/{name}"), 404)


# -- loggers ---------------------------------------------------------------------------


def test_admin_loggers(http: httpx.Client) -> None:
    name = f"copycat.test.{uuid.uuid4().hex[:6]}"
    logging.getLogger(name + ".child")
    assert "root" in http.get("/admin/loggers").json()
    _assert_error(http.get(f"/admin/loggers/{name}.none"), 404, "not found.")
    affected = http.put(f"/admin/loggers/{name}", json={"level": "DEBUG"})
    assert affected.status_code == 200
    assert affected.json() == [name, name + ".child"]
    entry = http.get(f"/admin/loggers/{name}.child").json()
    assert entry["level"] == "DEBUG" and isinstance(entry["last_modified"], int)
    assert http.get("/admin/loggers").json()[name]["level"] == "DEBUG"
    # The same level again changes nothing, last_modified included (Kafka's
    # test_dynamic_logging); it was stamped again and both names returned.
    time.sleep(0.05)
    assert http.put(f"/admin/loggers/{name}", json={"level": "DEBUG"}).json() == []
    assert http.get(f"/admin/loggers/{name}.child").json() == entry
    unset = f"copycat.test.{uuid.uuid4().hex[:6]}"
    logging.getLogger(unset)
    assert http.put(f"/admin/loggers/{unset}", json={"level": "INFO"}).json() == []
    assert http.get(f"/admin/loggers/{unset}").json() == {"level": "INFO", "last_modified": None}
    assert http.put(f"/admin/loggers/{name}", json={"level": "WARN"}).status_code == 200
    assert logging.getLogger(name).level == logging.WARNING
    assert (
        http.put(
            f"/admin/loggers/{name}", params={"scope": "cluster"}, json={"level": "OFF"}
        ).status_code
        == 204
    )
    assert http.get(f"/admin/loggers/{name}").json()["level"] == "OFF"
    _assert_error(
        http.put(f"/admin/loggers/{name}", json={}),
        400,
        "Desired 'level' parameter was not specified in request.",
    )
    _assert_error(
        http.put(f"/admin/loggers/{name}", json={"level": "LOUD"}), 404, "invalid log level 'LOUD'."
    )


def _logged(worker: RestWorker, *parts: str) -> bool:
    return any(all(part in line for part in parts) for line in list(worker.log_lines))


def test_admin_loggers_reach_plugin_code_in_its_hosts(
    http: httpx.Client, worker: RestWorker, tmp_path: Path, topic_name: str
) -> None:
    """A level set on a plugin's package takes effect on its code in plugin hosts: in hosts
    started afterwards, and in a host already running, without a restart (Kafka: the
    connector's classes log in the worker's JVM)."""
    package, module = "copycat_file", "copycat_file.source"
    assert http.put(f"/admin/loggers/{package}", json={"level": "DEBUG"}).status_code == 200
    try:
        started = _name("dbg")
        config = _source(tmp_path, topic_name)
        assert http.post("/connectors", json={"name": started, "config": config}).status_code == 201
        opened = f"Opened {config['file']} for reading"
        wait_for(
            lambda: _logged(worker, f"DEBUG {module}: [{started}-0] {opened}"),
            what="the task's debug line, in a host started after the PUT",
        )
        # The plugin's logger is one the worker knows now, with its ancestor's level.
        entry = http.get(f"/admin/loggers/{module}").json()
        assert entry["level"] == "DEBUG", entry
        assert module in http.put(f"/admin/loggers/{package}", json={"level": "INFO"}).json()

        # A task already running (waiting for its file) gets a change without a restart.
        running = _name("live")
        config = {**config, "file": str(tmp_path / "later.in")}
        assert http.post("/connectors", json={"name": running, "config": config}).status_code == 201
        wait_for(
            lambda: _logged(worker, f"WARNING {module}: [{running}-0] Couldn't find file"),
            what="the waiting task's warning",
        )
        assert http.put(f"/admin/loggers/{module}", json={"level": "DEBUG"}).status_code == 200
        time.sleep(1)  # far more than one slice of the task's loop (RUN_SLICE_S)
        Path(config["file"]).write_text("a\n")
        wait_for(
            lambda: _logged(worker, f"DEBUG {module}: [{running}-0] Opened {config['file']}"),
            what="the running task's debug line after the PUT",
        )
        for name in (started, running):
            http.delete(f"/connectors/{name}")
    finally:
        http.put(f"/admin/loggers/{package}", json={"level": "INFO"})


def test_openapi_document(http: httpx.Client) -> None:
    spec = http.get("/openapi.json").json()
    assert "/connectors/{connector}/offsets" in spec["paths"]
    assert "422" not in json.dumps(spec["paths"])


def test_a_worker_out_of_open_files_says_so_over_rest(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path
) -> None:
    """A worker at its open-files limit (too many connectors for its ulimit) answers 500
    with the operating system's reason, not "Unexpected error: OSError"."""
    with RestWorker(tmp_path, bootstrap_servers, bundled_plugin_path) as w, w.client() as client:
        assert client.get("/connectors").status_code == 200  # the connection is open now
        config = _source(tmp_path, "out-of-files")
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        time.sleep(0.2)  # past the plugin catalogue's rescan interval: the request rescans
        resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) - 1, hard))
        try:
            response = client.put("/connectors/out-of-files/config", json=config)
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        assert response.status_code == 500, response.text
        message = response.json()["message"]
        assert "Too many open files" in message and "Traceback" not in message, message
        # Nothing half-made: the connector was not created, and it can be once files are free.
        assert client.get("/connectors/out-of-files").status_code == 404
        assert client.put("/connectors/out-of-files/config", json=config).status_code == 201
