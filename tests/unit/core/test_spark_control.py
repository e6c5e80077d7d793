"""The control channel between the worker and its tasks on Spark, without Spark: a real
server and client on loopback, the worker's side played by a small handler."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from plugin_api.connector import freeze_partition

from core.offsets import MemoryOffsetStore
from core.spark.control import (
    CONTROL_PATH,
    ControlClient,
    ControlError,
    ControlServer,
    Fenced,
    Request,
)
from core.spark.executor import RemoteOffsets, _Heartbeat
from plugin_api import ConfigException

TOKEN = "t0ken"


class _Worker:
    """The worker's side: one task (connector c, task 0) whose current attempt is 2."""

    def __init__(self) -> None:
        self.store = MemoryOffsetStore()
        self.attempt = 2
        self.beats: list[dict[str, Any]] = []

    def __call__(self, request: Request) -> tuple[int, dict[str, Any]]:
        if (request.connector, request.task, request.attempt) != ("c", 0, self.attempt):
            return 409, {"error": "not the current attempt"}
        if request.op == "heartbeat":
            self.beats.append(dict(request.body))
            return 200, {"target": "RUNNING"}
        if request.op == "offsets.get":
            found = self.store.get("c", request.body["partitions"])
            wanted = request.body["partitions"]
            return 200, {
                "offsets": [
                    [p, found[freeze_partition(p)]] for p in wanted if freeze_partition(p) in found
                ]
            }
        if request.op == "offsets.commit":
            self.store.put("c", [(p, o) for p, o in request.body["entries"]])
            return 200, {}
        return 400, {"error": "unknown"}


@pytest.fixture
def worker() -> Iterator[tuple[_Worker, ControlServer]]:
    handler = _Worker()
    server = ControlServer("127.0.0.1", TOKEN, handler)
    try:
        yield handler, server
    finally:
        server.close()


def _client(server: ControlServer, attempt: int = 2, token: str = TOKEN) -> ControlClient:
    return ControlClient(server.host, server.port, token, "c", 0, attempt)


def test_a_heartbeat_reaches_the_worker_with_the_tasks_identity(worker: Any) -> None:
    handler, server = worker
    answer = _client(server).request("heartbeat", state="RUNNING", records=7)
    assert answer == {"target": "RUNNING"}
    assert handler.beats[0]["records"] == 7 and handler.beats[0]["attempt"] == 2


def test_a_stale_attempt_is_fenced_and_a_wrong_token_refused(worker: Any) -> None:
    _, server = worker
    with pytest.raises(Fenced):
        _client(server, attempt=1).request("heartbeat")
    with pytest.raises(ControlError, match="HTTP 401"):
        _client(server, token="guess").request("heartbeat")


def test_offsets_reach_the_worker_only_when_flushed(worker: Any) -> None:
    handler, server = worker
    offsets = RemoteOffsets(_client(server))
    offsets.put("c", [({"file": "a"}, {"position": 10})])
    offsets.put("c", [({"file": "a"}, {"position": 20}), ({"file": "b"}, {"position": 5})])
    assert handler.store.connector_offsets("c") == []  # not acknowledged yet: not stored
    offsets.flush()
    assert sorted(map(str, handler.store.connector_offsets("c"))) == sorted(
        map(str, [({"file": "a"}, {"position": 20}), ({"file": "b"}, {"position": 5})])
    )
    read = offsets.get("c", [{"file": "a"}, {"file": "zz"}])
    assert read == {freeze_partition({"file": "a"}): {"position": 20}}


def test_a_fenced_attempt_cannot_commit(worker: Any) -> None:
    handler, server = worker
    offsets = RemoteOffsets(_client(server))
    offsets.put("c", [({"file": "a"}, {"position": 10})])
    handler.attempt = 3  # the worker gave attempt 2 up and submitted attempt 3
    with pytest.raises(Fenced):
        offsets.flush()
    assert handler.store.connector_offsets("c") == []


def test_an_unreachable_worker_is_a_control_error() -> None:
    server = ControlServer("127.0.0.1", TOKEN, _Worker())
    client = _client(server)
    server.close()
    with pytest.raises(ControlError, match="cannot reach"):
        client.request("heartbeat")


