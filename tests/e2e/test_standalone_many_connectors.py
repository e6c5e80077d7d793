"""`copycat standalone worker.properties c1.properties ... cN.properties` with many files.

Kafka's ConnectStandalone creates the connectors of its command line one after another, each
in milliseconds (a connector is a thread in its JVM). Here each start spawns the connector's
plugin host and its tasks' (an interpreter and the plugin's imports each, ~0.3 s of CPU), so
one after another 60 files took over a minute until all ran; they now start a few at a time
(core.standalone.STARTUP_CONCURRENCY). What Kafka shows is kept: every file is validated
before anything starts, every connector is listed and runs, and a signal during the start
stops the worker cleanly.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from tests.support.processes import CliWorker, host_pids, wait_until

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PAIRS = 10  # FileStreamSource -> topic -> FileStreamSink pairs: 20 connector files

_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*?"
    r"(?:creating connector (\S+) of type|connector (\S+) started \()"
)


def _worker_props(tmp: Path, bootstrap: str, plugin_path: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "offset.storage.file.filename": str(tmp / "connect.offsets"),
        "plugin.path": plugin_path,
        "listeners": "http://127.0.0.1:0",
    }


def _pipelines(tmp: Path, topic: str) -> list[dict[str, str]]:
    connectors = []
    for i in range(PAIRS):
        source = tmp / f"in-{i}.txt"
        source.write_text(f"{i}-a\n{i}-b\n")
        connectors.append(
            {
                "name": f"src-{i}",
                "connector.class": "FileStreamSource",
                "file": str(source),
                "topic": f"{topic}-{i}",
                "tasks.max": "1",
            }
        )
        connectors.append(
            {
                "name": f"sink-{i}",
                "connector.class": "FileStreamSink",
                "file": str(tmp / f"out-{i}.txt"),
                "topics": f"{topic}-{i}",
                "tasks.max": "1",
            }
        )
    return connectors


def _start_intervals(log: str) -> dict[str, tuple[datetime, datetime]]:
    """Each connector's start, from its "creating connector" to its "started" line."""
    began: dict[str, datetime] = {}
    ended: dict[str, datetime] = {}
    for line in log.splitlines():
        found = _LINE.match(line)
        if found is None:
            continue
        at = datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f")
        if found.group(2):
            began[found.group(2)] = at
        else:
            ended[found.group(3)] = at
    return {name: (began[name], ended[name]) for name in ended if name in began}


def _most_at_once(intervals: dict[str, tuple[datetime, datetime]]) -> int:
    """How many of these starts were in progress at one moment, at most."""
    events = sorted(
        [(b, 1) for b, _ in intervals.values()] + [(e, -1) for _, e in intervals.values()],
        key=lambda event: (event[0], event[1]),  # an end before a begin at the same instant
    )
    most = current = 0
    for _, step in events:
        current += step
        most = max(most, current)
    return most


def test_many_connector_files_start_together_and_all_run(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path, topic_name: str
) -> None:
    connectors = _pipelines(tmp_path, topic_name)
    worker = CliWorker(
        tmp_path, _worker_props(tmp_path, bootstrap_servers, str(bundled_plugin_path)), connectors
    )
    worker.spawn().wait_listening(120)
    try:

        def all_running() -> bool:
            answer = httpx.get(worker.url + "/connectors?expand=status", timeout=10).json()
            return len(answer) == len(connectors) and all(
                entry["status"]["connector"]["state"] == "RUNNING"
                and [t["state"] for t in entry["status"]["tasks"]] == ["RUNNING"]
                for entry in answer.values()
            )

        wait_until(all_running, 240, f"{len(connectors)} connectors and their tasks RUNNING")
        outputs = [tmp_path / f"out-{i}.txt" for i in range(PAIRS)]

        def all_written() -> bool:
            return all(o.exists() and len(o.read_text().splitlines()) == 2 for o in outputs)

        wait_until(all_written, 120, "both lines in every sink's file")
        assert sorted(httpx.get(worker.url + "/connectors", timeout=10).json()) == sorted(
            c["name"] for c in connectors
        )
    finally:
        worker.close()
    intervals = _start_intervals(worker.text())
    assert len(intervals) == len(connectors), worker.text()[-3000:]
    # One after another, no start began before the previous one had ended.
    spans = {n: f"{b:%S.%f}-{e:%S.%f}" for n, (b, e) in sorted(intervals.items())}
    assert _most_at_once(intervals) >= 2, f"the starts ran one at a time: {spans}"
    assert "Traceback" not in worker.text()


