"""Which tasks may run their data path in their plugin host (core/runtime/hosted.py)."""

from __future__ import annotations

import importlib.metadata
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from core.runtime.hosted import cannot_share, runtime_root

KAFKA = importlib.metadata.version("confluent-kafka")


@dataclass
class Env:
    """What cannot_share reads of a PluginEnvironment."""

    location: Path
    modules: dict[str, str] = field(default_factory=dict)
    version: tuple[int, int] | None = tuple(sys.version_info[:2])  # type: ignore[assignment]
    attached: bool = False

    def top_level_modules(self) -> dict[str, str]:
        return self.modules

    def python_version(self) -> tuple[int, int] | None:
        return self.version


def test_a_plugin_of_its_own_modules_shares_the_host() -> None:
    env = Env(Path("/p/plain"), {"copycat_file": "copycat-file==0.1.0", "orjson": "orjson==3"})
    assert cannot_share([env]) is None


def test_the_same_confluent_kafka_as_the_runtime_is_shared() -> None:
    env = Env(Path("/p/same"), {"confluent_kafka": f"confluent_kafka=={KAFKA}"})
    assert cannot_share([env]) is None


def test_another_confluent_kafka_keeps_the_data_path_in_the_worker() -> None:
    env = Env(Path("/p/own-kafka"), {"confluent_kafka": "confluent-kafka==1.9.2"})
    reason = cannot_share([env])
    assert reason is not None
    assert "/p/own-kafka ships its own confluent_kafka (confluent-kafka==1.9.2)" in reason


def test_a_converters_environment_counts_too() -> None:
    task = Env(Path("/p/task"))
    converter = Env(Path("/p/conv"), {"core": "some-core-lib==2.0"}, attached=True)
    reason = cannot_share([task, converter])
    assert reason is not None and "/p/conv ships its own core" in reason


def test_another_python_keeps_the_data_path_in_the_worker() -> None:
    env = Env(Path("/p/py312"), version=(3, 99))
    reason = cannot_share([env])
    assert reason is not None and "runs Python 3.99" in reason
    # A zipapp or --target directory runs on the runtime's own interpreter.
    assert cannot_share([Env(Path("/p/zip"), version=None, attached=True)]) is None


def test_the_runtime_root_holds_exactly_the_shared_modules_and_kafkas_files(tmp_path: Path) -> None:
    names = {p.name for p in runtime_root().iterdir()}
    assert {"core", "isolation", "confluent_kafka"} <= names
    extras = names - {"core", "isolation", "confluent_kafka"}
    assert all(name.startswith("confluent_kafka") for name in extras), extras


def _runtime_roots_made_together(threads: int) -> tuple[list[Path], list[BaseException]]:
    start = threading.Barrier(threads)
    roots: list[Path] = []
    errors: list[BaseException] = []

    def make() -> None:
        start.wait()
        try:
            roots.append(runtime_root())
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            errors.append(exc)

    running = [threading.Thread(target=make) for _ in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()
    return roots, errors


def test_task_starts_in_parallel_on_a_new_installation_all_get_the_runtime_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A distributed worker starts its tasks in parallel, and the first starts after an
    install or upgrade of Copycat make the runtime root together: their temporary links
    were named by process only, so one thread renamed or removed another's and its task
    failed to start for good (``FileNotFoundError`` in ``os.replace``; a tester saw 1 task of
    18, and a direct repro 5 rounds in 30)."""
    for round_ in range(40):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / f"cache-{round_}"))
        roots, errors = _runtime_roots_made_together(8)
        assert errors == [], f"round {round_}: {errors[0]!r}"
        assert len(set(roots)) == 1
        assert not [p.name for p in roots[0].iterdir() if p.name.startswith(".")]
