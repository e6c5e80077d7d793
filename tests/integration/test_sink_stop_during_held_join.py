"""A sink task stopped while the broker holds its consumer's group join stops in time.

Apache Kafka holds a JoinGroup until every member of the group has joined again or ended its
session: after a worker (or any member) dies, for up to ``session.timeout.ms`` (45 s by
default). A sink task stopped meanwhile, by the rebalance that follows, waited 4 s for that
join (a wait only the dev broker needs) and then ~5 s in librdkafka's ``close()``, whose
LeaveGroup is queued behind the held JoinGroup: past the 5 s graceful timeout, so its plugin
host was killed. Now it skips the wait on Apache Kafka and leaves a slow close to its own
thread, as Kafka's worker leaves a task it cancelled: no kill, not FAILED, and every record
arrives once the group settles.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.plugins import PluginCatalogue
from core.status import State
from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import produce
from tests.support.processes import wait_until
from tests.support.workers import in_process_worker, start_connector

pytestmark = pytest.mark.integration

GRACEFUL_MS = 5_000
# The session of the member that dies: how long the broker holds the group's next join.
DEAD_MEMBER_SESSION_MS = 12_000

# Another member of the sink's consumer group (as a worker that dies would have been).
MEMBER = """
import sys
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
              "session.timeout.ms": int(sys.argv[4]), "enable.auto.commit": False})
assigned = []
c.subscribe([sys.argv[3]], on_assign=lambda c_, p: assigned.append(p))
while not assigned:
    c.poll(0.2)
print("assigned", flush=True)
while True:
    c.poll(0.5)
"""


def _member(bootstrap: str, group: str, topic: str) -> subprocess.Popen[str]:
    member = subprocess.Popen(
        [sys.executable, "-c", MEMBER, bootstrap, group, topic, str(DEAD_MEMBER_SESSION_MS)],
        stdout=subprocess.PIPE,
        text=True,
    )
    return member


@pytest.mark.apache_kafka_only(reason="the dev broker holds every join (test_sink_task_restarts)")
@pytest.mark.parametrize("data_path", ["host", "worker"])
def test_a_sink_stopped_while_its_join_is_held_stops_in_time_and_loses_nothing(
    catalogue: PluginCatalogue,
    broker: KafkaCluster,
    topic_name: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    data_path: str,
) -> None:
    caplog.set_level(logging.INFO, "copycat")
    broker.create_topic(topic_name, 3)
    bootstrap = broker.bootstrap_servers
    produce(bootstrap, topic_name, [f"before {i}".encode() for i in range(3)])
    out = tmp_path / "out.txt"
    worker = in_process_worker(
        catalogue,
        bootstrap,
        **{
            "task.shutdown.graceful.timeout.ms": str(GRACEFUL_MS),
            "consumer.session.timeout.ms": str(broker.session_timeout_ms(10_000)),
            "task.data.path": data_path,
        },
    )
    name = f"held-{data_path}-{topic_name}"
    group = f"connect-{name}"

    def lines() -> list[str]:
        return out.read_text().splitlines() if out.exists() else []

    start_connector(
        worker, name, {"connector.class": "FileStreamSink", "file": str(out), "topics": topic_name}
    )
    members: list[subprocess.Popen[str]] = []
    try:
        wait_until(lambda: len(lines()) == 3, 60, "the first 3 lines")
        dead = _member(bootstrap, group, topic_name)
        members.append(dead)
        assert dead.stdout is not None and dead.stdout.readline().strip() == "assigned"
        dead.send_signal(signal.SIGKILL)
        dead.wait()
        # A member joins: the sink's consumer joins again, and the broker holds that join
        # until the killed member's session ends.
        members.append(_member(bootstrap, group, topic_name))
        time.sleep(3)
        began = time.monotonic()
        worker.stop_task(name, 0)
        took = time.monotonic() - began
        for member in members:
            member.kill()
            member.wait()
        assert took < GRACEFUL_MS / 1000, f"the stop took {took:.1f} s"
        messages = [record.getMessage() for record in caplog.records]
        assert not [m for m in messages if "Graceful stop of task" in m], messages
        assert not [m for m in messages if "killed" in m.lower()], messages
        status = worker.status.task(name, 0)
        assert status is None or status.state is not State.FAILED

        produce(bootstrap, topic_name, [f"after {i}".encode() for i in range(6)])
        worker.start_task(name, 0, worker.task_configs(name)[0]).wait_started(60)
        wait_until(lambda: len(lines()) >= 9, 120, "the 6 lines produced after the stop")
        time.sleep(1)  # nothing more comes: no record twice
        assert sorted(lines()) == sorted(
            [f"before {i}" for i in range(3)] + [f"after {i}" for i in range(6)]
        )
    finally:
        for member in members:
            if member.poll() is None:
                member.kill()
                member.wait()
        worker.stop()
