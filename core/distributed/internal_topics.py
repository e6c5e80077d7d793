"""The three internal topics: created compacted when missing, refused when not compacted.

Kafka Connect creates ``config.storage.topic`` (one partition), ``offset.storage.topic`` and
``status.storage.topic`` with ``cleanup.policy=compact`` and the configured partitions and
replication factors, and refuses to start on an existing topic whose cleanup policy is not
exactly ``compact`` (a ``delete`` policy would silently lose configs and offsets after the
retention time). So do we. The dev broker cannot compact and reports no topic configs, so the
check can be switched off (``internal.topics.compaction.check.enable=false``); Apache Kafka
needs no such switch.

Called once by the herder's start-up, before any log is read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from core.kafka import wrap_kafka_error
from plugin_api import ConfigException

__all__ = ["InternalTopic", "ensure_internal_topics"]

log = logging.getLogger("copycat.distributed.topics")

# Deadline of each admin request (create, describe): a controller on a loaded machine creates a
# topic within seconds.
ADMIN_TIMEOUT_S = 30.0
COMPACT = "compact"
# Pause before asking again about a topic the broker does not know yet.
UNKNOWN_TOPIC_RETRY_S = 0.1


@dataclass(frozen=True)
class InternalTopic:
    """One internal topic as the worker config names it."""

    config_key: str  # e.g. offset.storage.topic, quoted in errors
    name: str
    partitions: int  # -1: the broker's default
    replication_factor: int  # -1: the broker's default
    purpose: str  # what it keeps, quoted in errors ("source connector offsets")
    single_partition: bool = False  # the config topic: one partition keeps one total order


def ensure_internal_topics(
    admin: AdminClient, topics: Sequence[InternalTopic], *, check_compaction: bool
) -> None:
    """Create the missing topics, then check every topic's partitions and cleanup policy.

    Raises:
        ConfigException: a topic is not compacted (and the check is on), or the config topic
            has more than one partition; the message names the topic and its config key.
    """
    existing = set(admin.list_topics(timeout=ADMIN_TIMEOUT_S).topics)
    missing = [t for t in topics if t.name not in existing]
    if missing:
        _create(admin, missing)
    metadata = admin.list_topics(timeout=ADMIN_TIMEOUT_S).topics
    for topic in topics:
        partitions = len(metadata[topic.name].partitions) if topic.name in metadata else 0
        if topic.single_partition and partitions > 1:
            raise ConfigException(
                topic.config_key,
                topic.name,
                f"Topic '{topic.name}' supplied via the '{topic.config_key}' property is "
                "required to have a single partition in order to guarantee consistency of "
                f"connector configurations, but found {partitions} partitions.",
            )
    if check_compaction:
        _check_compaction(admin, topics)


def _create(admin: AdminClient, topics: Sequence[InternalTopic]) -> None:
    new = [
        NewTopic(
            t.name,
            num_partitions=1 if t.single_partition else t.partitions,
            replication_factor=t.replication_factor,
            config={"cleanup.policy": COMPACT},
        )
        for t in topics
    ]
    futures = admin.create_topics(new, operation_timeout=ADMIN_TIMEOUT_S)
    for topic in topics:
        try:
            futures[topic.name].result(ADMIN_TIMEOUT_S)
            log.info(
                "created internal topic %s (%s) for %s", topic.name, topic.config_key, topic.purpose
            )
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if isinstance(error, KafkaError) and error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                continue  # another worker of the cluster created it first
            raise wrap_kafka_error(
                exc, f"cannot create internal topic {topic.name} ({topic.config_key})"
            ) from exc


def _describe(admin: AdminClient, topic: InternalTopic) -> dict[str, Any]:
    """The topic's settings. A topic created a moment ago may be unknown to the broker that
    answers for a little while (seen under load: UNKNOWN_TOPIC_OR_PART right after the
    create returned): asked again until ADMIN_TIMEOUT_S."""
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic.name)
    deadline = time.monotonic() + ADMIN_TIMEOUT_S
    while True:
        future = admin.describe_configs([resource], request_timeout=ADMIN_TIMEOUT_S)[resource]
        try:
            entries: dict[str, Any] = future.result(ADMIN_TIMEOUT_S)
            return entries
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            unknown = (
                isinstance(error, KafkaError) and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
            )
            if not unknown or time.monotonic() > deadline:
                raise wrap_kafka_error(
                    exc, f"cannot read the settings of internal topic {topic.name}"
                ) from exc
        time.sleep(UNKNOWN_TOPIC_RETRY_S)


def _check_compaction(admin: AdminClient, topics: Sequence[InternalTopic]) -> None:
    for topic in topics:
        entries = _describe(admin, topic)
        entry = entries.get("cleanup.policy")
        policy = entry.value if entry is not None else None
        if policy is None:
            raise ConfigException(
                topic.config_key,
                topic.name,
                f"Cannot read the cleanup policy of topic '{topic.name}' ({topic.config_key}): "
                "the broker reports no topic settings. A broker that cannot compact topics "
                "(the dev broker) needs internal.topics.compaction.check.enable=false.",
            )
        policies = {p.strip().lower() for p in policy.split(",") if p.strip()}
        if policies != {COMPACT}:
            # Kafka's TopicAdmin says it without the "Invalid value ... for configuration"
            # prefix of a keyed ConfigException.
            raise ConfigException(
                f"Topic '{topic.name}' supplied via the '{topic.config_key}' property is required "
                f"to have '{'cleanup.policy'}={COMPACT}' to guarantee consistency and durability "
                f"of {topic.purpose}, but found the topic currently has "
                f"'cleanup.policy={policy}'. Continuing would likely result in eventually losing "
                f"{topic.purpose} and problems restarting this Connect cluster in the future. "
                f"Change the '{topic.config_key}' property in the Connect worker configurations "
                f"to use a topic with 'cleanup.policy={COMPACT}'.",
            )
