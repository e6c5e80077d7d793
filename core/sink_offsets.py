"""Sink connector offsets over REST (KIP-875): the consumer group ``connect-<name>``.

Offsets are read stable (``require_stable``, the read_committed of group offsets): an
offset committed in a transaction that is still open is not answered until it ends. They are
read through a consumer handle of the group, never the admin client (see ``SinkOffsets.get``).
Kafka's shapes: a partition is ``{"kafka_topic": str, "kafka_partition": int}`` and an offset
``{"kafka_offset": int}`` (``null`` resets that partition). Altering and deleting go
through the admin client (OffsetDelete, which resets single partitions, through kafka-python's:
librdkafka's Python binding lacks it); the connector is STOPPED, so the group should have no members
(one that has, a task not stopped yet or another consumer, is refused at once, as by Kafka).
"""

from __future__ import annotations

import concurrent.futures
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient
from kafka import errors as kafka_errors
from kafka.admin import KafkaAdminClient
from kafka.structs import TopicPartition as KafkaPythonTopicPartition

from core.herder import BadRequestError
from core.kafka import (
    READ_COMMITTED,
    Consumer,
    RetriableKafkaError,
    admin_client,
    client_config,
    consumer_keys,
    kafka_python_settings,
    raise_if_refused_login,
    wrap_kafka_error,
)

log = logging.getLogger("copycat.sink_offsets")

KAFKA_TOPIC_KEY = "kafka_topic"
KAFKA_PARTITION_KEY = "kafka_partition"
KAFKA_OFFSET_KEY = "kafka_offset"
# Everything one REST call does with the group, retries included: generous for a broker under
# test load, and well inside the 90 s Kafka Connect's REST clients wait for an answer.
ADMIN_TIMEOUT_S = 30.0
# One attempt of an admin request. A request whose connection dropped can stay unanswered
# (seen: a DeleteGroups sent during a broker outage never completed), so attempts are bounded
# and retried rather than waited for until the whole deadline is gone.
ADMIN_ATTEMPT_TIMEOUT_S = 10.0
# Pause between attempts, doubling up to the maximum (the Java admin client's
# retry.backoff.ms and retry.backoff.max.ms).
RETRY_BACKOFF_S = 0.1
# How often a wait for an answer looks whether the cluster refused the client's login.
LOGIN_CHECK_S = 0.5
RETRY_BACKOFF_MAX_S = 1.0
T = TypeVar("T")
C = TypeVar("C")
_GROUP_GONE = {KafkaError.GROUP_ID_NOT_FOUND, KafkaError.UNKNOWN_TOPIC_OR_PART}


def sink_group_id(
    name: str, props: Mapping[str, str], worker_consumer: Mapping[str, str] | None = None
) -> str:
    """Sink ``name``'s consumer group, as its tasks' consumers have it: the connector's
    ``consumer.override.group.id``, else the worker's ``consumer.group.id`` (``worker_consumer``:
    the worker's ``consumer.*`` keys without the prefix), else ``connect-<name>``."""
    return (
        props.get("consumer.override.group.id")
        or (worker_consumer or {}).get("group.id")
        or f"connect-{name}"
    )


# Kafka parses partitions with Integer.parseInt and offsets with Long.parseLong.
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
# What Java's parseInt / parseLong accept: an optional sign and digits (Python's int() would
# also take spaces and underscores). ASCII digits only: Java reads other scripts' digits too,
# a difference kept as for client keys (docs/rest.md).
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")


def _java_text(value: Any) -> str:
    """``value`` as Java's String.valueOf prints it, for the error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _integer(value: Any, maximum: int, what: str, kind: str) -> int:
    """``value`` (a JSON number or a string of digits) as Kafka's SinkUtils parses it into an
    int or a long, whose range ``maximum`` bounds; 400 with Kafka's message otherwise."""
    text = _java_text(value)
    if not isinstance(value, bool) and isinstance(value, (int, str)):
        if _JAVA_INTEGER.fullmatch(text) and -maximum - 1 <= int(text) <= maximum:
            return int(text)
    raise BadRequestError(
        f"Failed to parse the following Kafka {what} value in the provided offsets: "
        f"'{text}'. {kind} values for sink connectors need to be integers."
    )


