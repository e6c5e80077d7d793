"""Worker-wide and per-connector client overrides reach exactly the clients they are for.

Kafka Connect's order: the worker's client keys, Connect's defaults, the worker's
``producer.``/``consumer.``/``admin.`` overrides, then the connector's ``*.override.`` keys.
``admin.listeners`` is the REST server's, never an AdminClient key (it used to reach tasks'
AdminClients as ``listeners``), and a key librdkafka does not know is dropped with a warning,
as Java's clients ignore unknown keys, instead of keeping the task from starting.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from core.client_overrides import NonePolicy
from core.offsets import MemoryOffsetStore
from core.plugins import PluginCatalogue
from core.runtime.services import ConfluentClients
from core.status import State
from core.task_specs import TaskSpecFactory
from core.worker import Worker
from core.worker_config import WorkerConfig
from plugin_api import ConfigException
from tests.support.kafka import read_all, wait_for

pytestmark = pytest.mark.integration


class RecordingClients(ConfluentClients):
    """Real confluent-kafka clients, remembering the config each was asked for."""

    def __init__(self) -> None:
        self.made: list[tuple[str, dict[str, Any]]] = []

    def producer(self, config: Mapping[str, Any]) -> Any:
        self.made.append(("producer", dict(config)))
        return super().producer(config)

    def consumer(self, config: Mapping[str, Any]) -> Any:
        self.made.append(("consumer", dict(config)))
        return super().consumer(config)

    def admin(self, config: Mapping[str, Any]) -> Any:
        self.made.append(("admin", dict(config)))
        return super().admin(config)


WORKER = {
    "key.converter": "StringConverter",
    "value.converter": "StringConverter",
    "offset.flush.interval.ms": "500",
    "producer.linger.ms": "7",
    "producer.no.such.producer.key": "1",  # not a librdkafka key: dropped with a warning
    "consumer.fetch.min.bytes": "5",
    "consumer.session.timeout.ms": "6000",
    "admin.request.timeout.ms": "12345",
    "admin.listeners": "http://127.0.0.1:0",  # the REST admin listener, not a client key
    "admin.listeners.https.ssl.keystore.location": "/nowhere",
}


def recording_worker(
    catalogue: PluginCatalogue, bootstrap_servers: str
) -> tuple[Worker, RecordingClients]:
    clients = RecordingClients()
    worker = Worker(
        "w1",
        WORKER,
        catalogue,
        MemoryOffsetStore(),
        client_props={"bootstrap.servers": bootstrap_servers},
        clients=clients,
    )
    return worker, clients


def file_source(name: str, data: Path, topic: str, **overrides: str) -> dict[str, str]:
    """A FileStreamSource connector's config on ``data`` (its topic created with one partition
    and replication factor 1), with ``overrides`` added."""
    return {
        "name": name,
        "connector.class": "FileStreamSource",
        "file": str(data),
        "topic": topic,
        "topic.creation.default.partitions": "1",
        "topic.creation.default.replication.factor": "1",
        **overrides,
    }


def test_task_clients_get_exactly_their_keys(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    worker, clients = recording_worker(catalogue, bootstrap_servers)
    data = tmp_path / "in.txt"
    data.write_text("a\nb\n")
    name = f"overrides-{topic_name}"
    worker.start_connector(
        name,
        file_source(
            name,
            data,
            topic_name,
            **{
                "producer.override.linger.ms": "9",  # the connector's own wins
                "admin.override.client.id": "mine",
            },
        ),
    )
    caplog.set_level(logging.WARNING, logger="copycat.runtime")
    try:
        runner = worker.start_task(name, 0, worker.task_configs(name)[0])
        assert runner.wait_started(60)
        wait_for(lambda: worker.status.task(name, 0).state is State.RUNNING, 30, "running")
        wait_for(lambda: runner.loop is not None and runner.loop.records_moved == 2, 30, "sent")
    finally:
        worker.stop()
    made = dict(clients.made)
    producer, admin = made["producer"], made["admin"]
    assert producer["linger.ms"] == "9"
    # Kafka Connect's (Worker.java): acks=all, one request in flight, idempotence off.
    assert producer["acks"] == "all" and producer["max.in.flight.requests.per.connection"] == 1
    assert producer["enable.idempotence"] is False
    assert producer["bootstrap.servers"] == bootstrap_servers
    assert "fetch.min.bytes" not in producer and "request.timeout.ms" not in producer
    assert admin["request.timeout.ms"] == "12345" and admin["client.id"] == "mine"
    assert not any(key.startswith("listeners") for key in admin)  # admin.listeners* is REST's
    assert "linger.ms" not in admin
    # The unknown key was asked for, dropped with a warning naming it, and the task ran.
    assert producer["no.such.producer.key"] == "1"
    assert any("no.such.producer.key" in r.getMessage() for r in caplog.records)


def test_sink_consumers_get_the_consumer_overrides(
    catalogue: PluginCatalogue, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    worker, clients = recording_worker(catalogue, bootstrap_servers)
    name = f"sink-overrides-{topic_name}"
    worker.start_connector(
        name,
        {
            "name": name,
            "connector.class": "FileStreamSink",
            "file": str(tmp_path / "out.txt"),
            "topics": topic_name,
            "consumer.override.max.poll.records": "17",
        },
    )
    try:
        assert worker.start_task(name, 0, worker.task_configs(name)[0]).wait_started(60)
    finally:
        worker.stop()
    consumer = dict(clients.made)["consumer"]
    assert consumer["fetch.min.bytes"] == "5" and consumer["max.poll.records"] == "17"
    assert consumer["group.id"] == f"connect-{name}"
    assert consumer["enable.auto.commit"] is False
    assert "linger.ms" not in consumer and "request.timeout.ms" not in consumer


def test_a_source_may_turn_on_idempotence(
    catalogue: PluginCatalogue, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    """Idempotence is off by default, as Kafka Connect's; a connector that wants it says so,
    and its producer (idempotent, one request in flight) delivers."""
    worker, clients = recording_worker(catalogue, bootstrap_servers)
    data = tmp_path / "in.txt"
    data.write_text("".join(f"line {i}\n" for i in range(100)))
    name = f"idempotent-{topic_name}"
    worker.start_connector(
        name,
        file_source(name, data, topic_name, **{"producer.override.enable.idempotence": "true"}),
    )
    try:
        runner = worker.start_task(name, 0, worker.task_configs(name)[0])
        assert runner.wait_started(60)
        wait_for(lambda: runner.loop is not None and runner.loop.records_moved == 100, 30, "sent")
    finally:
        worker.stop()
    producer = dict(clients.made)["producer"]
    assert producer["enable.idempotence"] == "true"
    assert producer["max.in.flight.requests.per.connection"] == 1


@pytest.mark.parametrize(
    ("worker_props", "connector_props", "warned"),
    [
        ({}, {}, None),  # Copycat's own default enable.idempotence=false is no one's mistake
        ({}, {"producer.override.enable.idempotence": "false"}, "false"),
        ({"producer.enable.idempotence": "false"}, {}, "false"),
        ({}, {"producer.override.enable.idempotence": "true"}, None),
    ],
)
def test_exactly_once_warns_only_about_idempotence_the_user_turned_off(
    catalogue: PluginCatalogue,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    worker_props: dict[str, str],
    connector_props: dict[str, str],
    warned: str | None,
) -> None:
    """An exactly-once task's producer (and the one writing its altered offsets) is made
    idempotent whatever was set; as in Kafka, with a warning only when the user set it."""
    config = WorkerConfig.from_properties({**WORKER, **worker_props}, "test")
    specs = TaskSpecFactory(config, catalogue, {"bootstrap.servers": "localhost:9"})
    name = "eos"
    props = file_source(name, tmp_path / "in.txt", "t", **connector_props)
    plugin = catalogue.resolve("connector", "FileStreamSource", None)
    caplog.set_level(logging.WARNING, logger="copycat")
    spec = specs.make(name, 0, plugin, props, {}, exactly_once=True)
    offsets_producer = specs.offsets_producer(name, props)
    assert spec.clients.producer is not None
    assert spec.clients.producer["enable.idempotence"] is True
    assert offsets_producer["enable.idempotence"] is True
    warnings = [r.getMessage() for r in caplog.records if "enable.idempotence" in r.getMessage()]
    expected = (
        f"connector {name}: ignoring enable.idempotence={warned} in its producer config; "
        "exactly-once source support needs True"
    )
    assert warnings == ([] if warned is None else [expected, expected])


def test_a_source_sends_records_up_to_kafkas_default_request_size(
    catalogue: PluginCatalogue, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    """Java's max.request.size default (1 MiB), not librdkafka's smaller message.max.bytes
    (1,000,000): a line Kafka Connect sends is sent."""
    worker, clients = recording_worker(catalogue, bootstrap_servers)
    data = tmp_path / "in.txt"
    big = "y" * 1_020_000
    data.write_text(f"small\n{big}\nlast\n")
    name = f"big-{topic_name}"
    worker.start_connector(name, file_source(name, data, topic_name))
    try:
        runner = worker.start_task(name, 0, worker.task_configs(name)[0])
        assert runner.wait_started(60)
        sent = read_all(bootstrap_servers, topic_name, 3)
        assert worker.status.task(name, 0).state is State.RUNNING
    finally:
        worker.stop()
    assert [len(m.value()) for m in sent] == [5, len(big), 4]
    assert dict(clients.made)["producer"]["message.max.bytes"] == 1_048_576


def test_java_client_keys_reach_their_librdkafka_equivalents(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """What a Kafka Connect user writes (max.request.size, fetch.max.wait.ms, an assignor's
    class name) is what librdkafka gets under its own names, not dropped as unknown."""
    worker, clients = recording_worker(catalogue, bootstrap_servers)
    name = f"java-keys-{topic_name}"
    caplog.set_level(logging.WARNING, logger="copycat.runtime")
    worker.start_connector(
        name,
        {
            "name": name,
            "connector.class": "FileStreamSink",
            "file": str(tmp_path / "out.txt"),
            "topics": topic_name,
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": f"{topic_name}-dlq",
            "errors.deadletterqueue.topic.replication.factor": "1",
            "producer.override.max.request.size": "2000000",
            "producer.override.buffer.memory": "67108864",
            "consumer.override.fetch.max.wait.ms": "100",
            "consumer.override.partition.assignment.strategy": (
                "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
            ),
        },
    )
    try:
        assert worker.start_task(name, 0, worker.task_configs(name)[0]).wait_started(60)
        wait_for(lambda: worker.status.task(name, 0).state is State.RUNNING, 30, "running")
    finally:
        worker.stop()
    made = dict(clients.made)
    dlq, consumer = made["producer"], made["consumer"]
    assert dlq["message.max.bytes"] == 2_000_000 and "max.request.size" not in dlq
    assert dlq["queue.buffering.max.kbytes"] == 65_536
    assert consumer["fetch.wait.max.ms"] == 100
    assert consumer["partition.assignment.strategy"] == "cooperative-sticky"
    ignored = [r.getMessage() for r in caplog.records if "ignoring configuration" in r.getMessage()]
    for key in ("max.request.size", "buffer.memory", "fetch.max.wait.ms"):
        assert not any(key in message for message in ignored), ignored


def test_a_stored_config_the_policy_refuses_starts_no_task_and_makes_no_client(
    catalogue: PluginCatalogue, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    """A connector stored before the worker's policy was tightened (validation never saw it)
    is refused when its task's clients are configured, as Kafka's Worker does, naming the key
    and not its value."""
    secret = "wrongwrong-5c1e"
    clients = RecordingClients()
    worker = Worker(
        "w1",
        {**WORKER, "connector.client.config.override.policy": "None"},
        catalogue,
        MemoryOffsetStore(),
        client_props={"bootstrap.servers": bootstrap_servers},
        clients=clients,
        override_policy=NonePolicy(),
    )
    data = tmp_path / "in.txt"
    data.write_text("a\n")
    name = f"refused-{topic_name}"
    props = file_source(name, data, topic_name, **{"producer.override.sasl.password": secret})
    try:
        worker.start_connector(name, props)
        with pytest.raises(ConfigException) as refused:
            worker.start_task(name, 0, worker.task_configs(name)[0])
    finally:
        worker.stop()
    assert refused.value.name == "producer.override.sasl.password"
    assert "The 'None' policy does not allow 'sasl.password'" in str(refused.value)
    assert secret not in str(refused.value)
    assert clients.made == []
