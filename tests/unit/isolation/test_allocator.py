"""Allocator settings: applied to hosts and the worker unless the operator chose their own."""

from __future__ import annotations

import subprocess
import sys

import pytest

from isolation import allocator

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc settings")


def test_children_get_the_settings_unless_the_operator_set_any() -> None:
    added = allocator.child_environment({"PATH": "/bin"})
    assert added == {
        "MALLOC_TRIM_THRESHOLD_": str(64 << 20),
        "MALLOC_TOP_PAD_": str(16 << 20),
        "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
    }
    assert allocator.child_environment({"MALLOC_TOP_PAD_": "0"}) == {}


def test_a_plugin_host_starts_with_them(monkeypatch: pytest.MonkeyPatch) -> None:
    from isolation.host import PluginHost

    for name in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_THRESHOLD_"):
        monkeypatch.delenv(name, raising=False)
    host = PluginHost(sys.executable, name="alloc-test", isolated_site=True)
    host.start()
    try:
        environ = open(f"/proc/{host.pid}/environ", "rb").read().split(b"\0")
    finally:
        host.close()
    assert b"MALLOC_TRIM_THRESHOLD_=67108864" in environ


def test_the_operators_choice_wins_in_this_process() -> None:
    code = (
        "from isolation import allocator; import sys; "
        "sys.exit(0 if allocator.tune_this_process() is False else 3)"
    )
    env = {"MALLOC_TRIM_THRESHOLD_": "131072", "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=".", check=False)
    assert result.returncode == 0
    tuned = subprocess.run(
        [sys.executable, "-c", code.replace("is False else 3", "else 3")],
        env={"PATH": "/usr/bin:/bin"},
        cwd=".",
        check=False,
    )
    assert tuned.returncode == 0


def test_the_young_gc_threshold_is_raised_in_a_worker_and_its_plugin_hosts() -> None:
    from isolation.host import PluginHost

    code = (
        "import gc; gc.set_threshold(700, 10, 10); from isolation import allocator; "
        "allocator.tune_gc(); print(gc.get_threshold())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=".", check=True, capture_output=True, text=True
    ).stdout
    assert out.strip() == f"({allocator.GC_YOUNG_THRESHOLD}, 10, 10)"
    # Disabled (0) or already higher: left alone.
    code = (
        "import gc; gc.set_threshold(0); from isolation import allocator; "
        "allocator.tune_gc(); print(gc.get_threshold()[0])"
    )
    assert (
        subprocess.run(
            [sys.executable, "-c", code], cwd=".", check=True, capture_output=True, text=True
        ).stdout.strip()
        == "0"
    )

    host = PluginHost(sys.executable, name="gc-test", isolated_site=True)
    host.start()
    try:
        assert host.request("eval", "gc:get_threshold")[0] == allocator.GC_YOUNG_THRESHOLD
    finally:
        host.close()