def parse_sink_offsets(offsets: list[dict[str, Any]]) -> dict[tuple[str, int], int | None]:
    """Validate a PATCH body's sink offsets as Kafka's SinkUtils does; 400 when malformed."""
    parsed: dict[tuple[str, int], int | None] = {}
    for entry in offsets:
        partition, offset = entry.get("partition"), entry.get("offset")
        if not isinstance(partition, dict):
            raise BadRequestError(
                "The partition for a sink connector offset cannot be null or missing"
            )
        if KAFKA_TOPIC_KEY not in partition or KAFKA_PARTITION_KEY not in partition:
            raise BadRequestError(
                f"The partition for a sink connector offset must contain the "
                f"keys '{KAFKA_TOPIC_KEY}' and '{KAFKA_PARTITION_KEY}'"
            )
        topic = partition[KAFKA_TOPIC_KEY]
        if not isinstance(topic, str) or not topic:
            raise BadRequestError("Kafka topic names must be valid strings and may not be null")
        if partition[KAFKA_PARTITION_KEY] is None:
            raise BadRequestError("Kafka partitions must be valid numbers and may not be null")
        number = _integer(partition[KAFKA_PARTITION_KEY], INT32_MAX, "partition", "Partition")
        if offset is None:
            parsed[(topic, number)] = None
            continue
        if not isinstance(offset, dict) or KAFKA_OFFSET_KEY not in offset:
            raise BadRequestError(
                f"The offset for a sink connector should either be null or "
                f"contain the key '{KAFKA_OFFSET_KEY}'"
            )
        value = _integer(offset[KAFKA_OFFSET_KEY], INT64_MAX, "offset", "Offset")
        if value < 0 or number < 0:
            raise BadRequestError("Kafka partitions and offsets may not be negative")
        parsed[(topic, number)] = value
    return parsed


# Errors retried until the deadline: the group's coordinator moving or loading (the first
# four), and the connection to the broker failing under a request: librdkafka reports those
# as not retriable, but the Java admin client that Kafka Connect uses retries such calls, and
# a REST call must not fail for a dropped connection. A group that still has a member is not
# retried (see GroupNotEmptyError).
_TRANSIENT = frozenset(
    {
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._TIMED_OUT,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NETWORK_EXCEPTION,
        # Offsets read stable (require_stable): one is in a transaction that is still open.
        # Java's admin client retries it; librdkafka reports it as not retriable.
        KafkaError.UNSTABLE_OFFSET_COMMIT,
    }
)


class _AttemptTimedOut(Exception):
    """One attempt's future did not complete in ADMIN_ATTEMPT_TIMEOUT_S."""


def _retrying(connect: Callable[[], C], call: Callable[[C, float], T], what: str) -> T:
    """Run ``call(admin, attempt_timeout_s)`` until it succeeds, a non-transient error, or the
    deadline; each attempt with a new admin client from ``connect``.

    A new client per attempt, as Kafka Connect uses a new admin client per offsets request:
    after a request was cut off by a dropped connection, later requests of the same librdkafka
    client for some groups went unanswered (seen on the dev broker), while a new client was
    answered at once.

    Called on the REST handler's thread; blocks for at most about ADMIN_TIMEOUT_S.

    Raises:
        KafkaException: a non-transient error, as librdkafka reported it.
        RetriableKafkaError: still failing transiently at the deadline; names ``what``.
    """
    deadline = time.monotonic() + ADMIN_TIMEOUT_S
    backoff = RETRY_BACKOFF_S
    attempt = 0
    while True:
        attempt += 1
        remaining = deadline - time.monotonic()
        client = connect()
        try:
            return call(client, max(0.1, min(ADMIN_ATTEMPT_TIMEOUT_S, remaining)))
        except KafkaException as exc:
            error = exc.args[0]
            if not (error.code() in _TRANSIENT or error.retriable()):
                raise
            last: BaseException = exc
            reason = error.str()
        except _AttemptTimedOut as exc:
            last, reason = exc, f"no answer within {ADMIN_ATTEMPT_TIMEOUT_S:.0f} s"
        # A refused login is never answered, only reported to the client's error callback:
        # said at once, not as a cluster that does not answer.
        raise_if_refused_login(client)
        if time.monotonic() + backoff >= deadline:
            raise RetriableKafkaError(
                f"could not {what}: the Kafka cluster did not answer successfully within "
                f"{ADMIN_TIMEOUT_S:.0f} s ({attempt} attempts; last: {reason})",
                retriable=True,
            ) from last
        log.info("%s: attempt %d failed (%s); retrying in %.1f s", what, attempt, reason, backoff)
        time.sleep(backoff)
        backoff = min(backoff * 2, RETRY_BACKOFF_MAX_S)


