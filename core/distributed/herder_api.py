"""The distributed herder's REST-facing Herder API: answers from this worker's copies of the
internal topics, writes through the leader.

* **Writes only the leader makes** (create, reconfigure, delete, stop, restarts, offsets)
  raise :class:`~core.herder.NotLeaderError` on any other worker; REST forwards them to the
  leader's URL (``?forward=`` as Kafka). With no known leader (a rebalance), 409. Pause and
  resume write the target state from any worker, as Kafka does.
* **Reads** (connectors, configs, statuses, active topics) come from this worker's copies of
  the config and status topics, so every worker answers the same.

One concern of the herder split (see :mod:`core.distributed.herder_base`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from functools import partial
from typing import Any

from core.distributed.config_reactions import ConfigReactions
from core.distributed.config_store import RestartRequest
from core.distributed.herder_base import NO_LEADER
from core.distributed.membership import COORDINATOR_UNREACHABLE
from core.distributed.rebalancing import TICK_S
from core.herder import (
    HEALTHY,
    AlreadyExistsError,
    ConflictError,
    Health,
    NotFoundError,
    NotLeaderError,
)
from core.status import State
from core.stores.config import TargetState
from core.worker_herder import UNKNOWN_TO_RESTART, UNKNOWN_TO_TARGET, _Runtime

__all__ = ["HerderApi"]

# Kafka's distributed herder words "no such connector" per request: UNKNOWN_TO_RESTART for the
# restarts (both kinds) and a task restart, UNKNOWN_TO_TARGET for pause, resume and stop; GET,
# config and delete say NOT_FOUND (the default).


class HerderApi(ConfigReactions):
    """The :class:`~core.herder.AbstractHerder` API of a distributed worker (see the module
    docstring). Called by REST handler threads; operations on one connector that run here
    go to that connector's operation thread."""

    _ready: threading.Event
    _tick_thread: threading.Thread | None
    _version: tuple[str, str]
    _cluster_id: str | None

    # -- Herder: server ----------------------------------------------------------------------------

    def ready(self) -> bool:
        return self._ready.is_set()

    def health(self, timeout_s: float) -> Health:
        """KIP-1017 for a worker whose requests need its group: Kafka runs the check on the
        herder thread, which blocks while the worker joins, so a worker that cannot join is
        still starting (503) if it never was in its group, and unhealthy (500) once it has
        been out of it longer than rebalance.timeout.ms (see :meth:`_rejoin_bound_s`), or
        unable to reach its group coordinator longer than ``timeout_s``. It joins
        only once its plugins are installed (the bundled ones' first-time install): starting
        until then."""
        if not self.ready():
            return Health("starting", self._installing_bundled())
        thread = self._tick_thread
        if (
            thread is None
            or not thread.is_alive()
            or time.monotonic() - self._last_tick >= max(timeout_s, 10 * TICK_S)
        ):
            return Health("unhealthy", "The worker's herder tick thread is not running.")
        member = self.member
        if member is None:
            return Health("starting")
        outside = member.outside_group()
        if outside is None:
            return HEALTHY
        since_s, reason = outside
        where = f"The worker is not a member of its group {self.group_id}: {reason}"
        if self._last_completed_generation < 0:
            return Health("starting", f"{where} (for {since_s:.0f} s; it has never joined it).")
        # Cut off from the coordinator, Kafka's herder thread blocks looking for it, so its
        # check times out: unhealthy after timeout_s, not after a rebalance's bound.
        bound_s = timeout_s if reason == COORDINATOR_UNREACHABLE else self._rejoin_bound_s()
        if since_s > bound_s:
            return Health("unhealthy", f"{where} (for {since_s:.0f} s).")
        return HEALTHY

    def _rejoin_bound_s(self) -> float:
        """How long a worker that was in its group may be out of it and still be healthy:
        rebalance.timeout.ms, the longest the group coordinator waits for its members to
        rejoin a rebalance. Out longer, the worker is not in a rebalance that will complete
        (refused by the broker, the coordinator unreachable) and cannot serve requests that
        need a leader."""
        return int(self.config.get("rebalance.timeout.ms")) / 1000

    def server_info(self) -> dict[str, Any]:
        return {
            "version": self._version[0],
            "commit": self._version[1],
            "kafka_cluster_id": self._cluster_id,
        }

    # -- Herder: connectors ----------------------------------------------------------------------

    def connectors(self) -> list[str]:
        self._worker()
        return self.configs.snapshot().connectors()

    def create_connector(
        self,
        name: str,
        config: Mapping[str, str],
        initial_state: TargetState | None = None,
    ) -> dict[str, Any]:
        config = self._named(name, config)
        self._worker()
        # Whether it exists is the leader's check, right before its write (as in Kafka): this
        # worker's copy may not have read a deletion yet, and answered 409 for a name free.
        self.ensure_valid(config)  # plugin code: before the leader's write, never during
        self._require_leader("create a connector")

        def create() -> dict[str, Any]:
            self.configs.put_connector_config(name, config, initial_state)
            return self._info(name, self._get(name))

        return self._leader_write("create a connector", create, partial(self._absent, name))

    def _absent(self, name: str) -> None:
        if self.configs.snapshot().contains(name):
            raise AlreadyExistsError(f"Connector {name} already exists")

    def _put_config(
        self, name: str, config: Mapping[str, str], *, must_exist: bool
    ) -> tuple[bool, dict[str, Any]]:
        """A config PUT (or, with ``must_exist``, a PATCH: one that finds the connector deleted
        since it read the config is a 404, never a create of the patched config)."""
        config = self._named(name, config)
        self._worker()
        self.ensure_valid(config)
        self._require_leader("write a connector config")

        def put() -> tuple[bool, dict[str, Any]]:
            created = not self.configs.snapshot().contains(name)
            self.configs.put_connector_config(name, config, None)
            return created, self._info(name, self._get(name))

        check = partial(self._known, name) if must_exist else None
        return self._leader_write("write a connector config", put, check)

    def delete_connector(self, name: str) -> None:
        self._worker()  # whether it exists: the leader's check (see create_connector)
        self._leader_write(
            "delete a connector",
            lambda: self.configs.remove_connector_config(name),
            partial(self._known, name),
        )

    def set_cluster_logger_level(self, namespace: str, level: str) -> None:
        """``PUT /admin/loggers/<namespace>?scope=cluster``: every worker applies it when it
        reads the record, this one included."""
        self._worker()
        self._kafka_configs().put_logger_level(namespace, level)

    def _deployed_for_status(self, name: str, missing: str) -> _Runtime:
        """Statuses come from the status topic: any connector in the config topic has them."""
        if not self.configs.snapshot().contains(name):
            raise NotFoundError(missing)
        return self._get(name)

    # -- Herder: restart, pause, resume, stop ----------------------------------------------------

    def restart_connector(
        self, name: str, include_tasks: bool, only_failed: bool
    ) -> dict[str, Any] | None:
        self._known(name, UNKNOWN_TO_RESTART)
        if not include_tasks and not only_failed:
            # Kafka's legacy restart: the worker running the instance restarts it.
            if name in self._assigned.connectors:
                self._run(name, "restart", partial(self._restart_instance, name))
                return None
            owner = self._owner_url(name) if self._is_leader else self._leader_url
            if not owner:
                raise ConflictError(NO_LEADER)
            raise NotLeaderError(f"Connector {name} does not run on this worker", owner)
        status = self.connector_status(name)
        self._leader_write(
            "restart a connector",
            lambda: self._kafka_configs().put_restart_request(
                RestartRequest(name, only_failed, include_tasks)
            ),
            partial(self._known, name, UNKNOWN_TO_RESTART),
        )
        restart_connector = not only_failed or status["connector"]["state"] == "FAILED"
        if restart_connector:
            status["connector"]["state"] = State.RESTARTING.value
        for entry in status["tasks"]:
            if include_tasks and (not only_failed or entry["state"] == "FAILED"):
                entry["state"] = State.RESTARTING.value
        return status

    def restart_task(self, name: str, task: int) -> None:
        self._known(name, UNKNOWN_TO_RESTART)
        if not 0 <= task < len(self._task_configs(name)):
            raise NotFoundError(f"Unknown task: {name}-{task}")
        if (name, task) in self._assigned.tasks:
            self._run(name, "task restart", partial(self._restart_one_task, name, task))
            return
        owner = self._owner_url(name, task) if self._is_leader else self._leader_url
        if not owner:
            raise ConflictError(NO_LEADER)
        raise NotLeaderError(f"Task {name}-{task} does not run on this worker", owner)

    def pause_connector(self, name: str) -> None:
        self._known(name, UNKNOWN_TO_TARGET)
        self.configs.put_target_state(name, TargetState.PAUSED)

    def resume_connector(self, name: str) -> None:
        self._known(name, UNKNOWN_TO_TARGET)
        self.configs.put_target_state(name, TargetState.STARTED)

    def stop_connector(self, name: str) -> None:
        """Leader: no task configs, then target state STOPPED (Kafka's order, KIP-875)."""
        self._known(name, UNKNOWN_TO_TARGET)

        def stop() -> None:
            self.configs.put_task_configs(name, [])
            self.configs.put_target_state(name, TargetState.STOPPED)

        self._leader_write("stop a connector", stop, partial(self._known, name, UNKNOWN_TO_TARGET))

    # -- Herder: offsets (KIP-875), on the leader ------------------------------------------------

    def alter_connector_offsets(self, name: str, offsets: list[dict[str, Any]]) -> str:
        self._worker()
        self._require_leader("alter connector offsets")  # before the leader's existence check
        self._read_configs("alter connector offsets")
        self._known(name)
        return super().alter_connector_offsets(name, offsets)

    def reset_connector_offsets(self, name: str) -> str:
        self._worker()
        self._require_leader("reset connector offsets")
        self._read_configs("reset connector offsets")
        self._known(name)
        return super().reset_connector_offsets(name)

    # -- Herder: active topics (KIP-558), from the status topic -----------------------------------

    def active_topics(self, name: str) -> list[str]:
        local = super().active_topics(name)
        statuses = self.statuses
        return sorted(set(local) | set(statuses.topics_of(name) if statuses else []))

    def reset_active_topics(self, name: str) -> None:
        super().reset_active_topics(name)
        if self.statuses is not None:
            self.statuses.reset_topics(name)
