"""Helpers for differential tests: run one connector config on Copycat and Kafka Connect.

Everything goes through the two workers' REST APIs, as a user would; records are read back
from the shared Apache Kafka with a plain consumer.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
import pytest
from confluent_kafka import Consumer, TopicPartition

from core.kafka import READ_COMMITTED
from tests.support.kafka import wait_for

if TYPE_CHECKING:
    from tests.support.apache_kafka import KafkaCluster

T = TypeVar("T")

# A differential scenario moves tens of records; both workers finish in seconds. The bound is
# for a loaded 2-core machine where Kafka Connect's first task start is slow.
SCENARIO_TIMEOUT_S = 90.0

# After the expected records arrived, how long to keep reading for unexpected extra ones.
EXTRA_RECORDS_GRACE_S = 1.0

Record = tuple[bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]

FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
# Kafka Connect's worker defaults (see tests/support/kafka_connect.py), so that a connector
# config without converters means the same on both.
KAFKA_CONNECT_CONVERTERS = {"key.converter": JSON_CONVERTER, "value.converter": JSON_CONVERTER}
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
STRING_CONVERTERS = {"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}
NAME_HEADER = "__connect.errors.connector.name"
TRACE_HEADER = "__connect.errors.exception.stacktrace"
MESSAGE_HEADER = "__connect.errors.exception.message"


@dataclass(frozen=True)
class Peer:
    """A worker's REST address; ``name`` says which implementation it is in messages."""

    name: str
    url: str

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60, transport=_KeepAliveTransport())


@dataclass(frozen=True)
class DistributedPeers:
    """A distributed worker of each implementation, in groups of their own."""

    copycat: Peer
    kafka_connect: Peer

    def both(self) -> tuple[Peer, Peer]:
        return self.copycat, self.kafka_connect


@contextmanager
def distributed_peers(
    bootstrap: str, plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DistributedPeers]:
    """One distributed worker each (their own groups and internal topics) on ``bootstrap``."""
    from tests.support.distributed import DistributedCluster
    from tests.support.jvm import run_owner_pid
    from tests.support.kafka_connect import KafkaConnect

    connect = KafkaConnect(
        tmp_path_factory.mktemp("kafka-connect"), bootstrap, mode="distributed"
    ).start(run_owner_pid())
    copycat = DistributedCluster(tmp_path_factory.mktemp("copycat"), bootstrap, plugin_path, 1)
    try:
        copycat.start()
        yield DistributedPeers(Peer("Copycat", copycat.urls[0]), Peer("Kafka Connect", connect.url))
    finally:
        copycat.stop()
        connect.stop()


@contextmanager
def copycat_peer(
    bootstrap: str,
    plugin_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    settings: Mapping[str, str],
) -> Iterator[Peer]:
    """A Copycat standalone worker (REST on a free port) on ``bootstrap``, with Kafka
    Connect's default converters and the worker ``settings``."""
    from tests.support.rest import RestWorker

    with RestWorker(
        tmp_path_factory.mktemp("copycat"),
        bootstrap,
        plugin_path,
        {**KAFKA_CONNECT_CONVERTERS, **settings},
    ) as worker:
        yield Peer("Copycat", worker.url)


@contextmanager
def standalone_peers(
    bootstrap: str,
    plugin_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    settings: Mapping[str, str],
    copycat: Mapping[str, str] | None = None,
    kafka_connect: Mapping[str, str] | None = None,
) -> Iterator[tuple[Peer, Peer]]:
    """(Copycat, Kafka Connect): a standalone worker of each of their own on ``bootstrap``,
    both with the worker ``settings``, and each with its own extra ones over them."""
    from tests.support.jvm import run_owner_pid
    from tests.support.kafka_connect import KafkaConnect

    kafka = KafkaConnect(
        tmp_path_factory.mktemp("kafka-connect"),
        bootstrap,
        overrides={**settings, **(kafka_connect or {})},
    ).start(run_owner_pid())
    try:
        with copycat_peer(
            bootstrap, plugin_path, tmp_path_factory, {**settings, **(copycat or {})}
        ) as ours:
            yield ours, Peer("Kafka Connect", kafka.url)
    finally:
        kafka.stop()


