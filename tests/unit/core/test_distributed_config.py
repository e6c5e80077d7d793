"""A distributed worker's configuration, checked before it touches Kafka."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.distributed.herder import DistributedHerder
from plugin_api import ConfigException

REQUIRED = {
    "bootstrap.servers": "localhost:9092",
    "group.id": "connect-cluster",
    "config.storage.topic": "connect-configs",
    "offset.storage.topic": "connect-offsets",
    "status.storage.topic": "connect-status",
    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
}
# Required by every worker, not only a distributed one.
COMMON = {"bootstrap.servers", "key.converter", "value.converter"}


@pytest.mark.parametrize("missing", sorted(set(REQUIRED) - COMMON))
def test_each_required_key_is_named_when_missing(missing: str) -> None:
    props = {k: v for k, v in REQUIRED.items() if k != missing}
    with pytest.raises(ConfigException, match=f'"{missing}"'):
        DistributedHerder(None, worker_props=props)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("inter.worker.key.generation.algorithm", "HmacFoo", "key generation algorithm"),
        ("inter.worker.key.size", "32", "at least 40 bits"),
        ("inter.worker.key.ttl.ms", "-1", "at least 0"),
        ("inter.worker.signature.algorithm", "SHA256", "MAC algorithm"),
        ("inter.worker.verification.algorithms", "HmacSHA256,HmacBar", "MAC algorithm"),
        ("inter.worker.verification.algorithms", "", "At least one"),
    ],
)
def test_kip_507_keys_are_validated_naming_the_key(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigException, match=message) as caught:
        DistributedHerder(None, worker_props={**REQUIRED, key: value})
    assert f"configuration {key}" in str(caught.value)


def test_the_signature_algorithm_must_be_one_this_worker_verifies() -> None:
    props = {
        **REQUIRED,
        "inter.worker.signature.algorithm": "HmacSHA512",
        "inter.worker.verification.algorithms": "HmacSHA256",
    }
    with pytest.raises(
        ConfigException, match="inter.worker.verification.algorithms list"
    ) as caught:
        DistributedHerder(None, worker_props=props)
    assert "configuration inter.worker.signature.algorithm" in str(caught.value)


def test_every_missing_required_key_is_named_at_once_with_the_file(tmp_path: Path) -> None:
    worker = tmp_path / "w.properties"
    worker.write_text(
        "bootstrap.servers=localhost:9092\n"
        "key.converter=org.apache.kafka.connect.json.JsonConverter\n"
        "value.converter=org.apache.kafka.connect.json.JsonConverter\n"
        "config.storage.topic=\n"
    )
    with pytest.raises(ConfigException) as info:
        DistributedHerder(worker)
    lines = str(info.value).splitlines()
    assert lines == [
        f'{worker}: Missing required configuration "group.id" which has no default value '
        "(distributed mode needs it).",
        f"{worker}: config.storage.topic is empty; distributed mode needs a value for it",
        f'{worker}: Missing required configuration "offset.storage.topic" which has no default '
        "value (distributed mode needs it).",
        f'{worker}: Missing required configuration "status.storage.topic" which has no default '
        "value (distributed mode needs it).",
    ]


def test_required_keys_may_come_from_config_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONNECT_GROUP", "")
    props = {
        **REQUIRED,
        "config.providers": "env",
        "config.providers.env.class": (
            "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
        ),
        "group.id": "${env:CONNECT_GROUP}",
    }
    # Resolved, then checked: an empty variable is an empty group.id.
    with pytest.raises(ConfigException, match="group.id is empty"):
        DistributedHerder(None, worker_props=props)
    monkeypatch.setenv("CONNECT_GROUP", "cluster-a")
    assert DistributedHerder(None, worker_props=props).group_id == "cluster-a"


@pytest.mark.parametrize("heartbeat", ["10000", "20000"])
def test_a_heartbeat_interval_not_below_the_session_timeout_is_refused(heartbeat: str) -> None:
    props = {**REQUIRED, "session.timeout.ms": "10000", "heartbeat.interval.ms": heartbeat}
    with pytest.raises(ConfigException, match="lower than the session timeout") as caught:
        DistributedHerder(None, worker_props=props)
    assert "configuration heartbeat.interval.ms" in str(caught.value)
    assert "session.timeout.ms=10000" in str(caught.value)
