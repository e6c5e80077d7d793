"""`copycat plugin new` prints a command that runs the new project's tests as printed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from core.cli import main as cli_main

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("kind", ["source", "transform"])
def test_the_printed_test_command_runs_the_generated_tests(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # copycat-plugin-api is not on PyPI: a bare `uv run --with pytest pytest` in the project
    # fails to resolve it, which is what this command used to print.
    assert (
        cli_main(
            ["plugin", "new", f"scaffolded-{kind}", "--kind", kind, "--directory", str(tmp_path)]
        )
        == 0
    )
    printed = capsys.readouterr().out
    command = printed.split("`")[1]
    done = subprocess.run(
        ["bash", "-c", f"{command} -q -p no:cacheprovider"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0 and " passed" in done.stdout, printed + done.stdout + done.stderr
