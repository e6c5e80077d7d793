"""Source and sink path throughput: Copycat's file connectors next to bare confluent-kafka loops.

Run from the repository root:  uv run python bench/pipeline_bench.py [--quick]

Everything runs against one embedded dev broker in this process's machine, in one run:
* source: FileStreamSource -> StringConverter -> Kafka, vs a bare loop that reads the same file
  and produces each line with Copycat's producer settings (acks=all, idempotence, linger 5 ms,
  murmur2), in its cheapest correct form: no callable and no poll() per record; librdkafka
  reports failed deliveries only, and flush() must leave none and nothing unsent;
* sink: Kafka -> StringConverter -> FileStreamSink, vs a bare consumer loop with the sink
  consumer's settings writing each batch of values, newline-terminated, in one call; then
  the sink with 1 and 2 tasks on a 2-partition topic, plain and with a 3-SMT chain (one
  plain 100 B task already keeps both of a 2-core machine's cores busy with its worker,
  plugin host and the broker; the chain makes each task's host CPU-bound).
Sources commit offsets every 100 ms (their timer stops at the last commit); sinks keep Kafka's
default 60 s, so their timings hold no fsync (the bare loops never fsync).
Each result is checked (record count, and output == input byte for byte where order is
defined) before its number is printed. The ratio is Copycat / bare; the source and sink paths
run three times each, alternating, and print the median and every pair's ratio.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

from core.bundled import ensure_bundled_plugins  # noqa: E402
from core.dev.broker import DevBroker  # noqa: E402
from core.kafka import SINK_CONSUMER_DEFAULTS, SOURCE_PRODUCER_DEFAULTS  # noqa: E402
from core.offsets import MemoryOffsetStore  # noqa: E402
from core.plugins import PluginCatalogue  # noqa: E402
from core.worker import Worker  # noqa: E402

WORKER_PROPS = {
    "key.converter": "StringConverter",
    "value.converter": "StringConverter",
    "consumer.session.timeout.ms": "6000",
    "consumer.heartbeat.interval.ms": "1000",
}
# The source is timed to its last offset commit, so its worker commits every 100 ms. Sinks
# keep Kafka's default interval (60 s): a commit flushes and fsyncs the output file, which
# the bare loop never does, and a 100 ms interval would time fsyncs rather than the path.
SOURCE_WORKER_PROPS = {**WORKER_PROPS, "offset.flush.interval.ms": "100"}
# Each path is timed this many times, bare and Copycat alternating; medians are printed.
REPEATS = 3
# The bare producer is told to report failed deliveries only (a client-side reporting choice:
# what it sends is what Copycat's producer sends). Copycat needs every ack to commit source
# offsets; a bare loop that counts acks in a Python callback pays per record for a call
# that a loop with nothing to commit does not need, and flatters Copycat.
BARE_PRODUCER_REPORTING = {"delivery.report.only.error": True}
# Bytes read from the input file at once by the bare source loop, split into lines in one call.
READ_CHUNK = 1 << 20
# Records per bare consume() call: Copycat's sink hands at most this many to one put()
# (core/sink_task.py's MAX_RECORDS_PER_PUT).
MAX_RECORDS_PER_PUT = 2_000
# How long the bare source waits for room when librdkafka's queue is full (as Copycat's loop).
QUEUE_FULL_WAIT_S = 0.05


def make_input(path: Path, count: int, size: int) -> None:
    body = "x" * (size - 9)
    path.write_text("".join(f"{i:08d} {body}\n" for i in range(count)))


def wait_until(predicate, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("benchmark did not finish in time")
        time.sleep(0.005)


def bare_source(bootstrap: str, path: Path, topic: str, warmup_topic: str) -> tuple[float, int]:
    """The cheapest correct producer loop: one ``produce()`` per line and nothing else per
    record, with Copycat's producer settings. librdkafka reports failed deliveries only, so
    acks cost no Python work: a record is acknowledged once flush() has returned with it
    neither failed nor still queued. One record to ``warmup_topic`` goes first, untimed: an
    idempotent producer's first delivery waits for its producer id (0.5 s on the dev broker),
    a start-up cost rather than the path's. (Copycat's timer, from its first batch handed to
    the producer, can still hold part of its own producer's wait: this errs against it.)"""
    failures: list[Any] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            **SOURCE_PRODUCER_DEFAULTS,
            **BARE_PRODUCER_REPORTING,
            "on_delivery": lambda err, msg: failures.append(err),
        }
    )
    producer.produce(warmup_topic, b"warm-up")
    assert producer.flush(60) == 0 and not failures, f"bare producer warm-up failed: {failures}"
    produce = producer.produce
    handed = 0
    start = time.perf_counter()
    with open(path, "rb") as fh:
        rest = b""
        while chunk := fh.read(READ_CHUNK):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()  # a partial last line waits for the next chunk
            for line in lines:
                try:
                    produce(topic, line)
                except BufferError:  # librdkafka's queue is full: wait for the broker
                    while True:
                        producer.poll(QUEUE_FULL_WAIT_S)
                        try:
                            produce(topic, line)
                            break
                        except BufferError:
                            continue
            handed += len(lines)
        assert not rest, "input file does not end with a newline"
    unsettled = producer.flush(60)
    elapsed = time.perf_counter() - start
    assert not failures, f"bare producer: {len(failures)} deliveries failed: {failures[0]}"
    return elapsed, handed - unsettled


