"""Source task shutdown on the real dev broker: prompt, and with every acked offset stored."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from core.offsets import MemoryOffsetStore
from core.plugins import PluginCatalogue
from core.worker import Worker

pytestmark = pytest.mark.integration


def test_stopping_a_source_stores_its_last_offset_without_waiting_out_the_timeout(
    bundled_plugin_path: Path, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    data = tmp_path / "in.txt"
    data.write_text("".join(f"line {i}\n" for i in range(1000)))
    worker = Worker(
        "w1", {"key.converter": "StringConverter", "value.converter": "StringConverter",
               "offset.flush.interval.ms": "600000",  # only the shutdown flush stores offsets
               "task.shutdown.graceful.timeout.ms": "60000"},
        PluginCatalogue.scan([bundled_plugin_path]), MemoryOffsetStore(),
        client_props={"bootstrap.servers": bootstrap_servers},
    )
    name = f"stop-{topic_name}"
    worker.start_connector(name, {"name": name, "connector.class": "FileStreamSource",
                                  "file": str(data), "topic": topic_name})
    worker.start_task(name, 0, worker.task_configs(name)[0])
    loop = worker.connectors[name].tasks[0].loop
    deadline = time.monotonic() + 30
    while loop.records_sent < 1000 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert loop.records_sent == 1000
    started = time.monotonic()
    worker.stop_connector(name)
    took = time.monotonic() - started
    assert worker.offsets.connector_offsets(name) == [
        ({"filename": str(data)}, {"position": data.stat().st_size})]
    # A graceful stop waits for outstanding acks, not for the whole graceful timeout.
    assert took < 30, f"stop took {took:.1f} s of a 60 s graceful timeout"
