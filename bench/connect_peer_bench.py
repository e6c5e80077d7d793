"""Copycat next to Apache Kafka Connect itself: FileStreamSource and FileStreamSink, one task.

Run from the repository root:  uv run python bench/connect_peer_bench.py [--quick]
                               [--broker dev|kafka|both]

For each broker (the Tansu dev broker, then Apache Kafka from tests/kafka/pom.xml), in one
run on the same data: a bare confluent-kafka loop, Copycat (in-process worker, plugin hosts)
and a real Kafka Connect standalone worker (Java, the same Kafka release, JIT defaults, 1 GiB
heap) copy 100 B and 1 KiB lines file -> topic and topic -> file with StringConverter.

How each is timed, the same way for Copycat and Kafka Connect:
* source: from the first record's timestamp to the last's in the output topic, after checking
  that the topic holds exactly the file's lines in order. On Apache Kafka the topics use
  ``message.timestamp.type=LogAppendTime``, so this is the span of the broker's appends (what
  was delivered). The dev broker ignores that setting: there the stamps are the producers'
  (Java's ``send()``, librdkafka's ``produce()``), the span of handing records to the client,
  which runs ahead of delivery by up to the client's buffer;
* sink: from the output file's first byte to its last, by polling its size every 2 ms,
  after which the file must equal the input byte for byte.
The bare loops are timed as in bench/pipeline_bench.py: the source from its first produce()
to the end of flush(), the sink from its first record to its last written. Each
Copycat/Kafka Connect path runs REPEATS times, alternating, after one untimed warm-up of each
(the JVM's JIT and the dev broker's first read); medians printed.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

from bench.pipeline_bench import broker  # noqa: E402
from core.bundled import ensure_bundled_plugins  # noqa: E402
from core.kafka import SINK_CONSUMER_DEFAULTS, SOURCE_PRODUCER_DEFAULTS  # noqa: E402
from core.offsets import MemoryOffsetStore  # noqa: E402
from core.plugins import PluginCatalogue  # noqa: E402
from core.worker import Worker  # noqa: E402
from tests.support.apache_kafka import KafkaCluster  # noqa: E402
from tests.support.jvm import BENCH_JVM_FLAGS  # noqa: E402
from tests.support.kafka_connect import KafkaConnect  # noqa: E402

# Timed runs per path and implementation, alternating; the median is printed. Three, as in
# bench/pipeline_bench.py: one pair on a shared 2-core machine can differ by a third.
REPEATS = 3

# The FileStreamSource batch size for both (Kafka's default is 2000; bench/pipeline_bench.py
# gives Copycat 5000). Same value on both sides so neither polls more often.
SOURCE_BATCH = "5000"

# How often the sink's output file is measured (from a thread of this process, for both
# peers alike): fine enough for runs of a second or more.
FILE_POLL_S = 0.002

# Longest any single path may take before the run is declared stuck.
PATH_TIMEOUT_S = 300.0

WORKER_PROPS = {
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    "consumer.session.timeout.ms": "6000",
    "consumer.heartbeat.interval.ms": "1000",
    "offset.flush.interval.ms": "500",
}


def make_input(path: Path, count: int, size: int) -> bytes:
    body = "x" * (size - 9)
    data = "".join(f"{i:08d} {body}\n" for i in range(count)).encode()
    path.write_bytes(data)
    return data


def wait_until(predicate: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + PATH_TIMEOUT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"benchmark stuck: {what}")
        time.sleep(0.01)


def read_topic(bootstrap: str, topic: str, count: int) -> tuple[bytes, float]:
    """The topic's values as file bytes, and seconds from its first record's stamp to its last."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex}",
            **SINK_CONSUMER_DEFAULTS,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    first = last = 0
    deadline = time.monotonic() + PATH_TIMEOUT_S
    while len(values) < count and time.monotonic() < deadline:
        for msg in consumer.consume(min(10_000, count - len(values)), 1.0):
            if msg.error() is None:
                stamp = msg.timestamp()[1]
                first = first or stamp
                last = stamp
                values.append(msg.value())
    consumer.close()
    return b"".join(v + b"\n" for v in values), (last - first) / 1000


def bare_source(bootstrap: str, data: Path, topic: str) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, **SOURCE_PRODUCER_DEFAULTS})
    start = time.perf_counter()
    with open(data, "rb") as fh:
        for line in fh:
            while True:
                try:
                    producer.produce(topic, line[:-1])
                    break
                except BufferError:
                    producer.poll(0.01)
            producer.poll(0)
    assert producer.flush(60) == 0
    return time.perf_counter() - start


