"""Source throughput with exactly-once support on and off, boundaries poll and interval.

Run from the repository root:  uv run python bench/exactly_once_bench.py [--lines N] [--repeats R]
                                                                        [--peer]

Needs Java: an Apache Kafka broker is started for the run (tests/support/apache_kafka.py, the
JIT's default flags: throughput, not start-up), since what is measured is Kafka's
transactions. One worker in this process runs the bundled FileStreamSource over the same file
(N lines of 100 bytes) four ways, alternating, R times each:

* **off**: at-least-once, offsets committed every OFFSET_FLUSH_INTERVAL_MS (the baseline);
* **poll**: exactly-once, a transaction per poll() (BATCH_SIZE lines), Kafka's default;
* **poll-large**: the same with LARGE_BATCH_SIZE lines per poll (the per-transaction cost is
  a few coordinator round trips, whatever the transaction's size: larger polls amortise it);
* **interval**: exactly-once, a transaction every OFFSET_FLUSH_INTERVAL_MS (the baseline's
  commit cadence);
* **interval-1s**: exactly-once, a transaction a second.

Every variant keeps its offsets in the same kind of place (the connector's own offsets topic,
``offsets.storage.topic``), so the only difference is the transactions. Each run is timed
from the first record handed to the producer to the last (the **throughput**: what the task
sustains, its commits included), and on to the committed offset reaching the end of the file
(the **tail**: how long the last records wait to become visible, at most one transaction
interval). Before a run counts, the topic read ``read_committed`` must hold exactly the
file's lines, in order. Prints each variant's median records/s, its ratio to **off**
(issue 18's target: a cost of at most 15 %, a ratio of at least 0.85) and its median tail.

``--peer`` runs Apache Kafka Connect (the same release as the broker, Java, JIT defaults,
1 GiB heap) through the same variants on the same broker and file, alternating with Copycat
run by run: its FileStreamSourceConnector with the same ``batch.size`` and connector keys,
on a distributed worker with ``exactly.once.source.support=disabled`` for **off** and
``enabled`` for the rest (bench/exactly_once_peer.py). Kafka Connect's loop cannot be watched
from here, so every topic is created with ``message.timestamp.type=LogAppendTime`` and both
are also timed from the broker's stamps: the first record's append to the last's (the
throughput), and the last append to the committed offset reaching the end of the file, seen
by reading the connector's offsets topic as for Copycat (the tail). Copycat's figures are
printed both ways, so its in-process ratios can be checked against the broker's.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME  # noqa: E402

from bench.exactly_once_peer import CONNECTOR_CLASS, ConnectEosWorkers  # noqa: E402
from core.bundled import ensure_bundled_plugins  # noqa: E402
from core.offset_topics import ConnectorOffsetStores  # noqa: E402
from core.offsets import MemoryOffsetStore  # noqa: E402
from core.plugins import PluginCatalogue  # noqa: E402
from core.stores.task_offsets import TaskOffsetStore  # noqa: E402
from core.worker import Worker  # noqa: E402
from core.worker_config import WorkerConfig  # noqa: E402
from tests.support.apache_kafka import ApacheKafka, KafkaCluster  # noqa: E402
from tests.support.kafka import read_topic  # noqa: E402

LINE_BYTES = 100
# The baseline's offset commit cadence, and the interval variant's transaction length.
OFFSET_FLUSH_INTERVAL_MS = 100
# Lines a FileStreamSource poll returns at most: the poll variant's transaction size.
BATCH_SIZE = 5_000
LARGE_BATCH_SIZE = 50_000
VARIANTS: dict[str, dict[str, str] | None] = {
    "off": None,
    "poll": {"transaction.boundary": "poll"},
    "poll-large": {"transaction.boundary": "poll", "batch.size": str(LARGE_BATCH_SIZE)},
    "interval": {
        "transaction.boundary": "interval",
        "transaction.boundary.interval.ms": str(OFFSET_FLUSH_INTERVAL_MS),
    },
    "interval-1s": {
        "transaction.boundary": "interval",
        "transaction.boundary.interval.ms": "1000",
    },
}
# How often the end of a run is checked (reading the offsets topic to its end).
POLL_END_S = 0.02
RUN_TIMEOUT_S = 600
WARM_UP_LINES = 20_000
# Kafka Connect's untimed first copy on each of its workers: enough records for the JIT to
# compile the per-record path (its C2 thresholds are ~10k calls) before anything is timed.
CONNECT_WARM_UP_LINES = 200_000
# Every topic is stamped by the broker as it appends: Kafka Connect is timed by these stamps.
TOPIC_CONFIG = {"message.timestamp.type": "LogAppendTime"}

COPYCAT, COPYCAT_BROKER, CONNECT = "copycat", "copycat (broker stamps)", "kafka connect"
SERIES_TITLES = {
    COPYCAT: "Copycat, first record to last handed to the producer",
    COPYCAT_BROKER: "Copycat, broker append stamps (as Kafka Connect is timed)",
    CONNECT: "Apache Kafka Connect, broker append stamps",
}


@dataclass(frozen=True)
class Timing:
    """One copy of the file: records/s, and seconds until the last records were committed."""

    rate: float
    tail: float


def make_input(path: Path, lines: int) -> str:
    body = "x" * (LINE_BYTES - 9)
    text = "".join(f"{i:08d}{body}\n" for i in range(lines))
    path.write_text(text)
    return hashlib.sha256(text.encode()).hexdigest()


def source_props(name: str, topic: str, path: Path, variant: str) -> dict[str, str]:
    """The connector's keys, the same for Copycat and Kafka Connect (bar the class)."""
    return {
        "name": name,
        "connector.class": "FileStreamSource",
        "file": str(path),
        "topic": topic,
        "batch.size": str(BATCH_SIZE),
        "offsets.storage.topic": f"{name}-offsets",
        **(VARIANTS[variant] or {}),
    }


