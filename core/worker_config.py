"""The worker's configuration: Kafka Connect's worker keys, names and defaults.

One table, :data:`WORKER_CONFIG_DEF`, holds the keys of Kafka's ``WorkerConfig``,
``StandaloneConfig``, ``DistributedConfig`` and ``RestServerConfig``, so an existing
``connect-standalone.properties`` or ``connect-distributed.properties`` is understood
as is. Differences from Kafka:

* ``bootstrap.servers`` has no default: leaving it out starts the embedded dev broker.
* A key that is neither defined, nor under a pass-through prefix (``producer.``,
  ``key.converter.``, ``ssl.``, ...), nor a known Kafka client key is an error naming
  the file and suggesting the closest key. Kafka only logs such keys, so a typo such as
  ``ofset.flush.interval.ms`` silently keeps the default there.
* Every problem in the file is reported in one error, not only the first.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from plugin_api.config import (
    NO_DEFAULT,
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    Importance,
    Range,
    ValidString,
    parse_type,
)
from plugin_api.errors import ConfigException

from core import request_signing
from core.client_security import BROKER_SECURITY_KEYS
from core.config_providers import PLACEHOLDER
from core.http_headers import (
    ALLOW_METHODS_KEY,
    ALLOW_ORIGIN_KEY,
    RESPONSE_HEADERS_KEY,
    check_allowed_origins,
    check_response_headers,
)

__all__ = [
    "ALLOWED_PREFIXES",
    "CLIENT_KEYS",
    "CLIENT_PREFIXES",
    "CONVERTER_KEYS",
    "KAFKA_SECURITY_KEYS",
    "LIBRDKAFKA_SECURITY_KEYS",
    "WORKER_CONFIG_DEF",
    "WorkerConfig",
]

log = logging.getLogger("copycat.worker_config")

_T = ConfigType
_HIGH, _MEDIUM, _LOW = Importance.HIGH, Importance.MEDIUM, Importance.LOW

SIMPLE_HEADER_CONVERTER = "org.apache.kafka.connect.storage.SimpleHeaderConverter"
CONVERTER_KEYS = ("key.converter", "value.converter", "header.converter")

# Keys Kafka passes to every client the worker creates (producers, consumers, admin).
# Only keys the file sets are passed on (see WorkerConfig.client_config); the client
# wrapper maps them onto librdkafka's names.
CLIENT_KEYS = frozenset(
    {
        "bootstrap.servers",
        "client.dns.lookup",
        "client.id",
        "client.rack",
        "connections.max.idle.ms",
        "metadata.max.age.ms",
        "metadata.recovery.strategy",
        "metadata.recovery.rebootstrap.trigger.ms",
        "receive.buffer.bytes",
        "send.buffer.bytes",
        "reconnect.backoff.ms",
        "reconnect.backoff.max.ms",
        "retry.backoff.ms",
        "retry.backoff.max.ms",
        "request.timeout.ms",
        "socket.connection.setup.timeout.ms",
        "socket.connection.setup.timeout.max.ms",
        "security.protocol",
        "security.providers",
    }
)
CLIENT_PREFIXES = ("ssl.", "sasl.")
# The keys under CLIENT_PREFIXES a worker file may set at its top level. Kafka 4.1.1's: the
# ssl.*/sasl.* names of its DistributedConfig (SslConfigs, SaslConfigs, and RestServerConfig's
# ssl.client.auth), which core.kafka translates, or drops with a warning where librdkafka has
# no equivalent. librdkafka 2.16's own (but the Windows-only ssl.ca.certificate.stores),
# passed as they are. Any other is an unknown key, with a suggestion: handed to librdkafka, a
# typo such as ssl.truststore.lcation failed the worker's first client with "No such
# configuration property" (Kafka only logs it).
KAFKA_SECURITY_KEYS = frozenset(
    {
        "ssl.cipher.suites",
        "ssl.client.auth",
        "ssl.enabled.protocols",
        "ssl.endpoint.identification.algorithm",
        "ssl.engine.factory.class",
        "ssl.key.password",
        "ssl.keymanager.algorithm",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.keystore.type",
        "ssl.protocol",
        "ssl.provider",
        "ssl.secure.random.implementation",
        "ssl.trustmanager.algorithm",
        "ssl.truststore.certificates",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.type",
        "sasl.client.callback.handler.class",
        "sasl.jaas.config",
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.min.time.before.relogin",
        "sasl.kerberos.service.name",
        "sasl.kerberos.ticket.renew.jitter",
        "sasl.kerberos.ticket.renew.window.factor",
        "sasl.login.callback.handler.class",
        "sasl.login.class",
        "sasl.login.connect.timeout.ms",
        "sasl.login.read.timeout.ms",
        "sasl.login.refresh.buffer.seconds",
        "sasl.login.refresh.min.period.seconds",
        "sasl.login.refresh.window.factor",
        "sasl.login.refresh.window.jitter",
        "sasl.login.retry.backoff.max.ms",
        "sasl.login.retry.backoff.ms",
        "sasl.mechanism",
        "sasl.oauthbearer.assertion.algorithm",
        "sasl.oauthbearer.assertion.claim.aud",
        "sasl.oauthbearer.assertion.claim.exp.seconds",
        "sasl.oauthbearer.assertion.claim.iss",
        "sasl.oauthbearer.assertion.claim.jti.include",
        "sasl.oauthbearer.assertion.claim.nbf.seconds",
        "sasl.oauthbearer.assertion.claim.sub",
        "sasl.oauthbearer.assertion.file",
        "sasl.oauthbearer.assertion.private.key.file",
        "sasl.oauthbearer.assertion.private.key.passphrase",
        "sasl.oauthbearer.assertion.template.file",
        "sasl.oauthbearer.client.credentials.client.id",
        "sasl.oauthbearer.client.credentials.client.secret",
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
        "sasl.oauthbearer.scope",
        "sasl.oauthbearer.scope.claim.name",
        "sasl.oauthbearer.sub.claim.name",
        "sasl.oauthbearer.token.endpoint.url",
    }
)
LIBRDKAFKA_SECURITY_KEYS = frozenset(
    {
        "ssl.ca.location",
        "ssl.ca.pem",
        "ssl.certificate.location",
        "ssl.certificate.pem",
        "ssl.crl.location",
        "ssl.curves.list",
        "ssl.engine.id",
        "ssl.engine.location",
        "ssl.key.location",
        "ssl.key.pem",
        "ssl.providers",
        "ssl.sigalgs.list",
        "sasl.kerberos.keytab",
        "sasl.kerberos.principal",
        "sasl.mechanisms",
        "sasl.oauthbearer.assertion.jwt.template.file",
        "sasl.oauthbearer.assertion.private.key.pem",
        "sasl.oauthbearer.client.id",
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.config",
        "sasl.oauthbearer.extensions",
        "sasl.oauthbearer.grant.type",
        "sasl.oauthbearer.metadata.authentication.type",
        "sasl.oauthbearer.method",
        "sasl.password",
        "sasl.username",
    }
)
# Keys under CLIENT_PREFIXES that are the worker's own, not its clients': whether the HTTPS
# REST listener asks for client certificates (RestServerConfig; Kafka's clients ignore it).
_WORKER_SSL_KEYS = frozenset({"ssl.client.auth"})

# Prefixes whose keys belong to someone else (a client, a converter, a config provider,
# the HTTPS listener, a REST extension) and are therefore not checked here.
ALLOWED_PREFIXES = (
    "producer.",
    "consumer.",
    "admin.",
    *(f"{c}." for c in CONVERTER_KEYS),
    "config.providers.",
    "listeners.https.",
    "admin.listeners.https.",
    "security.",
    "metrics.context.",
    # Spark's own settings, handed to the SparkSession of the Spark runtime (docs/spark.md).
    "spark.",
    "rest.extension.",
)

# Keys Kafka used to accept; naming the replacement beats "unknown key".
_REMOVED_KEYS = {
    "rest.host.name": "removed in Kafka 4.0; use 'listeners'",
    "rest.port": "removed in Kafka 4.0; use 'listeners'",
    "rest.advertised.host.port": "not a Kafka key; use 'rest.advertised.port'",
    "internal.key.converter": "removed in Kafka 3.0; internal topics always use JSON",
    "internal.value.converter": "removed in Kafka 3.0; internal topics always use JSON",
}

# difflib similarity above which a suggestion is shown; lower values start suggesting
# unrelated keys that merely share ".ms" or "storage" with the typo.
_SUGGESTION_CUTOFF = 0.75

_ONE_MINUTE_MS = 60_000
_FIVE_SECONDS_MS = 5_000
_FIVE_MINUTES_MS = 300_000
# Tasks on Spark executors report this often: cheap (one small HTTP request on a kept-alive
# connection), and status shown by REST is at most this old.
_SPARK_HEARTBEAT_MS = 1_000
# Longer than a full GC pause of an executor's Python worker or a slow env build step between
# two heartbeats, far shorter than Spark's own spark.network.timeout (120 s).
_SPARK_HEARTBEAT_TIMEOUT_MS = 30_000
# REST bodies: a connector config is stored as one record of Kafka's config topic in
# distributed mode, and brokers accept records of about 1 MiB by default (message.max.bytes),
# so a larger config could not be stored there anyway. A sink's offsets PATCH of ~10,000
# partitions still fits.
_ONE_MIB = 1 << 20


def _nullable(check: Callable[[str, Any], None]) -> Callable[[str, Any], None]:
    """Run ``check`` only on a set value; ``None`` means "not configured"."""

    def validate(name: str, value: Any) -> None:
        if value is not None:
            check(name, value)

    return validate


def _replication_factor(name: str, value: Any) -> None:
    if value != -1 and value < 1:
        raise ConfigException(
            name, value, "Replication factor must be positive or -1 (broker default)"
        )


def _partitions(name: str, value: Any) -> None:
    if value != -1 and value < 1:
        raise ConfigException(
            name, value, "Number of partitions must be positive or -1 (broker default)"
        )


def _listener_list(allow_empty: bool) -> Callable[[str, Any], None]:
    def validate(name: str, value: Any) -> None:
        if value is None:
            return
        if not value and not allow_empty:
            raise ConfigException(
                name, "", "Empty listener list; give at least one, e.g. http://:8083"
            )
        for listener in value:
            try:
                parts = urlsplit(listener)
                valid = parts.scheme.lower() in ("http", "https") and parts.port is not None
            except ValueError:  # e.g. a port out of range or an unclosed IPv6 bracket
                valid = False
            if not valid:
                raise ConfigException(
                    name, listener, "Listeners must look like http://host:port or https://host:port"
                )

    return validate


# Kafka's Utils.HOST_PORT_PATTERN (4.1.1), matched whole by ClientUtils.parseAndValidateAddresses:
# an optional scheme (PLAINTEXT://), a host or an IPv6 address with or without brackets, ':',
# a port. librdkafka takes "localhost" as localhost:9092 and "localhost:notaport" as port 0,
# and the worker then waited default.api.timeout.ms for a broker it could never reach.
_HOST_PORT = re.compile(r"(?:[0-9a-zA-Z\-%._]*://)?\[?([0-9a-zA-Z\-%._:]*)]?:([0-9]+)")
_MAX_PORT = 65_535


def _bootstrap_servers(name: str, value: Any) -> None:
    if value is None:
        return
    if not any(value):
        raise ConfigException(
            name,
            "",
            "Give at least one host:port, or leave the key out to use the embedded dev broker",
        )
    for url in value:
        if not url:  # Kafka skips empty entries ("a:1,,b:2")
            continue
        address = _HOST_PORT.fullmatch(url)
        if address is None:
            raise ConfigException(f"Invalid url in {name}: {url}")
        if int(address.group(2)) > _MAX_PORT:
            raise ConfigException(f"Invalid port in {name}: {url}")


def _build() -> ConfigDef:
    d = ConfigDef()
    # --- Kafka WorkerConfig -------------------------------------------------------------
    d.define(
        "bootstrap.servers",
        _T.LIST,
        None,
        _bootstrap_servers,
        _HIGH,
        "Kafka brokers (host:port,...). Unset: start the embedded dev broker.",
    )
    d.define(
        "client.dns.lookup",
        _T.STRING,
        "use_all_dns_ips",
        ValidString.in_("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only"),
        _MEDIUM,
        "How clients use the addresses DNS returns.",
    )
    d.define(
        "key.converter",
        _T.CLASS,
        NO_DEFAULT,
        None,
        _HIGH,
        "Converter between Connect data and the bytes of Kafka record keys.",
    )
    d.define(
        "value.converter",
        _T.CLASS,
        NO_DEFAULT,
        None,
        _HIGH,
        "Converter between Connect data and the bytes of Kafka record values.",
    )
    d.define(
        "header.converter",
        _T.CLASS,
        SIMPLE_HEADER_CONVERTER,
        None,
        _LOW,
        "Converter between Connect data and the bytes of Kafka record headers.",
    )
    d.define(
        "task.shutdown.graceful.timeout.ms",
        _T.LONG,
        _FIVE_SECONDS_MS,
        Range.at_least(0),
        _LOW,
        "Time to wait for tasks to stop, in total across all tasks.",
    )
    d.define(
        "plugin.call.timeout.ms",
        _T.LONG,
        _FIVE_MINUTES_MS,
        Range.at_least(1),
        _LOW,
        "Deadline of each call into plugin code other than a stop (start, validate, task "
        "configs, poll, put, pre_commit, ...). A plugin that has not answered by then counts "
        "as hung: its host is killed and its connector or task fails with that reason. Stops "
        "get task.shutdown.graceful.timeout.ms.",
    )
    d.define(
        "plugin.host.memory.max.bytes",
        _T.LONG,
        0,
        Range.at_least(0),
        _LOW,
        "Address-space limit (RLIMIT_AS) of each plugin host process; 0 means none. A host "
        "over it fails its connector or task with an out-of-memory reason, never the worker. "
        "Connectors may set their own value.",
    )
    d.define(
        "task.data.path",
        _T.STRING,
        "auto",
        CaseInsensitiveValidString.in_("auto", "host", "worker"),
        _LOW,
        "Where a task's data path (its Kafka client, the task loop, converters and "
        "transforms) runs. 'host': in the task's plugin host, next to the plugin, with the "
        "runtime's Kafka client parent-first, so records never cross a process boundary. "
        "'worker': the client and the loop in the worker, bytes crossing to the host. 'auto' "
        "(default): 'host' unless the plugin's environment (or a converter's, transform's or "
        "predicate's) ships its own copy of a module the data path shares (confluent_kafka) "
        "in another version, or runs another Python version. Either way plugin code runs in "
        "its host, whose crash, hang or memory limit fails only that task.",
    )
    d.define(
        "offset.flush.interval.ms",
        _T.LONG,
        _ONE_MINUTE_MS,
        Range.at_least(0),
        _LOW,
        "How often tasks' offsets are committed.",
    )
    d.define(
        "offset.flush.timeout.ms",
        _T.LONG,
        _FIVE_SECONDS_MS,
        Range.at_least(0),
        _LOW,
        "How long an offset flush may take before it is cancelled.",
    )
    d.define(
        "plugin.path",
        _T.LIST,
        None,
        None,
        _LOW,
        "Directories holding plugin environments. Config providers cannot be used here.",
    )
    d.define(
        "plugin.discovery",
        _T.STRING,
        "hybrid_warn",
        CaseInsensitiveValidString.in_("only_scan", "hybrid_warn", "hybrid_fail", "service_load"),
        _LOW,
        "How plugins are discovered (KIP-898).",
    )
    d.define(
        "plugin.index.urls",
        _T.LIST,
        "",
        None,
        _LOW,
        "Package indexes POST /admin/plugins may install from (the first is the default); "
        "empty: installs through REST are refused (the CLI and plain pip still work).",
    )
    d.define(
        "config.providers",
        _T.LIST,
        "",
        None,
        _LOW,
        "Aliases of config providers; each needs config.providers.<alias>.class.",
    )
    d.define(
        "connector.client.config.override.policy",
        _T.STRING,
        "All",
        None,
        _MEDIUM,
        "Which client overrides connectors may set: All, None, Principal or a class.",
    )
    d.define(
        "topic.creation.enable",
        _T.BOOLEAN,
        True,
        None,
        _LOW,
        "Whether source connectors may create topics (topic.creation.* settings).",
    )
    d.define(
        "topic.tracking.enable",
        _T.BOOLEAN,
        True,
        None,
        _LOW,
        "Track the topics each connector uses.",
    )
    d.define(
        "topic.tracking.allow.reset",
        _T.BOOLEAN,
        True,
        None,
        _LOW,
        "Allow resetting a connector's tracked topics through REST.",
    )
    d.define(
        "metrics.sample.window.ms",
        _T.LONG,
        30_000,
        Range.at_least(0),
        _LOW,
        "Window over which metric samples are computed.",
    )
    d.define(
        "metrics.num.samples",
        _T.INT,
        2,
        Range.at_least(1),
        _LOW,
        "Number of samples kept to compute metrics.",
    )
    d.define(
        "metrics.recording.level",
        _T.STRING,
        "INFO",
        ValidString.in_("INFO", "DEBUG"),
        _LOW,
        "Highest recording level of metrics.",
    )
    d.define("metric.reporters", _T.LIST, "", None, _LOW, "Metric reporter classes.")
    d.define(
        "auto.include.jmx.reporter",
        _T.BOOLEAN,
        True,
        None,
        _LOW,
        "Deprecated in Kafka; accepted and ignored.",
    )
    d.define(
        "request.timeout.ms",
        _T.INT,
        40_000,
        Range.at_least(0),
        _MEDIUM,
        "How long a client waits for a broker response.",
    )
    d.define(
        "default.api.timeout.ms",
        _T.INT,
        _ONE_MINUTE_MS,
        Range.at_least(0),
        _MEDIUM,
        "How long the worker waits at start-up to reach the Kafka cluster and read its id "
        "before it fails (Kafka Connect's admin client bounds the same lookup with this key).",
    )
    d.define(
        "metadata.max.age.ms",
        _T.LONG,
        _FIVE_MINUTES_MS,
        Range.at_least(0),
        _LOW,
        "Period after which clients refresh metadata.",
    )
    d.define(
        "security.protocol",
        _T.STRING,
        "PLAINTEXT",
        CaseInsensitiveValidString.in_("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"),
        _MEDIUM,
        "Protocol used to talk to the brokers.",
    )
    # --- Task runtimes (beyond Kafka Connect; docs/spark.md) ------------------------------
    d.define(
        "task.runtime",
        _T.STRING,
        "local",
        CaseInsensitiveValidString.in_("local", "spark"),
        _MEDIUM,
        "Where connector tasks run: local (threads of this worker, each with its plugin host) "
        "or spark (each task a long-running job on a Spark executor; the worker is the Spark "
        "driver and takes every spark.* key of this file for its SparkSession). Connectors "
        "may override it with their own task.runtime.",
    )
    d.define(
        "task.spark.heartbeat.interval.ms",
        _T.LONG,
        _SPARK_HEARTBEAT_MS,
        Range.at_least(10),
        _LOW,
        "How often a task on a Spark executor reports its status to the worker and asks for "
        "its target state; a pause, resume or stop reaches it at once regardless (the worker "
        "answers a waiting heartbeat as soon as the target changes).",
    )
    d.define(
        "task.spark.heartbeat.timeout.ms",
        _T.LONG,
        _SPARK_HEARTBEAT_TIMEOUT_MS,
        Range.at_least(100),
        _LOW,
        "A task on Spark that has not reported for this long is given up for lost: its job "
        "is cancelled and submitted again. On the executor, a task that cannot reach the "
        "worker for this long stops (without committing).",
    )
    d.define(
        "task.spark.env.cache.dir",
        _T.STRING,
        None,
        None,
        _LOW,
        "Directory on each executor machine where plugin environments are built from the "
        "shipped wheelhouses, one per content hash (a file lock guards each build). Unset: "
        "inside each executor's own working directory (SparkFiles root), so each executor "
        "builds its own copy once.",
    )
    # --- RestServerConfig -----------------------------------------------------------------
    d.define(
        "listeners",
        _T.LIST,
        "http://:8083",
        _listener_list(allow_empty=False),
        _LOW,
        "REST listeners, e.g. http://:8083,https://myhost:8443.",
    )
    d.define(
        "rest.advertised.host.name",
        _T.STRING,
        None,
        None,
        _LOW,
        "Host name given to other workers, if different from the listener's.",
    )
    d.define(
        "rest.advertised.port",
        _T.INT,
        None,
        _nullable(Range.between(0, 65_535)),
        _LOW,
        "Port given to other workers, if different from the listener's.",
    )
    d.define(
        "rest.advertised.listener",
        _T.STRING,
        None,
        _nullable(CaseInsensitiveValidString.in_("http", "https")),
        _LOW,
        "Listener protocol given to other workers.",
    )
    d.define(
        "admin.listeners",
        _T.LIST,
        None,
        _listener_list(allow_empty=True),
        _LOW,
        "Listeners of the /admin endpoints; unset = the main listeners, empty = disabled.",
    )
    d.define("rest.extension.classes", _T.LIST, "", None, _LOW, "REST extension classes.")
    d.define(
        "rest.request.max.bytes",
        _T.INT,
        _ONE_MIB,
        Range.at_least(0),
        _LOW,
        "Largest REST request body accepted; larger ones are answered 413 before being read.",
    )
    d.define(
        ALLOW_ORIGIN_KEY,
        _T.STRING,
        "",
        check_allowed_origins,
        _LOW,
        "Origins allowed in cross-origin REST requests: comma-separated regular expressions an "
        "Origin must match whole, or * for any; empty disables CORS.",
    )
    d.define(
        ALLOW_METHODS_KEY,
        _T.STRING,
        "",
        None,
        _LOW,
        "Methods allowed in CORS requests (comma-separated); empty means GET, POST, HEAD.",
    )
    d.define(
        RESPONSE_HEADERS_KEY,
        _T.STRING,
        "",
        check_response_headers,
        _LOW,
        "Comma-separated header rules '[action] [header name]:[header value]' (action set, "
        "add, setDate or addDate), a rule in double quotes if it holds a comma, applied to "
        "every REST response of the main listeners.",
    )
    # --- StandaloneConfig -----------------------------------------------------------------
    d.define(
        "offset.storage.file.filename",
        _T.STRING,
        None,
        None,
        _HIGH,
        "File holding source offsets in standalone mode.",
    )
    # --- DistributedConfig: recognised so distributed files load; defaults as in Kafka ----
    d.define("group.id", _T.STRING, None, None, _HIGH, "Connect cluster (worker group) id.")
    d.define("config.storage.topic", _T.STRING, None, None, _HIGH, "Topic of connector configs.")
    d.define(
        "config.storage.replication.factor",
        _T.SHORT,
        3,
        _replication_factor,
        _LOW,
        "Replication factor of the config topic; -1 = broker default.",
    )
    d.define("offset.storage.topic", _T.STRING, None, None, _HIGH, "Topic of source offsets.")
    d.define(
        "offset.storage.partitions",
        _T.INT,
        25,
        _partitions,
        _LOW,
        "Partitions of the offset topic; -1 = broker default.",
    )
    d.define(
        "offset.storage.replication.factor",
        _T.SHORT,
        3,
        _replication_factor,
        _LOW,
        "Replication factor of the offset topic; -1 = broker default.",
    )
    d.define(
        "status.storage.topic", _T.STRING, None, None, _HIGH, "Topic of connector/task status."
    )
    d.define(
        "status.storage.partitions",
        _T.INT,
        5,
        _partitions,
        _LOW,
        "Partitions of the status topic; -1 = broker default.",
    )
    d.define(
        "status.storage.replication.factor",
        _T.SHORT,
        3,
        _replication_factor,
        _LOW,
        "Replication factor of the status topic; -1 = broker default.",
    )
    d.define(
        "session.timeout.ms",
        _T.INT,
        10_000,
        Range.at_least(1),
        _HIGH,
        "Time without heartbeats after which a worker leaves the group.",
    )
    d.define(
        "heartbeat.interval.ms",
        _T.INT,
        3_000,
        Range.at_least(1),
        _HIGH,
        "Interval between heartbeats to the group coordinator.",
    )
    d.define(
        "rebalance.timeout.ms",
        _T.INT,
        _ONE_MINUTE_MS,
        Range.at_least(1),
        _HIGH,
        "How long a rebalance may take.",
    )
    d.define(
        "worker.sync.timeout.ms",
        _T.INT,
        3_000,
        Range.at_least(0),
        _MEDIUM,
        "How long a lagging worker tries to catch up with the config topic.",
    )
    d.define(
        "worker.unsync.backoff.ms",
        _T.INT,
        _FIVE_MINUTES_MS,
        Range.at_least(0),
        _MEDIUM,
        "Back-off before a worker that failed to catch up rejoins.",
    )
    d.define(
        "scheduled.rebalance.max.delay.ms",
        _T.INT,
        _FIVE_MINUTES_MS,
        Range.at_least(0),
        _LOW,
        "How long a departed worker's work is held before being reassigned.",
    )
    d.define(
        "connect.protocol",
        _T.STRING,
        "sessioned",
        CaseInsensitiveValidString.in_("eager", "compatible", "sessioned"),
        _LOW,
        "Group protocol of the Connect cluster.",
    )
    d.define(
        "exactly.once.source.support",
        _T.STRING,
        "disabled",
        CaseInsensitiveValidString.in_("disabled", "preparing", "enabled"),
        _HIGH,
        "Exactly-once source support (KIP-618); roll through 'preparing' to enable.",
    )
    d.define(
        "inter.worker.key.generation.algorithm",
        _T.STRING,
        "HmacSHA256",
        request_signing.validate_key_algorithm,
        _LOW,
        "Algorithm of the session key the leader generates for signing internal requests "
        "(KIP-507), a JCA name such as HmacSHA256.",
    )
    d.define(
        "inter.worker.key.size",
        _T.INT,
        None,
        request_signing.validate_key_size,
        _LOW,
        "Size of the session key in bits (at least 40); unset = the algorithm's default "
        "(256 for HmacSHA256).",
    )
    d.define(
        "inter.worker.key.ttl.ms",
        _T.INT,
        3_600_000,
        Range.between(0, 2_147_483_647),
        _LOW,
        "How long a session key is used before the leader generates a new one.",
    )
    d.define(
        "inter.worker.signature.algorithm",
        _T.STRING,
        "HmacSHA256",
        request_signing.validate_mac_algorithm,
        _LOW,
        "MAC algorithm this worker signs internal requests with; must be in "
        "inter.worker.verification.algorithms.",
    )
    d.define(
        "inter.worker.verification.algorithms",
        _T.LIST,
        "HmacSHA256",
        request_signing.validate_mac_algorithms,
        _LOW,
        "MAC algorithms accepted when verifying internal requests' signatures.",
    )
    # --- Shared internal topics (the KIP in ../shared/seeds/kip-share-internal-topics.txt) ----
    d.define(
        "connect.management.topic.sharing.support",
        _T.STRING,
        "disabled",
        CaseInsensitiveValidString.in_("disabled", "enabled"),
        _HIGH,
        "Whether this cluster shares its config, offset and status topics with other Connect "
        "clusters: 'enabled' prefixes every key it writes with its group.id and a '.', and "
        "ignores records of other clusters.",
    )
    # --- Copycat: the dev broker cannot compact ---------------------------------------------
    d.define(
        "internal.topics.compaction.check.enable",
        _T.BOOLEAN,
        True,
        None,
        _LOW,
        "Refuse to start when an internal topic's cleanup.policy is not 'compact' (as Kafka "
        "Connect does). Only for brokers that cannot compact or describe topic configs (the "
        "dev broker): turn it off there.",
    )
    # --- Copycat: the dev broker keeps a member that left mid-join ---------------------------
    d.define(
        "sink.group.join.finish.before.close",
        _T.BOOLEAN,
        False,
        None,
        _LOW,
        "Whether a stopping sink task lets a group join in progress complete (for at most 0.8 "
        "of task.shutdown.graceful.timeout.ms) before it closes its consumer. Only for the dev "
        "broker (Tansu), which keeps a member that leaves while its join is held and so blocks "
        "the connector's group for good; the embedded dev broker turns it on. Apache Kafka "
        "removes such a member: there the wait only delays the stop.",
    )
    return d


WORKER_CONFIG_DEF: ConfigDef = _build()
"""Every worker key, with Kafka's names and defaults (see the module docstring)."""


