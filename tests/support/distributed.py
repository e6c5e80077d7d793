"""A Copycat distributed cluster of real worker processes (``copycat distributed``) for tests
and benchmarks: start, bounce (SIGTERM and start again), kill -9, and REST helpers that wait
for what a user waits for.

Every worker is a :class:`~tests.support.processes.CliWorker` in a process (and session) of its
own, so a ``kill -9`` takes its plugin hosts with it, as on a real machine. Called from the
test's main thread.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import signal
import ssl
import subprocess
import time
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import read_all
from tests.support.processes import CliWorker, wait_until

__all__ = ["DistributedCluster", "worker_props"]

# Kafka's minimum session timeout (group.min.session.timeout.ms): how soon a killed worker is
# noticed. Heartbeats every second keep rebalances prompt.
SESSION_TIMEOUT_MS = 6_000
HEARTBEAT_MS = 1_000
# How long a departed worker's work waits before it moves (Kafka's default is 5 minutes).
SCHEDULED_DELAY_MS = 5_000
# A worker process: interpreter, plugin scan, reading three topics, REST; on a busy machine.
START_TIMEOUT_S = 60.0
# A clean stop: every task here stops and commits within task.shutdown.graceful.timeout.ms
# (5 s by default), the worker leaves its group and closes its stores.
STOP_TIMEOUT_S = 30.0
# The worker's log lines for a task thread's beginning and end (core/worker.py).
_TASK_EVENT = re.compile(r"copycat\.worker: task (\S+) (starting|stopped)$", re.MULTILINE)
# A worker log line's time (core/cli.py's format: asctime first, local time).
_LOG_STAMP = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")
_FAILOVER_STEP = re.compile(r"rebalanc|generation|task \S+ (starting|stopped)|member|rejoin")
_REBALANCE_DONE = re.compile(r"rebalance \d+ done \(generation \d+, (leader[^)]*)\)")


def worker_props(
    bootstrap: str, group: str, plugin_path: Path, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A distributed worker's properties for group ``group`` (topics ``<group>-*``)."""
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "config.storage.topic": f"{group}-configs",
        "offset.storage.topic": f"{group}-offsets",
        "status.storage.topic": f"{group}-status",
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        # One partition each: few connectors, and 25 offset partitions cost seconds to create.
        "offset.storage.partitions": "1",
        "status.storage.partitions": "1",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "plugin.path": str(plugin_path),
        "listeners": "http://127.0.0.1:0",
        "offset.flush.interval.ms": "500",
        "session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "heartbeat.interval.ms": str(HEARTBEAT_MS),
        "scheduled.rebalance.max.delay.ms": str(SCHEDULED_DELAY_MS),
        # Sink consumers of a killed worker leave their groups as quickly.
        "consumer.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "consumer.heartbeat.interval.ms": str(HEARTBEAT_MS),
        **(extra or {}),
    }


