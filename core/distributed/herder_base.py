"""What every part of the distributed herder shares: its state, and who may write.

:class:`DistributedHerder` is one object split over a few modules, one concern each, as mixins
over this base (``herder.py`` construction and life cycle, ``rebalancing.py`` the group,
``config_reactions.py`` what config topic changes do here, ``herder_fencing.py`` exactly-once
fencing, ``herder_api.py`` the REST-facing Herder API). Mixins rather than collaborator
objects: the parts share one state (what the leader assigned here, who leads, the config
snapshot, the per-connector operation threads) written by the tick thread and read by every
other thread; collaborators would each reach into the others' attributes, where mixins keep one
object, one set of attributes (declared here, set in ``DistributedHerder.__init__``) and each
module's methods in one place. Each mixin calls only what this base or the modules it builds
on define: base <- fencing <- config reactions <- rebalancing, API <- herder.

Here: the state's declarations, the leader checks (a non-leader's error carries the leader's
URL, REST forwards it there) and the leader-only write with its recovery from a fenced leader
producer.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

import httpx

from core.connect_metrics import RebalanceMetrics
from core.distributed.assignor import Held, IncrementalCooperativeAssignor
from core.distributed.config_store import KafkaConfigStore, PrivilegedWriteError
from core.distributed.fencing import LeaderFencing
from core.distributed.membership import WorkerGroupMember
from core.distributed.offset_store import KafkaOffsetBackingStore
from core.distributed.status_store import KafkaStatusStore
from core.herder import ConflictError, NotFoundError, NotLeaderError, RequestTimeoutError
from core.worker_herder import NOT_FOUND, WorkerHerder, _Runtime
from plugin_api import ConnectException

__all__ = ["NO_LEADER", "DistributedHerderBase"]

log = logging.getLogger("copycat.distributed")

T = TypeVar("T")

NO_LEADER = (
    "Cannot complete request momentarily due to no known leader URL, likely because a "
    "rebalance was underway."
)
_CONFLICT = "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"


class DistributedHerderBase(WorkerHerder):
    """The distributed herder's shared state and leadership checks (see the module docstring).

    Every attribute is set by ``DistributedHerder.__init__`` (and ``start()`` for the stores).
    Group state (``_assigned`` ... ``_rebalances``) is written by the tick thread only, except
    ``_assigned``, which connector operation threads also narrow (a deleted connector, a task
    count that shrank): every change of it is made under ``_assigned_lock``. ``_members`` is
    written by kafka-python's IO thread while it assigns, as the leader.
    """

    group_id: str
    url: str
    worker_id: str
    exactly_once_source: str
    fencing: LeaderFencing | None
    member: WorkerGroupMember | None
    statuses: KafkaStatusStore | None
    offset_backing: KafkaOffsetBackingStore | None
    assignor: IncrementalCooperativeAssignor
    task_starts: int
    task_stops: int
    _stopping: threading.Event
    _wakeup: threading.Event
    _last_tick: float  # when the tick thread last went round (health checks read it)
    _assigned: Held
    _assigned_lock: threading.Lock
    _generation: int
    _last_completed_generation: int
    _leader_url: str | None
    _is_leader: bool
    _rejoin_at: float | None
    _rebalances: int
    rebalance_metrics: RebalanceMetrics
    _members: dict[str, tuple[str, Held]]
    _leader_writes: threading.RLock
    # Every request this worker sends another (a REST request forwarded, task configs and
    # fencing requests to the leader) goes through this one client, closed by shutdown().
    internal_http: httpx.Client

    # -- where work runs, who leads --------------------------------------------------------------

    def _owner_url(self, connector: str, task: int | None = None) -> str | None:
        for url, total in list(self._members.values()):
            if (task is None and connector in total.connectors) or (connector, task) in total.tasks:
                return url
        return None

    def _request_rebalance(self, why: str) -> None:
        """Rejoin the group: work to spread changed. Every worker asks, as it reads the
        change from the config topic (Kafka's ``needsReconfigRebalance``), so the rebalance
        completes once all have read it, not at the followers' next heartbeats."""
        if self.member is not None:
            log.debug("requesting a rebalance: %s", why)
            self.member.request_rejoin()
            self._wakeup.set()

    def _task_runs_here(self, name: str, task: int) -> bool:
        worker = self.worker
        connector = worker.connectors.get(name) if worker is not None else None
        return connector is not None and task in connector.tasks

    # -- leadership ----------------------------------------------------------------------------

    def _require_leader(self, what: str) -> None:
        if self._is_leader and self.member is not None:
            return
        if not self._leader_url:
            raise ConflictError(NO_LEADER)
        raise NotLeaderError(f"Cannot {what}: this worker is not the leader", self._leader_url)

    def _leader_write(
        self, what: str, write: Callable[[], T], check: Callable[[], None] | None = None
    ) -> T:
        """A leader-only write; returns what ``write`` returns.

        The leader's writes run one at a time, each with ``check`` right before it, on the
        config topic read to its end (every earlier write in it): a check and its write are
        one step, as on Kafka's single herder thread. Without that, two concurrent creates of
        one name both answered 201 and two deletes both 204 (a create/delete storm through
        every worker). ``check`` raises to refuse (AlreadyExistsError, NotFoundError).

        A leader whose transactional producer was fenced (by a zombie leader, or by a
        transient error that made librdkafka give the producer up) fails this write and claims
        its write privileges again for the next one, as Kafka's leader does once it sees it is
        still the leader: a request retried by the user then succeeds."""
        self._require_leader(what)
        configs = self._kafka_configs()
        with self._leader_writes:
            self._read_configs(what)
            if check is not None:
                check()
            try:
                if not configs.has_write_privileges():
                    configs.claim_write_privileges()
                    log.info("leader: claimed write privileges on the config topic again")
                return write()
            except PrivilegedWriteError as exc:
                log.warning("%s: %s", what, exc)
                raise ConflictError(_CONFLICT) from None

    def _stopped(self, name: str) -> bool:
        """STOPPED, and no task configs (Kafka's check before offsets change): the leader wrote
        them empty, so no task of the connector is meant to run anywhere."""
        return super()._stopped(name) and not self._task_configs(name)

    def _read_configs(self, what: str) -> None:
        """Read the config topic to its end before a leader's check and write.

        Raises:
            RequestTimeoutError: it could not be read (the Kafka cluster unreachable, most
                likely); nothing was written.
        """
        try:
            self._kafka_configs().refresh()
        except ConnectException as exc:
            raise RequestTimeoutError(
                f"Request timed out: cannot {what}: {exc}; nothing was written, try again once "
                "the Kafka cluster is reachable"
            ) from exc

    def _kafka_configs(self) -> KafkaConfigStore:
        configs = self.configs
        if not isinstance(configs, KafkaConfigStore):
            raise ConflictError(
                "Cannot complete request because the worker is still starting up or shutting down"
            )
        return configs

    def _known(self, name: str, missing: str = NOT_FOUND) -> None:
        """Raise NotFoundError(``missing``, formatted with the name) for a connector the config
        topic does not hold: the wording is that of Kafka's distributed herder for the same
        request, which differs from one request to another."""
        self._worker()
        if not self.configs.snapshot().contains(name):
            raise NotFoundError(missing.format(name=name))

    def _get(self, name: str, missing: str = NOT_FOUND) -> _Runtime:
        self._known(name, missing)
        with self._lock:
            return self._runtime.setdefault(name, _Runtime(self._kind(self._config(name))))
