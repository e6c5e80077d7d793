"""GET of a sink's offsets for groups the cluster has never seen, right after a new topic got
records: the group's coordinator answers NOT_COORDINATOR (or COORDINATOR_NOT_AVAILABLE) while
it loads, and librdkafka's admin ListConsumerGroupOffsets then crashes the whole process (a
NULL group handle in its coordinator refresh; librdkafka #5040, confluent-kafka-python #1982).
The reads run in a subprocess, so that such a crash is its exit status (-11), not a dead pytest
worker. On a broker of the module's own, whose offsets topic the first read creates: the crash
needs the coordinators still loading (a broker that served groups before did not crash), and
concurrent reads make it likelier; seen in 6 of 8 runs before the fix."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

from tests.support.apache_kafka import ApacheKafka, KafkaCluster, needs_own_apache_kafka
from tests.support.kafka import produce

pytestmark = needs_own_apache_kafka("reads offsets while its new offsets topic loads")

ROOT = Path(__file__).resolve().parents[2]
GROUPS = 200
# Read at once, as concurrent REST calls would.
THREADS = 8

_READ_FRESH_GROUPS = textwrap.dedent(
    """
    import sys
    from concurrent.futures import ThreadPoolExecutor
    from core.sink_offsets import SinkOffsets

    bootstrap, prefix, count, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

    def read(n):
        return SinkOffsets({"bootstrap.servers": bootstrap}, f"{prefix}-{n}").get()

    with ThreadPoolExecutor(threads) as pool:
        answers = list(pool.map(read, range(count)))
    assert answers == [[]] * count, answers
    """
)


def test_offsets_of_fresh_groups_never_crash_the_process(own_kafka: ApacheKafka) -> None:
    cluster = KafkaCluster(own_kafka.bootstrap_servers)
    topic = f"fresh-groups-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=3)
    produce(cluster.bootstrap_servers, topic, [b"x"] * 10)
    ran = subprocess.run(
        [
            sys.executable,
            "-c",
            _READ_FRESH_GROUPS,
            cluster.bootstrap_servers,
            f"connect-fresh-{uuid.uuid4().hex[:8]}",
            str(GROUPS),
            str(THREADS),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, (ran.returncode, ran.stderr[-3000:])
