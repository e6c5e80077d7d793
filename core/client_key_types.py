"""The types of the Java clients' numeric and boolean keys, for ``*.override.*`` values.

Kafka Connect parses each client override whose key the client knows with that key's type
before it asks the override policy (``AbstractHerder.validateClientOverrides``): a value that
is no number of the key's type, or no boolean, fails validation, create and config update with
a 500 carrying the parse error, and never reaches the policy. Copycat's clients are
librdkafka's, so the keys and types are the Java clients' of Kafka 4.1.1 (``ProducerConfig``,
``ConsumerConfig``, ``AdminClientConfig``), listed here. STRING, LIST and PASSWORD keys take
any text; CLASS keys name Java classes a Python worker cannot load, so they are not checked
(a deliberate deviation: Kafka refuses a class it cannot find the same way).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from plugin_api.config import java_trim
from plugin_api.errors import ConfigException

from core.client_overrides import client_overrides

__all__ = ["check_client_override_types", "parse_client_value"]

PRODUCER, CONSUMER, ADMIN = "producer", "consumer", "admin"
BOOLEAN, DOUBLE, INT, LONG, SHORT = "BOOLEAN", "DOUBLE", "INT", "LONG", "SHORT"

_BOUNDS = {SHORT: 2**15, INT: 2**31, LONG: 2**63}
# What Java's Integer/Long/Short.parseInt take: an optional sign and digits. Java also reads
# other scripts' decimal digits (Arabic-Indic too); librdkafka, which gets the value as
# written, does not, so only ASCII digits pass (docs/rest.md).
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
# What Java's Double.parseDouble takes: decimal or hexadecimal floating point with an optional
# f/F/d/D suffix, NaN and Infinity (signed).
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|"
    r"(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?)"
)

KEY_TYPES: dict[str, dict[str, frozenset[str]]] = {
    PRODUCER: {
        BOOLEAN: frozenset(
            {
                "enable.idempotence",
                "enable.metrics.push",
                "partitioner.adaptive.partitioning.enable",
                "partitioner.ignore.keys",
                "sasl.oauthbearer.assertion.claim.jti.include",
                "sasl.oauthbearer.header.urlencode",
                "transaction.two.phase.commit.enable",
            }
        ),
        DOUBLE: frozenset(
            {
                "sasl.kerberos.ticket.renew.jitter",
                "sasl.kerberos.ticket.renew.window.factor",
                "sasl.login.refresh.window.factor",
                "sasl.login.refresh.window.jitter",
            }
        ),
        INT: frozenset(
            {
                "batch.size",
                "compression.gzip.level",
                "compression.lz4.level",
                "compression.zstd.level",
                "delivery.timeout.ms",
                "max.in.flight.requests.per.connection",
                "max.request.size",
                "metrics.num.samples",
                "receive.buffer.bytes",
                "request.timeout.ms",
                "retries",
                "sasl.login.connect.timeout.ms",
                "sasl.login.read.timeout.ms",
                "sasl.oauthbearer.assertion.claim.exp.seconds",
                "sasl.oauthbearer.assertion.claim.nbf.seconds",
                "sasl.oauthbearer.clock.skew.seconds",
                "send.buffer.bytes",
                "transaction.timeout.ms",
            }
        ),
        LONG: frozenset(
            {
                "buffer.memory",
                "connections.max.idle.ms",
                "linger.ms",
                "max.block.ms",
                "metadata.max.age.ms",
                "metadata.max.idle.ms",
                "metadata.recovery.rebootstrap.trigger.ms",
                "metrics.sample.window.ms",
                "partitioner.availability.timeout.ms",
                "reconnect.backoff.max.ms",
                "reconnect.backoff.ms",
                "retry.backoff.max.ms",
                "retry.backoff.ms",
                "sasl.kerberos.min.time.before.relogin",
                "sasl.login.retry.backoff.max.ms",
                "sasl.login.retry.backoff.ms",
                "sasl.oauthbearer.jwks.endpoint.refresh.ms",
                "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
                "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
                "socket.connection.setup.timeout.max.ms",
                "socket.connection.setup.timeout.ms",
            }
        ),
        SHORT: frozenset(
            {
                "sasl.login.refresh.buffer.seconds",
                "sasl.login.refresh.min.period.seconds",
            }
        ),
    },
    CONSUMER: {
        BOOLEAN: frozenset(
            {
                "allow.auto.create.topics",
                "check.crcs",
                "enable.auto.commit",
                "enable.metrics.push",
                "exclude.internal.topics",
                "internal.leave.group.on.close",
                "internal.throw.on.fetch.stable.offset.unsupported",
                "sasl.oauthbearer.assertion.claim.jti.include",
                "sasl.oauthbearer.header.urlencode",
            }
        ),
        DOUBLE: frozenset(
            {
                "sasl.kerberos.ticket.renew.jitter",
                "sasl.kerberos.ticket.renew.window.factor",
                "sasl.login.refresh.window.factor",
                "sasl.login.refresh.window.jitter",
            }
        ),
        INT: frozenset(
            {
                "auto.commit.interval.ms",
                "default.api.timeout.ms",
                "fetch.max.bytes",
                "fetch.max.wait.ms",
                "fetch.min.bytes",
                "heartbeat.interval.ms",
                "max.partition.fetch.bytes",
                "max.poll.interval.ms",
                "max.poll.records",
                "metrics.num.samples",
                "receive.buffer.bytes",
                "request.timeout.ms",
                "sasl.login.connect.timeout.ms",
                "sasl.login.read.timeout.ms",
                "sasl.oauthbearer.assertion.claim.exp.seconds",
                "sasl.oauthbearer.assertion.claim.nbf.seconds",
                "sasl.oauthbearer.clock.skew.seconds",
                "send.buffer.bytes",
                "session.timeout.ms",
            }
        ),
        LONG: frozenset(
            {
                "connections.max.idle.ms",
                "metadata.max.age.ms",
                "metadata.recovery.rebootstrap.trigger.ms",
                "metrics.sample.window.ms",
                "reconnect.backoff.max.ms",
                "reconnect.backoff.ms",
                "retry.backoff.max.ms",
                "retry.backoff.ms",
                "sasl.kerberos.min.time.before.relogin",
                "sasl.login.retry.backoff.max.ms",
                "sasl.login.retry.backoff.ms",
                "sasl.oauthbearer.jwks.endpoint.refresh.ms",
                "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
                "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
                "socket.connection.setup.timeout.max.ms",
                "socket.connection.setup.timeout.ms",
            }
        ),
        SHORT: frozenset(
            {
                "sasl.login.refresh.buffer.seconds",
                "sasl.login.refresh.min.period.seconds",
            }
        ),
    },
    ADMIN: {
        BOOLEAN: frozenset(
            {
                "enable.metrics.push",
                "sasl.oauthbearer.assertion.claim.jti.include",
                "sasl.oauthbearer.header.urlencode",
            }
        ),
        DOUBLE: frozenset(
            {
                "sasl.kerberos.ticket.renew.jitter",
                "sasl.kerberos.ticket.renew.window.factor",
                "sasl.login.refresh.window.factor",
                "sasl.login.refresh.window.jitter",
            }
        ),
        INT: frozenset(
            {
                "default.api.timeout.ms",
                "metrics.num.samples",
                "receive.buffer.bytes",
                "request.timeout.ms",
                "retries",
                "sasl.login.connect.timeout.ms",
                "sasl.login.read.timeout.ms",
                "sasl.oauthbearer.assertion.claim.exp.seconds",
                "sasl.oauthbearer.assertion.claim.nbf.seconds",
                "sasl.oauthbearer.clock.skew.seconds",
                "send.buffer.bytes",
            }
        ),
        LONG: frozenset(
            {
                "connections.max.idle.ms",
                "metadata.max.age.ms",
                "metadata.recovery.rebootstrap.trigger.ms",
                "metrics.sample.window.ms",
                "reconnect.backoff.max.ms",
                "reconnect.backoff.ms",
                "retry.backoff.max.ms",
                "retry.backoff.ms",
                "sasl.kerberos.min.time.before.relogin",
                "sasl.login.retry.backoff.max.ms",
                "sasl.login.retry.backoff.ms",
                "sasl.oauthbearer.jwks.endpoint.refresh.ms",
                "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
                "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
                "socket.connection.setup.timeout.max.ms",
                "socket.connection.setup.timeout.ms",
            }
        ),
        SHORT: frozenset(
            {
                "sasl.login.refresh.buffer.seconds",
                "sasl.login.refresh.min.period.seconds",
            }
        ),
    },
}


def parse_client_value(client: str, key: str, value: str) -> None:
    """Check ``value`` of ``client``'s ``key`` as Kafka's ``ConfigDef.parseType`` does.

    Raises:
        ConfigException: Kafka's message, ``Invalid value <value> for configuration <key>:
            Not a number of type INT`` (or ``Expected value to be either true or false``).
    """
    types = KEY_TYPES.get(client, {})
    kind = next((t for t, keys in types.items() if key in keys), None)
    if kind is None:
        return
    text = java_trim(value)
    if kind == BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise ConfigException(key, value, "Expected value to be either true or false")
    elif kind == DOUBLE:
        if _JAVA_DOUBLE.fullmatch(text) is None:
            raise ConfigException(key, value, "Not a number of type DOUBLE")
    elif _JAVA_INTEGER.fullmatch(text) is None or not (-_BOUNDS[kind] <= int(text) < _BOUNDS[kind]):
        raise ConfigException(key, value, f"Not a number of type {kind}")


def check_client_override_types(clients: list[str], props: Mapping[str, str]) -> None:
    """Parse the ``<client>.override.*`` values of ``clients`` as Kafka does before it asks
    the override policy, in Kafka's order: producer, admin, consumer, each client's keys in
    its HashMap's order (:func:`core.client_overrides.java_hash_order`).

    Raises:
        ConfigException: the first value that is not of its key's type (Kafka's message).
    """
    for client in (c for c in (PRODUCER, ADMIN, CONSUMER) if c in clients):
        for name, value in client_overrides(client, props).items():
            if isinstance(value, str):
                parse_client_value(client, name, value)
