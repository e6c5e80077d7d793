"""Connector configs, task configs and target states in ``config.storage.topic``.

The Kafka :class:`core.stores.ConfigStore`, writing exactly Kafka Connect's records (values
are JsonConverter's schemaless JSON), so a Copycat cluster takes over a Kafka Connect
cluster's topic and the other way round:

==============================  ================================================================
key                             value
==============================  ================================================================
``connector-<name>``            ``{"properties": {...}}``; a tombstone deletes the connector
``target-state-<name>``         ``{"state": "STARTED"|"PAUSED", "state.v2": "...|STOPPED"}``
                                (``state`` says PAUSED for STOPPED, for workers older than
                                KIP-875); a tombstone goes with the connector's
``task-<name>-<n>``             ``{"properties": {...}}``, held back until the commit record
``commit-<name>``               ``{"tasks": N}``: tasks 0..N-1 written since the last commit
                                become the connector's task configs, at once
``restart-connector-<name>``    ``{"include-tasks": bool, "only-failed": bool}``
``logger-cluster-<namespace>``  ``{"level": "DEBUG"}`` (``PUT /admin/loggers?scope=cluster``)
``tasks-fencing-<name>``        ``{"task-count": N}``: the older generations of the connector's
                                tasks (at most N tasks) are fenced out (KIP-618); task configs
                                committed after it are *pending fencing*
``session-key``                 ``{"key": "<base64>", "algorithm": "HmacSHA256",
                                "creation-timestamp": <ms>}``: the key workers sign internal
                                requests with (KIP-507, :mod:`core.request_signing`)
==============================  ================================================================

A commit whose task records are incomplete (compaction removed some, or a leader died halfway)
leaves the connector **inconsistent**: its previous task configs stay, and the herder has the
connector generate and write them again (Kafka's behaviour).

**Fencing.** Records only the leader writes (connector configs and deletions, task configs
and commits, restart requests, session keys) go through a transactional producer whose
``transactional.id`` is ``connect-cluster-<group.id>``, created when the worker becomes leader
(:meth:`claim_write_privileges`). A new leader's producer fences the old one's: a deposed
leader that still believes it leads gets ``PrivilegedWriteError`` and writes nothing. Readers
use ``read_committed``. Target states and logger levels may come from any worker (Kafka
writes them without forwarding) and use the plain producer.

Threads: the log's work thread applies records and calls the listener (after the initial read
only, as Kafka's store); any thread reads snapshots and writes.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from confluent_kafka import KafkaException

from core.distributed.kafka_log import NEVER_GIVE_UP, KafkaBasedLog, LogRecord
from core.distributed.keys import ClusterKeys
from core.kafka import JAVA_MAX_REQUEST_SIZE, Producer, client_config, wrap_kafka_error
from core.request_signing import SessionKey
from core.stores.config import ClusterConfigState, ConfigUpdateListener, TargetState
from plugin_api import ConnectException

__all__ = [
    "FencingState",
    "KafkaConfigStore",
    "PrivilegedWriteError",
    "RestartRequest",
    "connector_config_value",
    "target_state_value",
]

log = logging.getLogger("copycat.distributed.config")

# Kafka's READ_WRITE_TOTAL_TIMEOUT_MS: how long a write and the read back of it may take.
READ_WRITE_TIMEOUT_S = 30.0
CONNECTOR_PREFIX = "connector-"
TASK_PREFIX = "task-"
COMMIT_PREFIX = "commit-"
TARGET_STATE_PREFIX = "target-state-"
RESTART_PREFIX = "restart-connector-"
LOGGER_PREFIX = "logger-cluster-"
TASK_COUNT_PREFIX = "tasks-fencing-"
SESSION_KEY = "session-key"
_TASK_KEY = re.compile(r"^task-(?P<connector>.+)-(?P<task>\d+)$")


class PrivilegedWriteError(ConnectException):
    """A leader-only write failed: this worker's producer was fenced by a newer leader (or
    it is not the leader any more). Nothing of the write is visible."""


@dataclass(frozen=True)
class FencingState:
    """What the config topic says about fencing a connector's older task generations.

    ``task_count_record``: tasks in the generation last fenced for (None: never, so no
    transactional producer was ever started for it); ``pending``: task configs were written
    since (a round of fencing is due before their tasks start); ``generation``: how many task
    config commits were read for the connector (a task checks it did not change while its
    producer started).
    """

    task_count_record: int | None
    pending: bool
    generation: int


@dataclass(frozen=True)
class RestartRequest:
    connector: str
    only_failed: bool
    include_tasks: bool


def _json(value: Mapping[str, Any]) -> bytes:
    # JsonConverter (Jackson): compact, UTF-8, non-ASCII characters written as they are.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def connector_config_value(config: Mapping[str, str]) -> bytes:
    return _json({"properties": dict(config)})


def target_state_value(state: TargetState) -> bytes:
    legacy = TargetState.PAUSED if state is TargetState.STOPPED else state
    return _json({"state": legacy.value, "state.v2": state.value})


def _properties(value: Any) -> dict[str, str] | None:
    if not isinstance(value, dict) or not isinstance(value.get("properties"), dict):
        return None
    return {str(k): str(v) if v is not None else "" for k, v in value["properties"].items()}


class KafkaConfigStore:
    """The config topic as a :class:`core.stores.ConfigStore` (see the module docstring).

    Args:
        topic: ``config.storage.topic``.
        client_props: The worker's Kafka client settings.
        keys: The cluster's key prefix (shared topics) or none.
        transactional_id: The leader's fencing producer id (``connect-cluster-<group.id>``).
    """

    def __init__(
        self,
        topic: str,
        client_props: Mapping[str, Any],
        keys: ClusterKeys,
        transactional_id: str,
    ) -> None:
        self.topic = topic
        self.keys = keys
        self._client_props = dict(client_props)
        self._transactional_id = transactional_id
        self._lock = threading.RLock()
        self._listener: ConfigUpdateListener | None = None
        self.on_restart_request: Callable[[RestartRequest], None] = lambda request: None
        self.on_logger_level: Callable[[str, str], None] = lambda namespace, level: None
        self.on_session_key: Callable[[SessionKey], None] = lambda key: None
        self._session_key: SessionKey | None = None
        self._started = False
        self._offset = -1
        self._configs: dict[str, Mapping[str, str]] = {}
        self._tasks: dict[str, tuple[Mapping[str, str], ...]] = {}
        self._targets: dict[str, TargetState] = {}
        self._deferred: dict[str, dict[int, Mapping[str, str]]] = {}
        self._inconsistent: set[str] = set()
        self._task_counts: dict[str, int] = {}
        self._pending_fencing: set[str] = set()
        self._generations: dict[str, int] = {}
        # The connector config read before each connector's last complete task commit
        # (Kafka's appliedConnectorConfigs): in memory only; a worker reading the topic from
        # its start rebuilds it from the records' order.
        self._applied: dict[str, Mapping[str, str]] = {}
        self._snapshot: ClusterConfigState | None = None
        self._leader_producer: Producer | None = None
        # One leader transaction at a time: REST threads and tasks asking for fencing write
        # concurrently, and a producer has one transaction open at most.
        self._write_lock = threading.Lock()
        # Claims and relinquishments one at a time: a new leader claims from its rebalance and
        # from its first REST write at once, and two producers of one transactional id fence
        # each other (the one kept could be the fenced one).
        self._claim_lock = threading.Lock()
        self.log = KafkaBasedLog(
            topic,
            client_props,
            self._on_record,
            name="configs",
            read_committed=True,
            producer_overrides=NEVER_GIVE_UP,
        )

    # -- life cycle ------------------------------------------------------------------------

    def start(self, timeout_s: float) -> None:
        """Read the whole topic (no listener calls for what was there), then tail it."""
        self.log.start(timeout_s)
        if self.log.partition_count > 1:
            self.log.stop()
            raise ConnectException(
                f"Topic '{self.topic}' supplied via the 'config.storage.topic' property is "
                "required to have a single partition in order to guarantee consistency of "
                f"connector configurations, but found {self.log.partition_count} partitions."
            )
        self._started = True

    def stop(self) -> None:
        self.relinquish_write_privileges()
        self.log.stop()

    def set_listener(self, listener: ConfigUpdateListener | None) -> None:
        self._listener = listener

    # -- reading -----------------------------------------------------------------------------

    def snapshot(self) -> ClusterConfigState:
        with self._lock:
            if self._snapshot is None:
                self._snapshot = ClusterConfigState(
                    self._offset,
                    dict(self._configs),
                    {c: t for c, t in self._tasks.items() if c in self._configs},
                    {c: s for c, s in self._targets.items() if c in self._configs},
                    {c: a for c, a in self._applied.items() if c in self._configs},
                )
            return self._snapshot

    def fencing_state(self, connector: str) -> FencingState:
        with self._lock:
            return FencingState(
                self._task_counts.get(connector),
                connector in self._pending_fencing,
                self._generations.get(connector, 0),
            )

    def session_key(self) -> SessionKey | None:
        """The last session key read from the topic (KIP-507), or None: none written yet."""
        with self._lock:
            return self._session_key

    def inconsistent(self) -> set[str]:
        """Connectors whose last task commit was incomplete (their tasks need rewriting)."""
        with self._lock:
            return set(self._inconsistent)

    def refresh(self, timeout_s: float = READ_WRITE_TIMEOUT_S) -> ClusterConfigState:
        """Read to the end of the topic, then return the snapshot.

        Raises:
            ConnectException: the end was not reached in time.
        """
        try:
            self.log.read_to_end().result(timeout_s)
        except FutureTimeout:
            raise ConnectException(
                f"could not read config topic {self.topic} to its end within {timeout_s:g} s "
                "(the Kafka cluster may be unreachable)"
            ) from None
        return self.snapshot()

    # -- applying records (the log's work thread) -------------------------------------------------

    def _on_record(self, record: LogRecord) -> None:
        key = self.keys.decode_str(record.key)
        if key is None:
            return  # another cluster's record (shared topics), or no key
        try:
            value = json.loads(record.value) if record.value is not None else None
        except ValueError:
            log.error("ignoring config record %s: its value is not JSON", key)
            return
        with self._lock:
            self._offset = record.offset + 1
            self._snapshot = None
            notify = self._apply(key, value)
        if notify is not None and self._started:
            try:
                notify()
            except Exception:  # noqa: BLE001 - a listener bug must not stop the log
                log.exception("config listener failed on record %s", key)

    def _apply(self, key: str, value: Any) -> Callable[[], None] | None:
        """Apply one record (lock held); return the listener call to make after releasing it."""
        listener = self._listener
        if key.startswith(TARGET_STATE_PREFIX):
            return self._apply_target_state(key[len(TARGET_STATE_PREFIX) :], value, listener)
        if key.startswith(CONNECTOR_PREFIX):
            name = key[len(CONNECTOR_PREFIX) :]
            if value is None:
                self._remove(name)
                log.info("connector %s removed", name)
                return (lambda: listener.on_connector_config_removed(name)) if listener else None
            props = _properties(value)
            if props is None:
                log.error("ignoring config of connector %s: no 'properties' object", name)
                return None
            self._configs[name] = MappingProxyType(props)
            self._targets.setdefault(name, TargetState.STARTED)
            return (lambda: listener.on_connector_config_update(name)) if listener else None
        if key.startswith(TASK_PREFIX):
            match = _TASK_KEY.match(key)
            props = _properties(value)
            if match is None or props is None:
                log.error("ignoring task config record %s: bad key or value", key)
                return None
            self._deferred.setdefault(match["connector"], {})[int(match["task"])] = (
                MappingProxyType(props)
            )
            return None
        if key.startswith(COMMIT_PREFIX):
            return self._apply_commit(key[len(COMMIT_PREFIX) :], value, listener)
        if key.startswith(RESTART_PREFIX):
            if not isinstance(value, dict):
                return None
            request = RestartRequest(
                key[len(RESTART_PREFIX) :],
                value.get("only-failed") is True,
                value.get("include-tasks") is True,
            )
            return lambda: self.on_restart_request(request)
        if key.startswith(LOGGER_PREFIX):
            if not isinstance(value, dict) or not isinstance(value.get("level"), str):
                return None
            namespace, level = key[len(LOGGER_PREFIX) :], value["level"]
            return lambda: self.on_logger_level(namespace, level)
        if key.startswith(TASK_COUNT_PREFIX):
            name = key[len(TASK_COUNT_PREFIX) :]
            count = value.get("task-count") if isinstance(value, dict) else None
            if not isinstance(count, int) or count < 0:
                log.error("ignoring task count record of connector %s: bad value %r", name, value)
                return None
            self._task_counts[name] = count
            self._pending_fencing.discard(name)
            return None
        if key == SESSION_KEY:
            return self._apply_session_key(value)
        log.debug("ignoring config record with unknown key %s", key)
        return None

    def _apply_session_key(self, value: Any) -> Callable[[], None] | None:
        if value is None:
            log.error("ignoring session key because it is unexpectedly null")
            return None
        try:
            session_key = SessionKey.from_record(value)
        except ValueError as exc:  # the message names the field, never the key
            log.error("ignoring session key record: %s", exc)
            return None
        self._session_key = session_key
        return lambda: self.on_session_key(session_key)

    def _apply_target_state(
        self, name: str, value: Any, listener: ConfigUpdateListener | None
    ) -> Callable[[], None] | None:
        if value is None:
            self._targets.pop(name, None)
            if name in self._configs:
                self._targets[name] = TargetState.STARTED
            return None  # the connector's own tombstone tells the listener
        if not isinstance(value, dict):
            return None
        raw = value.get("state.v2")
        if not isinstance(raw, str):
            raw = value.get("state")  # written by a worker older than KIP-875
        try:
            state = TargetState(raw)
        except ValueError:
            log.error("ignoring target state %r of connector %s", raw, name)
            return None
        previous = self._targets.get(name)
        self._targets[name] = state
        if state is previous or name not in self._configs or listener is None:
            return None
        return lambda: listener.on_target_state_change(name)

    def _apply_commit(
        self, name: str, value: Any, listener: ConfigUpdateListener | None
    ) -> Callable[[], None] | None:
        deferred = self._deferred.pop(name, {})
        if name not in self._configs:
            return None  # deleted, and compaction removed its records: nothing to apply
        count = value.get("tasks") if isinstance(value, dict) else None
        if not isinstance(count, int) or count < 0:
            log.error("ignoring task commit of connector %s: bad value %r", name, value)
            return None
        if any(i not in deferred for i in range(count)):
            log.warning(
                "connector %s: its last task commit (%d tasks) is incomplete in %s; its tasks "
                "will be generated again",
                name,
                count,
                self.topic,
            )
            self._inconsistent.add(name)
            return None
        self._inconsistent.discard(name)
        self._tasks[name] = tuple(deferred[i] for i in range(count))
        self._applied[name] = self._configs[name]
        self._generations[name] = self._generations.get(name, 0) + 1
        self._pending_fencing.add(name)
        return (lambda: listener.on_task_configs_update(name)) if listener else None

    def _remove(self, name: str) -> None:
        self._configs.pop(name, None)
        self._tasks.pop(name, None)
        self._applied.pop(name, None)
        self._targets.pop(name, None)
        self._deferred.pop(name, None)
        self._inconsistent.discard(name)
        # The task count record stays (Kafka writes no tombstone for it): a connector created
        # again under the same name fences the old one's tasks before its own start.
        self._pending_fencing.discard(name)

    # -- writing -------------------------------------------------------------------------------

    def claim_write_privileges(self) -> None:
        """Become the one writer of leader records: a transactional producer whose
        initialisation fences any previous leader's (called when this worker becomes leader).

        Raises:
            PrivilegedWriteError: the producer could not be initialised.
        """
        with self._claim_lock:
            if self._leader_producer is None:
                self._leader_producer = self._initialised_producer()
                log.info("claimed write privileges on config topic %s", self.topic)

    def _initialised_producer(self) -> Producer:
        """A transactional producer of the leader's id, initialised (fencing any other)."""
        producer = Producer(
            client_config(
                self._client_props,
                {
                    "client.id": f"{self._transactional_id}-leader",
                    "transactional.id": self._transactional_id,
                    "acks": "all",
                    "enable.idempotence": True,
                    "message.max.bytes": JAVA_MAX_REQUEST_SIZE,
                },
            )
        )
        try:
            producer.init_transactions(READ_WRITE_TIMEOUT_S)
        except KafkaException as exc:
            raise PrivilegedWriteError(
                f"cannot claim write privileges on config topic {self.topic}: "
                f"{wrap_kafka_error(exc, 'init_transactions')}"
            ) from exc
        return producer

    def has_write_privileges(self) -> bool:
        return self._leader_producer is not None

    def relinquish_write_privileges(self) -> None:
        with self._claim_lock:
            producer, self._leader_producer = self._leader_producer, None
        if producer is None:
            return
        try:
            producer.flush(0)
        except KafkaException as exc:  # a fenced producer: nothing of it is wanted any more
            log.debug("leader producer of config topic %s given up: %s", self.topic, exc)

    def _write_privileged(self, records: Sequence[tuple[str, bytes | None]]) -> None:
        with self._write_lock:
            self._commit_privileged(records)
        self._read_back()

    def _commit_privileged(self, records: Sequence[tuple[str, bytes | None]]) -> None:
        producer = self._leader_producer
        if producer is None:
            raise PrivilegedWriteError(
                f"cannot write to config topic {self.topic}: this worker is not the leader"
            )
        try:
            producer.begin_transaction()
            for key, value in records:
                producer.produce(self.topic, value, self.keys.encode(key))
            producer.commit_transaction(READ_WRITE_TIMEOUT_S)
        except KafkaException as exc:
            self.relinquish_write_privileges()
            raise PrivilegedWriteError(
                f"write to config topic {self.topic} refused: "
                f"{wrap_kafka_error(exc, 'leader transaction')} (a newer leader fenced this "
                "worker, or the broker is unavailable)"
            ) from exc

    def _read_back(self) -> None:
        """Read a write just made back from the topic (it applies here once read).

        Raises:
            ConnectException: the topic could not be read; the write itself was made.
        """
        try:
            self.refresh()
        except ConnectException as exc:
            raise ConnectException(
                f"Request timed out: the write to config topic {self.topic} was made, but "
                f"reading it back failed: {exc}"
            ) from exc

    def _write_plain(self, key: str, value: bytes | None) -> None:
        future = self.log.send(self.keys.encode(key), value)
        try:
            future.result(READ_WRITE_TIMEOUT_S)
        except FutureTimeout:
            # The producer goes on retrying (until its delivery timeout): the write may land.
            raise ConnectException(
                f"Request timed out: the write of {key} to config topic {self.topic} was not "
                f"acknowledged within {READ_WRITE_TIMEOUT_S:g} s (the Kafka cluster may be "
                "unreachable); it is still being retried and takes effect if the brokers "
                "take it"
            ) from None
        self._read_back()

    def put_connector_config(
        self, connector: str, config: Mapping[str, str], target_state: TargetState | None
    ) -> None:
        """Leader only: the target state first (a new connector starts in it), then the config."""
        records: list[tuple[str, bytes | None]] = []
        if target_state is not None:
            records.append((TARGET_STATE_PREFIX + connector, target_state_value(target_state)))
        records.append((CONNECTOR_PREFIX + connector, connector_config_value(config)))
        self._write_privileged(records)

    def remove_connector_config(self, connector: str) -> None:
        """Leader only: tombstones for the connector's config and target state."""
        self._write_privileged(
            [(CONNECTOR_PREFIX + connector, None), (TARGET_STATE_PREFIX + connector, None)]
        )

    def put_task_configs(self, connector: str, configs: Sequence[Mapping[str, str]]) -> None:
        """Leader only: every task's record, then the commit, in one transaction."""
        records: list[tuple[str, bytes | None]] = [
            (f"{TASK_PREFIX}{connector}-{i}", connector_config_value(c))
            for i, c in enumerate(configs)
        ]
        records.append((COMMIT_PREFIX + connector, _json({"tasks": len(configs)})))
        self._write_privileged(records)

    def put_task_count_record(self, connector: str, count: int) -> None:
        """Leader only: the connector's older task generations are fenced out (KIP-618)."""
        self._write_privileged([(TASK_COUNT_PREFIX + connector, _json({"task-count": count}))])

    def put_session_key(self, session_key: SessionKey) -> None:
        """Leader only: the cluster's new session key (KIP-507)."""
        self._write_privileged([(SESSION_KEY, _json(session_key.to_record()))])

    def put_restart_request(self, request: RestartRequest) -> None:
        """Leader only (Kafka forwards restarts to the leader)."""
        value = _json({"include-tasks": request.include_tasks, "only-failed": request.only_failed})
        self._write_privileged([(RESTART_PREFIX + request.connector, value)])

    def put_target_state(self, connector: str, state: TargetState) -> None:
        """Any worker (pause and resume are not forwarded in Kafka either)."""
        self._write_plain(TARGET_STATE_PREFIX + connector, target_state_value(state))

    def put_logger_level(self, namespace: str, level: str) -> None:
        """Any worker: every worker applies it when it reads the record."""
        self._write_plain(LOGGER_PREFIX + namespace, _json({"level": level}))
