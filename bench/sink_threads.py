"""Where a sink run's CPU goes, thread by thread: the bare consumer loop against Copycat's
FileStreamSink with its data path in the plugin host (issue 19, part 2).

``pipeline_bench.py`` prints one CPU figure per run (all threads of both processes); this
splits it per thread from ``/proc/<pid>/task/<tid>/schedstat``, over the same windows the
bench times (first batch to last): on-CPU time, and run-queue time (runnable, waiting for a
core) per record. Threads: ``main`` (the loop's thread), ``rdk:broker*`` (librdkafka's fetcher),
``other`` (the rest: the host's channel threads, and FileStreamSink's writer thread until the
twenty-second round). Copycat's rows are the plugin host's threads (``host:``) and the bench
process's (the worker).

The runs alternate, bare first in even pairs. The bare loop runs in this process (not in a
fresh one as pipeline_bench does since its eighteenth round): this compares where CPU goes, not
the rates; the rates printed are each window's.

Usage: ``uv run python bench/sink_threads.py --broker kafka --size 1024 --pairs 6``
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.pipeline_bench as pb  # noqa: E402
from core.bundled import ensure_bundled_plugins  # noqa: E402
from core.offsets import MemoryOffsetStore  # noqa: E402
from core.plugins import PluginCatalogue  # noqa: E402
from core.worker import Worker  # noqa: E402

Snapshot = dict[tuple[int, int], tuple[str, int, int]]  # (pid, tid) -> (thread, on-CPU, queued)


def threads(pids: list[int]) -> Snapshot:
    """Each thread of ``pids``: its kind (see the module docstring), and the nanoseconds it
    spent on a CPU and runnable in a run queue so far."""
    found: Snapshot = {}
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                name = (task / "comm").read_text().strip()
                on_cpu, queued = map(int, (task / "schedstat").read_text().split()[:2])
            except OSError:  # ended meanwhile
                continue
            tid = int(task.name)
            kind = "rdk:broker" if name.startswith("rdk:broker") else "other"
            found[(pid, tid)] = ("main" if tid == pid else kind, on_cpu, queued)
    return found


class Window:
    """Snapshots taken where a run's CPU window opens and closes (``on_window``)."""

    def __init__(self, pids: Callable[[], list[int]]) -> None:
        self.pids = pids
        self.marks: list[Snapshot] = []

    def __call__(self) -> None:
        self.marks.append(threads(self.pids()))

    def per_record(self, records: int) -> dict[str, float]:
        """ns per record per thread kind (``kind`` on-CPU, ``kind.queued`` waiting)."""
        opened, closed = self.marks
        me = os.getpid()
        spent: collections.defaultdict[str, float] = collections.defaultdict(float)
        for key, (kind, on_cpu, queued) in closed.items():
            start = opened.get(key, (kind, 0, 0))
            label = ("" if key[0] == me else "host:") + kind
            spent[label] += (on_cpu - start[1]) / records
            spent[label + ".queued"] += (queued - start[2]) / records
        return dict(spent)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--broker", choices=["dev", "kafka"], default="kafka")
    parser.add_argument("--size", type=int, choices=[size for size, _ in pb.COUNTS], default=1024)
    parser.add_argument("--pairs", type=int, default=6)
    args = parser.parse_args()
    count = dict(pb.COUNTS)[args.size]
    total = count * pb.SINK_COPIES
    with tempfile.TemporaryDirectory(prefix="copycat-sink-threads-") as tmp:
        work = Path(tmp)
        plugin_path = work / "plugins"
        ensure_bundled_plugins(plugin_path)
        with pb.broker(args.broker, work / "broker") as (cluster, broker_pids):
            settle = pb.Settle(broker_pids)
            catalogue = PluginCatalogue.scan([plugin_path])
            bootstrap = cluster.bootstrap_servers
            client_props = {"bootstrap.servers": bootstrap}
            host_path = {"task.data.path": "host"}
            sink = Worker(
                "threads-sink",
                {**pb.WORKER_PROPS, **host_path},
                catalogue,
                MemoryOffsetStore(),
                client_props=client_props,
            )
            source = Worker(
                "threads-source",
                {**pb.SOURCE_WORKER_PROPS, **host_path},
                catalogue,
                MemoryOffsetStore(),
                client_props=client_props,
            )
            pb.warm_up_broker(cluster, work, 1, [(source, sink)])
            data_path = work / "in.txt"
            data = pb.make_input(data_path, count, args.size)
            topic = "threads-in"
            cluster.create_topic(topic, 1)
            cluster.create_topic(f"{topic}-warmup", 1)
            for _ in range(pb.SINK_COPIES):
                pb.bare_source(bootstrap, data_path, topic)
            pb.warm(bootstrap, topic, total)
            copies = hashlib.sha256()
            for _ in range(pb.SINK_COPIES):
                copies.update(data)
            expected = copies.hexdigest()
            me = os.getpid()
            rates: dict[str, list[float]] = {"bare": [], "copycat": []}
            print(f"{cluster.kind}, {args.size} B sink, ns per record", flush=True)
            for pair in range(args.pairs):
                for who in pb.in_turn(["bare", "copycat"], pair):
                    out = work / f"{who}-{pair}"
                    if who == "bare":
                        window = Window(lambda: [me])
                        (seconds, moved), _ = pb.bare_sink(
                            bootstrap, topic, out, total, settle, window
                        )
                    else:
                        window = Window(
                            lambda: [me, *(p for p in pb.children(me) if p not in broker_pids)]
                        )
                        (seconds, moved), _ = pb.copycat_sink(
                            sink,
                            topic,
                            out,
                            total,
                            label=f"-{pair}",
                            on_start=settle,
                            on_window=window,
                        )
                        out = out.with_suffix(".0")
                    assert pb.digest(out) == expected, f"{who} wrote other lines"
                    out.unlink()
                    rates[who].append(moved / seconds)
                    spent = window.per_record(moved)
                    on_cpu = sum(v for k, v in spent.items() if not k.endswith(".queued"))
                    parts = "  ".join(
                        f"{k}={v:.0f}" for k, v in sorted(spent.items()) if abs(v) >= 5
                    )
                    print(
                        f"{pair} {who:<8}{moved / seconds / 1e3:8.0f}k/s  "
                        f"wall {1e9 * seconds / moved:5.0f}  cpu {on_cpu:5.0f}  {parts}",
                        flush=True,
                    )
            bare, copycat = (statistics.median(rates[w]) for w in ("bare", "copycat"))
            print(f"median rates: bare {bare:,.0f}, copycat {copycat:,.0f}: {copycat / bare:.2f}")


if __name__ == "__main__":
    main()
