"""The driver's plugin shipping staging directories (``core.spark.shipping``): a worker killed
with ``kill -9`` cannot remove its own, so the next worker to start removes those whose owner
process is gone, and never one whose owner still runs.

Real processes stand for the workers (a Shipper makes its staging directory without asking
Spark anything; the SparkContext it is given is used only to ship).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from core.spark.shipping import Shipper
from tests.support.kafka import wait_for

STAGING_PREFIX = "copycat-spark-ship-"

# A "worker": makes its Shipper (in its temp directory), stages an archive, says where, waits.
_WORKER = """
from core.spark.shipping import Shipper
import sys
shipper = Shipper(None)
(shipper._staging / "copycat-env-0123abcd.tar.gz").write_bytes(b"x" * 180_000)
print(shipper._staging, flush=True)
sys.stdin.read()
"""


def _start_worker(root: Path) -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _WORKER],
        env={**os.environ, "TMPDIR": str(root)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


def test_a_start_removes_the_staging_directory_of_a_worker_killed_9_and_keeps_live_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # this process's Shipper too
    killed, killed_dir = _start_worker(tmp_path)
    running, running_dir = _start_worker(tmp_path)
    legacy = tmp_path / f"{STAGING_PREFIX}legacy"  # staged by a Copycat that wrote no owner
    legacy.mkdir()
    try:
        assert killed_dir.parent == tmp_path and killed_dir.name.startswith(STAGING_PREFIX)
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait(10)
        # Nothing of the killed worker ran to clean up after it.
        assert (killed_dir / "copycat-env-0123abcd.tar.gz").exists()

        shipper = Shipper(None)  # the next worker starts
        try:
            assert not killed_dir.exists(), "the killed worker's archives are still staged"
            assert (running_dir / "copycat-env-0123abcd.tar.gz").exists(), "a live one's went"
            assert legacy.exists()
            assert shipper._staging.exists()
        finally:
            shutil.rmtree(shipper._staging)

        # A worker that stops in order removes its own directory.
        assert running.stdin is not None
        running.stdin.close()
        running.wait(10)
        wait_for(lambda: not running_dir.exists(), 10, "the stopped worker's directory gone")
    finally:
        for proc in (killed, running):
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
