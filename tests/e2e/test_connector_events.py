"""ConnectorContext works: a connector changes its task set, or fails, from its own threads.

Before, ``request_task_reconfiguration()`` and ``raise_error()`` queued events in the plugin
host that the worker never collected: a connector that discovered new files could never grow
its task set, and a background failure never marked it FAILED.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from registry import install
from tests.support.processes import wait_until
from tests.support.rest import RestWorker
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.integration

PLUGIN = r'''
import os, threading, time
from plugin_api import ConfigDef, ConnectException, SourceConnector, SourceTask


class FileTask(SourceTask):
    def version(self):
        return "1.0"

    def start(self, props):
        self.props = props

    def poll(self):
        time.sleep(0.05)
        return []

    def stop(self):
        pass


class DirectorySource(SourceConnector):
    """One task per file in ``directory``; asks for reconfiguration when the files change."""

    def version(self):
        return "1.0"

    def start(self, props):
        self.directory = props["directory"]
        self.files = self._list()
        self.running = True
        threading.Thread(target=self._watch, daemon=True).start()

    def _list(self):
        return sorted(os.listdir(self.directory))

    def _watch(self):
        while self.running:
            time.sleep(0.1)
            files = self._list()
            if files != self.files:
                self.files = files
                self.context.request_task_reconfiguration()

    def task_class(self):
        return FileTask

    def task_configs(self, max_tasks):
        return [{"file": name} for name in self._list()[:max_tasks]] or [{"file": ""}]

    def stop(self):
        self.running = False

    def config(self):
        return ConfigDef()


class FailingLaterSource(SourceConnector):
    """Starts fine, then fails on a background thread."""

    def version(self):
        return "1.0"

    def start(self, props):
        def fail():
            time.sleep(0.3)
            self.context.raise_error(ConnectException("background failure: lost the lease"))

        threading.Thread(target=fail, daemon=True).start()

    def task_class(self):
        return FileTask

    def task_configs(self, max_tasks):
        return [{}]

    def stop(self):
        pass

    def config(self):
        return ConfigDef()
'''


@pytest.fixture(scope="module")
def worker(
    tmp_path_factory: pytest.TempPathFactory, bootstrap_servers: str, bundled_plugin_path: Path
) -> Iterator[RestWorker]:
    tmp = tmp_path_factory.mktemp("events")
    wheel = build_wheel(
        tmp / "wheel",
        "events-plugin",
        "1.0",
        {"events_plugin.py": PLUGIN},
        entry_points={
            "copycat.connectors": {
                "DirectorySource": "events_plugin:DirectorySource",
                "FailingLaterSource": "events_plugin:FailingLaterSource",
            }
        },
    )
    install(str(wheel), tmp / "plugins", offline=True)
    extra = {"plugin.path": f"{bundled_plugin_path},{tmp / 'plugins'}"}
    with RestWorker(tmp, bootstrap_servers, bundled_plugin_path, extra) as w:
        yield w


def test_a_connector_grows_its_task_set_when_files_appear(
    worker: RestWorker, tmp_path: Path
) -> None:
    watched = tmp_path / "watched"
    watched.mkdir()
    (watched / "a.csv").write_text("1\n")
    http = worker.client()
    config = {"connector.class": "DirectorySource", "directory": str(watched), "tasks.max": "5"}
    assert http.post("/connectors", json={"name": "dir", "config": config}).status_code == 201
    wait_until(
        lambda: (
            [t["state"] for t in http.get("/connectors/dir/status").json()["tasks"]] == ["RUNNING"]
        ),
        30,
        "one task",
    )
    (watched / "b.csv").write_text("2\n")
    (watched / "c.csv").write_text("3\n")
    started = time.monotonic()
    # No REST call changes anything here: only the connector's own request.
    status = wait_until(
        lambda: (
            (s := http.get("/connectors/dir/status").json())
            and [t["state"] for t in s["tasks"]] == ["RUNNING"] * 3
            and s
        ),
        30,
        "three running tasks",
    )
    assert time.monotonic() - started < 10
    tasks = http.get("/connectors/dir/tasks").json()
    assert [t["config"]["file"] for t in tasks] == ["a.csv", "b.csv", "c.csv"]
    assert status["connector"]["state"] == "RUNNING"
    http.delete("/connectors/dir")


def test_unchanged_task_configs_do_not_restart_tasks(worker: RestWorker, tmp_path: Path) -> None:
    watched = tmp_path / "watched"
    watched.mkdir()
    (watched / "a.csv").write_text("1\n")
    http = worker.client()
    config = {"connector.class": "DirectorySource", "directory": str(watched), "tasks.max": "1"}
    http.post("/connectors", json={"name": "same", "config": config})
    wait_until(
        lambda: (
            [t["state"] for t in http.get("/connectors/same/status").json()["tasks"]] == ["RUNNING"]
        ),
        30,
        "one task",
    )
    (watched / "b.csv").write_text("2\n")  # tasks.max=1: the one task's config is unchanged
    wait_until(
        lambda: any("connector same: task configs unchanged" in line for line in worker.log_lines),
        30,
        "the reconfiguration to be considered",
    )
    assert not any("connector same: task configs changed" in line for line in worker.log_lines)
    http.delete("/connectors/same")


def test_raise_error_from_a_background_thread_fails_the_connector(worker: RestWorker) -> None:
    http = worker.client()
    config = {"connector.class": "FailingLaterSource"}
    assert http.post("/connectors", json={"name": "failing", "config": config}).status_code == 201
    status = wait_until(
        lambda: (
            (s := http.get("/connectors/failing/status").json())["connector"]["state"] == "FAILED"
            and s
        ),
        30,
        "the connector to fail",
    )
    assert "background failure: lost the lease" in status["connector"]["trace"]
    http.delete("/connectors/failing")