def copycat_source(worker: Worker, path: Path, topic: str) -> tuple[float, int]:
    name = f"bench-src-{topic}"
    size = path.stat().st_size
    worker.start_connector(
        name,
        {
            "name": name,
            "connector.class": "FileStreamSource",
            "file": str(path),
            "topic": topic,
            "batch.size": "5000",
            "topic.creation.default.partitions": "1",
            "topic.creation.default.replication.factor": "1",
        },
    )
    runner = worker.start_task(name, 0, worker.task_configs(name)[0])
    assert runner.wait_started(60)  # tasks start on their own thread
    loop = runner.loop
    assert loop is not None
    # Timed from the first record handed to the producer (host start-up is measured by
    # bench/isolation_bench.py) to the committed offset reaching the end of the file.
    wait_until(lambda: loop.records_moved > 0)
    start = time.perf_counter()
    wait_until(
        lambda: any(o == {"position": size} for _, o in worker.offsets.connector_offsets(name))
    )
    elapsed = time.perf_counter() - start
    sent = loop.records_moved  # type: ignore[union-attr]
    worker.stop_connector(name)
    return elapsed, sent


def warm(bootstrap: str, topic: str, count: int, partitions: int = 1) -> None:
    """Read a topic once, untimed. The dev broker serves a topic's first read at ~160k
    records/s and later ones several times faster, so whichever sink read first would lose."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"warm-{topic}", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen = 0
    while seen < count:
        seen += sum(
            1 for m in consumer.consume(min(10_000, count - seen), 1.0) if m.error() is None
        )
    consumer.close()


def bare_sink(bootstrap: str, topic: str, out: Path, count: int) -> float:
    """The cheapest correct consumer loop: batches of up to MAX_RECORDS_PER_PUT, each written
    with one call, with the sink consumer's own settings (with librdkafka's default
    fetch.queue.backoff.ms of 1 s the loop idles a second whenever its queue fills)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"bare-{topic}", **SINK_CONSUMER_DEFAULTS}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen = 0
    start = None
    with open(out, "wb") as fh:
        while seen < count:
            # Never ask for more than remain: librdkafka's consume() waits for the whole count.
            messages = consumer.consume(min(MAX_RECORDS_PER_PUT, count - seen), 1.0)
            values = [m.value() for m in messages if m.error() is None]
            if values:
                if start is None:
                    start = time.perf_counter()
                values.append(b"")  # the last line's newline
                fh.write(b"\n".join(values))
                seen += len(values) - 1
        fh.flush()
    assert start is not None
    elapsed = time.perf_counter() - start
    consumer.close()
    return elapsed


