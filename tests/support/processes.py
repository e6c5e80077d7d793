"""Real worker processes (``copycat standalone``) and their plugin hosts, seen from outside.

A plugin host carries ``COPYCAT_PLUGIN=<name>`` in its environment (``<connector>:connector``
for a connector's host, ``<connector>-<task>`` for a task's), which is how tests find the
hosts of one connector among every process on the machine.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
_LISTENING = re.compile(r"REST server listening on (https?://[^\s,]+)")


def host_pids(prefix: str) -> dict[int, str]:
    """``{pid: COPYCAT_PLUGIN}`` of every live plugin host whose name starts with ``prefix``.

    Under pytest-xdist, hosts started under another xdist worker (their environment names
    it: they inherit it through the Copycat worker) are left out: the same test with another
    broker may run there at once, with connectors of the same names. Hosts whose environment
    names no xdist worker count (an orphaned host keeps its environment).
    """
    ours = os.environ.get("PYTEST_XDIST_WORKER", "").encode()
    theirs = b"PYTEST_XDIST_WORKER="
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state == "Z":
            continue  # exited, waiting to be reaped
        if ours and any(i.startswith(theirs) and i != theirs + ours for i in environ):
            continue
        for item in environ:
            if item.startswith(b"COPYCAT_PLUGIN="):
                name = item[len("COPYCAT_PLUGIN=") :].decode()
                if name.startswith(prefix):
                    found[int(entry.name)] = name
    return found


def no_hosts_of(name: str) -> bool:
    """Whether no plugin host of connector ``name`` (its own, its tasks') is left."""
    return not host_pids(f"{name}:") and not host_pids(f"{name}-")


def _properties(props: Mapping[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())


def wait_until(predicate: Callable[[], Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}: last={last!r}")


def runs_kafka_client(pid: int) -> bool:
    """Whether confluent-kafka's extension is loaded in process ``pid``: it is in a task's
    plugin host exactly when the task's data path runs there (task.data.path=host)."""
    return "confluent_kafka" in Path(f"/proc/{pid}/maps").read_text()


def assert_data_path(prefix: str, data_path: str) -> None:
    """Every live host named ``prefix...`` runs the Kafka client iff ``data_path`` is host."""
    pids = host_pids(prefix)
    assert pids, f"no plugin host named {prefix}"
    found = {pid: runs_kafka_client(pid) for pid in pids}
    assert set(found.values()) == {data_path == "host"}, (data_path, found)


def unreachable_address() -> tuple[socket.socket, str]:
    """A socket bound but not listening, and its ``host:port``: every connection to it is
    refused, and no one else can take the port while the socket is open (close it after)."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    return closed, f"127.0.0.1:{closed.getsockname()[1]}"


def signal_while_connecting(worker: CliWorker, sig: int, exit_within_s: float) -> float:
    """Start ``worker`` (pointed at an unreachable cluster), wait until it waits for the
    cluster, send ``sig`` to its process group as a terminal would, and return how many
    seconds it took to exit (its exit code: ``worker.proc.returncode``). Still running twice
    ``exit_within_s`` after the signal, it is killed (exit code -9)."""
    worker.spawn()
    wait_until(
        lambda: "connecting to the Kafka cluster" in worker.text(),
        60,
        "the worker's wait for the Kafka cluster",
    )
    assert worker.proc is not None
    sent = time.monotonic()
    worker.signal_group(sig)
    try:
        worker.wait(exit_within_s * 2)
    except subprocess.TimeoutExpired:
        worker.proc.kill()
        worker.proc.wait()
    return time.monotonic() - sent


class CliWorker:
    """``copycat standalone|distributed worker.properties [connector.properties ...]`` in a
    process (and session) of its own. Started again after it exited (or was killed), it
    appends to the same log and starts the same connectors, as an operator's restart would."""

    def __init__(
        self,
        tmp: Path,
        props: Mapping[str, str],
        connectors: Sequence[Mapping[str, str]] = (),
        mode: str = "standalone",
        env: Mapping[str, str] | None = None,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        self.tmp = tmp
        self.mode = mode
        # How the test's own requests verify an https listener (and present a certificate).
        self.verify = verify
        # Environment variables set for the process on top of the test's own.
        self.env = dict(env or {})
        self.log = tmp / "worker.log"
        self.config = tmp / "worker.properties"
        self.config.write_text(_properties(props))
        self.connector_files: list[Path] = []
        for index, connector in enumerate(connectors):
            path = tmp / f"connector-{index}.properties"
            path.write_text(_properties(connector))
            self.connector_files.append(path)
        self.props = dict(props)
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self._log_start = 0

    def start(self, timeout_s: float = 60) -> CliWorker:
        return self.spawn().wait_ready(timeout_s)

    def spawn(self) -> CliWorker:
        """Start the process and return at once (:meth:`wait_ready` waits for its REST API);
        several workers spawned together start in parallel."""
        # Where this start's lines begin: an earlier run's REST address is in the log too.
        self._log_start = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as log:
            # A session of its own, as a terminal gives a foreground job: signals sent to the
            # process group reach exactly what a Ctrl-C in that terminal would.
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "core.cli",
                    self.mode,
                    str(self.config),
                    *map(str, self.connector_files),
                ],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **self.env} if self.env else None,
            )
        return self

    def wait_listening(self, timeout_s: float = 60) -> CliWorker:
        """Until its REST server is bound (it may not be healthy yet)."""
        self.url = wait_until(self._bound_url, timeout_s, "the worker's REST server")
        return self

    def wait_ready(self, timeout_s: float = 60) -> CliWorker:
        self.wait_listening(timeout_s)
        wait_until(
            lambda: (
                httpx.get(self.url + "/health", timeout=5, verify=self.verify).status_code == 200
            ),
            timeout_s,
            "a healthy worker",
        )
        return self

    def _bound_url(self) -> str | None:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"worker exited ({self.proc.returncode}):\n{self.text()}")
        with open(self.log, "rb") as log:
            log.seek(self._log_start)
            found = _LISTENING.search(log.read().decode(errors="replace"))
        return found.group(1) if found else None

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60, verify=self.verify)

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to the worker's whole process group, as a terminal's Ctrl-C does."""
        assert self.proc is not None
        os.killpg(self.proc.pid, sig)

    def wait(self, timeout_s: float = 60) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout_s)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> CliWorker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
