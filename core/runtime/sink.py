"""The sink task loop: consume as group ``connect-<name>``, put() via the host, commit after flush.

Like :mod:`core.source_task`, the loop is driven from outside (``iteration()`` in a loop) and
owns no thread. Offsets are committed to Kafka only with what the task's ``pre_commit()``
returns (KIP-89), so a record is committed only once the task says it is durable; a crash
redelivers everything after the last commit (at-least-once).

Exactly-once sinks keep their offsets in the target, atomically with the data: their
``pre_commit()`` returns nothing (or only what the target already holds), and on ``start()``
/ ``open()`` they rewind with ``context.offset()`` to where the target says. The loop starts
fetching a newly assigned partition exactly there: the offsets go into the consumer's
assignment from the rebalance callback itself (:meth:`SinkTaskLoop._on_assign`), so not one
record from the group's committed offset (or ``auto.offset.reset``) reaches ``put()`` first.
Every other newly assigned partition starts at its position, looked up there as Kafka's
``consumer.position()`` (the committed offset, else ``auto.offset.reset``'s end of the log),
and the next commit that has anything new commits it too, as Kafka Connect's does: a
partition the task has not read from yet keeps its place across restarts, stop and resume.
"""

from __future__ import annotations

import collections
import itertools
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from core.errors import ErrorReporter
from core.kafka import wrap_kafka_error
from core.runtime.counters import TaskCounters
from core.runtime.spec import ErrorsPolicy
from core.runtime.topic_ids import TopicIds
from core.topic_names import (
    JavaRegexError,
    compile_topics_regex,
    distinct_topics,
    matching_topics,
    topic_name_error,
)
from isolation import (
    ConsumedBatch,
    Frame,
    HostClient,
    MessageBatch,
    RemotePluginError,
    RemoteRetriableError,
    SinkActions,
    retry_backoff_s,
)
from plugin_api import ConnectException, RetriableException

log = logging.getLogger("copycat.sink")

# Records handed to one put() unless the consumer's max.poll.records says otherwise (Kafka's
# default there is 500): large enough that the host round trip (~7 us) is noise, small enough
# that a put() of 1 KiB records stays a few MB. Kept above Kafka's default, a documented
# deviation (docs/operator-guide.md); an explicit max.poll.records is honoured.
MAX_RECORDS_PER_PUT = 2_000
# The consumer setting that bounds the records of one put(), as in Kafka Connect, where each
# put() gets what one poll() returned.
MAX_POLL_RECORDS = "max.poll.records"
# The most messages confluent-kafka's consume() returns in one call (it refuses a larger
# count); a larger max.poll.records (Kafka allows any int) gets this many per put().
CONSUME_MAX_MESSAGES = 1_000_000
# How long the loop waits for a first record, while the host is idle, before it checks
# commits and stop requests.
CONSUME_TIMEOUT_S = 0.2
# While the host works on a put(), how long the loop waits to fill the next batch before it
# settles that put(). librdkafka's batch consume waits for the whole count, unlike the Java
# consumer's poll(); waiting CONSUME_TIMEOUT_S here held every burst's last put() back 200 ms.
BUSY_CONSUME_TIMEOUT_S = 0.01
# Poll interval while a stopping task's consumer finishes its group join (see _finish_join),
# and the share of the stop's graceful timeout that may take: the rest is left for the close,
# before the driver kills the plugin host.
JOIN_POLL_S = 0.1
JOIN_SHARE_OF_STOP_TIMEOUT = 0.8
# The share of the stop's graceful timeout the loop waits for the broker in all (the final
# synchronous commit, the consumer's close) before it leaves what is still running to its own
# thread and returns: the rest is for the plugin host's exit. A close whose LeaveGroup is
# held behind a JoinGroup (Apache Kafka holds one until a member that died ends its session,
# 45 s by default) takes librdkafka's whole 5 s request timeout, the default graceful timeout;
# a synchronous commit to an unreachable broker blocked 45.8 s.
STOP_SHARE_OF_TIMEOUT = 0.9
# A task whose consumer has been joining its group this long, with no assignment, says so
# (and again each time as long again passes): it reads nothing meanwhile, and on the dev broker
# such a join may never complete (see _finish_join). Only while a subscribed topic exists:
# librdkafka does not join at all before one does, and the sink is then waiting, not stuck.
JOIN_WARN_S = 60.0
# A topics.regex sink matches topic names itself (whole names, Java's syntax, no internal
# topics: see core.topic_names) and subscribes to the list; it lists the cluster's topics this
# often to follow topics created and deleted. Kafka Connect's consumer sees new topics at each
# metadata.max.age.ms (5 minutes); 10 s is librdkafka's refresh the sink consumer uses for
# partitions added to its topics (topic.metadata.refresh.interval.ms, SINK_CONSUMER_DEFAULTS).
TOPICS_REGEX_REFRESH_S = 10.0
# How long one listing of the cluster's topics may hold the loop (it polls nothing meanwhile),
# and how soon a listing that failed, or a matched topic reported missing, is tried again.
METADATA_TIMEOUT_S = 2.0
TOPICS_REGEX_RETRY_S = 1.0
# How long the rebalance callback may wait for the broker to learn the positions of the
# partitions just assigned (the group's committed offsets, then the log ends auto.offset.reset
# points at), as Kafka's consumer.position() blocks there. Partitions still unknown then are
# assigned as before (librdkafka looks their start up itself) and logged.
POSITION_LOOKUP_TIMEOUT_S = 10.0
# librdkafka's auto.offset.reset values (and the Java client's), by what they reset to; any
# other value (Kafka's none, librdkafka's error) resets nowhere: the task fails naming the
# partition (see SinkTaskLoop._no_offset).
EARLIEST_RESETS = frozenset({"earliest", "smallest", "beginning"})
LATEST_RESETS = frozenset({"latest", "largest", "end"})
# ListOffsets' timestamps for a log's end and its beginning (librdkafka's OFFSET_END and
# OFFSET_BEGINNING), which offsets_for_times() passes on as they are.
LIST_OFFSETS_LATEST = -1
LIST_OFFSETS_EARLIEST = -2
# How long a task failing under auto.offset.reset=none asks the coordinator which other
# partitions lack a committed offset, to name them all.
NO_OFFSET_LOOKUP_TIMEOUT_S = 5.0
# The share of the stop's graceful timeout the closing commit waits for the dead letter queue
# to acknowledge what was sent to it: the rest is for the commit and the consumer's close.
# Dead letters still unacknowledged then are given up on, and the commit stops before them.
DLQ_SHARE_OF_STOP_TIMEOUT = 0.5
# How long a sink whose worker went quiet waits for its consumer's close (its LeaveGroup)
# before it leaves the close to finish on its own thread (see SinkTaskLoop.relinquish).
RELINQUISH_WAIT_S = 5.0
# Backoff before a put() that raised RetriableException is retried with the same batch, when
# the task did not ask for another with context.timeout().
DEFAULT_RETRY_BACKOFF_MS = 1_000
# The errant record reporter may report records of earlier batches (an asynchronous sink);
# their original bytes are kept this many batches back for the dead letter queue. An older
# one is read again from its partition for it, for up to REPORTED_LOOKUP_TIMEOUT_S.
RECENT_BATCHES_FOR_REPORTS = 4
REPORTED_LOOKUP_TIMEOUT_S = 5.0
# Consumer errors that mean "a subscribed topic does not exist (yet)". Kafka Connect's sink
# waits for such topics and consumes them once they are created; librdkafka reports them once
# per subscription change and keeps looking (literal topics are looked up again at once,
# topics.regex at every topic.metadata.refresh.interval.ms, see SINK_CONSUMER_DEFAULTS).
MISSING_TOPIC_ERRORS = frozenset(
    {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC, KafkaError._UNKNOWN_PARTITION}
)
# How soon the topic IDs of the assigned topics are looked up again after one of them was
# missing (deleted: it may be created again at once) or the lookup failed; otherwise they are
# looked up at the consumer's metadata refresh interval (see SinkTaskLoop._check_topic_ids).
TOPIC_ID_RETRY_S = 1.0
# Committed offsets carry the ID of the topic they were read from, as their metadata: a task
# newly assigned a partition (it never knew the old ID) that finds an offset committed under
# another ID resets it to auto.offset.reset instead of starting there in the new topic.
# Kafka Connect commits empty metadata; an offset without this prefix is taken as it is.
TOPIC_ID_METADATA_PREFIX = "copycat.topic.id="
# librdkafka's rebalance protocol is COOPERATIVE only when every configured assignor is
# cooperative, and "cooperative-sticky" is its only cooperative one. The protocol decides how
# a rebalance callback must set the assignment: assign() under EAGER, incremental_assign()
# under COOPERATIVE (the other call fails with _STATE and assigns nothing).
COOPERATIVE_ASSIGNOR = "cooperative-sticky"


# A batch as the loop keeps it: columns, or (on a channel that passes objects) the messages.
Batch = ConsumedBatch | MessageBatch


def max_records_per_put(consumer_config: Mapping[str, Any]) -> int:
    """The records one put() may get: the consumer's max.poll.records (a worker's
    ``consumer.max.poll.records`` or a connector's ``consumer.override.max.poll.records``),
    else :data:`MAX_RECORDS_PER_PUT`.

    Raises:
        ConnectException: max.poll.records is not a positive integer (naming it).
    """
    value = consumer_config.get(MAX_POLL_RECORDS)
    if value is None:
        return MAX_RECORDS_PER_PUT
    # As Java's ConfigDef reads an INT: trimmed, an optional sign, decimal digits ("05" is 5).
    text = str(value).strip()
    records = int(text) if re.fullmatch(r"[+-]?\d+", text) else 0
    if records < 1:
        raise ConnectException(
            f"Invalid value {value} for configuration {MAX_POLL_RECORDS}: "
            "Value must be at least 1 (an integer)"
        )
    return min(records, CONSUME_MAX_MESSAGES)


def offset_reset(consumer_config: Mapping[str, Any]) -> str | None:
    """Where a consumer made from ``consumer_config`` starts a partition its group has no
    committed offset for: ``"earliest"``, ``"latest"`` (librdkafka's default, when the key is
    absent), or None (Kafka's ``none``, librdkafka's ``error``: it fails instead)."""
    value = str(consumer_config.get("auto.offset.reset", "latest")).strip().lower()
    if value in EARLIEST_RESETS:
        return "earliest"
    if value in LATEST_RESETS:
        return "latest"
    return None


