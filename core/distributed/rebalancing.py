"""The distributed herder in its group: the tick thread, rebalances, and the leader's assignor.

* **The tick thread** drives the group membership (:mod:`.membership`): it applies each
  completed rebalance (stops what was revoked and waits for it, then queues starts of what was
  assigned), rejoins after a revocation or when the leader says departed workers' work is
  waiting (``scheduled.rebalance.max.delay.ms``), stops everything here when the group
  coordinator is unreachable (``_revoke_all``), now and then publishes the topics this
  worker's tasks used (KIP-558), and on the leader writes a new session key when one is due
  (KIP-507, :mod:`.herder_signing`).
* **kafka-python's IO thread** asks this worker for its join metadata and, on the leader, for
  the assignment: the assignor runs inside the join (:mod:`.assignor`), and nothing there
  may block.

One concern of the herder split (see :mod:`core.distributed.herder_base`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial
from typing import Any

from core.distributed.assignor import Held
from core.distributed.config_reactions import ConfigReactions
from core.distributed.config_store import PrivilegedWriteError
from core.distributed.membership import JoinedGroup
from core.distributed.protocol import (
    ASSIGNMENT_CONFIG_MISMATCH,
    ASSIGNMENT_OK,
    Assignment,
    MemberMetadata,
)
from core.status import State, Status
from core.worker_herder import RECLAIM_MARGIN_S
from plugin_api import ConnectException

__all__ = ["TICK_S", "Rebalancing"]

log = logging.getLogger("copycat.distributed")

# How long the tick thread sleeps when nothing wakes it; also how long poll() may wait for a
# join. A config change or a stop wakes it at once.
TICK_S = 0.2
# Tasks of a connector keep their order; this many seconds between sweeps that publish the
# topics the tasks of this worker used (KIP-558) to the status topic.
TOPIC_SWEEP_S = 5.0


class Rebalancing(ConfigReactions):
    """Group membership applied here (see the module docstring).

    Called by: the tick thread (``_tick_loop`` and what it calls) and kafka-python's IO
    thread (``_metadata``, ``_assign``).
    """

    # -- the tick thread ------------------------------------------------------------------------

    def _tick_loop(self) -> None:
        member = self.member
        assert member is not None
        next_sweep = time.monotonic() + TOPIC_SWEEP_S
        while not self._stopping.is_set():
            self._last_tick = time.monotonic()
            try:
                if member.rebalancing:  # a join is due: the rebalance starts (its metrics)
                    self.rebalance_metrics.rebalance_started()
                member.poll(TICK_S)
                while member.joining and not self._stopping.is_set():
                    self._last_tick = time.monotonic()  # alive: a round takes seconds
                    member.poll(TICK_S)
                while (joined := member.take_assignment()) is not None:
                    self._on_joined(joined)
                if self._rejoin_at is not None and time.monotonic() >= self._rejoin_at:
                    self._rejoin_at = None
                    log.info("scheduled rebalance: departed workers' work may be reassigned")
                    member.request_rejoin()
                if self._is_leader:
                    self._rotate_session_key()
                if time.monotonic() >= next_sweep:
                    next_sweep = time.monotonic() + TOPIC_SWEEP_S
                    self._publish_topics()
            except Exception:  # noqa: BLE001 - the tick thread must survive anything
                log.exception("herder tick failed")
            self._wakeup.wait(TICK_S)
            self._wakeup.clear()

    def _on_joined(self, joined: JoinedGroup) -> None:
        """Apply one completed rebalance (tick thread)."""
        assignment, member = joined.assignment, self.member
        configs = self._kafka_configs()
        assert member is not None
        # Revoked work is stopped in the generation it ran in, as Kafka's onRevoked comes
        # before onAssigned adopts the new one: its UNASSIGNED then hides no RUNNING of the
        # same generation (core/distributed/status_store.py).
        previous = self.statuses.generation if self.statuses is not None else 0
        self._generation = joined.generation
        self._leader_url = assignment.leader_url or None
        self._is_leader = joined.is_leader
        self._set_request_validation(assignment.sessioned)
        if self.statuses is not None:
            self.statuses.generation = joined.generation
        sync_timeout_s = int(self.config.get("worker.sync.timeout.ms")) / 1000
        if assignment.error == ASSIGNMENT_CONFIG_MISMATCH:
            log.info("the leader is behind this worker's config; rejoining after catching up")
            self._catch_up(sync_timeout_s)
            member.request_rejoin()
            return
        if configs.snapshot().offset < assignment.config_offset:
            if not self._catch_up(sync_timeout_s):
                member.request_rejoin()
                return
        if joined.is_leader:
            self._remove_deleted_statuses()
            try:
                configs.claim_write_privileges()
            except PrivilegedWriteError as exc:
                log.error("leader of generation %d: %s", joined.generation, exc)
        else:
            configs.relinquish_write_privileges()
        revoked = assignment.revoked
        with self._assigned_lock:
            self._assigned = self._assigned.minus(revoked).plus(assignment.assigned)
        self._rebalances += 1
        self.rebalance_metrics.rebalance_succeeded(joined.generation, assignment.leader_url or "")
        log.info(
            "rebalance %d done (generation %d, %s): +%d connectors +%d tasks, -%d -%d; "
            "running %d connectors, %d tasks%s",
            self._rebalances,
            joined.generation,
            "leader" if joined.is_leader else f"leader {assignment.leader_url}",
            len(assignment.assigned.connectors),
            len(assignment.assigned.tasks),
            len(revoked.connectors),
            len(revoked.tasks),
            len(self._assigned.connectors),
            len(self._assigned.tasks),
            f"; rejoining in {assignment.delay_ms} ms" if assignment.delay_ms else "",
        )
        if revoked:
            self._stop_revoked(revoked, previous)
            member.request_rejoin()  # cooperative: the revoked work is assigned next round
        for name in sorted(assignment.assigned.connectors):
            self._ops.post(name, "start connector", partial(self._start_connector, name))
        for name, task in sorted(assignment.assigned.tasks):
            self._ops.post(name, f"start task {task}", partial(self._start_task, name, task))
        if assignment.delay_ms > 0:
            self._rejoin_at = time.monotonic() + assignment.delay_ms / 1000
        self._last_completed_generation = joined.generation
        if joined.is_leader and configs.snapshot().offset > assignment.config_offset:
            # A config change (a new connector, new task configs) read after this round was
            # assigned: its rejoin request came while the round was in flight, and completing
            # the round cleared it, so nobody would assign the change. Assign it now.
            log.info("config changed during the rebalance; rebalancing again")
            member.request_rejoin()

    def _remove_deleted_statuses(self) -> None:
        """Leader, after each rebalance: delete the statuses of connectors the config topic no
        longer has and of tasks beyond their connector's task count, as Kafka's leader does
        since KAFKA-9472. A worker removes the statuses of what it stopped itself; a worker
        that was down when the task count shrank (killed, or stopped cleanly, which leaves its
        tasks UNASSIGNED) never does, and their statuses stayed for good. After the
        rebalance, not when the task configs are read: the previous generation may still be
        writing UNASSIGNED for the tasks it stopped."""
        statuses = self.statuses
        if statuses is None:
            return
        snapshot = self._kafka_configs().snapshot()
        for name in statuses.connectors():
            if not snapshot.contains(name):
                log.info("connector %s is deleted: removing its statuses", name)
                statuses.remove_connector(name)
                continue
            count = len(snapshot.tasks(name))
            for task in sorted(t for t in statuses.tasks_of(name) if t >= count):
                log.info("task %s-%d no longer exists: removing its status", name, task)
                statuses.remove_task(name, task)

    def _catch_up(self, timeout_s: float) -> bool:
        try:
            self._kafka_configs().refresh(timeout_s)
            return True
        except ConnectException as exc:
            log.warning("could not catch up with the config topic: %s", exc)
            return False

    def _stop_revoked(self, revoked: Held, generation: int) -> None:
        """Stop revoked work and wait for it: the next owner must not start it while it runs
        here (a source task's last offsets are committed by then). ``generation``: the one
        the work ran in, which its UNASSIGNED statuses carry."""
        worker = self._worker()
        futures: list[Future[None]] = []
        by_connector: dict[str, list[int]] = {}
        for name, task in revoked.tasks:
            by_connector.setdefault(name, []).append(task)
        for name in sorted(set(by_connector) | set(revoked.connectors)):
            self._reclaim_if_stuck(name)
            futures.append(
                self._ops.submit(
                    name,
                    "revoke",
                    partial(
                        self._revoke,
                        name,
                        by_connector.get(name, []),
                        name in revoked.connectors,
                        generation,
                    ),
                )
            )
        deadline = time.monotonic() + worker.graceful_timeout_s * 2 + RECLAIM_MARGIN_S
        for future in futures:
            try:
                future.result(max(0.0, deadline - time.monotonic()))
            except FutureTimeout:
                log.error("revoked work did not stop in time; rejoining regardless")
            except Exception as exc:  # noqa: BLE001
                log.warning("stopping revoked work: %s", exc)

    def _revoke_all(self) -> None:
        """Tick thread: the group coordinator was unreachable for heartbeat.interval.ms
        (:mod:`.membership`), so the group may already have given this worker's work to
        others: stop all of it here. The next rebalance assigns it again (this worker's join
        metadata now says it runs nothing)."""
        with self._assigned_lock:
            held, self._assigned = self._assigned, Held()
        if held:
            self._stop_revoked(held, self.statuses.generation if self.statuses is not None else 0)

    def _revoke(self, name: str, tasks: Sequence[int], instance: bool, generation: int) -> None:
        worker = self._worker()
        here = [task for task in tasks if self._task_runs_here(name, task)]
        # together: one graceful timeout for all of them
        worker.stop_tasks_of(name, here, generation=generation)
        self.task_stops += len(here)
        if instance and worker.instance_running(name):
            self._stop_instance(name)
            worker.status.set_connector(name, Status(State.UNASSIGNED, worker.worker_id))
        elif instance:
            worker.forget_connector(name)  # a FAILED or STOPPED one: its connector-metrics

    # -- group callbacks (kafka-python's IO thread: no blocking) -----------------------------------

    def _metadata(self) -> MemberMetadata:
        snapshot = self.configs.snapshot()
        configured = _configured(snapshot)
        return MemberMetadata(
            self.url, snapshot.offset, self._assigned.within(configured), self._sessioned
        )

    def _assign(
        self, leader_id: str, members: dict[str, MemberMetadata], generation: int
    ) -> dict[str, Assignment]:
        snapshot = self.configs.snapshot()
        leader_url = members[leader_id].url if leader_id in members else self.url
        newest = max((m.config_offset for m in members.values()), default=-1)
        # KIP-507: requests are signed and verified only if every member can (Kafka's
        # coordinator settles on the lowest connect.protocol of the group the same way).
        sessioned = all(m.sessioned for m in members.values())
        if snapshot.offset < newest:
            log.info("leader behind the config topic (%d < %d)", snapshot.offset, newest)
            return {
                m: Assignment(
                    ASSIGNMENT_CONFIG_MISMATCH,
                    leader_id,
                    leader_url,
                    newest,
                    Held(),
                    Held(),
                    0,
                    sessioned,
                )
                for m in members
            }
        plans = self.assignor.assign(
            _configured(snapshot),
            {m: md.running for m, md in members.items()},
            last_completed_generation=self._last_completed_generation,
            generation=generation,
        )
        self._members = {m: (members[m].url, plan.total) for m, plan in plans.items()}
        return {
            m: Assignment(
                ASSIGNMENT_OK,
                leader_id,
                leader_url,
                snapshot.offset,
                plan.assigned,
                plan.revoked,
                plan.delay_ms,
                sessioned,
            )
            for m, plan in plans.items()
        }

    # -- KIP-558 topics, swept by the tick thread ------------------------------------------------

    def _publish_topics(self) -> None:
        worker, statuses = self.worker, self.statuses
        if worker is None or statuses is None:
            return
        snapshot = self.configs.snapshot()
        for name, connector in list(worker.connectors.items()):
            if not snapshot.contains(name):
                continue  # deleted (its topics were tombstoned), not yet removed here
            try:  # one connector's failure must not keep the others' topics unpublished
                first = min(list(connector.tasks), default=0)  # (other threads change it)
                for topic in sorted(worker.task_topics(name)):
                    statuses.put_topic(name, topic, first)
            except Exception:  # noqa: BLE001 - the next sweep tries again
                log.exception("could not record the active topics of connector %s", name)


def _configured(snapshot: Any) -> Held:
    connectors = snapshot.connectors()
    return Held.of(connectors, [(c, i) for c in connectors for i in range(len(snapshot.tasks(c)))])
