"""The same pipeline on the local runtime and on the Spark runtime with 1 and 2 executors.

Run from the repository root:

    uv run python bench/spark_bench.py [--quick] [--lines N] [--data-path auto|host|worker]

``--data-path`` is the workers' ``task.data.path`` (default auto: the plugin host runs each
task's data path, on an executor as locally).

One run, one Apache Kafka broker (tests/support/apache_kafka.py, jars from Maven Central's
cache), one standalone worker per pipeline run (in this process, with its REST API). The
pipeline is FileStreamSource -> StringConverter -> topic -> StringConverter -> FileStreamSink,
both connectors with one task, created together over REST. Measured per run:

* **first record**: from the two create requests to the first line in the output file (task
  start: on Spark also the job's scheduling, a Python worker, the env built on the executor the
  first time, the plugin host, the Kafka clients, the sink's group join);
* **throughput**: lines / (last line written - first line written), end to end;
* each run is checked before its numbers count: the output holds every input line (sha256 of
  the sorted lines equal to the input's; no loss, no duplicate).

Spark applications: ``local-cluster[1,2,1024]`` (one executor JVM with two slots: both tasks
in it) and ``local-cluster[2,1,1024]`` (two executors of one slot: a task in each). A Spark
application per configuration, started once (~20 s, not timed); in it the local runtime and the
Spark runtime alternate, REPEATS times each, so both see the same machine load. Ratios are
Spark / local of the medians. On a 2-core machine the pipeline already keeps both cores busy
locally (worker, two plugin hosts, broker), so "how it scales" here shows the cost of the
executor hop, not the gain of more machines; the scaling line is what one more executor JVM
costs or gains on the same cores.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402

from core.bundled import ensure_bundled_plugins  # noqa: E402
from tests.support.apache_kafka import ApacheKafka, KafkaCluster  # noqa: E402
from tests.support.rest import RestWorker  # noqa: E402
from tests.support.spark import start_session, stop_session  # noqa: E402

# Runs of each runtime per Spark application, local and Spark alternating. The first Spark run
# of an application is "cold" (the env is built on the executor, Python workers forked); its
# first-record time is shown apart from the warm runs'.
REPEATS = 3
SPARK_CONFIGS = {
    "spark, 1 executor (2 slots)": "local-cluster[1,2,1024]",
    "spark, 2 executors (1 slot each)": "local-cluster[2,1,1024]",
}
# A run that has not delivered every line by then failed.
RUN_TIMEOUT_S = 600.0
# How often the output file is looked at (its size, then its lines at the end).
POLL_S = 0.01


def _input(path: Path, lines: int) -> str:
    text = "".join(f"line-{i:08d} {'x' * 80}\n" for i in range(lines))
    path.write_text(text)
    return hashlib.sha256("".join(sorted(text.splitlines(keepends=True))).encode()).hexdigest()


def run_once(
    tmp: Path,
    broker: KafkaCluster,
    plugins: Path,
    runtime: str,
    master: str,
    lines: int,
    digest: str,
    data_path: str = "auto",
) -> dict[str, float]:
    """One pipeline run; returns first-record latency and throughput, or raises."""
    run = tmp / f"{runtime}-{uuid.uuid4().hex[:6]}"
    run.mkdir()
    source_file, sink_file = tmp / "input.txt", run / "out.txt"
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic)
    extra = {
        "task.runtime": runtime,
        "spark.master": master,  # the application started by main(), which the worker joins
        "task.spark.heartbeat.interval.ms": "500",
        "task.data.path": data_path,
    }
    with RestWorker(run, broker.bootstrap_servers, plugins, extra) as worker:
        with httpx.Client(base_url=worker.url, timeout=120) as http:
            began = time.monotonic()
            for name, config in (
                (
                    "source",
                    {
                        "connector.class": "FileStreamSource",
                        "file": str(source_file),
                        "topic": topic,
                        "batch.size": "5000",
                    },
                ),
                (
                    "sink",
                    {"connector.class": "FileStreamSink", "file": str(sink_file), "topics": topic},
                ),
            ):
                response = http.put(f"/connectors/{name}/config", json=config)
                assert response.status_code == 201, response.text
            expected_bytes = source_file.stat().st_size
            first = last = None
            size = 0
            deadline = began + RUN_TIMEOUT_S
            while size < expected_bytes:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{runtime}: {size} of {expected_bytes} bytes")
                size = sink_file.stat().st_size if sink_file.exists() else 0
                now = time.monotonic()
                if size and first is None:
                    first = now
                last = now
                time.sleep(POLL_S)
            time.sleep(1)  # anything more (a duplicate) would land now
            text = sink_file.read_text()
    got = hashlib.sha256("".join(sorted(text.splitlines(keepends=True))).encode()).hexdigest()
    if got != digest:
        raise AssertionError(f"{runtime}: output differs from input ({len(text)} chars)")
    assert first is not None and last is not None
    return {"first_record_s": first - began, "lines_per_s": lines / max(last - first, 1e-3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100k lines, one repeat")
    parser.add_argument("--lines", type=int, default=500_000)
    parser.add_argument("--data-path", choices=["auto", "host", "worker"], default="auto")
    args = parser.parse_args()
    lines = 100_000 if args.quick else args.lines
    repeats = 1 if args.quick else REPEATS
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="spark-bench-") as raw:
        tmp = Path(raw)
        plugins = tmp / "plugins"
        ensure_bundled_plugins(plugins)
        digest = _input(tmp / "input.txt", lines)
        kafka = ApacheKafka(tmp / "kafka").start(watch_pid=os.getpid())
        broker = KafkaCluster(kafka.bootstrap_servers)
        results: dict[str, list[dict[str, float]]] = {}
        try:
            for label, master in SPARK_CONFIGS.items():
                session = start_session(master, app=f"copycat-bench {label}")
                try:
                    for _ in range(repeats):
                        for runtime, key in (("local", "local"), ("spark", label)):
                            result = run_once(
                                tmp, broker, plugins, runtime, master, lines, digest, args.data_path
                            )
                            results.setdefault(key, []).append(result)
                            print(
                                f"  {key}: {result['lines_per_s']:,.0f} lines/s, first "
                                f"record after {result['first_record_s']:.2f} s",
                                flush=True,
                            )
                finally:
                    stop_session(session)
        finally:
            kafka.stop()
    runs = len(results["local"])
    print(
        f"\n{lines:,} lines of 94 B, file -> topic -> file, task.data.path={args.data_path}; "
        f"medians of {runs} local runs and {repeats} per Spark setup:"
    )
    medians = {
        key: {m: statistics.median(r[m] for r in runs) for m in runs[0]}
        for key, runs in results.items()
    }
    local = medians["local"]
    for key, m in medians.items():
        ratio = m["lines_per_s"] / local["lines_per_s"]
        cold = results[key][0]["first_record_s"]
        warm = statistics.median(r["first_record_s"] for r in results[key][1:] or results[key])
        print(
            f"  {key:34s} {m['lines_per_s']:>10,.0f} lines/s  ({ratio:.2f}x local)  "
            f"first record: cold {cold:.2f} s, warm {warm:.2f} s"
        )
    one, two = (medians[k]["lines_per_s"] for k in SPARK_CONFIGS)
    print(f"  2 executors / 1 executor: {two / one:.2f}x")


if __name__ == "__main__":
    main()
