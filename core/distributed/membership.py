"""The worker's membership in its Connect group, through kafka-python's group coordinator.

Kafka's group coordinator (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) decides who is in the
group and who leads; the leader computes the assignment. We do not implement that protocol:
:class:`WorkerGroupMember` extends **kafka-python's** ``BaseCoordinator`` (the generic
member of a Kafka group, what its ``ConsumerCoordinator`` extends for consumer groups; see
docs/architecture.md for why this client) with the worker protocol of
:mod:`core.distributed.protocol`, as Kafka Connect's WorkerCoordinator extends the Java
client's AbstractCoordinator.

Threads:

* kafka-python's **IO thread** (one per member) sends heartbeats in the background and runs
  the join: :meth:`_perform_assignment` (leader only) and :meth:`_on_join_complete_async`
  run there and must not block: the first asks the herder's ``assign`` callback, which
  computes from the config snapshot in memory; the second only queues the assignment;
* the herder's **tick thread** calls :meth:`poll` (join when needed, prove liveness) and takes
  assignments with :meth:`take_assignment`. It must call :meth:`poll` at least every
  ``rebalance.timeout.ms``, or the member leaves the group (Kafka's poll timeout).

A member that cannot find its group coordinator within ``heartbeat.interval.ms`` gives up its
assignment (the ``revoke`` callback, on the tick thread) and rejoins, as Kafka Connect's
WorkerCoordinator.poll() does: cut off from the coordinator, it cannot know whether the group
has already given its work to someone else, and running it anyway runs it twice.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka import errors as kafka_errors
from kafka.coordinator.base import BaseCoordinator
from kafka.net.compat import KafkaNetClient

from core.distributed.assignor import Held
from core.distributed.protocol import (
    PROTOCOL_NAME,
    PROTOCOL_TYPE,
    Assignment,
    MemberMetadata,
    ProtocolError,
)
from core.kafka import kafka_python_settings
from plugin_api import ConnectException

__all__ = [
    "COORDINATOR_UNREACHABLE",
    "GroupSettings",
    "JoinedGroup",
    "WorkerGroupMember",
    "kafka_python_settings",
]

log = logging.getLogger("copycat.distributed.membership")

# How long start() waits for the first connection to the cluster.
BOOTSTRAP_TIMEOUT_MS = 30_000
# Back-off after a join the broker refused for good (INCONSISTENT_GROUP_PROTOCOL: Kafka
# Connect workers still in the group; a bad session timeout): the cause is usually fixed by
# someone else (the old workers stopping), so the worker keeps trying, slowly.
FATAL_JOIN_BACKOFF_S = 2.0
# Why a member is out of its group once it has looked for its coordinator for
# heartbeat.interval.ms in vain (see WorkerGroupMember.outside_group()).
COORDINATOR_UNREACHABLE = "the group coordinator is unreachable"
# How long stop() gives the IO thread to send LeaveGroup and close.
LEAVE_TIMEOUT_MS = 5_000


@dataclass(frozen=True)
class GroupSettings:
    group_id: str
    session_timeout_ms: int
    heartbeat_interval_ms: int
    rebalance_timeout_ms: int
    client: Mapping[str, Any]  # kafka-python connection settings (kafka_python_settings())


@dataclass(frozen=True)
class JoinedGroup:
    """One completed rebalance as this member saw it."""

    generation: int
    member_id: str
    assignment: Assignment
    is_leader: bool


class _Coordinator(BaseCoordinator):  # type: ignore[misc]  # kafka-python has no annotations
    """kafka-python's group member speaking the worker protocol; see the module docstring."""

    def __init__(self, client: KafkaNetClient, member: WorkerGroupMember, **configs: Any) -> None:
        super().__init__(client, **configs)
        self._member = member

    def protocol_type(self) -> str:
        return PROTOCOL_TYPE

    def group_protocols(self) -> list[tuple[str, bytes]]:
        self._member.join_sent()  # before the metadata: it shows every request counted
        return [(PROTOCOL_NAME, self._member.metadata().encode())]

    def _perform_assignment(
        self, leader_id: str, protocol: str, members: list[Any]
    ) -> dict[str, bytes]:
        decoded: dict[str, MemberMetadata] = {}
        for member in members:
            try:
                decoded[member.member_id] = MemberMetadata.decode(member.metadata)
            except ProtocolError as exc:
                log.error("member %s sent unreadable metadata: %s", member.member_id, exc)
                # Sessioned: a member nobody can read must not turn request signing off.
                decoded[member.member_id] = MemberMetadata("", -1, Held(), sessioned=True)
        generation = self._generation.generation_id
        assignments = self._member.assign(leader_id, decoded, generation)
        return {member_id: a.encode() for member_id, a in assignments.items()}

    async def _on_join_complete_async(
        self, generation: int, member_id: str, protocol: str, member_assignment_bytes: bytes
    ) -> None:
        try:
            assignment = Assignment.decode(member_assignment_bytes)
        except ProtocolError as exc:
            log.error("unreadable assignment in generation %d: %s; rejoining", generation, exc)
            self.request_rejoin()
            return
        is_leader = assignment.leader == member_id
        self._member.joined(JoinedGroup(generation, member_id, assignment, is_leader))
        if self._member.asked_since_join_sent():
            # kafka-python has just cleared its rejoin flag: a request made after this join
            # went out would be lost, though the round's metadata predates what it changed.
            log.info("a rebalance was requested during generation %d's join; rejoining", generation)
            self.request_rejoin()