def _is_passed_through(key: str) -> bool:
    return (
        key in CLIENT_KEYS
        or key in KAFKA_SECURITY_KEYS
        or key in LIBRDKAFKA_SECURITY_KEYS
        or key in BROKER_SECURITY_KEYS
        or key.startswith(ALLOWED_PREFIXES)
    )


def _suggest(key: str) -> str | None:
    candidates = [
        *WORKER_CONFIG_DEF.names(),
        *sorted(CLIENT_KEYS),
        *sorted(KAFKA_SECURITY_KEYS),
        *sorted(LIBRDKAFKA_SECURITY_KEYS),
    ]
    folded = {c.lower(): c for c in candidates}
    match = difflib.get_close_matches(key.lower(), folded, n=1, cutoff=_SUGGESTION_CUTOFF)
    if match:
        return folded[match[0]]
    head, dot, tail = key.partition(".")
    if dot:  # a misspelled prefix, e.g. "consumr.max.poll.records"
        prefixes = [p[:-1] for p in ALLOWED_PREFIXES]
        match = difflib.get_close_matches(head.lower(), prefixes, n=1, cutoff=_SUGGESTION_CUTOFF)
        if match:
            return f"{match[0]}.{tail}"
    return None


def _unknown_key_message(key: str) -> str:
    if key in _REMOVED_KEYS:
        return f"unknown worker configuration key '{key}' ({_REMOVED_KEYS[key]})"
    suggestion = _suggest(key)
    hint = f" (did you mean '{suggestion}'?)" if suggestion else ""
    return f"unknown worker configuration key '{key}'{hint}"