# A per-record chain that makes a sink task CPU-bound in its plugin host: wrap each line in a
# map, add the offset and partition, mask the partition again.
CHAIN = {
    "transforms": "hoist,insert,mask",
    "transforms.hoist.type": "HoistField$Value",
    "transforms.hoist.field": "line",
    "transforms.insert.type": "InsertField$Value",
    "transforms.insert.offset.field": "offset",
    "transforms.insert.partition.field": "partition",
    "transforms.mask.type": "MaskField$Value",
    "transforms.mask.fields": "partition",
}


def copycat_sink(
    worker: Worker,
    topic: str,
    out: Path,
    count: int,
    tasks: int = 1,
    extra: dict[str, str] | None = None,
    label: str = "",
) -> float:
    """Seconds from the first line written to the count-th, across ``tasks`` output files."""
    name = f"bench-sink-{topic}-{tasks}{label}"
    worker.start_connector(
        name,
        {
            "name": name,
            "connector.class": "FileStreamSink",
            "topics": topic,
            "file": str(out),
            "tasks.max": str(tasks),
            **(extra or {}),
        },
    )
    files = [out.with_suffix(f".{i}") for i in range(tasks)]
    for task_id, cfg in enumerate(worker.task_configs(name)):
        assert worker.start_task(name, task_id, dict(cfg, file=str(files[task_id]))).wait_started(
            60
        )

    def lines() -> int:
        total = 0
        for f in files:
            if f.exists():
                with open(f, "rb") as fh:
                    total += sum(
                        chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b"")
                    )
        return total

    loops = [runner.loop for runner in worker.connectors[name].tasks.values() if runner.loop]
    # Timed from the first record put() to the last, from the task loops' own counters.
    wait_until(lambda: sum(loop.records_moved for loop in loops) > 0)  # type: ignore[union-attr]
    start = time.perf_counter()
    wait_until(lambda: sum(loop.records_moved for loop in loops) >= count)  # type: ignore[union-attr]
    elapsed = time.perf_counter() - start
    worker.stop_connector(name)
    assert lines() == count, f"sink wrote {lines()} lines, expected {count}"
    return elapsed


