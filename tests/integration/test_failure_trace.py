"""The status trace of a task whose plugin host crashed: the host's output once, bounded.

Real plugin host, real worker. The host's crash message already quotes its last output; the
status trace used to append the same 200-line tail again (89 KB for lines of ~450 chars).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.offsets import MemoryOffsetStore
from core.plugins import PluginCatalogue
from core.status import MAX_TRACE_CHARS, State
from core.worker import Worker
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
