"""KafkaConnectTopicMigrator: keys of Connect's internal topics moved to another cluster."""

from __future__ import annotations

from typing import Any

import pytest
from copycat_transforms import KafkaConnectTopicMigrator
from plugin_api.testing import apply_transform

from plugin_api import ConfigException, SourceRecord


def migrate(config: dict[str, Any], key: Any, value: Any = b"{}") -> Any:
    record = SourceRecord(None, None, "connect-configs", 0, None, key, None, value)
    out = apply_transform(KafkaConnectTopicMigrator, config, record)
    return None if out is None else out.key


CONFIG = {"topic.type": "config", "destination.cluster.name": "blue"}


@pytest.mark.parametrize(
    "key",
    ["connector-orders", "task-orders-0", "commit-orders", "target-state-orders", "session-key"],
)
def test_an_old_clients_keys_get_the_destination_prefix(key: str) -> None:
    assert migrate(CONFIG, key) == f"blue.{key}"


def test_bytes_keys_stay_bytes_and_values_and_tombstones_pass_through() -> None:
    record = SourceRecord(None, None, "t", 0, None, b"connector-a", None, None)
    out = apply_transform(KafkaConnectTopicMigrator, CONFIG, record)
    assert out is not None and out.key == b"blue.connector-a" and out.value is None


def test_prefixed_keys_of_listed_clusters_move_others_are_dropped() -> None:
    config = {**CONFIG, "source.cluster.names": "red,green", "old.client": "false"}
    assert migrate(config, "red.connector-a") == "blue.connector-a"
    assert migrate(config, "green.task-a-1") == "blue.task-a-1"
    assert migrate(config, "grey.connector-a") is None
    assert migrate(config, "connector-a") is None  # old client's records not asked for


def test_offset_keys_keep_their_json_and_dots() -> None:
    config = {"topic.type": "offset", "destination.cluster.name": "blue.team"}
    key = '["files",{"filename":"/data/in.txt"}]'
    assert migrate(config, key) == f"blue.team.{key}"


def test_one_job_only() -> None:
    config = {**CONFIG, "migrate.job": "true", "job.name": "orders"}
    assert migrate(config, "connector-orders") == "blue.connector-orders"
    assert migrate(config, "task-orders-3") == "blue.task-orders-3"
    assert migrate(config, "connector-orders-v2") is None
    assert migrate(config, "task-orders-v2-0") is None
    assert migrate(config, "connector-other") is None
    status = {"topic.type": "status", "destination.cluster.name": "blue", **config}
    status["topic.type"] = "status"
    assert migrate(status, "status-task-orders-0") == "blue.status-task-orders-0"
    assert (
        migrate(status, "status-topic-t:connector-orders") == "blue.status-topic-t:connector-orders"
    )
    offsets = {**config, "topic.type": "offset"}
    assert migrate(offsets, '["orders",{"p":1}]') == 'blue.["orders",{"p":1}]'
    assert migrate(offsets, '["other",{"p":1}]') is None


def test_bad_settings_name_the_key() -> None:
    with pytest.raises(ConfigException, match="job.name"):
        migrate({**CONFIG, "migrate.job": "true"}, "connector-a")
    with pytest.raises(ConfigException, match="source.cluster.names"):
        migrate({**CONFIG, "old.client": "false"}, "connector-a")
    with pytest.raises(ConfigException, match="topic.type"):
        migrate({"topic.type": "offsets", "destination.cluster.name": "b"}, "x")
    with pytest.raises(ConfigException, match="destination.cluster.name"):
        migrate({"topic.type": "config"}, "x")