def wait_committed(
    offsets: TaskOffsetStore, name: str, size: int, failed: Callable[[], object], what: str
) -> float:
    """Until ``name``'s committed offset is the end of the file; ``time.time()`` then.

    Raises:
        AssertionError: ``failed()`` says why (checked when the run takes too long), or
            the run did not end within RUN_TIMEOUT_S.
    """
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while not any(o == {"position": size} for _, o in offsets.connector_offsets(name)):
        assert time.monotonic() < deadline, f"{what}: not finished ({failed() or 'no failure'})"
        time.sleep(POLL_END_S)
    return time.time()


def check_topic(bootstrap: str, topic: str, digest: str, what: str) -> tuple[float, float]:
    """The topic read ``read_committed`` must be the file; its first and last append times.

    Raises:
        AssertionError: the topic is not the file line for line, or its records do not carry
            the broker's append time.
    """
    messages = read_topic(bootstrap, topic)
    values = b"".join((m.value() or b"") + b"\n" for m in messages)
    assert hashlib.sha256(values).hexdigest() == digest, f"{what}: the topic is not the file"
    kinds = {m.timestamp()[0] for m in messages}
    assert kinds == {TIMESTAMP_LOG_APPEND_TIME}, f"{what}: timestamps {kinds}, not LogAppendTime"
    return messages[0].timestamp()[1] / 1000, messages[-1].timestamp()[1] / 1000


def run(
    worker: Worker, broker: KafkaCluster, path: Path, lines: int, digest: str, variant: str
) -> tuple[Timing, Timing]:
    """One copy of the file by Copycat: timed in this process and by the broker's stamps."""
    topic = f"eos-bench-{variant}-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1, TOPIC_CONFIG)
    name = f"bench-{topic}"
    eos = VARIANTS[variant]
    worker.start_connector(name, source_props(name, topic, path, variant))
    runner = worker.start_task(name, 0, worker.task_configs(name)[0], exactly_once=eos is not None)
    assert runner.wait_started(120) and not runner.failed, f"{variant}: task did not start"
    loop = runner.loop
    assert loop is not None
    offsets = worker.services.offsets_for(runner.spec)
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while loop.records_moved == 0:
            assert time.monotonic() < deadline and not runner.failed, f"{variant}: no records"
            time.sleep(0.001)
        start = time.perf_counter()
        while loop.records_moved < lines:
            assert time.monotonic() < deadline and not runner.failed, f"{variant}: not sent"
            time.sleep(0.001)
        sent, sent_wall = time.perf_counter(), time.time()
        done_wall = wait_committed(
            offsets, name, path.stat().st_size, lambda: runner.failed, variant
        )
    finally:
        offsets.close()
        worker.stop_connector(name)
    first, last = check_topic(broker.bootstrap_servers, topic, digest, variant)
    return (
        Timing(lines / (sent - start), done_wall - sent_wall),
        Timing(lines / (last - first), done_wall - last),
    )


def run_connect(
    workers: ConnectEosWorkers,
    stores: ConnectorOffsetStores,
    broker: KafkaCluster,
    path: Path,
    lines: int,
    digest: str,
    variant: str,
) -> Timing:
    """One copy of the file by Kafka Connect, timed by the broker's stamps."""
    topic = f"eos-peer-{variant}-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1, TOPIC_CONFIG)
    name = f"bench-{topic}"
    props = {
        **source_props(name, topic, path, variant),
        "connector.class": CONNECTOR_CLASS,
        "tasks.max": "1",
    }
    eos = VARIANTS[variant] is not None
    what = f"kafka connect {variant}"
    workers.start(name, props, eos=eos)
    # Opened once the task runs, so the offsets topic is the one Kafka Connect created; the
    # reader starts from the beginning of it, so nothing committed before is missed.
    offsets = stores.store_for(name, props)
    try:
        done_wall = wait_committed(
            offsets, name, path.stat().st_size, lambda: workers.failed(name, eos=eos), what
        )
    finally:
        offsets.close()
        workers.delete(name, eos=eos)
    first, last = check_topic(broker.bootstrap_servers, topic, digest, what)
    return Timing(lines / (last - first), done_wall - last)


