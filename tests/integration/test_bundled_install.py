"""Several Copycat processes started together on one plugin.path that lacks the bundled
plugins (a rolling upgrade, or a group started at once after an upgrade): each installs the
missing ones on its background thread, and none may log a failure because another got there
first.

The bug: every worker but the fastest logged ``ERROR copycat.bundled: installing the bundled
plugins into [...] failed: copycat-file 0.1.6 is already installed at ...; remove it first or
replace it (install with --replace)`` and never "installed the bundled plugins", though all
ended up installed. Real processes, real uv installs, real probes in plugin hosts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.bundled import BUNDLED_DIR_ENV, WHEELHOUSE_ENV, bundled_wheelhouse, project_version
from registry.installer import find
from tests.support.processes import ROOT, wait_until

pytestmark = pytest.mark.integration

PROCESSES = 3
# What each process runs: the worker's own start-up call, once every process is ready.
CHILD = """
import logging, sys, time
from pathlib import Path
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
from core.bundled import install_bundled_in_background
go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.005)
thread = install_bundled_in_background([Path(sys.argv[1])])
if thread is not None:
    thread.join()
print("done", flush=True)
"""


def test_processes_started_together_each_install_the_bundled_plugins_without_an_error(
    tmp_path: Path,
) -> None:
    # Two of the bundled plugins (fewer installs on a busy machine), from a warm wheelhouse.
    bundled = tmp_path / "bundled"
    bundled.mkdir()
    for name in ("file", "transforms"):
        (bundled / name).symlink_to(ROOT / "plugins" / name)
    projects = sorted(bundled.iterdir())
    wheelhouse = bundled_wheelhouse(projects)
    plugin_path = tmp_path / "plugins"
    plugin_path.mkdir()
    go = tmp_path / "go"
    env = {**os.environ, BUNDLED_DIR_ENV: str(bundled), WHEELHOUSE_ENV: str(wheelhouse)}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(plugin_path), str(go)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    try:
        go.touch()
        outputs = [child.communicate(timeout=300)[0] for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    for output in outputs:
        assert "ERROR" not in output and "Traceback" not in output, output
        assert "installed the bundled plugins" in output and output.endswith("done\n"), output
    # Each installed once (by one process; the others waited and found it), nothing left
    # half-built.
    for project in projects:
        name, version = project_version(project)
        installing = f"installing bundled plugin {name} {version}"
        assert sum(installing in output for output in outputs) == 1, outputs
        assert len(find([plugin_path], f"{name}=={version}")) == 1, name
    wait_until(
        lambda: (
            sorted(p.name for p in plugin_path.iterdir() if not p.name.startswith("."))
            == sorted(f"{n}-{v}" for n, v in map(project_version, projects))
        ),
        10,
        "only the installed envs in plugin.path",
    )
