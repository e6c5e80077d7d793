"""A sink stopped while its consumer's group join is held still leaves the group.

Apache Kafka holds a JoinGroup until every member rejoined or a member that died ends its
session (``session.timeout.ms``); the coordinator connection serves one request at a time, so
the stopping task's final offset commit and its LeaveGroup wait behind that join. The stop
leaves them to their own thread after its share of ``task.shutdown.graceful.timeout.ms``. With
the data path in the plugin host (``task.data.path=host``) the worker then shut the host down,
and its exit took the waiting commit and close with it: the LeaveGroup was never sent. The
member's JoinGroup, already in, made it a member of the generation the held join ended in, with
partitions nobody consumed until the coordinator dropped it a session timeout later (an
exploratory run with cooperative-sticky: 45 s in PREPARING_REBALANCE, then ~40 s of partitions
held by a ghost ``<connector>-1``). Kafka Connect's task thread goes on closing its consumer in
the worker's JVM, which lives on; now the host lives on until its consumer's close is done (at
most the consumer's session timeout), and the group loses the stopped member as soon as the
held join ends.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient

from tests.support.apache_kafka import KafkaCluster
from tests.support.processes import wait_until
from tests.support.rest import RestWorker

pytestmark = pytest.mark.integration

# The stopped task's own session: the ghost it left stayed this long after the held join ended.
TASK_SESSION_TIMEOUT_MS = 30_000
# The frozen foreign member's session: the join is held this long after the freeze. Longer than
# the stop's graceful timeout, so that the stop gives up on its commit and close.
FROZEN_SESSION_TIMEOUT_MS = 12_000
GRACEFUL_TIMEOUT_MS = 3_000
# How soon after the held join can end (the frozen member's session is over) the stopped
# task's member must be gone: its commit and LeaveGroup are answered right after the join's
# answer. Before, it stayed TASK_SESSION_TIMEOUT_MS longer.
LEAVE_BOUND_S = 10.0
PARTITIONS = 4
RECORDS = 40

# A foreign member of the sink's group: joins with cooperative-sticky, says so, polls on.
_MEMBER = """
import sys
from confluent_kafka import Consumer
consumer = Consumer({
    "bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "client.id": sys.argv[4],
    "partition.assignment.strategy": "cooperative-sticky",
    "session.timeout.ms": sys.argv[5], "heartbeat.interval.ms": "1000",
})
consumer.subscribe([sys.argv[3]])
while not consumer.assignment():
    consumer.poll(0.2)
print("assigned", flush=True)
while True:
    consumer.poll(0.2)
"""


def _members(bootstrap: str, group: str) -> tuple[str, list[str] | None]:
    """The group's state and its members' client ids (None: not described this time, e.g.
    before the group's coordinator is known)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        desc = admin.describe_consumer_groups([group], request_timeout=5)[group].result(6)
    except KafkaException as exc:
        return repr(exc), None
    return str(desc.state), [m.client_id for m in desc.members]


@pytest.fixture
def members() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        os.kill(proc.pid, signal.SIGKILL)  # also a frozen one
        proc.wait()


def _join(
    started: list[subprocess.Popen[str]], bootstrap: str, group: str, topic: str, client_id: str
) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _MEMBER, bootstrap, group, topic, client_id]
        + [str(FROZEN_SESSION_TIMEOUT_MS)],
        stdout=subprocess.PIPE,
        text=True,
    )
    started.append(proc)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "assigned", f"{client_id} did not join {group}"
    return proc


@pytest.mark.apache_kafka_only(reason="the dev broker's joins are held (docs/architecture.md)")
def test_a_sink_stopped_behind_a_held_join_leaves_its_group_when_the_join_ends(
    tmp_path: Path,
    broker: KafkaCluster,
    bundled_plugin_path: Path,
    topic_name: str,
    members: list[subprocess.Popen[str]],
) -> None:
    bootstrap = broker.bootstrap_servers
    broker.create_topic(topic_name, PARTITIONS)
    name = f"held-{topic_name}"
    group = f"connect-{name}"
    out = tmp_path / "out.txt"
    props = {
        "task.data.path": "host",
        "consumer.session.timeout.ms": str(TASK_SESSION_TIMEOUT_MS),
        "task.shutdown.graceful.timeout.ms": str(GRACEFUL_TIMEOUT_MS),
        "offset.flush.interval.ms": "600000",  # the stop's commit is the first: held
    }
    with RestWorker(tmp_path, bootstrap, bundled_plugin_path, props) as worker:
        http = worker.client()
        config = {
            "connector.class": "FileStreamSink",
            "topics": topic_name,
            "file": str(out),
            "consumer.override.partition.assignment.strategy": "cooperative-sticky",
        }
        assert http.post("/connectors", json={"name": name, "config": config}).status_code == 201
        task_client = f"connector-consumer-{name}-0"
        wait_until(
            lambda: task_client in (_members(bootstrap, group)[1] or ()), 60, "the task's member"
        )
        frozen = _join(members, bootstrap, group, topic_name, "frozen")

        producer = Producer({"bootstrap.servers": bootstrap})
        for i in range(RECORDS):
            producer.produce(topic_name, f"r{i}".encode(), partition=i % PARTITIONS)
        assert producer.flush(30) == 0

        def task_read() -> bool:
            metrics = http.get("/metrics", headers={"Accept": "text/plain"}).text
            return any(
                line.startswith("kafka_connect_sink_task_sink_record_read_total{")
                and f'connector="{name}"' in line
                and float(line.rsplit(" ", 1)[1]) > 0  # of its partitions (half, about)
                for line in metrics.splitlines()
            )

        wait_until(task_read, 60, "the task to read the records")  # uncommitted: flush is far

        os.kill(frozen.pid, signal.SIGSTOP)
        frozen_at = time.monotonic()
        # A new member starts a rebalance; the task's consumer rejoins, and its JoinGroup is
        # held until the frozen member's session ends.
        members.append(
            subprocess.Popen(
                [sys.executable, "-c", _MEMBER, bootstrap, group, topic_name, "late"]
                + [str(FROZEN_SESSION_TIMEOUT_MS)],
                stdout=subprocess.DEVNULL,
                text=True,
            )
        )
        wait_until(
            lambda: "PREPARING" in _members(bootstrap, group)[0], 30, "the rebalance to begin"
        )
        time.sleep(1.5)  # the task's next heartbeat (1 s) learns of it; its JoinGroup goes out
        stopped_at = time.monotonic()
        assert http.delete(f"/connectors/{name}").status_code == 204
        stop_s = time.monotonic() - stopped_at
        assert stop_s < GRACEFUL_TIMEOUT_MS / 1000 * 2, stop_s  # the stop still keeps its time
        join_ends = frozen_at + FROZEN_SESSION_TIMEOUT_MS / 1000
        assert time.monotonic() < join_ends, "the stop ended after the held join: no test"

        def task_gone() -> bool:
            ids = _members(bootstrap, group)[1]
            return ids is not None and task_client not in ids

        try:
            wait_until(task_gone, join_ends + LEAVE_BOUND_S - time.monotonic(), "the leave")
        except AssertionError:
            raise AssertionError(
                f"{task_client} still in {group} {time.monotonic() - join_ends:.1f} s after the "
                f"held join could end: {_members(bootstrap, group)}"
            ) from None
        print(f"the stopped task left {time.monotonic() - join_ends:.1f} s after the join ended")