def test_invalid_files_among_many_start_nothing_and_are_each_named(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path, topic_name: str
) -> None:
    """Every file is validated before any connector starts: invalid ones anywhere in the
    command line mean nothing starts, and each is named with what is wrong in it."""
    connectors = _pipelines(tmp_path, topic_name)
    del connectors[5]["topics"]  # a sink, from the middle
    connectors[-1]["connector.class"] = "com.example.NoSuchConnector"  # the last file
    worker = CliWorker(
        tmp_path, _worker_props(tmp_path, bootstrap_servers, str(bundled_plugin_path)), connectors
    )
    proc = subprocess.run(
        [sys.executable, "-m", "core.cli", "standalone", str(worker.config)]
        + [str(p) for p in worker.connector_files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    bad = {worker.connector_files[5], worker.connector_files[-1]}
    lines = [line for line in proc.stderr.splitlines() if line.strip().startswith(str(tmp_path))]
    assert {line.strip().split(":", 1)[0] for line in lines} == {str(p) for p in bad}, proc.stderr
    assert any("Must configure one of topics or topics.regex" in line for line in lines)
    assert any("com.example.NoSuchConnector" in line for line in lines)
    assert "creating connector" not in proc.stderr
    assert not (tmp_path / "connect.offsets").exists()
    assert "Traceback" not in proc.stderr


def test_a_signal_while_many_connectors_start_stops_the_worker_cleanly(
    tmp_path: Path,
    bootstrap_servers: str,
    faulty_plugin_dirs: list[Path],
    topic_name: str,
) -> None:
    """SIGTERM while the connector files are still starting (each start() takes a while):
    the connectors not begun are not started, those started are stopped, no plugin host is
    left, and the worker exits 0."""
    slow = 1_500
    connectors = [
        {
            "name": f"slow-{i}-{topic_name}",
            "connector.class": "FaultySource",
            "topic": topic_name,
            "tasks.max": "1",
            "connector.start.ms": str(slow),
        }
        for i in range(12)
    ]
    plugin_path = ",".join(str(p) for p in faulty_plugin_dirs)
    props = _worker_props(tmp_path, bootstrap_servers, plugin_path)
    worker = CliWorker(tmp_path, props, connectors)
    worker.spawn().wait_listening(120)
    try:
        wait_until(
            lambda: "connector slow-" in worker.text() and " started (" in worker.text(),
            120,
            "the first connector started",
        )
        sent = time.monotonic()
        worker.signal_group(signal.SIGTERM)
        code = worker.wait(60)
        took = time.monotonic() - sent
    finally:
        worker.close()
    assert code == 0, worker.text()[-3000:]
    text = worker.text()
    assert "Traceback" not in text
    began = set(re.findall(r"creating connector (slow-\d+-\S+) of type", text))
    assert 0 < len(began) < len(connectors), "a signal after every start had begun proves little"
    assert not host_pids("slow-"), host_pids("slow-")
    # The starts in progress end (each start() takes 1.5 s), then everything stops.
    assert took < 30, took


def test_a_connector_host_killed_by_the_stop_signal_as_it_starts_is_no_failure(
    tmp_path: Path,
    bootstrap_servers: str,
    faulty_plugin_dirs: list[Path],
    topic_name: str,
) -> None:
    """A stop signal to the worker's process group can reach a connector's plugin host still
    being spawned, before it has a session of its own: a CI run's clean shutdown logged
    ``Failed to start connector ...`` and a trace (``PluginHostCrashed: plugin host for ...
    killed by SIGTERM (signal 15) during hello``). Here the host sends itself SIGTERM in
    start() right after the worker got its signal: the start is no failure of the connector,
    and the worker stops cleanly."""
    doomed = tmp_path / "doomed"
    name = f"doomed-{topic_name}"
    connectors = [
        {
            "name": name,
            "connector.class": "FaultySource",
            "topic": topic_name,
            "tasks.max": "1",
            "connector.start.sigterm.after": str(doomed),
        }
    ]
    plugin_path = ",".join(str(p) for p in faulty_plugin_dirs)
    worker = CliWorker(
        tmp_path, _worker_props(tmp_path, bootstrap_servers, plugin_path), connectors
    )
    worker.spawn().wait_listening(120)
    try:
        wait_until(lambda: f"creating connector {name}" in worker.text(), 120, "its start")
        worker.signal_group(signal.SIGTERM)
        doomed.touch()
        code = worker.wait(60)
    finally:
        worker.close()
    text = worker.text()
    assert code == 0, text[-3000:]
    assert "Traceback" not in text and "Failed to start connector" not in text, text[-3000:]
    assert f"connector {name} not started: the worker is stopping" in text, text[-3000:]
    assert "killed by SIGTERM" in text
    assert not host_pids(name), host_pids(name)
