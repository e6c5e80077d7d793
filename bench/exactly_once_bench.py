"""Source throughput with exactly-once support on and off, boundaries poll and interval.

Run from the repository root:  uv run python bench/exactly_once_bench.py [--lines N] [--repeats R]

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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.bundled import ensure_bundled_plugins  # noqa: E402
from core.offset_topics import ConnectorOffsetStores  # noqa: E402
from core.offsets import MemoryOffsetStore  # noqa: E402
from core.plugins import PluginCatalogue  # noqa: E402
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


def make_input(path: Path, lines: int) -> str:
    body = "x" * (LINE_BYTES - 9)
    text = "".join(f"{i:08d}{body}\n" for i in range(lines))
    path.write_text(text)
    return hashlib.sha256(text.encode()).hexdigest()


def run(
    worker: Worker, broker: KafkaCluster, path: Path, lines: int, digest: str, variant: str
) -> tuple[float, float]:
    """One copy of the file: ``(records/s, tail in s)``, after checking what a reader sees."""
    topic = f"eos-bench-{variant}-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    name = f"bench-{topic}"
    eos = VARIANTS[variant]
    props = {
        "name": name,
        "connector.class": "FileStreamSource",
        "file": str(path),
        "topic": topic,
        "batch.size": str(BATCH_SIZE),
        "offsets.storage.topic": f"{name}-offsets",
        **(eos or {}),
    }
    worker.start_connector(name, props)
    runner = worker.start_task(name, 0, worker.task_configs(name)[0], exactly_once=eos is not None)
    assert runner.wait_started(120) and not runner.failed, f"{variant}: task did not start"
    loop = runner.loop
    assert loop is not None
    size = path.stat().st_size
    stores = worker.services.task_offsets
    assert stores is not None
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
        sent = time.perf_counter()
        while not any(o == {"position": size} for _, o in offsets.connector_offsets(name)):
            assert time.monotonic() < deadline and not runner.failed, f"{variant}: not finished"
            time.sleep(POLL_END_S)
        done = time.perf_counter()
    finally:
        offsets.close()
        worker.stop_connector(name)
    values = b"".join(
        (m.value() or b"") + b"\n" for m in read_topic(broker.bootstrap_servers, topic)
    )
    assert hashlib.sha256(values).hexdigest() == digest, f"{variant}: the topic is not the file"
    return lines / (sent - start), done - sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="eos-bench-"))
    kafka = ApacheKafka(work / "kafka", jvm_flags=()).start(watch_pid=os.getpid())
    broker = KafkaCluster(kafka.bootstrap_servers)
    plugins = work / "plugins"
    ensure_bundled_plugins([plugins])
    path = work / "input.txt"
    digest = make_input(path, args.lines)
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
    results: dict[str, list[float]] = {v: [] for v in VARIANTS}
    tails: dict[str, list[float]] = {v: [] for v in VARIANTS}
    try:
        # Untimed: the first run pays for the broker's JIT and the plugin's first host.
        warm = work / "warm-up.txt"
        run(worker, broker, warm, WARM_UP_LINES, make_input(warm, WARM_UP_LINES), "off")
        for repeat in range(args.repeats):
            for variant in VARIANTS:
                rate, tail = run(worker, broker, path, args.lines, digest, variant)
                results[variant].append(rate)
                tails[variant].append(tail)
                print(
                    f"round {repeat + 1} {variant:>12}: {rate:>9,.0f} records/s, "
                    f"tail {tail * 1000:,.0f} ms",
                    flush=True,
                )
    finally:
        worker.stop()
        kafka.stop()
    base = statistics.median(results["off"])
    print(f"\n{args.lines:,} lines of {LINE_BYTES} B, {args.repeats} runs each, medians:")
    for variant, rates in results.items():
        median = statistics.median(rates)
        pairs = ", ".join(f"{r / o:.2f}" for r, o in zip(rates, results["off"], strict=True))
        tail = statistics.median(tails[variant]) * 1000
        print(
            f"  {variant:>12}: {median:>9,.0f} records/s  {median / base:.2f}x off  ({pairs}), "
            f"tail {tail:,.0f} ms"
        )


if __name__ == "__main__":
    main()