def report(lines: int, repeats: int, series: dict[str, dict[str, list[Timing]]]) -> None:
    """Each series' medians, and every run's ratio to the same round's off."""
    print(f"\n{lines:,} lines of {LINE_BYTES} B, {repeats} runs each, medians:")
    for key, results in series.items():
        print(f"{SERIES_TITLES[key]}:")
        base = statistics.median(t.rate for t in results["off"])
        for variant, timings in results.items():
            median = statistics.median(t.rate for t in timings)
            pairs = ", ".join(
                f"{t.rate / o.rate:.2f}" for t, o in zip(timings, results["off"], strict=True)
            )
            tail = statistics.median(t.tail for t in timings) * 1000
            print(
                f"  {variant:>12}: {median:>9,.0f} records/s  {median / base:.2f}x off  "
                f"({pairs}), tail {tail:,.0f} ms"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--peer", action="store_true", help="Apache Kafka Connect too, alternating with Copycat"
    )
    args = parser.parse_args()
    # The broker's log, the plugin hosts' venvs and the input take ~1.7 GB: removed however
    # the run ends.
    with tempfile.TemporaryDirectory(prefix="eos-bench-") as tmp:
        series = bench(Path(tmp), args.lines, args.repeats, peer=args.peer)
    report(args.lines, args.repeats, series)


def bench(
    work: Path, lines: int, repeats: int, *, peer: bool
) -> dict[str, dict[str, list[Timing]]]:
    """Every timed run, alternating variants (and Copycat with Kafka Connect when ``peer``)."""
    kafka = ApacheKafka(work / "kafka", jvm_flags=()).start(watch_pid=os.getpid())
    broker = KafkaCluster(kafka.bootstrap_servers)
    plugins = work / "plugins"
    ensure_bundled_plugins([plugins])
    path = work / "input.txt"
    digest = make_input(path, lines)
    config = WorkerConfig.from_properties(
        {
            "key.converter": "StringConverter",
            "value.converter": "StringConverter",
            "offset.flush.interval.ms": str(OFFSET_FLUSH_INTERVAL_MS),
            "offset.storage.replication.factor": "1",
            "offset.storage.partitions": "1",
            "exactly.once.source.support": "enabled",
        }
    )
    client: dict[str, Any] = {"bootstrap.servers": broker.bootstrap_servers}
    stores = ConnectorOffsetStores(config, MemoryOffsetStore(), client)
    worker = Worker(
        "bench",
        config,
        PluginCatalogue.scan([plugins]),
        MemoryOffsetStore(),
        client_props=client,
        task_offsets=lambda spec: stores.store_for(spec.connector, spec.connector_config),
    )
    keys = [COPYCAT, COPYCAT_BROKER, CONNECT] if peer else [COPYCAT]
    series: dict[str, dict[str, list[Timing]]] = {k: {v: [] for v in VARIANTS} for k in keys}
    workers: ConnectEosWorkers | None = None
    try:
        # Untimed: the first run pays for the broker's JIT and the plugin's first host.
        warm = work / "warm-up.txt"
        run(worker, broker, warm, WARM_UP_LINES, make_input(warm, WARM_UP_LINES), "off")
        if peer:
            workers = ConnectEosWorkers(
                work / "connect", broker.bootstrap_servers, OFFSET_FLUSH_INTERVAL_MS
            )
            # Untimed, on each worker: Kafka Connect's JIT.
            warm = work / "connect-warm-up.txt"
            warm_digest = make_input(warm, CONNECT_WARM_UP_LINES)
            for variant in ("off", "poll"):
                run_connect(
                    workers, stores, broker, warm, CONNECT_WARM_UP_LINES, warm_digest, variant
                )
        for repeat in range(repeats):
            for variant in VARIANTS:
                timings, broker_timing = run(worker, broker, path, lines, digest, variant)
                measured = {COPYCAT: timings, COPYCAT_BROKER: broker_timing}
                if workers is not None:
                    measured[CONNECT] = run_connect(
                        workers, stores, broker, path, lines, digest, variant
                    )
                for key in keys:
                    series[key][variant].append(measured[key])
                print(
                    f"round {repeat + 1} {variant:>12}: "
                    + "; ".join(
                        f"{key} {t.rate:,.0f} records/s, tail {t.tail * 1000:,.0f} ms"
                        for key, t in measured.items()
                    ),
                    flush=True,
                )
    finally:
        if workers is not None:
            workers.stop()
        worker.stop()
        kafka.stop()
    return series


if __name__ == "__main__":
    main()