class _KeepAliveTransport(httpx.HTTPTransport):
    """Sends a request again, once, on a new connection when the server closed the kept-alive
    connection it went out on before answering. Seen once in CI from Kafka Connect's Jetty, on
    the request after a 415 (not reproduced: Jetty keeps the connection open after a 415 here);
    a server that answers nothing has not acted on the request, so sending it again repeats
    nothing."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return super().handle_request(request)
        except httpx.RemoteProtocolError as error:
            if "without sending a response" not in str(error):
                raise
            return super().handle_request(request)


def create(client: httpx.Client, name: str, config: Mapping[str, str]) -> httpx.Response:
    """POST /connectors; fail the test with the worker's answer unless it is 201."""
    response = client.post("/connectors", json={"name": name, "config": dict(config)})
    assert response.status_code == 201, f"{client.base_url}: {response.status_code} {response.text}"
    return response


def _wait_status(
    client: httpx.Client, name: str, reached: Callable[[dict[str, Any]], bool], what: str
) -> dict[str, Any]:
    """The connector's status once ``reached`` says so of it."""

    def status() -> dict[str, Any] | None:
        response = client.get(f"/connectors/{name}/status")
        if response.status_code != 200:
            return None
        body: dict[str, Any] = response.json()
        return body if reached(body) else None

    result: dict[str, Any] = wait_for(status, SCENARIO_TIMEOUT_S, f"{name} {what}")
    return result


def _states(status: dict[str, Any]) -> list[str]:
    return [status["connector"]["state"], *(t["state"] for t in status["tasks"])]


def wait_running(client: httpx.Client, name: str, tasks: int = 1) -> dict[str, Any]:
    """Until the connector and ``tasks`` tasks are RUNNING; fail at once if any FAILED."""

    def running(status: dict[str, Any]) -> bool:
        states = _states(status)
        assert "FAILED" not in states, f"{client.base_url} {name}: {status}"
        return states == ["RUNNING"] * (tasks + 1)

    return _wait_status(client, name, running, "RUNNING")


def wait_failed(client: httpx.Client, name: str) -> dict[str, Any]:
    """Until the connector or one of its tasks is FAILED."""
    return _wait_status(client, name, lambda status: "FAILED" in _states(status), "FAILED")


def delete(client: httpx.Client, name: str) -> None:
    response = client.delete(f"/connectors/{name}")
    assert response.status_code in (204, 404), response.text


def task_state(client: httpx.Client, name: str, state: str) -> dict[str, Any] | None:
    """The connector's status once its first task is in ``state`` (else None: to wait for)."""
    response = client.get(f"/connectors/{name}/status")
    if response.status_code != 200:
        return None
    status: dict[str, Any] = response.json()
    tasks = status["tasks"]
    return status if tasks and tasks[0]["state"] == state else None


def stopped(client: httpx.Client, name: str) -> bool:
    response = client.get(f"/connectors/{name}/status")
    return response.status_code == 200 and response.json()["connector"]["state"] == "STOPPED"


@dataclass(frozen=True)
class FileSource:
    """A one-task FileStreamSource connector's config; its topic has the connector's name."""

    name: str
    file: Path
    config: dict[str, str]

    @property
    def topic(self) -> str:
        return self.name


