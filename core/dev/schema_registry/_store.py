"""The ``_schemas`` topic: the registry's only durable storage.

Writes are produced with ``acks=all`` and flushed before the HTTP answer, so an
acknowledged registration survives a registry restart. On start the registry replays the
topic from the beginning.

Reading "to the end" without watermarks: the dev broker (Tansu) reports a wrong high
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
NOOP_KEY = {"keytype": "NOOP", "magic": 0}

# Upper bound on one produce+flush. The broker acknowledges in milliseconds; this only
# keeps a request from hanging forever when the broker is gone.
WRITE_TIMEOUT_S = 10.0
# Time to read the whole topic back on start. Tens of thousands of schema records
# replay in well under a second; the bound turns a dead broker into a clear error.
REPLAY_TIMEOUT_S = 30.0
# Fallback end-of-topic rule when the marker never shows up: this long without a record.
# Generous, because the first fetch includes connecting and fetching metadata.
REPLAY_IDLE_S = 5.0
POLL_INTERVAL_S = 0.2
ADMIN_TIMEOUT_S = 10.0


class StoreError(RuntimeError):
    """The ``_schemas`` topic could not be created, read or written."""


def _encode(obj: dict[str, Any] | None) -> bytes | None:
    return None if obj is None else json.dumps(obj, separators=(",", ":")).encode()


class SchemaTopicStore:
    """Produces registry records to the compacted topic and replays them."""

    def __init__(self, bootstrap_servers: str, topic: str = DEFAULT_TOPIC) -> None:
        """Connect (lazily) to ``bootstrap_servers``."""
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self._producer: Producer | None = Producer(
            {
                "bootstrap.servers": bootstrap_servers,
                "acks": "all",
                "enable.idempotence": False,
                "linger.ms": 0,
            }
        )

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

    def write(self, records: Iterable[tuple[dict[str, Any], dict[str, Any] | None]]) -> None:
        """Produce ``records`` in order and wait until the broker acknowledged all of them.

        Raises:
            StoreError: If any record was not acknowledged.
        """
        errors: list[str] = []

        def on_delivery(err: KafkaError | None, _msg: Any) -> None:
            if err is not None:
                errors.append(str(err))

        producer = self._live_producer()
        count = 0
        for key, value in records:
            producer.produce(
                self.topic,
                key=_encode(key),
                value=_encode(value),
                partition=0,
                on_delivery=on_delivery,
            )
            count += 1
        if not count:
            return
        remaining = producer.flush(WRITE_TIMEOUT_S)
        if remaining or errors:
            raise StoreError(
                f"Error in the backend data store: {remaining} record(s) not acknowledged by "
                f"{self.bootstrap_servers}; {'; '.join(errors)}"
            )

    def replay(self, apply: Callable[[dict[str, Any], dict[str, Any] | None], None]) -> int:
        """Read the topic from the start, calling ``apply(key, value)`` per record.

        Returns the number of records read.

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
        if producer.flush(WRITE_TIMEOUT_S):
            raise StoreError(f"Could not write the replay marker to {self.topic!r}")
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap_servers,
                "group.id": f"copycat-schema-registry-{marker}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        count = 0
        try:
            consumer.assign([TopicPartition(self.topic, 0, -2)])  # -2: OFFSET_BEGINNING
            deadline = time.monotonic() + REPLAY_TIMEOUT_S
            last_record = time.monotonic()
            while time.monotonic() < deadline:
                msg = consumer.poll(POLL_INTERVAL_S)
                if msg is None:
                    if time.monotonic() - last_record > REPLAY_IDLE_S:
                        log.warning(
                            "replay marker not seen; assuming %s was read to the end", self.topic
                        )
                        return count
                    continue
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise StoreError(f"Error reading {self.topic!r}: {error}")
                last_record = time.monotonic()
                headers = dict(msg.headers() or [])
                if headers.get(MARKER_HEADER) == marker.encode():
                    return count
                raw_key = msg.key()
                if raw_key is None:
                    continue
                try:
                    key = json.loads(raw_key)
                    raw_value = msg.value()
                    value = json.loads(raw_value) if raw_value is not None else None
                except ValueError:
                    log.warning(
                        "skipping unreadable record at offset %s of %s", msg.offset(), self.topic
                    )
                    continue
                if isinstance(key, dict) and key.get("keytype") != "NOOP":
                    apply(key, value)
                    count += 1
            raise StoreError(f"Timed out reading {self.topic!r} from {self.bootstrap_servers}")
        finally:
            consumer.close()

    def close(self) -> None:
        """Flush what is pending and drop the producer (and its broker connections) now.

        Dropping it here instead of waiting for garbage collection matters to the dev
        broker, which waits for open connections before it stops.
        """
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.flush(WRITE_TIMEOUT_S)
