"""What a worker holds after connectors come and go: nothing, and without waiting for Python's
garbage collector (whose full collections are rare in a worker, see isolation/allocator.py).

Found by a churn soak (create/restart/delete a few times a minute): every finished plugin host
left the read end of its output pipe open in the worker until a full collection, ~21 fds a
minute, because a connector's host sits in a reference cycle (the host -> its on_exit closure
-> the worker's holder of its client -> the host).

A later soak (two distributed workers, 4 connectors created, paused, resumed, restarted,
reconfigured and deleted a cycle, 40 cycles) found fds, threads and plugin hosts flat, and one
thing growing by a connector's worth every time: the logger of its host's output
(``copycat.plugin.<name>``), which ``logging`` keeps for good once made.
"""

from __future__ import annotations

import gc
import logging
import os
import weakref
from pathlib import Path

import pytest

from core.plugins import PluginCatalogue
from tests.support.processes import wait_until
from tests.support.workers import in_process_worker, start_connector

pytestmark = pytest.mark.integration

CHURN_CYCLES = 5


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_connectors_started_and_deleted_leave_no_fds_for_the_garbage_collector(
    bundled_plugin_path: Path, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    data = tmp_path / "in.txt"
    data.write_text("a line\n")
    worker = in_process_worker(PluginCatalogue.scan([bundled_plugin_path]), bootstrap_servers)
    props = {"connector.class": "FileStreamSource", "file": str(data), "topic": topic_name}

    hosts: list[weakref.ref[object]] = []

    def cycle(i: int) -> None:
        name = f"churn-{i}"
        start_connector(worker, name, props)
        host = worker.connectors[name].host
        assert host is not None
        hosts.append(weakref.ref(host.channel))
        worker.stop_connector(name)

    gc.collect()
    gc.disable()
    try:
        cycle(0)  # threads and clients made once per worker are not churn
        baseline = _open_fds()
        for i in range(1, CHURN_CYCLES + 1):
            cycle(i)
        # Each cycle ended a connector host and a task host: 2 fds a cycle when they leaked.
        wait_until(
            lambda: _open_fds() <= baseline,
            10,
            f"the worker's {baseline} fds after {CHURN_CYCLES} connectors came and went "
            f"({_open_fds()} open when the wait began)",
        )
        # Nothing of a stopped connector's host waits for a collection either (its output's
        # tail alone may be 800 KB).
        assert [ref for ref in hosts if ref() is not None] == []
    finally:
        gc.enable()
        worker.stop()


def test_connectors_that_came_and_went_leave_no_loggers_behind(
    bundled_plugin_path: Path, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    data = tmp_path / "in.txt"
    data.write_text("a line\n")
    worker = in_process_worker(PluginCatalogue.scan([bundled_plugin_path]), bootstrap_servers)
    props = {"connector.class": "FileStreamSource", "file": str(data), "topic": topic_name}
    prefix = f"copycat.plugin.{topic_name}-"
    try:
        for i in range(CHURN_CYCLES):
            start_connector(worker, f"{topic_name}-{i}", props)
            worker.stop_connector(f"{topic_name}-{i}")
    finally:
        worker.stop()
    # A connector's host and its task's host each relayed output under such a name: a logger
    # for each, kept by the logging module for as long as the worker runs, when they leaked.
    kept = sorted(n for n in logging.Logger.manager.loggerDict if n.startswith(prefix))
    assert kept == []
