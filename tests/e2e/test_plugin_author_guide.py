"""docs/plugin-author-guide.md, run as written: every ``bash`` block, in order, in one shell,
with each block that names a ``file=`` written where the walkthrough is at that point.

This is the guide's own proof: the commands a plugin author copies work (building the plugin,
testing it with plugin_api from the checkout, installing it into a worker's plugin.path and
running it against the embedded dev broker).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "plugin-author-guide.md"
_FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_HEREDOC_END = "COPYCAT_GUIDE_END_OF_FILE"
# The counter's key in the standalone offsets file: the connector's name, its source partition.
_COUNTER_KEY = '["counter",{"counter":"main"}]'


def _script(markdown: str) -> str:
    """The walkthrough as one bash script: commands, and heredocs for the files."""
    lines = ["set -euo pipefail"]
    for language, info, body in _FENCE.findall(markdown):
        attributes = dict(item.split("=", 1) for item in info.split() if "=" in item)
        if "file" in attributes:
            path = attributes["file"]
            assert _HEREDOC_END not in body
            lines += [
                f"mkdir -p \"$(dirname '{path}')\"",
                f"cat > '{path}' <<'{_HEREDOC_END}'",
                body.rstrip("\n"),
                _HEREDOC_END,
            ]
        elif language == "bash":
            lines.append(body)
    return "\n".join(lines) + "\n"


def test_the_plugin_author_guide_runs_as_written(tmp_path: Path) -> None:
    script = _script(GUIDE.read_text())
    assert "copycat plugins --plugin-path plugins.d install" in script  # the guide was parsed
    uv = shutil.which("uv") or str(Path.home() / ".local/bin/uv")
    env = dict(
        os.environ,
        COPYCAT=str(ROOT),
        PATH=f"{Path(uv).parent}:{os.environ['PATH']}",
        # Not offline: what the guide installs (pytest, hatchling) comes from PyPI as for a
        # reader; uv's cache makes it fast where it is warm, but a cold CI machine has only
        # the locked wheels cached, not PyPI's index pages an offline resolve would need.
    )
    env.pop("VIRTUAL_ENV", None)
    proc = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    project = tmp_path / "throttled-counter"
    log = project / "worker.log"
    assert proc.returncode == 0, (
        proc.stdout[-3000:]
        + proc.stderr[-3000:]
        + (log.read_text()[-3000:] if log.exists() else "")
    )
    assert "4 passed" in proc.stdout  # the author's own tests, against plugin_api
    assert "CounterSource" in proc.stdout  # copycat plugins list
    # The first run's offsets file, as `cat connect.offsets` printed it.
    printed = proc.stdout[proc.stdout.index('{"version"') :]
    first, _ = json.JSONDecoder().raw_decode(printed)  # cat prints no newline after it
    resumed_at = first["offsets"][_COUNTER_KEY]["n"]
    numbers = [int(n) for n in (project / "counts.txt").read_text().splitlines()]
    assert len(numbers) >= 600
    # The first run wrote 0, 1, 2, ... in order; the second went on from the stored offset
    # (what the first sink had not written yet was in the first dev broker's memory).
    written_first = next((i for i, n in enumerate(numbers) if n != i), resumed_at)  # no gap
    assert 300 <= written_first <= resumed_at
    # The second run waited for 300 numbers of its own: a count reached before it started
    # would have had it killed while it started up.
    assert len(numbers) - written_first >= 300
    assert numbers[written_first:] == list(
        range(resumed_at, resumed_at + len(numbers) - written_first)
    )
    final = json.loads((project / "connect.offsets").read_text())["offsets"][_COUNTER_KEY]
    assert final["n"] > numbers[-1]
    assert " ERROR " not in log.read_text()