def bare_sink(bootstrap: str, topic: str, out: Path, count: int) -> float:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bare-{uuid.uuid4().hex}",
            **SINK_CONSUMER_DEFAULTS,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen, start = 0, 0.0
    with open(out, "wb") as fh:
        while seen < count:
            for msg in consumer.consume(min(2000, count - seen), 1.0):
                if msg.error() is None:
                    start = start or time.perf_counter()
                    fh.write(msg.value() + b"\n")
                    seen += 1
        fh.flush()
    elapsed = time.perf_counter() - start
    consumer.close()
    return elapsed


def time_file(out: Path, size: int) -> float:
    """Seconds from ``out``'s first byte to its ``size``-th, measured by polling its size."""
    start = 0.0
    deadline = time.monotonic() + PATH_TIMEOUT_S
    while True:
        now = time.perf_counter()
        current = out.stat().st_size if out.exists() else 0
        if current and not start:
            start = now
        if current >= size:
            return now - start
        if time.monotonic() > deadline:
            raise TimeoutError(f"{out} reached {current} of {size} bytes")
        time.sleep(FILE_POLL_S)


class CopycatPeer:
    """Copycat's standalone worker in this process (task loops in threads, plugin hosts)."""

    name = "copycat"

    def __init__(self, bootstrap: str, plugin_path: Path) -> None:
        self.worker = Worker(
            "bench",
            WORKER_PROPS,
            PluginCatalogue.scan([plugin_path]),
            MemoryOffsetStore(),
            client_props={"bootstrap.servers": bootstrap},
        )

    def run(self, name: str, config: dict[str, str], done: Callable[[], bool]) -> None:
        self.worker.start_connector(name, {"name": name, **config})
        self.worker.start_task(name, 0, self.worker.task_configs(name)[0])
        try:
            wait_until(done, f"copycat {name}")
        finally:
            self.worker.stop_connector(name)

    def source_done(self, name: str, size: int) -> Callable[[], bool]:
        return lambda: any(
            o == {"position": size} for _, o in self.worker.offsets.connector_offsets(name)
        )

    def stop(self) -> None:
        self.worker.stop()


class KafkaConnectPeer:
    """A Kafka Connect standalone worker JVM, driven over REST."""

    name = "kafka connect"

    def __init__(self, work: Path, bootstrap: str) -> None:
        self.connect = KafkaConnect(
            work, bootstrap, overrides=WORKER_PROPS, jvm_flags=BENCH_JVM_FLAGS
        ).start(os.getpid())
        self.http = self.connect.client()

    def run(self, name: str, config: dict[str, str], done: Callable[[], bool]) -> None:
        created = self.http.post("/connectors", json={"name": name, "config": config})
        assert created.status_code == 201, created.text
        try:
            wait_until(done, f"kafka connect {name}")
        finally:
            self.http.delete(f"/connectors/{name}")

    def source_done(self, name: str, size: int) -> Callable[[], bool]:
        def done() -> bool:
            offsets = self.http.get(f"/connectors/{name}/offsets").json().get("offsets", [])
            return any(o["offset"].get("position") == size for o in offsets)

        return done

    def stop(self) -> None:
        self.http.close()
        self.connect.stop()


def source_config(data: Path, topic: str) -> dict[str, str]:
    return {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "tasks.max": "1",
        "file": str(data),
        "topic": topic,
        "batch.size": SOURCE_BATCH,
    }


def sink_config(topic: str, out: Path) -> dict[str, str]:
    return {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "tasks.max": "1",
        "topics": topic,
        "file": str(out),
    }


