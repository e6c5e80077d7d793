"""The worker configuration table, its typed view and its error reporting."""

from __future__ import annotations

from pathlib import Path

import pytest
from plugin_api.config import ConfigDef, ConfigType, config_infos
from plugin_api.errors import ConfigException

from core.config_providers import BUILTIN_PROVIDERS, ConfigResolver
from core.properties import load_properties
from core.standalone import StandaloneHerder
from core.worker_config import WORKER_CONFIG_DEF, WorkerConfig

MINIMAL = {
    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
}

FILE_PROVIDER = "org.apache.kafka.common.config.provider.FileConfigProvider"

# Kafka's shipped config/connect-standalone.properties, as users have it.
KAFKA_STANDALONE_FILE = """\
# These are defaults. This file just demonstrates how to override some settings.
bootstrap.servers=localhost:9092

# The converters specify the format of data in Kafka and how to translate it into Connect data.
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true

offset.storage.file.filename=/tmp/connect.offsets
# Flush much faster than normal, which is useful for testing/debugging
offset.flush.interval.ms=10000

#plugin.path=
"""

KAFKA_DISTRIBUTED_KEYS = {
    "group.id": "connect-cluster",
    "offset.storage.topic": "connect-offsets",
    "offset.storage.replication.factor": "1",
    "offset.storage.partitions": "25",
    "config.storage.topic": "connect-configs",
    "config.storage.replication.factor": "1",
    "status.storage.topic": "connect-status",
    "status.storage.replication.factor": "-1",
    "status.storage.partitions": "5",
    "listeners": "HTTP://:8083",
    "session.timeout.ms": "10000",
    "heartbeat.interval.ms": "3000",
    "rebalance.timeout.ms": "60000",
    "scheduled.rebalance.max.delay.ms": "300000",
    "connect.protocol": "sessioned",
    "exactly.once.source.support": "enabled",
    "inter.worker.key.ttl.ms": "3600000",
}


def _config(**extra: str) -> WorkerConfig:
    return WorkerConfig.from_properties(
        {**MINIMAL, **{k.replace("_", "."): v for k, v in extra.items()}}, "worker.properties"
    )


def _error(props: dict[str, str], source: str = "worker.properties") -> ConfigException:
    with pytest.raises(ConfigException) as info:
        WorkerConfig.from_properties(props, source)
    return info.value


def test_kafka_standalone_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "connect-standalone.properties"
    path.write_text(KAFKA_STANDALONE_FILE)
    cfg = WorkerConfig.from_properties(load_properties(path), str(path))
    assert cfg.bootstrap_servers == ["localhost:9092"]
    assert not cfg.uses_embedded_broker
    assert cfg.offset_storage_file_filename == "/tmp/connect.offsets"
    assert cfg.offset_flush_interval_ms == 10_000
    assert cfg.converter_config("value.converter") == {"schemas.enable": "true"}
    assert cfg.source == str(path)


def test_kafka_distributed_keys_are_recognised() -> None:
    cfg = WorkerConfig.from_properties({**MINIMAL, **KAFKA_DISTRIBUTED_KEYS}, "d.properties")
    assert cfg.group_id == "connect-cluster"
    assert cfg.get("status.storage.replication.factor") == -1
    assert cfg.exactly_once_source_support == "enabled"
    assert cfg.listeners == ["HTTP://:8083"]


