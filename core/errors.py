"""Worker side of error handling: error logs and the dead letter queue.

The plugin host decides per record (retry, tolerate, or fail the task, see
``isolation/_hostside/copycat_errors.py``); what it tolerated comes back to the worker as
``(stage, class, exception class, message, stack trace)`` with the record's coordinates. Here
those failures are logged (``errors.log.enable``) and written to the dead letter queue
(``errors.deadletterqueue.*``) with the original key, value and headers, plus Kafka's
``__connect.errors.*`` context headers. The sink loop flushes the DLQ before it commits
offsets, so a reported record is always in the DLQ before its offset is committed.

Under ``errors.tolerance=none`` the failing record is reported the same way (logged, and a
sink's written to the DLQ) before the task fails, as Kafka's RetryWithToleranceOperator
reports before it throws "Tolerance exceeded in error handler" (:meth:`ErrorReporter.fail`).
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message

from core.kafka import wrap_kafka_error
from core.runtime.counters import TaskCounters
from core.runtime.spec import ErrorsPolicy
from core.secrets import scrub_with
from core.topics import TopicCreator
from isolation import ErrorInfo, RemotePluginError
from plugin_api import ConnectException

log = logging.getLogger("copycat.errors")

# Kafka's DeadLetterQueueReporter header names.
HEADER_PREFIX = "__connect.errors."
ERROR_HEADERS = (
    "topic",
    "partition",
    "offset",
    "connector.name",
    "task.id",
    "stage",
    "class.name",
    "exception.class.name",
    "exception.message",
    "exception.stacktrace",
)
# How long a commit waits for DLQ records to be acknowledged before the task fails.
DLQ_FLUSH_TIMEOUT_S = 30.0


# A consumed record's timestamp types (librdkafka's), as Kafka's TimestampType names them.
TIMESTAMP_TYPES = {1: "CreateTime", 2: "LogAppendTime"}


def _consumed(topic: str, partition: int, offset: int, row: Sequence[Any] | None) -> str:
    """Kafka's LogReporter.Sink words for a consumed record: where it is and its timestamp,
    nothing of its contents."""
    text = f", where consumed record is {{topic='{topic}', partition={partition}, offset={offset}"
    if row is not None and row[4] in TIMESTAMP_TYPES:
        text += f", timestamp={row[3]}, timestampType={TIMESTAMP_TYPES[row[4]]}"
    return text + "}"


class ErrorReporter:
    """Logs tolerated failures and sends them to the dead letter queue of one task."""

    def __init__(
        self,
        connector: str,
        task_id: int,
        policy: ErrorsPolicy,
        *,
        producer: Callable[[], Any] | None = None,
        admin: Callable[[], Any] | None = None,
        secrets: Mapping[str, str] | None = None,
    ) -> None:
        """``producer`` and ``admin`` make the DLQ's clients, only when there is a DLQ;
        ``secrets`` (value -> placeholder) are the connector's resolved config values, put
        back as placeholders in every message and trace this logs or writes to the DLQ."""
        self.connector = connector
        self.secrets = dict(secrets or {})
        self.task_id = task_id
        self.policy = policy
        self.tolerate_all = policy.tolerance_all
        self.log_enabled = policy.log_enable
        self.log_messages = policy.log_include_messages
        self.retry_timeout_ms = policy.retry_timeout_ms
        self.retry_delay_max_ms = policy.retry_delay_max_ms
        self.dlq_topic = policy.dlq_topic
        self.context_headers = policy.dlq_context_headers
        self._producer: Any = None
        self._failure: ConnectException | None = None
        # Per consumed partition, the first offset of a failed record that the DLQ did not
        # take (refused, or never sent after an earlier one was refused): a failed sink's
        # closing commit stops there, committing the records put before it.
        self.unwritten: dict[tuple[str, int], int] = {}
        self.dlq_records = 0
        # The task's metrics' counts (task-error-metrics here); its loop adds the rest.
        self.counters = TaskCounters()
        if self.dlq_topic and producer is not None:
            self._producer = producer()
            try:
                TopicCreator(
                    admin or (lambda: None),
                    {
                        "topic.creation.default.replication.factor": str(
                            policy.dlq_replication_factor
                        ),
                        "topic.creation.default.partitions": "1",
                    },
                ).ensure(self.dlq_topic)
            except Exception as exc:
                # Kafka's DeadLetterQueueReporter's words first, the broker's reason after.
                self.close()
                raise ConnectException(
                    f"Could not initialize dead letter queue with topic={self.dlq_topic}"
                ) from exc

    # -- reporting ---------------------------------------------------------------------------

    def report_sink(
        self,
        rows: Iterable[tuple[Any, ...]],
        failures: Sequence[tuple[Any, ...]],
        look_up: Callable[[list[tuple[str, int, int]]], Iterable[tuple[Any, ...]]] | None = None,
    ) -> None:
        """Failures of consumed records; ``rows`` holds the batches they may come from.
        ``look_up``: finds the rows of failed records not among ``rows`` (records a task
        reported errant batches after it was given them), else those go out without their
        key, value and headers."""
        if not failures:
            return
        self._count(len(failures))
        by_coordinates = {(r[0], r[1], r[2]): r for r in rows}
        if look_up is not None:
            absent = [
                (f[0], f[1], f[2]) for f in failures if (f[0], f[1], f[2]) not in by_coordinates
            ]
            if absent:
                by_coordinates.update({(r[0], r[1], r[2]): r for r in look_up(absent)})
        for index, (topic, partition, offset, *raw_info) in enumerate(failures):
            info = self._scrubbed(raw_info)
            row = by_coordinates.get((topic, partition, offset))
            key, value, headers = (row[5], row[6], row[7]) if row else (None, None, None)
            # The original record's timestamp, as Kafka's DeadLetterQueueReporter passes it
            # (none when the record had none: the producer stamps it then).
            timestamp = row[3] if row is not None and row[3] is not None and row[3] >= 0 else 0
            if self.log_enabled:
                self._log(info, _consumed(topic, partition, offset, row))
            if self._producer is not None:
                context = {"topic": topic, "partition": str(partition), "offset": str(offset)}
                record = f"record {topic}-{partition}@{offset}"
                try:
                    self._send(
                        key,
                        value,
                        list(headers or ()),
                        context,
                        info,
                        record,
                        timestamp,
                        (topic, partition, offset),
                    )
                except BaseException:
                    for unsent in failures[index:]:
                        self._unwritten(unsent[0], unsent[1], unsent[2])
                    raise

    def _count(self, failed: int) -> None:
        """``failed`` records failed for good (task-error-metrics, as Kafka's
        ErrorHandlingMetrics counts them: each an error, skipped when tolerated, logged when
        errors.log.enable is set)."""
        counters = self.counters
        counters.record_errors += failed
        if self.tolerate_all:
            counters.records_skipped += failed
        if self.log_enabled:
            counters.errors_logged += failed
        counters.last_error_ms = int(time.time() * 1000)

    def _unwritten(self, topic: str, partition: int, offset: int) -> None:
        first = self.unwritten.get((topic, partition))
        if first is None or offset < first:
            self.unwritten[(topic, partition)] = offset

    def report_source(self, failures: Sequence[tuple[Any, ...]]) -> None:
        """Failures of polled source records (a DLQ for them goes beyond Kafka Connect)."""
        if failures:
            self._count(len(failures))
        for _seq, description, *raw_info in failures:
            info = self._scrubbed(raw_info)
            if self.log_enabled:
                self._log(info, f", where source record is = {description}")
            if self._producer is not None and self.tolerate_all:
                value = json.dumps({"record": description}).encode()
                self._send(None, value, [], {}, info, description)

    def fail(self, where: str, info: Sequence[str]) -> ConnectException:
        """The error that fails the task for a record not tolerated (already reported), once
        what it sent to the DLQ is acknowledged. ``where`` names the record; the plugin's
        stack trace becomes the cause, shown in the task's status trace."""
        stage, class_name, exc_class, message, trace = self._scrubbed(info)
        try:
            self.flush()
        except ConnectException as exc:
            log.error("task %s-%d: %s", self.connector, self.task_id, exc)
        error = ConnectException(
            f"Tolerance exceeded in error handler: {stage} ({class_name}) failed on {where}: "
            f"{exc_class}: {message}"
        )
        plugin_error = ErrorInfo(exc_class, message, "other", trace)
        error.__cause__ = RemotePluginError(class_name, plugin_error)
        return error

    def _scrubbed(self, info: Sequence[str]) -> list[str]:
        """A failure's ``(stage, class, exception class, message, trace)`` with the
        connector's resolved values put back as placeholders: an SMT configured through a
        provider quotes its value in its error (``Unknown field: <the field>``)."""
        return [scrub_with(part, self.secrets) for part in info]

    def _log(self, info: Sequence[str], record: str) -> None:
        """Log a failure as Kafka's LogReporter (errors.log.enable): the stage and class,
        ``record`` (what failed, with errors.log.include.messages) and the exception with its
        stack trace. Never a consumed record's key or value, as Kafka."""
        stage, class_name, exc_class, message, trace = info
        log.error(
            "Error encountered in task %s-%d. Executing stage '%s' with class '%s'%s.\n%s",
            self.connector,
            self.task_id,
            stage,
            class_name,
            record if self.log_messages else "",
            trace.rstrip("\n") or f"{exc_class}: {message}",
        )

    def _send(
        self,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, Any]],
        context: Mapping[str, str],
        info: Sequence[str],
        record: str,
        timestamp: int = 0,
        consumed: tuple[str, int, int] | None = None,
    ) -> None:
        """Produce one record to the DLQ; ``record`` names the failed record it stands for,
        in the task's error should the DLQ refuse it. ``timestamp`` (ms), 0 for none: the
        producer's clock. ``consumed``: the failed record's coordinates, a sink's, noted in
        :attr:`unwritten` should the DLQ refuse it after it was queued.

        Raises:
            ConnectException: the producer refused it (too large for the DLQ producer's
                max.request.size, ...), naming the DLQ topic and the record.
        """
        assert self._producer is not None and self.dlq_topic is not None
        if self.context_headers:
            stage, class_name, exc_class, message, trace = info
            values = {
                **context,
                "connector.name": self.connector,
                "task.id": str(self.task_id),
                "stage": stage,
                "class.name": class_name,
                "exception.class.name": exc_class,
                "exception.message": message,
                "exception.stacktrace": trace,
            }
            headers = headers + [
                (HEADER_PREFIX + name, values[name].encode())
                for name in ERROR_HEADERS
                if name in values
            ]
        while True:
            try:
                self._producer.produce(
                    self.dlq_topic,
                    value,
                    key,
                    headers=headers or None,
                    timestamp=timestamp,
                    on_delivery=functools.partial(self._delivered, record, consumed),
                )
                break
            except BufferError:
                self._producer.poll(0.05)
            except KafkaException as exc:
                self.counters.dlq_requests += 1
                self.counters.dlq_failures += 1
                raise wrap_kafka_error(exc, self._dlq_failure(record)) from exc
        self.dlq_records += 1
        self.counters.dlq_requests += 1

    def _dlq_failure(self, record: str) -> str:
        return (
            f"task {self.connector}-{self.task_id} could not write {record} to the dead "
            f"letter queue {self.dlq_topic}"
        )

    def _delivered(
        self,
        record: str,
        consumed: tuple[str, int, int] | None,
        err: KafkaError | None,
        msg: Message,
    ) -> None:
        if err is None:
            return
        self.counters.dlq_failures += 1
        if consumed is not None:
            self._unwritten(*consumed)
        if self._failure is None:
            self._failure = wrap_kafka_error(err, self._dlq_failure(record))

    def flush(self, deadline: float | None = None) -> None:
        """Wait until every DLQ record is acknowledged; raise if one could not be written.

        ``deadline`` (monotonic), a stopping task's: wait until then rather than
        :data:`DLQ_FLUSH_TIMEOUT_S`, and give up on the records still unacknowledged then
        (purged: each is noted in :attr:`unwritten`, so the closing commit stops before it).
        """
        producer = self._producer
        if producer is not None:
            if deadline is None:
                timeout = DLQ_FLUSH_TIMEOUT_S
                within = f"within {DLQ_FLUSH_TIMEOUT_S:.0f} s"
            else:
                timeout = max(0.0, deadline - time.monotonic())
                within = "before the task's stop (task.shutdown.graceful.timeout.ms)"
            remaining = producer.flush(timeout)
            if remaining and deadline is not None:
                producer.purge()
                producer.poll(0)  # their delivery reports: noted in self.unwritten
            if remaining and self._failure is None:
                self._failure = ConnectException(
                    f"{remaining} records for dead letter queue {self.dlq_topic} were not "
                    f"acknowledged {within}"
                )
        if self._failure is not None:
            raise self._failure

    def close(self, deadline: float | None = None) -> None:
        """Flush the DLQ producer (until ``deadline``, monotonic: the stop's, else for up to
        DLQ_FLUSH_TIMEOUT_S) and close it, at a task's stop: its threads and connections end
        now, not when a garbage collection frees it.
        Never raises: a final commit has already flushed the records its offsets depend on
        (:meth:`flush`), and what is left unacknowledged is dropped, with a warning (closing
        with records queued would wait for them without end)."""
        producer, self._producer = self._producer, None
        if producer is None:
            return
        timeout = DLQ_FLUSH_TIMEOUT_S
        if deadline is not None:
            timeout = min(timeout, max(0.0, deadline - time.monotonic()))
        try:
            remaining = producer.flush(timeout)
            if remaining:
                log.warning(
                    "task %s-%d stopped with %d records for dead letter queue %s not "
                    "acknowledged; they are dropped",
                    self.connector,
                    self.task_id,
                    remaining,
                    self.dlq_topic,
                )
                producer.purge()
                producer.poll(0)
            producer.close()
        except Exception:  # noqa: BLE001 - best effort on the way out
            log.warning(
                "task %s-%d: closing the dead letter queue producer failed",
                self.connector,
                self.task_id,
                exc_info=True,
            )