def _result(future: concurrent.futures.Future[T], timeout_s: float, admin: object = None) -> T:
    """The future's result within ``timeout_s``; waited for in slices, ending as soon as the
    cluster refused ``admin``'s login."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return future.result(max(0.0, min(LOGIN_CHECK_S, deadline - time.monotonic())))
        except concurrent.futures.TimeoutError:
            raise_if_refused_login(admin)
            if time.monotonic() >= deadline:
                raise _AttemptTimedOut() from None  # librdkafka completes the future later


def _stable(partitions: list[KafkaTopicPartition]) -> list[KafkaTopicPartition]:
    """``partitions``, unless one's offset is still in an open transaction: librdkafka reports
    UNSTABLE_OFFSET_COMMIT for the whole request or, as seen on Kafka 4.1, for the partition
    alone; raised here too, so the read is retried until the transaction ends instead of
    leaving the partition out."""
    for tp in partitions:
        if tp.error is not None and tp.error.code() == KafkaError.UNSTABLE_OFFSET_COMMIT:
            raise KafkaException(tp.error)
    return partitions


def _topics(consumer: Consumer, deadline: float) -> Mapping[str, Any]:
    """The cluster's topic metadata, asked in slices of LOGIN_CHECK_S until ``deadline`` so
    that a refused login (told only to the client's error callback, which ``poll`` serves)
    ends the wait at once."""
    while True:
        try:
            left = deadline - time.monotonic()
            metadata = consumer.list_topics(timeout=max(0.1, min(LOGIN_CHECK_S, left)))
            topics: Mapping[str, Any] = metadata.topics
            return topics
        except KafkaException as exc:
            code = exc.args[0].code()
            if code not in (KafkaError._TIMED_OUT, KafkaError._TRANSPORT):
                raise
            consumer.poll(0)  # raises KafkaAuthenticationError for a refused login
            if time.monotonic() >= deadline:
                raise


def _read_committed(consumer: Consumer, timeout_s: float) -> list[KafkaTopicPartition]:
    """The group's committed offsets (``consumer``'s group) of every partition of every
    topic of the cluster, within ``timeout_s``; closes ``consumer``."""
    deadline = time.monotonic() + timeout_s
    try:
        partitions = [
            KafkaTopicPartition(name, number)
            for name, topic in _topics(consumer, deadline).items()
            if topic.error is None
            for number in topic.partitions
        ]
        if not partitions:
            return []
        left = max(0.1, deadline - time.monotonic())
        return _stable(consumer.committed(partitions, timeout=left))
    finally:
        consumer.close()


class _OffsetsAdmin(KafkaAdminClient):  # type: ignore[misc]  # kafka-python has no annotations
    """kafka-python's admin client, closed again (its IO thread stopped) when its constructor
    fails: kafka-python's starts that thread, then bootstraps, and leaves the thread running
    when the bootstrap fails, one per attempt during an outage. Uses two internals of it
    (``_net``, ``_closed``), as core/distributed/membership.py does others (hence the <3.1 pin).
    """

    def __init__(self, **configs: Any) -> None:
        try:
            super().__init__(**configs)
        except BaseException:
            if hasattr(self, "_net"):
                self._closed = False
                self.close()
            raise


class _NoOffsetDelete(Exception):
    """The broker does not support OffsetDelete (API key 47)."""


class SinkOffsetsError(Exception):
    """The broker refused to change the offsets of some partitions; the message names them."""


class GroupNotEmptyError(Exception):
    """The group still has a member (a task not stopped yet, or another consumer), so the
    broker refused to change its offsets (UNKNOWN_MEMBER_ID for a commit from outside the
    group, NON_EMPTY_GROUP for its deletion) and nothing was changed. Answered at once, as
    Kafka Connect does: retrying would only hold the REST call while the member stays."""


# What the broker answers a change of the offsets of a group that has members: a commit from
# outside the group, the group's deletion, and the deletion of the offsets of a partition of a
# topic the group's members subscribe to (Kafka Connect's GroupSubscribedToTopicException).
_GROUP_HAS_MEMBERS = frozenset(
    {
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.NON_EMPTY_GROUP,
        KafkaError.GROUP_SUBSCRIBED_TO_TOPIC,
    }
)


def _as_kafka_exception(exc: kafka_errors.KafkaError) -> KafkaException:
    """A kafka-python error as the confluent-kafka one ``_retrying`` and the callers read: a
    broker's error keeps its code; a client-side one (no connection, no answer in time) is a
    transport error, retriable when kafka-python says so."""
    retriable = bool(getattr(exc, "retriable", False))
    errno = getattr(exc, "errno", None)
    if isinstance(exc, kafka_errors.BrokerResponseError) and isinstance(errno, int):
        # as librdkafka words a broker's error
        code, reason = errno, f"Broker: {exc.description or exc.message}"
    else:
        code = KafkaError._TRANSPORT if retriable else KafkaError._FAIL
        reason = str(exc)
    return KafkaException(KafkaError(code, reason, retriable=retriable))


def _missing_partitions(
    partitions: Iterable[tuple[str, int]], topics: Mapping[str, Any]
) -> list[str]:
    """What is wrong with each of ``partitions`` that the cluster does not have, given the
    cluster's topic metadata (``list_topics().topics``); empty when all exist."""
    problems = []
    for topic, partition in sorted(set(partitions)):
        metadata = topics.get(topic)
        if metadata is None or metadata.error is not None:
            problems.append(f"topic {topic} (partition {partition}) does not exist")
        elif partition not in metadata.partitions:
            count = len(metadata.partitions)
            problems.append(
                f"partition {partition} of topic {topic} does not exist (the topic has "
                f"{count} partition{'' if count == 1 else 's'})"
            )
    return problems