def report(label: str, count: int, mb: float, t_bare: list[float], t_cc: list[float]) -> None:
    """One table row: medians of the alternating runs, and every pair's ratio."""
    bare, cc = statistics.median(t_bare), statistics.median(t_cc)
    ratios = sorted(b / c for b, c in zip(t_bare, t_cc, strict=True))
    pairs = ", ".join(f"{r:.2f}" for r in ratios)
    print(
        f"{label:<34}{count / cc:>14,.0f}{mb / cc:>8.1f}{count / bare:>14,.0f}{mb / bare:>8.1f}"
        f"{bare / cc:>8.2f}   (median of {len(t_cc)}; pairs {pairs})"
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller data sets")
    args = parser.parse_args()
    # Plugin venvs and output files take ~1 GB: removed when the run ends, however it ends.
    with tempfile.TemporaryDirectory(prefix="copycat-pipeline-bench-") as tmp:
        run(Path(tmp), 4 if args.quick else 1)


def run(work: Path, scale: int) -> None:
    plugin_path = work / "plugins"
    ensure_bundled_plugins(plugin_path)
    catalogue = PluginCatalogue.scan([plugin_path])
    with DevBroker() as broker:
        bootstrap = broker.bootstrap_servers
        sources = Worker(
            "bench-sources",
            SOURCE_WORKER_PROPS,
            catalogue,
            MemoryOffsetStore(),
            client_props={"bootstrap.servers": bootstrap},
        )
        worker = Worker(
            "bench",
            WORKER_PROPS,
            catalogue,
            MemoryOffsetStore(),
            client_props={"bootstrap.servers": bootstrap},
        )
        print(
            "bare loops: one produce() per line, no per-record callable or poll(), failures-only "
            "delivery reports;\n            one write per consumed batch; Copycat's client settings"
        )
        print(
            f"{'path':<34}{'copycat rec/s':>14}{'MB/s':>8}{'bare rec/s':>14}{'MB/s':>8}{'ratio':>8}"
        )
        for size, count in ((100, 400_000 // scale), (1024, 100_000 // scale)):
            data = work / f"in-{size}.txt"
            make_input(data, count, size)
            mb = data.stat().st_size / 1e6
            # source: REPEATS times each, alternating; the sinks read the first Copycat topic
            t_bare_runs, t_cc_runs = [], []
            for rep in range(REPEATS):
                bare_topic = f"bare-{size}-{rep}"
                cc_topic = f"cc-{size}" + (f"-{rep}" if rep else "")
                broker.create_topic(bare_topic, 1)
                broker.create_topic(f"{bare_topic}-warmup", 1)
                t_bare, acked = bare_source(bootstrap, data, bare_topic, f"{bare_topic}-warmup")
                assert acked == count, f"bare loop acked {acked} of {count}"
                t_cc, sent = copycat_source(sources, data, cc_topic)
                assert sent == count, f"copycat sent {sent} of {count}"
                t_bare_runs.append(t_bare)
                t_cc_runs.append(t_cc)
            report(f"source {size} B lines x {count}", count, mb, t_bare_runs, t_cc_runs)
            # sink: both read the topic Copycat wrote, REPEATS times each, alternating,
            # because on a shared 2-core machine one pair of runs can differ by a third.
            warm(bootstrap, f"cc-{size}", count)
            t_bare_runs, t_cc_runs = [], []
            for rep in range(REPEATS):
                bare_out, cc_out = (
                    work / f"bare-out-{size}-{rep}.txt",
                    work / f"cc-out-{size}-{rep}",
                )
                t_bare_runs.append(bare_sink(bootstrap, f"cc-{size}", bare_out, count))
                t_cc_runs.append(copycat_sink(worker, f"cc-{size}", cc_out, count, label=f"-{rep}"))
                assert digest(bare_out) == digest(data), "bare sink output differs from input"
                assert digest(cc_out.with_suffix(".0")) == digest(data), "copycat output differs"
            report(f"sink {size} B lines x {count}", count, mb, t_bare_runs, t_cc_runs)
        # scaling with tasks: a 2-partition topic, sink with 1 then 2 tasks
        count = 400_000 // scale
        broker.create_topic("scale", 2)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for i in range(count):
            while True:
                try:
                    producer.produce("scale", b"%08d " % i + b"x" * 91, partition=i % 2)
                    break
                except BufferError:
                    producer.poll(0.01)
        producer.flush(60)
        warm(bootstrap, "scale", count, partitions=2)
        t1 = copycat_sink(worker, "scale", work / "scale1", count, tasks=1)
        t2 = copycat_sink(worker, "scale", work / "scale2", count, tasks=2)
        print(
            f"sink 100 B x {count}, 2 partitions: 1 task {count / t1:,.0f} rec/s, "
            f"2 tasks {count / t2:,.0f} rec/s, scaling {t1 / t2:.2f}x"
        )
        t1 = copycat_sink(worker, "scale", work / "chain1", count, 1, CHAIN, "-chain")
        t2 = copycat_sink(worker, "scale", work / "chain2", count, 2, CHAIN, "-chain")
        print(
            f"  same with a 3-SMT chain:      1 task {count / t1:,.0f} rec/s, "
            f"2 tasks {count / t2:,.0f} rec/s, scaling {t1 / t2:.2f}x"
        )
        worker.stop()
        sources.stop()


if __name__ == "__main__":
    main()
