"""What a task needs from wherever it runs, as seams: Kafka clients, plugin hosts, offsets.

:func:`core.runtime.build.build_task` takes a :class:`TaskServices`; the local worker gives it
confluent-kafka clients and plugin hosts started from the environments under ``plugin.path``,
a Spark executor gives it hosts started from environments it built from shipped wheelhouses,
and unit tests give it fakes and the in-process host.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from confluent_kafka import KafkaException
from plugin_api.config import java_trim

from core.kafka import (
    BLANK_GROUP_ID,
    Consumer,
    KafkaClientError,
    Producer,
    admin_client,
    client_config,
    librdkafka_keys,
    wrap_kafka_error,
)
from core.offsets import OffsetStore
from core.runtime.spec import PluginRef, TaskSpec
from core.stores.task_offsets import TaskOffsetStore
from isolation import HostClient

log = logging.getLogger("copycat.runtime")

T = TypeVar("T")

__all__ = [
    "ConfluentClients",
    "HostLauncher",
    "KafkaClients",
    "TaskFencing",
    "TaskServices",
]


class KafkaClients(Protocol):
    """Makes the task's Kafka clients (the only place they are constructed)."""

    def producer(self, config: Mapping[str, Any]) -> Any: ...

    def consumer(self, config: Mapping[str, Any]) -> Any: ...

    def admin(self, config: Mapping[str, Any]) -> Any: ...


class ConfluentClients:
    """confluent-kafka's clients, as the worker runs them: librdkafka's log lines routed
    through the worker's rate limit, and keys librdkafka does not know dropped with a warning
    (Kafka's Java clients ignore unknown keys the same way), so a worker-wide override meant
    for another client, or a Java-only key, never stops a task from starting."""

    def producer(self, config: Mapping[str, Any]) -> Producer:
        return _tolerant(Producer, config, "producer")

    def consumer(self, config: Mapping[str, Any]) -> Consumer:
        group = config.get("group.id")
        if isinstance(group, str) and not java_trim(group):
            # librdkafka's consumer aborts the process that makes it with a blank group id
            # (confluent-kafka asserts on it): the plugin host, or the worker itself. Kafka's
            # consumer refuses it with InvalidGroupIdException, which fails the task.
            raise KafkaClientError(f"cannot create the task's consumer: {BLANK_GROUP_ID}")
        return _tolerant(Consumer, config, "consumer")

    def admin(self, config: Mapping[str, Any]) -> Any:
        return _tolerant(admin_client, config, "admin client")


# librdkafka names one unknown property per attempt.
_UNKNOWN_PROPERTY = re.compile(r'No such configuration property: "([^"]+)"')


def _tolerant(make: Callable[[dict[str, Any]], T], config: Mapping[str, Any], role: str) -> T:
    settings = librdkafka_keys(client_config(config))
    dropped: list[str] = []
    while True:
        try:
            client = make(settings)
        except KafkaException as exc:
            unknown = _UNKNOWN_PROPERTY.search(str(exc))
            if unknown is None or unknown.group(1) not in settings:
                raise wrap_kafka_error(exc, f"cannot create the task's {role}") from exc
            dropped.append(unknown.group(1))
            del settings[unknown.group(1)]
            continue
        if dropped:
            log.warning(
                "%s %s: ignoring configuration keys it does not know: %s",
                role,
                settings.get("client.id", ""),
                ", ".join(sorted(dropped)),
            )
        return client


class HostLauncher(Protocol):
    """Starts plugin hosts for plugins named by :class:`PluginRef`, wherever their
    environments are on this machine."""

    def start(
        self,
        plugin: PluginRef,
        name: str,
        *,
        callbacks: Mapping[str, Callable[..., Any]],
        call_timeout_s: float,
        memory_limit_bytes: int,
        parent_first: tuple[str, ...] = (),
    ) -> HostClient:
        """A host for ``plugin``; ``parent_first``: directories importable in it before the
        plugin's environment (after plugin_api), for a data path that runs in the host."""
        ...

    def import_path(self, plugin: PluginRef) -> str:
        """What to attach to another plugin's host to load ``plugin`` child-first there."""
        ...


class TaskFencing(Protocol):
    """What the herder does around an exactly-once task's producer initialisation (KIP-618);
    called on the task's thread by :func:`core.runtime.build.build_task`."""

    def before_producer(self) -> None:
        """Make sure older generations of the connector's tasks are fenced out (the leader
        fences them once per new set of task configs).

        Raises:
            ConnectException: they could not be fenced; the message says why.
        """
        ...

    def after_producer(self) -> None:
        """Check that this task is still current once its producer fenced the older ones.

        Raises:
            ConnectException: newer task configs exist, or the task moved elsewhere meanwhile.
        """
        ...


@dataclass
class TaskServices:
    hosts: HostLauncher
    offsets: OffsetStore
    clients: KafkaClients = field(default_factory=ConfluentClients)
    clock: Callable[[], float] = time.monotonic
    # The offsets store of one source task: a connector's own offsets topic merged with the
    # worker's store (core.stores.task_offsets). Unset: every task uses ``offsets`` as it is.
    task_offsets: Callable[[TaskSpec], TaskOffsetStore] | None = None

    def offsets_for(self, spec: TaskSpec) -> TaskOffsetStore:
        """The store ``spec``'s task reads and writes offsets in; the caller closes it."""
        if self.task_offsets is not None:
            return self.task_offsets(spec)
        return TaskOffsetStore(self.offsets)
