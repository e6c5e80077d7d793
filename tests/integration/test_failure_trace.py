"""The status trace of a task whose plugin host crashed: the host's output once, bounded.

Real plugin host, real worker. The host's crash message already quotes its last output; the
status trace used to append the same 200-line tail again (89 KB for lines of ~450 chars).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core.offsets import MemoryOffsetStore
from core.plugins import PluginCatalogue
from core.status import MAX_TRACE_CHARS, State
from core.worker import Worker
from plugin_api import ConnectException
from registry import install
from tests.support.kafka import wait_for
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.integration

LINES, WIDTH = 200, 450  # the report: 200 lines of about 450 characters, 89 KB twice over

NOISY = f"""
import os, sys
from plugin_api import SourceConnector, SourceTask, ConfigDef

class NoisyTask(SourceTask):
    def start(self, props):
        pass
    def poll(self):
        for i in range({LINES}):
            print(f"noise {{i:04d}} " + "x" * {WIDTH}, file=sys.stderr)
        print("LAST WORDS before exit", file=sys.stderr, flush=True)
        os._exit(7)
    def stop(self):
        pass

class NoisySource(SourceConnector):
    def start(self, props):
        self.props = dict(props)
    def task_class(self):
        return NoisyTask
    def task_configs(self, n):
        return [self.props]
    def stop(self):
        pass
    def config(self):
        return ConfigDef()
"""


def test_crash_output_appears_once_in_a_bounded_trace(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path
) -> None:
    whl = build_wheel(
        tmp_path / "w",
        "noisy-source",
        "1.0",
        {"noisy_source.py": NOISY},
        entry_points={"copycat.connectors": {"NoisySource": "noisy_source:NoisySource"}},
    )
    install(str(whl), tmp_path / "pp", offline=True)
    worker = Worker(
        "w1",
        {"key.converter": "StringConverter", "value.converter": "StringConverter"},
        PluginCatalogue.scan([bundled_plugin_path, tmp_path / "pp"]),
        MemoryOffsetStore(),
        client_props={"bootstrap.servers": bootstrap_servers},
    )
    name = "noisy"
    worker.start_connector(name, {"name": name, "connector.class": "NoisySource", "topic": "t"})
    worker.start_task(name, 0, worker.task_configs(name)[0])
    try:
        wait_for(lambda: worker.status.task(name, 0).state is State.FAILED, 60, "task FAILED")
        trace = worker.status.task(name, 0).trace
    finally:
        worker.stop()
    assert trace is not None
    assert "exited with code 7 during poll" in trace
    assert trace.count("LAST WORDS before exit") == 1
    assert len(trace) <= MAX_TRACE_CHARS


FAILING = """
from plugin_api import ConnectException, SourceConnector, SourceTask, ConfigDef

class FailingTask(SourceTask):
    def start(self, props):
        pass
    def poll(self):
        raise ConnectException("poll failed")
    def stop(self):
        pass

class FailingSource(SourceConnector):
    def version(self):
        return "1.3"
    def start(self, props):
        if props.get("fail.start") == "true":
            raise ConnectException("start failed")
        self.props = dict(props)
    def task_class(self):
        return FailingTask
    def task_configs(self, n):
        return [self.props]
    def stop(self):
        pass
    def config(self):
        return ConfigDef()
"""


@pytest.fixture
def failing_worker(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path
) -> Iterator[Worker]:
    whl = build_wheel(
        tmp_path / "w",
        "failing-source",
        "1.3",
        {"failing_source.py": FAILING},
        entry_points={"copycat.connectors": {"FailingSource": "failing_source:FailingSource"}},
    )
    install(str(whl), tmp_path / "pp", offline=True)
    worker = Worker(
        "w1",
        {"key.converter": "StringConverter", "value.converter": "StringConverter"},
        PluginCatalogue.scan([bundled_plugin_path, tmp_path / "pp"]),
        MemoryOffsetStore(),
        client_props={"bootstrap.servers": bootstrap_servers},
    )
    try:
        yield worker
    finally:
        worker.stop()


def test_a_failed_task_names_its_version_and_kafkas_exception_first(
    failing_worker: Worker,
) -> None:
    """As Kafka (KIP-891): a FAILED task's status has the plugin's version, and its trace's
    first line is the plugin's exception, by Kafka's class name, and its message."""
    worker, name = failing_worker, "failing"
    worker.start_connector(name, {"name": name, "connector.class": "FailingSource"})
    worker.start_task(name, 0, worker.task_configs(name)[0])
    wait_for(lambda: worker.status.task(name, 0).state is State.FAILED, 60, "task FAILED")
    status = worker.status.task(name, 0)
    assert status.version == "1.3"
    assert status.trace is not None
    first = status.trace.splitlines()[0]
    assert first == "org.apache.kafka.connect.errors.ConnectException: poll failed", first
    assert f"Caused by (in plugin host {name}-0)" in status.trace


def test_a_connector_whose_start_failed_names_its_version(failing_worker: Worker) -> None:
    worker, name = failing_worker, "failing-start"
    with pytest.raises(ConnectException):
        worker.start_connector(
            name, {"name": name, "connector.class": "FailingSource", "fail.start": "true"}
        )
    status = worker.status.connector(name)
    assert status is not None and status.state is State.FAILED
    assert status.version == "1.3"
    assert status.trace is not None
    first = status.trace.splitlines()[0]
    assert first == "org.apache.kafka.connect.errors.ConnectException: start failed", first
