"""`copycat standalone` as a user runs it: a real broker, real plugin hosts, real files."""

from __future__ import annotations

import collections
import json
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from core.kafka import LIBRDKAFKA_LOG_BURST
from tests.support.processes import (
    CliWorker,
    host_pids,
    signal_while_connecting,
    unreachable_address,
    wait_until,
)

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
# Interpreter start-up, reading the installed plugins and binding REST, on a busy machine.
STARTUP_ALLOWANCE_S = 20.0
# How soon a worker waiting for an unreachable cluster is gone after a signal: the wait looks
# at the stop flag at least every second (core.kafka.CLUSTER_CHECK_INTERVAL_S), then the
# worker stops with nothing started, on a busy machine. Kafka Connect: within 0.1 s.
SIGNAL_EXIT_S = 5.0


def _write_props(path: Path, props: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


class Pipeline:
    """A file -> topic -> file standalone deployment in a temp dir."""

    def __init__(
        self,
        tmp: Path,
        bootstrap: str,
        plugin_path: Path,
        topic: str,
        lines: int,
        flush_ms: int = 500,
    ) -> None:
        self.tmp = tmp
        self.topic = topic
        self.input = tmp / "input.txt"
        self.output = tmp / "output.txt"
        self.offsets = tmp / "connect.offsets"
        self.log = tmp / "worker.log"
        self.input.write_text("".join(f"line {i:07d} {'x' * 80}\n" for i in range(lines)))
        self.worker = _write_props(
            tmp / "worker.properties",
            {
                "bootstrap.servers": bootstrap,
                "key.converter": "org.apache.kafka.connect.storage.StringConverter",
                "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                "offset.storage.file.filename": str(self.offsets),
                "offset.flush.interval.ms": str(flush_ms),
                "plugin.path": str(plugin_path),
                "consumer.session.timeout.ms": "6000",
                "consumer.heartbeat.interval.ms": "1000",
                "listeners": "http://127.0.0.1:0",  # tests run side by side: no fixed REST port
            },
        )
        self.source = _write_props(
            tmp / "source.properties",
            {
                "name": f"src-{topic}",
                "connector.class": "FileStreamSource",
                "file": str(self.input),
                "topic": topic,
                "tasks.max": "1",
                "topic.creation.default.partitions": "1",
                "topic.creation.default.replication.factor": "1",
            },
        )
        self.sink = _write_props(
            tmp / "sink.properties",
            {
                "name": f"sink-{topic}",
                "connector.class": "FileStreamSink",
                "file": str(self.output),
                "topics": topic,
                "tasks.max": "1",
            },
        )
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, preexec_fn: Callable[[], None] | None = None) -> subprocess.Popen[bytes]:
        log = open(self.log, "ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "core.cli",
                "standalone",
                str(self.worker),
                str(self.source),
                str(self.sink),
            ],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=preexec_fn,
        )
        return self.proc

    def output_lines(self) -> list[str]:
        if not self.output.exists():
            return []
        return self.output.read_text().splitlines()

    def wait_for(self, predicate, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if predicate():
                return
            assert self.proc is None or self.proc.poll() is None, (
                f"worker exited ({self.proc.returncode}) while waiting for {what}:\n"
                + self.log.read_text()[-4000:]
            )
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {what}; log:\n{self.log.read_text()[-4000:]}")

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)


def _topic_size(bootstrap: str, topic: str) -> int:
    """Records in partition 0, counted by reading them all.

    The dev broker reports the high watermark as the base offset of the last batch rather
    than the last offset + 1, so watermarks cannot be used to count records on it.
    """
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "size-probe", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    count, idle_since = 0, time.monotonic()
    try:
        while time.monotonic() - idle_since < 2.0:
            batch = consumer.consume(10_000, 0.2)
            if batch:
                count += sum(1 for m in batch if m.error() is None)
                idle_since = time.monotonic()
        return count
    finally:
        consumer.close()


