"""The control channel between the worker (the Spark driver) and its tasks on executors.

A task running on an executor learns everything from the worker through this channel and
nothing else: its target state (running, paused, stopped), whether it is still the attempt the
worker counts on, and its connector's source offsets, which stay in the worker's offset store
(the standalone file; a distributed worker's offsets topic). It reports its status, where it
runs and how much it moved. Kafka Connect's tasks learn the same from their herder in-process;
here a process boundary and possibly a network lie in between.

Wire: JSON over HTTP/1.1 (kept-alive connections), ``POST /copycat/tasks`` with a bearer token
made by the worker for this run and handed to executors inside the task's Spark job. JSON,
never pickle: the server listens on the network, and a connection could come from anywhere.
Operations (``op``):

* ``heartbeat``: the task's state and counters in; its target state and ``fenced`` out. The
  worker holds the request until the target differs from the one the task last saw, or the
  heartbeat interval passes (long poll), so a pause or stop reaches the task at once.
* ``offsets.get``: source offsets of some partitions of the task's own connector.
* ``offsets.commit``: store offsets and flush the store; answered only once durable. Refused
  (409) for an attempt the worker no longer counts on, so a task that was given up for lost
  and comes back can never move offsets under its successor.

Threads: :class:`ControlServer` answers on a thread per connection (``ThreadingHTTPServer``);
the handler it is given is called on those threads. :class:`ControlClient` is used by one
thread at a time (the task's heartbeat thread and its loop thread each have their own).
"""

from __future__ import annotations

import hmac
import http.client
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from plugin_api import ConnectException

__all__ = ["CONTROL_PATH", "ControlClient", "ControlError", "ControlServer", "Fenced"]

log = logging.getLogger("copycat.spark.control")

CONTROL_PATH = "/copycat/tasks"
# Bodies are a heartbeat or one flush's offsets; a source with very many partitions commits a
# few MB at most. Anything larger is not ours.
MAX_BODY_BYTES = 64 << 20
# How long a client waits for an answer beyond a long poll's own wait: a worker busy flushing
# a large offsets file answers within this on a loaded machine.
ANSWER_SLACK_S = 30.0


class ControlError(ConnectException):
    """The worker could not be reached or refused a request."""


class Fenced(ControlError):
    """The worker no longer counts on this attempt of the task (it was given up for lost and
    submitted again, or stopped): the attempt must stop without committing anything."""


@dataclass(frozen=True)
class Request:
    """One request as the worker's handler sees it."""

    op: str
    connector: str
    task: int
    attempt: int
    body: Mapping[str, Any]


