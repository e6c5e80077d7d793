"""Distributed mode: start-up over shared topics, unaffected tasks during a rebalance, failover.

Run from the repository root:
    uv run python bench/distributed_bench.py [--rounds N] [--only start|rebalance]

Needs Java (an Apache Kafka broker is started for the run, tests/support/apache_kafka.py).
Every figure is measured in this run next to its baseline:

* **start to REST**: ``copycat distributed`` (a subprocess) until ``GET /connectors`` lists
  its connectors, on internal topics shared by 20 clusters holding 1,000 connectors' records
  (config, target state, task config and commit records; connector and task statuses; an
  offset each, written in Kafka Connect's formats with the KIP's cluster prefixes; the
  worker's own cluster has 50 of them, STOPPED so nothing starts), next to the same worker on
  empty topics of its own (created beforehand, as the shared ones). The KIP reports
  400-500 ms to read such topics in Kafka Connect. Also the worker's own log line: how long
  reading the three topics took.
* **unaffected tasks during a rebalance**: 3 workers run 6 FileStreamSource tasks tailing
  files a writer appends to 200 times a second; a 4th worker joins (load balancing moves
  some tasks to it), later a follower is killed (``kill -9``), then the leader. For the tasks
  that stay where they are, the bench reports how many were stopped (their plugin host's pid
  changed, and the "task ... stopped" lines in the workers' logs; both should be 0) and the
  longest gap between consecutive records in their topic during the rebalance, next to the
  longest gap before it (the baseline: poll and commit pauses).
* **failover**: ``kill -9`` of a worker until its tasks are RUNNING elsewhere, with
  ``session.timeout.ms`` 6 s and ``scheduled.rebalance.max.delay.ms`` 5 s (Kafka's default is
  5 minutes: the time is dominated by what the operator chose), next to that sum.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

from core.bundled import ensure_bundled_plugins  # noqa: E402
from core.distributed.config_store import (  # noqa: E402
    connector_config_value,
    target_state_value,
)
from core.distributed.status_store import status_value  # noqa: E402
from core.status import State, Status  # noqa: E402
from core.stores.config import TargetState  # noqa: E402
from tests.support.apache_kafka import ApacheKafka, KafkaCluster  # noqa: E402
from tests.support.distributed import (  # noqa: E402
    SCHEDULED_DELAY_MS,
    SESSION_TIMEOUT_MS,
    DistributedCluster,
)
from tests.support.processes import CliWorker, host_pids, wait_until  # noqa: E402

# The KIP's benchmark: 20 clusters share the topics; 1,000 connectors in all.
CLUSTERS = 20
CONNECTORS = 1_000
# Source tasks in the rebalance measurement, and how often their files grow.
REBALANCE_TASKS = 6
APPEND_HZ = 200
# How long records are watched before and after a membership change.
WATCH_S = 15.0
_READ_LINE = re.compile(r"read the internal topics in (\d+) ms")


def _shared_topics(broker: KafkaCluster, prefix: str) -> dict[str, str]:
    """Topics holding CONNECTORS connectors' records of CLUSTERS sharing clusters."""
    topics = {k: f"{prefix}-{k}" for k in ("configs", "offsets", "status")}
    for name in topics.values():
        broker.create_topic(name, 1, {"cleanup.policy": "compact"})
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20})
    per_cluster = CONNECTORS // CLUSTERS
    for c in range(CLUSTERS):
        group = f"{prefix}-cluster-{c}"
        for n in range(per_cluster):
            name = f"job-{n:03d}"
            config = {
                "connector.class": "FileStreamSource",
                "name": name,
                "file": f"/data/{group}/{name}.txt",
                "topic": f"{group}.{name}",
                "tasks.max": "1",
            }

            def key(k: str, group: str = group) -> bytes:
                return f"{group}.{k}".encode()  # the KIP's prefix

            producer.produce(
                topics["configs"],
                target_state_value(TargetState.STOPPED),
                key(f"target-state-{name}"),
            )
            producer.produce(
                topics["configs"], connector_config_value(config), key(f"connector-{name}")
            )
            producer.produce(
                topics["configs"],
                connector_config_value({**config, "task.class": "T"}),
                key(f"task-{name}-0"),
            )
            producer.produce(topics["configs"], b'{"tasks":1}', key(f"commit-{name}"))
            stopped = Status(State.STOPPED, f"worker-{c}:8083", generation=7)
            producer.produce(
                topics["status"], status_value(stopped), key(f"status-connector-{name}")
            )
            producer.produce(topics["status"], status_value(stopped), key(f"status-task-{name}-0"))
            offset_key = json.dumps([name, {"filename": config["file"]}], separators=(",", ":"))
            producer.produce(topics["offsets"], b'{"position":12345}', key(offset_key))
            producer.poll(0)
    assert producer.flush(60) == 0
    return topics


