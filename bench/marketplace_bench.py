"""Marketplace costs: install from a local index (cold and warm uv cache), worker start-up.

Run from the repository root:  uv run python bench/marketplace_bench.py [--rounds N]

Every figure is measured in this run next to its baseline:

* install: ``copycat plugins install NAME --index-url`` of a plugin with three dependencies
  from a ``copycat registry serve`` index on this machine, next to a bare ``uv venv`` +
  ``uv pip install NAME`` of the same requirement from the same index. *Cold*: each install
  gets an empty uv cache of its own; *warm*: the cache of a previous install of the same
  requirement. Copycat and bare alternate; the installed distributions are compared before a
  number counts. Copycat's install also resolves to a lock, installs from it, and probes the
  entry points in a plugin host.
* start-up: ``copycat standalone`` (a subprocess, embedded broker off: bootstrap.servers
  points at a dev broker the bench runs) until its REST API answers ``GET /connectors`` and
  until ``GET /health`` says healthy, with 20 plugins installed (the 4 bundled + 16 built
  here), next to a bare process that imports FastAPI and uvicorn and serves one route.
  Also with an empty plugin.path (the bundled plugins install in the background; the time
  until they are listed is reported). Python writes bytecode in the worker's processes here
  (PYTHONDONTWRITEBYTECODE removed), as on an operator's machine; the first start after an
  install compiles it and is reported separately.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402

from core.bundled import ensure_bundled_plugins  # noqa: E402
from core.dev.broker import DevBroker  # noqa: E402
from registry import install  # noqa: E402
from registry.installer import uv_binary  # noqa: E402
from registry.server import RegistryServer, add_libraries  # noqa: E402
from tests.support.marketplace import (  # noqa: E402
    UPLOAD_TOKEN,
    source_plugin_wheel,
    twine_upload,
)
from tests.support.wheels import build_wheel  # noqa: E402

# Plugins installed for the start-up measurement, the bundled ones included.
PLUGINS = 20
# How long a worker may take to come up before the bench gives up on it.
READY_TIMEOUT_S = 60.0
# Gap between two readiness probes; small against the figures measured (~0.5 s).
PROBE_INTERVAL_S = 0.005
BARE_SERVER = """
import sys
from fastapi import FastAPI
import uvicorn
app = FastAPI()
@app.get("/connectors")
def connectors():
    return []
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


def _uv(*args: str, env: dict[str, str]) -> None:
    subprocess.run([uv_binary(), *args], check=True, env=env, capture_output=True)


def _index_with_plugin(work: Path) -> tuple[RegistryServer, str]:
    """A registry holding a plugin that depends on three small libraries."""
    data = work / "index"
    deps = [
        build_wheel(
            work / "deps",
            f"benchdep-{c}",
            "1.0",
            {f"benchdep_{c}/__init__.py": "VALUE = 1\n" * 200}
            | {f"benchdep_{c}/m{i}.py": f"X = {i}\n" for i in range(20)},
        )
        for c in "abc"
    ]
    add_libraries(data, deps)  # copycat-plugin-api: the server packs it at start
    server = RegistryServer(data, upload_token=UPLOAD_TOKEN).start()
    wheel = source_plugin_wheel(
        work / "plugin",
        "bench-plugin",
        "1.0",
        requires=[f"benchdep-{c}==1.0" for c in "abc"],
        body="import benchdep_a, benchdep_b, benchdep_c\n",
    )
    done = twine_upload(server.url, wheel)
    if done.returncode != 0:
        raise SystemExit(done.stdout + done.stderr)
    return server, "bench-plugin"


def _dists(site: Path) -> set[str]:
    return {p.name for p in site.glob("*.dist-info")}


def bench_install(work: Path, rounds: int) -> None:
    server, name = _index_with_plugin(work)
    base_env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    results: dict[str, list[float]] = {
        "copycat cold": [],
        "bare cold": [],
        "copycat warm": [],
        "bare warm": [],
    }
    try:
        for r in range(rounds):
            for who in ("copycat", "bare"):
                cache = work / f"cache-{who}-{r}"
                env = {**base_env, "UV_CACHE_DIR": str(cache)}
                for temp in ("cold", "warm"):
                    target = work / f"{who}-{temp}-{r}"
                    start = time.perf_counter()
                    if who == "copycat":
                        os.environ["UV_CACHE_DIR"] = str(cache)
                        try:
                            env_ = install(name, target, index_url=server.index_url)
                        finally:
                            os.environ.pop("UV_CACHE_DIR", None)
                        site = env_.import_path
                    else:
                        _uv("venv", "--quiet", "--python", sys.executable, str(target), env=env)
                        _uv(
                            "pip",
                            "install",
                            "--quiet",
                            "--python",
                            str(target / "bin" / "python"),
                            "--index-url",
                            server.index_url,
                            name,
                            env=env,
                        )
                        site = next(target.glob("lib/python3*/site-packages"))
                    results[f"{who} {temp}"].append(time.perf_counter() - start)
                    found = _dists(site) - {"copycat_plugin_api-0.1.0.dist-info"}
                    expected = {
                        "bench_plugin-1.0.dist-info",
                        *(f"benchdep_{c}-1.0.dist-info" for c in "abc"),
                    }
                    if found != expected:
                        raise SystemExit(f"{who} {temp} installed {sorted(found)}")
                shutil.rmtree(cache, ignore_errors=True)
    finally:
        server.stop()
    print(f"\ninstall of a plugin with 3 dependencies from a local index ({rounds} rounds, median)")
    for temp in ("cold", "warm"):
        ours = statistics.median(results[f"copycat {temp}"])
        bare = statistics.median(results[f"bare {temp}"])
        spread = ", ".join(f"{t:.2f}" for t in results[f"copycat {temp}"])
        print(
            f"  {temp:<5} copycat {ours:.2f} s ({spread})  bare uv {bare:.2f} s  "
            f"ratio {ours / bare:.2f}x  target < {3 if temp == 'cold' else 1} s"
        )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _time_until(proc: subprocess.Popen[bytes], check: Callable[[], bool]) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < READY_TIMEOUT_S:
        if proc.poll() is not None:
            raise SystemExit(f"process exited with {proc.returncode}")
        try:
            if check():
                return time.perf_counter() - start
        except httpx.HTTPError:
            pass
        time.sleep(PROBE_INTERVAL_S)
    raise SystemExit("not ready in time")


