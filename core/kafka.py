"""The one place confluent-kafka is wrapped: client construction and error translation.

Every client the worker creates gets its configuration from :func:`client_config` (or, for
admin clients, :func:`admin_client`), which routes librdkafka's own log lines and errors
through one rate-limited logger (:data:`LIBRDKAFKA_LOG`): with no broker listening, each
client logged a failed connection every ~50 ms, about 20 lines a second per client.
:func:`kafka_cluster_id` is the start-up check that the cluster can be reached at all.
:class:`Producer` and :class:`Consumer` are confluent-kafka's, with its fatal errors raised as
the KafkaException they are meant to be.
"""

from __future__ import annotations

import functools
import logging
import re
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

import confluent_kafka
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from plugin_api.config import java_trim

from core.client_security import BROKER_SECURITY_KEYS, translate_security_keys
from plugin_api import ConnectException, RetriableException

log = logging.getLogger("copycat.kafka")

# librdkafka's lines, tagged with the client's name (rdkafka#consumer-3 and the like).
LIBRDKAFKA_LOGGER = "copycat.librdkafka"
# The rate limit across all of the worker's clients: a burst of this many lines is written at
# once (a real problem is visible with its context), then at most one line per
# LIBRDKAFKA_LOG_INTERVAL_S. Against a closed port one client alone logged ~20 lines a second.
LIBRDKAFKA_LOG_BURST = 10
LIBRDKAFKA_LOG_INTERVAL_S = 1.0
# A line repeated within this window is counted, not written: every client of the worker
# logs the same "Connect to ... failed" line for the same broker at each reconnect attempt.
LIBRDKAFKA_REPEAT_WINDOW_S = 10.0
# Distinct lines remembered for the repeat check; older ones are forgotten past this.
_REMEMBERED_LINES = 1_000
# How often admin clients are polled so their queued log lines and errors are written (and
# freed): nothing else polls an admin client, and librdkafka queues them until someone does.
ADMIN_LOG_POLL_INTERVAL_S = 1.0
# How long one metadata request of the start-up cluster check waits before the check looks at
# what the client's error callback was told: a refused login is reported there only, and
# librdkafka retries it until the whole timeout (default.api.timeout.ms) has passed.
CLUSTER_CHECK_INTERVAL_S = 1.0

# The isolation level of every consumer that reads topics an exactly-once source may write
# (sinks by default, the offsets and config topics, tests' readers): aborted and still open
# transactions stay invisible.
READ_COMMITTED = "read_committed"
# The Java producer's max.request.size default, librdkafka's message.max.bytes for every
# producer of records (librdkafka's own default, 1,000,000 bytes, refused records that Kafka
# Connect sends).
JAVA_MAX_REQUEST_SIZE = 1_048_576
# Kafka Connect's producer settings for source tasks and dead letter queues (Worker.java's
# baseProducerConfigs, checked in connect-runtime 4.1.1's class file): acks=all, one request
# in flight, idempotence off, unbounded delivery retries; linger.ms is the Java client's
# default since Kafka 4.0. No record is lost on broker failover and none is reordered by a
# retry (one request in flight); a retry after a lost response may write a batch twice,
# which at-least-once allows. With
# librdkafka, idempotence also costs CPU: while a partition has messages in flight its broker
# thread keeps waking at once to find it may not send (the idempotent in-flight limit of 5 is
# counted in messages there), 6-8x that thread's CPU per 1 KiB record in
# bench/producer_settings.py (docs/benchmarks.md, "Kafka Connect's producer settings").
# A connector that wants it sets producer.override.enable.idempotence=true; exactly-once sources
# turn it on themselves (core/task_specs.py).
SOURCE_PRODUCER_DEFAULTS: dict[str, Any] = {
    "acks": "all",
    "enable.idempotence": False,
    "max.in.flight.requests.per.connection": 1,
    "linger.ms": 5,
    "compression.type": "none",
    # Records up to 1 MiB are sent, as by Kafka Connect; a connector's
    # producer.override.max.request.size maps onto it (JAVA_CLIENT_KEYS).
    "message.max.bytes": JAVA_MAX_REQUEST_SIZE,
    # Java clients hash keys with murmur2; librdkafka's default is CRC32. Matching Java keeps
    # records with one key in the partition Kafka Connect would have chosen.
    "partitioner": "murmur2_random",
    # Kafka Connect sets delivery.timeout.ms=Integer.MAX_VALUE: a record is retried for as
    # long as its error is retriable (a broker down, a leader moving), never given up after
    # librdkafka's default 5 minutes. 0 is librdkafka's "no limit". A connector's
    # producer.override.delivery.timeout.ms still bounds it (librdkafka's alias of this key).
    # A stop does not wait for such records: it waits task.shutdown.graceful.timeout.ms,
    # then purges them, their offsets uncommitted.
    "message.timeout.ms": 0,
}
# Kafka Connect's consumer defaults for sink tasks: offsets are committed by the framework only
# after the task has flushed, and a new group starts from the beginning of its topics.
SINK_CONSUMER_DEFAULTS: dict[str, Any] = {
    "enable.auto.commit": False,
    # Sinks never see records of aborted transactions (nor those of open ones, until they
    # commit): exactly-once sources write their topics in transactions, and a sink that saw
    # an aborted record would deliver data that, for everyone else, never existed. Kafka
    # Connect's sinks read with the Java consumer's default, read_uncommitted (KIP-618 left
    # sinks alone); librdkafka's default is read_committed already, and we say so explicitly
    # so that no change of client or default can weaken it. A connector that wants aborted
    # records sets consumer.override.isolation.level=read_uncommitted.
    "isolation.level": READ_COMMITTED,
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
    # allow.auto.create.topics stays librdkafka's false, where Kafka Connect keeps the Java
    # consumer's true: a sink that starts before its topic exists would have an auto-creating
    # broker create it with the broker's partition count, racing a source connector's own
    # topic creation (KIP-158) in the same worker; the dev broker auto-creates 4 partitions,
    # and the quickstart's ordered pipeline came out of order. Set to true for a sink, it is
    # honoured (core.runtime.sink asks for the missing topic by name).
}


