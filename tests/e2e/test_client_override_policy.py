"""``connector.client.config.override.policy`` (KIP-458) is enforced as Kafka Connect 4.1 does.

Through real workers (a real broker, real plugin hosts) and their REST APIs: a refused
``*.override.*`` key is an error on that key in ``config/validate``, a 400 on create and
update (nothing stored, nothing started), a non-zero exit for a ``copycat standalone``
connector file; only the clients a connector uses are checked; an unknown policy stops the
worker at start. No message quotes an override's value: those values are credentials.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import DistributedCluster
from tests.support.rest import RestWorker

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
POLICY = "connector.client.config.override.policy"
KAFKA_POLICIES = "org.apache.kafka.connect.connector.policy"
SECRET = "wrongwrong-7f3a"
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    f'username="u" password="{SECRET}";'
)
NONE_REFUSES_JAAS = (
    "The 'None' policy does not allow 'sasl.jaas.config' to be overridden in the connector "
    "configuration."
)


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _source(tmp: Path, **extra: str) -> dict[str, str]:
    path = tmp / "in.txt"
    path.write_text("line\n")
    return {
        "name": _name("pol"),
        "connector.class": "FileStreamSource",
        "topic": "t",
        "file": str(path),
        **extra,
    }


def _sink(tmp: Path, **extra: str) -> dict[str, str]:
    return {
        "name": _name("pol"),
        "connector.class": "FileStreamSink",
        "topics": "t",
        "file": str(tmp / "out.txt"),
        **extra,
    }


def _errors(body: dict[str, object]) -> dict[str, list[str]]:
    configs = body["configs"]
    assert isinstance(configs, list)
    return {c["value"]["name"]: c["value"]["errors"] for c in configs if c["value"]["errors"]}


@pytest.fixture(scope="module")
def none_worker(
    tmp_path_factory: pytest.TempPathFactory, bootstrap_servers: str, bundled_plugin_path: Path
) -> Iterator[RestWorker]:
    tmp = tmp_path_factory.mktemp("policy-none")
    with RestWorker(tmp, bootstrap_servers, bundled_plugin_path, {POLICY: "None"}) as running:
        yield running


@pytest.fixture(scope="module")
def http(none_worker: RestWorker) -> Iterator[httpx.Client]:
    with none_worker.client() as client:
        yield client


def test_the_none_policy_refuses_a_producer_override_on_create_with_kafkas_400(
    http: httpx.Client, tmp_path: Path
) -> None:
    config = _source(tmp_path, **{"producer.override.sasl.jaas.config": JAAS})
    name = config["name"]
    response = http.put(f"/connectors/{name}/config", json=config)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error_code"] == 400
    assert NONE_REFUSES_JAAS in body["message"]
    assert "1 error(s)" in body["message"]
    assert SECRET not in response.text
    assert http.get(f"/connectors/{name}").status_code == 404  # nothing was stored
    # POST is refused the same way, and so is an update of an existing connector.
    response = http.post("/connectors", json={"name": name, "config": config})
    assert response.status_code == 400 and NONE_REFUSES_JAAS in response.json()["message"]
    plain = {**_source(tmp_path), "name": name}
    assert http.put(f"/connectors/{name}/config", json=plain).status_code == 201
    response = http.put(f"/connectors/{name}/config", json=config)
    assert response.status_code == 400, response.text
    assert "producer.override" not in str(http.get(f"/connectors/{name}/config").json())
    assert http.delete(f"/connectors/{name}").status_code == 204


def test_validate_reports_each_refused_override_on_its_own_key(http: httpx.Client) -> None:
    config = {
        "name": _name("pol"),
        "connector.class": "FileStreamSource",
        "topic": "t",
        "file": "/tmp/in.txt",
        "producer.override.sasl.jaas.config": JAAS,
        "producer.override.linger.ms": "5",
        # Used by a source only when it creates topics: not checked without topic.creation.*.
        "admin.override.request.timeout.ms": "1000",
        # A source has no consumer here (as Kafka: its overrides are not checked).
        "consumer.override.fetch.min.bytes": "5",
    }
    response = http.put("/connector-plugins/FileStreamSource/config/validate", json=config)
    assert response.status_code == 200, response.text
    body = response.json()
    assert SECRET not in response.text
    assert body["error_count"] == 2
    assert _errors(body) == {
        "producer.override.sasl.jaas.config": [NONE_REFUSES_JAAS],
        "producer.override.linger.ms": [
            "The 'None' policy does not allow 'linger.ms' to be overridden in the connector "
            "configuration."
        ],
    }
    with_topic_creation = {
        **config,
        "topic.creation.default.partitions": "1",
        "topic.creation.default.replication.factor": "1",
    }
    response = http.put(
        "/connector-plugins/FileStreamSource/config/validate", json=with_topic_creation
    )
    assert set(_errors(response.json())) == {
        "producer.override.sasl.jaas.config",
        "producer.override.linger.ms",
        "admin.override.request.timeout.ms",
    }
    # A source's own offsets topic is created with its admin overrides: checked as well.
    with_offsets_topic = {**config, "offsets.storage.topic": "pol-offsets"}
    response = http.put(
        "/connector-plugins/FileStreamSource/config/validate", json=with_offsets_topic
    )
    assert "admin.override.request.timeout.ms" in _errors(response.json())


def test_a_sink_is_checked_for_its_consumer_and_its_dead_letter_queue_clients(
    http: httpx.Client, tmp_path: Path
) -> None:
    plain = _sink(tmp_path, **{"producer.override.linger.ms": "5"})  # no DLQ: no producer
    response = http.put("/connector-plugins/FileStreamSink/config/validate", json=plain)
    assert response.json()["error_count"] == 0, response.text
    dlq = _sink(
        tmp_path,
        **{
            "consumer.override.sasl.jaas.config": JAAS,
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": "dlq",
            "errors.deadletterqueue.topic.replication.factor": "1",
            "producer.override.linger.ms": "5",
            "admin.override.request.timeout.ms": "1000",
        },
    )
    response = http.put("/connector-plugins/FileStreamSink/config/validate", json=dlq)
    assert set(_errors(response.json())) == {
        "consumer.override.sasl.jaas.config",
        "producer.override.linger.ms",
        "admin.override.request.timeout.ms",
    }
    assert SECRET not in response.text


def test_the_principal_policy_allows_only_the_principal_keys(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path
) -> None:
    with (
        RestWorker(tmp_path, bootstrap_servers, bundled_plugin_path, {POLICY: "Principal"}) as w,
        w.client() as http,
    ):
        config = _source(
            tmp_path,
            **{
                "producer.override.sasl.jaas.config": JAAS,
                "producer.override.sasl.mechanism": "PLAIN",
                "producer.override.security.protocol": "PLAINTEXT",
                "producer.override.linger.ms": "5",
            },
        )
        response = http.put("/connector-plugins/FileStreamSource/config/validate", json=config)
        assert _errors(response.json()) == {
            "producer.override.linger.ms": [
                "The 'Principal' policy does not allow 'linger.ms' to be overridden in the "
                "connector configuration."
            ]
        }
        del config["producer.override.linger.ms"]
        response = http.put("/connector-plugins/FileStreamSource/config/validate", json=config)
        assert response.json()["error_count"] == 0, response.text


def _write_props(path: Path, props: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def _standalone(*files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "core.cli", "standalone", *map(str, files)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_standalone_refuses_an_unknown_policy_and_a_refused_override_in_a_connector_file(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path
) -> None:
    worker = {
        "bootstrap.servers": bootstrap_servers,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "offset.storage.file.filename": str(tmp_path / "connect.offsets"),
        "plugin.path": str(bundled_plugin_path),
        "listeners": "http://127.0.0.1:0",
    }
    bogus = _write_props(tmp_path / "bogus.properties", {**worker, POLICY: "Bogus"})
    proc = _standalone(bogus)
    assert proc.returncode != 0
    assert POLICY in proc.stderr and "Bogus" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr

    # Kafka's class name for the policy works as well as its alias.
    none = _write_props(
        tmp_path / "none.properties",
        {
            **worker,
            POLICY: f"{KAFKA_POLICIES}.NoneConnectorClientConfigOverridePolicy",
        },
    )
    source = _write_props(
        tmp_path / "source.properties",
        _source(tmp_path, **{"producer.override.sasl.jaas.config": JAAS}),
    )
    proc = _standalone(none, source)
    assert proc.returncode == 1, proc.stderr
    assert f"{source}: producer.override.sasl.jaas.config: {NONE_REFUSES_JAAS}" in proc.stderr
    assert SECRET not in proc.stderr + proc.stdout
    assert not (tmp_path / "connect.offsets").exists()  # nothing was started


@pytest.mark.apache_kafka_only(reason="distributed mode reads Kafka's high watermarks")
def test_the_distributed_leader_refuses_a_refused_override(
    broker: KafkaCluster, bundled_plugin_path: Path, tmp_path: Path
) -> None:
    cluster = DistributedCluster(
        tmp_path, broker.bootstrap_servers, bundled_plugin_path, 1, extra={POLICY: "None"}
    )
    try:
        cluster.start()
        config = _source(tmp_path, **{"producer.override.sasl.jaas.config": JAAS})
        name = config["name"]
        response = cluster.request("PUT", f"/connectors/{name}/config", json=config)
        assert response.status_code == 400, response.text
        assert NONE_REFUSES_JAAS in response.json()["message"]
        assert SECRET not in response.text
        assert cluster.request("GET", f"/connectors/{name}").status_code == 404
        response = cluster.request(
            "PUT", "/connector-plugins/FileStreamSource/config/validate", json=config
        )
        assert _errors(response.json()) == {
            "producer.override.sasl.jaas.config": [NONE_REFUSES_JAAS]
        }
    finally:
        cluster.stop()