def _partition_errors(result: ConsumerGroupTopicPartitions) -> ConsumerGroupTopicPartitions:
    """``result``, unless the broker refused some partitions (it applies the others): the
    request-level result succeeds even then, so each partition's error is checked. A
    transient one (COORDINATOR_LOAD_IN_PROGRESS for a group just created) is raised as the
    ``KafkaException`` that ``_retrying`` retries."""
    failed = [(tp, tp.error) for tp in result.topic_partitions or [] if tp.error is not None]
    for _, error in failed:
        if error.code() in _GROUP_HAS_MEMBERS:
            raise KafkaException(error)  # GroupNotEmptyError, in SinkOffsets.alter
        if error.code() in _TRANSIENT or error.retriable():
            raise KafkaException(error)  # retried: seen for a new group on Kafka 4.1
    if failed:
        raise SinkOffsetsError(
            "; ".join(f"{tp.topic}-{tp.partition}: {error.str()}" for tp, error in failed)
        )
    return result


class SinkOffsets:
    """Reads and writes one sink connector's consumer group offsets."""

    def __init__(self, client_config: Mapping[str, Any], group: str) -> None:
        """``client_config``: the worker's settings for Kafka clients (``bootstrap.servers``...)."""
        self.client_config = dict(client_config)
        self.group = group

    def _admin(self) -> AdminClient:
        return admin_client(self.client_config)

    def _consumer(self) -> Consumer:
        """A consumer of the group, for reading its committed offsets: never subscribed (it
        never joins the group) and never committing. read_committed makes librdkafka ask for
        stable offsets (require_stable), as the admin request did."""
        return Consumer(
            consumer_keys(
                client_config(
                    self.client_config,
                    {
                        "group.id": self.group,
                        "enable.auto.commit": False,
                        "enable.auto.offset.store": False,
                        "isolation.level": READ_COMMITTED,
                    },
                )
            )
        )

    def get(self) -> list[dict[str, Any]]:
        """The group's committed offsets, by topic and partition.

        Read with a consumer handle of the group (OffsetFetch for every partition of every
        topic the cluster has), not with the admin client's ListConsumerGroupOffsets:
        librdkafka (2.16) crashes the whole process when that admin request is answered
        NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE (it refreshes the coordinator of the
        admin handle's consumer group, which it has none of; librdkafka #5040,
        confluent-kafka-python #1982), as Kafka 4.1 answers for a group just used or whose
        coordinator moved. Unlike Kafka, offsets of topics that no longer exist are not listed.
        """
        try:
            committed = _retrying(
                self._consumer,
                _read_committed,
                f"read the offsets of group {self.group}",
            )
        except KafkaException as exc:
            if exc.args[0].code() in _GROUP_GONE:
                return []
            raise wrap_kafka_error(exc, f"could not read offsets of group {self.group}") from exc
        rows = []
        for tp in sorted(committed, key=lambda t: (t.topic, t.partition)):
            if tp.offset is None or tp.offset < 0 or tp.error is not None:
                continue
            rows.append(
                {
                    # Kafka's key order (its answer's JSON text).
                    "partition": {KAFKA_PARTITION_KEY: tp.partition, KAFKA_TOPIC_KEY: tp.topic},
                    "offset": {KAFKA_OFFSET_KEY: tp.offset},
                }
            )
        return rows

    def missing_partitions(self, partitions: Iterable[tuple[str, int]]) -> list[str]:
        """What is wrong with each of ``partitions`` the cluster does not have; empty if all
        exist. Checked before anything changes: a broker refuses offsets for a partition it
        does not have but applies the rest of the request."""
        metadata = _retrying(
            self._admin,
            lambda admin, timeout_s: admin.list_topics(timeout=timeout_s),
            "list the cluster's topics",
        )
        return _missing_partitions(partitions, metadata.topics)

    def alter(self, offsets: Mapping[tuple[str, int], int | None]) -> None:
        """Set the given partitions' offsets; ``None`` removes a partition's committed offset.

        As Kafka Connect's Worker: the offsets given are committed (OffsetCommit from outside
        the group), and the partitions reset have their offsets deleted one by one
        (OffsetDelete); every other partition's committed offset stays as it was. The caller
        checks first that every partition exists (``missing_partitions``).

        A broker without OffsetDelete (the dev broker; Kafka before 2.4) resets partitions as
        before: the group's other offsets are read, the group deleted and they are written
        back, which an error in between can lose (a warning says so).

        Raises:
            SinkOffsetsError: the broker refused some partitions (named).
            GroupNotEmptyError: the group has a member; nothing was changed.
        """
        to_set = {tp: o for tp, o in offsets.items() if o is not None}
        to_delete = sorted(tp for tp, o in offsets.items() if o is None)
        try:
            if to_set:
                self._commit(to_set)
            if to_delete:
                try:
                    self._delete(to_delete)
                except _NoOffsetDelete:
                    self._delete_by_rewriting(to_delete)
        except KafkaException as exc:
            if exc.args[0].code() in _GROUP_HAS_MEMBERS:
                raise GroupNotEmptyError(exc.args[0].str()) from exc
            raise wrap_kafka_error(exc, f"could not alter offsets of group {self.group}") from exc

    def _commit(self, offsets: Mapping[tuple[str, int], int]) -> None:
        partitions = [KafkaTopicPartition(t, p, o) for (t, p), o in offsets.items()]
        _retrying(
            self._admin,
            lambda admin, timeout_s: _partition_errors(
                _result(
                    admin.alter_consumer_group_offsets(
                        [ConsumerGroupTopicPartitions(self.group, partitions)],
                        request_timeout=timeout_s,
                    )[self.group],
                    timeout_s,
                    admin,
                )
            ),
            f"alter the offsets of group {self.group}",
        )

    def _delete(self, partitions: list[tuple[str, int]]) -> None:
        """Delete the committed offsets of ``partitions`` alone (OffsetDelete); a group that
        does not exist has none to delete."""

        def attempt(_: None, timeout_s: float) -> None:
            settings = {
                **kafka_python_settings(self.client_config),
                "client_id": f"copycat-offsets-{self.group}",
                "request_timeout_ms": int(timeout_s * 1000),
                "bootstrap_timeout_ms": int(timeout_s * 1000),
            }
            try:
                admin = _OffsetsAdmin(**settings)
            except kafka_errors.KafkaError as exc:
                raise _as_kafka_exception(exc) from exc
            try:
                results = admin.delete_group_offsets(
                    self.group, [KafkaPythonTopicPartition(t, p) for t, p in partitions]
                )
            except kafka_errors.GroupIdNotFoundError:
                return
            except kafka_errors.UnsupportedVersionError as exc:
                raise _NoOffsetDelete() from exc
            except kafka_errors.KafkaError as exc:
                raise _as_kafka_exception(exc) from exc
            finally:
                admin.close()
            failed = []
            for tp, error in sorted(results.items()):
                if error is kafka_errors.NoError:
                    continue
                converted = _as_kafka_exception(error())
                code = converted.args[0].code()
                if code in _GROUP_HAS_MEMBERS or code in _TRANSIENT or error.retriable:
                    raise converted  # GroupNotEmptyError in alter(), or retried
                failed.append(f"{tp.topic}-{tp.partition}: {converted.args[0].str()}")
            if failed:
                raise SinkOffsetsError("; ".join(failed))

        _retrying(
            lambda: None, attempt, f"delete the offsets of some partitions of group {self.group}"
        )

    def _delete_by_rewriting(self, partitions: list[tuple[str, int]]) -> None:
        """``_delete`` on a broker without OffsetDelete: delete the group and write back the
        offsets of the partitions not reset. The connector is STOPPED, so no member commits in
        between, but an error between the two loses the offsets written back."""
        log.warning(
            "the Kafka cluster does not support OffsetDelete: resetting %d partition(s) of "
            "group %s by deleting the group and writing back its other offsets",
            len(partitions),
            self.group,
        )
        reset = set(partitions)
        keep = {
            (r["partition"][KAFKA_TOPIC_KEY], r["partition"][KAFKA_PARTITION_KEY]): r["offset"][
                KAFKA_OFFSET_KEY
            ]
            for r in self.get()
        }
        keep = {tp: o for tp, o in keep.items() if tp not in reset}
        self.reset()
        if keep:
            self._commit(keep)

    def reset(self) -> None:
        """Delete the group (its offsets); one already gone is fine.

        Raises:
            GroupNotEmptyError: the group has a member; nothing was changed.
        """
        try:
            _retrying(
                self._admin,
                lambda admin, timeout_s: _result(
                    admin.delete_consumer_groups([self.group], request_timeout=timeout_s)[
                        self.group
                    ],
                    timeout_s,
                    admin,
                ),
                f"delete group {self.group}",
            )
        except KafkaException as exc:
            if exc.args[0].code() in _GROUP_HAS_MEMBERS:
                raise GroupNotEmptyError(exc.args[0].str()) from exc
            if exc.args[0].code() not in _GROUP_GONE:
                raise wrap_kafka_error(exc, f"could not delete group {self.group}") from exc
