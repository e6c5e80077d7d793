"""Issue 18's sink test: the atomic-rename file sink, ``kill -9``ed at random points ten times
(the whole worker process, restarted each time as an operator would), ends with every record
exactly once in its committed files; on Apache Kafka.

The topic is written by a transactional producer the whole time, one transaction in
ABORT_EVERY aborted: the sink's consumer reads with its default ``isolation.level``
(read_committed), so no aborted record may appear, and the offsets have gaps (transaction
markers, aborted records) that the committed files' offset ranges must step over.

Each round waits until the sink has committed new files since the worker started (so the
kill falls while it is writing), then kills at a random moment up to MAX_KILL_DELAY_S later:
during a put(), a file commit, a rebalance between the two tasks, a group join. The seed is
in every failure message.
"""

from __future__ import annotations

import collections
import random
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.support.apache_kafka import KafkaCluster
from tests.support.processes import CliWorker, host_pids, wait_until

pytestmark = pytest.mark.integration

KILLS = 10
PARTITIONS = 3
TASKS = 2
# The transactional source: this many records per transaction, one transaction every
# TRANSACTION_EVERY_S (500 records/s: the sink is always busy, and the machine is not).
RECORDS_PER_TRANSACTION = 20
TRANSACTION_EVERY_S = 0.04
ABORT_EVERY = 4
# Small files (one every ~0.6 s per partition at this rate), so kills often fall inside a
# commit, and group offset commits rarer than file commits: the group's offsets lag what the
# files hold by up to OFFSET_FLUSH_INTERVAL_MS when the kill comes, so a sink that resumed
# from them instead of its files would be handed records it already wrote (with 500 ms
# commits the two nearly always agreed and a sink ignoring its files still passed).
FLUSH_SIZE = 100
OFFSET_FLUSH_INTERVAL_MS = 2_000
# After a kill the dead worker's consumers stay in the group this long, and the restarted
# ones wait for them to expire: most of a round. The test run's broker allows sessions this
# short (tests/support/apache_kafka.py); on a cluster that does not, its minimum is used.
SESSION_TIMEOUT_MS = 3_000
HEARTBEAT_INTERVAL_MS = 500
# Committed lines the sink must add after a start before the kill is armed.
PROGRESS_LINES = 200
MAX_KILL_DELAY_S = 1.5
WORKER_START_TIMEOUT_S = 90
CATCH_UP_TIMEOUT_S = 120


