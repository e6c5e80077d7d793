"""What starting a plugin host costs: wall and CPU time from spawn to "ready", per host.

Run from the repository root:

    uv run python bench/host_start_costs.py [--baseline REF] [--rounds N]

Each round starts a real plugin host the way the worker does (``PluginHost`` from the venv of
the bundled FileStream plugin, installed offline into a temporary plugin path) and measures:

* ready: from before ``PluginHost.start()`` until it returns, i.e. until the host answered its
  first request (``hello``): the launcher's fork + exec, the interpreter's start, the
  bootstrap and the host runtime's imports (``copycat_host`` and what it imports);
* loaded: ready plus ``new FileStreamSourceConnector`` (the plugin's module imported and the
  class constructed), what a connector's start waits for before its own ``start()``;
* the host's CPU (user + system, ``time.process_time()`` asked of the host right after each
  step, so the worker's side does not count) at both points;
* modules: how many modules the host had imported when ready (``len(sys.modules)``);
* imports: what ``python -X importtime`` counts for importing ``copycat_host`` (cumulative,
  everything it imports included) in a fresh interpreter of the same venv.

With ``--baseline REF`` the host-side modules (isolation/_hostside) of git revision ``REF``
are extracted to a temporary directory and started the same way, alternating with the
current ones round by round (the rest of the worker side is this checkout's). A bare
``python -I -c pass`` of the same interpreter is measured in the same rounds, as the floor.
Medians are printed; the machine is shared, so compare the columns of one run, not runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import isolation.host as host_module  # noqa: E402
from core.bundled import prebuilt_wheel  # noqa: E402
from isolation.client import HostClient  # noqa: E402
from isolation.host import PluginHost, plugin_api_root  # noqa: E402
from registry import install  # noqa: E402

CONNECTOR = "copycat_file:FileStreamSourceConnector"
# Column titles and the factor each median is printed with (seconds are printed in ms).
COLUMNS = {
    "ready wall": 1000,
    "ready CPU": 1000,
    "loaded wall": 1000,
    "loaded CPU": 1000,
    "modules": 1,
    "imports": 1000,
}


def extract_hostside(ref: str, into: Path) -> Path:
    """The host-side modules of git revision ``ref``, written to ``into``."""
    names = subprocess.run(
        ["git", "ls-tree", "--name-only", ref, "isolation/_hostside/"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    into.mkdir(parents=True)
    for name in names:
        if name.endswith(".py"):
            text = subprocess.run(
                ["git", "show", f"{ref}:{name}"], cwd=ROOT, check=True, capture_output=True
            ).stdout
            (into / Path(name).name).write_bytes(text)
    return into


def one_start(python: Path, hostside: Path) -> tuple[float, ...]:
    """(ready wall, ready CPU, loaded wall, loaded CPU) of one host in seconds, and how many
    modules it had imported when ready."""
    host_module.HOSTSIDE_DIR = hostside
    channel = PluginHost(python, name="bench-start")
    client = HostClient(channel)
    try:
        began = time.perf_counter()
        channel.start()
        ready = time.perf_counter() - began
        ready_cpu = float(client.eval("time:process_time"))
        modules = int(client.eval("sys:modules.__len__"))
        began = time.perf_counter()
        client.new(CONNECTOR)
        loaded = ready + time.perf_counter() - began
        loaded_cpu = float(client.eval("time:process_time"))
    finally:
        client.close()
    return ready, ready_cpu, loaded, loaded_cpu, modules


def runtime_imports(python: Path, hostside: Path) -> float:
    """Seconds ``-X importtime`` counts for importing ``copycat_host`` (and all it imports)
    with the bootstrap's ``sys.path``, in a fresh interpreter of ``python``."""
    code = (
        f"import sys; sys.path[0:0] = [{str(plugin_api_root())!r}, {str(hostside)!r}]; "
        "import copycat_host"
    )
    report = subprocess.run(
        [str(python), "-I", "-X", "importtime", "-c", code],
        check=True,
        capture_output=True,
        text=True,
    ).stderr
    for line in report.splitlines():
        _, _, cumulative, name = (part.strip() for part in line.replace(":", "|", 1).split("|"))
        if name == "copycat_host":
            return int(cumulative) / 1e6
    raise AssertionError(f"no copycat_host in the import times:\n{report}")


def bare_start(python: Path) -> tuple[float, float]:
    """(wall, CPU) of ``python -I -c pass``."""
    began = time.perf_counter()
    proc = subprocess.Popen([str(python), "-I", "-c", "pass"])
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - began
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="git revision whose host-side modules to compare")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="host-start-") as tmp:
        work = Path(tmp)
        env = install(str(prebuilt_wheel(ROOT / "plugins" / "file")), work / "pp", offline=True)
        variants = {"current": host_module.HOSTSIDE_DIR}
        if args.baseline:
            variants = {
                f"baseline {args.baseline}": extract_hostside(args.baseline, work / "baseline"),
                **variants,
            }
        results: dict[str, list[tuple[float, ...]]] = {name: [] for name in variants}
        bare: list[tuple[float, float]] = []
        one_start(env.python, host_module.HOSTSIDE_DIR)  # warm the page cache, pycs
        for hostside in variants.values():
            one_start(env.python, hostside)
        for round_ in range(args.rounds):
            order = list(variants.items())
            if round_ % 2:
                order.reverse()
            for name, hostside in order:
                start = one_start(env.python, hostside)
                results[name].append((*start, runtime_imports(env.python, hostside)))
            bare.append(bare_start(env.python))
        print(
            f"plugin host start, FileStream venv, median of {args.rounds} (ms; modules: how "
            "many the host had imported when ready; imports: -X importtime of copycat_host)"
        )
        print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
        print(f"{'':28}" + "".join(f"{title:>12}" for title in COLUMNS))
        for name, rows in results.items():
            medians = [
                statistics.median(column) * factor
                for column, factor in zip(zip(*rows, strict=True), COLUMNS.values(), strict=True)
            ]
            print(f"{name:28}" + "".join(f"{value:12.1f}" for value in medians))
        floor = [statistics.median(column) * 1000 for column in zip(*bare, strict=True)]
        print(f"{'python -I -c pass':28}" + "".join(f"{value:12.1f}" for value in floor))


if __name__ == "__main__":
    main()
