"""Source tasks sharing a worker's offsets topic each wait for their own writes.

Every source task of a distributed worker writes its offsets through one store over
``offset.storage.topic``. Its flush used to take every task's pending writes as its own: a
second task flushing at the same moment found nothing left and returned at once, before its
offsets were acknowledged (and a failure of its write was raised to the other task, which
retried its own offsets, not the owner's). Kafka's KafkaOffsetBackingStore.set() returns a
future of that call's records alone; so does ours now.

The module's own broker: it is stopped (SIGSTOP) for a few seconds, which the run's shared one
must not be.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from core.distributed.keys import ClusterKeys
from core.distributed.offset_store import KafkaOffsetBackingStore
from core.stores import OffsetStorage
from core.stores.task_offsets import TaskOffsetStore
from tests.support.apache_kafka import ApacheKafka, KafkaCluster, needs_own_apache_kafka

pytestmark = [
    pytest.mark.integration,
    needs_own_apache_kafka("freezes an Apache Kafka of its own"),
]

START_TIMEOUT_S = 30.0
# Long enough that a flush returning while the broker cannot answer is seen returning.
FROZEN_S = 2.0
# The broker resumed: both writes acknowledged, on a busy 2-core machine.
ACKED_WITHIN_S = 30.0

A, B = {"file": "a.txt"}, {"file": "b.txt"}


def test_a_task_flush_returns_only_once_its_own_offsets_are_acknowledged(
    own_kafka: ApacheKafka,
) -> None:
    topic = f"offsets-{uuid.uuid4().hex[:8]}"
    KafkaCluster(own_kafka.bootstrap_servers).create_topic(topic, 1, {"cleanup.policy": "compact"})
    props = {"bootstrap.servers": own_kafka.bootstrap_servers}
    backing = KafkaOffsetBackingStore(
        topic, props, ClusterKeys(None), flush_timeout_s=ACKED_WITHIN_S
    )
    backing.start(START_TIMEOUT_S)
    try:
        worker_store = OffsetStorage(backing)
        tasks = {"ca-0": TaskOffsetStore(worker_store), "cb-0": TaskOffsetStore(worker_store)}
        tasks["ca-0"].put("ca", [(A, {"position": 0})])
        tasks["ca-0"].flush()  # the producer is connected before the broker stops
        returned: dict[str, float] = {}
        failed: dict[str, BaseException] = {}

        def flush(name: str) -> None:
            try:
                tasks[name].flush()
            except BaseException as exc:  # noqa: BLE001 - reported below
                failed[name] = exc
            returned[name] = time.monotonic()

        flushes = [threading.Thread(target=flush, args=(name,)) for name in tasks]
        with own_kafka.frozen():
            tasks["ca-0"].put("ca", [(A, {"position": 10})])
            tasks["cb-0"].put("cb", [(B, {"position": 20})])
            for thread in flushes:
                thread.start()
            time.sleep(FROZEN_S)  # nothing can be acknowledged meanwhile
            early = dict(returned)
            thawed = time.monotonic()
        for thread in flushes:
            thread.join(ACKED_WITHIN_S + 10)
        assert early == {}, f"flushed while the broker was stopped: {sorted(early)} ({failed})"
        assert failed == {}
        assert sorted(returned) == ["ca-0", "cb-0"]
        assert all(at >= thawed for at in returned.values())

        reader = KafkaOffsetBackingStore(topic, props, ClusterKeys(None))
        reader.start(START_TIMEOUT_S)
        try:
            stored = OffsetStorage(reader)
            assert list(stored.get("ca", [A]).values()) == [{"position": 10}]
            assert list(stored.get("cb", [B]).values()) == [{"position": 20}]
        finally:
            reader.stop()
    finally:
        backing.stop()
