"""A plugin host imports at start only what every host needs; the rest when first used.

Every connector and every task has a host of its own, and a host's start (~0.1-0.2 s of CPU)
is mostly its runtime's imports (docs/benchmarks.md, bench/host_start_costs.py). What only
some hosts need -- attaching a plugin location (importlib.metadata, pathlib), a task's data
path (copycat_pipeline and its modules), a retry's jitter (random), locating a plugin's
failure (sysconfig), a log record (json) -- is imported by the code that needs it. These tests
start a real host the way the worker does and ask it, over its pipes, what it has imported:
an eager import creeping back fails the first test, and the others show each deferred import
still happens, and works, when its feature is used.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from isolation.client import HostClient
from isolation.host import PluginHost
from tests.support.processes import wait_until

# Imported by the host when first needed, never at start (name -> what needs it).
DEFERRED = {
    "importlib.metadata": "attaching a plugin location (its distributions' top-level names)",
    "importlib.abc": "nothing: the location finder is a plain meta path finder",
    "importlib.resources": "nothing (importlib.abc imported it)",
    "email": "nothing (importlib.metadata imported it)",
    "pathlib": "attaching a plugin location without metadata (its listing)",
    "zipfile": "attaching a zipapp location",
    "sysconfig": "raised_at(): where in plugin code a failure was raised",
    "random": "retry_backoff_s(): a retry's jitter",
    "json": "the first log record of plugin code",
    "copycat_pipeline": "a task's start",
    "copycat_transactions": "a task's start",
    "copycat_batch": "a task's start",
    "copycat_sink_columns": "a task's start",
}

PLUGIN = """
import logging

from plugin_api import SourceRecord, SourceTask


def log_something():
    logging.getLogger("start_imports_plugin").warning("a warning from the plugin")


class OneRecordTask(SourceTask):
    def version(self):
        return "1.0"

    def start(self, props):
        self.sent = False

    def poll(self):
        if self.sent:
            return None
        self.sent = True
        return [SourceRecord({"p": 0}, {"o": 1}, "topic", value=b"v")]

    def stop(self):
        pass
"""

BROKEN = "import os\nraise ValueError('broken at import')\n"


def _imported(client: HostClient, module: str) -> bool:
    return bool(client.eval("sys:modules.__contains__", module))


@pytest.fixture
def host(tmp_path: Path) -> Iterator[HostClient]:
    """A host started as the worker starts one (the launcher, the bootstrap, -I), ready."""
    channel = PluginHost(sys.executable, name="start-imports", isolated_site=True)
    client = HostClient(channel)
    channel.start()
    try:
        yield client
    finally:
        client.close()


def test_a_ready_host_has_not_imported_what_only_some_hosts_need(host: HostClient) -> None:
    # The check itself must be able to see an import: these are needed by every host.
    for needed in ("copycat_host", "copycat_loader", "copycat_errors", "plugin_api", "logging"):
        assert _imported(host, needed), needed
    eager = {name: why for name, why in DEFERRED.items() if _imported(host, name)}
    assert eager == {}, f"imported at start, though needed only later: {eager}"


def test_each_deferred_import_happens_when_its_feature_is_used(
    host: HostClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    location = tmp_path / "location"
    location.mkdir()
    (location / "start_imports_plugin.py").write_text(PLUGIN)
    (location / "start_imports_broken.py").write_text(BROKEN)

    # Attaching a location (no metadata: found by listing it) makes its modules importable.
    assert host.attach(str(location)) == ["start_imports_broken", "start_imports_plugin"]
    assert _imported(host, "importlib.metadata") and _imported(host, "pathlib")

    # A task's start imports its data path, and the task runs.
    handle = host.next_handle()
    started = host.start_source_task(handle, "start_imports_plugin:OneRecordTask", {}, {})
    assert started.version == "1.0"
    for module in ("copycat_pipeline", "copycat_transactions", "copycat_batch"):
        assert _imported(host, module), module
    assert host.poll(handle).offsets == [({"p": 0}, {"o": 1})]
    host.stop_task(handle)

    # Plugin code's log record reaches the worker under its own logger (the host writes it
    # as a marked JSON line), importing json in the host then.
    assert not _imported(host, "json")
    with caplog.at_level(logging.WARNING, logger="start_imports_plugin"):
        host.eval("start_imports_plugin:log_something")
        wait_until(
            lambda: [r for r in caplog.records if r.name == "start_imports_plugin"],
            10,
            "the plugin's log record in the worker",
        )
    assert _imported(host, "json")

    # A plugin that fails at import is still reported where it failed (sysconfig tells the
    # standard library's frames from the plugin's).
    [failed] = host.describe(["start_imports_broken:Nothing"])
    assert failed["error"] == (
        "importing start_imports_broken:Nothing raised ValueError: broken at import "
        f"(at {location}/start_imports_broken.py:2)"
    )
    assert _imported(host, "sysconfig")

    # A retry's backoff (jitter included) still works.
    delay = host.eval("copycat_errors:retry_backoff_s", 1, 1000)
    assert 0.3 <= delay <= 0.33
    assert _imported(host, "random")


def test_a_zipapp_location_attaches_with_zipfile_imported_then(
    host: HostClient, tmp_path: Path
) -> None:
    import zipfile

    archive = tmp_path / "plugin.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("start_imports_zipped.py", "def answer():\n    return 42\n")
    assert not _imported(host, "zipfile")
    assert host.attach(str(archive)) == ["start_imports_zipped"]
    assert host.eval("start_imports_zipped:answer") == 42
    assert _imported(host, "zipfile")
