"""What a plugin host's serve loop spends per request around the request itself.

Run from the repository root:

    uv run python bench/host_serve_costs.py [path/to/another/copycat_host.py]

The serve loop (``_PipeTransport.serve`` in isolation/_hostside/copycat_host.py) reads a
request, dispatches it and writes the answer; since hosted sink tasks leave their consumer
group when their worker goes quiet (docs/architecture.md, "A frozen worker's tasks"), it also
asks the objects that want to know of a quiet worker how long to wait, and waits for the next
request with that deadline. This runs the real loop of a real ``Host`` in this process, one
thread, no worker: the requests are read from a file holding ``REQUESTS`` framed requests of
the cheapest operation (``drop`` of an unknown object) and the answers are written to
/dev/null, so what is measured is the loop's own cost per request plus a read and a write
syscall, not a pipe's wake-ups (a real request also waits for the worker; see
bench/isolation_bench.py). Two hosts: none of whose objects watches (connector hosts, source
tasks, sinks with the data path in the worker), and one with one watcher (a hosted sink task
whose loop runs). CPU time of the serving thread (a loaded machine's preemptions do not
count), best of ``REPEATS`` runs, alternating. Pass the path of another copy of
copycat_host.py (e.g. ``git show 71af612:isolation/_hostside/copycat_host.py > /tmp/old.py``)
to measure that one instead, or several paths to compare them in one run.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from isolation.host import HOSTSIDE_DIR  # noqa: E402

sys.path.insert(0, str(HOSTSIDE_DIR))  # the host-side modules, as a plugin host sees them
import copycat_wire as wire  # noqa: E402

REQUESTS = 20_000
REPEATS = 15


class _Watcher:
    """Asks to hear of a worker quiet for 45 s (a hosted sink task's default session)."""

    def _copycat_quiet_after(self) -> float | None:
        return 45.0

    def _copycat_on_quiet(self, silent_s: float) -> None:
        raise AssertionError("the worker went quiet during the benchmark")


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_copycat_host", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _requests_file(directory: str) -> str:
    path = os.path.join(directory, "requests")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for _ in range(REQUESTS):
            wire.write_message(fd, ("req", "drop", (999_999,)))
    finally:
        os.close(fd)
    return path


def _run_ns(module: ModuleType, requests: str, watched: bool) -> float:
    """Per request: serve() over every request of the file, until its end."""
    in_fd = os.open(requests, os.O_RDONLY)
    out_fd = os.open(os.devnull, os.O_WRONLY)
    try:
        transport = module._PipeTransport(in_fd, out_fd, -1, None, None)
        host = module.Host(transport.callback, transport.emit)
        if watched:
            host.quiet_watchers[1] = _Watcher()
        began = time.thread_time()
        transport.serve(host)
        return (time.thread_time() - began) / REQUESTS * 1e9
    finally:
        os.close(in_fd)
        os.close(out_fd)


def main() -> None:
    paths = [Path(arg) for arg in sys.argv[1:]] or [HOSTSIDE_DIR / "copycat_host.py"]
    modules = [_load(path) for path in paths]
    cases = [
        (i, watched)
        for i, module in enumerate(modules)
        for watched in ((False, True) if hasattr(module, "QUIET_AFTER") else (False,))
    ]
    best: dict[tuple[int, bool], float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        requests = _requests_file(tmp)
        for _ in range(REPEATS):
            for i, watched in cases:  # alternating: a loaded machine slows them alike
                ns = _run_ns(modules[i], requests, watched)
                best[i, watched] = min(best.get((i, watched), ns), ns)
    print(f"ns per request, best of {REPEATS} x {REQUESTS:,}: no quiet watcher / one watcher")
    for i, path in enumerate(paths):
        alone = best[i, False]
        watched_ns = best.get((i, True))
        extra = (
            "(no quiet watchers)"
            if watched_ns is None
            else f"{watched_ns:6.0f} (+{watched_ns - alone:.0f})"
        )
        print(f"  {path}: {alone:6.0f} / {extra}")


if __name__ == "__main__":
    main()