def _start_to_rest(tmp: Path, props: dict[str, str], expected: int) -> tuple[float, int]:
    """Seconds from process start until GET /connectors lists ``expected``; read time (ms)."""
    tmp.mkdir(parents=True, exist_ok=True)
    worker = CliWorker(tmp, props, mode="distributed")
    started = time.monotonic()
    worker.start(120)

    def listed() -> bool:
        response = httpx.get(worker.url + "/connectors", timeout=5)
        return response.status_code == 200 and len(response.json()) == expected

    wait_until(listed, 120, "the connectors")
    elapsed = time.monotonic() - started
    found = _READ_LINE.search(worker.text())
    worker.close()
    return elapsed, int(found.group(1)) if found else -1


def bench_start(broker: KafkaCluster, plugins: Path, rounds: int) -> None:
    prefix = f"shared-{uuid.uuid4().hex[:6]}"
    topics = _shared_topics(broker, prefix)
    print(f"start to REST: {CONNECTORS} connectors of {CLUSTERS} clusters in shared topics")
    shared, bare, reads, bare_reads = [], [], [], []
    for r in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            group = f"{prefix}-cluster-0"
            base = DistributedCluster(Path(tmp), broker.bootstrap_servers, plugins, 0, group=group)
            props = {
                **base.props,
                "config.storage.topic": topics["configs"],
                "offset.storage.topic": topics["offsets"],
                "status.storage.topic": topics["status"],
                "connect.management.topic.sharing.support": "enabled",
            }
            took, read_ms = _start_to_rest(Path(tmp) / "shared", props, CONNECTORS // CLUSTERS)
            shared.append(took)
            reads.append(read_ms)
            empty = DistributedCluster(Path(tmp), broker.bootstrap_servers, plugins, 0).props
            for key in ("config.storage.topic", "offset.storage.topic", "status.storage.topic"):
                # Existing, as the shared ones: the baseline must not pay for creating them.
                broker.create_topic(empty[key], 1, {"cleanup.policy": "compact"})
            took, bare_read_ms = _start_to_rest(Path(tmp) / "bare", empty, 0)
            bare.append(took)
            bare_reads.append(bare_read_ms)
        print(
            f"  round {r + 1}: shared {shared[-1]:.2f} s (topics read in {reads[-1]} ms), "
            f"own empty topics {bare[-1]:.2f} s (read in {bare_reads[-1]} ms)"
        )
    mid_shared, mid_bare = statistics.median(shared), statistics.median(bare)
    print(
        f"  median: shared {mid_shared:.2f} s, empty {mid_bare:.2f} s "
        f"(ratio {mid_shared / mid_bare:.2f}); reading the shared "
        f"topics: median {statistics.median(reads)} ms, the empty ones "
        f"{statistics.median(bare_reads)} ms"
    )


def _record_times(bootstrap: str, topic: str) -> list[float]:
    """Timestamps of the topic's records up to its end now (the writer keeps appending)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"b-{uuid.uuid4()}"})
    _low, end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    consumer.assign([TopicPartition(topic, 0, 0)])
    times: list[float] = []
    try:
        last = -1
        while last < end - 1:
            for message in consumer.consume(10_000, 1.0):
                if message.error() is None:
                    times.append(message.timestamp()[1] / 1000)
                    last = message.offset()
        return times
    finally:
        consumer.close()


def _max_gap(times: list[float], start: float, end: float) -> float:
    window = [t for t in times if start <= t <= end]
    return max((b - a for a, b in zip(window, window[1:], strict=False)), default=float("nan"))


def bench_rebalance(broker: KafkaCluster, plugins: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        cluster = DistributedCluster(tmp, broker.bootstrap_servers, plugins, 3).start()
        stop = threading.Event()
        files = [tmp / f"src-{i}.txt" for i in range(REBALANCE_TASKS)]
        try:
            for i, path in enumerate(files):
                path.touch()
                topic = f"{cluster.group}-src-{i}"
                broker.create_topic(topic, 1)
                cluster.create(
                    f"src-{i}",
                    {"connector.class": "FileStreamSource", "file": str(path), "topic": topic},
                )
            for i in range(REBALANCE_TASKS):
                cluster.wait_running(f"src-{i}", 1)

            def writer() -> None:
                n = 0
                while not stop.is_set():
                    for path in files:
                        with path.open("a") as fh:
                            fh.write(f"line {n}\n")
                    n += 1
                    time.sleep(1 / APPEND_HZ)

            threading.Thread(target=writer, daemon=True).start()
            changes = (
                "a 4th worker joins",
                "a follower is killed (kill -9)",
                "the leader is killed",
            )
            for change in changes:
                time.sleep(WATCH_S)
                placed = {
                    f"src-{i}": cluster.status(f"src-{i}")["tasks"][0]["worker_id"]
                    for i in range(REBALANCE_TASKS)
                }
                pids = {c: set(host_pids(f"{c}-0")) for c in placed}
                marks = {
                    i: cluster.log_mark(i) for i in range(len(cluster.workers)) if cluster.alive(i)
                }
                changed_at = time.time()
                started = time.monotonic()
                victim = None
                if change.startswith("a 4th"):
                    cluster.add_worker()
                else:
                    leader = cluster.leader()
                    index = leader if "leader" in change else next(i for i in marks if i != leader)
                    victim = cluster.worker_id(index)
                    cluster.kill(index)
                    del marks[index]

                via = next(i for i in marks)

                def settled(victim: str | None = victim, via: int = via) -> bool:
                    for i in range(REBALANCE_TASKS):
                        status = cluster.status(f"src-{i}", via=via)
                        tasks = status.get("tasks") or [{}]
                        if (
                            tasks[0].get("state") != "RUNNING"
                            or tasks[0].get("worker_id") == victim
                        ):
                            return False
                    return True

                wait_until(settled, 120, "every task running again")
                settled_s = time.monotonic() - started
                time.sleep(WATCH_S)
                stayed = [
                    c
                    for c in placed
                    if cluster.status(c, via=via)["tasks"][0]["worker_id"] == placed[c]
                    and placed[c] != victim
                ]
                stopped = [c for c in stayed if set(host_pids(f"{c}-0")) != pids[c]]
                # Task stops the workers that were there before the change logged meanwhile
                # (load balancing revokes some tasks on purpose; those moved, they did not stay).
                logged_stops = [
                    task
                    for i, mark in marks.items()
                    for task, what in cluster.task_events(i, mark)
                    if what == "stopped"
                ]
                stayed_stops = [t for t in logged_stops if t.removesuffix("-0") in stayed]
                before, during = [], []
                for c in stayed:
                    times = _record_times(broker.bootstrap_servers, f"{cluster.group}-{c}")
                    before.append(_max_gap(times, changed_at - WATCH_S, changed_at))
                    during.append(_max_gap(times, changed_at, changed_at + settled_s + 2))
                print(
                    f"{change}: settled in {settled_s:.1f} s; {len(stayed)} tasks stayed, "
                    f"{len(stopped)} of them got a new plugin host, {len(stayed_stops)} stop "
                    f"lines for them in the logs ({len(logged_stops)} task stops in all, moved "
                    f"tasks included); longest gap between their records "
                    f"during the rebalance {max(during, default=float('nan')) * 1000:.0f} ms "
                    f"vs before {max(before, default=float('nan')) * 1000:.0f} ms"
                )
                if victim is not None:
                    bound = (SESSION_TIMEOUT_MS + SCHEDULED_DELAY_MS) / 1000
                    # The delay applies only while the leader that saw the work assigned
                    # lives: a new leader has no memory of it and assigns it at once.
                    why = (
                        "a new leader has no memory of the lost work and reassigns it at once"
                        if "leader" in change
                        else "the leader holds the lost work back for the scheduled delay"
                    )
                    print(
                        f"  failover: killed worker's tasks running elsewhere after "
                        f"{settled_s:.1f} s (session timeout + scheduled delay = {bound:.0f} s; "
                        f"{why})"
                    )
        finally:
            stop.set()
            cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--only", choices=("start", "rebalance"), help="run one of the two measurements"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="distributed-bench-"))
    kafka = ApacheKafka(work / "kafka").start(watch_pid=os.getpid())
    broker = KafkaCluster(kafka.bootstrap_servers)
    plugins = work / "plugins"
    ensure_bundled_plugins([plugins])
    try:
        if args.only != "rebalance":
            bench_start(broker, plugins, args.rounds)
        if args.only != "start":
            bench_rebalance(broker, plugins)
    finally:
        kafka.stop()


if __name__ == "__main__":
    main()