class WorkerGroupMember:
    """This worker in its group (see the module docstring for threads).

    Args:
        settings: Group id, timeouts and connection settings.
        metadata: What this worker tells the group on each join (its URL, config offset, the
            work it runs). Called on the IO thread.
        assign: The leader's assignment: ``(leader id, members' metadata, generation)`` to an
            :class:`Assignment` per member. Called on the IO thread; must not block.
        revoke: Give up everything assigned so far (stop it all here), because the group
            coordinator was unreachable for ``heartbeat.interval.ms``; called on the tick
            thread, inside :meth:`poll`, at most once per completed rebalance taken.
    """

    def __init__(
        self,
        settings: GroupSettings,
        metadata: Callable[[], MemberMetadata],
        assign: Callable[[str, dict[str, MemberMetadata], int], dict[str, Assignment]],
        revoke: Callable[[], None] = lambda: None,
    ) -> None:
        self.settings = settings
        self.metadata = metadata
        self.assign = assign
        self.revoke = revoke
        # Whether this member holds an assignment it has not given up (Kafka's
        # assignmentSnapshot != null): set when a rebalance is taken, cleared by a revocation.
        self._holds_assignment = False
        self._joined: queue.Queue[JoinedGroup] = queue.Queue()
        self._client: KafkaNetClient | None = None
        self._coordinator: _Coordinator | None = None
        self._retry_after = 0.0
        self._lock = threading.Lock()
        # Rebalances asked for (request_rejoin), and how many of them the last JoinGroup sent
        # had seen: one asked for later gets another round once that one completes.
        self._rejoin_requests = 0
        self._requests_seen_by_join = 0
        # Since when (monotonic) and why this worker is not a member of a stable group; None
        # while it is. One tuple, replaced whole: the tick thread writes it, /health reads it.
        self._outside: tuple[float, str] | None = (time.monotonic(), "joining")

    def start(self) -> None:
        """Connect to the cluster (the join itself happens in :meth:`poll`).

        Raises:
            ConnectException: the cluster did not answer within BOOTSTRAP_TIMEOUT_MS.
        """
        client = KafkaNetClient(
            client_id=f"copycat-{self.settings.group_id}", **self.settings.client
        )
        client._net.start()  # kafka-python's IO thread: heartbeats run there
        try:
            client._manager.bootstrap(BOOTSTRAP_TIMEOUT_MS)
        except kafka_errors.KafkaError as exc:
            client._net.stop()
            raise ConnectException(
                f"worker group {self.settings.group_id}: cannot reach the Kafka cluster ({exc})"
            ) from exc
        self._client = client
        self._coordinator = _Coordinator(
            client,
            self,
            group_id=self.settings.group_id,
            session_timeout_ms=self.settings.session_timeout_ms,
            heartbeat_interval_ms=self.settings.heartbeat_interval_ms,
            max_poll_interval_ms=self.settings.rebalance_timeout_ms,
            retry_backoff_ms=100,
            api_version=client._manager.broker_version,
        )

    def joined(self, event: JoinedGroup) -> None:
        """From the IO thread: a rebalance completed (queued for the tick thread)."""
        self._joined.put(event)

    def poll(self, timeout_s: float) -> None:
        """Tick thread: join the group if needed (waiting up to ``timeout_s``), prove liveness.
        While :attr:`joining` after it returns, call it again without a pause.

        Never raises for the group's own troubles (coordinator moves, refused joins): they
        are logged and retried on the next call.
        """
        coordinator = self._coordinator
        if coordinator is None:
            return
        if coordinator.coordinator_unknown():
            self._find_coordinator(coordinator)
        try:
            coordinator.poll_heartbeat()
        except kafka_errors.KafkaError as exc:
            log.warning("worker group %s: heartbeat failed: %s", self.settings.group_id, exc)
        try:
            self._join_if_needed(coordinator, timeout_s)
        finally:
            self._note_membership()

    def _find_coordinator(self, coordinator: _Coordinator) -> None:
        """Kafka Connect's WorkerCoordinator.poll(): look for the coordinator for up to
        heartbeat.interval.ms; not found, revoke the whole assignment and rejoin. Meanwhile
        the group may have evicted this member (its session expired) and given its work to
        others, which, once the coordinator is back, start it while it still runs here: a
        2-worker cluster whose broker was down 30 s ran a source task on both workers."""
        timeout_ms = self.settings.heartbeat_interval_ms
        try:
            found = coordinator.ensure_coordinator_ready(timeout_ms=timeout_ms)
        except kafka_errors.KafkaError as exc:
            log.debug("worker group %s: coordinator lookup failed: %s", self.settings.group_id, exc)
            found = False
        if found:
            return
        self._outside_because(COORDINATOR_UNREACHABLE)
        coordinator.request_rejoin()  # Kafka: a revoked (null) assignment means rejoin
        if not self._holds_assignment:
            return
        self._holds_assignment = False
        log.info(
            "worker group %s: broker coordinator was unreachable for %d ms; revoking the "
            "previous assignment to avoid running tasks while not being a member of the group",
            self.settings.group_id,
            timeout_ms,
        )
        self.revoke()

    def _join_if_needed(self, coordinator: _Coordinator, timeout_s: float) -> None:
        if not coordinator.need_rejoin():
            return
        if time.monotonic() < self._retry_after:
            return
        try:
            coordinator.ensure_active_group(timeout_ms=int(timeout_s * 1000))
        except kafka_errors.InconsistentGroupProtocolError:
            self._retry_after = time.monotonic() + FATAL_JOIN_BACKOFF_S
            self._outside_because(
                "the broker refused the join (INCONSISTENT_GROUP_PROTOCOL): members with "
                "another protocol are in the group, e.g. Kafka Connect workers"
            )
            log.error(
                "worker group %s: the broker refused the join (INCONSISTENT_GROUP_PROTOCOL): "
                "members with another protocol are in the group, e.g. Kafka Connect workers "
                "that are still running; retrying every %g s",
                self.settings.group_id,
                FATAL_JOIN_BACKOFF_S,
            )
        except kafka_errors.KafkaError as exc:
            self._retry_after = time.monotonic() + FATAL_JOIN_BACKOFF_S
            self._outside_because(f"the join failed: {exc}")
            log.error("worker group %s: join failed: %s", self.settings.group_id, exc)

    def _outside_because(self, reason: str) -> None:
        outside = self._outside
        self._outside = (outside[0] if outside is not None else time.monotonic(), reason)

    def _note_membership(self) -> None:
        """Tick thread, after each poll: start or end the current time outside the group."""
        if not self.rebalancing:
            self._outside = None
        elif self._outside is None:
            self._outside = (time.monotonic(), "rejoining")

    def outside_group(self) -> tuple[float, str] | None:
        """For how many seconds, and why, this worker has not been a member of a stable
        group (a join in flight, refused or failing); None while it is one (any thread)."""
        outside = self._outside
        if outside is None:
            return None
        return time.monotonic() - outside[0], outside[1]

    def take_assignment(self) -> JoinedGroup | None:
        """The next completed rebalance, if any (tick thread)."""
        try:
            joined = self._joined.get_nowait()
        except queue.Empty:
            return None
        self._holds_assignment = True
        return joined

    def request_rejoin(self) -> None:
        """Ask for a rebalance at the next :meth:`poll` (any thread). Asked while a join is in
        flight, after its JoinGroup went out with this member's metadata (which may not show
        what the caller changed), it gets a round of its own after that one."""
        with self._lock:
            self._rejoin_requests += 1
        if self._coordinator is not None:
            self._coordinator.request_rejoin()

    def join_sent(self) -> None:
        """IO thread: a JoinGroup is going out; its metadata shows the requests made so far."""
        with self._lock:
            self._requests_seen_by_join = self._rejoin_requests

    def asked_since_join_sent(self) -> bool:
        """IO thread: whether a rebalance was requested after the last JoinGroup went out."""
        with self._lock:
            return self._rejoin_requests != self._requests_seen_by_join

    @property
    def joining(self) -> bool:
        """Whether a join this member sent is still in flight: then :meth:`poll` must be
        called again at once. kafka-python completes a join only inside a call that awaits
        it; one that completes between two calls is discarded, and the next call sends
        another JoinGroup (a new round for the whole group). A leader whose rounds kept
        ending ~1 s after its join, inside the tick thread's pause, rejoined 11 times in a
        row this way (13 s) before one ended while it polled."""
        coordinator = self._coordinator
        task = coordinator._join_task if coordinator is not None else None
        return task is not None and not task.is_done

    @property
    def rebalancing(self) -> bool:
        coordinator = self._coordinator
        return coordinator is None or coordinator.need_rejoin() or not coordinator.stable()

    @property
    def generation(self) -> int:
        coordinator = self._coordinator
        return coordinator._generation.generation_id if coordinator is not None else -1

    @property
    def member_id(self) -> str:
        coordinator = self._coordinator
        return coordinator._generation.member_id if coordinator is not None else ""

    def stop(self) -> None:
        """Leave the group (the others rebalance at once) and close the connections."""
        coordinator, self._coordinator = self._coordinator, None
        client, self._client = self._client, None
        if coordinator is not None:
            try:
                coordinator.close(timeout_ms=LEAVE_TIMEOUT_MS)
            except Exception as exc:  # noqa: BLE001 - leaving is best effort
                log.warning("worker group %s: leaving failed: %s", self.settings.group_id, exc)
        if client is not None:
            # The manager first: it ends kafka-python's metadata refresh loop, which otherwise
            # outlives the client and logs an ERROR (a dead weak reference) at every shutdown.
            client._manager.close()
            client._net.stop(LEAVE_TIMEOUT_MS)