def _start_worker(
    work: Path, plugin_path: Path, bootstrap: str, env: dict[str, str]
) -> tuple[float, float, float]:
    """Seconds from spawn to: REST answering, /health healthy, bundled plugins listed."""
    port = _free_port()
    props = work / f"worker-{port}.properties"
    props.write_text(
        f"bootstrap.servers={bootstrap}\n"
        f"plugin.path={plugin_path}\n"
        f"offset.storage.file.filename={work / f'offsets-{port}'}\n"
        f"listeners=http://127.0.0.1:{port}\n"
        "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
        "value.converter=org.apache.kafka.connect.storage.StringConverter\n"
    )
    url = f"http://127.0.0.1:{port}"
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "core.cli", "--log-level", "WARNING", "standalone", str(props)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        answering = _time_until(proc, lambda: httpx.get(url + "/connectors").status_code == 200)
        healthy = _time_until(proc, lambda: httpx.get(url + "/health").status_code == 200)

        def bundled_listed() -> bool:
            plugins = httpx.get(url + "/connector-plugins?connectorsOnly=false").json()
            return all(
                any(p["class"].startswith(f"copycat_{m}.") for p in plugins)
                for m in ("file", "converters", "transforms", "avro")
            )

        _time_until(proc, bundled_listed)
        listed = time.perf_counter() - start
        return answering, answering + healthy, listed
    finally:
        proc.terminate()
        proc.wait(30)


def _bare_server(env: dict[str, str]) -> float:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", BARE_SERVER, str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        return _time_until(
            proc, lambda: httpx.get(f"http://127.0.0.1:{port}/connectors").status_code == 200
        )
    finally:
        proc.terminate()
        proc.wait(30)


def bench_startup(work: Path, rounds: int) -> None:
    plugin_path = work / "plugins-20"
    ensure_bundled_plugins(plugin_path)
    wheels = [source_plugin_wheel(work / "startup-wheels", f"start-{i}", "1.0") for i in range(16)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda w: install(str(w), plugin_path, offline=True), wheels))
    count = sum(1 for p in plugin_path.iterdir() if not p.name.startswith("."))
    if count != PLUGINS:
        raise SystemExit(f"expected {PLUGINS} plugin envs, found {count}")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with DevBroker() as broker:
        first = _start_worker(work, plugin_path, broker.bootstrap_servers, env)
        rows: dict[str, list[float]] = {"answers": [], "healthy": [], "bare": [], "empty": []}
        empty_listed: list[float] = []
        for r in range(rounds):
            answers, healthy, _ = _start_worker(work, plugin_path, broker.bootstrap_servers, env)
            rows["answers"].append(answers)
            rows["healthy"].append(healthy)
            rows["bare"].append(_bare_server(env))
            empty = work / f"empty-{r}"
            e_answers, e_healthy, e_listed = _start_worker(
                work, empty, broker.bootstrap_servers, env
            )
            rows["empty"].append(e_healthy)
            empty_listed.append(e_listed)
    print(f"\nworker start -> REST ready ({rounds} rounds, median; first start {first[1]:.2f} s)")
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(
        f"  {PLUGINS} plugins: GET /connectors answers {med['answers']:.2f} s, "
        f"/health healthy {med['healthy']:.2f} s "
        f"({', '.join(f'{t:.2f}' for t in rows['healthy'])})  target < 1 s"
    )
    print(
        f"  bare FastAPI+uvicorn process answering: {med['bare']:.2f} s "
        f"(copycat healthy / bare = {med['healthy'] / med['bare']:.2f}x)"
    )
    print(
        f"  empty plugin.path: /health healthy {med['empty']:.2f} s; bundled plugins listed "
        f"after {statistics.median(empty_listed):.2f} s (installed in the background)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=["install", "startup"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="copycat-market-bench-") as tmp:
        work = Path(tmp)
        if args.only in (None, "install"):
            bench_install(work, args.rounds)
        if args.only in (None, "startup"):
            bench_startup(work, args.rounds)


if __name__ == "__main__":
    main()