def test_defaults_match_kafka() -> None:
    cfg = _config()
    assert cfg.bootstrap_servers is None and cfg.uses_embedded_broker
    assert cfg.header_converter == "org.apache.kafka.connect.storage.SimpleHeaderConverter"
    assert cfg.offset_flush_interval_ms == 60_000
    assert cfg.offset_flush_timeout_ms == 5_000
    assert cfg.task_shutdown_graceful_timeout_ms == 5_000
    assert cfg.listeners == ["http://:8083"]
    assert cfg.admin_listeners is None
    assert cfg.plugin_path == []
    assert cfg.plugin_discovery == "hybrid_warn"
    assert cfg.config_providers == []
    assert cfg.connector_client_config_override_policy == "All"
    assert cfg.topic_creation_enable is True
    assert cfg.get("topic.tracking.enable") is True
    assert cfg.get("topic.tracking.allow.reset") is True
    assert cfg.exactly_once_source_support == "disabled"
    assert cfg.offset_storage_file_filename is None
    assert cfg.group_id is None
    assert cfg.rest_advertised_host_name is None
    assert cfg.rest_advertised_port is None
    assert cfg.rest_advertised_listener is None
    expected = {
        "config.storage.replication.factor": 3,
        "offset.storage.partitions": 25,
        "offset.storage.replication.factor": 3,
        "status.storage.partitions": 5,
        "status.storage.replication.factor": 3,
        "scheduled.rebalance.max.delay.ms": 300_000,
        "connect.protocol": "sessioned",
        "session.timeout.ms": 10_000,
        "heartbeat.interval.ms": 3_000,
        "rebalance.timeout.ms": 60_000,
        "worker.sync.timeout.ms": 3_000,
        "worker.unsync.backoff.ms": 300_000,
        "inter.worker.key.generation.algorithm": "HmacSHA256",
        "inter.worker.key.size": None,
        "inter.worker.key.ttl.ms": 3_600_000,
        "inter.worker.signature.algorithm": "HmacSHA256",
        "inter.worker.verification.algorithms": ["HmacSHA256"],
        "request.timeout.ms": 40_000,
        "metadata.max.age.ms": 300_000,
        "default.api.timeout.ms": 60_000,
        "rest.extension.classes": [],
        "access.control.allow.origin": "",
        "access.control.allow.methods": "",
    }
    assert {k: cfg.get(k) for k in expected} == expected


def test_converters_are_required_like_kafka() -> None:
    assert WORKER_CONFIG_DEF.keys["key.converter"].required
    assert WORKER_CONFIG_DEF.keys["value.converter"].required
    err = _error({})
    missing = 'Missing required configuration "{}" which has no default value.'
    assert str(err) == (
        f"worker.properties: {missing.format('key.converter')}\n"
        f"worker.properties: {missing.format('value.converter')}"
    )


def test_typed_values() -> None:
    cfg = _config(
        **{
            "plugin.path": "/opt/a, /opt/b",
            "offset.flush.timeout.ms": " 750 ",
            "bootstrap.servers": "k1:9092,k2:9092",
            "plugin.discovery": "ONLY_SCAN",
        }
    )
    assert cfg.plugin_path == ["/opt/a", "/opt/b"]
    assert cfg.offset_flush_timeout_ms == 750
    assert cfg.bootstrap_servers == ["k1:9092", "k2:9092"]
    assert cfg.plugin_discovery == "only_scan"


def test_config_is_frozen() -> None:
    cfg = _config()
    with pytest.raises(AttributeError):
        cfg.foo = 1  # type: ignore[attr-defined]


def test_unknown_key_suggests_closest_and_names_file() -> None:
    err = _error({**MINIMAL, "ofset.flush.interval.ms": "1000"})
    assert str(err) == (
        "worker.properties: unknown worker configuration key 'ofset.flush.interval.ms' "
        "(did you mean 'offset.flush.interval.ms'?)"
    )
    assert err.name == "ofset.flush.interval.ms"


def test_unknown_key_with_misspelled_prefix_suggests_prefix() -> None:
    err = _error({**MINIMAL, "consumr.max.poll.records": "5"})
    assert "did you mean 'consumer.max.poll.records'?" in str(err)


def test_unknown_key_without_close_match_has_no_suggestion() -> None:
    err = _error({**MINIMAL, "zzz": "1"})
    assert str(err) == "worker.properties: unknown worker configuration key 'zzz'"