def _placeholder_keys(props: Mapping[str, str]) -> frozenset[str]:
    """The defined keys whose value holds a ``${provider:[path:]key}`` placeholder, which only
    the config providers can turn into a value to check. ``plugin.path`` is not among them:
    its written value is the one used (see :meth:`WorkerConfig.resolved`)."""
    return frozenset(
        k
        for k, v in props.items()
        if k in WORKER_CONFIG_DEF and k != "plugin.path" and PLACEHOLDER.search(str(v))
    )


def _problems(
    props: Mapping[str, str], pending: frozenset[str] = frozenset()
) -> list[tuple[str, str]]:
    """Return ``(key, message)`` for every unknown key, invalid value and missing key; the
    values of ``pending`` keys (placeholders not yet resolved) are not checked."""
    checked = {k: v for k, v in props.items() if k not in pending}
    required = {k for k, key in WORKER_CONFIG_DEF.keys.items() if key.required}
    # A key's first message is its problem; a missing or unparsable value's validator run
    # on null (config/validate reports that too, as Kafka does) adds nothing here.
    errors = {
        r.name: r.error_messages[:1]
        for r in WORKER_CONFIG_DEF.validate(checked)
        if r.error_messages and not (r.name in pending and r.name in required)
    }
    problems: list[tuple[str, str]] = []
    for key in props:
        if key in errors:
            problems.extend((key, message) for message in errors.pop(key))
        elif key not in WORKER_CONFIG_DEF and not _is_passed_through(key):
            problems.append((key, _unknown_key_message(key)))
    for key, messages in errors.items():  # missing required keys
        problems.extend((key, message) for message in messages)
    problems.extend(_spark_heartbeat_problems(checked, {k for k, _ in problems}))
    return problems