class DistributedCluster:
    """N ``copycat distributed`` workers of one group (see the module docstring)."""

    def __init__(
        self,
        tmp: Path,
        bootstrap: str,
        plugin_path: Path,
        workers: int,
        *,
        group: str | None = None,
        extra: Mapping[str, str] | None = None,
        auth: tuple[str, str] | None = None,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        self.tmp = tmp
        self.auth = auth  # basic auth credentials for the REST helpers (a secured cluster)
        self.verify = verify  # TLS of the REST helpers' requests (https listeners)
        self.group = group or f"copycat-{uuid.uuid4().hex[:8]}"
        self.props = worker_props(bootstrap, self.group, plugin_path, extra)
        self.workers: list[CliWorker] = [self._new(i) for i in range(workers)]
        self._starts = [0] * workers

    def _new(self, index: int, run: int = 0) -> CliWorker:
        path = self.tmp / f"worker-{index}-{run}"
        path.mkdir(parents=True, exist_ok=True)
        return CliWorker(path, self.props, mode="distributed", verify=self.verify)

    def start(self) -> DistributedCluster:
        for worker in self.workers:
            worker.start(START_TIMEOUT_S)
        return self

    def stop(self) -> None:
        for worker in self.workers:
            worker.close()

    @property
    def urls(self) -> list[str]:
        return [w.url for w in self.workers]

    def worker_id(self, index: int) -> str:
        return self.workers[index].url.split("://", 1)[-1]

    def add_worker(self) -> int:
        """Start one more worker of the group; its index."""
        self.workers.append(self._new(len(self.workers)))
        self._starts.append(0)
        self.workers[-1].start(START_TIMEOUT_S)
        return len(self.workers) - 1

    def alive(self, index: int) -> bool:
        proc = self.workers[index].proc
        return proc is not None and proc.poll() is None

    def leads(self, index: int) -> bool:
        """Whether worker ``index``'s latest completed rebalance says it leads (a frozen
        worker's log may still say so)."""
        done = _REBALANCE_DONE.findall(self.workers[index].text())
        return bool(done) and done[-1] == "leader"

    def leader(self) -> int:
        """The live worker whose latest completed rebalance says it leads."""
        for index in range(len(self.workers)):
            if self.alive(index) and self.leads(index):
                return index
        raise AssertionError("no live worker's log says it leads")

    def bounce(self, index: int) -> None:
        """Clean bounce: SIGTERM (tasks stop and commit), wait for exit, start a new process."""
        self.stop_workers([index])
        self.restart(index)

    def stop_workers(self, indices: Iterable[int]) -> None:
        """Clean stop of several workers at once (SIGTERM to each, then wait): each must exit
        by itself with status 0, else the stop was not clean and the test says so."""
        procs = [(i, self.workers[i].proc) for i in indices]
        for _, proc in procs:
            assert proc is not None and proc.poll() is None
            proc.send_signal(signal.SIGTERM)
        for index, proc in procs:
            assert proc is not None
            try:
                code = proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired as exc:
                proc.kill()
                proc.wait()
                raise AssertionError(
                    f"worker {index} did not stop within {STOP_TIMEOUT_S} s"
                ) from exc
            assert code == 0, f"worker {index} exited {code}:\n{self.workers[index].text()}"

    def kill(self, index: int) -> None:
        """Hard bounce, first half: ``kill -9`` the worker (its hosts die with it)."""
        proc = self.workers[index].proc
        assert proc is not None
        proc.kill()
        proc.wait(30)

    def restart(self, index: int) -> None:
        self.restart_workers([index])

    def restart_workers(self, indices: Iterable[int], timeout_s: float = START_TIMEOUT_S) -> None:
        """New processes for the (stopped or killed) workers, started in parallel: they join
        the group together, in one rebalance."""
        indices = list(indices)
        for index in indices:
            self._starts[index] += 1
            self.workers[index] = self._new(index, self._starts[index]).spawn()
        for index in indices:
            self.workers[index].wait_ready(timeout_s)

    def log_mark(self, index: int) -> int:
        """Where worker ``index``'s log ends now (for :meth:`task_events` after it)."""
        return len(self.workers[index].text())

    def timeline(self, indices: Iterable[int], marks: dict[int, int], since: float) -> str:
        """Worker ``indices``' log lines after ``marks`` that tell a failover's steps
        (rebalances, task starts and stops, group membership), each stamped with the seconds
        since ``since`` (a ``time.time()``): where a slow failover spent its time."""
        steps = []
        for index in indices:
            for line in self.workers[index].text()[marks[index] :].splitlines():
                stamp = _LOG_STAMP.match(line)
                if stamp is None or not _FAILOVER_STEP.search(line):
                    continue
                at = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
                steps.append((at - since, f"worker {index}: {line[stamp.end() :][:150]}"))
        return "\n".join(f"  {at:+6.1f} s {what}" for at, what in sorted(steps))

    def task_events(self, index: int, mark: int = 0) -> list[tuple[str, str]]:
        """``(task, "starting"|"stopped")`` as worker ``index`` logged them after ``mark``."""
        return _TASK_EVENT.findall(self.workers[index].text()[mark:])

    # -- REST ----------------------------------------------------------------------------------

    def request(self, method: str, path: str, via: int = 0, **kwargs: Any) -> httpx.Response:
        """A request to worker ``via``; retries Kafka's "try again" answers (409 during a
        rebalance) as Kafka's own clients do."""
        deadline = time.monotonic() + 60
        while True:
            kwargs.setdefault("auth", self.auth)
            kwargs.setdefault("verify", self.verify)
            response = httpx.request(method, self.workers[via].url + path, timeout=90, **kwargs)
            if response.status_code != 409 or time.monotonic() > deadline:
                return response
            if "already exists" in response.text:
                return response
            time.sleep(0.3)

    def create(self, name: str, config: Mapping[str, str], via: int = 0, **body: Any) -> None:
        response = self.request(
            "POST", "/connectors", via, json={"name": name, "config": dict(config), **body}
        )
        assert response.status_code == 201, response.text

    def placement(self, via: int = 0) -> dict[str, tuple[str, str]]:
        """``{"<connector>-<task>": (state, worker_id)}`` of every task in the cluster."""
        response = httpx.get(
            f"{self.workers[via].url}/connectors?expand=status",
            timeout=30,
            auth=self.auth,
            verify=self.verify,
        )
        response.raise_for_status()
        return {
            f"{name}-{task['id']}": (task["state"], task["worker_id"])
            for name, entry in response.json().items()
            for task in entry["status"]["tasks"]
        }

    def status(self, name: str, via: int = 0) -> dict[str, Any]:
        response = httpx.get(
            f"{self.workers[via].url}/connectors/{name}/status",
            timeout=30,
            auth=self.auth,
            verify=self.verify,
        )
        return response.json() if response.status_code == 200 else {}

    def wait_running(
        self, name: str, tasks: int, timeout_s: float = 60, state: str = "RUNNING"
    ) -> dict[str, Any]:
        """Until the connector and ``tasks`` tasks are in ``state``, as every worker says."""

        def settled() -> dict[str, Any] | None:
            seen = [self.status(name, via=i) for i in range(len(self.workers))]
            first = seen[0]
            if not first or any(s != first for s in seen):
                return None
            connector_ok = first["connector"]["state"] in (state, "RUNNING")
            if state == "STOPPED":
                connector_ok = first["connector"]["state"] == "STOPPED"
            task_states = [t["state"] for t in first["tasks"]]
            if connector_ok and task_states == [state] * tasks:
                return first
            return None

        try:
            return wait_until(settled, timeout_s, f"{name}: {tasks} tasks {state} on every worker")
        except AssertionError as exc:
            seen: list[Any] = []
            for via in range(len(self.workers)):
                try:
                    response = httpx.get(
                        f"{self.workers[via].url}/connectors/{name}/status",
                        timeout=30,
                        auth=self.auth,
                        verify=self.verify,
                    )
                    seen.append(
                        response.json()
                        if response.status_code == 200
                        else f"({response.status_code}: {response.text[:300]})"
                    )
                except httpx.HTTPError as error:
                    seen.append(f"(no answer: {error})")
            raise AssertionError(
                f"{exc}\nits status on each worker: {seen}\n{self.warnings()}\n"
                f"{self.lines_about(name)}"
            ) from None

    def lines_about(self, name: str, per_worker: int = 60) -> str:
        """The last ``per_worker`` log lines of each worker that name ``name`` or end a
        rebalance: who held the connector, when, and what it did with it."""
        out = []
        for index, worker in enumerate(self.workers):
            kept = [
                line
                for line in worker.text().splitlines()
                if _LOG_STAMP.match(line)
                and (name in line or "rebalance" in line)
                and "uvicorn.access" not in line  # the test's own polling buries the rest
            ]
            out.append(f"worker {index} lines about {name}:\n" + "\n".join(kept[-per_worker:]))
        return "\n".join(out)

    def warnings(self, per_worker: int = 80) -> str:
        """The last ``per_worker`` lines of each worker's warnings and errors, with the lines
        that continue them (tracebacks, the stacks of a slow task start's report)."""
        out = []
        for index, worker in enumerate(self.workers):
            kept, keeping = [], False
            for line in worker.text().splitlines():
                stamp = _LOG_STAMP.match(line)
                if stamp is not None:
                    rest = line[stamp.end() :]
                    keeping = rest.startswith(("WARN", "ERROR")) or (
                        keeping and rest.startswith("INFO  copycat.plugin.")
                    )
                if keeping:
                    kept.append(line)
            out.append(f"worker {index} warnings:\n" + "\n".join(kept[-per_worker:]))
        return "\n".join(out)


# KIP-507: the headers a worker signs its internal requests with.
SIGNATURE = "X-Connect-Authorization"
ALGORITHM = "X-Connect-Request-Signature-Algorithm"


def session_keys(cluster: DistributedCluster, broker: KafkaCluster) -> list[dict[str, Any]]:
    """Every ``session-key`` record of the cluster's config topic, oldest first."""
    return [
        json.loads(message.value())
        for message in read_all(broker.bootstrap_servers, f"{cluster.group}-configs", 1, 5)
        if message.key() == b"session-key" and message.value() is not None
    ]


def session_key(cluster: DistributedCluster, broker: KafkaCluster) -> dict[str, Any]:
    """The last ``session-key`` record of the config topic (the leader writes one at once)."""
    found: dict[str, Any] = wait_until(
        lambda: (session_keys(cluster, broker) or [None])[-1],
        60,
        "a session-key record in the config topic",
    )
    return found


def signed(key: bytes, body: bytes, algorithm: str = "HmacSHA256") -> dict[str, str]:
    """The signature headers of ``body`` under ``key``, as a worker sends them."""
    digest = {"HmacSHA256": hashlib.sha256, "HmacSHA1": hashlib.sha1}[algorithm]
    mac = hmac.new(key, body, digest).digest()
    return {SIGNATURE: base64.b64encode(mac).decode(), ALGORITHM: algorithm}


def post_task_configs(
    cluster: DistributedCluster,
    broker: KafkaCluster,
    connector: str,
    configs: list[dict[str, str]],
) -> httpx.Response:
    """``POST /connectors/<connector>/tasks`` to the leader, signed with the current session
    key, as the worker running the connector sends it (what a Kafka Connect worker wrote
    looks the same)."""
    body = json.dumps(configs).encode()
    key = base64.b64decode(session_key(cluster, broker)["key"])
    return cluster.request(
        "POST",
        f"/connectors/{connector}/tasks",
        via=cluster.leader(),
        content=body,
        headers={"Content-Type": "application/json", **signed(key, body)},
    )