def test_removed_kafka_keys_name_the_replacement() -> None:
    err = _error({**MINIMAL, "rest.port": "8083"})
    assert (
        "unknown worker configuration key 'rest.port' (removed in Kafka 4.0; use 'listeners')"
        in str(err)
    )


def test_all_problems_reported_at_once() -> None:
    err = _error(
        {
            "ofset.flush.interval.ms": "1",
            "offset.flush.timeout.ms": "soon",
            "listeners": "ftp://x:21",
            "task.shutdown.graceful.timeout.mss": "1",
        },
        "conf/w.properties",
    )
    lines = str(err).splitlines()
    assert all(line.startswith("conf/w.properties: ") for line in lines)
    assert len(lines) == 6
    text = str(err)
    assert "'ofset.flush.interval.ms' (did you mean 'offset.flush.interval.ms'?)" in text
    assert "Invalid value soon for configuration offset.flush.timeout.ms" in text
    assert "Invalid value ftp://x:21 for configuration listeners" in text
    assert "(did you mean 'task.shutdown.graceful.timeout.ms'?)" in text
    assert '"key.converter"' in text and '"value.converter"' in text
    assert [key for key, _ in err.problems] == [  # type: ignore[attr-defined]
        "ofset.flush.interval.ms",
        "offset.flush.timeout.ms",
        "listeners",
        "task.shutdown.graceful.timeout.mss",
        "key.converter",
        "value.converter",
    ]


@pytest.mark.parametrize(
    "key, value",
    [
        ("offset.flush.interval.ms", "-5"),
        ("exactly.once.source.support", "maybe"),
        ("connect.protocol", "v2"),
        ("plugin.discovery", "scan_everything"),
        ("topic.creation.enable", "yes"),
        ("offset.storage.replication.factor", "0"),
        ("status.storage.partitions", "-2"),
        ("rest.advertised.port", "70000"),
        ("listeners", ""),
        ("listeners", "http://localhost"),
        ("listeners", "http://[::1:8083"),
        ("listeners", "http://localhost:99999"),
        ("bootstrap.servers", ""),
        ("client.dns.lookup", "default"),
        ("security.protocol", "TLS"),
    ],
)
def test_invalid_values_name_key_value_and_file(key: str, value: str) -> None:
    err = _error({**MINIMAL, key: value})
    assert str(err).startswith("worker.properties: Invalid value ")
    assert key in str(err)
    assert err.name == key


def test_pass_through_keys_are_accepted() -> None:
    cfg = _config(
        **{
            "producer.linger.ms": "5",
            "consumer.max.poll.records": "100",
            "admin.request.timeout.ms": "1000",
            "key.converter.schemas.enable": "false",
            "header.converter.charset": "UTF-8",
            "config.providers": "file",
            "config.providers.file.class": FILE_PROVIDER,
            "config.providers.file.param.allowed.paths": "/etc/secrets",
            "listeners.https.ssl.keystore.location": "/ks",
            "ssl.truststore.location": "/ts",
            "sasl.mechanism": "PLAIN",
            "security.protocol": "SASL_SSL",
            "metrics.context.team": "data",
            "retry.backoff.ms": "200",
            "client.id": "w1",
            "rest.extension.foo": "bar",
        }
    )
    assert cfg.producer_overrides() == {"linger.ms": "5"}
    assert cfg.consumer_overrides() == {"max.poll.records": "100"}
    assert cfg.admin_overrides() == {"request.timeout.ms": "1000"}
    assert cfg.converter_config("key.converter") == {"schemas.enable": "false"}
    assert cfg.converter_config("header.converter") == {"charset": "UTF-8"}
    assert cfg.converter_config("value.converter") == {}
    assert cfg.provider_configs() == {
        "file": {
            "class": FILE_PROVIDER,
            "param.allowed.paths": "/etc/secrets",
        }
    }
    assert cfg.client_config() == {
        "ssl.truststore.location": "/ts",
        "sasl.mechanism": "PLAIN",
        "security.protocol": "SASL_SSL",
        "retry.backoff.ms": "200",
        "client.id": "w1",
    }