@pytest.mark.also_on_dev_broker
def test_100k_lines_go_file_to_topic_to_file_in_order(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path, topic_name: str
) -> None:
    lines = 100_000
    pipe = Pipeline(tmp_path, bootstrap_servers, bundled_plugin_path, topic_name, lines)
    pipe.start()
    try:
        pipe.wait_for(lambda: len(pipe.output_lines()) >= lines, 180, f"{lines} output lines")
    finally:
        assert pipe.stop() == 0, pipe.log.read_text()[-3000:]
    assert pipe.output_lines() == pipe.input.read_text().splitlines()
    assert _topic_size(bootstrap_servers, topic_name) == lines
    stored = json.loads(pipe.offsets.read_text())["offsets"]
    key = json.dumps([f"src-{topic_name}", {"filename": str(pipe.input)}], separators=(",", ":"))
    assert stored[key] == {"position": pipe.input.stat().st_size}


def test_kill_9_then_restart_loses_nothing_and_resumes_from_stored_offset(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path, topic_name: str
) -> None:
    lines, chunk = 100_000, 5_000
    pipe = Pipeline(tmp_path, bootstrap_servers, bundled_plugin_path, topic_name, 0, flush_ms=200)
    all_lines = [f"line {i:07d} {'x' * 80}\n" for i in range(lines)]
    written = 0

    def append(n: int) -> None:
        nonlocal written
        with open(pipe.input, "a") as fh:
            fh.writelines(all_lines[written : written + n])
        written += n

    # The file grows while the worker runs (FileStreamSource follows it), so the crash lands
    # with the source in the middle of the file.
    append(chunk)
    pipe.start()
    pipe.wait_for(
        lambda: pipe.offsets.exists() and len(pipe.output_lines()) >= 1_000,
        120,
        "some progress before the crash",
    )
    while written < lines // 2:  # kill while lines are still arriving and flowing
        append(chunk // 5)
        time.sleep(0.05)
    assert pipe.proc is not None
    pipe.proc.send_signal(signal.SIGKILL)
    pipe.proc.wait(10)
    stored = json.loads(pipe.offsets.read_text())["offsets"]
    position_at_crash = next(iter(stored.values()))["position"]
    assert 0 < position_at_crash
    produced_before_restart = _topic_size(bootstrap_servers, topic_name)
    while written < lines:
        append(chunk)
    assert position_at_crash < pipe.input.stat().st_size  # the source was mid-file

    pipe.start()
    try:
        expected = set(all_lines_stripped := [line.rstrip("\n") for line in all_lines])
        pipe.wait_for(
            lambda: set(pipe.output_lines()) >= expected, 240, "every line after the restart"
        )
    finally:
        assert pipe.stop() == 0
    output = pipe.output_lines()
    # kill -9 may cut the sink's last write short, page by page, leaving part of a line; the
    # restarted sink ends that line before the records delivered again. So at most one line
    # may be a fragment: a strict prefix of a line that is also there whole.
    fragments = [line for line in output if line not in expected]
    assert len(fragments) <= 1, fragments[:5]
    for fragment in fragments:
        assert fragment and any(
            line.startswith(fragment) and line != fragment for line in expected
        ), fragment
        assert "ended with an unterminated line" in pipe.log.read_text()
    counts = collections.Counter(line for line in output if line in expected)
    duplicates = sum(n - 1 for n in counts.values())
    assert set(counts) == expected  # nothing lost, nothing invented
    # Order per partition: ordering lines by their last occurrence gives the input order.
    last_seen = {line: i for i, line in enumerate(output)}
    assert sorted(expected, key=last_seen.__getitem__) == all_lines_stripped
    resent = _topic_size(bootstrap_servers, topic_name) - lines
    lines_before_offset = pipe.input.read_bytes()[:position_at_crash].count(b"\n")
    print(
        f"\nkill -9 at source position {position_at_crash} (line {lines_before_offset}); "
        f"{produced_before_restart} records were in the topic at the crash; "
        f"{resent} records re-sent by the source; {duplicates} duplicate lines in the sink"
    )
    # Resumed from the stored offset, not from zero: only what followed it was sent again.
    assert resent == produced_before_restart - lines_before_offset
    assert resent < produced_before_restart


def test_a_partial_last_line_in_the_sink_file_gets_a_line_end_before_new_records(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path, topic_name: str
) -> None:
    """What kill -9 during the sink's write leaves (part of a line, its record not committed),
    made deterministic: the file ends in a fragment when the worker starts. The fragment is
    kept as a line of its own, every record gets its own whole line, and the log says so."""
    lines = 20
    pipe = Pipeline(tmp_path, bootstrap_servers, bundled_plugin_path, topic_name, lines)
    expected = pipe.input.read_text().splitlines()
    fragment = expected[0][:12]  # the first record, cut short
    pipe.output.write_text("an earlier line\n" + fragment)
    pipe.start()
    try:
        pipe.wait_for(lambda: expected[-1] in pipe.output_lines(), 120, "the last record")
    finally:
        assert pipe.stop() == 0, pipe.log.read_text()[-3000:]
    assert pipe.output_lines() == ["an earlier line", fragment, *expected]
    log = pipe.log.read_text()
    assert (
        f"file '{pipe.output}' ended with an unterminated line of 12 bytes from byte 16" in log
    ), log[-3000:]


def test_invalid_connector_configs_fail_fast_and_start_nothing(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path, topic_name: str
) -> None:
    pipe = Pipeline(tmp_path, bootstrap_servers, bundled_plugin_path, topic_name, 10)
    cases = {
        "missing-topic": (
            {"name": "a", "connector.class": "FileStreamSource", "file": str(pipe.input)},
            "topic",
        ),
        "unknown-class": (
            {"name": "b", "connector.class": "com.example.NoSuchConnector", "topic": "t"},
            "com.example.NoSuchConnector",
        ),
        "sink-without-topics": (  # FileStreamSink redefines topics: the check still applies
            {"name": "c", "connector.class": "FileStreamSink", "file": str(pipe.output)},
            "Must configure one of topics or topics.regex",
        ),
    }
    for label, (props, expected) in cases.items():
        bad = _write_props(tmp_path / f"{label}.properties", props)
        proc = subprocess.run(
            [sys.executable, "-m", "core.cli", "standalone", str(pipe.worker), str(bad)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 1, proc.stderr
        assert expected in proc.stderr and str(bad) in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    malformed = tmp_path / "malformed.properties"
    malformed.write_text("name=c\nconnector.class=FileStreamSource\n=oops\n")
    proc = subprocess.run(
        [sys.executable, "-m", "core.cli", "standalone", str(pipe.worker), str(malformed)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert f"{malformed}:3" in proc.stderr, proc.stderr
    assert not pipe.offsets.exists()  # nothing was started


def test_unreachable_kafka_fails_startup_within_the_timeout_in_one_line(
    tmp_path: Path, bundled_plugin_path: Path
) -> None:
    """Kafka Connect fails at start-up when it cannot read the cluster id; so does Copycat,
    after default.api.timeout.ms, with one error line and a bounded number of librdkafka lines
    (it used to start, log "connector ... started" and then ~30 librdkafka lines a second)."""
    timeout_ms = 3_000
    # Bound but not listening: every connection attempt is refused, and no one else can
    # take the port while the test runs.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{closed.getsockname()[1]}"
        pipe = Pipeline(tmp_path, address, bundled_plugin_path, "never-created", 10)
        with open(pipe.worker, "a") as fh:
            fh.write(f"default.api.timeout.ms={timeout_ms}\n")
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "core.cli", "standalone", str(pipe.worker), str(pipe.sink)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        elapsed = time.monotonic() - started
    assert proc.returncode == 1, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("copycat: error:")]
    assert len(errors) == 1, proc.stderr[-3000:]
    assert f"bootstrap.servers={address}" in errors[0]
    assert f"default.api.timeout.ms={timeout_ms} ms" in errors[0]
    assert "Traceback" not in proc.stderr
    assert f"connector sink-{pipe.topic} started" not in proc.stderr  # nothing was started
    # It waited for the timeout, and not much longer: the rest is interpreter start-up and
    # reading the plugins, seconds at most on a loaded machine.
    assert timeout_ms / 1000 <= elapsed < timeout_ms / 1000 + STARTUP_ALLOWANCE_S, elapsed
    librdkafka = [line for line in proc.stderr.splitlines() if "copycat.librdkafka" in line]
    assert 0 < len(librdkafka) <= LIBRDKAFKA_LOG_BURST + elapsed, proc.stderr[-3000:]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=str)
def test_a_signal_ends_the_wait_for_an_unreachable_cluster_at_once(
    tmp_path: Path, bundled_plugin_path: Path, sig: signal.Signals
) -> None:
    """SIGTERM, Ctrl-C or a hang-up while the worker waits for the Kafka cluster at start-up
    stops it at once, as Kafka Connect exits at once. The wait used to look only at the
    clock: the worker ran on until default.api.timeout.ms (60 s) was out, then exited 1
    (SIGHUP killed it at once, with no graceful stop at all)."""
    closed, address = unreachable_address()
    with closed:
        worker = CliWorker(
            tmp_path,
            {
                "bootstrap.servers": address,
                "key.converter": "org.apache.kafka.connect.storage.StringConverter",
                "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                "offset.storage.file.filename": str(tmp_path / "connect.offsets"),
                "plugin.path": str(bundled_plugin_path),
                "listeners": "http://127.0.0.1:0",
            },
            [
                {
                    "name": "src",
                    "connector.class": "FileStreamSource",
                    "file": str(tmp_path / "input.txt"),
                    "topic": "never-created",
                }
            ],
        )
        try:
            elapsed = signal_while_connecting(worker, sig, SIGNAL_EXIT_S)
        finally:
            worker.close()
    assert elapsed < SIGNAL_EXIT_S, (elapsed, worker.text()[-3000:])
    assert worker.wait() == 0, worker.text()[-3000:]  # a graceful stop, not a failure
    assert "copycat: error" not in worker.text()
    assert "Traceback" not in worker.text()
    assert "connector src started" not in worker.text()  # it took no work


def test_sighup_stops_the_worker_gracefully_with_its_source_offsets_flushed(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path, topic_name: str
) -> None:
    """SIGHUP (the terminal closed, a supervisor's hang-up) stops the worker as SIGTERM does,
    as the JVM runs Kafka Connect's shutdown hook on it: tasks stop, source offsets are
    flushed, exit 0. It used to kill the worker at once (exit 129) with nothing flushed."""
    lines = 1_000
    # No periodic flush while the test runs: only the stop can write the offsets file.
    pipe = Pipeline(
        tmp_path, bootstrap_servers, bundled_plugin_path, topic_name, lines, flush_ms=600_000
    )
    pipe.start()
    try:
        pipe.wait_for(
            lambda: _topic_size(bootstrap_servers, topic_name) >= lines, 120, "every line sent"
        )
        assert not pipe.offsets.exists()
        assert pipe.proc is not None
        pipe.proc.send_signal(signal.SIGHUP)
        code = pipe.proc.wait(30)
    finally:
        if pipe.proc is not None and pipe.proc.poll() is None:
            pipe.proc.kill()
    assert code == 0, pipe.log.read_text()[-3000:]
    stored = json.loads(pipe.offsets.read_text())["offsets"]
    assert [offset["position"] for offset in stored.values()] == [pipe.input.stat().st_size]


def test_a_worker_file_with_placeholders_in_typed_keys_and_java_only_client_keys_starts(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path
) -> None:
    """Kafka's WorkerConfig resolves config providers before it checks types, so
    ``offset.flush.interval.ms=${env:FLUSH_MS}`` is a number there (Copycat refused it as
    "Not a number of type LONG"); and client keys librdkafka has no equivalent for, or that
    are the REST listener's, used to end the start-up in a traceback from the admin client."""
    worker = CliWorker(
        tmp_path,
        {
            "bootstrap.servers": bootstrap_servers,
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "offset.storage.file.filename": str(tmp_path / "connect.offsets"),
            "plugin.path": str(bundled_plugin_path),
            "config.providers": "env,file",
            "config.providers.env.class": (
                "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
            ),
            "config.providers.file.class": (
                "org.apache.kafka.common.config.provider.FileConfigProvider"
            ),
            "offset.flush.interval.ms": "${env:FLUSH_MS}",
            "listeners": "${env:LST}",
            "socket.connection.setup.timeout.max.ms": "30000",
            "ssl.client.auth": "none",
        },
        env={"FLUSH_MS": "2500", "LST": "http://127.0.0.1:0"},
    )
    with worker, worker.client() as rest:
        assert rest.get("/").status_code == 200
        assert worker.url.startswith("http://127.0.0.1:")  # the listener ${env:LST} named
    text = worker.text()
    assert "Traceback" not in text, text[-3000:]
    assert (
        "ignoring Java client configuration keys librdkafka has no equivalent for: "
        "socket.connection.setup.timeout.max.ms"
    ) in text
    assert worker.wait() == 0


def test_embedded_dev_broker_address_is_printed_on_stdout(
    tmp_path: Path, bundled_plugin_path: Path
) -> None:
    """Without bootstrap.servers the worker starts the dev broker; the user learns its address
    from stdout (it used to be in the log only) and can point their own clients at it."""
    worker = _write_props(
        tmp_path / "worker.properties",
        {
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "offset.storage.file.filename": str(tmp_path / "connect.offsets"),
            "plugin.path": str(bundled_plugin_path),
            "listeners": "http://127.0.0.1:0",
        },
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "core.cli", "standalone", str(worker)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    # readline() waits for the line, or for EOF: if no line comes, end the worker after a while.
    watchdog = threading.Timer(STARTUP_ALLOWANCE_S * 2, proc.kill)
    watchdog.start()
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        watchdog.cancel()
        assert line.startswith("dev broker (in memory, for development only): "), line
        address = line.rsplit(" ", 1)[1].strip()
        from confluent_kafka.admin import AdminClient

        metadata = AdminClient({"bootstrap.servers": address}).list_topics(timeout=10)
        assert metadata.cluster_id == "copycat-dev"
    finally:
        watchdog.cancel()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0


def test_a_sink_restarted_as_soon_as_it_started_on_the_embedded_broker_still_reads(
    tmp_path: Path, bundled_plugin_path: Path
) -> None:
    """A worker file without bootstrap.servers and without session settings, as a user writes
    one: a sink restarted a second after it was created used to be stopped while the dev
    broker held its first join (~22 s with librdkafka's 45 s session timeout), its host was
    killed mid-join, and its group never completed a join again: RUNNING, reading nothing,
    for good. The embedded broker's worker defaults make the join short enough to finish."""
    lines = [f"line {i}" for i in range(100)]
    (tmp_path / "input.txt").write_text("".join(f"{line}\n" for line in lines))
    output = tmp_path / "output.txt"
    props = {
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "offset.storage.file.filename": str(tmp_path / "connect.offsets"),
        "offset.flush.interval.ms": "500",  # FileStreamSink flushes its file on commits
        "plugin.path": str(bundled_plugin_path),
        "listeners": "http://127.0.0.1:0",
    }
    with CliWorker(tmp_path, props) as worker, worker.client() as rest:
        source = {"connector.class": "FileStreamSource", "file": str(tmp_path / "input.txt")}
        sink = {"connector.class": "FileStreamSink", "file": str(output), "topics": "t"}
        for name, config in (("src", source | {"topic": "t"}), ("sink", sink)):
            created = rest.post("/connectors", json={"name": name, "config": config})
            assert created.status_code == 201, created.text
        time.sleep(1)
        restarted = rest.post("/connectors/sink/restart", params={"includeTasks": "true"})
        assert restarted.status_code == 202, restarted.text
        # The dev broker auto-creates the topic with 4 partitions: lines in any order. A group
        # that never completes a join again reads nothing for good, so a long wait still
        # fails on it: 13 s alone, ~33 s beside four CPU burners, and once over 60 s in a full
        # CI run (CI43), whose log was gone before anyone read it; hence the log on failure.
        deadline = time.monotonic() + 150
        while not (output.exists() and sorted(output.read_text().splitlines()) == sorted(lines)):
            assert time.monotonic() < deadline, (
                "the sink did not write every line within 150 s of its restart; the worker's "
                f"log ends:\n{worker.text()[-6000:]}"
            )
            time.sleep(0.2)
        assert "killing its plugin host" not in worker.text()
        assert "consumer.session.timeout.ms=6000 (the dev broker's default" in worker.text()


def test_a_worker_installing_the_bundled_plugins_is_starting_and_runs_what_rest_created(
    tmp_path: Path, bootstrap_servers: str
) -> None:
    """A standalone worker whose plugin.path lacks the bundled plugins installs them in the
    background with REST up: /health said healthy before it could run their connectors. As
    Kafka's worker, which scans its plugins before its herder starts, it is starting (503,
    saying why) until they are there, and a connector created meanwhile waits for them and
    runs (never "no connector plugin named ... is installed"). The install is made slow for
    real: a cold bundled wheelhouse, so the wheels are built first."""
    from core.bundled import WHEELHOUSE_ENV, missing_bundled

    plugins = tmp_path / "plugins"
    plugins.mkdir()
    cold = tmp_path / "cold-wheelhouse"
    cold.mkdir()
    (tmp_path / "input.txt").write_text("one\ntwo\nthree\n")
    props = {
        "bootstrap.servers": bootstrap_servers,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "offset.storage.file.filename": str(tmp_path / "connect.offsets"),
        "plugin.path": str(plugins),
        "listeners": "http://127.0.0.1:0",
    }
    worker = CliWorker(tmp_path, props, env={WHEELHOUSE_ENV: str(cold)})
    try:
        worker.spawn().wait_listening(60)
        with worker.client() as rest:
            health = rest.get("/health")
            assert missing_bundled(plugins), "the install ended before the test could look"
            assert health.status_code == 503, health.text
            assert health.json()["status"] == "starting"
            assert "installing the bundled plugins" in health.json()["message"]
            config = {
                "connector.class": "FileStreamSource",
                "file": str(tmp_path / "input.txt"),
                "topic": f"bundled-{tmp_path.name}"[:200],
            }
            created = rest.post("/connectors", json={"name": "src", "config": config})
            assert created.status_code == 201, created.text
            assert not missing_bundled(plugins)

            def running() -> dict[str, object] | None:
                status = rest.get("/connectors/src/status").json()
                tasks = status.get("tasks", [])
                assert all(t["state"] != "FAILED" for t in tasks), status
                return status if [t["state"] for t in tasks] == ["RUNNING"] else None

            wait_until(running, 60, "the connector created during the install to run")
            wait_until(lambda: rest.get("/health").status_code == 200, 60, "a healthy worker")
    finally:
        worker.close()


def test_the_worker_and_its_plugin_hosts_get_the_hard_open_files_limit(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path, topic_name: str
) -> None:
    """Started from a shell whose soft limit is 1,024, the worker raises it to the hard limit
    (the JVM does so for Kafka Connect), and its plugin hosts inherit it: at ~9 descriptors
    per connector or task, 1,024 ends a worker at ~110 connectors."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 1024:
        pytest.fail(f"this test needs a hard open-files limit above 1024 (it is {hard})")

    def low_soft_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))

    pipe = Pipeline(tmp_path, bootstrap_servers, bundled_plugin_path, topic_name, 10)
    pipe.start(preexec_fn=low_soft_limit)
    assert pipe.proc is not None
    try:
        pipe.wait_for(lambda: len(pipe.output_lines()) == 10, 120, "the lines through both tasks")
        hosts = [*host_pids(f"src-{topic_name}"), *host_pids(f"sink-{topic_name}")]
        assert hosts, "no plugin host of the worker found"
        for pid in [pipe.proc.pid, *hosts]:
            soft = _soft_open_files(pid)
            assert soft > 1024, f"pid {pid}: soft open-files limit {soft}"
    finally:
        assert pipe.stop() == 0


def _soft_open_files(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError(f"no open-files limit in /proc/{pid}/limits")