def bench_broker(kind: str, work: Path, plugin_path: Path, scale: int) -> None:
    with broker(kind, work) as (cluster, _broker_pids):
        bootstrap = cluster.bootstrap_servers
        peers: list[Any] = [
            CopycatPeer(bootstrap, plugin_path),
            KafkaConnectPeer(work / f"connect-{kind}", bootstrap),
        ]
        try:
            for size, count in ((100, 400_000 // scale), (1024, 100_000 // scale)):
                bench_size(cluster, peers, work, kind, size, count)
        finally:
            for peer in peers:
                peer.stop()


def bench_size(
    cluster: KafkaCluster, peers: list[Any], work: Path, kind: str, size: int, count: int
) -> None:
    bootstrap = cluster.bootstrap_servers
    data = work / f"in-{size}.txt"
    expected = make_input(data, count, size)
    digest = hashlib.sha256(expected).hexdigest()
    # source: bare once, then warm-up + REPEATS per peer, alternating
    # The broker stamps each batch as it appends it; see the module docstring.
    topic_config = {"message.timestamp.type": "LogAppendTime"} if kind == "kafka" else {}
    topic = f"bare-{kind}-{size}"
    cluster.create_topic(topic, 1, topic_config)
    t_bare_src = bare_source(bootstrap, data, topic)
    got, _ = read_topic(bootstrap, topic, count)
    assert hashlib.sha256(got).hexdigest() == digest, "bare source topic differs from input"
    src_times: dict[str, list[float]] = {p.name: [] for p in peers}
    sink_topic = ""
    for rep in range(REPEATS + 1):
        for peer in peers:
            tag = f"{peer.name.split()[0]}-{kind}-{size}-{rep}"
            cluster.create_topic(f"src-{tag}", 1, topic_config)
            peer.run(
                f"src-{tag}",
                source_config(data, f"src-{tag}"),
                peer.source_done(f"src-{tag}", len(expected)),
            )
            got, elapsed = read_topic(bootstrap, f"src-{tag}", count)
            assert hashlib.sha256(got).hexdigest() == digest, f"{peer.name} source topic differs"
            if rep:
                src_times[peer.name].append(elapsed)
            sink_topic = sink_topic or f"src-{tag}"
    # sink: every sink reads the same (already read once) topic
    sink_times: dict[str, list[float]] = {p.name: [] for p in peers}
    bare_sink_times = []
    for rep in range(REPEATS + 1):
        out = work / f"bare-{kind}-{size}-{rep}.out"
        elapsed = bare_sink(bootstrap, sink_topic, out, count)
        assert hashlib.sha256(out.read_bytes()).hexdigest() == digest, "bare sink output differs"
        if rep:
            bare_sink_times.append(elapsed)
        for peer in peers:
            tag = f"{peer.name.split()[0]}-{kind}-{size}-{rep}"
            out = work / f"sink-{tag}.out"
            timing: list[float] = []
            # Measuring starts before the connector is created: a worker may write its first
            # lines before its REST answer arrives.
            timer = threading.Thread(
                target=lambda out=out, timing=timing: timing.append(time_file(out, len(expected)))
            )
            timer.start()
            peer.run(f"sink-{tag}", sink_config(sink_topic, out), lambda t=timer: not t.is_alive())
            timer.join()
            assert hashlib.sha256(out.read_bytes()).hexdigest() == digest, (
                f"{peer.name} sink differs"
            )
            if rep:
                sink_times[peer.name].append(timing[0])
    mb = len(expected) / 1e6
    for path, times, bare in (
        ("source", src_times, t_bare_src),
        ("sink", sink_times, statistics.median(bare_sink_times)),
    ):
        cc, kc = statistics.median(times["copycat"]), statistics.median(times["kafka connect"])
        pairs = ", ".join(
            f"{k / c:.2f}" for c, k in zip(times["copycat"], times["kafka connect"], strict=True)
        )
        print(
            f"{kind:<7}{f'{path} {size} B x {count}':<24}"
            f"{count / cc:>12,.0f}{mb / cc:>7.1f}{count / kc:>12,.0f}{mb / kc:>7.1f}"
            f"{count / bare:>12,.0f}{kc / cc:>9.2f}{bare / cc:>9.2f}   (pairs {pairs})",
            flush=True,
        )


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="4x smaller data sets")
    parser.add_argument("--broker", choices=["dev", "kafka", "both"], default="both")
    args = parser.parse_args()
    kinds = ["dev", "kafka"] if args.broker == "both" else [args.broker]
    print(
        f"{'broker':<7}{'path':<24}{'copycat/s':>12}{'MB/s':>7}{'connect/s':>12}{'MB/s':>7}"
        f"{'bare/s':>12}{'cc/kc':>9}{'cc/bare':>9}"
    )
    # Plugin venvs, JVM work dirs and data take ~1 GB: removed however the run ends.
    with tempfile.TemporaryDirectory(prefix="copycat-connect-peer-bench-") as tmp:
        work = Path(tmp)
        plugin_path = work / "plugins"
        ensure_bundled_plugins(plugin_path)
        for kind in kinds:
            bench_broker(kind, work, plugin_path, 4 if args.quick else 1)


if __name__ == "__main__":
    httpx_logger = logging.getLogger("httpx")
    httpx_logger.setLevel(logging.WARNING)
    main()
