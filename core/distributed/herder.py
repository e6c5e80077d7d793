"""Distributed mode's herder: connectors shared by a group of workers, state in Kafka.

:class:`DistributedHerder` is the shared herder logic (:class:`core.worker_herder.WorkerHerder`)
over the Kafka stores (:mod:`core.distributed`), running what the group's leader assigned to
this worker. This module builds it and runs its life cycle (the internal topics, the stores,
the worker, joining the group, shutting down); its other concerns are mixins of their own
modules (why mixins: :mod:`core.distributed.herder_base`):

* :mod:`.herder_api` -- the REST-facing Herder API: reads from this worker's copies of the
  internal topics, writes only the leader makes (others answer with the leader's URL and
  REST forwards);
* :mod:`.config_reactions` -- what config topic changes do here, each on the affected
  connector's own operation thread (:mod:`core.serial`); a connector's instance runs on the
  worker it is assigned to, generates the task configs, and the leader writes them;
* :mod:`.rebalancing` -- the tick thread and the group: each completed rebalance applied
  (revoked work stopped first), the leader's assignor (:mod:`.assignor`) inside the join;
* :mod:`.herder_fencing` -- exactly-once source tasks' zombie fencing (KIP-618);
* :mod:`.herder_signing` -- signed internal requests and the session key (KIP-507);
* :mod:`.herder_base` -- the state they share and the leader checks.

Statuses go to the status topic and every worker answers from its copy of it; source offsets
go to the offset topic, read to its end before a task reads its offsets.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Mapping
from functools import partial
from pathlib import Path

from core import secrets
from core.bundled import install_bundled_in_background
from core.connect_metrics import RebalanceMetrics, metrics_from_config
from core.distributed.assignor import Held, IncrementalCooperativeAssignor
from core.distributed.config_store import KafkaConfigStore
from core.distributed.fencing import LeaderFencing
from core.distributed.herder_api import HerderApi
from core.distributed.internal_topics import InternalTopic, ensure_internal_topics
from core.distributed.keys import ClusterKeys
from core.distributed.membership import GroupSettings, WorkerGroupMember, kafka_python_settings
from core.distributed.offset_store import KafkaOffsetBackingStore
from core.distributed.rebalancing import Rebalancing
from core.distributed.status_store import KafkaStatusStore
from core.extensions import config_resolver, override_policy, plugin_manager
from core.host_pool import HostPool
from core.kafka import admin_client, kafka_cluster_id
from core.metric_reporters import add_reporters
from core.offset_topics import ConnectorOffsetStores
from core.plugins import PluginCatalogue
from core.properties import load_properties
from core.rest.internal_client import internal_client
from core.standalone import _software_version
from core.stores.config import MemoryConfigStore
from core.stores.offsets import OffsetStorage
from core.worker import Worker
from core.worker_config import WorkerConfig
from core.worker_herder import RECLAIM_MARGIN_S, REST_REQUEST_TIMEOUT_S, _Runtime
from plugin_api import ConfigException

__all__ = ["DistributedHerder"]

log = logging.getLogger("copycat.distributed")

# How long start() reads the internal topics before giving up (Kafka Connect: no bound; a
# fresh worker reading a shared topic of 1,000 connectors' records needs well under a second).
STORE_START_TIMEOUT_S = 120.0
_REQUIRED = ("group.id", "config.storage.topic", "offset.storage.topic", "status.storage.topic")


class DistributedHerder(Rebalancing, HerderApi):
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
        self.plugin_paths = [Path(p) for p in self.config.plugin_path or ["plugins.d"]]
        secrets.install_log_scrubber()
        self.extensions = plugin_manager(self.config)
        self.resolver = config_resolver(self.config, self.extensions)
        # Kafka resolves config-provider placeholders in the worker's own properties too
        # (client credentials, REST keystores); the values are registered with the log
        # scrubber as they are resolved, and raw_originals() keeps what was written.
        self.config = self.config.resolved(lambda props: self.resolver.resolve(props).config)
        # Once resolved (group.id=${env:GROUP} is fine), every missing one named at once.
        self.config.require(_REQUIRED, "distributed mode")
        signature = self.config.get("inter.worker.signature.algorithm")
        if signature not in self.config.get("inter.worker.verification.algorithms"):
            # Kafka's DistributedConfig check: a worker must accept what it sends itself.
            raise ConfigException(
                "inter.worker.signature.algorithm",
                signature,
                "Signature algorithm must be present in inter.worker.verification.algorithms list",
            )
        heartbeat, session = (
            self.config.get("heartbeat.interval.ms"),
            self.config.get("session.timeout.ms"),
        )
        if heartbeat >= session:
            # Kafka's group member refuses it as it starts (its Heartbeat's check); found
            # here, before any topic is read, and naming both keys.
            raise ConfigException(
                "heartbeat.interval.ms",
                heartbeat,
                "Heartbeat must be set lower than the session timeout "
                f"(session.timeout.ms={session})",
            )
        self.group_id: str = self.config.get("group.id")
        self.override_policy = override_policy(self.config, self.extensions)
        # The worker's metrics (GET /metrics, metric.reporters), for as long as it runs.
        self.metrics = metrics_from_config(self.config)
        add_reporters(self.metrics, self.config, self.extensions)
        self.topic_creation_enabled = bool(self.config.topic_creation_enable)
        # KIP-618: "enabled" runs source tasks exactly-once (after the leader fenced their
        # older generations); "preparing" only makes this worker able to lead such a cluster
        # (it answers fencing requests), for a rolling upgrade.
        self.exactly_once_source = self.config.exactly_once_source_support
        self.exactly_once_always_validated = True
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
        self._init_signing()
        self.rebalance_metrics = RebalanceMetrics(
            self.metrics,
            lambda: "SESSIONED" if self._request_validation else "COMPATIBLE",
            lambda: self.member is None or self.member.rebalancing,
        )
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
        # Its read-modify-writes, from the tick thread and connector operation threads: one
        # lost would leave work counted as held here that nothing runs, or the reverse.
        self._assigned_lock = threading.Lock()
        self._generation = -1
        self._last_completed_generation = -1
        self._leader_url: str | None = None
        self._is_leader = False
        # The leader's config writes, one at a time (Kafka's single herder thread).
        self._leader_writes = threading.RLock()
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
        # One client for this worker's requests to others, thread-safe, closed by shutdown().
        # httpx's module functions (httpx.post ...) made a client per request, its
        # SSLContext (~0.8 MB) and connection in cycles only a full garbage collection frees,
        # rare in a worker (isolation/allocator.py): a follower under connector churn grew
        # ~22 MB a minute. TLS from the worker's ssl keys, as Kafka's RestClient
        # (core/rest/internal_client.py).
        self.internal_http = internal_client(self.config.originals_strings())

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
        """Create or check the internal topics, read them, wait for the bundled plugins'
        first-time install if one runs, then join the group.

        Returns once the three topics are read and the plugins are there (REST answers from
        then on); the first rebalance completes on the tick thread.

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
        self._cluster_id = kafka_cluster_id(
            client, timeout_ms, "default.api.timeout.ms", self._stop_requested
        )
        if self._stop_requested():
            log.info("stopping: the worker takes no work (a signal during start-up)")
            return
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
            offset_topic,
            client,
            self.keys,
            read_committed=True,
            flush_timeout_s=self.config.offset_flush_timeout_ms / 1000,
        )
        self.statuses = KafkaStatusStore(self.config.get("status.storage.topic"), client, self.keys)
        self.configs = configs = KafkaConfigStore(
            self.config.get("config.storage.topic"),
            client,
            self.keys,
            f"connect-cluster-{self.group_id}",
        )
        started = time.monotonic()
        for store in (self.offset_backing, self.statuses, configs):
            if self._stop_requested():  # shutdown() stops the stores started so far
                log.info("stopping: the worker takes no work (a signal during start-up)")
                return
            store.start(STORE_START_TIMEOUT_S)
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
            worker_key_forms=self.offset_backing.key_forms,
            worker_written_forms=self.offset_backing.written_forms,
        )
        self.fencing = LeaderFencing(configs, self.group_id, self._leader_write)
        self.worker = worker = Worker(
            self.worker_id,
            self.config,
            catalogue,
            worker_offsets,
            client_props=client,
            override_policy=self.override_policy,
            status=self.statuses,
            task_offsets=lambda spec: stores.store_for(spec.connector, spec.connector_config),
            source_offsets_check=stores.check_connector_topic,
            metrics=self.metrics,
        )
        worker.on_reconfiguration_requested = self._reconfiguration_requested
        self.statuses.on_topics_reset = worker.forget_topics
        with self._lock:
            for name in configs.snapshot().connectors():
                self._runtime.setdefault(name, _Runtime(self._kind(self._config(name))))
        configs.set_listener(self)
        configs.on_restart_request = self._on_restart_request
        configs.on_logger_level = self._on_logger_level
        configs.on_session_key = self._on_session_key
        # Kafka scans its plugins before it joins the group: an assignment taken before the
        # bundled plugins are there fails their tasks for good. The internal topics were read
        # meanwhile, so REST reads answer while this waits.
        self._await_bundled_plugins()
        if self._stop_requested():
            return  # never joined: shutdown() has no group to leave
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
            revoke=self._revoke_all,
        )
        self.member.start()
        self._tick_thread = threading.Thread(
            target=self._tick_loop, name="herder-tick", daemon=True
        )
        self._tick_thread.start()
        self._ready.set()

    def flush_offsets(self) -> None:
        """Nothing to do: every source task's commit waits for its own offsets in the offsets
        topic (core/distributed/offset_store.py), and the worker waits for what is left when
        it stops. Waiting here, on the bootstrap's thread, held up its signal handling while
        the broker was away, and a failure raised here ended the worker."""

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
        self.internal_http.close()
        self.metrics.close()

    def _stop_all_here(self, name: str) -> None:
        worker = self.worker
        if worker is not None and name in worker.connectors:
            self.task_stops += len(worker.connectors[name].tasks)
            worker.stop_connector(name)
