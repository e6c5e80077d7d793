"""How an idle Spark worker's memory moves over time: a source and a sink task on executors,
no records, the worker's RSS sampled.

Run from the repository root:

    uv run python bench/spark_idle_memory.py [--minutes 8] [--collect-every SECONDS]

One Apache Kafka broker (tests/support/apache_kafka.py), a ``local-cluster[2,1,1024]`` Spark
application, one standalone worker in this process (as a worker runs its driver) with
``task.runtime=spark`` and the default heartbeat (1 s), a FileStreamSource on an empty file
and a FileStreamSink of its topic. Once both tasks are RUNNING, this process's VmRSS (the
worker and driver side: REST, control server, watchdog, py4j) is read every ``--sample``
seconds; the growth is the least-squares slope after the first two minutes (warm-up), in KB
a minute, with the py4j commands sent and status API calls made per second.
``--collect-every`` runs ``gc.collect()`` that often in a thread of its own: the control that
tells garbage waiting for a full collection from memory held.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402

from core.bundled import ensure_bundled_plugins  # noqa: E402
from tests.support.apache_kafka import ApacheKafka  # noqa: E402
from tests.support.rest import RestWorker  # noqa: E402
from tests.support.spark import start_session, stop_session  # noqa: E402

WARM_UP_S = 120.0
START_TIMEOUT_S = 240.0


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def _slope(points: list[tuple[float, int]]) -> float:
    """Least-squares KB per minute of ``(seconds, KB)`` points."""
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    num = sum((t - mean_t) * (v - mean_v) for t, v in points)
    den = sum((t - mean_t) ** 2 for t, _ in points)
    return num / den * 60 if den else 0.0


def _count_calls() -> dict[str, int]:
    """Counts py4j commands and status API calls made from now on."""
    from py4j.clientserver import ClientServerConnection

    counts = {"py4j": 0, "status_api": 0}
    send, urlopen = ClientServerConnection.send_command, urllib.request.urlopen

    def counted_send(self: Any, command: str) -> Any:
        counts["py4j"] += 1
        return send(self, command)

    def counted_urlopen(*args: Any, **kwargs: Any) -> Any:
        counts["status_api"] += 1
        return urlopen(*args, **kwargs)

    ClientServerConnection.send_command = counted_send  # type: ignore[method-assign]
    urllib.request.urlopen = counted_urlopen
    return counts


def _wait_running(url: str, names: list[str]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        states = [httpx.get(f"{url}/connectors/{n}/status", timeout=30).json() for n in names]
        if all(s.get("tasks") and s["tasks"][0]["state"] == "RUNNING" for s in states):
            return
        time.sleep(1)
    raise SystemExit(f"tasks not RUNNING after {START_TIMEOUT_S:.0f} s: {states}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=8.0)
    parser.add_argument("--sample", type=float, default=30.0, help="seconds between samples")
    parser.add_argument("--collect-every", type=float, default=0.0, help="gc.collect() period")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="spark-idle-") as raw:
        tmp = Path(raw)
        plugins = tmp / "plugins"
        ensure_bundled_plugins(plugins)
        kafka = ApacheKafka(tmp / "kafka").start(watch_pid=os.getpid())
        session = start_session("local-cluster[2,1,1024]", app="copycat-bench idle")
        try:
            props = {"task.runtime": "spark", "spark.master": "local-cluster[2,1,1024]"}
            with RestWorker(tmp / "worker", kafka.bootstrap_servers, plugins, props) as worker:
                topic = f"idle-{uuid.uuid4().hex[:8]}"
                (tmp / "in.txt").write_text("")
                configs = {
                    "source": {"connector.class": "FileStreamSource", "topic": topic,
                               "file": str(tmp / "in.txt")},
                    "sink": {"connector.class": "FileStreamSink", "topics": topic,
                             "file": str(tmp / "out.txt")},
                }  # fmt: skip
                for name, config in configs.items():
                    answer = httpx.put(
                        f"{worker.url}/connectors/{name}/config", json=config, timeout=120
                    )
                    answer.raise_for_status()
                _wait_running(worker.url, list(configs))
                if args.collect_every:

                    def collect() -> None:
                        while True:
                            time.sleep(args.collect_every)
                            gc.collect()

                    threading.Thread(target=collect, daemon=True, name="bench-gc").start()
                counts = _count_calls()
                started = time.monotonic()
                points: list[tuple[float, int]] = []
                while (elapsed := time.monotonic() - started) < args.minutes * 60:
                    points.append((elapsed, _rss_kb()))
                    print(f"  {elapsed:6.0f} s  VmRSS {points[-1][1]:,} KB", flush=True)
                    time.sleep(args.sample)
                seconds = time.monotonic() - started
        finally:
            stop_session(session)
            kafka.stop()
    settled = [p for p in points if p[0] >= WARM_UP_S] or points
    collect_note = f", gc.collect() every {args.collect_every:.0f} s" if args.collect_every else ""
    print(
        f"\nidle Spark worker, two tasks{collect_note}: RSS {_slope(settled):+.1f} KB/min "
        f"over {settled[-1][0] - settled[0][0]:.0f} s after a {WARM_UP_S:.0f} s warm-up; "
        f"{counts['py4j'] / seconds:.1f} py4j commands/s, "
        f"{counts['status_api'] / seconds:.1f} status API calls/s"
    )


if __name__ == "__main__":
    main()
