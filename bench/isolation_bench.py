"""Plugin isolation costs: env install time, host spawn + first call, batched RPC throughput.

Run from the repository root:  uv run python bench/isolation_bench.py

Every figure is measured in this run next to its baseline and printed as a ratio:
* install: `copycat plugins install` of a wheel with one dependency from a local wheelhouse
  (offline), next to a bare `uv venv` + `uv pip install` of the same wheels;
* spawn: a plugin host started from the plugin venv plus its first request, next to a bare
  `python -c pass` from the same interpreter;
* RPC: one put() batch and one poll() batch of 10,000 records of 100 bytes through the host,
  next to the same runner called in-process. Record counts are checked before a number counts.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from isolation import PluginEnvironment, allocator  # noqa: E402
from isolation.host import HOSTSIDE_DIR  # noqa: E402

sys.path.insert(0, str(HOSTSIDE_DIR))  # the host-side modules, as a plugin host sees them
from copycat_batch import ConsumedBatch, ProducedBatch  # noqa: E402
from copycat_pipeline import (  # noqa: E402
    HostSinkTaskContext,
    Pipeline,
    SinkRunner,
)

from registry import install  # noqa: E402
from registry.installer import uv_binary  # noqa: E402
from tests.support.wheels import build_wheel  # noqa: E402

BATCH = 10_000
RECORD_BYTES = 100
ROUNDS = 5

BENCH_PLUGIN = """
from plugin_api import SinkConnector, SinkTask, SourceConnector, SourceTask, SourceRecord, ConfigDef
import benchdep

class CountingSinkTask(SinkTask):
    def start(self, props):
        self.count = 0
    def put(self, records):
        self.count += len(records)
    def stop(self):
        pass

class BurstSourceTask(SourceTask):
    def start(self, props):
        self.batch = [SourceRecord({"p": 0}, {"o": i}, "bench", value=b"x" * 100)
                      for i in range(int(props["batch"]))]
    def poll(self):
        return self.batch
    def stop(self):
        pass

class CountingSink(SinkConnector):
    def start(self, props): pass
    def task_class(self): return CountingSinkTask
    def task_configs(self, n): return [{}] * n
    def stop(self): pass
    def config(self): return ConfigDef()
"""


def _median_s(fn, rounds: int = ROUNDS) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="copycat-bench-") as tmp:
        run(Path(tmp))


def run(work: Path) -> None:
    house = work / "wheelhouse"
    build_wheel(house, "benchdep", "1.0", {"benchdep/__init__.py": "X = 1\n"})
    whl = build_wheel(
        house,
        "bench-plugin",
        "1.0",
        {"bench_plugin.py": BENCH_PLUGIN},
        requires=["benchdep==1.0", "copycat-plugin-api>=0.1"],
        entry_points={"copycat.connectors": {"CountingSink": "bench_plugin:CountingSink"}},
    )
    uv = uv_binary()

    # -- install -----------------------------------------------------------------------------
    counter = iter(range(1000))

    def copycat_install() -> None:
        install(str(whl), work / f"pp{next(counter)}", find_links=[str(house)], offline=True)

    def bare_install() -> None:
        venv = work / f"bare{next(counter)}"
        subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True)
        subprocess.run(
            [
                uv,
                "pip",
                "install",
                "-q",
                "--python",
                str(venv / "bin/python"),
                "--offline",
                "--find-links",
                str(house),
                "--no-deps",
                str(whl),
                str(house / "benchdep-1.0-py3-none-any.whl"),
            ],
            check=True,
        )

    copycat_install()  # warm uv's cache, as an operator's second install would be
    t_install = _median_s(copycat_install)
    t_bare_install = _median_s(bare_install)

    env = PluginEnvironment(next((work / "pp0").iterdir()))

    # -- spawn + first call ------------------------------------------------------------------
    def spawn() -> None:
        host = env.start_host("bench")  # spawns and answers hello
        host.close()

    def bare_python() -> None:
        subprocess.run([str(env.python), "-I", "-c", "pass"], check=True)

    t_spawn = _median_s(spawn)
    t_bare_spawn = _median_s(bare_python)

    # -- RPC throughput ----------------------------------------------------------------------
    payload = b"x" * RECORD_BYTES
    batch = ConsumedBatch.from_rows(
        ("bench", 0, i, 0, 1, None, payload, None) for i in range(BATCH)
    ).wire()
    host = env.start_host("bench-rpc")
    sink = host.next_handle()
    host.start_sink_task(sink, "bench_plugin:CountingSinkTask", {}, {}, False)
    source = host.next_handle()
    host.start_source_task(source, "bench_plugin:BurstSourceTask", {"batch": str(BATCH)}, {})

    result = host.poll(source)
    assert not result.failures
    polled = ProducedBatch.from_wire(result.batch)
    assert len(polled) == BATCH and polled.values[-1] == payload
    t_put = _median_s(lambda: host.put(sink, batch))
    t_poll = _median_s(lambda: host.poll(source))
    count = host.call(sink, "__getattribute__", "count")
    assert count == BATCH * (ROUNDS + 0), f"sink saw {count} records"
    host.close()

    # The same runner, in-process: what the boundary costs on top of the work itself. With
    # the memory and GC settings a plugin host runs with (isolation/allocator.py).
    allocator.tune_this_process()
    allocator.tune_gc()
    sys.path.insert(0, str(env.import_path))
    import bench_plugin  # type: ignore[import-not-found]

    local_task = bench_plugin.CountingSinkTask()
    local = SinkRunner(local_task, Pipeline(None, None, None), HostSinkTaskContext({}, False))
    local_task.initialize(local.context)
    local_task.start({})
    t_local_put = _median_s(lambda: local.put(batch))
    assert local_task.count == BATCH * ROUNDS

    print(
        f"plugin env install (offline wheelhouse): {t_install * 1000:7.0f} ms   "
        f"bare uv venv+install {t_bare_install * 1000:5.0f} ms   ratio "
        f"{t_install / t_bare_install:.2f}x"
        f"   target < 2000 ms"
    )
    print(
        f"host spawn + first RPC:                  {t_spawn * 1000:7.0f} ms   "
        f"bare python start    {t_bare_spawn * 1000:5.0f} ms   ratio {t_spawn / t_bare_spawn:.2f}x"
        f"   target < 500 ms"
    )
    print(
        f"put() batch of {BATCH} x {RECORD_BYTES} B via host: {BATCH / t_put:10,.0f} rec/s   "
        f"in-process {BATCH / t_local_put:10,.0f} rec/s   ratio {t_local_put / t_put:.2f}x"
        f"   target >= 200,000 rec/s"
    )
    print(f"poll() batch of {BATCH} x {RECORD_BYTES} B via host: {BATCH / t_poll:9,.0f} rec/s")


if __name__ == "__main__":
    main()