def test_client_config_contains_only_keys_set_in_the_file() -> None:
    cfg = _config(
        **{
            "bootstrap.servers": "k:9092",
            "request.timeout.ms": "1000",
            "offset.flush.interval.ms": "1",
        }
    )
    assert cfg.client_config() == {"bootstrap.servers": "k:9092", "request.timeout.ms": "1000"}
    assert _config().client_config() == {}


def test_admin_overrides_exclude_the_admin_listeners() -> None:
    cfg = _config(
        **{
            "admin.listeners": "http://localhost:8084",
            "admin.listeners.https.ssl.keystore.location": "/ks",
            "admin.retries": "3",
        }
    )
    assert cfg.admin_overrides() == {"retries": "3"}
    assert cfg.admin_listeners == ["http://localhost:8084"]
    assert _config(**{"admin.listeners": ""}).admin_listeners == []


def test_converter_config_rejects_other_prefixes() -> None:
    with pytest.raises(ValueError):
        _config().converter_config("producer")


def test_definition_is_a_configdef_usable_for_docs_and_rest() -> None:
    assert isinstance(WORKER_CONFIG_DEF, ConfigDef)
    assert WORKER_CONFIG_DEF.keys["plugin.path"].type is ConfigType.LIST
    assert WORKER_CONFIG_DEF.keys["config.providers"].type is ConfigType.LIST
    infos = config_infos(WORKER_CONFIG_DEF, MINIMAL, "worker")
    assert infos["error_count"] == 0
    assert all(entry["definition"]["documentation"] for entry in infos["configs"])


ENV_PROVIDER = {
    "config.providers": "env",
    "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
}


def _env_resolver(config: WorkerConfig) -> ConfigResolver:
    return ConfigResolver.from_worker_config(
        config.config_providers, config.provider_configs(), BUILTIN_PROVIDERS
    )


def test_placeholders_in_typed_keys_are_checked_once_resolved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Kafka's WorkerConfig resolves the providers first, then parses and validates.
    monkeypatch.setenv("FLUSH_MS", "1234")
    monkeypatch.setenv("LST", "http://127.0.0.1:18083")
    monkeypatch.setenv("TC", "false")
    written = {
        **MINIMAL,
        **ENV_PROVIDER,
        "offset.flush.interval.ms": "${env:FLUSH_MS}",
        "listeners": "${env:LST}",
        "topic.creation.enable": "${env:TC}",
    }
    config = WorkerConfig.from_properties(written, "w.properties")
    resolved = config.resolved(lambda props: _env_resolver(config).resolve(props).config)
    assert resolved.offset_flush_interval_ms == 1234
    assert resolved.listeners == ["http://127.0.0.1:18083"]
    assert resolved.topic_creation_enable is False
    assert resolved.raw_originals()["offset.flush.interval.ms"] == "${env:FLUSH_MS}"
    # Still checked once resolved, naming the file.
    monkeypatch.setenv("FLUSH_MS", "soon")
    with pytest.raises(ConfigException, match=r"w\.properties: Invalid value soon .*offset"):
        config.resolved(lambda props: _env_resolver(config).resolve(props).config)


def test_a_placeholder_nothing_resolves_is_an_invalid_value() -> None:
    config = WorkerConfig.from_properties({**MINIMAL, "offset.flush.interval.ms": "${x:Y}"})
    with pytest.raises(ConfigException, match=r"Invalid value \$\{x:Y\}"):
        config.resolved(lambda props: props)