def cooperative_protocol(consumer_config: Mapping[str, Any]) -> bool:
    """Whether a consumer made from ``consumer_config`` rebalances cooperatively."""
    strategies = str(consumer_config.get("partition.assignment.strategy", "range,roundrobin"))
    names = [name.strip() for name in strategies.split(",") if name.strip()]
    return bool(names) and all(name == COOPERATIVE_ASSIGNOR for name in names)


class SinkTaskLoop:
    """Drives one sink task living in a plugin host."""

    def __init__(
        self,
        connector: str,
        task_id: int,
        host: HostClient,
        handle: int,
        consumer: Consumer,
        *,
        topics: Sequence[str] = (),
        topics_regex: str | None = None,
        commit_interval_ms: int = 60_000,
        clock: Callable[[], float] = time.monotonic,
        errors: ErrorReporter | None = None,
        cooperative: bool = False,
        finish_join: bool = False,
        join_hold_s: float = 0.0,
        max_records: int = MAX_RECORDS_PER_PUT,
        new_consumer: Callable[[], Consumer] | None = None,
        reset: str | None = "earliest",
        create_missing_topics: bool = False,
        topics_regex_refresh_s: float = TOPICS_REGEX_REFRESH_S,
        topic_ids: TopicIds | None = None,
    ) -> None:
        """``cooperative``: the consumer rebalances with the COOPERATIVE protocol (see
        :func:`cooperative_protocol`); it decides how :meth:`_on_assign` sets start offsets.
        ``finish_join``: a stop lets a group join in progress complete before the consumer
        closes (``sink.group.join.finish.before.close``, the dev broker's, see
        :meth:`_finish_join`), for up to ``join_hold_s`` (the consumer's session timeout)
        past the stop's deadline, on the close's own thread. ``max_records``: the most
        records one put() gets (see :func:`max_records_per_put`). ``new_consumer``: makes a
        consumer like ``consumer``, to rejoin the group after :meth:`relinquish` closed the
        first. ``reset``: the consumer's ``auto.offset.reset``, as :func:`offset_reset`
        reads it (Kafka Connect's sink default, earliest, unless given).
        ``create_missing_topics``: the consumer's ``allow.auto.create.topics`` (see
        :meth:`_waiting_for_topic`); never for a ``topics.regex`` sink.
        ``topics_regex_refresh_s``: how often a ``topics.regex`` sink lists the cluster's
        topics (its consumer's topic.metadata.refresh.interval.ms, which a connector's
        ``metadata.max.age.ms`` sets, as Kafka's consumer refreshes at that age), and how
        often the assigned topics' IDs are looked up with ``topic_ids`` (see
        :meth:`_check_topic_ids`; without it, a topic created again is not noticed)."""
        if bool(topics) == bool(topics_regex):
            raise ConnectException("a sink task needs exactly one of topics or topics.regex")
        self.connector = connector
        self.task_id = task_id
        self.host = host
        self.handle = handle
        self.consumer = consumer
        self.max_records = max_records
        # Kafka's consumer subscribes to a set: topics=v1,v1 consumes v1 once (librdkafka
        # refuses a list with a repeat, naming no topic).
        self.subscribed_topics = distinct_topics(topics)
        self.topics_regex = topics_regex
        self._pattern: re.Pattern[str] | None = None
        self._matched: list[str] = []  # what a topics.regex subscription consumes now
        self._next_match_at = 0.0
        self._regex_waiting_logged = False
        self.commit_interval_s = commit_interval_ms / 1000
        self._clock = clock
        self._next_commit = clock() + self.commit_interval_s
        self._reset = reset
        self._create_missing_topics = create_missing_topics and not topics_regex
        self._regex_refresh_s = topics_regex_refresh_s
        # The ID of each assigned topic as last looked up (see _check_topic_ids), and when
        # to look again: at once for a topic newly assigned.
        self._topic_ids = topic_ids
        self._known_ids: dict[str, str] = {}
        self._next_id_check = math.inf
        # The next offset to consume, per partition: from its assignment on, its position
        # then (see _positions), as Kafka's currentOffsets.
        self._current: dict[tuple[str, int], int] = {}
        # The last committed offset, per partition, or its position at assignment while the
        # task has committed nothing of it (Kafka's lastCommittedOffsets): each commit with
        # anything new commits all of these, so a partition not read from yet gets its
        # position committed too, and a later task starts there, not at auto.offset.reset.
        self._committed: dict[tuple[str, int], int] = {}
        # The first offset put of each partition since it was assigned: where a rewind goes
        # while nothing of it is committed (Kafka's position at assignment).
        self._first_put: dict[tuple[str, int], int] = {}
        # Records consumed past the last committed offsets (or past where the task began
        # reading a partition not committed yet), summed over the partitions: Kafka's
        # sink-record-active-count, kept up to date a batch at a time (see _account).
        self._active = 0
        # KIP-558: the topics of records consumed since the last reset (Kafka's WorkerSinkTask
        # records a record's topic once it is converted, not its assignment). Replaced, not
        # cleared, by forget_topics() (another thread); the loop notices the new set, and
        # records the topic of each partition in _unrecorded at its next batch (see _account:
        # no work per batch otherwise, beyond two attribute reads).
        self._topics_seen: set[str] = set()
        self._seen_at = self._topics_seen  # the set the loop recorded into last
        self._unrecorded: set[tuple[str, int]] = set()
        self._assigned: set[tuple[str, int]] = set()
        self._paused_by_task: set[tuple[str, int]] = set()
        self._retry_batch: Batch | None = None
        # The put() in flight, or the one to retry, is that of records the host holds for the
        # dead letter queue (see _put_held), not the batch's wire.
        self._inflight_held = False
        self._retry_held = False
        self._tolerates_all = errors is not None and errors.tolerate_all
        self._next: Batch | None = None  # consumed, not yet handed to put()
        self._next_frame: Frame | None = None  # put() request for _next, serialized
        self._inflight: Batch | None = None  # in put() in the host now
        self._unaccounted: Batch | None = None  # put, positions not yet noted
        self._retry_at = 0.0
        self._commit_requested = False
        self._pending_seeks: dict[tuple[str, int], int] = {}
        self._failure: BaseException | None = None
        self.errors = errors
        self._retry_started: float | None = None
        self._retry_attempt = 0
        # Batches already put: the errant record reporter may report records of these.
        reporting = errors is not None and (errors.tolerate_all or errors.dlq_topic is not None)
        self._recent: collections.deque[Batch] = collections.deque(
            maxlen=RECENT_BATCHES_FOR_REPORTS if reporting else 0
        )
        self.records_put = 0
        self.progress: tuple[int, float] = (0, 0.0)
        # The task's metrics' counts (core.runtime.counters), shared with its error reporter;
        # offset commits are numbered as Kafka's WorkerSinkTask numbers them (commitSeqno):
        # an asynchronous commit whose callback comes after a newer one started is "skipped".
        self.counters: TaskCounters = errors.counters if errors is not None else TaskCounters()
        self.commit_seq = 0
        self._commit_started = 0.0
        self._async_commits: collections.deque[int] = collections.deque()
        self._missing_topics_logged: set[str] = set()
        self._paused = False  # a framework pause (REST, target state), not the task's own
        self._cooperative = cooperative
        # Rebalance callbacks run so far (they run inside consume()): a consume() during which
        # one ran may return messages of partitions no longer in the assignment it left.
        self._rebalances = 0
        # The consumer has asked to join its group and not yet been given an assignment (see
        # :meth:`_finish_join`); once stopping, rebalance callbacks no longer reach the task.
        self._joining = False
        self._closing = False
        # Partitions the closing commit closes in the task (revoked, or all at a stop): as
        # Kafka's commitOffsets when closing, between pre_commit() and the consumer's commit,
        # so that a close() that fails (a record it reports errant under errors.tolerance=none)
        # commits nothing. _closed: what the task asked as they closed (see _close_once).
        self._to_close: list[tuple[str, int]] | None = None
        self._closed: SinkActions | None = None
        self._finish_join_enabled = finish_join
        self._join_hold_s = join_hold_s
        # Set by stop(): the synchronous commit and the close wait for the broker until then,
        # the closing commit for the dead letter queue until _dlq_deadline.
        self._stop_deadline: float | None = None
        self._dlq_deadline: float | None = None
        # A final commit still running past that deadline, which the close waits for.
        self._unfinished_commit: threading.Thread | None = None
        # The consumer's close the stop left running on its own thread (see _close_consumer).
        self.unfinished_close: threading.Thread | None = None
        self._join_since = 0.0
        self._join_warned_at: float | None = None
        self._new_consumer = new_consumer
        # Left the group because the worker went quiet (see relinquish): the partitions still
        # open in the task are lost, and the next iteration rejoins with a new consumer.
        self._relinquished = False

    @property
    def name(self) -> str:
        return f"{self.connector}-{self.task_id}"

    # -- TaskLoop ------------------------------------------------------------------------------

    @property
    def records_moved(self) -> int:
        return self.records_put

    def take_counters(self) -> tuple[float, ...]:
        self.counters.partitions = len(self._assigned)
        self.counters.commit_seq = self.commit_seq
        return self.counters.take()

    def topics(self) -> set[str]:
        return set(self._topics_seen)

    def forget_topics(self, moved_since: Mapping[tuple[str, int], int] | None = None) -> None:
        """Any thread: a reset of the connector's active topics; the task records each topic
        again with its next record from it, as Kafka's does. ``moved_since`` (the loop's own
        thread only): the :meth:`positions` of a moment since which the reset may have been
        under way; the topics of partitions read past them count at once."""
        kept: set[str] = set()
        if moved_since is not None:
            kept = {t for (t, p), at in self._current.items() if moved_since.get((t, p)) != at}
        self._topics_seen = kept

    def positions(self) -> dict[tuple[str, int], int]:
        """The loop's own thread: each partition's position past what was put (a copy)."""
        return dict(self._current)

    def _record_topics(self, positions: Mapping[tuple[str, int], int]) -> None:
        """Record the topics of the partitions in ``positions`` not recorded since the last
        reset (see _account)."""
        seen = self._topics_seen
        if seen is not self._seen_at:  # a reset: every partition read from counts anew
            self._seen_at = seen
            self._unrecorded = set(self._first_put)
        unrecorded = self._unrecorded
        new = unrecorded.intersection(positions)
        if new:
            unrecorded -= new
            seen.update(topic for topic, _ in new)

    def pause(self) -> None:
        """Pause every assigned partition and keep polling: the consumer stays in its group
        however long the pause lasts (not polling past max.poll.interval.ms would make it
        leave and rebalance the group). Prefetched records are taken back, to be read again
        after :meth:`resume`."""
        if self._paused:
            return
        self._paused = True
        self._drain()
        self._unfetch(set(self._assigned), rewind=True)
        self._pause_partitions(self._assigned)

    @property
    def paused_wait_s(self) -> float:
        """No wait of the driver's own: a paused iteration polls the consumer (waiting
        there), which keeps the task in its group and answers a rebalance promptly, as
        Kafka's paused WorkerSinkTask polls."""
        return 0.0

    def wake(self) -> None:
        """Nothing waits in the loop for its driver (it waits itself)."""

    def resume(self) -> None:
        if not self._paused:
            return
        self._paused = False
        resumed = self._assigned - self._paused_by_task
        if resumed:
            self.consumer.resume([KafkaTopicPartition(t, p) for t, p in resumed])

    def _pause_partitions(self, partitions: set[tuple[str, int]]) -> None:
        if partitions:
            self.consumer.pause([KafkaTopicPartition(t, p) for t, p in partitions])

    # -- subscription -------------------------------------------------------------------------

    def start(self) -> None:
        """Subscribe: to ``topics``, or to the topics ``topics.regex`` matches now (and from
        then on, see :meth:`_match_topics`).

        Raises:
            ConnectException: an illegal topic name in ``topics`` (Kafka's task fails with
                ``InvalidTopicException: Invalid topics: [...]``), or a ``topics.regex`` Java
                would refuse; both name what is at fault.
        """
        if self.topics_regex:
            try:
                self._pattern = compile_topics_regex(self.topics_regex)
            except JavaRegexError as exc:
                raise ConnectException(
                    f"sink task {self.name}: topics.regex={self.topics_regex} is not a valid "
                    f"regular expression: {exc}"
                ) from None
            self._match_topics()
            return
        invalid = [t for t in self.subscribed_topics if topic_name_error(t)]
        if invalid:
            raise ConnectException(
                f"sink task {self.name}: Invalid topics: [{', '.join(invalid)}] "
                f"({topic_name_error(invalid[0])})"
            )
        self._subscribe(self.subscribed_topics)

    def _subscribe(self, topics: list[str]) -> None:
        self.consumer.subscribe(
            topics,
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )
        self._joined_again()

    def _match_topics(self) -> None:
        """Subscribe a ``topics.regex`` sink to the topics its pattern matches now, when that
        changed: Java's whole-name ``matches()`` with internal topics excluded, as Kafka
        Connect's pattern subscription (librdkafka's own regex subscription searches, in
        POSIX syntax, and takes internal topics too). Called at start and then every
        :data:`TOPICS_REGEX_REFRESH_S` from the loop, outside the per-record path; the
        subscription then follows partitions added to those topics by itself."""
        assert self._pattern is not None
        now = self._clock()
        try:
            metadata = self.consumer.list_topics(timeout=METADATA_TIMEOUT_S)
        except KafkaException as exc:
            self._next_match_at = now + TOPICS_REGEX_RETRY_S
            log.debug("task %s: could not list topics to match topics.regex: %s", self.name, exc)
            return
        self._next_match_at = now + self._regex_refresh_s
        listed = [
            name
            for name, topic in metadata.topics.items()
            if topic.error is None or topic.error.code() not in MISSING_TOPIC_ERRORS
        ]
        matched = matching_topics(self._pattern, listed)
        if matched != self._matched:
            log.info(
                "task %s: topics.regex=%s matches %s",
                self.name,
                self.topics_regex,
                ", ".join(matched) or "no topic",
            )
            if matched:
                self._subscribe(matched)
            else:
                self.consumer.unsubscribe()
            self._matched = matched
        if matched:
            self._regex_waiting_logged = False
        elif not self._regex_waiting_logged:
            self._regex_waiting_logged = True
            log.warning(
                "task %s is waiting for a topic matching topics.regex=%s to be created; it "
                "consumes matching topics as soon as they exist",
                self.name,
                self.topics_regex,
            )

    def _subscription(self) -> list[str]:
        """The topics the consumer is subscribed to now."""
        return self._matched if self._pattern is not None else self.subscribed_topics

    def _on_assign(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        """Open the new partitions in the task; where it rewound them (``context.offset()``
        in ``open()``, or earlier in ``start()``), fetching starts exactly there.

        Called by librdkafka from inside ``consume()``/``poll()`` on the task's thread, before
        the new assignment takes effect: a ``seek()`` here fails ("Unknown partition"), and
        had it been retried after the callback, the same ``consume()`` could already have
        returned records from the group's committed offset: duplicates in a target that keeps
        its own offsets. So the callback sets the assignment itself, with those offsets, and
        always: a partition paused before it is assigned (the framework's pause of a task
        created PAUSED or paused during a rebalance, or the task's own ``context.pause()`` in
        ``open()``) is fetched all the same once librdkafka assigns it after the callback, and
        the paused loop then took each fetch back and sought again, fetching without end (a
        sink created PAUSED kept its host at ~0.6 of a core and the broker at ~1 core).
        """
        self._joining = False
        if self._closing or self._relinquished:
            return  # only finishing the join (see _finish_join): confluent-kafka assigns
        self._rebalances += 1
        tps = [(p.topic, p.partition) for p in partitions]
        try:
            self._drain()
            self._assigned.update(tps)
            actions = self.host.open(self.handle, tps)
            self._report_outside_put(actions)
            new = set(tps)
            starts = {tp: offset for tp, offset in actions.seeks.items() if tp in new}
            self._assign_at(consumer, partitions, starts)
            if starts:
                actions = actions._replace(
                    seeks={tp: o for tp, o in actions.seeks.items() if tp not in new}
                )
            self._apply(actions)
            if self._paused:
                self._pause_partitions(set(tps))
        except BaseException as exc:  # raised on the consume() call, reported from there
            self._failure = exc

    def _assign_at(
        self,
        consumer: Consumer,
        partitions: list[KafkaTopicPartition],
        starts: Mapping[tuple[str, int], int],
    ) -> None:
        """Take the assignment ``partitions`` with fetching starting at ``starts`` (where
        the task rewound them), the others at their position (:meth:`_positions`), from within
        the rebalance callback. Each start is the partition's current and last committed
        offset, as Kafka's onPartitionsAssigned records ``consumer.position()`` and its
        rewind() the task's offsets: the next commit with anything new commits it, also for
        a partition the task never reads from. Fetching starts exactly there, so nothing
        between librdkafka's own lookup and ours can make them differ."""
        tps = [(p.topic, p.partition) for p in partitions]
        ids = self._assigned_topic_ids({topic for topic, _ in tps})
        positions = self._positions(consumer, [tp for tp in tps if tp not in starts], ids)
        positions.update(starts)
        assignment = [
            KafkaTopicPartition(topic, partition, positions[(topic, partition)])
            if (topic, partition) in positions
            else KafkaTopicPartition(topic, partition)
            for topic, partition in tps
        ]
        if self._cooperative:
            consumer.incremental_assign(assignment)
        else:
            consumer.assign(assignment)
        for tp, offset in positions.items():
            self._pending_seeks.pop(tp, None)
            self._current[tp] = offset
            self._committed[tp] = offset
        self._recount_active()  # Kafka's assignedOffsets

    def _assigned_topic_ids(self, topics: set[str]) -> dict[str, str]:
        """The IDs of newly assigned ``topics``, looked up from the rebalance callback (with
        the positions, before any record of them is fetched). A topic this task knew under
        another ID was created again: the check that follows resets its partitions. The
        periodic check starts from these (any failure here leaves it to that check, soon)."""
        if self._topic_ids is None or not topics:
            return {}
        try:
            looked_up = self._topic_ids(sorted(topics))
        except KafkaException as exc:
            log.debug("task %s: could not look up its topics' IDs: %s", self.name, exc)
            looked_up = {}
        ids = {topic: topic_id for topic, topic_id in looked_up.items() if topic_id is not None}
        for topic in topics:
            if topic not in ids:
                self._recheck_topic_ids_soon()
            elif self._known_ids.get(topic, ids[topic]) != ids[topic]:
                self._next_id_check = self._clock()  # reset at the next check, at once
            else:
                self._known_ids[topic] = ids[topic]
        self._next_id_check = min(self._next_id_check, self._clock() + self._regex_refresh_s)
        return ids

    def _positions(
        self, consumer: Consumer, tps: list[tuple[str, int]], ids: Mapping[str, str] | None = None
    ) -> dict[tuple[str, int], int]:
        """Kafka's ``consumer.position()`` of each of ``tps``: the group's committed offset,
        else where auto.offset.reset puts it now (the log's end or its beginning; under
        ``none`` nowhere: librdkafka then reports the partition, see :meth:`_no_offset`).
        One OffsetFetch for all of them, one ListOffsets for those without a committed
        offset, from the rebalance callback (it blocks there, as Kafka's position() does).
        A partition the broker could not say for within :data:`POSITION_LOOKUP_TIMEOUT_S`
        is left out (librdkafka looks its start up itself, and it is committed only once
        read from), and logged. An offset committed under another topic ID than the topic's
        now (``ids``: the topic was deleted and created again since) counts as none."""
        if not tps:
            return {}
        deadline = time.monotonic() + POSITION_LOOKUP_TIMEOUT_S
        positions: dict[tuple[str, int], int] = {}
        unset: list[tuple[str, int]] = []  # no committed offset
        failure = "no answer for them"
        try:
            committed = consumer.committed(
                [KafkaTopicPartition(t, p) for t, p in tps], timeout=POSITION_LOOKUP_TIMEOUT_S
            )
            for tp in committed:
                if tp.error is None and tp.offset >= 0 and not self._of_old_topic(tp, ids):
                    positions[(tp.topic, tp.partition)] = tp.offset
                elif tp.error is None:
                    unset.append((tp.topic, tp.partition))
            if unset and self._reset is not None:
                at = LIST_OFFSETS_LATEST if self._reset == "latest" else LIST_OFFSETS_EARLIEST
                found = consumer.offsets_for_times(
                    [KafkaTopicPartition(t, p, at) for t, p in unset],
                    timeout=max(0.1, deadline - time.monotonic()),
                )
                for tp in found:
                    if tp.error is None and tp.offset >= 0:
                        positions[(tp.topic, tp.partition)] = tp.offset
        except KafkaException as exc:
            failure = str(wrap_kafka_error(exc, "the lookup failed"))
        # Under auto.offset.reset=none a partition without a committed offset has no position.
        unknown = [tp for tp in tps if tp not in positions and (self._reset or tp not in unset)]
        if unknown:
            log.warning(
                "task %s: could not learn the start offset of its newly assigned partitions "
                "%s (%s); they start where the consumer finds itself, and their offsets are "
                "committed only once records of them are consumed",
                self.name,
                ", ".join(f"{topic}-{partition}" for topic, partition in unknown),
                failure,
            )
        return positions

    def _of_old_topic(self, tp: KafkaTopicPartition, ids: Mapping[str, str] | None) -> bool:
        """Whether ``tp``'s committed offset was committed under another topic ID than its
        topic's now (see :data:`TOPIC_ID_METADATA_PREFIX`); logged when so."""
        metadata = tp.metadata
        if not ids or not metadata or not metadata.startswith(TOPIC_ID_METADATA_PREFIX):
            return False
        now = ids.get(tp.topic)
        if now is None or metadata[len(TOPIC_ID_METADATA_PREFIX) :] == now:
            return False
        log.warning(
            "task %s: the committed offset %d of %s-%d is of a topic %s deleted since (its "
            "topic ID changed); the partition starts at auto.offset.reset=%s instead",
            self.name,
            tp.offset,
            tp.topic,
            tp.partition,
            tp.topic,
            self._reset,
        )
        return True

    def _on_revoke(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        self._joined_again()  # a rebalance: the group assigns again
        if self._closing or self._relinquished:
            return  # confluent-kafka unassigns; relinquished: the task learns it on rejoin
        self._rebalances += 1
        tps = [(p.topic, p.partition) for p in partitions]
        try:
            self._drain()
            self._unfetch(set(tps), rewind=False)  # no longer ours: the next owner reads them
            self._to_close = tps
            if self._failure is None:
                self._closing_commit(set(tps) - self._of_stale_topics(tps))
            self._close_once()
            actions, self._closed = self._closed, None
            if actions is not None:
                self._report_outside_put(actions)
                self._apply(actions)
        except BaseException as exc:
            self._failure = exc
        finally:
            self._to_close = self._closed = None
            self._forget(tps)

    def _on_lost(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        """The partitions may already belong to another member: close them, commit nothing."""
        self._joined_again()
        if self._closing or self._relinquished:
            return
        self._rebalances += 1
        try:
            self._lose([(p.topic, p.partition) for p in partitions])
        except BaseException as exc:
            self._failure = exc

    def _lose(self, tps: list[tuple[str, int]]) -> None:
        """Close ``tps`` in the task and forget them, committing nothing of them."""
        try:
            self._drain()
            self._unfetch(set(tps), rewind=False)
            self.host.close_partitions(self.handle, tps)
        finally:
            self._forget(tps)

    def relinquish(self, silent_s: float) -> None:
        """Leave the consumer group now, committing nothing and calling no plugin code: the
        worker driving this loop has made no request for ``silent_s``, its session timeout.

        Only for a loop in its plugin host (``task.data.path=host``, see
        core/runtime/in_host.py), whose consumer would otherwise go on heartbeating from
        librdkafka's thread while its worker is frozen, holding its partitions until
        ``max.poll.interval.ms``. A frozen Kafka Connect worker's consumer is frozen too and
        dropped after ``session.timeout.ms``: leaving now gives the group the same. The
        consumer is closed (its LeaveGroup goes out once any join in progress ends: an
        unsubscribe left a member mid-join in the group, nobody serving its assignment); the
        rebalance callbacks do nothing meanwhile. Nothing is lost: what is committed is what
        the task made durable (``pre_commit``), and the next owner starts there; records put
        since are delivered again (at-least-once). The task learns of it when the worker
        drives the loop again, as a Kafka task learns of partitions lost when its thread
        runs again (:meth:`_rejoin`)."""
        if self._relinquished or self._closing or self._new_consumer is None:
            return
        self._relinquished = True
        log.warning(
            "task %s: its worker has made no request for %.1f s (the consumer's "
            "session.timeout.ms): the worker is frozen or stuck, so the task gave up its "
            "consumer group membership and its partitions %s; it rejoins its consumer group "
            "from the committed offsets when the worker drives it again",
            self.name,
            silent_s,
            sorted(self._assigned),
        )
        consumer = self.consumer
        deadline = time.monotonic() + RELINQUISH_WAIT_S
        try:
            if _bounded(consumer.close, deadline, f"copycat-sink-relinquish-{self.name}"):
                log.warning("task %s: its consumer's close goes on in the background", self.name)
        except Exception as exc:  # noqa: BLE001 - nobody to report to; the rejoin tells
            log.warning("task %s: closing its consumer failed: %s", self.name, exc)

    def _rejoin(self, subscribe: bool) -> None:
        """The worker drives the loop again after :meth:`relinquish`: close the partitions
        the task still has open (lost: nothing of them is committed) and, with ``subscribe``
        (not when stopping), join the group again, from the committed offsets."""
        assert self._new_consumer is not None
        self.consumer = self._new_consumer()  # before the task's calls: they may pause, seek
        self._relinquished = False
        self._retry_batch = None  # its partitions are lost; their next owner reads them
        self._retry_held = False
        self._lose(sorted(self._assigned))
        self._next, self._next_frame = None, None
        if subscribe:
            self._joining = False  # a new join, timed from now (_warn_if_join_stuck)
            log.info(
                "task %s: its worker drives it again; it rejoins its consumer group", self.name
            )
            self._matched = []  # the new consumer subscribes to what topics.regex matches now
            self.start()

    def _joined_again(self) -> None:
        if not self._joining:
            self._joining = True
            self._join_since = self._clock()
            self._join_warned_at = None

    def _warn_if_join_stuck(self) -> None:
        """Say so when the consumer has been joining its group for JOIN_WARN_S (and again
        each JOIN_WARN_S): the task is RUNNING and reads nothing. Seen on the dev broker, where
        a member that left mid-join (another client's, or a task whose host was killed)
        leads every later generation of its group and none completes."""
        now = self._clock()
        last = self._join_since if self._join_warned_at is None else self._join_warned_at
        if now - last < JOIN_WARN_S:
            return
        if not self._subscribed_topic_exists():
            # Not joining: librdkafka joins once a subscribed topic exists. The sink is
            # waiting for its topics (said once already); look again in JOIN_WARN_S.
            self._join_since, self._join_warned_at = now, None
            return
        self._join_warned_at = now
        log.warning(
            "task %s: its consumer has been joining its group for %.0f s and has no assignment "
            "yet, so it reads nothing; on the dev broker a group whose member left mid-join "
            "never completes a join again (see docs/architecture.md): restart the broker or "
            "use another group.id",
            self.name,
            now - self._join_since,
        )

    def _subscribed_topic_exists(self) -> bool:
        """Whether the cluster has one of the subscribed topics (False if it cannot tell)."""
        subscription = self._subscription()
        if not subscription:
            return False
        try:
            metadata = self.consumer.list_topics(timeout=METADATA_TIMEOUT_S)
        except KafkaException as exc:
            log.debug("task %s: could not list topics: %s", self.name, exc)
            return False
        return any(
            (topic := metadata.topics.get(name)) is not None
            and (topic.error is None or topic.error.code() not in MISSING_TOPIC_ERRORS)
            for name in subscription
        )

    def _recheck_topic_ids_soon(self) -> None:
        """A topic went missing (or the lookup failed): look its ID up again in
        :data:`TOPIC_ID_RETRY_S`, to notice at once when it is created again."""
        if self._topic_ids is not None:
            self._next_id_check = min(self._next_id_check, self._clock() + TOPIC_ID_RETRY_S)

    def _check_topic_ids(self) -> None:
        """Look up the IDs of the assigned topics; reset the partitions of a topic whose ID
        changed (deleted and created again under its name) as Kafka's consumer does.

        Called from the loop at the consumer's metadata refresh interval (its
        topic.metadata.refresh.interval.ms, which a connector's metadata.max.age.ms sets),
        right after new topics are assigned, and every :data:`TOPIC_ID_RETRY_S` while one of
        them is missing: one DescribeTopics per call, never per record or batch."""
        assert self._topic_ids is not None
        topics = sorted({topic for topic, _ in self._assigned})
        self._next_id_check = self._clock() + self._regex_refresh_s if topics else math.inf
        if not topics:
            return
        try:
            ids = self._topic_ids(topics)
        except KafkaException as exc:
            log.debug("task %s: could not look up its topics' IDs: %s", self.name, exc)
            self._recheck_topic_ids_soon()
            return
        for topic in topics:
            if topic not in ids:
                continue  # no answer for it: as before
            new = ids[topic]
            if new is None:
                self._recheck_topic_ids_soon()  # deleted: it may be back any moment
                continue
            old = self._known_ids.get(topic)
            self._known_ids[topic] = new
            if old is not None and old != new:
                self._topic_recreated(topic)

    def _of_stale_topics(self, tps: list[tuple[str, int]]) -> set[tuple[str, int]]:
        """Those of ``tps`` whose topic is gone or was created again since this task learnt
        its ID: their offsets are of the old topic, and a closing commit must not write them
        onto the new one (the next owner would start there and skip the new records below
        them). One DescribeTopics per revocation; nothing is left out if it fails."""
        if self._topic_ids is None or not tps:
            return set()
        topics = sorted({topic for topic, _ in tps})
        try:
            ids = self._topic_ids(topics)
        except KafkaException as exc:
            log.debug("task %s: could not look up its topics' IDs: %s", self.name, exc)
            return set()
        stale = {
            topic
            for topic in topics
            if topic in ids
            and (ids[topic] is None or self._known_ids.get(topic, ids[topic]) != ids[topic])
        }
        if stale:
            log.info(
                "task %s: not committing the offsets of %s on revocation: the topic was "
                "deleted (or deleted and created again) since they were read",
                self.name,
                ", ".join(stale),
            )
        return {tp for tp in tps if tp[0] in stale}

    def _topic_recreated(self, topic: str) -> None:
        """``topic`` was deleted and created again since its partitions were assigned: what
        Kafka's consumer does when it detects the log's truncation under the new topic ID.
        Each of its partitions goes to ``auto.offset.reset`` in the new topic (earliest: the
        log start); the positions kept of the old topic are dropped, so the old offsets are
        never committed onto the new topic. Records of the old topic consumed but not yet
        put are dropped (they are gone from the cluster); under auto.offset.reset=none the
        task fails, as Kafka's consumer throws LogTruncationException there."""
        tps = sorted(tp for tp in self._assigned if tp[0] == topic)
        if not tps:
            return
        if self._reset is None:
            raise ConnectException(
                f"sink task {self.name}: topic {topic} was deleted and created again "
                "(its topic ID changed) and auto.offset.reset=none gives its partitions "
                f"{', '.join(f'{t}-{p}' for t, p in tps)} no position to start from"
            )
        self._drain()
        self._unfetch(set(tps), rewind=False)
        at = LIST_OFFSETS_LATEST if self._reset == "latest" else LIST_OFFSETS_EARLIEST
        try:
            found = self.consumer.offsets_for_times(
                [KafkaTopicPartition(t, p, at) for t, p in tps], timeout=METADATA_TIMEOUT_S
            )
        except KafkaException as exc:
            log.debug("task %s: could not look up %s's log start: %s", self.name, topic, exc)
            self._known_ids.pop(topic, None)  # try again at the next check
            self._recheck_topic_ids_soon()
            return
        starts = {
            (tp.topic, tp.partition): tp.offset
            for tp in found
            if tp.error is None and tp.offset >= 0
        }
        if len(starts) < len(tps):
            self._known_ids.pop(topic, None)
            self._recheck_topic_ids_soon()
            return
        for tp, offset in starts.items():
            self._first_put.pop(tp, None)
            self._unrecorded.discard(tp)
            self._committed[tp] = offset  # the next commit with anything new commits it
            self._seek(tp[0], tp[1], offset)
            self._current[tp] = offset
        self._recount_active()
        log.warning(
            "task %s: topic %s was deleted and created again (its topic ID changed); its "
            "partitions start again at auto.offset.reset=%s of the new topic (%s), and the "
            "offsets of the old topic are dropped",
            self.name,
            topic,
            self._reset,
            ", ".join(f"{t}-{p}@{offset}" for (t, p), offset in sorted(starts.items())),
        )

    def _forget(self, tps: list[tuple[str, int]]) -> None:
        """Drop every position kept for partitions no longer ours. A rewind still pending
        for one of them belonged to the old assignment: applied after the partition came
        back (an eager rebalance revokes and re-assigns everything), it would override the
        start the task asks for in its next ``open()``."""
        for tp in tps:
            self._assigned.discard(tp)
            self._current.pop(tp, None)
            self._committed.pop(tp, None)
            self._first_put.pop(tp, None)
            self._unrecorded.discard(tp)
            self._paused_by_task.discard(tp)
            self._pending_seeks.pop(tp, None)
        self._recount_active()  # Kafka's clearOffsets

    # -- the loop ------------------------------------------------------------------------------

    def iteration(self) -> int:
        """Consume a batch and put() it; commit when due. Returns the records put.

        Pipelined: the next batch is consumed, decoded and serialized here while the host runs
        put() on the previous one, so the worker and the plugin host work on their two cores
        at once; once the host answers, the next batch goes out before the bookkeeping of the
        finished one, so the host waits as little as possible.
        """
        self._raise_if_failed()
        if self._relinquished:
            self._rejoin(subscribe=True)
        if self._paused:
            return self._paused_iteration()
        if self._next is None and self._retry_batch is None:
            self._next = self._consume()
            self.counters.records_in += len(self._next)
        if self.host.pending:
            self._settle()
        batch = None
        if self._retry_batch is not None:
            if self._clock() >= self._retry_at:
                batch, self._retry_batch = self._retry_batch, None
                self._inflight = batch
                if self._retry_held:
                    self._retry_held = False
                    self._inflight_held = True
                    self.host.submit_put_held(self.handle)
                else:
                    self.host.submit_put(self.handle, batch.wire())
            else:
                time.sleep(min(0.05, max(0.0, self._retry_at - self._clock())))
        elif self._next:
            batch, self._next = self._next, None
            frame, self._next_frame = self._next_frame, None
            self._inflight = batch
            self.host.submit_put(self.handle, batch.wire(), frame)
        else:
            self._next = None
        count = self._account()
        if self._commit_requested or self._clock() >= self._next_commit:
            self.commit(asynchronous=True)
        # Records accounted now, or else the batch just handed to the host: a driver that
        # backs off after an iteration that moved nothing must not while a put() runs.
        return count or (len(batch) if batch is not None else 0)

    def _paused_iteration(self) -> int:
        """Poll (the group must see this consumer alive) but put nothing; records that still
        arrive from a partition paused a moment ago are taken back."""
        stray = self._consume()
        self._next_frame = None
        if stray:
            _, first = stray.without({(t, p) for t, p in stray.positions()})
            for tp, offset in first.items():
                self._pending_seeks.setdefault(tp, offset)
        if self._commit_requested or self._clock() >= self._next_commit:
            self.commit(asynchronous=True)
        return 0

    def _consume(self) -> Batch:
        if self._pattern is not None and self._clock() >= self._next_match_at:
            self._match_topics()
        if self._clock() >= self._next_id_check:
            self._check_topic_ids()
        if self._pending_seeks:
            self._apply_seeks()
        consumer = self.consumer
        rebalances = self._rebalances
        if self.host.pending and self.host.overlaps:
            # The host is busy with the previous batch: gather the next one meanwhile.
            messages = consumer.consume(self.max_records, BUSY_CONSUME_TIMEOUT_S)
        elif self.host.pending:
            # A put() submitted on a channel that runs it only when collected (the data path
            # in the host): take what has arrived, and let the put() run.
            messages = consumer.consume(self.max_records, 0)
        else:
            # The host is idle: as the Java consumer's poll() does, hand over whatever has
            # arrived as soon as there is anything, rather than waiting for a full batch.
            messages = consumer.consume(self.max_records, 0)
            if not messages:
                first = consumer.poll(CONSUME_TIMEOUT_S)
                if first is not None:
                    messages = [first]
                    if self.max_records > 1:
                        messages.extend(consumer.consume(self.max_records - 1, 0))
        self._raise_if_failed()
        if self._joining:
            self._warn_if_join_stuck()
        # any(): a KafkaError is always true. Not a count of None: comparing a KafkaError
        # with None raises, which made list.count() fail with a SystemError. The accessor is
        # mapped over the messages, as copycat_batch.field does (cheaper than a method call
        # per message).
        if messages and any(map(type(messages[0]).error, messages)):
            clean = []
            for msg in messages:
                err = msg.error()
                if err is None:
                    clean.append(msg)
                elif err.code() in MISSING_TOPIC_ERRORS:
                    self._recheck_topic_ids_soon()
                    if self._pattern is None:
                        self._waiting_for_topic(err, msg.topic())
                    else:  # a matched topic was deleted: match again soon, nothing to wait for
                        log.debug("task %s: %s", self.name, err.str())
                        self._next_match_at = min(
                            self._next_match_at, self._clock() + TOPICS_REGEX_RETRY_S
                        )
                elif err.code() == KafkaError._AUTO_OFFSET_RESET:
                    raise self._no_offset(msg, err)
                elif err.code() != KafkaError._PARTITION_EOF:
                    raise wrap_kafka_error(err, f"sink task {self.name} consumer")
            messages = clean
        batch: Batch
        if self.host.passes_objects:
            batch = self._message_batch(messages, rebalances == self._rebalances)
        else:
            batch = ConsumedBatch.from_messages(messages)
        # Serialized now, while the host is busy with the previous batch.
        self._next_frame = self.host.encode_put(self.handle, batch.wire()) if batch else None
        return batch

    def _no_offset(self, msg: Any, error: KafkaError) -> ConnectException:
        """The task's failure for a partition with no valid committed offset under
        auto.offset.reset=none (librdkafka's ``error``), as Kafka's consumer throws
        NoOffsetForPartitionException (or OffsetOutOfRangeException) from poll()."""
        at_fault = {(msg.topic(), msg.partition())} | self._assigned_without_offset()
        partitions = ", ".join(f"{topic}-{partition}" for topic, partition in sorted(at_fault))
        return wrap_kafka_error(
            error,
            f"sink task {self.name}: Undefined offset with no reset policy for partitions: "
            f"[{partitions}] (auto.offset.reset=none and the consumer group has no valid "
            f"committed offset for {partitions})",
        )

    def _assigned_without_offset(self) -> set[tuple[str, int]]:
        """The assigned partitions the group has no committed offset for, which librdkafka
        reports one by one, so that the failure names all of them as Kafka's does (none if
        the coordinator cannot say: the message's own partition is named anyway)."""
        assigned = [KafkaTopicPartition(t, p) for t, p in sorted(self._assigned)]
        try:
            committed = self.consumer.committed(assigned, timeout=NO_OFFSET_LOOKUP_TIMEOUT_S)
        except KafkaException:
            return set()
        return {(tp.topic, tp.partition) for tp in committed if tp.offset < 0}

    def _message_batch(self, messages: list[Any], settled: bool) -> MessageBatch:
        """The messages as they are, with their topic and partition when the subscription and
        the assignment say every message has the same (``settled``: no rebalance callback ran
        during the consume() that returned them). The first and last message are checked
        against that as well; the sink runner reads the rest per message only if not."""
        topic = partition = None
        if messages:
            if len(self.subscribed_topics) == 1 and not self.topics_regex:
                topic = self.subscribed_topics[0]
            if settled and len(self._assigned) == 1:
                partition = next(iter(self._assigned))[1]
            first, last = messages[0], messages[-1]
            if topic is not None and not (first.topic() == last.topic() == topic):
                topic = None
            if partition is not None and not (first.partition() == last.partition() == partition):
                partition = None
        return MessageBatch(messages, topic, partition)

    def _waiting_for_topic(self, error: KafkaError, topic: str | None) -> None:
        """A subscribed topic does not exist yet: keep running, as Kafka Connect does, and say
        so once per distinct report (librdkafka repeats it after every rebalance).

        Under ``allow.auto.create.topics=true`` (Kafka Connect's, the Java consumer's default;
        Copycat's only when given, see SINK_CONSUMER_DEFAULTS) ask the cluster for the topic
        by name first, as the Java consumer's metadata request does: a broker with
        ``auto.create.topics.enable=true`` creates it then, also one deleted while the task
        runs. librdkafka's subscription never asks so (its issue 3395), but its metadata
        request for one topic does."""
        if self._create_missing_topics and topic:
            try:
                self.consumer.list_topics(topic, timeout=METADATA_TIMEOUT_S)
            except KafkaException as exc:
                log.debug("task %s: could not ask for topic %s: %s", self.name, topic, exc)
        text = error.str()
        if text in self._missing_topics_logged:
            return
        self._missing_topics_logged.add(text)
        log.warning(
            "task %s is waiting for its topics to be created (%s); it consumes them as soon "
            "as they exist",
            self.name,
            text,
        )

    def _collect(self) -> int:
        """Wait for the in-flight put() and account for it."""
        self._settle()
        return self._account()

    def _settle(self) -> None:
        """Wait for the in-flight put() and carry out what the task asked meanwhile. The put
        batch's offsets are recorded by :meth:`_account`, which may come after the next
        submit (anything that reads or moves the positions accounts first)."""
        batch, self._inflight = self._inflight, None
        held, self._inflight_held = self._inflight_held, False
        try:
            actions = self.host.put_result()
        except RetriableException as exc:
            if batch is not None:
                # put() had the records, converted: their topics count already in Kafka.
                self._topics_seen.update(topic for topic, _ in batch.positions())
            self._retry_later(batch, exc)
            self._retry_held = held
            return
        except RemotePluginError as exc:
            carried = exc.info.sink_actions
            if carried is not None and batch is not None:
                # put() raised: the task fails with its error, but the records its batch
                # reported first go to the DLQ (the task's stop flushes it), as in Kafka.
                # The batch was not put: none of its offsets is accounted.
                self._report_before_failing(batch, SinkActions(*carried))
            raise
        assert batch is not None
        if actions.failed and actions.put is None and self._tolerates_all:
            self._put_held(batch, actions)
            return
        self._retry_started = None
        self._retry_attempt = 0
        if actions.put is not None:
            put, put_ms = actions.put
            counters = self.counters
            counters.batch(put)
            counters.records_out += put
            counters.operation(put_ms)
        if actions.errors is not None:
            failures, retries = actions.errors
            self.counters.record_failures += failures
            self.counters.retries += retries
        failed, reported = actions.failed, actions.reported
        if failed or reported:
            # Kafka's errant record reporter counts each report a failed operation
            # (executeFailed, total-record-failures).
            self.counters.record_failures += len(reported)
            try:
                self._report(batch, failed, reported)
            except BaseException:
                if self.errors is not None and self.errors.tolerate_all:
                    # put() took the batch, but the DLQ refused one of its failed records:
                    # the records put before that one are committable at the closing commit
                    # (ErrorReporter.unwritten bounds it), as a failed task commits what it
                    # put. Under tolerance none the batch stopped at its failure: not put.
                    self._account()
                    self._unaccounted = batch
                raise
        self._account()  # normally done already; never lose a batch's positions
        self._unaccounted = batch
        self._apply(actions)

    def _put_held(self, batch: Batch, actions: SinkActions) -> None:
        """The host converted ``batch`` and holds its records: some failed and are tolerated,
        and there is a dead letter queue. Report them, wait until the DLQ has acknowledged
        them, then have the held records put. A failed record the DLQ refuses (too large for
        its topic, an authorization error) fails the task before anything of the batch is put
        or accounted, so nothing past the last record fully handled is committed, and a
        restart once the DLQ takes it delivers each record once. Only batches with failures
        come here: the others are put at once, with no round trip to wait for."""
        assert self.errors is not None
        if actions.errors is not None:
            failures, retries = actions.errors
            self.counters.record_failures += failures
            self.counters.retries += retries
        self._report(batch, actions.failed, [])
        self.errors.flush()
        self._inflight, self._inflight_held = batch, True
        self.host.submit_put_held(self.handle)
        self._settle()

    def _report_before_failing(self, batch: Batch, actions: SinkActions) -> None:
        """Count and report the failed and errant records of a put() that raised."""
        if actions.errors is not None:
            failures, retries = actions.errors
            self.counters.record_failures += failures
            self.counters.retries += retries
        failed, reported = actions.failed, actions.reported
        if failed or reported:
            self.counters.record_failures += len(reported)
            self._report(batch, failed, reported)

    def _account(self) -> int:
        """Record the last put batch's offsets as consumed (committable once pre_commit
        agrees); returns its record count."""
        batch, self._unaccounted = self._unaccounted, None
        if batch is None:
            return 0
        self._recent.append(batch)
        positions = batch.positions()
        first_put, current, committed = self._first_put, self._current, self._committed
        if not first_put.keys() >= positions.keys():  # a partition's first batch
            _, first = batch.without(positions.keys() - first_put.keys())
            first_put.update(first)
            self._unrecorded.update(first)
        if self._unrecorded or self._topics_seen is not self._seen_at:
            self._record_topics(positions)  # KIP-558 (its first batch, or after a reset)
        # sink-record-active-count: what the batch moves past the committed offsets (Kafka's
        # recordConsumedOffsets), per partition of the batch, not per record.
        active = self._active
        for tp, position in positions.items():
            base = committed.get(tp)
            if base is None:
                base = first_put[tp]
            # max(position - base, 0) - max(before - base, 0), without calls to max().
            before = current.get(tp, base)
            if before < base:
                before = base
            active += (position if position > base else base) - before
        self._active = active
        self.counters.active_records(active)
        current.update(positions)
        self.records_put += len(batch)
        self.progress = (self.records_put, self._clock())
        return len(batch)

    def _recount_active(self, *, record: bool = True) -> None:
        """Sum the records consumed past the committed offsets anew (after a commit, a
        rebalance or a seek: not per batch, see :meth:`_account`); ``record``: as a value of
        sink-record-active-count (Kafka records one at each commit and rebalance)."""
        committed, first_put = self._committed, self._first_put
        active = 0
        for tp, position in self._current.items():
            base = committed.get(tp, first_put.get(tp))
            if base is not None and position > base:
                active += position - base
        self._active = active
        if record:
            self.counters.active_records(active)

    def _retry_later(self, batch: Batch | None, exc: RetriableException) -> None:
        """Redeliver the same batch later, as Kafka Connect does; nothing more is consumed
        meanwhile. Backoff doubles up to errors.retry.delay.max.ms; past a positive
        errors.retry.timeout the task fails (with 0, the default, it retries as Kafka does:
        until stopped, every context.timeout() or 1 s)."""
        now = self._clock()
        if self._retry_started is None:
            self._retry_started = now
        self._retry_attempt += 1
        timeout_ms = self.errors.retry_timeout_ms if self.errors is not None else 0
        if timeout_ms > 0 and (now - self._retry_started) * 1000 > timeout_ms:
            raise ConnectException(
                f"sink task {self.name}: put() kept failing with retriable errors for more "
                f"than errors.retry.timeout={timeout_ms} ms; last error: {exc}"
            ) from exc
        task_timeout_ms = exc.retry_after_ms if isinstance(exc, RemoteRetriableError) else None
        if task_timeout_ms is not None:
            delay = task_timeout_ms / 1000
        elif timeout_ms != 0 and self.errors is not None:
            delay = retry_backoff_s(self._retry_attempt, self.errors.retry_delay_max_ms)
        else:
            delay = DEFAULT_RETRY_BACKOFF_MS / 1000
        log.warning(
            "task %s: put() failed with a retriable error (attempt %d), retrying in %.2f s: %s",
            self.name,
            self._retry_attempt,
            delay,
            exc,
        )
        self._retry_batch = batch
        self._retry_at = now + delay

    def _report_outside_put(self, actions: SinkActions) -> None:
        """Send the records the task reported errant outside put() (in ``flush()`` /
        ``pre_commit()``, ``open()``, ``close()``, or from a thread of its own after its last
        call) to the DLQ, as Kafka's reporter takes a report at any time; a commit that
        follows waits for them (:meth:`_flush_dead_letters`). Nothing to do, and nothing
        done, when the task reported none."""
        reported = actions.reported
        if reported:
            self.counters.record_failures += len(reported)
            self._report(None, [], reported)

    def _report(
        self, batch: Batch | None, failed: list[tuple[Any, ...]], reported: list[tuple[Any, ...]]
    ) -> None:
        """Log the records that failed (conversion, transforms, or reported errant by the
        task) and send them to the DLQ. Under errors.tolerance=none the first of them then
        fails the task, as Kafka reports a record before it fails on it."""
        errors = self.errors
        if errors is None:  # never in a built task; a loop built by hand in a test
            errors = ErrorReporter(self.connector, self.task_id, ErrorsPolicy())
        batches = self._recent if batch is None else (batch, *self._recent)
        rows = itertools.chain.from_iterable(b.rows() for b in batches)
        errors.report_sink(rows, failed + reported, self._read_again if reported else None)
        if not errors.tolerate_all:
            topic, partition, offset, *info = (failed or reported)[0]
            where = f"record {topic}-{partition}@{offset}"
            if not failed:
                where += " (reported errant by the task)"
            raise errors.fail(where, info)

    def _read_again(self, wanted: list[tuple[str, int, int]]) -> list[tuple[Any, ...]]:
        """The rows of records the task reported errant that are older than the batches kept
        for it (:data:`RECENT_BATCHES_FOR_REPORTS`), read again from their partitions by a
        consumer of their own (assigned, never in the group), as Kafka's reporter has the
        whole record: for their key, value, headers and timestamp in the DLQ. Only on this
        rare path; what is not found within :data:`REPORTED_LOOKUP_TIMEOUT_S` (or the stop's
        share for the DLQ), or no longer in the log, goes out without them, and is logged."""
        if self._new_consumer is None:
            return []
        deadline = time.monotonic() + REPORTED_LOOKUP_TIMEOUT_S
        if self._dlq_deadline is not None:
            deadline = min(deadline, self._dlq_deadline)
        found: list[Any] = []
        consumer = None
        try:
            consumer = self._new_consumer()
            for topic, partition, offset in wanted:
                consumer.assign([KafkaTopicPartition(topic, partition, offset)])
                while (left := deadline - time.monotonic()) > 0:
                    message = consumer.poll(min(left, 1.0))
                    if message is None or message.error() is not None:
                        continue
                    if message.offset() == offset and message.topic() == topic:
                        found.append(message)
                    break
        except KafkaException as exc:
            log.debug("task %s: could not read reported records again: %s", self.name, exc)
        finally:
            if consumer is not None:
                consumer.close()
        rows = list(ConsumedBatch.from_messages(found).rows())
        if len(rows) < len(wanted):
            log.warning(
                "task %s: %d of the records it reported errant could not be read again from "
                "their partitions; the dead letter queue gets them without key, value and "
                "headers",
                self.name,
                len(wanted) - len(rows),
            )
        return rows

    def _drain(self) -> None:
        """Settle the in-flight put() before anything else talks to the host."""
        if self.host.pending:
            self._settle()
        self._account()

    def _unfetch(self, partitions: set[tuple[str, int]], rewind: bool) -> None:
        """Take prefetched records of ``partitions`` back, to be read again (or dropped)."""
        if not self._next:
            return
        self._next, first = self._next.without(partitions)
        if first:
            self._next_frame = None  # the batch changed: serialized again when submitted
        if rewind:
            for tp, offset in first.items():
                self._pending_seeks.setdefault(tp, offset)

    def _apply(self, actions: SinkActions) -> None:
        """Carry out what the task asked of its context during the last call."""
        if actions.timeout_ms is not None and self._retry_batch is not None:
            self._retry_at = self._clock() + actions.timeout_ms / 1000
        seeks = actions.seeks
        if seeks:
            self._unfetch(set(seeks), rewind=False)
        for (topic, partition), offset in seeks.items():
            self._seek(topic, partition, offset)
            # As Kafka's rewind(): the offset is the partition's last committed one from now
            # on too, so the next commit with anything new commits it, even if pre_commit()
            # leaves the partition out. (After _seek: it accounts the put batch against the
            # committed offsets before the rewind.)
            if (topic, partition) in self._assigned:
                self._committed[(topic, partition)] = offset
        if seeks:
            self._recount_active(record=False)
        if actions.pause:
            paused = [(t, p) for t, p in actions.pause]
            self._unfetch(set(paused), rewind=True)
            self._paused_by_task.update(paused)
            self.consumer.pause([KafkaTopicPartition(t, p) for t, p in paused])
        if actions.resume:
            resumed = [(t, p) for t, p in actions.resume]
            self._paused_by_task.difference_update(resumed)
            self.consumer.resume([KafkaTopicPartition(t, p) for t, p in resumed])
        if actions.request_commit:
            self._commit_requested = True

    def _seek(self, topic: str, partition: int, offset: int) -> None:
        self._account()  # the put batch's positions first: the seek overrides them
        self._pending_seeks[(topic, partition)] = offset
        self._apply_seeks()

    def _apply_seeks(self) -> None:
        """Seek where the task asked (context.offset); a partition not fetching yet is retried."""
        for (topic, partition), offset in list(self._pending_seeks.items()):
            if (topic, partition) not in self._assigned:
                del self._pending_seeks[(topic, partition)]
                continue
            try:
                self.consumer.seek(KafkaTopicPartition(topic, partition, offset))
            except KafkaException:
                continue  # "Erroneous state" until the fetcher starts: retried next iteration
            del self._pending_seeks[(topic, partition)]
            self._current[(topic, partition)] = offset
            self._recount_active(record=False)

    def commit(
        self,
        only: set[tuple[str, int]] | None = None,
        *,
        asynchronous: bool = False,
        after_failure: bool = False,
    ) -> None:
        """Ask the task what is safe (pre_commit) and commit exactly that to Kafka.

        Periodic commits are asynchronous, as Kafka Connect's are (the loop goes on
        consuming while the coordinator answers; :meth:`on_commit` records the outcome).
        Commits on revocation and stop are synchronous: the partitions change hands next.
        Nothing is committed past a failed record that the dead letter queue did not take;
        the DLQ's failure fails the commit, except ``after_failure`` (the closing commit of a
        failed task), which commits the records before it.
        """
        self._drain()
        self._commit_requested = False
        self._next_commit = self._clock() + self.commit_interval_s
        current = {tp: off for tp, off in self._current.items() if only is None or tp in only}
        if not current:
            return
        self.commit_seq += 1
        self._commit_started = started = time.monotonic()
        try:
            self._commit(current, asynchronous, after_failure)
        except BaseException:
            self.counters.commit((time.monotonic() - started) * 1000, ok=False)
            raise

    def _commit(
        self, current: dict[tuple[str, int], int], asynchronous: bool, after_failure: bool
    ) -> None:
        """:meth:`commit` of ``current``; a commit that completes at once (nothing new to
        commit, or a synchronous one) is counted here, an asynchronous one by
        :meth:`on_commit`."""
        started = self._commit_started
        failure: ConnectException | None = None
        try:
            try:
                actions = self.host.pre_commit(self.handle, current)
            except RemotePluginError as exc:
                if exc.broke_contract:
                    raise  # not an error of its own: a task that cannot go on
                failure = exc
            else:
                try:
                    self._report_outside_put(actions)
                except ConnectException as exc:
                    if self._tolerates_all:
                        raise  # the DLQ refused a record: as Kafka's awaitFutures, not caught
                    # Under errors.tolerance=none Kafka's reporter throws into the task's
                    # preCommit() (once the record is on its way to the DLQ): its failure.
                    failure = exc
        finally:
            self._close_once()
        if failure is not None:
            if not asynchronous:  # closing (see _closing_commit) or after a failure
                raise _PreCommitFailed(str(failure)) from failure
            self._rewind_to_committed(current, failure)
            self.counters.commit((time.monotonic() - started) * 1000, ok=False)
            return
        closed = self._closed
        if closed is not None and closed.reported:
            # Reported errant in close(): to the DLQ before the commit. Under tolerance none
            # close() failed (Kafka's reporter throws into it), and nothing is committed: at
            # a stop logged, at a revocation the task's failure, as Kafka's close() raising
            # in its closing commit.
            self._closed = closed._replace(reported=[])
            if self._stop_deadline is None:
                self._report_outside_put(closed)
            elif not self._report_at_stop(closed):
                self.counters.commit((time.monotonic() - started) * 1000, ok=False)
                return
        committable = actions.commit
        self._apply(actions)
        if not committable:  # the task opted out (an exactly-once sink, say): nothing to do
            self.counters.commit((time.monotonic() - started) * 1000, ok=True)
            return
        # As Kafka's commitOffsets: the last committed offsets of the partitions asked about
        # (their positions at assignment, if nothing was committed of them since), with what
        # the task returned over them; committed whole when anything changed. An offset past
        # what was consumed, or of a partition not assigned, is ignored with a warning.
        last = self._committed
        wanted = {tp: last[tp] for tp in current if tp in last}
        for tp, offset in committable.items():
            tp = (tp[0], tp[1])
            if offset is None:
                continue
            if tp in current:
                if offset <= current[tp]:
                    wanted[tp] = offset
                else:
                    log.warning(
                        "task %s: ignoring the offset pre_commit() returned for partition "
                        "%s-%d: not consumed yet (returned %d, consumed up to %d)",
                        self.name,
                        tp[0],
                        tp[1],
                        offset,
                        current[tp],
                    )
            elif tp not in self._assigned:
                log.warning(
                    "task %s: ignoring the offset pre_commit() returned for partition %s-%d: "
                    "not assigned to this task (assigned: %s)",
                    self.name,
                    tp[0],
                    tp[1],
                    ", ".join(f"{t}-{p}" for t, p in sorted(self._assigned)),
                )
            else:
                log.debug(
                    "task %s: ignoring the offset pre_commit() returned for partition %s-%d: "
                    "not among those committed now",
                    self.name,
                    tp[0],
                    tp[1],
                )
        if not any(last.get(tp) != offset for tp, offset in wanted.items()):
            self.counters.commit((time.monotonic() - started) * 1000, ok=True)
            return
        if self.errors is not None:
            self._flush_dead_letters(after_failure)
            # Never past a failed record the dead letter queue did not take.
            for tp, first in self.errors.unwritten.items():
                if tp in wanted:
                    wanted[tp] = min(wanted[tp], first)
        if not any(last.get(tp) != offset for tp, offset in wanted.items()):
            self.counters.commit((time.monotonic() - started) * 1000, ok=True)
            return
        known = self._known_ids
        offsets = [
            KafkaTopicPartition(tp[0], tp[1], offset, f"{TOPIC_ID_METADATA_PREFIX}{known[tp[0]]}")
            if tp[0] in known
            else KafkaTopicPartition(tp[0], tp[1], offset)
            for tp, offset in wanted.items()
        ]
        if asynchronous:
            try:
                self.consumer.commit(offsets=offsets, asynchronous=True)
            except KafkaException as exc:  # not even queued: the next interval tries again
                log.warning("task %s: could not start an offset commit: %s", self.name, exc)
                self.counters.commit((time.monotonic() - started) * 1000, ok=False)
                return
            self._async_commits.append(self.commit_seq)
            return
        try:
            if self._stop_deadline is None:
                self.consumer.commit(offsets=offsets, asynchronous=False)
            elif unfinished := _bounded(
                lambda: self.consumer.commit(offsets=offsets, asynchronous=False),
                self._stop_deadline,
                f"copycat-sink-commit-{self.name}",
            ):
                # Logged, not the stop's failure, as Kafka's doCommitSync logs a commit that
                # timed out: the stop goes on (the commit must not cost the host its life,
                # which would take the consumer's LeaveGroup with it).
                self._unfinished_commit = unfinished
                log.warning(
                    "task %s: the final offset commit did not complete within the graceful "
                    "timeout (task.shutdown.graceful.timeout.ms); it goes on in the background "
                    "until the consumer closes, and what it does not commit is delivered again",
                    self.name,
                )
                self.counters.commit((time.monotonic() - started) * 1000, ok=False)
                return
        except KafkaException as exc:
            # As Kafka's WorkerSinkTask (doCommitSync): logged, not the task's failure. The
            # records put since the last commit are read again by the partitions' next owner.
            log.error(
                "task %s: offset commit %d failed; records put since the last commit are "
                "delivered again: %s",
                self.name,
                self.commit_seq,
                wrap_kafka_error(exc, "could not commit offsets"),
            )
            self.counters.commit((time.monotonic() - started) * 1000, ok=False)
            return
        self.counters.commit((time.monotonic() - started) * 1000, ok=True)
        for committed in offsets:
            self._committed[(committed.topic, committed.partition)] = committed.offset
        self._recount_active()  # Kafka's recordCommittedOffsets

    def _rewind_to_committed(self, current: Mapping[tuple[str, int], int], exc: Exception) -> None:
        """A periodic commit whose ``pre_commit()`` raised, as Kafka's commitOffsets:
        logged, not the task's failure (one that returned what it must not still fails the
        task), and the partitions read again from their last committed offsets (or from
        where this task began reading them), so that nothing the task could not make durable
        is skipped."""
        log.error(
            "task %s: offset commit %d failed (pre_commit raised), rewinding to the last "
            "committed offsets: %s",
            self.name,
            self.commit_seq,
            exc,
        )
        targets = {
            tp: offset
            for tp in current
            if (offset := self._committed.get(tp, self._first_put.get(tp))) is not None
        }
        self._unfetch(set(targets), rewind=False)
        for (topic, partition), offset in targets.items():
            self._seek(topic, partition, offset)
            self._current[(topic, partition)] = offset
        self._recount_active(record=False)

    def _flush_dead_letters(self, after_failure: bool) -> None:
        """Wait until the reported records are in the DLQ, before their offsets commit. At a
        stop, until the stop's share for it (:data:`DLQ_SHARE_OF_STOP_TIMEOUT`): what the DLQ
        has not acknowledged then stops the closing commit, as one it refused does."""
        assert self.errors is not None
        stopping = self._dlq_deadline
        try:
            self.errors.flush(stopping)
        except ConnectException as exc:
            if not after_failure and stopping is None:
                raise
            log.warning(
                "task %s: the dead letter queue did not take every failed record; the closing "
                "commit stops at the first of them: %s",
                self.name,
                exc,
            )

    def on_commit(self, error: KafkaError | None, partitions: list[KafkaTopicPartition]) -> None:
        """The consumer's commit callback (served from consume()): remember what is committed.

        A failed asynchronous commit is logged and left for the next interval, which commits
        the then-current offsets (Kafka Connect does the same).
        """
        if self._async_commits:
            # An asynchronous commit's outcome (a synchronous one's was counted by commit()).
            seq = self._async_commits.popleft()
            if seq != self.commit_seq:
                self.counters.commit_skips += 1
            else:
                elapsed_ms = (time.monotonic() - self._commit_started) * 1000
                self.counters.commit(elapsed_ms, ok=error is None)
        if error is not None:
            log.warning(
                "task %s: offset commit failed, retried at the next interval: %s",
                self.name,
                error.str() if isinstance(error, KafkaError) else error,
            )
            return
        for tp in partitions:
            if tp.error is None and tp.offset >= 0 and (tp.topic, tp.partition) in self._assigned:
                self._committed[(tp.topic, tp.partition)] = tp.offset
        self._recount_active()  # Kafka's recordCommittedOffsets

    def _finish_join(self, deadline: float) -> None:
        """Let a group join in progress complete before the consumer closes (and leaves).

        The dev broker (Tansu 0.6.0) holds a JoinGroup for about half the session timeout; a
        member that leaves while its join is held stays in the group for good, as the leader
        of every later generation. The next member of the group then waits for that leader's
        assignment in SyncGroup, gets "rebalance in progress", joins again, and so on without
        end: a sink restarted twice within a few seconds never consumed again, also after
        stop/resume (the group is the connector's). Closing after the join costs nothing
        there: the LeaveGroup waited for the held JoinGroup's answer anyway. Apache Kafka
        removes such a member, and holds a join as long as a member that died keeps its session
        (45 s by default): there this wait would only spend the stop's graceful timeout, so it
        is done only with ``sink.group.join.finish.before.close`` (the embedded dev broker's).
        Records the poll returns now are dropped: the task has stopped, and the
        offsets committed are those it made durable.
        """
        self._closing = True
        if not self._joining or not self._finish_join_enabled or not self._subscription():
            return
        try:
            while self._joining and time.monotonic() < deadline:
                self.consumer.poll(JOIN_POLL_S)
        except Exception as exc:  # the consumer is closed next all the same
            log.debug("task %s: consumer error while finishing its group join: %s", self.name, exc)
            return
        if self._joining:
            log.warning(
                "task %s: closing its consumer while its group join is still in progress; on "
                "the dev broker this leaves a member behind that keeps the connector's consumer "
                "group from ever assigning again (until the broker restarts)",
                self.name,
            )

    def _close_consumer(self, join_deadline: float) -> None:
        """Finish a group join where the broker needs it, then close the consumer, waiting
        until the stop's deadline; a close still running then goes on in the background."""
        deadline = self._stop_deadline if self._stop_deadline is not None else math.inf

        def close() -> None:
            # librdkafka's handle must not be destroyed under a commit still in flight.
            if self._unfinished_commit is not None:
                self._unfinished_commit.join()
            join_until = min(join_deadline, deadline)
            if self._finish_join_enabled:
                # On the dev broker a close mid-join leaves a member for good: the join may
                # finish past the stop's deadline, on this thread (the stop returns at the
                # deadline; the plugin host outlives the close, in_host.HostedTask), for up to
                # the session timeout (the broker holds a join about half of it; a loaded
                # machine took longer than the graceful timeout's share: CI43, CI46).
                join_until = max(join_until, time.monotonic() + self._join_hold_s)
            self._finish_join(join_until)
            self.consumer.close()

        if unfinished := _bounded(close, deadline, f"copycat-sink-close-{self.name}"):
            # Its process must outlive it: the LeaveGroup goes out only once the held join
            # (and the final commit, behind it on the coordinator connection) is answered; a
            # member that never sends it stays in the group, and in the generation its join
            # made it part of, until its session timeout (see in_host.HostedTask).
            self.unfinished_close = unfinished
            log.warning(
                "task %s: its consumer did not close within the graceful timeout "
                "(task.shutdown.graceful.timeout.ms); the close goes on in the background (its "
                "LeaveGroup may be held behind a group join the broker holds until a departed "
                "member's session ends)",
                self.name,
            )

    def _settle_after_failure(self) -> None:
        """Settle the channel of a task that failed with a put() in flight, counting nothing
        of it; its outcome (another failure, perhaps) does not keep the closing commit from
        committing the batches put before."""
        self._inflight = None
        try:
            self.host.result()
        except Exception as exc:  # noqa: BLE001 - the task has failed already
            log.debug("task %s: the put() in flight when it failed ended with: %s", self.name, exc)

    def _close_once(self) -> None:
        """Close the partitions the closing commit is for (:attr:`_to_close`) in the task, once:
        within the commit once its ``pre_commit()`` is done, else (nothing to commit) by the
        caller after it. What the task asked meanwhile is left in :attr:`_closed`."""
        tps, self._to_close = self._to_close, None
        if tps is not None:
            self._closed = self.host.close_partitions(self.handle, tps)

    def _closing_commit(self, only: set[tuple[str, int]] | None) -> None:
        """The commit of partitions that close (revoked, or all of them at stop). A
        ``pre_commit()`` that raises, or reports a record errant under errors.tolerance=none,
        is logged and nothing of them is committed, as Kafka's commitOffsets when closing
        ("Offset commit failed during close"): their next owner reads again from the last
        committed offset. The task closes them (:meth:`_close_once`) after its
        ``pre_commit()`` and before the commit; a ``close()`` that fails fails the commit
        (raised: the caller decides)."""
        try:
            self.commit(only=only)
        except _PreCommitFailed as exc:
            log.warning(
                "task %s: offset commit failed while closing its partitions; records put "
                "since the last commit are delivered again: %s",
                self.name,
                exc,
            )

    def _commit_after_failure(self) -> None:
        """The closing commit of a task that failed: a failure here is logged, not raised (the
        task's own failure is what its status reports), and commits nothing."""
        try:
            self.commit(after_failure=True)
        except Exception as exc:  # noqa: BLE001 - the task has failed already
            log.warning(
                "task %s: offset commit failed while closing the failed task; records put "
                "since the last commit are delivered again on restart: %s",
                self.name,
                exc,
            )

    def _raise_if_failed(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure

    def stop(self, *, failed: bool = False, timeout_s: float = 5.0, fenced: bool = False) -> None:
        """Commit what the task has made durable, close and stop it (``fenced``: commit
        nothing, see :meth:`core.runtime.loop.TaskLoop.stop`).

        A task that failed commits too, as Kafka Connect's closing commit does: the offsets of
        the batches whose put() succeeded, as far as its ``pre_commit()`` agrees, so that a
        restart does not write them again. Never those of the batch that failed (it is not
        accounted) nor of a put() still in flight when the task failed (it had not returned);
        a ``pre_commit()`` or commit that fails now is logged, and nothing is committed.

        ``timeout_s`` bounds what waits for the broker: the final commit, the wait for a group
        join in progress (:meth:`_finish_join`) and the consumer's close each end at
        :data:`STOP_SHARE_OF_TIMEOUT` of it. A commit or close still running then is left to
        finish on its own thread (the close is librdkafka's, bounded by its request timeouts),
        as Kafka's worker leaves a task it cancelled to its own thread; the plugin's own calls
        have their deadlines, and the driver kills the host of a plugin that does not stop.
        """
        began = time.monotonic()
        self._stop_deadline = began + timeout_s * STOP_SHARE_OF_TIMEOUT
        self._dlq_deadline = began + timeout_s * DLQ_SHARE_OF_STOP_TIMEOUT
        planned = False  # the partitions to close are set: the closing commit closes them
        try:
            if self._relinquished and self.host.alive:
                self._rejoin(subscribe=False)  # what it had is lost: nothing of it committed
            if self.host.alive and self.host.pending:
                if failed or fenced:
                    self._settle_after_failure()
                else:
                    self._drain()
            self._to_close, planned = sorted(self._assigned), True
            if self.host.alive and not fenced:
                if failed:
                    self._commit_after_failure()
                else:
                    self._closing_commit(None)
        finally:
            try:
                if self.host.alive:
                    if not planned:
                        self._to_close = sorted(self._assigned)
                    self._close_once()  # unless the commit closed them (or tried to)
                    closed, self._closed = self._closed, None
                    if closed is not None:
                        self._report_at_stop(closed)
                    self.host.stop_task(self.handle)
            finally:
                try:
                    self._close_consumer(began + timeout_s * JOIN_SHARE_OF_STOP_TIMEOUT)
                finally:
                    if self._topic_ids is not None:
                        self._topic_ids.close()  # its admin client, once no task shares it
                    if self.errors is not None:
                        self.errors.close(self._stop_deadline)

    def _report_at_stop(self, actions: SinkActions) -> bool:
        """Records the task reported errant as its partitions closed at the stop: to the DLQ
        (the DLQ's close flushes them), as Kafka's reporter would send them. Under
        errors.tolerance=none that fails the task's close(): logged, as Kafka's WorkerTask logs
        a stopping task's failure, and the stop goes on; False then (the closing commit, if
        it is still to come, commits nothing)."""
        try:
            self._report_outside_put(actions)
        except Exception as exc:  # noqa: BLE001 - stopping: the stop must go on
            log.warning(
                "task %s: a record it reported errant while closing failed the task while "
                "stopping; nothing more is committed: %s",
                self.name,
                exc,
            )
            return False
        return True


class _PreCommitFailed(Exception):
    """A synchronous commit's ``pre_commit()`` raised, or reported a record errant under
    errors.tolerance=none (the cause): the commit committed nothing."""


def _bounded(
    work: Callable[[], object], deadline: float, thread_name: str
) -> threading.Thread | None:
    """Run ``work`` on a daemon thread and wait for it until ``deadline`` (monotonic): None if
    it ended (its exception, if it ended with one, is raised here), else the thread, left to
    finish on its own (a Kafka client call, bounded by the client's request timeouts)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run, name=thread_name, daemon=True)
    thread.start()
    thread.join(max(0.0, deadline - time.monotonic()))
    if not outcome:
        return thread
    if outcome[0] is not None:
        raise outcome[0]
    return None
