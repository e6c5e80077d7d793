"""The one place confluent-kafka is wrapped: client construction and error translation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from plugin_api import ConnectException, RetriableException

# Kafka Connect's producer defaults for source tasks (Worker.java): no data loss on broker
# failover, and ordering kept per partition even when sends are retried.
SOURCE_PRODUCER_DEFAULTS: dict[str, Any] = {
    "acks": "all",
    "enable.idempotence": True,
    "max.in.flight.requests.per.connection": 5,
    "linger.ms": 5,
    "compression.type": "none",
    # Java clients hash keys with murmur2; librdkafka's default is CRC32. Matching Java keeps
    # records with one key in the partition Kafka Connect would have chosen.
    "partitioner": "murmur2_random",
}
# Kafka Connect's consumer defaults for sink tasks: offsets are committed by the framework only
# after the task has flushed, and a new group starts from the beginning of its topics.
SINK_CONSUMER_DEFAULTS: dict[str, Any] = {
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
    "enable.partition.eof": False,
    # librdkafka stops fetching while its local queue is full and looks again only after
    # fetch.queue.backoff.ms (default 1 s). A sink slower than the broker drains the queue
    # well before that and then idles: measured on the 1 KiB sink benchmark, the default
    # held Copycat to a third of its speed. The Java consumer fetches again as soon as its
    # buffer drains; 10 ms comes close to that.
    "fetch.queue.backoff.ms": 10,
    # A topics.regex subscription sees topics created after the task started only when the
    # consumer refreshes its metadata: librdkafka's default (and Java's metadata.max.age.ms)
    # is 5 minutes, so a sink created before its topics seemed stuck. Literal topics are
    # looked up again at once and only their metadata is fetched, so this costs them little.
    "topic.metadata.refresh.interval.ms": 10_000,
}


class KafkaClientError(ConnectException):
    """A Kafka client error, with librdkafka's code and whether it is worth retrying."""

    def __init__(self, message: str, code: int | None = None, retriable: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.retriable = retriable


class RetriableKafkaError(KafkaClientError, RetriableException):
    pass


def wrap_kafka_error(error: KafkaError | KafkaException, context: str) -> KafkaClientError:
    """Turn a confluent-kafka error into ours, once, keeping ``code`` and ``retriable``."""
    kafka_error = error.args[0] if isinstance(error, KafkaException) and error.args else error
    if isinstance(kafka_error, KafkaError):
        code, retriable, text = kafka_error.code(), kafka_error.retriable(), kafka_error.str()
    else:
        code, retriable, text = None, False, str(kafka_error)
    cls = RetriableKafkaError if retriable else KafkaClientError
    return cls(f"{context}: {text}", code=code, retriable=retriable)


def client_config(base: Mapping[str, Any], *overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Merge client settings: the worker's, then defaults, then per-client overrides."""
    merged: dict[str, Any] = dict(base)
    for layer in overrides:
        merged.update(layer)
    return merged
