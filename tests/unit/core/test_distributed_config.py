"""A distributed worker's configuration, checked before it touches Kafka."""

from __future__ import annotations

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