def file_source(
    broker: KafkaCluster,
    tmp: Path,
    prefix: str,
    lines: Sequence[str],
    settings: Mapping[str, str],
    topic_config: Mapping[str, str] | None = None,
) -> FileSource:
    """A FileStreamSource ``<prefix>-<random>`` with ``settings`` over its config, on a file
    of ``lines`` under ``tmp``, to a new one-partition topic of its name (``topic_config``)."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    broker.create_topic(name, 1, topic_config)
    source = tmp / f"{name}.txt"
    source.write_text("".join(f"{line}\n" for line in lines))
    config = {"connector.class": FILE_SOURCE, "file": str(source), "topic": name, "tasks.max": "1"}
    return FileSource(name, source, {**config, **settings})


def run_file_source(
    peer: Peer,
    broker: KafkaCluster,
    source: FileSource,
    expected: int,
    until: Callable[[httpx.Client], T],
) -> tuple[list[Record], list[dict[str, Any]], T]:
    """Create ``source`` on ``peer``; once ``until`` returned, its ``expected`` records (and
    any extra), the source offsets it committed once stopped (``GET
    /connectors/<name>/offsets``, each file name cut to its suffix: the files differ between
    the runs), and what ``until`` returned. The connector is deleted after."""
    with peer.client() as client:
        create(client, source.name, source.config)
        try:
            seen = until(client)
            records = read_records(broker.bootstrap_servers, source.topic, expected)
            assert client.put(f"/connectors/{source.name}/stop").status_code == 204
            wait_for(
                lambda: stopped(client, source.name), SCENARIO_TIMEOUT_S, f"{peer.name} STOPPED"
            )
            response = client.get(f"/connectors/{source.name}/offsets")
            assert response.status_code == 200, response.text
            offsets: list[dict[str, Any]] = response.json()["offsets"]
        finally:
            delete(client, source.name)
    for entry in offsets:
        entry["partition"] = {"filename": Path(entry["partition"]["filename"]).suffix}
    return records, offsets, seen


@contextmanager
def running_file_source(client: httpx.Client, name: str, tmp: Path, topic: str) -> Iterator[None]:
    """A one-task FileStreamSource ``name`` (on a one-line file under ``tmp``, to ``topic``),
    RUNNING while the block runs, deleted after it."""
    source = tmp / f"{name}.txt"
    source.write_text("a\n")
    config = {
        "connector.class": FILE_SOURCE,
        "file": str(source),
        "topic": topic,
        "tasks.max": "1",
    }
    create(client, name, config)
    try:
        wait_running(client, name)
        yield
    finally:
        delete(client, name)


def file_lines(path: Path) -> list[str]:
    """The lines a FileStreamSink wrote to ``path`` so far (none before it made the file)."""
    return path.read_text().splitlines() if path.exists() else []


def read_records(bootstrap: str, topic: str, expected: int) -> list[Record]:
    """Every record of partition 0 of ``topic``: ``expected`` of them, plus any extra."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"diff-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "isolation.level": READ_COMMITTED,
            "topic.metadata.refresh.interval.ms": 500,
            # A DLQ just created may answer the first fetch at 0 OFFSET_OUT_OF_RANGE: the
            # default reset (latest) skipped the dead letter written next (seen under load).
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    records: list[Record] = []
    deadline = time.monotonic() + SCENARIO_TIMEOUT_S
    try:
        while len(records) < expected and time.monotonic() < deadline:
            records += _records(consumer.consume(1000, 0.5))
        grace = time.monotonic() + EXTRA_RECORDS_GRACE_S
        while time.monotonic() < grace:
            records += _records(consumer.consume(1000, 0.2))
    finally:
        consumer.close()
    return records


def _records(messages: list[Any]) -> list[Record]:
    return [(m.key(), m.value(), tuple(m.headers() or ())) for m in messages if m.error() is None]


def differences(ours: list[Record], theirs: list[Record]) -> list[str]:
    """One line per record that differs (or exists on one side only), for assertion messages."""
    lines = []
    for i in range(max(len(ours), len(theirs))):
        mine = ours[i] if i < len(ours) else None
        reference = theirs[i] if i < len(theirs) else None
        if mine != reference:
            lines.append(f"record {i}:\n  Copycat:       {mine!r}\n  Kafka Connect: {reference!r}")
    return lines


def validation_errors(peer: Peer, plugin: str, config: Mapping[str, str]) -> dict[str, Any]:
    """``PUT /connector-plugins/<plugin>/config/validate``: its ``error_count`` and the errors
    of every key that has some, keyed by the key's name."""
    with peer.client() as client:
        response = client.put(f"/connector-plugins/{plugin}/config/validate", json=dict(config))
    assert response.status_code == 200, f"{peer.name}: {response.status_code} {response.text}"
    body = response.json()
    errors: dict[str, Any] = {"error_count": body["error_count"]}
    for entry in body["configs"]:
        if entry["value"]["errors"]:
            errors[entry["value"]["name"]] = entry["value"]["errors"]
    return errors


