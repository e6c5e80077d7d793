"""The README's first command, exactly as a new user runs it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_copies_the_sample_file_through_kafka() -> None:
    env = dict(os.environ, QUICKSTART_LINES="2000")
    proc = subprocess.run(
        ["./scripts/quickstart"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "copied 2000 lines" in proc.stdout
    out = ROOT / "var" / "quickstart" / "output.txt"
    assert out.read_text() == (ROOT / "var" / "quickstart" / "input.txt").read_text()
    assert "started the embedded dev broker" in (ROOT / "var/quickstart/worker.log").read_text()
