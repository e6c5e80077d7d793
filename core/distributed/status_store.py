"""Connector and task statuses in ``status.storage.topic``: the Kafka :class:`StatusStore`.

Every worker writes the statuses of what it runs and reads everybody's, so
``GET /connectors/<name>/status`` answers the same on every worker (each answers from its
copy of the topic). Kafka Connect's records:

* ``status-connector-<name>`` / ``status-task-<name>-<n>``: ``{"state": ..., "trace": ...,
  "worker_id": "host:port", "generation": N, "version": ...}`` (``trace`` null when there is
  none, ``version`` the plugin's, Kafka 4.x); a tombstone when the connector or task is gone;
* ``status-topic-<topic>:connector-<name>``: ``{"topic": {"name", "connector", "task",
  "discoverTimestamp"}}``, the topics a connector used (KIP-558); tombstoned on reset.

``generation`` is the group generation of the worker that wrote the status: every status is
stamped with the one its worker is in now (a task's PAUSED and RUNNING on a pause and a resume
too, as Kafka's onPause/onResume write them), but for one. A task stopping
writes UNASSIGNED stamped with the generation its worker was in when told to stop: a rebalance
stops the work it revokes before it adopts its new generation, as Kafka's onRevoked comes
before onAssigned. An UNASSIGNED (without a trace: a stop's) of a generation not newer than the
RUNNING it would replace is ignored on reading, whoever wrote either, as Kafka's
readTaskStatus does (KAFKA-12525): a task moved off a worker in the generation it started in
keeps showing its RUNNING there until the new owner's RUNNING (the new owner writes no
UNASSIGNED over a RUNNING when the task starts, core/worker.py); a task that ran through a
rebalance shows UNASSIGNED once stopped; a worker that gave a task up and writes UNASSIGNED
after the new owner's RUNNING hides nothing. A Spark task whose attempt was lost says so in an
UNASSIGNED with a trace, which applies.
So is a task status another worker wrote in an older generation than the one held, when the
held one is of this worker's group as it is now (its generation not beyond this worker's): a
zombie worker (frozen, cut off) whose task was moved writes FAILED when it wakes up and its
task is fenced out, after the new owner wrote RUNNING (Kafka writes those with ``putSafe``,
which skips them only once the zombie has read the newer status; it usually has not). A thawed
zombie that rejoins in a generation newer than the new owner's stops the task it lost in the
generation it ran in, so its UNASSIGNED hides nothing either.

A connector's status written by another worker in an older generation than the one held is
ignored by the same two rules (any such status once this worker's group has reached the held
one's generation; an UNASSIGNED over a RUNNING always), which Kafka does not have: its
readConnectorStatus takes every record, and the ``putSafe`` of a stop's UNASSIGNED skips only
what its writer has read. A worker cut off from the group coordinator stops its connectors and
writes their UNASSIGNED, which waits in its producer until the broker is back and may land
after the RUNNING of the connector's new owner; taken, it would show the running connector
UNASSIGNED on every worker until its owner writes again.

The writer applies what it writes to its own copy by the same rules, so every worker answers
alike (Kafka's workers update theirs only on reading the topic back). A task on Spark is its
driving worker's own, though its RUNNING names the executor (``_writer``).

Generations start again at 1 when the group is recreated: a group left empty with nothing
committed is deleted by the broker (a whole cluster stopped for a while, or Copycat taking
over from a Kafka Connect cluster), so the topic may hold statuses of generations the new
group has not reached. Those are no proof that a newer status is late: comparing with them
hid every status the new cluster wrote (REST showed the old cluster's UNASSIGNED for running
tasks, on every worker but the writer). Until this worker has joined (generation 0, reading
the topic at start), records apply in the topic's order, but for the UNASSIGNED rule.

Threads: the log's work thread applies records; task threads and the herder write (sends are
asynchronous, in order per key) and read.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from core.distributed.kafka_log import KafkaBasedLog, LogRecord
from core.distributed.keys import ClusterKeys
from core.status import State, Status

__all__ = ["KafkaStatusStore", "TopicStatus", "status_value"]

log = logging.getLogger("copycat.distributed.status")

CONNECTOR_PREFIX = "status-connector-"
TASK_PREFIX = "status-task-"
TOPIC_PREFIX = "status-topic-"
TOPIC_SEPARATOR = ":connector-"
_TASK_KEY = re.compile(r"^status-task-(?P<connector>.+)-(?P<task>\d+)$")
# A task on the Spark runtime is reported as running on its executor, naming the worker that
# drives it (core/spark/runner.py, SparkTaskRunner.where): "executor 0 on h (Spark job group
# g, driver w:8083)", or "w:8083 (Spark job group g)" before it is placed. Its UNASSIGNED
# names the worker only.
_SPARK_WORKER = re.compile(
    r"^(?:executor .* \(Spark job group .*, driver (?P<driver>\S+)\)"
    r"|(?P<worker>\S+) \(Spark job group .*\))$"
)


@dataclass(frozen=True)
class TopicStatus:
    topic: str
    connector: str
    task: int
    discover_timestamp_ms: int


def status_value(status: Status) -> bytes:
    body: dict[str, Any] = {
        "state": status.state.value,
        "trace": status.trace,
        "worker_id": status.worker_id,
        "generation": status.generation,
    }
    if status.version is not None:
        body["version"] = status.version
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def _parse_status(value: Any) -> Status | None:
    if not isinstance(value, dict):
        return None
    try:
        state = State(value.get("state"))
    except ValueError:
        return None
    worker = value.get("worker_id")
    generation = value.get("generation")
    trace = value.get("trace")
    version = value.get("version")
    return Status(
        state,
        worker if isinstance(worker, str) else "",
        trace=trace if isinstance(trace, str) and trace else None,
        version=version if isinstance(version, str) else None,
        generation=generation if isinstance(generation, int) else 0,
    )


def _writer(worker_id: str) -> str:
    """The worker that wrote a status naming ``worker_id``: itself, or for a task on Spark,
    the worker driving it (see _SPARK_WORKER)."""
    if "(Spark job group " not in worker_id:
        return worker_id
    found = _SPARK_WORKER.match(worker_id)
    if found is None:
        return worker_id
    return found["driver"] or found["worker"]


class KafkaStatusStore:
    """The status topic as a :class:`core.stores.StatusStore` (see the module docstring)."""

    def __init__(self, topic: str, client_props: Mapping[str, Any], keys: ClusterKeys) -> None:
        self.topic = topic
        self.keys = keys
        self._lock = threading.Lock()
        self._connectors: dict[str, Status] = {}
        self._tasks: dict[tuple[str, int], Status] = {}
        self._topics: dict[str, dict[str, TopicStatus]] = {}
        # Called (the log's reader thread) when another worker's reset or delete tombstones a
        # connector's active topic known here: this worker's tasks forget theirs too, and
        # record them again with their next record, as Kafka's tasks do (set by the herder).
        self.on_topics_reset: Callable[[str], None] = lambda connector: None
        # The group generation stamped on what this worker writes (set by the herder).
        self.generation = 0
        self.log = KafkaBasedLog(topic, client_props, self._on_record, name="statuses")

    def start(self, timeout_s: float) -> None:
        self.log.start(timeout_s)

    def stop(self) -> None:
        self.log.stop()

    def flush(self, timeout_s: float) -> None:
        self.log.flush(timeout_s)

    # -- reading records (the log's work thread) ----------------------------------------------

    def _on_record(self, record: LogRecord) -> None:
        key = self.keys.decode_str(record.key)
        if key is None:
            return
        try:
            value = json.loads(record.value) if record.value is not None else None
        except ValueError:
            log.warning("ignoring status record %s: its value is not JSON", key)
            return
        if key.startswith(CONNECTOR_PREFIX):
            name = key[len(CONNECTOR_PREFIX) :]
            status = _parse_status(value)
            with self._lock:
                if value is None:
                    self._connectors.pop(name, None)
                elif status is not None and not self._stale_connector(
                    self._connectors.get(name), status, self.generation
                ):
                    self._connectors[name] = status
        elif key.startswith(TASK_PREFIX):
            match = _TASK_KEY.match(key)
            if match is None:
                return
            task_key = (match["connector"], int(match["task"]))
            status = _parse_status(value)
            with self._lock:
                if value is None:
                    self._tasks.pop(task_key, None)
                elif status is not None and not self._stale(
                    self._tasks.get(task_key), status, self.generation
                ):
                    self._tasks[task_key] = status
        elif key.startswith(TOPIC_PREFIX) and TOPIC_SEPARATOR in key:
            topic, _, connector = key[len(TOPIC_PREFIX) :].partition(TOPIC_SEPARATOR)
            if value is None:
                with self._lock:
                    topics = self._topics.get(connector, {})
                    known = topics.pop(topic, None)
                    if not topics:
                        self._topics.pop(connector, None)  # (a deleted connector's, for good)
                if known is not None:  # (this worker's own reset dropped it already)
                    log.info("connector %s: active topic %s reset", connector, topic)
                    self.on_topics_reset(connector)
                return
            with self._lock:
                inner = value.get("topic") if isinstance(value, dict) else None
                if not isinstance(inner, dict):
                    return
                self._topics.setdefault(connector, {})[topic] = TopicStatus(
                    topic,
                    connector,
                    int(inner.get("task", 0)),
                    int(inner.get("discoverTimestamp", 0)),
                )

    @staticmethod
    def _stale(current: Status | None, incoming: Status, generation: int) -> bool:
        """Whether ``incoming`` is older news than ``current`` (see the module docstring), for
        a worker whose group is at ``generation``."""
        if current is None:
            return False
        other_writer = _writer(current.worker_id) != _writer(incoming.worker_id)
        if other_writer and incoming.generation < current.generation <= generation:
            return True  # a status from the task's previous owner, written too late
        return (
            incoming.state is State.UNASSIGNED
            and incoming.trace is None  # a stop's, not a Spark attempt lost (which says why)
            and current.state is State.RUNNING
            and current.generation >= incoming.generation
        )

    @staticmethod
    def _stale_connector(current: Status | None, incoming: Status, generation: int) -> bool:
        """Whether a connector's ``incoming`` status is a previous owner's, written after the
        present owner's (see the module docstring), for a worker whose group is at
        ``generation``."""
        if current is None or _writer(current.worker_id) == _writer(incoming.worker_id):
            return False
        if incoming.generation >= current.generation:
            return False
        if current.generation <= generation:
            return True
        # Whatever this worker's generation: a stop of an older generation by another worker.
        return (
            incoming.state is State.UNASSIGNED
            and incoming.trace is None
            and current.state is State.RUNNING
        )

    # -- StatusStore ------------------------------------------------------------------------------

    def _send(self, key: str, value: bytes | None) -> None:
        self.log.send(self.keys.encode(key), value)

    def _stamped(self, status: Status) -> Status:
        if status.generation:
            # A stopped task's UNASSIGNED, in the generation it was stopped in (or a status
            # changed in place by update_task, which keeps its own).
            return status
        return replace(status, generation=self.generation)

    def set_connector(self, name: str, status: Status) -> None:
        stamped = self._stamped(status)
        with self._lock:
            if not self._stale_connector(self._connectors.get(name), stamped, self.generation):
                self._connectors[name] = stamped
        self._send(CONNECTOR_PREFIX + name, status_value(stamped))

    def set_task(self, name: str, task: int, status: Status) -> None:
        stamped = self._stamped(status)
        with self._lock:
            if not self._stale(self._tasks.get((name, task)), stamped, self.generation):
                self._tasks[(name, task)] = stamped
        self._send(f"{TASK_PREFIX}{name}-{task}", status_value(stamped))

    def update_task(self, name: str, task: int, **changes: object) -> None:
        """Change fields of the task's present status, which keeps its worker and generation
        unless changed: not for a new state the task reports (a pause, a resume), which is a
        status of this worker's present generation (``set_task``)."""
        with self._lock:
            current = self._tasks.get((name, task))
        if current is not None:
            self.set_task(name, task, replace(current, **changes))  # type: ignore[arg-type]

    def remove_connector(self, name: str) -> None:
        with self._lock:
            tasks = [t for (c, t) in self._tasks if c == name]
            self._connectors.pop(name, None)
            for task in tasks:
                self._tasks.pop((name, task), None)
        self._send(CONNECTOR_PREFIX + name, None)
        for task in tasks:
            self._send(f"{TASK_PREFIX}{name}-{task}", None)

    def remove_task(self, name: str, task: int) -> None:
        with self._lock:
            self._tasks.pop((name, task), None)
        self._send(f"{TASK_PREFIX}{name}-{task}", None)

    def connector(self, name: str) -> Status | None:
        with self._lock:
            return self._connectors.get(name)

    def task(self, name: str, task: int) -> Status | None:
        with self._lock:
            return self._tasks.get((name, task))

    def tasks_of(self, name: str) -> dict[int, Status]:
        with self._lock:
            return {t: s for (c, t), s in self._tasks.items() if c == name}

    def connectors(self) -> list[str]:
        """Every connector with a status of its own or of one of its tasks."""
        with self._lock:
            return sorted(set(self._connectors) | {c for (c, _) in self._tasks})

    # -- topic tracking (KIP-558) --------------------------------------------------------------

    def put_topic(self, connector: str, topic: str, task: int) -> None:
        """Record that ``connector``'s task used ``topic`` (once per topic)."""
        with self._lock:
            if topic in self._topics.get(connector, {}):
                return
            status = TopicStatus(topic, connector, task, int(time.time() * 1000))
            self._topics.setdefault(connector, {})[topic] = status
        log.info("connector %s: topic %s active (task %d)", connector, topic, task)
        value = {
            "topic": {
                "name": topic,
                "connector": connector,
                "task": task,
                "discoverTimestamp": status.discover_timestamp_ms,
            }
        }
        self._send(
            f"{TOPIC_PREFIX}{topic}{TOPIC_SEPARATOR}{connector}",
            json.dumps(value, separators=(",", ":")).encode(),
        )

    def topics_of(self, connector: str) -> list[str]:
        with self._lock:
            return sorted(self._topics.get(connector, {}))

    def reset_topics(self, connector: str) -> None:
        with self._lock:
            topics = list(self._topics.pop(connector, {}))
        log.info("connector %s: resetting active topics %s", connector, topics)
        for topic in topics:
            self._send(f"{TOPIC_PREFIX}{topic}{TOPIC_SEPARATOR}{connector}", None)
