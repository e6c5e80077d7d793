"""What the exactly-once source tests share (tests/e2e/test_exactly_once_source*.py): their
cluster of ``copycat distributed`` workers, the SequenceSource's connector config
(tests/support/sequence_source.py), reading back what its tasks wrote (records and offsets),
and simulated zombies: transactional producers with a task's transactional id.

Called from the tests' main thread.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any

from confluent_kafka import Message, Producer

from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import DistributedCluster

__all__ = [
    "CLIENT_TIMEOUT_S",
    "MINIMUM",
    "PER_POLL",
    "SETTLE_S",
    "THROUGHPUT",
    "WORKERS",
    "eos_cluster",
    "group_settings",
    "offset_records",
    "seqnos",
    "sequence_source",
    "transactional_producer",
]

# Records a poll; Kafka's ExactlyOnceSourceIntegrationTest polls 100 at a time too.
PER_POLL = 100
# Records a second per task: a poll every 0.1 s, so a test needs a second or two of data.
THROUGHPUT = 1_000
# A transactional client call (init, commit) on a loaded machine's broker.
CLIENT_TIMEOUT_S = 30.0
# Records the tests wait for before they stop a connector: Kafka's MINIMUM_MESSAGES.
MINIMUM = 100
# How long a test waits for what a user waits for (tasks running, records committed) on a
# loaded machine.
SETTLE_S = 60.0
WORKERS = 2
# A frozen or departed worker is out of the group after this (the run's broker allows short
# sessions, tests/support/apache_kafka.py); heartbeats keep rebalances prompt.
SESSION_TIMEOUT_MS = 3_000
HEARTBEAT_MS = 500


def group_settings(broker: KafkaCluster, scheduled_delay_ms: int) -> dict[str, str]:
    """Worker keys: short sessions, and how long a departed worker's work waits to move."""
    return {
        "session.timeout.ms": str(broker.session_timeout_ms(SESSION_TIMEOUT_MS)),
        "heartbeat.interval.ms": str(HEARTBEAT_MS),
        "scheduled.rebalance.max.delay.ms": str(scheduled_delay_ms),
    }


def eos_cluster(
    tmp: Path, broker: KafkaCluster, plugins: str, support: str, **extra: str
) -> DistributedCluster:
    """WORKERS workers (not started) with ``exactly.once.source.support=support`` and
    ``plugins`` (``plugin.path``: the bundled plugins first, then the SequenceSource's)."""
    return DistributedCluster(
        tmp,
        broker.bootstrap_servers,
        Path(plugins.split(",")[0]),
        WORKERS,
        extra={"plugin.path": plugins, "exactly.once.source.support": support, **extra},
    )


def sequence_source(name: str, topic: str, **extra: str) -> dict[str, str]:
    """The config of a SequenceSource connector ``name`` writing to ``topic``."""
    return {
        "connector.class": "SequenceSource",
        "tasks.max": "1",
        "topic": topic,
        "messages.per.poll": str(PER_POLL),
        "throughput": str(THROUGHPUT),
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "name": name,
        **extra,
    }


def seqnos(messages: list[Message], name: str) -> dict[int, list[int]]:
    """task -> seqnos of the records, checking keys and values agree (Kafka's parser)."""
    found: dict[int, list[int]] = collections.defaultdict(list)
    for message in messages:
        key, value = (message.key() or b"").decode(), (message.value() or b"").decode()
        assert key.startswith(f"key-{name}-") and value == "value-" + key[len("key-") :]
        task, seq = key[len(f"key-{name}-") :].split("-")
        found[int(task)].append(int(seq))
    return found


def offset_records(messages: list[Message], name: str) -> list[tuple[int, dict[str, Any] | None]]:
    """``(task, offset)`` of every offset record of ``name``'s tasks in an offsets topic, in
    the topic's order (None: a tombstone)."""
    found = []
    for message in messages:
        key = json.loads(message.key() or b"null")
        if not isinstance(key, list) or key[0] != name:
            continue
        task = int(key[1]["task.id"].rsplit("-", 1)[1])
        value = message.value()
        found.append((task, None if value is None else json.loads(value)))
    return found


def transactional_producer(bootstrap: str, transactional_id: str) -> Producer:
    """A producer that can pose as a task's instance (a zombie): its transactional id."""
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "client.id": f"simulated-{transactional_id}",
        }
    )