class _TransactionalSource(threading.Thread):
    """Writes ``c<n>`` in committed and ``a<n>`` in aborted transactions until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": f"crash-loop-{uuid.uuid4().hex}",
                "linger.ms": 5,
            }
        )
        self.topic = topic
        self.committed: list[str] = []
        self.aborted = 0
        self.halt = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.producer.init_transactions(30)
            n = 0
            while not self.halt.wait(TRANSACTION_EVERY_S):
                n += 1
                abort = n % ABORT_EVERY == 0
                values = [f"{'a' if abort else 'c'}{n}-{i}" for i in range(RECORDS_PER_TRANSACTION)]
                self.producer.begin_transaction()
                for i, value in enumerate(values):
                    self.producer.produce(self.topic, value.encode(), partition=i % PARTITIONS)
                # On the log before the abort: abort_transaction() drops what is still unsent,
                # and the test wants aborted records in the topic for the sink to skip.
                self.producer.flush(30)
                if abort:
                    self.producer.abort_transaction(30)
                    self.aborted += len(values)
                else:
                    self.producer.commit_transaction(30)
                    self.committed += values
        except BaseException as exc:  # noqa: BLE001 - reported by stop()
            self.error = exc

    def stop(self) -> list[str]:
        self.halt.set()
        self.join(60)
        if self.error is not None:
            raise AssertionError(f"the transactional source failed: {self.error}")
        return self.committed


def _committed_files(directory: Path) -> list[tuple[str, int, int, int, Path]]:
    """``(topic, partition, first, last, path)`` of every committed file, in offset order."""
    from copycat_file._committed_files import parse_committed_name

    found = []
    for path in directory.iterdir():
        parsed = parse_committed_name(path.name) if path.is_file() else None
        if parsed is not None:
            found.append((*parsed, path))
    return sorted(found, key=lambda f: (f[1], f[2]))


def _lines(directory: Path) -> list[str]:
    return [
        line
        for *_, path in _committed_files(directory)
        for line in path.read_text(encoding="utf-8").splitlines()
    ]


@pytest.mark.apache_kafka_only(reason="the dev broker shows aborted records to read_committed")
def test_the_file_sink_keeps_every_record_exactly_once_through_ten_kill_9s(
    broker: KafkaCluster,
    bootstrap_servers: str,
    bundled_plugin_path: Path,
    topic_name: str,
    tmp_path: Path,
) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    broker.create_topic(topic_name, PARTITIONS)
    session_timeout_ms = broker.session_timeout_ms(SESSION_TIMEOUT_MS)
    out = tmp_path / "out"
    name = f"eos-{topic_name}"
    worker = CliWorker(
        tmp_path,
        {
            "bootstrap.servers": bootstrap_servers,
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "offset.storage.file.filename": str(tmp_path / "connect.offsets"),
            "offset.flush.interval.ms": str(OFFSET_FLUSH_INTERVAL_MS),
            "plugin.path": str(bundled_plugin_path),
            "listeners": "http://127.0.0.1:0",
            "consumer.session.timeout.ms": str(session_timeout_ms),
            "consumer.heartbeat.interval.ms": str(HEARTBEAT_INTERVAL_MS),
        },
        connectors=[
            {
                "name": name,
                "connector.class": "ExactlyOnceFileSinkConnector",
                "tasks.max": str(TASKS),
                "topics": topic_name,
                "directory": str(out),
                "flush.size": str(FLUSH_SIZE),
            }
        ],
    )
    source = _TransactionalSource(bootstrap_servers, topic_name)
    source.start()
    kills: list[float] = []
    started = time.monotonic()
    try:
        for _ in range(KILLS):
            worker.start(WORKER_START_TIMEOUT_S)
            floor = len(_lines(out)) + PROGRESS_LINES if out.exists() else PROGRESS_LINES
            wait_until(
                lambda floor=floor: out.exists() and len(_lines(out)) >= floor,  # type: ignore[misc]
                CATCH_UP_TIMEOUT_S,
                f"new committed files (seed {seed}, after {len(kills)} kills)",
            )
            delay = rng.uniform(0, MAX_KILL_DELAY_S)
            time.sleep(delay)
            assert worker.proc is not None
            worker.proc.kill()  # SIGKILL: no shutdown hook, no commit, no close
            worker.proc.wait(30)
            kills.append(round(delay, 2))
            # Its plugin hosts die with it (PR_SET_PDEATHSIG); none may outlive it into the
            # next round, where it could still rename a file.
            wait_until(lambda: not host_pids(f"{name}-"), 30, "the killed worker's hosts gone")
        committed = source.stop()
        worker.start(WORKER_START_TIMEOUT_S)
        wait_until(
            lambda: len(_lines(out)) >= len(committed),
            CATCH_UP_TIMEOUT_S,
            f"all {len(committed)} committed records in files (seed {seed}, kills {kills})",
        )
        time.sleep(OFFSET_FLUSH_INTERVAL_MS / 1000 * 2)  # anything extra would show by now
    finally:
        source.halt.set()
        worker.close()
    elapsed = time.monotonic() - started

    context = f"seed {seed}, kills after {kills} s, {elapsed:.0f} s"
    lines = _lines(out)
    counts = collections.Counter(lines)
    duplicates = {line: n for line, n in counts.items() if n > 1}
    assert duplicates == {}, f"records in more than one place ({context})"
    assert not [line for line in lines if line.startswith("a")], f"aborted records ({context})"
    assert sorted(lines) == sorted(committed), f"missing or unknown records ({context})"
    # Per partition, files cover disjoint increasing offset ranges, and nothing is left over.
    for partition in range(PARTITIONS):
        ranges = [(f[2], f[3]) for f in _committed_files(out) if f[1] == partition]
        assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:], strict=False)), context
    assert not list((out / ".copycat-tmp").rglob("*.tmp")), f"temporary files left ({context})"
    # The runtime honoured every rewind: the sink never had to drop a redelivered record.
    assert "offsets already written" not in worker.text(), context
    assert source.aborted > 0
