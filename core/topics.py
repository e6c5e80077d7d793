"""Topic creation for source connectors (KIP-158: ``topic.creation.*``).

When the worker has ``topic.creation.enable=true`` (the default) and a source connector sets
any ``topic.creation.*`` key (validation then requires
``topic.creation.default.replication.factor`` and ``.partitions``), a topic the connector
writes to for the first time is created with the settings of the first group whose include
regexes match its whole name (and exclude ones don't), falling back to ``default``. The
regexes are Java's syntax (:func:`core.topic_names.compile_topics_regex`); the default
group's include and exclude are ignored, as Kafka Connect ignores them. Existing topics are
left alone, as in Kafka Connect.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import NewTopic

from core.kafka import wrap_kafka_error
from core.topic_names import compile_topics_regex

log = logging.getLogger("copycat.topics")

# Seconds to wait for the controller to create a topic before the task fails.
CREATE_TIMEOUT_S = 30.0
_GROUP_KEYS = ("include", "exclude", "replication.factor", "partitions")
_PREFIX = "topic.creation."


@dataclass(frozen=True)
class TopicGroup:
    name: str
    include: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]
    replication_factor: int
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)

    def matches(self, topic: str) -> bool:
        return any(p.fullmatch(topic) for p in self.include) and not any(
            p.fullmatch(topic) for p in self.exclude
        )


def _patterns(raw: str) -> tuple[re.Pattern[str], ...]:
    return tuple(compile_topics_regex(p.strip()) for p in raw.split(",") if p.strip())


def topic_groups(props: Mapping[str, str]) -> list[TopicGroup]:
    """The connector's topic creation groups, most specific first, ``default`` last; none
    when no key starts with ``topic.creation.`` (Kafka's ``usesTopicCreation``)."""
    prefix = "topic.creation.default."
    if not any(k.startswith(_PREFIX) for k in props):
        return []
    default_rf = int(props.get(prefix + "replication.factor", "-1"))
    default_parts = int(props.get(prefix + "partitions", "-1"))
    names = [g.strip() for g in props.get("topic.creation.groups", "").split(",") if g.strip()]
    groups = []
    for name in [n for n in names if n != "default"] + ["default"]:
        gp = f"topic.creation.{name}."
        configs = {
            k[len(gp) :]: v
            for k, v in props.items()
            if k.startswith(gp) and k[len(gp) :] not in _GROUP_KEYS
        }
        groups.append(
            TopicGroup(
                name=name,
                include=_patterns(".*" if name == "default" else props.get(gp + "include", "")),
                exclude=_patterns("" if name == "default" else props.get(gp + "exclude", "")),
                replication_factor=int(props.get(gp + "replication.factor", default_rf)),
                partitions=int(props.get(gp + "partitions", default_parts)),
                configs=configs,
            )
        )
    return groups


class TopicCreator:
    """Creates each new topic a source task writes to, once, before its first record."""

    def __init__(
        self, admin: Callable[[], Any], props: Mapping[str, str], enabled: bool = True
    ) -> None:
        """``admin`` makes the AdminClient, only if some topic may have to be created."""
        self.groups = topic_groups(props) if enabled else []
        self._admin = admin() if self.groups else None
        self._known: set[str] = set()

    def ensure(self, topic: str) -> None:
        if not self.groups or topic in self._known:
            return
        assert self._admin is not None
        existing = self._admin.list_topics(timeout=CREATE_TIMEOUT_S).topics
        if topic in existing and existing[topic].error is None:
            self._known.add(topic)
            return
        group = next(g for g in self.groups if g.matches(topic) or g.name == "default")
        new = NewTopic(
            topic,
            num_partitions=group.partitions,
            replication_factor=group.replication_factor,
            config=group.configs,
        )
        future = self._admin.create_topics([new], operation_timeout=CREATE_TIMEOUT_S)[topic]
        try:
            future.result(CREATE_TIMEOUT_S)
            log.info(
                "created topic %s (group %s: %d partitions, replication factor %d)",
                topic,
                group.name,
                group.partitions,
                group.replication_factor,
            )
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                # Kafka's TopicAdmin.createOrFindTopics words, the broker's reason after.
                raise wrap_kafka_error(exc, f"Unable to create topic(s) '{topic}'") from exc
        self._known.add(topic)