# Java client keys that librdkafka knows under another name (or unit), as Kafka Connect users
# write them in worker and connector configs (producer.override.max.request.size, ...): each
# is renamed, and its value converted, before the client is made. Keys with the same name in
# both clients (linger.ms, batch.size, fetch.min.bytes, ...) need nothing; the Java-only keys
# every client may get are dropped with a warning (JAVA_ONLY_CLIENT_KEYS), and a task's client
# drops any other key librdkafka refuses (max.block.ms, ...) with a warning at its creation.
# The Java key wins over a librdkafka key set alongside it.
JAVA_CLIENT_KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "max.request.size": ("message.max.bytes", int),
    # librdkafka knows delivery.timeout.ms as an alias, but only the last of two aliases set
    # counts; renamed, the connector's value replaces the default (SOURCE_PRODUCER_DEFAULTS).
    "delivery.timeout.ms": ("message.timeout.ms", int),
    # Java counts bytes, librdkafka KiB.
    "buffer.memory": ("queue.buffering.max.kbytes", lambda v: max(1, int(v) // 1024)),
    "fetch.max.wait.ms": ("fetch.wait.max.ms", int),
    # The JWT-bearer grant's assertion template (JSON with "header" and "payload").
    "sasl.oauthbearer.assertion.template.file": (
        "sasl.oauthbearer.assertion.jwt.template.file",
        str,
    ),
    # Java's -1 (the OS default) is librdkafka's 0.
    "receive.buffer.bytes": ("socket.receive.buffer.bytes", lambda v: max(0, int(v))),
    "send.buffer.bytes": ("socket.send.buffer.bytes", lambda v: max(0, int(v))),
}
# Java client keys (Kafka 4.1.1's CommonClientConfigs, SslConfigs and SaslConfigs, all of
# which a Connect worker file may set) that librdkafka has no equivalent for: each is dropped
# with a warning, once per key and process, as a Java client ignores a key it does not use.
# Handed to librdkafka, any of them fails the client with "No such configuration property",
# and for the worker's own clients (its admin client at start-up, its stores) that ended the
# worker. ssl.client.auth is the REST listener's (WorkerConfig.client_config leaves it out);
# it is here for a producer.*/consumer.*/admin.* copy of it. The Java TLS tuning keys
# (ssl.protocol, ...) and stores are core.client_security's.
JAVA_ONLY_CLIENT_KEYS = frozenset(
    {
        "security.providers",
        "socket.connection.setup.timeout.max.ms",
        "ssl.client.auth",
        "ssl.engine.factory.class",
        "sasl.client.callback.handler.class",
        "sasl.login.callback.handler.class",
        "sasl.login.class",
        "sasl.kerberos.ticket.renew.jitter",
        "sasl.kerberos.ticket.renew.window.factor",
        "sasl.login.connect.timeout.ms",
        "sasl.login.read.timeout.ms",
        "sasl.login.refresh.buffer.seconds",
        "sasl.login.refresh.min.period.seconds",
        "sasl.login.refresh.window.factor",
        "sasl.login.refresh.window.jitter",
        "sasl.login.retry.backoff.max.ms",
        "sasl.login.retry.backoff.ms",
        # The broker's side of OAUTHBEARER (validating tokens), which a client never does.
        "sasl.oauthbearer.clock.skew.seconds",
        "sasl.oauthbearer.expected.audience",
        "sasl.oauthbearer.expected.issuer",
        "sasl.oauthbearer.header.urlencode",
        "sasl.oauthbearer.jwks.endpoint.refresh.ms",
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
        "sasl.oauthbearer.jwks.endpoint.url",
        "sasl.oauthbearer.jwt.retriever.class",
        "sasl.oauthbearer.jwt.validator.class",
        "sasl.oauthbearer.scope.claim.name",
    }
    | BROKER_SECURITY_KEYS
)
_warned_java_only: set[str] = set()
# Java client values librdkafka spells otherwise, per key. auto.offset.reset=none (Kafka: fail
# the consumer for a partition without a committed offset, NoOffsetForPartitionException) is
# librdkafka's "error", which reports such a partition as a consumer error instead
# (_AUTO_OFFSET_RESET; the sink loop fails its task naming the partition).
JAVA_CLIENT_VALUES: dict[str, dict[str, str]] = {
    "auto.offset.reset": {"none": "error"},
}
# Java producer settings that choose a partition without the key, by what librdkafka does
# instead of hashing it: Kafka's RoundRobinPartitioner (each record to the next partition) and
# partitioner.ignore.keys=true (keyed records spread as keyless ones) both become librdkafka's
# "random" partitioner, which also leaves the key out (spreading records at random rather than
# in turn or in sticky batches). Dropped as keys librdkafka does not know, they left keyed
# records on their key's partition, where Kafka Connect spreads them.
ROUND_ROBIN_PARTITIONER = "org.apache.kafka.clients.producer.RoundRobinPartitioner"
KEYLESS_PARTITIONER = "random"
# The Java consumer's assignor classes librdkafka implements, by its names for them.
JAVA_ASSIGNORS = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}