def _spark_heartbeat_problems(props: Mapping[str, str], faulty: set[str]) -> list[tuple[str, str]]:
    """A Spark task whose heartbeat interval reaches the heartbeat timeout would be given up
    for lost between two of its own heartbeats, and would stop itself likewise: refused, as
    Kafka's consumers refuse a heartbeat interval at or above their session timeout."""
    interval_key, timeout_key = (
        "task.spark.heartbeat.interval.ms",
        "task.spark.heartbeat.timeout.ms",
    )
    if interval_key not in props and timeout_key not in props:
        return []
    if faulty & {interval_key, timeout_key}:
        return []
    keys = WORKER_CONFIG_DEF.keys
    interval, timeout = (
        parse_type(k, props[k], keys[k].type) if k in props else keys[k].default
        for k in (interval_key, timeout_key)
    )
    if interval < timeout:
        return []
    return [
        (
            interval_key,
            f"{interval_key} ({interval}) must be lower than {timeout_key} ({timeout})",
        )
    ]


def _problems_error(problems: list[tuple[str, str]], source: str) -> ConfigException:
    """One exception for every ``(key, message)`` problem, a line each, naming ``source``."""
    exc = ConfigException("\n".join(f"{source}: {message}" for _, message in problems))
    exc.name = problems[0][0]
    exc.problems = problems  # type: ignore[attr-defined]
    return exc


