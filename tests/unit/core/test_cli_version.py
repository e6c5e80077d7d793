"""``copycat --version``."""

from __future__ import annotations

from importlib import metadata

import pytest

from core.cli import main


def test_version_prints_runtime_and_plugin_api_versions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    expected = (
        f"copycat {metadata.version('copycat')} "
        f"(plugin_api {metadata.version('copycat-plugin-api')})"
    )
    assert capsys.readouterr().out.strip() == expected