class _FrozenWorker(_Worker):
    """A worker that answers ``answers`` requests, then freezes (a long pause, SIGSTOP): its
    connections stay open and nothing answers, until :attr:`thaw` is set."""

    def __init__(self, answers: int) -> None:
        super().__init__()
        self.answers = answers
        self.thaw = threading.Event()

    def __call__(self, request: Request) -> tuple[int, dict[str, Any]]:
        if self.answers <= 0:
            self.thaw.wait(120)
            return 503, {"error": "thawed"}
        self.answers -= 1
        return super().__call__(request)


@pytest.fixture
def frozen() -> Iterator[tuple[_FrozenWorker, ControlServer]]:
    handler = _FrozenWorker(answers=1)
    server = ControlServer("127.0.0.1", TOKEN, handler)
    try:
        yield handler, server
    finally:
        handler.thaw.set()
        server.close()


def test_no_request_waits_for_a_frozen_worker_past_the_deadline(frozen: Any) -> None:
    """Without a deadline each request to a worker that stopped answering waited for its own
    timeout plus 30 s, twice: a task on Spark whose worker froze went on for ~61 s whatever
    the heartbeat timeout (an exploratory run: ~30,000 records produced again by then)."""
    _, server = frozen
    deadline = time.monotonic() + 1.0
    client = ControlClient(server.host, server.port, TOKEN, "c", 0, 2, lambda: deadline)
    assert client.request("heartbeat") == {"target": "RUNNING"}
    started = time.monotonic()
    with pytest.raises(ControlError):
        client.request("offsets.commit", entries=[])
    assert time.monotonic() - started < 10  # ~1 s; 60 s before
    with pytest.raises(ControlError, match="has not answered a heartbeat"):
        client.request("heartbeat")  # past the deadline: at once


def test_a_task_stops_when_its_worker_freezes_for_the_heartbeat_timeout(frozen: Any) -> None:
    """The heartbeat thread stops the task (as fenced: nothing more is committed) once the
    worker has not answered for task.spark.heartbeat.timeout.ms, frozen or gone alike."""
    _, server = frozen
    assignment = SimpleNamespace(paused=False, heartbeat_interval_s=0.2, heartbeat_timeout_s=1.5)
    task = SimpleNamespace(
        assignment=assignment,
        spec=SimpleNamespace(name="c-0"),
        loop=None,
        topic_resets=0,
        report=lambda: {"state": "RUNNING"},
    )

    def client(deadline: Any) -> ControlClient:
        return ControlClient(server.host, server.port, TOKEN, "c", 0, 2, deadline)

    heartbeat = _Heartbeat(task, client)  # type: ignore[arg-type]
    heartbeat.start()
    try:
        assert heartbeat.stop_requested.wait(15), "the task went on past the heartbeat timeout"
        assert heartbeat.fenced
    finally:
        heartbeat.done.set()


def test_speculation_is_refused_before_spark_starts() -> None:
    from core.spark.driver import _session

    with pytest.raises(ConfigException, match="spark.speculation=false"):
        _session("w", {"spark.master": "local[1]", "spark.speculation": "true"})


def test_an_answer_leaves_the_server_in_one_write(worker: tuple[_Worker, ControlServer]) -> None:
    """Headers and body in one segment: written apart, the body waited behind Nagle's algorithm
    for the client's delayed ACK (~40 ms a request, every heartbeat and offsets call). The
    answer's first read holds all of it."""
    _, server = worker
    body = json.dumps({"op": "heartbeat", "connector": "c", "task": 0, "attempt": 2}).encode()
    request = (
        f"POST {CONTROL_PATH} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    with socket.create_connection((server.host, server.port), timeout=10) as sock:
        for _ in range(5):  # on a connection past its first exchanges, as a task's
            sock.sendall(request)
            first = sock.recv(65536)
            head, _, rest = first.partition(b"\r\n\r\n")
            length = int(
                next(h for h in head.split(b"\r\n") if h.startswith(b"Content-Length"))[15:]
            )
            assert len(rest) == length, first
