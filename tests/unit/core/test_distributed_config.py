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
