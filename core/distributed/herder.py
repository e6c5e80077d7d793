"""Distributed mode's herder: connectors shared by a group of workers, state in Kafka.

:class:`DistributedHerder` is the shared herder logic (:class:`core.worker_herder.WorkerHerder`)
over the Kafka stores (:mod:`core.distributed`), running what the group's leader assigned to
this worker. How a request flows:

* **Writes only the leader makes** (create, reconfigure, delete, stop, restarts, offsets, task
  configs) raise :class:`~core.herder.NotLeaderError` on any other worker; REST forwards them
  to the leader's URL (``?forward=`` as Kafka). With no known leader (a rebalance), 409.
  Pause and resume write the target state from any worker, as Kafka does.
* **Every worker reads the config topic**; the store's listener (on the log's thread) turns
  changes into operations on the affected connector's own operation thread
  (:mod:`core.serial`): a hung plugin delays only its connector.
* **The tick thread** drives the group membership (:mod:`.membership`): it applies each
  completed rebalance (stops what was revoked and waits for it, then queues starts of what was
  assigned), rejoins after a revocation or when the leader says departed workers' work is
  waiting (``scheduled.rebalance.max.delay.ms``), and, on the leader, the assignor runs inside
  the join (:mod:`.assignor`).
* A connector's instance runs on the worker it is assigned to; it generates the task configs,
  and the leader writes them (a follower sends them to the leader's internal
  ``POST /connectors/<name>/tasks``). New or changed task configs make the leader rebalance,
  and the owners of changed tasks restart them; unchanged tasks keep running.

Statuses go to the status topic and every worker answers from its copy of it; source offsets
go to the offset topic, read to its end before a task reads its offsets.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from core import secrets
from core.bundled import install_bundled_in_background
from core.distributed.assignor import Held, IncrementalCooperativeAssignor
from core.distributed.config_store import KafkaConfigStore, PrivilegedWriteError, RestartRequest
from core.distributed.fencing import LeaderFencing, TaskFencing, request_fencing
from core.distributed.internal_topics import InternalTopic, ensure_internal_topics
from core.distributed.keys import ClusterKeys
from core.distributed.membership import (
    GroupSettings,
    JoinedGroup,
    WorkerGroupMember,
    kafka_python_settings,
)
from core.distributed.offset_store import KafkaOffsetBackingStore
from core.distributed.protocol import (
    ASSIGNMENT_CONFIG_MISMATCH,
    ASSIGNMENT_OK,
    Assignment,
    MemberMetadata,
)
from core.distributed.status_store import KafkaStatusStore
from core.extensions import config_resolver, plugin_manager
from core.herder import (
    AlreadyExistsError,
    BadRequestError,
    ConflictError,
    NotFoundError,
    NotLeaderError,
)
from core.host_pool import HostPool
from core.kafka import admin_client, kafka_cluster_id
from core.offset_topics import ConnectorOffsetStores
from core.plugins import PluginCatalogue
from core.properties import load_properties
from core.rest import loggers
from core.standalone import _software_version
from core.status import State, Status
from core.stores.config import MemoryConfigStore, TargetState
from core.stores.offsets import OffsetStorage
from core.worker import Worker, prefixed
from core.worker_config import WorkerConfig
from core.worker_herder import (
    RECLAIM_MARGIN_S,
    REST_REQUEST_TIMEOUT_S,
    WorkerHerder,
    _Runtime,
    reverse_transform,
)
from plugin_api import ConfigException, ConnectException

__all__ = ["DistributedHerder"]

log = logging.getLogger("copycat.distributed")

# How long the tick thread sleeps when nothing wakes it; also how long poll() may wait for a
# join. A config change or a stop wakes it at once.
TICK_S = 0.2
# How long start() reads the internal topics before giving up (Kafka Connect: no bound; a
# fresh worker reading a shared topic of 1,000 connectors' records needs well under a second).
STORE_START_TIMEOUT_S = 120.0
# Retry pause when sending task configs to the leader failed (leader moving, rebalancing).
FORWARD_RETRY_S = 1.0
# Tasks of a connector keep their order; this many seconds between sweeps that publish the
# topics the tasks of this worker used (KIP-558) to the status topic.
TOPIC_SWEEP_S = 5.0
_NO_LEADER = (
    "Cannot complete request momentarily due to no known leader URL, likely because a "
    "rebalance was underway."
)
_CONFLICT = "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"
_REQUIRED = ("group.id", "config.storage.topic", "offset.storage.topic", "status.storage.topic")


class DistributedHerder(WorkerHerder):
    """One worker of a distributed Connect cluster (see the module docstring).

    Called by: REST handler threads (the Herder methods), the bootstrap's thread (prepare,
    start, shutdown), the config log's thread (listener callbacks, which only queue work),
    kafka-python's IO thread (:meth:`_metadata`, :meth:`_assign`) and its own tick thread.
    """

    def __init__(
        self, worker_file: Path | None, *, worker_props: Mapping[str, str] | None = None
    ) -> None:
        props = dict(worker_props) if worker_props is not None else load_properties(worker_file)  # type: ignore[arg-type]
        self.config = WorkerConfig.from_properties(props, str(worker_file or "<worker config>"))
        for key in _REQUIRED:
            if not self.config.get(key):
                raise ConfigException(
                    key, None, f'Missing required configuration "{key}" which has no default value.'
                )
        self.group_id: str = self.config.get("group.id")
        self.plugin_paths = [Path(p) for p in self.config.plugin_path or ["plugins.d"]]
        secrets.install_log_scrubber()
        self.extensions = plugin_manager(self.config)
        self.resolver = config_resolver(self.config, self.extensions)
        self.topic_creation_enabled = bool(self.config.topic_creation_enable)
        # KIP-618: "enabled" runs source tasks exactly-once (after the leader fenced their
        # older generations); "preparing" only makes this worker able to lead such a cluster
        # (it answers fencing requests), for a rolling upgrade.
        self.exactly_once_source = self.config.exactly_once_source_support
        self.fencing: LeaderFencing | None = None
        self.plugin_call_timeout_s = self.config.get("plugin.call.timeout.ms") / 1000
        self.host_pool = HostPool(self.plugin_call_timeout_s)
        self.worker_id = f"distributed-{uuid.uuid4().hex[:8]}"
        self.url = ""  # this worker's REST URL (the bootstrap sets it once REST is bound)
        self.catalogue = PluginCatalogue([])
        self.configs = MemoryConfigStore()  # replaced by the Kafka store in start()
        sharing = str(self.config.get("connect.management.topic.sharing.support")).lower()
        self.keys = ClusterKeys(self.group_id if sharing == "enabled" else None)
        self._init_herding()
        self._version = _software_version()
        self._cluster_id: str | None = None
        self._ready = threading.Event()
        self._stopping = threading.Event()
        self._wakeup = threading.Event()
        self._tick_thread: threading.Thread | None = None
        self._last_tick = 0.0
        self._prepared = False
        # Group state, written by the tick thread.
        self._assigned = Held()  # what the leader gave this worker, minus what it revoked
        self._generation = -1
        self._last_completed_generation = -1
        self._leader_url: str | None = None
        self._is_leader = False
        self._rejoin_at: float | None = None
        self._rebalances = 0
        # The leader's view of the group (written on the IO thread in _assign): member id ->
        # (REST URL, everything it runs after the last assignment); for forwarding to owners.
        self._members: dict[str, tuple[str, Held]] = {}
        self.assignor = IncrementalCooperativeAssignor(
            int(self.config.get("scheduled.rebalance.max.delay.ms")),
            lambda: int(time.time() * 1000),
        )
        # Task starts and stops on this worker (tests and the bench count them).
        self.task_starts = 0
        self.task_stops = 0
        self.statuses: KafkaStatusStore | None = None
        self.offset_backing: KafkaOffsetBackingStore | None = None
        self.member: WorkerGroupMember | None = None

    # -- life cycle ----------------------------------------------------------------------------

    def prepare(self) -> PluginCatalogue:
        """Start the bundled plugins' first-time install (in the background) and scan."""
        self.bundled_install = install_bundled_in_background(self.plugin_paths)
        self.catalogue = PluginCatalogue.scan(self.plugin_paths)
        self._prepared = True
        return self.catalogue

    def _internal_topics(self) -> list[InternalTopic]:
        c = self.config
        return [
            InternalTopic(
                "config.storage.topic",
                c.get("config.storage.topic"),
                1,
                int(c.get("config.storage.replication.factor")),
                "connector configurations",
                single_partition=True,
            ),
            InternalTopic(
                "offset.storage.topic",
                c.get("offset.storage.topic"),
                int(c.get("offset.storage.partitions")),
                int(c.get("offset.storage.replication.factor")),
                "source connector offsets",
            ),
            InternalTopic(
                "status.storage.topic",
                c.get("status.storage.topic"),
                int(c.get("status.storage.partitions")),
                int(c.get("status.storage.replication.factor")),
                "connector and task statuses",
            ),
        ]

    def start(self, bootstrap_servers: str | None = None) -> None:
        """Create or check the internal topics, read them, then join the group.

        Returns once the three topics are read (REST answers from then on); the first
        rebalance completes on the tick thread.

        Raises:
            ConfigException: an internal topic is not compacted or has the wrong shape.
            ConnectException: the cluster cannot be reached, or a topic could not be read.
        """
        catalogue = self.catalogue if self._prepared else self.prepare()
        servers = bootstrap_servers or ",".join(self.config.bootstrap_servers or [])
        if not servers:
            raise ConfigException("bootstrap.servers", None, "distributed mode needs Kafka")
        client = dict(self.config.client_config())
        client["bootstrap.servers"] = servers
        self.client_props = client
        timeout_ms = int(self.config.get("default.api.timeout.ms"))
        self._cluster_id = kafka_cluster_id(client, timeout_ms, "default.api.timeout.ms")
        ensure_internal_topics(
            admin_client(client),
            self._internal_topics(),
            check_compaction=bool(self.config.get("internal.topics.compaction.check.enable")),
        )
        offset_topic = self.config.get("offset.storage.topic")
        # read_committed whatever exactly.once.source.support says: a cluster downgraded to
        # disabled may hold offsets of aborted transactions, and an aborted offset counted
        # would skip records nobody ever saw. Without transactions it reads the same.
        self.offset_backing = KafkaOffsetBackingStore(
            offset_topic, client, self.keys, read_committed=True
        )
        self.statuses = KafkaStatusStore(self.config.get("status.storage.topic"), client, self.keys)
        self.configs = configs = KafkaConfigStore(
            self.config.get("config.storage.topic"),
            client,
            self.keys,
            f"connect-cluster-{self.group_id}",
        )
        started = time.monotonic()
        self.offset_backing.start(STORE_START_TIMEOUT_S)
        self.statuses.start(STORE_START_TIMEOUT_S)
        configs.start(STORE_START_TIMEOUT_S)
        log.info(
            "read the internal topics in %.0f ms: %d connectors",
            (time.monotonic() - started) * 1000,
            len(configs.snapshot().connectors()),
        )
        worker_offsets = OffsetStorage(self.offset_backing)
        self.offset_stores = stores = ConnectorOffsetStores(
            self.config,
            worker_offsets,
            client,
            worker_topic=offset_topic,
            worker_keys=self.keys,
        )
        self.fencing = LeaderFencing(configs, self.group_id, self._leader_write)
        self.worker = worker = Worker(
            self.worker_id,
            self.config,
            catalogue,
            worker_offsets,
            client_props=client,
            status=self.statuses,
            task_offsets=lambda spec: stores.store_for(spec.connector, spec.connector_config),
        )
        worker.on_reconfiguration_requested = self._reconfiguration_requested
        with self._lock:
            for name in configs.snapshot().connectors():
                self._runtime.setdefault(name, _Runtime(self._kind(self._config(name))))
        configs.set_listener(self)
        configs.on_restart_request = self._on_restart_request
        configs.on_logger_level = self._on_logger_level
        c = self.config
        self.member = WorkerGroupMember(
            GroupSettings(
                self.group_id,
                int(c.get("session.timeout.ms")),
                int(c.get("heartbeat.interval.ms")),
                int(c.get("rebalance.timeout.ms")),
                kafka_python_settings(client),
            ),
            self._metadata,
            self._assign,
        )
        self.member.start()
        self._tick_thread = threading.Thread(
            target=self._tick_loop, name="herder-tick", daemon=True
        )
        self._tick_thread.start()
        self._ready.set()

    def flush_offsets(self) -> None:
        if self.worker is not None:
            self.worker.offsets.flush()

    def shutdown(self) -> None:
        """Stop every connector and task here (final commits included), leave the group, and
        close the stores. The others get this worker's work after the scheduled delay."""
        self._ready.clear()
        self._stopping.set()
        self._wakeup.set()
        if self._tick_thread is not None:
            self._tick_thread.join(REST_REQUEST_TIMEOUT_S)
        worker = self.worker
        if worker is not None:
            names = list(worker.connectors)
            for name in names:
                self._reclaim_if_stuck(name)
            stopping = [
                self._ops.submit(name, "shutdown", partial(self._stop_all_here, name))
                for name in names
            ]
            for future in stopping:
                try:
                    future.result(worker.graceful_timeout_s * 2 + RECLAIM_MARGIN_S)
                except Exception as exc:  # noqa: BLE001 - shutting down regardless
                    log.warning("a connector did not stop cleanly: %s", exc)
            worker.stop()
            self.worker = None
        if self.member is not None:
            self.member.stop()
        for store in (self.statuses, self.offset_backing):
            if store is not None:
                store.stop()
        if isinstance(self.configs, KafkaConfigStore):
            self.configs.stop()
        self.host_pool.close()
        self.resolver.close()

    def _stop_all_here(self, name: str) -> None:
        worker = self.worker
        if worker is not None and name in worker.connectors:
            self.task_stops += len(worker.connectors[name].tasks)
            worker.stop_connector(name)

    # -- the tick thread ------------------------------------------------------------------------

    def _tick_loop(self) -> None:
        member = self.member
        assert member is not None
        next_sweep = time.monotonic() + TOPIC_SWEEP_S
        while not self._stopping.is_set():
            self._last_tick = time.monotonic()
            try:
                member.poll(TICK_S)
                while (joined := member.take_assignment()) is not None:
                    self._on_joined(joined)
                if self._rejoin_at is not None and time.monotonic() >= self._rejoin_at:
                    self._rejoin_at = None
                    log.info("scheduled rebalance: departed workers' work may be reassigned")
                    member.request_rejoin()
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
        self._generation = joined.generation
        self._leader_url = assignment.leader_url or None
        self._is_leader = joined.is_leader
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
            try:
                configs.claim_write_privileges()
            except PrivilegedWriteError as exc:
                log.error("leader of generation %d: %s", joined.generation, exc)
        else:
            configs.relinquish_write_privileges()
        revoked = assignment.revoked
        self._assigned = self._assigned.minus(revoked).plus(assignment.assigned)
        self._rebalances += 1
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
            self._stop_revoked(revoked)
            member.request_rejoin()  # cooperative: the revoked work is assigned next round
        for name in sorted(assignment.assigned.connectors):
            self._ops.submit(name, "start connector", partial(self._start_connector, name))
        for name, task in sorted(assignment.assigned.tasks):
            self._ops.submit(name, f"start task {task}", partial(self._start_task, name, task))
        if assignment.delay_ms > 0:
            self._rejoin_at = time.monotonic() + assignment.delay_ms / 1000
        self._last_completed_generation = joined.generation
        if joined.is_leader and configs.snapshot().offset > assignment.config_offset:
            # A config change (a new connector, new task configs) read after this round was
            # assigned: its rejoin request came while the round was in flight, and completing
            # the round cleared it, so nobody would assign the change. Assign it now.
            log.info("config changed during the rebalance; rebalancing again")
            member.request_rejoin()

    def _catch_up(self, timeout_s: float) -> bool:
        try:
            self._kafka_configs().refresh(timeout_s)
            return True
        except ConnectException as exc:
            log.warning("could not catch up with the config topic: %s", exc)
            return False

    def _stop_revoked(self, revoked: Held) -> None:
        """Stop revoked work and wait for it: the next owner must not start it while it runs
        here (a source task's last offsets are committed by then)."""
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
                        self._revoke, name, by_connector.get(name, []), name in revoked.connectors
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

    def _revoke(self, name: str, tasks: Sequence[int], instance: bool) -> None:
        worker = self._worker()
        for task in tasks:
            if self._task_runs_here(name, task):
                worker.stop_task(name, task)
                self.task_stops += 1
        if instance and worker.instance_running(name):
            self._stop_instance(name)
            worker.status.set_connector(name, Status(State.UNASSIGNED, worker.worker_id))

    # -- group callbacks (kafka-python's IO thread: no blocking) -----------------------------------

    def _metadata(self) -> MemberMetadata:
        snapshot = self.configs.snapshot()
        configured = _configured(snapshot)
        return MemberMetadata(self.url, snapshot.offset, self._assigned.within(configured))

    def _assign(
        self, leader_id: str, members: dict[str, MemberMetadata], generation: int
    ) -> dict[str, Assignment]:
        snapshot = self.configs.snapshot()
        leader_url = members[leader_id].url if leader_id in members else self.url
        newest = max((m.config_offset for m in members.values()), default=-1)
        if snapshot.offset < newest:
            log.info("leader behind the config topic (%d < %d)", snapshot.offset, newest)
            return {
                m: Assignment(
                    ASSIGNMENT_CONFIG_MISMATCH, leader_id, leader_url, newest, Held(), Held(), 0
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
            )
            for m, plan in plans.items()
        }

    def _owner_url(self, connector: str, task: int | None = None) -> str | None:
        for url, total in list(self._members.values()):
            if (task is None and connector in total.connectors) or (connector, task) in total.tasks:
                return url
        return None

    # -- config listener (the config log's thread: only queue work) --------------------------------

    def _rebalance_if_leader(self) -> None:
        if self._is_leader and self.member is not None:
            self.member.request_rejoin()
            self._wakeup.set()

    def on_connector_config_update(self, connector: str) -> None:
        with self._lock:
            new = connector not in self._runtime
            runtime = self._runtime.setdefault(connector, _Runtime("unknown"))
            runtime.deleted = False
        runtime.kind = self._kind(self._config(connector))
        if new:
            self._rebalance_if_leader()
        elif connector in self._assigned.connectors:
            self._ops.submit(connector, "reconfigure", partial(self._restart_instance, connector))

    def on_connector_config_removed(self, connector: str) -> None:
        with self._lock:
            runtime = self._runtime.pop(connector, None)
            self._topics.pop(connector, None)
        if runtime is not None:
            runtime.deleted = True
        self._reclaim_if_stuck(connector)
        self._ops.submit(connector, "remove", partial(self._remove_here, connector))
        self._rebalance_if_leader()

    def on_task_configs_update(self, connector: str) -> None:
        self._ops.submit(connector, "task configs", partial(self._apply_task_configs, connector))
        self._rebalance_if_leader()

    def on_target_state_change(self, connector: str) -> None:
        self._ops.submit(connector, "target state", partial(self._apply_target_here, connector))

    def _on_restart_request(self, request: RestartRequest) -> None:
        self._ops.submit(request.connector, "restart", partial(self._restart_here, request))

    def _on_logger_level(self, namespace: str, level: str) -> None:
        value = loggers.parse_level(level)
        if value is None:
            log.warning("ignoring cluster logger level %r for %s", level, namespace)
            return
        affected = loggers.set_level(namespace, value)
        log.info("logger %s set to %s cluster-wide (%d loggers)", namespace, level, len(affected))

    # -- what runs here (connector operation threads) ----------------------------------------------

    def _task_runs_here(self, name: str, task: int) -> bool:
        worker = self.worker
        connector = worker.connectors.get(name) if worker is not None else None
        return connector is not None and task in connector.tasks

    def _stop_instance(self, name: str) -> None:
        worker = self._worker()
        self._topics.setdefault(name, set()).update(worker.task_topics(name))
        worker.stop_connector_instance(name)

    def _start_connector(self, name: str) -> None:
        """Start the instance of a connector assigned here, and publish its task configs."""
        worker = self._worker()
        if name not in self._assigned.connectors or worker.instance_running(name):
            return
        snapshot = self.configs.snapshot()
        config = snapshot.config(name)
        runtime = self._runtime.get(name)
        if config is None or runtime is None:
            return
        if snapshot.target_state(name) is TargetState.STOPPED:
            worker.status.set_connector(
                name,
                Status(State.STOPPED, worker.worker_id, version=self._plugin_version(config)),
            )
            return
        try:
            resolved = self.resolver.resolve(config)
        except ConfigException as exc:
            self._fail_connector(name, exc, None)
            return
        runtime.resolved = resolved
        try:
            worker.start_connector(name, resolved.config)
        except Exception as exc:  # noqa: BLE001 - shown as FAILED in the status, like Kafka
            if not runtime.deleted:
                self._fail_connector(name, exc, resolved)
            return
        if snapshot.target_state(name) is TargetState.PAUSED:
            worker.pause(name, True)
        self._publish_task_configs(name)

    def _publish_task_configs(self, name: str) -> None:
        """Ask the connector for task configs; send them to the leader if they changed."""
        worker, runtime = self._worker(), self._runtime.get(name)
        if runtime is None or runtime.resolved is None or not worker.instance_running(name):
            return
        resolved = runtime.resolved
        try:
            task_class = worker.task_class(name)
            generated = worker.task_configs(name)
        except Exception as exc:  # noqa: BLE001 - shown as FAILED in the status, like Kafka
            self._fail_connector(name, exc, resolved)
            return
        raw = self._config(name)
        fresh = [
            reverse_transform({**tc, "task.class": task_class}, raw, resolved) for tc in generated
        ]
        if fresh == self._task_configs(name) and name not in self._kafka_configs().inconsistent():
            log.info("connector %s: task configs unchanged (%d tasks)", name, len(fresh))
            return
        log.info("connector %s: publishing %d task configs", name, len(fresh))
        self._send_task_configs(name, fresh)

    def _send_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        """Leader: write them; follower: POST them to the leader, retrying while it moves."""
        while not self._stopping.is_set() and name in self._assigned.connectors:
            if self._is_leader:
                try:
                    self.receive_task_configs(name, configs)
                    return
                except (PrivilegedWriteError, ConflictError) as exc:
                    log.warning("writing task configs of %s: %s", name, exc)
            elif self._leader_url:
                try:
                    response = httpx.post(
                        f"{self._leader_url}/connectors/{name}/tasks",
                        params={"forward": "true"},
                        json=configs,
                        timeout=REST_REQUEST_TIMEOUT_S,
                    )
                    if response.status_code < 300:
                        return
                    log.warning(
                        "the leader refused task configs of %s: %d %s",
                        name,
                        response.status_code,
                        response.text[:200],
                    )
                except httpx.HTTPError as exc:
                    log.warning("sending task configs of %s to the leader: %s", name, exc)
            time.sleep(FORWARD_RETRY_S)

    def _start_task(self, name: str, task: int) -> None:
        worker = self._worker()
        if (name, task) not in self._assigned.tasks or self._task_runs_here(name, task):
            return
        snapshot = self.configs.snapshot()
        config, tasks = snapshot.config(name), snapshot.tasks(name)
        if config is None or task >= len(tasks):
            return  # deleted or shrunk meanwhile: the next rebalance revokes it
        try:
            connector_props = self.resolver.resolve(config).config
            task_props = self.resolver.resolve(tasks[task]).config
            worker.start_task(
                name,
                task,
                task_props,
                connector_props=connector_props,
                paused=snapshot.target_state(name) is TargetState.PAUSED,
                **self._exactly_once_options(name, task, config),
            )
            self.task_starts += 1
        except Exception as exc:  # noqa: BLE001 - shown as FAILED in the status, like Kafka
            log.error("task %s-%d could not start: %s", name, task, exc)
            worker.status.set_task(
                name, task, Status(State.FAILED, worker.worker_id, trace=str(exc))
            )

    # -- exactly-once source tasks (KIP-618) ---------------------------------------------------

    def _exactly_once_options(
        self, name: str, task: int, config: Mapping[str, str]
    ) -> dict[str, Any]:
        """``Worker.start_task`` options of an exactly-once source task: the flag, and the
        checks around its producer start (core/distributed/fencing.py)."""
        if not self._runs_exactly_once(config):
            return {}
        configs = self._kafka_configs()
        return {
            "exactly_once": True,
            "fencing": TaskFencing(
                configs,
                name,
                task,
                configs.fencing_state(name).generation,
                partial(self._request_fencing, name),
                lambda: (name, task) in self._assigned.tasks,
            ),
        }

    def _runs_exactly_once(self, config: Mapping[str, str]) -> bool:
        return self.exactly_once_source == "enabled" and self._kind(config) == "source"

    def _request_fencing(self, name: str) -> None:
        """A task of ``name`` is about to start: have the leader fence older generations."""
        if self._is_leader:
            self.fence_zombies(name)
        else:
            request_fencing(lambda: self._leader_url, name)

    def fence_zombies(self, name: str) -> None:
        """Internal ``PUT /connectors/<name>/fence`` (leader only, forwarded there): fence out
        the older generations of the connector's tasks if its task configs are pending
        fencing, and record the new generation (core/distributed/fencing.py)."""
        self._known(name)
        self._require_leader("fence zombie source tasks")
        if self.exactly_once_source == "disabled":
            raise BadRequestError(
                f"Cannot fence out older tasks of connector {name}: the leader runs with "
                "exactly.once.source.support=disabled; set it to preparing (then enabled) on "
                "every worker of the cluster"
            )
        config = self._config(name)
        if self._kind(config) != "source":
            raise BadRequestError(f"Connector {name} is not a source connector")
        fencing = self.fencing
        assert fencing is not None
        resolved = self.resolver.resolve(config).config
        fencing.fence(name, {**self.client_props, **prefixed(resolved, "admin.override.")})

    def _restart_instance(self, name: str) -> None:
        """The connector's config changed: restart its instance here, republish its tasks."""
        worker = self._worker()
        if worker.instance_running(name):
            self._stop_instance(name)
        self._start_connector(name)

    def _apply_task_configs(self, name: str) -> None:
        """New task configs: restart the tasks here whose config changed, stop vanished ones.

        Exactly-once source tasks are all restarted, as Kafka restarts every task of a
        reconfigured connector: the new generation's fencing would otherwise fence the
        unchanged ones still running from the old generation, and they would fail.
        """
        snapshot = self.configs.snapshot()
        tasks, config = snapshot.tasks(name), snapshot.config(name)
        # Tasks beyond the new count are no longer this worker's, running or not: still
        # counted as held, they would be reported as running at the next rebalance, and a
        # connector growing again would never get them assigned.
        self._assigned = Held.of(
            self._assigned.connectors,
            (t for t in self._assigned.tasks if t[0] != name or t[1] < len(tasks)),
        )
        worker = self.worker
        connector = worker.connectors.get(name) if worker is not None else None
        if worker is None or connector is None:
            return
        restart_all = config is not None and self._runs_exactly_once(config)
        for task, runner in sorted(connector.tasks.items()):
            if task >= len(tasks) or config is None:
                worker.stop_task(name, task)
                self.task_stops += 1
                worker.status.remove_task(name, task)
                continue
            wanted = self.resolver.resolve(tasks[task]).config
            if wanted != runner.task_props or restart_all:
                log.info(
                    "task %s-%d: %s; restarting it",
                    name,
                    task,
                    "its config changed" if wanted != runner.task_props else "a new generation",
                )
                worker.stop_task(name, task)
                self.task_stops += 1
                self._start_task(name, task)

    def _apply_target_here(self, name: str) -> None:
        worker = self._worker()
        snapshot = self.configs.snapshot()
        target = snapshot.target_state(name)
        if target is None:
            return
        if target is TargetState.STOPPED:
            if worker.instance_running(name):
                self._stop_instance(name)
            if name in self._assigned.connectors:
                config = snapshot.config(name) or {}
                worker.status.set_connector(
                    name,
                    Status(State.STOPPED, worker.worker_id, version=self._plugin_version(config)),
                )
            return
        if name in self._assigned.connectors and not worker.instance_running(name):
            self._start_connector(name)  # resumed from STOPPED
            return
        if name in worker.connectors:
            self._apply_target(name)

    def _remove_here(self, name: str) -> None:
        """The connector was deleted: stop what of it runs here, tombstone its statuses."""
        worker = self._worker()
        owned_instance = name in self._assigned.connectors
        connector = worker.connectors.get(name)
        tasks = sorted(connector.tasks) if connector is not None else []
        if connector is not None:
            self.task_stops += len(tasks)
            worker.stop_connector(name)
        self._assigned = Held.of(
            (c for c in self._assigned.connectors if c != name),
            (t for t in self._assigned.tasks if t[0] != name),
        )
        if owned_instance:
            worker.status.remove_connector(name)  # the connector and every task it knows
        else:
            for task in tasks:
                worker.status.remove_task(name, task)

    def _restart_here(self, request: RestartRequest) -> None:
        """A KIP-745 restart request from the config topic: restart our part of it."""
        worker = self._worker()
        name = request.connector
        status = worker.status.connector(name)
        if name in self._assigned.connectors and (
            not request.only_failed or (status is not None and status.state is State.FAILED)
        ):
            worker.status.set_connector(name, Status(State.RESTARTING, worker.worker_id))
            self._restart_instance(name)
        if not request.include_tasks:
            return
        for task, task_status in sorted(worker.status.tasks_of(name).items()):
            if (name, task) not in self._assigned.tasks:
                continue
            if request.only_failed and task_status.state is not State.FAILED:
                continue
            worker.status.set_task(name, task, Status(State.RESTARTING, worker.worker_id))
            if self._task_runs_here(name, task):
                worker.stop_task(name, task)
                self.task_stops += 1
            self._start_task(name, task)

    def _reconfiguration_requested(self, name: str) -> None:
        self._ops.submit(name, "task reconfiguration", partial(self._publish_task_configs, name))

    def _publish_topics(self) -> None:
        worker, statuses = self.worker, self.statuses
        if worker is None or statuses is None:
            return
        for name, connector in list(worker.connectors.items()):
            first = min(connector.tasks, default=0)
            for topic in sorted(worker.task_topics(name)):
                statuses.put_topic(name, topic, first)

    # -- leadership ----------------------------------------------------------------------------

    def _require_leader(self, what: str) -> None:
        if self._is_leader and self.member is not None:
            return
        if not self._leader_url:
            raise ConflictError(_NO_LEADER)
        raise NotLeaderError(f"Cannot {what}: this worker is not the leader", self._leader_url)

    def _leader_write(self, what: str, write: Callable[[], None]) -> None:
        """A leader-only write. A leader whose transactional producer was fenced (by a zombie
        leader, or by a transient error that made librdkafka give the producer up) fails this
        write and claims its write privileges again for the next one, as Kafka's leader does
        once it sees it is still the leader: a request retried by the user then succeeds."""
        self._require_leader(what)
        configs = self._kafka_configs()
        try:
            if not configs.has_write_privileges():
                configs.claim_write_privileges()
                log.info("leader: claimed write privileges on the config topic again")
            write()
        except PrivilegedWriteError as exc:
            log.warning("%s: %s", what, exc)
            raise ConflictError(_CONFLICT) from None

    def _kafka_configs(self) -> KafkaConfigStore:
        configs = self.configs
        if not isinstance(configs, KafkaConfigStore):
            raise ConflictError(
                "Cannot complete request because the worker is still starting up or shutting down"
            )
        return configs

    def _known(self, name: str) -> None:
        self._worker()
        if not self.configs.snapshot().contains(name):
            raise NotFoundError(f"Connector {name} not found")

    def _get(self, name: str) -> _Runtime:
        self._known(name)
        with self._lock:
            return self._runtime.setdefault(name, _Runtime(self._kind(self._config(name))))

    # -- Herder: server ----------------------------------------------------------------------------

    def ready(self) -> bool:
        return self._ready.is_set()

    def health_check(self, timeout_s: float) -> bool:
        thread = self._tick_thread
        return (
            thread is not None
            and thread.is_alive()
            and time.monotonic() - self._last_tick < max(timeout_s, 10 * TICK_S)
        )

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

    def connector_info(self, name: str) -> dict[str, Any]:
        return self._info(name, self._get(name))

    def connector_config(self, name: str) -> dict[str, str]:
        self._known(name)
        return self._config(name)

    def task_configs(self, name: str) -> list[dict[str, Any]]:
        self._known(name)
        return [
            {"id": {"connector": name, "task": i}, "config": c}
            for i, c in enumerate(self._task_configs(name))
        ]

    def create_connector(
        self,
        name: str,
        config: Mapping[str, str],
        initial_state: TargetState = TargetState.STARTED,
    ) -> dict[str, Any]:
        config = self._named(name, config)
        self._worker()
        if self.configs.snapshot().contains(name):
            raise AlreadyExistsError(f"Connector {name} already exists")
        self.ensure_valid(config)
        self._require_leader("create a connector")
        if self.configs.snapshot().contains(name):
            raise AlreadyExistsError(f"Connector {name} already exists")
        self._leader_write(
            "create a connector",
            lambda: self.configs.put_connector_config(name, config, initial_state),
        )
        return self._info(name, self._get(name))

    def put_connector_config(
        self, name: str, config: Mapping[str, str]
    ) -> tuple[bool, dict[str, Any]]:
        config = self._named(name, config)
        self._worker()
        self.ensure_valid(config)
        self._require_leader("write a connector config")
        created = not self.configs.snapshot().contains(name)
        self._leader_write(
            "write a connector config",
            lambda: self.configs.put_connector_config(name, config, None),
        )
        return created, self._info(name, self._get(name))

    def patch_connector_config(self, name: str, patch: Mapping[str, str | None]) -> dict[str, Any]:
        self._known(name)
        current = self._config(name)
        merged = {k: v for k, v in {**current, **patch}.items() if v is not None}
        _created, info = self.put_connector_config(name, merged)
        return info

    def delete_connector(self, name: str) -> None:
        self._known(name)
        self._leader_write("delete a connector", lambda: self.configs.remove_connector_config(name))

    def receive_task_configs(self, name: str, configs: Sequence[Mapping[str, str]]) -> None:
        """Internal ``POST /connectors/<name>/tasks``: the connector's owner sends the task
        configs it generated; only the leader writes them."""
        self._known(name)
        self._leader_write(
            "write task configs", lambda: self.configs.put_task_configs(name, configs)
        )

    def set_cluster_logger_level(self, namespace: str, level: str) -> None:
        """``PUT /admin/loggers/<namespace>?scope=cluster``: every worker applies it when it
        reads the record, this one included."""
        self._worker()
        self._kafka_configs().put_logger_level(namespace, level)

    def connector_status(self, name: str) -> dict[str, Any]:
        if not self.configs.snapshot().contains(name):
            raise NotFoundError(f"No status found for connector {name}")
        runtime = self._get(name)
        statuses = self._worker().status
        return self.render_status(
            name,
            runtime.kind,
            statuses.connector(name),
            statuses.tasks_of(name),
            runtime.resolved,
        )

    def task_status(self, name: str, task: int) -> dict[str, Any]:
        if not self.configs.snapshot().contains(name):
            raise NotFoundError(f"No status found for task {name}-{task}")
        runtime = self._get(name)
        status = self._worker().status.task(name, task)
        if status is None:
            raise NotFoundError(f"No status found for task {name}-{task}")
        rendered = self.render_status(
            name, runtime.kind, Status(State.RUNNING, ""), {task: status}, runtime.resolved
        )
        entry: dict[str, Any] = rendered["tasks"][0]
        return entry

    # -- Herder: restart, pause, resume, stop ----------------------------------------------------

    def restart_connector(
        self, name: str, include_tasks: bool, only_failed: bool
    ) -> dict[str, Any] | None:
        self._known(name)
        if not include_tasks and not only_failed:
            # Kafka's legacy restart: the worker running the instance restarts it.
            if name in self._assigned.connectors:
                self._run(name, "restart", partial(self._restart_instance, name))
                return None
            owner = self._owner_url(name) if self._is_leader else self._leader_url
            if not owner:
                raise ConflictError(_NO_LEADER)
            raise NotLeaderError(f"Connector {name} does not run on this worker", owner)
        status = self.connector_status(name)
        self._leader_write(
            "restart a connector",
            lambda: self._kafka_configs().put_restart_request(
                RestartRequest(name, only_failed, include_tasks)
            ),
        )
        restart_connector = not only_failed or status["connector"]["state"] == "FAILED"
        if restart_connector:
            status["connector"]["state"] = State.RESTARTING.value
        for entry in status["tasks"]:
            if include_tasks and (not only_failed or entry["state"] == "FAILED"):
                entry["state"] = State.RESTARTING.value
        return status

    def restart_task(self, name: str, task: int) -> None:
        self._known(name)
        if not 0 <= task < len(self._task_configs(name)):
            raise NotFoundError(f"Unknown task: {name}-{task}")
        if (name, task) in self._assigned.tasks:
            self._run(name, "task restart", partial(self._restart_one_task, name, task))
            return
        owner = self._owner_url(name, task) if self._is_leader else self._leader_url
        if not owner:
            raise ConflictError(_NO_LEADER)
        raise NotLeaderError(f"Task {name}-{task} does not run on this worker", owner)

    def _restart_one_task(self, name: str, task: int) -> None:
        if self._task_runs_here(name, task):
            self._worker().stop_task(name, task)
            self.task_stops += 1
        self._start_task(name, task)

    def pause_connector(self, name: str) -> None:
        self._known(name)
        self.configs.put_target_state(name, TargetState.PAUSED)

    def resume_connector(self, name: str) -> None:
        self._known(name)
        self.configs.put_target_state(name, TargetState.STARTED)

    def stop_connector(self, name: str) -> None:
        """Leader: no task configs, then target state STOPPED (Kafka's order, KIP-875)."""
        self._known(name)

        def stop() -> None:
            self.configs.put_task_configs(name, [])
            self.configs.put_target_state(name, TargetState.STOPPED)

        self._leader_write("stop a connector", stop)

    # -- Herder: offsets (KIP-875), on the leader ------------------------------------------------

    def _require_stopped(self, name: str) -> _Runtime:
        runtime = super()._require_stopped(name)
        if self._task_configs(name):
            raise BadRequestError(
                "Connectors must be in the STOPPED state before their offsets can be modified. "
                "This can be done for the specified connector by issuing a 'PUT' request to "
                "the '/connectors/{name}/stop' endpoint"
            )
        return runtime

    def alter_connector_offsets(self, name: str, offsets: list[dict[str, Any]]) -> str:
        self._known(name)
        self._require_leader("alter connector offsets")
        return super().alter_connector_offsets(name, offsets)

    def reset_connector_offsets(self, name: str) -> str:
        self._known(name)
        self._require_leader("reset connector offsets")
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


def _configured(snapshot: Any) -> Held:
    connectors = snapshot.connectors()
    return Held.of(connectors, [(c, i) for c in connectors for i in range(len(snapshot.tasks(c)))])