def librdkafka_keys(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with the Java client keys of :data:`JAVA_CLIENT_KEYS` renamed to their
    librdkafka equivalents, Java values librdkafka spells otherwise replaced
    (:data:`JAVA_CLIENT_VALUES`), Java assignor class names in partition.assignment.strategy
    replaced by librdkafka's names for them, the Java security keys (``sasl.jaas.config``,
    truststores, keystores) rewritten by :func:`core.client_security.translate_security_keys`,
    and the keys of :data:`JAVA_ONLY_CLIENT_KEYS` dropped (with a warning the first time).
    Idempotent.

    Raises:
        ConnectException: a Java key's value is not a number (naming the key).
        ConfigException: a Java security key librdkafka has no equivalent for (naming it).
    """
    settings = dict(config)
    translate_security_keys(settings)
    dropped = sorted(k for k in JAVA_ONLY_CLIENT_KEYS.intersection(settings))
    for key in dropped:
        del settings[key]
    unwarned = [k for k in dropped if k not in _warned_java_only]
    if unwarned:
        _warned_java_only.update(unwarned)
        log.warning(
            "ignoring Java client configuration keys librdkafka has no equivalent for: %s",
            ", ".join(unwarned),
        )
    for java_key, (key, convert) in JAVA_CLIENT_KEYS.items():
        if java_key in settings:
            value = settings.pop(java_key)
            try:
                settings[key] = convert(value)
            except (TypeError, ValueError) as exc:
                raise ConnectException(
                    f"invalid value {value!r} for client configuration {java_key!r} "
                    f"(librdkafka's {key!r}): not a number"
                ) from exc
    for key, values in JAVA_CLIENT_VALUES.items():
        value = settings.get(key)
        if isinstance(value, str) and value.strip().lower() in values:
            settings[key] = values[value.strip().lower()]
    _keyless_partitioning(settings)
    strategy = settings.get("partition.assignment.strategy")
    if isinstance(strategy, str) and "." in strategy:
        settings["partition.assignment.strategy"] = ",".join(
            JAVA_ASSIGNORS.get(name.strip(), name.strip()) for name in strategy.split(",")
        )
    return settings


def _keyless_partitioning(settings: dict[str, Any]) -> None:
    """Java's ``partitioner.class=...RoundRobinPartitioner`` or ``partitioner.ignore.keys=true``
    in ``settings`` as librdkafka's partitioner that leaves the key out (see
    :data:`ROUND_ROBIN_PARTITIONER`); other partitioner classes are left to be dropped with a
    warning where the client is made."""
    if str(settings.get("partitioner.class", "")).strip() == ROUND_ROBIN_PARTITIONER:
        del settings["partitioner.class"]
        settings["partitioner"] = KEYLESS_PARTITIONER
    ignore = settings.pop("partitioner.ignore.keys", None)
    if str(ignore).strip().lower() == "true":
        settings["partitioner"] = KEYLESS_PARTITIONER


# librdkafka's bounds on a consumer's fetch.max.bytes, which the Java consumer does not have:
# it must be at least message.max.bytes, whose minimum is 1,000, and at most this.
LIBRDKAFKA_MIN_MESSAGE_MAX_BYTES = 1_000
LIBRDKAFKA_MAX_FETCH_MAX_BYTES = 2_147_483_135


# librdkafka-style worker keys -> kafka-python's (the client of the worker group's membership
# and of the OffsetDelete requests librdkafka's Python binding lacks), for the connection
# settings both understand.
_KAFKA_PYTHON_KEYS = {
    "bootstrap.servers": "bootstrap_servers",
    "security.protocol": "security_protocol",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "request.timeout.ms": "request_timeout_ms",
    "reconnect.backoff.ms": "reconnect_backoff_ms",
    "reconnect.backoff.max.ms": "reconnect_backoff_max_ms",
    "metadata.max.age.ms": "metadata_max_age_ms",
}


def kafka_python_settings(client_props: Mapping[str, Any]) -> dict[str, Any]:
    """The connection settings of the worker's librdkafka config that kafka-python takes
    (Java security keys, such as ``sasl.jaas.config``, first take librdkafka's names)."""
    client_props = librdkafka_keys(client_props)
    out: dict[str, Any] = {}
    for key, target in _KAFKA_PYTHON_KEYS.items():
        if client_props.get(key) is not None:
            value = client_props[key]
            if target.endswith("_ms"):
                value = int(value)
            out[target] = value
    if str(client_props.get("ssl.endpoint.identification.algorithm", "")).lower() == "none":
        out["ssl_check_hostname"] = False
    if "bootstrap_servers" in out and isinstance(out["bootstrap_servers"], str):
        out["bootstrap_servers"] = [s.strip() for s in out["bootstrap_servers"].split(",")]
    return out


def consumer_keys(config: Mapping[str, Any]) -> dict[str, Any]:
    """A consumer's ``config`` (after :func:`librdkafka_keys`) with fetch.max.bytes made
    acceptable to librdkafka, as the Java consumer accepts any value from 0.

    librdkafka refuses a consumer whose fetch.max.bytes is below message.max.bytes (its
    default 1,000,000, a producer's request limit that a consumer's small requests never
    reach): "``fetch.max.bytes`` must be >= ``message.max.bytes``", naming a key the user
    never set. So message.max.bytes comes down to fetch.max.bytes, and a fetch.max.bytes
    below librdkafka's smallest message.max.bytes (1,000) or above its own maximum is raised
    or lowered to it. Like Java's, the broker still returns a record larger than
    fetch.max.bytes (the first batch of a fetch, KIP-74); receive.message.max.bytes, which
    bounds a response, stays at least fetch.max.bytes + 512 (librdkafka raises it when the
    user has not set it) and at librdkafka's default of 100 MB otherwise.

    Raises:
        ConnectException: fetch.max.bytes is not a non-negative integer (naming it).
    """
    settings = dict(config)
    value = settings.get("fetch.max.bytes")
    if value is None:
        return settings
    try:
        fetch = int(value)
    except (TypeError, ValueError):
        fetch = -1
    if fetch < 0:
        raise ConnectException(
            f"Invalid value {value} for configuration fetch.max.bytes: "
            "Value must be at least 0 (an integer)"
        )
    fetch = min(max(fetch, LIBRDKAFKA_MIN_MESSAGE_MAX_BYTES), LIBRDKAFKA_MAX_FETCH_MAX_BYTES)
    settings["fetch.max.bytes"] = fetch
    message_max = int(settings.get("message.max.bytes", 1_000_000))
    if message_max > fetch:
        settings["message.max.bytes"] = fetch
    return settings


class KafkaClientError(ConnectException):
    """A Kafka client error, with librdkafka's code and whether it is worth retrying."""

    def __init__(self, message: str, code: int | None = None, retriable: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.retriable = retriable


class RetriableKafkaError(KafkaClientError, RetriableException):
    pass


class KafkaAuthenticationError(KafkaClientError):
    """The brokers refused the client's credentials (SASL) or the TLS handshake failed (a
    certificate not trusted, a wrong CA): Java's SaslAuthenticationException and
    SslAuthenticationException, which Kafka's clients never retry. Retrying cannot help until
    the configuration changes, so the task (or the worker, for its own clients) fails."""


def is_authentication_failure(error: KafkaError) -> bool:
    """Whether librdkafka's ``error`` is an authentication failure (librdkafka 2.x, checked
    against a SASL_PLAINTEXT listener): a wrong SASL password reaches ``error_cb`` as
    ``_AUTHENTICATION``, a failed TLS handshake (certificate verify failed) as ``_SSL``, or as
    ``_TRANSPORT`` saying "SSL handshake failed". A handshake cut short by the broker going
    away ("SSL handshake failed: Disconnected") is an outage, retried like any other."""
    code = error.code()
    if code == KafkaError._AUTHENTICATION:
        return True
    text = error.str()
    if "Disconnected" in text or "Connection reset" in text:
        return False
    return code == KafkaError._SSL or (
        code == KafkaError._TRANSPORT and "SSL handshake failed" in text
    )


def wrap_kafka_error(
    error: KafkaError | KafkaException, context: str, detail: str = ""
) -> KafkaClientError:
    """Turn a confluent-kafka error into ours, once, keeping ``code`` and ``retriable``;
    ``detail`` follows librdkafka's text."""
    kafka_error = error.args[0] if isinstance(error, KafkaException) and error.args else error
    if isinstance(kafka_error, KafkaError):
        code, retriable, text = kafka_error.code(), kafka_error.retriable(), kafka_error.str()
    else:
        code, retriable, text = None, False, str(kafka_error)
    cls: type[KafkaClientError] = RetriableKafkaError if retriable else KafkaClientError
    if isinstance(kafka_error, KafkaError) and is_authentication_failure(kafka_error):
        cls, retriable = KafkaAuthenticationError, False
    return cls(f"{context}: {text}{detail}", code=code, retriable=retriable)


class RateLimitedLog:
    """A token bucket in front of a logger, shaped as confluent-kafka's ``logger`` setting.

    confluent-kafka calls :meth:`log` (and :meth:`error_cb`, the ``error_cb`` setting) on
    whichever thread polls the client: task threads for consumers and producers, the admin
    poller for admin clients. A line already written within ``repeat_window_s`` (whichever
    client wrote it) and lines over the rate are counted, and the count is written with the
    next line that gets through.
    """

    def __init__(
        self,
        logger: logging.Logger,
        burst: int = LIBRDKAFKA_LOG_BURST,
        interval_s: float = LIBRDKAFKA_LOG_INTERVAL_S,
        repeat_window_s: float = LIBRDKAFKA_REPEAT_WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.burst = burst
        self.interval_s = interval_s
        self.repeat_window_s = repeat_window_s
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()
        self._written: dict[str, float] = {}  # line -> when it was last written
        self._suppressed = 0
        self._suppressed_since = 0.0
        self._lock = threading.Lock()

    def log(self, level: int, msg: str, *args: Any) -> None:
        """confluent-kafka's logger protocol: ``log(level, "%s [%s] %s", fac, name, line)``.

        The repeat check looks at the last argument, librdkafka's line without the client's
        name or thread, so the same event reported by several clients (or by a log line and an
        error callback) counts as one. A line the logger's level hides is dropped first: it
        would never be shown, so it must not use the budget of lines that would be (with
        ``debug`` set on a client, librdkafka's chatter left no room for its warnings).
        """
        if not self.logger.isEnabledFor(level):
            return
        line = str(args[-1]) if args else msg
        if line.startswith("[thrd:"):  # the same event reaches error_cb without this prefix
            line = line.partition("]: ")[2] or line
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) / self.interval_s)
            self._last = now
            written = self._written.get(line)
            if self._tokens < 1 or (written is not None and now - written < self.repeat_window_s):
                if not self._suppressed:
                    self._suppressed_since = now
                self._suppressed += 1
                return
            self._tokens -= 1
            if len(self._written) >= _REMEMBERED_LINES:
                self._written = {
                    k: t for k, t in self._written.items() if now - t < self.repeat_window_s
                }
            self._written[line] = now
            suppressed, self._suppressed = self._suppressed, 0
        if suppressed:
            self.logger.info(
                "%d librdkafka log lines suppressed in the last %.0f s (repeats within %.0f s, "
                "or more than one a second)",
                suppressed,
                now - self._suppressed_since,
                self.repeat_window_s,
            )
        self.logger.log(level, msg, *args)

    def error_cb(self, error: KafkaError) -> None:
        """confluent-kafka's ``error_cb``: client-level errors (all brokers down, ...)."""
        level = logging.ERROR if error.fatal() else logging.WARNING
        self.log(level, "client error %s: %s", error.name(), error.str())


LIBRDKAFKA_LOG = RateLimitedLog(logging.getLogger(LIBRDKAFKA_LOGGER))
"""The one limiter every client of the worker process shares, so the total rate is bounded."""


def client_logging() -> dict[str, Any]:
    """The ``logger`` and ``error_cb`` settings that route a client through LIBRDKAFKA_LOG."""
    return {"logger": LIBRDKAFKA_LOG, "error_cb": LIBRDKAFKA_LOG.error_cb}


def client_config(base: Mapping[str, Any], *overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Merge client settings: log routing, the worker's, then defaults, then overrides; Java
    client keys then take their librdkafka names (:func:`librdkafka_keys`), so every client
    the worker makes (its stores' too, not only tasks') accepts a Kafka Connect config."""
    merged: dict[str, Any] = client_logging()
    merged.update(base)
    for layer in overrides:
        merged.update(layer)
    return librdkafka_keys(merged)


P = ParamSpec("P")
R = TypeVar("R")


def fatal_error_raised(raised: object) -> KafkaException | None:
    """The KafkaException a confluent-kafka call meant to raise for a fatal client error when
    it raised something else instead, or None.

    confluent-kafka (2.16, Python 3.11) reports a fatal error (a transactional producer fenced
    by a newer instance, an idempotent producer's unrecoverable sequence error) that reaches
    its ``error_cb`` while a call serves callbacks by setting the KafkaException and going on
    to run the remaining callbacks (delivery reports, log lines) with it still set. The call
    then raises a SystemError ("... returned a result with an exception set", the
    KafkaException as its cause), or the KafkaError object itself, which is no exception
    class: ``except Exception`` and even ``except BaseException`` let it through. It ended an
    exactly-once task's thread without the task being marked failed.
    """
    if isinstance(raised, KafkaError):
        return KafkaException(raised)
    if isinstance(raised, SystemError):
        for linked in (raised.__cause__, raised.__context__):
            if isinstance(linked, KafkaException):
                return linked
    return None


def raising_fatal_errors(method: Callable[P, R]) -> Callable[P, R]:
    """``method`` (a confluent-kafka call that serves callbacks), raising its fatal errors as
    KafkaException (see :func:`fatal_error_raised`)."""

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except:  # noqa: E722 - what confluent-kafka raises need not be an exception class
            fatal = fatal_error_raised(sys.exc_info()[1])
            if fatal is None:
                raise
            raise fatal from None

    return call


# confluent-kafka's Producer.close() reports a flush or transaction abort that failed as a
# RuntimeWarning raised from C, which Python prints raw on stderr (once per call site) in the
# middle of the worker's log. Each goes through this module's logger instead.
_CLOSE_WARNING = re.compile(r"Producer \w+ failed during close")


def route_client_warnings() -> None:
    """Log confluent-kafka's close warnings through ``copycat.kafka``, every time they happen.

    Process-wide (``warnings.showwarning``), so called once by the CLI that sets up logging;
    other warnings are shown as before.
    """
    shown = warnings.showwarning

    def showwarning(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        if issubclass(category, RuntimeWarning) and _CLOSE_WARNING.match(str(message)):
            log.warning("%s", message)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = showwarning
    warnings.filterwarnings("always", message=_CLOSE_WARNING.pattern, category=RuntimeWarning)


class _AuthenticationWatch:
    """The first authentication failure a client's ``error_cb`` was told of.

    librdkafka reports a refused SASL login or a failed TLS handshake only to ``error_cb``
    (never as a consumed message or a failed call) and then retries the connection forever:
    a sink task with a wrong password stayed RUNNING for good, a source task failed only when
    its records timed out (5 minutes), neither saying why. Java's clients raise the
    authentication exception from the next poll() or send callback instead, and Kafka Connect
    fails the task. A holder of its own, not the client, is what the callback closes over:
    a callback referring to its client would make a cycle that keeps the client (and its
    connections) alive until a full garbage collection.
    """

    __slots__ = ("error", "role")

    def __init__(self, role: str) -> None:
        self.role = role
        self.error: KafkaError | None = None

    def error_cb(self, then: Callable[[KafkaError], None] | None) -> Callable[[KafkaError], None]:
        def error_cb(error: KafkaError) -> None:
            if self.error is None and is_authentication_failure(error):
                self.error = error
            if then is not None:
                then(error)

        return error_cb

    def raise_if_failed(self) -> None:
        """Raises: KafkaAuthenticationError naming librdkafka's report (never the secret)."""
        error = self.error
        if error is not None:
            raise KafkaAuthenticationError(
                f"{self.role}: authentication with the Kafka cluster failed: {error.str()}. "
                "Check the security properties (sasl.*, ssl.*) of this client",
                code=error.code(),
            )


# How long one slice of Producer.flush() waits before the client's authentication failures
# are looked at; a flush of acknowledged records returns sooner, at once when nothing is queued.
FLUSH_AUTHENTICATION_CHECK_S = 0.5


def raising_authentication_failures(method: Callable[P, R]) -> Callable[P, R]:
    """``method`` (a client call that serves ``error_cb``), raising the client's authentication
    failure (see :class:`_AuthenticationWatch`) as KafkaAuthenticationError after it returns."""

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        result = method(*args, **kwargs)
        watch: _AuthenticationWatch | None = getattr(args[0], "_authentication", None)
        if watch is not None and watch.error is not None:
            watch.raise_if_failed()
        return result

    return call


def _watched(config: Mapping[str, Any], role: str) -> tuple[dict[str, Any], _AuthenticationWatch]:
    """``config`` with an ``error_cb`` that tells a new watch (then ``config``'s own callback)."""
    client_id = config.get("client.id")
    watch = _AuthenticationWatch(f"{role} {client_id}" if client_id else role)
    settings = dict(config)
    settings["error_cb"] = watch.error_cb(settings.get("error_cb"))
    return settings, watch


class Producer(confluent_kafka.Producer):
    """confluent-kafka's producer; the calls that serve callbacks raise fatal errors as
    KafkaException and an authentication failure as KafkaAuthenticationError. ``produce``
    serves none and is confluent-kafka's own (the hot path)."""

    def __init__(self, config: Mapping[str, Any], **kwargs: Any) -> None:
        settings, self._authentication = _watched(config, "producer")
        super().__init__(settings, **kwargs)

    poll = raising_authentication_failures(raising_fatal_errors(confluent_kafka.Producer.poll))
    _flush = raising_authentication_failures(raising_fatal_errors(confluent_kafka.Producer.flush))

    def flush(self, timeout: float = -1) -> int:
        """confluent-kafka's flush(), waiting in slices of FLUSH_AUTHENTICATION_CHECK_S so
        that a refused login ends the wait (records the brokers never took would otherwise
        hold it for the whole timeout, e.g. a dead letter queue's flush at each commit)."""
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        while True:
            left = FLUSH_AUTHENTICATION_CHECK_S
            if deadline is not None:
                left = max(0.0, min(left, deadline - time.monotonic()))
            remaining = self._flush(left)
            if not remaining or (deadline is not None and time.monotonic() >= deadline):
                return remaining

    close = raising_fatal_errors(confluent_kafka.Producer.close)
    init_transactions = raising_fatal_errors(confluent_kafka.Producer.init_transactions)
    begin_transaction = raising_fatal_errors(confluent_kafka.Producer.begin_transaction)
    send_offsets_to_transaction = raising_fatal_errors(
        confluent_kafka.Producer.send_offsets_to_transaction
    )
    commit_transaction = raising_fatal_errors(confluent_kafka.Producer.commit_transaction)
    abort_transaction = raising_fatal_errors(confluent_kafka.Producer.abort_transaction)


# Kafka's InvalidGroupIdException message for a group id that is empty or only whitespace.
BLANK_GROUP_ID = "The configured group.id should not be an empty string or whitespace."


class Consumer(confluent_kafka.Consumer):
    """confluent-kafka's consumer; the calls that serve the client's error callback raise
    fatal errors (a static member fenced by another with its ``group.instance.id``) as
    KafkaException, and an authentication failure as KafkaAuthenticationError."""

    def __init__(self, config: Mapping[str, Any], **kwargs: Any) -> None:
        group = config.get("group.id")
        if isinstance(group, str) and not java_trim(group):
            # confluent-kafka asserts on a blank group id: the process that makes the
            # consumer aborts. Kafka's consumer refuses it with InvalidGroupIdException.
            raise KafkaException(KafkaError(KafkaError.INVALID_GROUP_ID, BLANK_GROUP_ID))
        settings, self._authentication = _watched(config, "consumer")
        super().__init__(settings, **kwargs)

    poll = raising_authentication_failures(raising_fatal_errors(confluent_kafka.Consumer.poll))
    consume = raising_authentication_failures(
        raising_fatal_errors(confluent_kafka.Consumer.consume)
    )
    close = raising_fatal_errors(confluent_kafka.Consumer.close)


class _AdminPoller:
    """Polls live admin clients every ADMIN_LOG_POLL_INTERVAL_S from one daemon thread.

    A client is held weakly: dropping the last reference still destroys it (and closes its
    connections) as before.
    """

    def __init__(self) -> None:
        self._clients: weakref.WeakSet[AdminClient] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, client: AdminClient) -> None:
        with self._lock:
            self._clients.add(client)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="kafka-admin-log-poller", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(ADMIN_LOG_POLL_INTERVAL_S)
            self._poll_all()

    def _poll_all(self) -> None:
        # A function of its own, so that no strong reference outlives it while _run sleeps.
        with self._lock:
            clients = list(self._clients)
        for client in clients:
            client.poll(0)


_ADMIN_POLLER = _AdminPoller()


class _WatchedAdminClient(AdminClient):
    """confluent-kafka's admin client, with the first authentication failure its error
    callback was told of (see :class:`_AuthenticationWatch`; served by the admin poller)."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        settings, self._authentication = _watched(config, "admin client")
        super().__init__(settings)


def admin_client(config: Mapping[str, Any]) -> AdminClient:
    """An AdminClient whose librdkafka log lines and errors go through LIBRDKAFKA_LOG."""
    client = _WatchedAdminClient(client_config(config))
    _ADMIN_POLLER.add(client)
    return client


def raise_if_refused_login(client: object) -> None:
    """Raises: KafkaAuthenticationError if the cluster refused the login of ``client`` (an
    admin client of :func:`admin_client`): its calls then time out without saying why."""
    watch: _AuthenticationWatch | None = getattr(client, "_authentication", None)
    if watch is not None:
        watch.raise_if_failed()


def kafka_cluster_id(
    config: Mapping[str, Any],
    timeout_ms: int,
    timeout_key: str,
    should_stop: Callable[[], bool] = lambda: False,
) -> str | None:
    """The cluster id, read from the brokers within ``timeout_ms``, as Kafka Connect does at
    start-up (it cannot run without the cluster).

    Called once by the herder's thread while the worker starts. ``should_stop`` is asked
    between attempts (at most :data:`CLUSTER_CHECK_INTERVAL_S` apart): once it is true the
    wait ends and None is returned, so a SIGTERM during start-up stops the worker at once
    rather than after ``timeout_ms`` (Kafka Connect exits on a signal there too).

    Raises:
        KafkaAuthenticationError: the cluster refused the worker's credentials (or the TLS
            handshake failed), as soon as the client is told so: waiting cannot help.
        ConnectException: one line naming ``bootstrap.servers``, the timeout and its key.
    """
    servers = config.get("bootstrap.servers")
    log.info(
        "connecting to the Kafka cluster at %s (waiting up to %s=%d ms)",
        servers,
        timeout_key,
        timeout_ms,
    )
    settings, watch = _watched(client_config(config), "the worker's admin client")
    client = AdminClient(settings)
    _ADMIN_POLLER.add(client)
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        try:
            metadata = client.list_topics(
                timeout=max(0.001, min(CLUSTER_CHECK_INTERVAL_S, deadline - time.monotonic()))
            )
            return metadata.cluster_id
        except KafkaException as exc:
            client.poll(0)  # serves error_cb: was it the credentials?
            if watch.error is not None:
                raise KafkaAuthenticationError(
                    f"Failed to connect to the Kafka cluster at bootstrap.servers={servers}: "
                    f"authentication failed: {watch.error.str()}. Check the worker's security "
                    "properties (sasl.*, ssl.*)",
                    code=watch.error.code(),
                ) from exc
            if should_stop():
                return None
            if time.monotonic() < deadline:
                continue
            error = exc.args[0] if exc.args else exc
            reason = error.str() if isinstance(error, KafkaError) else str(error)
            raise ConnectException(
                f"Failed to connect to and describe the Kafka cluster at "
                f"bootstrap.servers={servers} within {timeout_key}={timeout_ms} ms ({reason}). "
                "Check the worker's bootstrap.servers and security properties."
            ) from exc