# (status, JSON answer); status 409 means fenced.
Handler = Callable[[Request], tuple[int, dict[str, Any]]]


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: one connection per task thread
    # Buffered: an answer's headers and body leave in one write when the request is done
    # (http.server flushes then). Written apart (its default), the body waited behind
    # Nagle's algorithm for the client's delayed ACK: ~40 ms on every heartbeat and offsets
    # call of a task past its first exchanges.
    wbufsize = 64 * 1024
    server: _Server

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        if self.path != CONTROL_PATH:
            self._answer(404, {"error": f"no such path {self.path}"})
            return
        expected = f"Bearer {self.server.token}"
        if not hmac.compare_digest(self.headers.get("Authorization", ""), expected):
            self._answer(401, {"error": "bad token"})
            return
        length = int(self.headers.get("Content-Length", "0"))
        if length > MAX_BODY_BYTES:
            self._answer(413, {"error": "body too large"})
            self.close_connection = True
            return
        try:
            body = json.loads(self.rfile.read(length))
            request = Request(
                str(body["op"]),
                str(body["connector"]),
                int(body["task"]),
                int(body["attempt"]),
                body,
            )
        except (ValueError, KeyError, TypeError) as exc:
            self._answer(400, {"error": f"malformed control request: {exc}"})
            return
        try:
            status, answer = self.server.handler(request)
        except Exception as exc:  # noqa: BLE001 - the executor gets the reason, the worker lives
            log.exception(
                "control request %s of %s-%d failed", request.op, request.connector, request.task
            )
            status, answer = 500, {"error": f"{type(exc).__name__}: {exc}"}
        self._answer(status, answer)

    def _answer(self, status: int, answer: dict[str, Any]) -> None:
        data = json.dumps(answer, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base signature
        log.debug("control %s: " + format, self.address_string(), *args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a long poll in progress never holds up the worker's exit

    def __init__(self, address: tuple[str, int], token: str, handler: Handler) -> None:
        super().__init__(address, _RequestHandler)
        self.token = token
        self.handler = handler

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A task whose executor died while its heartbeat was held: nobody is left to answer.
        log.debug("control connection from %s ended abruptly", client_address, exc_info=True)


class ControlServer:
    """The worker's end: listens on ``bind_host`` (an ephemeral port) until :meth:`close`."""

    def __init__(self, bind_host: str, token: str, handler: Handler) -> None:
        self._server = _Server((bind_host, 0), token, handler)
        self.host = bind_host
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="copycat-spark-control", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class ControlClient:
    """A task's end, for one thread: requests carry the task's identity and attempt."""

    def __init__(
        self,
        host: str,
        port: int,
        token: str,
        connector: str,
        task: int,
        attempt: int,
        deadline: Callable[[], float] | None = None,
    ) -> None:
        """``deadline``: the monotonic time after which the worker counts as lost (its last
        heartbeat answer plus the heartbeat timeout); no request waits past it. A worker that
        is frozen (a long pause, SIGSTOP) keeps its connections open and answers nothing, and
        without it a request would wait for its own timeout, twice."""
        self.host, self.port = host, port
        self._auth = f"Bearer {token}"
        self.identity = {"connector": connector, "task": task, "attempt": attempt}
        self._conn: http.client.HTTPConnection | None = None
        self._deadline = deadline

    def request(self, op: str, timeout_s: float = 0.0, **body: Any) -> dict[str, Any]:
        """Send one request and return the worker's answer.

        Raises:
            Fenced: the worker no longer counts on this attempt.
            ControlError: the worker is unreachable, or refused the request.
        """
        data = json.dumps({"op": op, **self.identity, **body}, separators=(",", ":")).encode()
        headers = {"Authorization": self._auth, "Content-Type": "application/json"}
        for retry in (False, True):  # a kept-alive connection the server closed: once more
            conn = self._connection(self._wait_limit(timeout_s + ANSWER_SLACK_S))
            try:
                conn.request("POST", CONTROL_PATH, data, headers)
                response = conn.getresponse()
                payload = response.read()
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                if retry:
                    raise ControlError(
                        f"cannot reach the worker's control endpoint {self.host}:{self.port}: {exc}"
                    ) from exc
                continue
            try:
                answer: dict[str, Any] = json.loads(payload) if payload else {}
            except ValueError as exc:
                raise ControlError(f"unreadable answer from the worker: {exc}") from exc
            if response.status == 409:
                raise Fenced(str(answer.get("error", "fenced")))
            if response.status != 200:
                raise ControlError(
                    f"the worker refused {op} (HTTP {response.status}): {answer.get('error')}"
                )
            return answer
        raise AssertionError("unreachable")

    def _wait_limit(self, timeout_s: float) -> float:
        """``timeout_s``, cut to what is left until the deadline.

        Raises:
            ControlError: the deadline has passed (the worker counts as lost).
        """
        if self._deadline is None:
            return timeout_s
        left = self._deadline() - time.monotonic()
        if left <= 0:
            raise ControlError(
                f"the worker's control endpoint {self.host}:{self.port} has not answered a "
                "heartbeat for the heartbeat timeout"
            )
        return min(timeout_s, left)

    def _connection(self, timeout_s: float) -> http.client.HTTPConnection:
        if self._conn is None:
            self._conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout_s)
        else:
            self._conn.timeout = timeout_s
            if self._conn.sock is not None:
                self._conn.sock.settimeout(timeout_s)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