def _strip_prefix(props: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {k[len(prefix) :]: v for k, v in props.items() if k.startswith(prefix)}


class WorkerConfig(AbstractConfig):
    """The parsed, frozen worker configuration.

    Build it with :meth:`from_properties`. Typed values are available through
    :meth:`get` and, for the keys the runtime reads often, as attributes.
    """

    _source: str
    _raw: dict[str, str] | None
    _resolved: bool

    def __init__(
        self, props: Mapping[str, str], source: str = "<worker config>", *, resolved: bool = False
    ) -> None:
        """Parse ``props``; prefer :meth:`from_properties`.

        Until ``resolved``, a key whose value holds a config-provider placeholder
        (``offset.flush.interval.ms=${env:FLUSH_MS}``) is not checked and reads as its
        default: as in Kafka's WorkerConfig, the providers resolve the properties first and
        the resolved values are what is checked (by :meth:`resolved`).

        Raises:
            ConfigException: Listing every problem, each prefixed with ``source``.
        """
        pending = frozenset() if resolved else _placeholder_keys(props)
        problems = _problems(props, pending)
        if problems:
            raise _problems_error(problems, source)
        object.__setattr__(self, "_source", source)
        object.__setattr__(self, "_raw", None)
        object.__setattr__(self, "_resolved", resolved)
        keys = WORKER_CONFIG_DEF.keys
        super().__init__(
            WORKER_CONFIG_DEF,
            {k: v for k, v in props.items() if k not in pending or keys[k].required},
        )
        object.__setattr__(self, "_originals", dict(props))

    @classmethod
    def from_properties(
        cls, props: Mapping[str, str], source: str = "<worker config>"
    ) -> WorkerConfig:
        """Parse the worker properties read from ``source`` (a file name, for messages).

        Raises:
            ConfigException: One line per unknown key (with a suggestion), invalid
                value or missing required key, each naming ``source``. The exception's
                ``problems`` attribute lists them as ``(key, message)`` pairs.
        """
        return cls(props, source)

    @property
    def source(self) -> str:
        """Where the properties came from."""
        return self._source

    def require(self, keys: Iterable[str], why: str) -> None:
        """Check that each of ``keys`` (optional in the table, required by a mode: the
        distributed worker's topics and group, the standalone offsets file) has a value.

        Args:
            why: What needs them, for messages ("distributed mode").

        Raises:
            ConfigException: One line per key unset or empty, each naming :attr:`source`,
                as the constructor reports its problems (``problems`` attribute included).
        """
        problems: list[tuple[str, str]] = []
        for key in keys:
            value = self.get(key)
            if value is not None and str(value).strip():
                continue
            if key in self.originals():
                problems.append((key, f"{key} is empty; {why} needs a value for it"))
            else:
                problems.append(
                    (
                        key,
                        f'Missing required configuration "{key}" which has no default value '
                        f"({why} needs it).",
                    )
                )
        if problems:
            raise _problems_error(problems, self._source)

    def originals_strings(self) -> dict[str, str]:
        return {k: str(v) for k, v in self.originals().items()}

    def raw_originals(self) -> dict[str, str]:
        """The properties as written, config-provider placeholders and all: what may be shown
        or logged (:meth:`originals_strings` holds the resolved values once :meth:`resolved`
        made this config)."""
        return dict(self._raw) if self._raw is not None else self.originals_strings()

    def resolved(self, resolve: Callable[[Mapping[str, str]], Mapping[str, str]]) -> WorkerConfig:
        """This config with every ``${provider:[path:]key}`` placeholder substituted by
        ``resolve`` (the worker's config providers), as Kafka's WorkerConfig resolves its own
        properties with the providers its ``config.providers`` names: every key, once, when
        the worker starts. The written values stay available as :meth:`raw_originals`.

        ``plugin.path`` was used to find plugins before the providers existed, so, as in
        Kafka, its written value is the one that counts; a placeholder there is warned about.

        Raises:
            ConfigException: a provider failed, or a resolved value is invalid.
        """
        raw = self.raw_originals()
        values = dict(resolve(raw))
        if values.get("plugin.path") != raw.get("plugin.path"):
            log.warning(
                "Variables cannot be used in the 'plugin.path' property: plugins were found "
                "with its written value, %r",
                raw.get("plugin.path"),
            )
            values["plugin.path"] = raw["plugin.path"]
        config = WorkerConfig(values, self._source, resolved=True)
        object.__setattr__(config, "_raw", raw)
        return config

    def with_defaults(self, defaults: Mapping[str, str]) -> WorkerConfig:
        """This config with ``defaults`` added for the keys it does not set."""
        config = WorkerConfig(
            {**defaults, **self.originals_strings()}, self._source, resolved=self._resolved
        )
        if self._raw is not None:
            object.__setattr__(config, "_raw", {**defaults, **self._raw})
        return config

    # --- client configs -------------------------------------------------------------------
    def client_config(self) -> dict[str, str]:
        """Keys for every Kafka client (``bootstrap.servers``, ``ssl.*``, ...), as set in the file.

        Defaults are not filled in: the client wrapper owns client defaults. Keys the worker
        uses itself (``ssl.client.auth``, the REST listener's) are left out.
        """
        return {
            k: v
            for k, v in self.originals_strings().items()
            if (k in CLIENT_KEYS or k.startswith(CLIENT_PREFIXES)) and k not in _WORKER_SSL_KEYS
        }

    def producer_overrides(self) -> dict[str, str]:
        """``producer.*`` keys with the prefix removed."""
        return _strip_prefix(self.originals_strings(), "producer.")

    def consumer_overrides(self) -> dict[str, str]:
        """``consumer.*`` keys with the prefix removed."""
        return _strip_prefix(self.originals_strings(), "consumer.")

    def admin_overrides(self) -> dict[str, str]:
        """``admin.*`` keys with the prefix removed (``admin.listeners*`` is the REST server's)."""
        return {
            k: v
            for k, v in _strip_prefix(self.originals_strings(), "admin.").items()
            if k != "listeners" and not k.startswith("listeners.")
        }

    def converter_config(self, which: str) -> dict[str, str]:
        """A converter's sub-config: ``value.converter.schemas.enable`` becomes ``schemas.enable``.

        Args:
            which: ``key.converter``, ``value.converter`` or ``header.converter``.
        """
        if which not in CONVERTER_KEYS:
            raise ValueError(f"which must be one of {', '.join(CONVERTER_KEYS)}, not {which!r}")
        return _strip_prefix(self.originals_strings(), f"{which}.")

    def provider_configs(self) -> dict[str, dict[str, str]]:
        """``config.providers.<alias>.*`` for each listed alias, with that prefix removed."""
        return {
            alias: _strip_prefix(self.originals_strings(), f"config.providers.{alias}.")
            for alias in self.config_providers
        }

    # --- typed attributes ------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> list[str] | None:
        """Broker addresses, or ``None``: start the embedded dev broker."""
        return self.get("bootstrap.servers")  # type: ignore[no-any-return]

    @property
    def uses_embedded_broker(self) -> bool:
        """Whether ``bootstrap.servers`` was left out."""
        return self.bootstrap_servers is None

    @property
    def key_converter(self) -> str:
        """Class (or alias) of the key converter."""
        return self.get("key.converter")  # type: ignore[no-any-return]

    @property
    def value_converter(self) -> str:
        """Class (or alias) of the value converter."""
        return self.get("value.converter")  # type: ignore[no-any-return]

    @property
    def header_converter(self) -> str:
        """Class (or alias) of the header converter."""
        return self.get("header.converter")  # type: ignore[no-any-return]

    @property
    def offset_storage_file_filename(self) -> str | None:
        """Standalone offsets file; the standalone herder requires it."""
        return self.get("offset.storage.file.filename")  # type: ignore[no-any-return]

    @property
    def offset_flush_interval_ms(self) -> int:
        """How often offsets are committed."""
        return self.get("offset.flush.interval.ms")  # type: ignore[no-any-return]

    @property
    def offset_flush_timeout_ms(self) -> int:
        """How long an offset flush may take."""
        return self.get("offset.flush.timeout.ms")  # type: ignore[no-any-return]

    @property
    def task_shutdown_graceful_timeout_ms(self) -> int:
        """Total time to wait for tasks to stop."""
        return self.get("task.shutdown.graceful.timeout.ms")  # type: ignore[no-any-return]

    @property
    def plugin_path(self) -> list[str]:
        """Plugin directories (empty if unset)."""
        return list(self.get("plugin.path") or [])

    @property
    def plugin_discovery(self) -> str:
        """Plugin discovery mode, lower-case."""
        return str(self.get("plugin.discovery")).lower()

    @property
    def listeners(self) -> list[str]:
        """REST listeners."""
        return self.get("listeners")  # type: ignore[no-any-return]

    @property
    def admin_listeners(self) -> list[str] | None:
        """Admin listeners: ``None`` = the main listeners, ``[]`` = disabled."""
        return self.get("admin.listeners")  # type: ignore[no-any-return]

    @property
    def rest_advertised_host_name(self) -> str | None:
        """Advertised REST host, if set."""
        return self.get("rest.advertised.host.name")  # type: ignore[no-any-return]

    @property
    def rest_advertised_port(self) -> int | None:
        """Advertised REST port, if set."""
        return self.get("rest.advertised.port")  # type: ignore[no-any-return]

    @property
    def rest_advertised_listener(self) -> str | None:
        """Advertised REST protocol, if set."""
        return self.get("rest.advertised.listener")  # type: ignore[no-any-return]

    @property
    def config_providers(self) -> list[str]:
        """Config provider aliases."""
        return self.get("config.providers")  # type: ignore[no-any-return]

    @property
    def connector_client_config_override_policy(self) -> str:
        """Which client overrides connectors may set."""
        return self.get("connector.client.config.override.policy")  # type: ignore[no-any-return]

    @property
    def topic_creation_enable(self) -> bool:
        """Whether source connectors may create topics."""
        return self.get("topic.creation.enable")  # type: ignore[no-any-return]

    @property
    def exactly_once_source_support(self) -> str:
        """``disabled``, ``preparing`` or ``enabled``."""
        return str(self.get("exactly.once.source.support")).lower()

    @property
    def group_id(self) -> str | None:
        """Connect cluster id (distributed mode)."""
        return self.get("group.id")  # type: ignore[no-any-return]
