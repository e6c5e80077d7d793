"""The ``_schemas`` topic: the registry's only durable storage, and the only source of its state.

Like Confluent's KafkaStore, the registry never changes its memory directly: a reader thread
consumes the topic from the beginning for as long as the registry runs and applies every
record it reads, its own writes included. A write produces its records and waits until the
reader has applied them, so what the registry serves is always what the topic says, and a
restarted registry replays exactly the state the old one served (same records, same order,
same code).

A write that is not acknowledged in time (a broker stalled by a GC pause or a network
partition) is answered with 50001, but its records stay queued in the producer, which never
gives up on a record (``message.timeout.ms=0``): if the broker takes them later, the reader
applies them like any other record. Until every earlier record is either applied or known
not to have been written (the producer reported a non-retriable error), the registry refuses
new writes instead of planning them on a state that may be about to change: otherwise a
late record and a new one could be given the same schema id.

Each record the registry writes carries a token in a Kafka header, by which the writer
recognises it when the reader applies it; Confluent's registry ignores headers.

Reading "to the end" on start without watermarks: the dev broker (Tansu) reports a wrong high
watermark after multi-record batches (see ``core.dev.broker``), so ``get_watermark_offsets``
cannot tell when replay is complete. Like Confluent's registry (which waits for its own
``NOOP`` record), we produce a marker record, a ``NOOP`` key carrying a unique id in a
Kafka header, and consume until that record arrives: everything produced before it has
then been read, on any broker. If the marker does not arrive within the timeout (a broker
that fails to return it), replay falls back to "no record for ``REPLAY_IDLE_S``".
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

__all__ = ["SchemaTopicStore", "StoreError"]

log = logging.getLogger("copycat.schema_registry")

DEFAULT_TOPIC = "_schemas"
MARKER_HEADER = "copycat-registry-marker"
WRITE_HEADER = "copycat-registry-write"
NOOP_KEY = {"keytype": "NOOP", "magic": 0}

# Upper bound on one write: produced, acknowledged and applied by the reader. The broker
# acknowledges in milliseconds; this only keeps a request from hanging when it does not.
WRITE_TIMEOUT_S = 10.0
# Time to read the whole topic back on start. Tens of thousands of schema records
# replay in well under a second; the bound turns a dead broker into a clear error.
REPLAY_TIMEOUT_S = 30.0
# Fallback end-of-topic rule when the marker never shows up: this long without a record.
# Generous, because the first fetch includes connecting and fetching metadata.
REPLAY_IDLE_S = 5.0
POLL_INTERVAL_S = 0.2
ADMIN_TIMEOUT_S = 10.0
# What the reader's fetches wait for new records at most. A broker answers a fetch as soon as
# a record arrives; this bounds the wait on one that does not (the dev broker).
FETCH_WAIT_MS = 100
STOP_TIMEOUT_S = 10.0
# On close, time for records still queued (a write answered 50001) to reach the broker.
CLOSE_FLUSH_S = 2.0

Apply = Callable[[dict[str, Any], dict[str, Any] | None], None]


class StoreError(RuntimeError):
    """The ``_schemas`` topic could not be created, read or written."""


def _encode(obj: dict[str, Any] | None) -> bytes | None:
    return None if obj is None else json.dumps(obj, separators=(",", ":")).encode()


class SchemaTopicStore:
    """Produces registry records to the compacted topic; a reader thread applies all of them.

    :attr:`lock` guards the state the reader applies records to: hold it to read that state
    (briefly: the reader waits for it), never while waiting for the broker.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str = DEFAULT_TOPIC,
        write_timeout_s: float = WRITE_TIMEOUT_S,
    ) -> None:
        """Connect (lazily) to ``bootstrap_servers``."""
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.write_timeout_s = write_timeout_s
        self.lock = threading.Lock()
        self._changed = threading.Condition(self.lock)
        # Tokens of records produced but neither applied by the reader nor known unwritten.
        self._unapplied: set[str] = set()
        # Tokens of records the producer gave up on, with its error.
        self._failed: dict[str, str] = {}
        self._producer: Producer | None = Producer(
            {
                "bootstrap.servers": bootstrap_servers,
                "acks": "all",
                "enable.idempotence": False,
                "linger.ms": 0,
                # Never drop a record that may still be written: one that times out locally
                # may already sit in a stalled broker's socket and land later.
                "message.timeout.ms": 0,
            }
        )
        self._reader: threading.Thread | None = None
        self._stopping = threading.Event()
        self._ready = threading.Event()
        self._reader_error: BaseException | None = None

    def _live_producer(self) -> Producer:
        if self._producer is None:
            raise StoreError(f"The store for {self.topic!r} is closed")
        return self._producer

    def ensure_topic(self) -> None:
        """Create the topic (1 partition, ``cleanup.policy=compact``) unless it exists."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        new = NewTopic(
            self.topic, num_partitions=1, replication_factor=1, config={"cleanup.policy": "compact"}
        )
        future = admin.create_topics(
            [new], operation_timeout=ADMIN_TIMEOUT_S, request_timeout=ADMIN_TIMEOUT_S
        )[self.topic]
        try:
            future.result(timeout=ADMIN_TIMEOUT_S)
        except KafkaException as exc:
            error = exc.args[0]
            if isinstance(error, KafkaError) and error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                return
            raise StoreError(f"Could not create the schemas topic {self.topic!r}: {error}") from exc

    # -- reading -----------------------------------------------------------------------------

    def start(self, apply: Apply) -> int:
        """Replay the topic from the start through ``apply(key, value)`` (called with
        :attr:`lock` held), then keep applying new records in a background thread.

        Returns the number of records replayed.

        Raises:
            StoreError: If the broker cannot be read or the marker cannot be written.
        """
        marker = uuid.uuid4().hex
        producer = self._live_producer()
        producer.produce(
            self.topic,
            key=_encode(NOOP_KEY),
            value=None,
            partition=0,
            headers=[(MARKER_HEADER, marker.encode())],
        )
        if producer.flush(self.write_timeout_s):
            producer.purge()
            raise StoreError(f"Could not write the replay marker to {self.topic!r}")
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap_servers,
                "group.id": f"copycat-schema-registry-{marker}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": FETCH_WAIT_MS,
            }
        )
        consumer.assign([TopicPartition(self.topic, 0, -2)])  # -2: OFFSET_BEGINNING
        counter = [0]
        reader = threading.Thread(
            target=self._read,
            args=(consumer, apply, marker.encode(), counter),
            name=f"schema-registry-reader-{self.topic}",
            daemon=True,
        )
        self._reader = reader
        reader.start()
        if not self._ready.wait(REPLAY_TIMEOUT_S):
            self._stop_reader()
            raise StoreError(f"Timed out reading {self.topic!r} from {self.bootstrap_servers}")
        if self._reader_error is not None:
            self._stop_reader()
            raise StoreError(str(self._reader_error)) from self._reader_error
        return counter[0]

    def _read(self, consumer: Consumer, apply: Apply, marker: bytes, counter: list[int]) -> None:
        last_record = time.monotonic()
        try:
            while not self._stopping.is_set():
                if self._producer is not None:
                    self._producer.poll(0)  # delivery reports of failed writes
                msg = consumer.poll(POLL_INTERVAL_S)
                if msg is None:
                    if not self._ready.is_set() and time.monotonic() - last_record > REPLAY_IDLE_S:
                        log.warning(
                            "replay marker not seen; assuming %s was read to the end", self.topic
                        )
                        self._ready.set()
                    continue
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        continue
                    if not self._ready.is_set():
                        raise StoreError(f"Error reading {self.topic!r}: {error}")
                    log.warning("error reading %s (retrying): %s", self.topic, error)
                    continue
                last_record = time.monotonic()
                headers = dict(msg.headers() or [])
                if headers.get(MARKER_HEADER) == marker:
                    self._ready.set()
                    continue
                token = headers.get(WRITE_HEADER)
                with self._changed:
                    if self._apply(msg, apply) and not self._ready.is_set():
                        counter[0] += 1
                    if token is not None:
                        self._unapplied.discard(
                            token.decode() if isinstance(token, bytes) else token
                        )
                        self._changed.notify_all()
        except BaseException as exc:  # reported by start(); the thread must not die silently
            self._reader_error = exc
            self._ready.set()
            if not isinstance(exc, StoreError):
                log.exception("the reader of %s stopped", self.topic)
        finally:
            consumer.close()

    def _apply(self, msg: Any, apply: Apply) -> bool:
        raw_key = msg.key()
        if raw_key is None:
            return False
        try:
            key = json.loads(raw_key)
            raw_value = msg.value()
            value = json.loads(raw_value) if raw_value is not None else None
        except ValueError:
            log.warning("skipping unreadable record at offset %s of %s", msg.offset(), self.topic)
            return False
        if not isinstance(key, dict) or key.get("keytype") == "NOOP":
            return False
        try:
            apply(key, value)
        except (KeyError, TypeError, ValueError) as exc:
            log.warning(
                "skipping malformed record at offset %s of %s: %r", msg.offset(), self.topic, exc
            )
            return False
        return True

    # -- writing -----------------------------------------------------------------------------

    def wait_settled(self) -> None:
        """Wait until every record written before is applied or known not written.

        Raises:
            StoreError: If some are still unacknowledged after the write timeout.
        """
        with self._changed:
            if self._changed.wait_for(lambda: not self._unapplied, self.write_timeout_s):
                return
            pending = len(self._unapplied)
        raise StoreError(
            f"Error in the backend data store: {pending} record(s) written earlier are not yet "
            f"acknowledged by {self.bootstrap_servers}; no new change is accepted until they "
            "are, so that none can take the same id"
        )

    def write(self, records: Iterable[tuple[dict[str, Any], dict[str, Any] | None]]) -> None:
        """Produce ``records`` in order and wait until the reader has applied all of them.

        Raises:
            StoreError: If any record was refused by the producer or not applied in time
                (then it is applied whenever the broker takes it).
        """
        producer = self._live_producer()
        tokens: list[str] = []
        for key, value in records:
            token = uuid.uuid4().hex
            with self.lock:
                self._unapplied.add(token)
            try:
                producer.produce(
                    self.topic,
                    key=_encode(key),
                    value=_encode(value),
                    partition=0,
                    headers=[(WRITE_HEADER, token.encode())],
                    on_delivery=self._delivery_report(token),
                )
            except (BufferError, KafkaException) as exc:
                with self.lock:
                    self._unapplied.discard(token)
                raise StoreError(f"Error in the backend data store: {exc}") from exc
            tokens.append(token)
        if not tokens:
            return
        producer.poll(0)
        with self._changed:
            self._changed.wait_for(
                lambda: not self._unapplied.intersection(tokens), self.write_timeout_s
            )
            pending = len(self._unapplied.intersection(tokens))
            errors = [self._failed.pop(t) for t in tokens if t in self._failed]
        if errors:
            raise StoreError(
                f"Error in the backend data store: {len(errors)} record(s) refused by "
                f"{self.bootstrap_servers}: {'; '.join(dict.fromkeys(errors))}"
            )
        if pending:
            raise StoreError(
                f"Error in the backend data store: {pending} record(s) not acknowledged by "
                f"{self.bootstrap_servers} within {self.write_timeout_s:g}s; the registry "
                "applies them if the broker takes them later"
            )

    def _delivery_report(self, token: str) -> Callable[[KafkaError | None, Any], None]:
        def on_delivery(err: KafkaError | None, _msg: Any) -> None:
            if err is None:
                return  # applied when the reader reads it back
            with self._changed:
                if token in self._unapplied:
                    self._unapplied.discard(token)
                    self._failed[token] = str(err)
                    self._changed.notify_all()

        return on_delivery

    # -- closing -----------------------------------------------------------------------------

    def _stop_reader(self) -> None:
        self._stopping.set()
        if self._reader is not None:
            self._reader.join(STOP_TIMEOUT_S)
        self._reader = None

    def close(self) -> None:
        """Stop the reader, give queued records a moment, and drop the producer now.

        Dropping it here instead of waiting for garbage collection matters to the dev
        broker, which waits for open connections before it stops. Records still queued
        then (a broker that is gone) are dropped: a restarted registry replays without them.
        """
        self._stop_reader()
        producer, self._producer = self._producer, None
        if producer is not None and producer.flush(CLOSE_FLUSH_S):
            log.warning(
                "dropping %d record(s) %s never acknowledged", len(producer), self.bootstrap_servers
            )
            producer.purge()
            producer.flush(0)