# As Kafka 4.1.1's ClientUtils.parseAndValidateAddresses answers them (checked with its jar).
@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ("localhost", "Invalid url in bootstrap.servers: localhost"),
        ("localhost:notaport", "Invalid url in bootstrap.servers: localhost:notaport"),
        ("k1:9092,k2", "Invalid url in bootstrap.servers: k2"),
        ("[::1]", r"Invalid url in bootstrap.servers: \[::1\]"),
        ("h:-1", "Invalid url in bootstrap.servers: h:-1"),
        ("h:9092x", "Invalid url in bootstrap.servers: h:9092x"),
        ("h/x:9092", "Invalid url in bootstrap.servers: h/x:9092"),
        ("h:99999", "Invalid port in bootstrap.servers: h:99999"),
    ],
)
def test_bootstrap_servers_without_a_valid_port_are_refused_as_kafka_does(
    servers: str, message: str
) -> None:
    error = _error({**MINIMAL, "bootstrap.servers": servers}, "w.properties")
    assert str(error) == f"w.properties: {message}".replace("\\", "")
    assert error.name == "bootstrap.servers"


@pytest.mark.parametrize(
    "servers",
    [
        "localhost:9092",
        "k1:9092, k2:9093",
        "[::1]:9092",
        "::1:9092",
        "[fe80::1%eth0]:9092",
        "PLAINTEXT://broker:9092",
        "a:1,,b:2",
    ],
)
def test_bootstrap_servers_kafka_accepts_are_accepted(servers: str) -> None:
    assert _config(bootstrap_servers=servers).bootstrap_servers


def test_require_names_every_unset_or_empty_key_with_the_file() -> None:
    config = _config(**{"group.id": "g", "config.storage.topic": " "})
    with pytest.raises(ConfigException) as info:
        config.require(["group.id", "config.storage.topic", "status.storage.topic"], "it")
    assert str(info.value).splitlines() == [
        "worker.properties: config.storage.topic is empty; it needs a value for it",
        'worker.properties: Missing required configuration "status.storage.topic" which has no '
        "default value (it needs it).",
    ]
    assert [key for key, _ in info.value.problems] == [  # type: ignore[attr-defined]
        "config.storage.topic",
        "status.storage.topic",
    ]


def test_an_empty_offsets_file_is_called_empty_by_the_standalone_worker(tmp_path: Path) -> None:
    worker = tmp_path / "w.properties"
    worker.write_text(
        "bootstrap.servers=127.0.0.1:1\n"
        f"key.converter={MINIMAL['key.converter']}\n"
        f"value.converter={MINIMAL['value.converter']}\n"
        f"plugin.path={tmp_path}\n"
        "offset.storage.file.filename=\n"
    )
    herder = StandaloneHerder(worker)
    with pytest.raises(ConfigException) as info:
        herder.start()  # refused before it reaches for the cluster
    assert str(info.value) == (
        f"{worker}: offset.storage.file.filename is empty; standalone mode needs a value for it"
    )


@pytest.mark.parametrize(
    ("interval", "timeout", "shown"),
    [
        ("30000", None, "(30000) must be lower than task.spark.heartbeat.timeout.ms (30000)"),
        ("500", "400", "(500) must be lower than task.spark.heartbeat.timeout.ms (400)"),
    ],
)
def test_a_spark_heartbeat_interval_not_below_its_timeout_is_refused(
    interval: str, timeout: str | None, shown: str
) -> None:
    props = {**MINIMAL, "task.spark.heartbeat.interval.ms": interval}
    if timeout is not None:
        props["task.spark.heartbeat.timeout.ms"] = timeout
    err = _error(props)
    assert str(err) == f"worker.properties: task.spark.heartbeat.interval.ms {shown}"


def test_spark_heartbeat_keys_in_order_or_invalid_add_no_second_problem() -> None:
    assert (
        _config(task_spark_heartbeat_interval_ms="500").get("task.spark.heartbeat.interval.ms")
        == 500
    )
    err = _error({**MINIMAL, "task.spark.heartbeat.interval.ms": "soon"})
    assert [key for key, _ in err.problems] == ["task.spark.heartbeat.interval.ms"]  # type: ignore[attr-defined]
