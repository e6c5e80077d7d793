"""Zombie fencing in a distributed cluster (KIP-618), as Kafka's DistributedHerder does it.

* **The leader fences, once per generation of task configs.** Task configs written since the
  connector's last task count record (``tasks-fencing-<name>``) are *pending fencing*. The
  first exactly-once task of the new generation to start asks the leader
  (``PUT /connectors/<name>/fence``, forwarded like any leader request); the leader fences the
  transactional ids of the generation last fenced for (``task-count`` of them), then writes a
  task count record with the new generation's size, in a leader transaction. With no record
  yet (the connector never ran exactly-once) nothing is fenced, and with one task before and
  after the new task's own producer fences the old one: only the record is written. Rounds on
  one connector run one at a time; a second request waits and then finds nothing pending.
* **A task checks twice** (:class:`TaskFencing`): before its producer starts, that fencing
  was done (asking the leader if not); after, that its generation is still the newest and the
  task still assigned to this worker, else it fails: a newer generation has already fenced
  it, or will.

A task that cannot be fenced for (the leader refuses or the fencing request fails) fails with
the reason, and can be restarted once the cause is fixed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import httpx

from core.distributed.config_store import KafkaConfigStore
from core.fencing import FENCING_TIMEOUT_S, fence_producers
from core.task_specs import task_transactional_id
from plugin_api import ConnectException

__all__ = ["LeaderFencing", "TaskFencing"]

log = logging.getLogger("copycat.distributed.fencing")

# Pause between two fencing requests to a leader that answered 409 (a rebalance) or could
# not be reached: it usually has an answer within a second.
FENCE_RETRY_S = 0.5


class LeaderFencing:
    """The leader's rounds of zombie fencing (see the module docstring). Thread-safe."""

    def __init__(
        self,
        configs: KafkaConfigStore,
        group_id: str,
        write: Callable[[str, Callable[[], None]], None],
    ) -> None:
        """``write(what, fn)`` runs a leader-only write (the herder's ``_leader_write``)."""
        self.configs = configs
        self.group_id = group_id
        self._write = write
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _lock_of(self, connector: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(connector, threading.Lock())

    def fence(self, connector: str, client_config: Mapping[str, Any]) -> None:
        """Fence the connector's older task generations if its task configs are pending
        fencing, then record the current generation's task count.

        Raises:
            ConnectException: fencing failed, or the task configs changed meanwhile.
        """
        with self._lock_of(connector):
            snapshot = self.configs.refresh()
            state = self.configs.fencing_state(connector)
            if not state.pending:
                return
            count = len(snapshot.tasks(connector))
            previous = state.task_count_record
            if previous is not None and not (previous == 1 and count == 1):
                ids = [
                    task_transactional_id(self.group_id, connector, task)
                    for task in range(previous)
                ]
                log.info(
                    "connector %s: fencing out %d tasks of its previous generation before %d "
                    "new ones start",
                    connector,
                    previous,
                    count,
                )
                fence_producers(client_config, ids)
            self.configs.refresh()
            if self.configs.fencing_state(connector).generation != state.generation:
                raise ConnectException(
                    f"connector {connector}: its task configs changed while its older tasks "
                    "were fenced out; the new ones fence again when they start"
                )
            self._write(
                "write a task count record",
                lambda: self.configs.put_task_count_record(connector, count),
            )


class TaskFencing:
    """One exactly-once task's checks around its producer start (called on the task's
    thread by :func:`core.runtime.build.build_task`).

    Args:
        configs: The worker's config topic store.
        connector, task: Which task.
        generation: The connector's task config generation the task was started for.
        fence: Runs a round of fencing on the leader (directly, or by a REST request).
        assigned: Whether the task is still assigned to this worker.
    """

    def __init__(
        self,
        configs: KafkaConfigStore,
        connector: str,
        task: int,
        generation: int,
        fence: Callable[[], None],
        assigned: Callable[[], bool],
    ) -> None:
        self.configs = configs
        self.connector = connector
        self.task = task
        self.generation = generation
        self._fence = fence
        self._assigned = assigned

    def before_producer(self) -> None:
        self.configs.refresh()
        if not self.configs.fencing_state(self.connector).pending:
            return
        try:
            self._fence()
        except ConnectException as exc:
            raise ConnectException(
                f"task {self.connector}-{self.task} cannot start: the older generations of "
                f"connector {self.connector}'s tasks could not be fenced out ({exc})"
            ) from exc

    def after_producer(self) -> None:
        self.configs.refresh()
        name = f"{self.connector}-{self.task}"
        if self.configs.fencing_state(self.connector).generation != self.generation:
            raise ConnectException(
                f"task {name} is out of date: newer task configs of connector "
                f"{self.connector} were written while it started, and their tasks fence it out"
            )
        if not self._assigned():
            raise ConnectException(f"task {name} was assigned to another worker while it started")


def request_fencing(
    leader_url: Callable[[], str | None],
    connector: str,
    client: httpx.Client,
    signature_headers: Callable[[bytes], Mapping[str, str]] = lambda body: {},
) -> None:
    """Ask the leader for a round of fencing (``PUT /connectors/<name>/fence``) through
    ``client`` (the worker's own), retrying while no leader is known or it answers 409 (a
    rebalance), for up to FENCING_TIMEOUT_S. ``signature_headers(body)`` signs each attempt
    (KIP-507; the body is empty, as Kafka's).

    Raises:
        ConnectException: the leader refused (its message), or no answer in time.
    """
    deadline = time.monotonic() + FENCING_TIMEOUT_S
    last = "no leader known"
    while time.monotonic() < deadline:
        url = leader_url()
        if url:
            try:
                response = client.put(
                    f"{url}/connectors/{quote(connector, safe='')}/fence",
                    params={"forward": "true"},
                    headers=dict(signature_headers(b"")),
                    timeout=FENCING_TIMEOUT_S,
                )
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 300:
                    return
                try:
                    last = str(response.json().get("message"))
                except ValueError:
                    last = response.text[:500]
                if response.status_code == 403:
                    # A key rotated while this request was under way: sign with the new one.
                    time.sleep(FENCE_RETRY_S)
                    continue
                if response.status_code != 409:
                    raise ConnectException(
                        f"the leader at {url} answered {response.status_code}: {last}"
                    )
        time.sleep(FENCE_RETRY_S)
    raise ConnectException(f"no leader fenced within {FENCING_TIMEOUT_S:g} s (last: {last})")