def create_refusal(
    peer: Peer, name: str, config: Mapping[str, str], put: bool = False
) -> tuple[int, str | None]:
    """POST /connectors (or ``put``: PUT /connectors/<name>/config) with a config expected to
    be refused: the status and the message (a connector that was created after all is
    deleted again)."""
    with peer.client() as client:
        if put:
            response = client.put(f"/connectors/{name}/config", json=dict(config))
        else:
            response = client.post("/connectors", json={"name": name, "config": dict(config)})
        if response.status_code in (200, 201):
            delete(client, name)
            return 201, None
    return response.status_code, response.json().get("message")


def dlq_sink_config(topic: str, output: Path, dlq: str, tolerance: str = "all") -> dict[str, str]:
    """A FileStreamSink over ``topic`` into ``output`` with ``errors.tolerance`` and a
    dead letter queue ``dlq`` carrying Kafka's context headers."""
    return {
        "connector.class": FILE_SINK,
        "tasks.max": "1",
        "topics": topic,
        "file": str(output),
        "errors.tolerance": tolerance,
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true",
    }


def normalised(records: list[Record], connector: str) -> list[Record]:
    """DLQ records with what cannot be equal between the two workers replaced: the connector
    name (checked to be ``connector``) and the stack trace (checked to be there)."""
    out = []
    for key, value, headers in records:
        fixed = []
        for name, data in headers:
            if name == NAME_HEADER:
                assert data == connector.encode(), (name, data)
                data = b"<connector>"
            elif name == TRACE_HEADER:
                assert data, "an empty stack trace header"
                data = b"<stack trace>"
            fixed.append((name, data))
        out.append((key, value, tuple(fixed)))
    return out


def reconcile_messages(ours: list[Record], theirs: list[Record]) -> list[Record]:
    """Our records with each exception message cut to Kafka's where it starts with Kafka's."""
    out = []
    for (key, value, headers), (_, _, reference) in zip(ours, theirs, strict=False):
        expected = dict(reference).get(MESSAGE_HEADER) or b""
        fixed = tuple(
            (
                name,
                expected
                if name == MESSAGE_HEADER and (data or b"").startswith(expected) and expected
                else data,
            )
            for name, data in headers
        )
        out.append((key, value, fixed))
    return out + ours[len(out) :]


def written(output: Path, count: int, who: str) -> str:
    """The sink file's text once it holds at least ``count`` lines."""
    text: str = wait_for(
        lambda: (
            output.exists() and len(output.read_text().splitlines()) >= count and output.read_text()
        ),
        SCENARIO_TIMEOUT_S,
        f"{who} writing {count} lines",
    )
    return text


def run_dlq_sink(
    peer: Peer,
    bootstrap: str,
    topic: str,
    tmp: Path,
    prefix: str,
    settings: Mapping[str, str],
    dead: int,
    lines: int,
) -> tuple[list[Record], str]:
    """Run a FileStreamSink with a DLQ (tolerance all, context headers) and ``settings`` over
    ``topic`` on ``peer``: its ``dead`` DLQ records, normalised, and the file's text once it
    holds ``lines`` lines (with none expected, once the sink opened its file)."""
    name = f"{prefix}-{peer.name.split()[0].lower()}-{uuid.uuid4().hex[:8]}"
    output = tmp / f"{name}.out"
    with peer.client() as client:
        create(client, name, {**dlq_sink_config(topic, output, f"{name}-dlq"), **settings})
        try:
            records = read_records(bootstrap, f"{name}-dlq", dead) if dead else []
            if lines:
                text = written(output, lines, peer.name)
            else:  # every record failed: the sink's file is there, and stays empty
                wait_for(output.exists, SCENARIO_TIMEOUT_S, f"{peer.name} opening its file")
                text = output.read_text()
        finally:
            delete(client, name)
    return normalised(records, name), text
