"""What librdkafka's producer settings cost: the bare source loop under each, side by side.

Run from the repository root:

    uv run python bench/producer_settings.py [--broker dev|kafka|both] [--size BYTES]
                                             [--count N] [--repeats N]

One process produces the same input file (``--count`` lines of ``--size`` bytes) with the
cheapest correct loop of bench/pipeline_bench.py (one ``produce()`` per line, failed
deliveries only reported, one final ``flush()`` that must leave nothing unsent), once per
variant of the source producer settings, in turns, ``--repeats`` times:

* ``copycat``: Copycat's source producer defaults (core/kafka.py), Kafka Connect's: acks=all,
  one request in flight, idempotence off;
* ``idempotent-5``: the same with ``enable.idempotence=true`` and 5 requests in flight
  (librdkafka's maximum with idempotence; Copycat's default before this bench existed);
* ``idempotent-1``: idempotence with one request in flight;
* ``plain-5``: idempotence off, 5 requests in flight (a retry may reorder records).

For each run it prints the rate (on Apache Kafka from the broker's LogAppendTime stamps, as
pipeline_bench does; on the dev broker the loop's own time to the end of its flush), the
producing process's CPU seconds split by thread (``python`` is the loop, ``rdk:broker*``
librdkafka's thread for the broker connection), and the CPU the rest of the machine used
meanwhile (mostly the broker). Then, per variant, the medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Producer  # noqa: E402

import bench.pipeline_bench as pipeline  # noqa: E402
from core.kafka import SOURCE_PRODUCER_DEFAULTS  # noqa: E402

VARIANTS: dict[str, dict[str, Any]] = {
    "copycat": {},
    "idempotent-5": {"enable.idempotence": True, "max.in.flight.requests.per.connection": 5},
    "idempotent-1": {"enable.idempotence": True, "max.in.flight.requests.per.connection": 1},
    "plain-5": {"enable.idempotence": False, "max.in.flight.requests.per.connection": 5},
}
TICKS = os.sysconf("SC_CLK_TCK")


def thread_cpu() -> dict[tuple[str, str], float]:
    """CPU seconds so far of each thread of this process, by (thread id, name)."""
    seen = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            name = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        seen[(tid, name)] = (int(fields[11]) + int(fields[12])) / TICKS
    return seen


def machine_busy() -> float:
    """CPU seconds the whole machine has spent busy (not idle, not waiting on I/O)."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / TICKS


def produce_file(
    bootstrap: str, path: Path, topic: str, settings: dict[str, Any]
) -> dict[str, Any]:
    """Produce every line of ``path`` to ``topic``; return wall time, per-thread CPU (by
    thread name, summed) and the rest of the machine's CPU over the timed span."""
    failures: list[Any] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            **SOURCE_PRODUCER_DEFAULTS,
            **settings,
            **pipeline.BARE_PRODUCER_REPORTING,
            "on_delivery": lambda err, msg: failures.append(err),
        }
    )
    producer.produce(f"{topic}-warmup", b"warm-up")  # an idempotent producer waits for its id
    assert producer.flush(60) == 0 and not failures, f"warm-up failed: {failures}"
    produce = producer.produce
    threads_before, busy_before, started = thread_cpu(), machine_busy(), time.monotonic()
    sent = 0
    with open(path, "rb") as fh:
        rest = b""
        while chunk := fh.read(pipeline.READ_CHUNK):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            for line in lines:
                while True:
                    try:
                        produce(topic, line)
                        break
                    except BufferError:  # librdkafka's queue is full: wait for the broker
                        producer.poll(pipeline.QUEUE_FULL_WAIT_S)
            sent += len(lines)
    unsettled = producer.flush(60)
    wall = time.monotonic() - started
    threads_after, busy_after = thread_cpu(), machine_busy()
    assert unsettled == 0 and not failures, f"{unsettled} unsent, {len(failures)} failed"
    by_name: dict[str, float] = {}
    for key, seconds in threads_after.items():
        name = "rdk:broker" if key[1].startswith("rdk:broker") else key[1]
        by_name[name] = by_name.get(name, 0.0) + seconds - threads_before.get(key, 0.0)
    ours = sum(by_name.values())
    return {"sent": sent, "wall": wall, "threads": by_name, "ours": ours,
            "others": busy_after - busy_before - ours}  # fmt: skip


def run_broker(kind: str, work: Path, size: int, count: int, repeats: int) -> None:
    with pipeline.broker(kind, work / kind) as (cluster, _broker_pids):
        bootstrap = cluster.bootstrap_servers
        pipeline.warm_up_broker(cluster, work / kind, 1)  # Apache Kafka: its JIT first
        path = work / f"in-{size}.txt"
        pipeline.make_input(path, count, size)
        results: dict[str, list[dict[str, Any]]] = {name: [] for name in VARIANTS}
        print(f"--- {kind}: {count:,} x {size} B, {repeats} rounds")
        for rep in range(repeats):
            for name, settings in VARIANTS.items():
                topic = f"settings-{name}-{rep}"
                cluster.create_topic(topic, 1, {"message.timestamp.type": "LogAppendTime"})
                cluster.create_topic(f"{topic}-warmup", 1)
                run = produce_file(bootstrap, path, topic, settings)
                if kind == "kafka":
                    seconds, records = pipeline.append_span(bootstrap, topic, count)
                else:  # the dev broker ignores LogAppendTime
                    seconds, records = run["wall"], run["sent"]
                run["rate"] = records / seconds
                results[name].append(run)
                threads = ", ".join(
                    f"{thread} {cpu:.2f}"
                    for thread, cpu in sorted(run["threads"].items(), key=lambda kv: -kv[1])[:2]
                )
                print(
                    f"{name:13s} round {rep}: {run['rate'] / 1e3:6.0f}k rec/s; this process "
                    f"{run['ours']:.2f} CPU s ({threads}); rest of the machine "
                    f"{run['others']:.2f} CPU s",
                    flush=True,
                )
        print(f"--- {kind} medians")
        for name, runs in results.items():
            rate = statistics.median(r["rate"] for r in runs)
            ours = statistics.median(r["ours"] for r in runs)
            thread = statistics.median(r["threads"].get("rdk:broker", 0.0) for r in runs)
            others = statistics.median(r["others"] for r in runs)
            print(
                f"{name:13s} {rate / 1e3:6.0f}k rec/s; CPU us/record: this process "
                f"{ours / count * 1e6:.2f}, rdk:broker thread {thread / count * 1e6:.2f}, "
                f"rest of the machine {others / count * 1e6:.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--broker", choices=("dev", "kafka", "both"), default="both")
    parser.add_argument("--size", type=int, default=1024, help="bytes per line")
    parser.add_argument("--count", type=int, default=250_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="producer-settings-") as tmp:
        for kind in ("dev", "kafka") if args.broker == "both" else (args.broker,):
            run_broker(kind, Path(tmp), args.size, args.count, args.repeats)


if __name__ == "__main__":
    main()
