"""Fencing out zombie source tasks (KIP-618): their transactional producers can commit no more.

A task's transactional id is ``<group id>-<connector>-<task>``
(:func:`core.task_specs.task_transactional_id`). Initialising a producer with that id bumps
its epoch on the broker's transaction coordinator: the open transaction of any older producer
of the id is aborted and its next commit fails with a fencing error. A new instance of a task
does that for its own id when it starts; :func:`fence_producers` does it for the ids of tasks
that will *not* start again (a connector reconfigured from five tasks to one leaves tasks 1..4
of the old generation running somewhere, maybe on a worker cut off from the cluster).

Kafka calls ``Admin.fenceProducers``, which sends the same InitProducerId request per id;
librdkafka has no such admin call, so a short-lived transactional producer per id does it.

:class:`StandaloneFencing` keeps what a standalone worker needs to know between two
generations of a connector's tasks (in memory: a standalone worker is the only one running
them; after its restart, a zombie from before can only be a process that is still alive, and
each task's own producer fences its id).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaException

from core.kafka import wrap_kafka_error
from core.runtime.services import ConfluentClients
from plugin_api import ConnectException

__all__ = ["FENCING_TIMEOUT_S", "StandaloneFencing", "fence_producers"]

log = logging.getLogger("copycat.fencing")

# How long fencing one transactional id may take (an InitProducerId round trip, which waits
# for the old producer's open transaction to be aborted). Kafka bounds its whole fenceProducers
# call by its REST request timeout, 90 s; a task start waiting on it fails after that.
FENCING_TIMEOUT_S = 90.0


def fence_producers(
    client_config: Mapping[str, Any],
    transactional_ids: Sequence[str],
    timeout_s: float = FENCING_TIMEOUT_S,
) -> None:
    """Fence out every producer of ``transactional_ids`` on the cluster ``client_config``
    names (the connector's admin settings, as Kafka fences with the connector's admin client).

    Raises:
        ConnectException: an id could not be fenced (not authorised, the cluster unreachable
            or refusing); names the id and the broker's reason.
    """
    clients = ConfluentClients()
    for transactional_id in transactional_ids:
        producer = clients.producer(
            {
                **client_config,
                "transactional.id": transactional_id,
                "client.id": f"copycat-fencing-{transactional_id}",
            }
        )
        try:
            producer.init_transactions(timeout_s)
        except KafkaException as exc:
            raise wrap_kafka_error(
                exc, f"could not fence out the producers of transactional id {transactional_id!r}"
            ) from exc
        finally:
            producer.purge()
        log.info("fenced out older producers of transactional id %s", transactional_id)


class StandaloneFencing:
    """Zombie fencing in a standalone worker, one connector's task generation at a time.

    :meth:`new_generation` is called (on the connector's operation thread) when its task
    configs are written; :meth:`before_producer` by each of its exactly-once tasks (on the
    task's thread) before its producer starts: the first task of a generation fences the
    previous generation's tasks.
    """

    def __init__(self, transactional_id: Callable[[str, int], str]) -> None:
        self._transactional_id = transactional_id
        self._lock = threading.Lock()
        self._generation: dict[str, int] = {}
        self._tasks: dict[str, int] = {}  # task count of the current generation
        self._fenced: dict[str, tuple[int, int]] = {}  # -> (generation, its task count)

    def new_generation(self, connector: str, tasks: int) -> int:
        with self._lock:
            generation = self._generation.get(connector, 0) + 1
            self._generation[connector] = generation
            self._tasks[connector] = tasks
            return generation

    def check_current(self, connector: str, generation: int) -> None:
        """Raises ConnectException if ``generation`` is no longer the connector's newest."""
        with self._lock:
            if self._generation.get(connector) != generation:
                raise ConnectException(
                    f"connector {connector}: newer task configs were written while its task "
                    "started; this generation of tasks is out of date"
                )

    def before_producer(
        self, connector: str, generation: int, client_config: Mapping[str, Any]
    ) -> None:
        """Fence the tasks of the generation last fenced for, unless already done.

        Raises:
            ConnectException: the task's generation is not current any more, or fencing
                failed.
        """
        self.check_current(connector, generation)
        with self._lock:
            fenced = self._fenced.get(connector)
            if fenced is not None and fenced[0] == generation:
                return
            count = self._tasks[connector]
            previous = fenced[1] if fenced is not None else 0
            # One task before and after: its new producer fences the old one by itself.
            if previous and not (previous == 1 and count == 1):
                fence_producers(
                    client_config, [self._transactional_id(connector, i) for i in range(previous)]
                )
            self._fenced[connector] = (generation, count)
