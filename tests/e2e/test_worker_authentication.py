"""A worker whose own credentials the cluster refuses exits at start-up at once, saying so.

``copycat standalone`` against a real Apache Kafka's SASL_PLAINTEXT listener with a wrong
``sasl.password``: it used to wait out default.api.timeout.ms and exit with "Broker transport
failure", which sent operators looking for a network problem. And a sink's offsets are reached
with its own admin client settings, as Kafka's Worker reaches them.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.support.apache_kafka import SASL_PASSWORD, SASL_USER, KafkaCluster
from tests.support.kafka import committed
from tests.support.rest import RestWorker, wait_for

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
WRONG_PASSWORD = "WrongPw-not-in-any-output"
TIMEOUT_MS = 60_000
# Interpreter start-up, reading the plugins and librdkafka's first login (~0.3 s); a loaded
# 2-core machine takes a few seconds of it. Far below TIMEOUT_MS either way.
EXITS_WITHIN_S = 30.0
# A refused login is seen within about a second (the admin client's error callback is served
# once a second); a cluster that does not answer is waited for 30 s. Slack for a busy machine.
REFUSED_WITHIN_S = 15.0


def test_a_worker_whose_password_is_refused_exits_at_once_naming_authentication(
    tmp_path: Path, sasl_kafka: dict[str, str], bundled_plugin_path: Path
) -> None:
    worker = tmp_path / "worker.properties"
    props = {
        "bootstrap.servers": sasl_kafka["sasl"],
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": SASL_USER,
        "sasl.password": WRONG_PASSWORD,
        "default.api.timeout.ms": str(TIMEOUT_MS),
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "offset.storage.file.filename": str(tmp_path / "connect.offsets"),
        "plugin.path": str(bundled_plugin_path),
        "listeners": "http://127.0.0.1:0",
    }
    worker.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "core.cli", "standalone", str(worker)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_MS / 1000 + 60,
    )
    elapsed = time.monotonic() - started
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert elapsed < EXITS_WITHIN_S, elapsed
    errors = [line for line in proc.stderr.splitlines() if line.startswith("copycat: error:")]
    assert len(errors) == 1, proc.stderr[-3000:]
    assert "Authentication failed: Invalid username or password" in errors[0], errors[0]
    assert f"bootstrap.servers={sasl_kafka['sasl']}" in errors[0], errors[0]
    assert "Traceback" not in proc.stderr
    assert WRONG_PASSWORD not in proc.stderr + proc.stdout


def test_a_sinks_offsets_are_read_and_altered_with_its_admin_overrides(
    tmp_path: Path, sasl_kafka: dict[str, str], bundled_plugin_path: Path
) -> None:
    """Kafka's Worker reaches a sink's consumer group with the connector's admin client
    settings (the worker's, then ``admin.override.*``): a sink that reads another cluster or
    logs in as another principal has its offsets there. Copycat used the worker's settings
    alone, so a refused admin password went unnoticed and another cluster's group was never
    asked. Here the worker logs in; the sink's admin override's password is refused."""
    cluster = KafkaCluster(sasl_kafka["plaintext"])
    topic = f"admin-override-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, 1)
    producer = Producer({"bootstrap.servers": sasl_kafka["plaintext"]})
    for value in (b"a", b"b", b"c"):
        producer.produce(topic, value)
    producer.flush(30)
    login = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": SASL_USER,
        "sasl.password": SASL_PASSWORD,
        "offset.flush.interval.ms": "500",
    }
    name = f"sink-{topic}"
    sink = {
        "connector.class": "FileStreamSink",
        "topics": topic,
        "file": str(tmp_path / "out.txt"),
        "admin.override.sasl.password": WRONG_PASSWORD,
    }
    with RestWorker(tmp_path, sasl_kafka["sasl"], bundled_plugin_path, login) as worker:
        with worker.client() as client:
            assert (
                client.post("/connectors", json={"name": name, "config": sink}).status_code == 201
            )
            wait_for(
                lambda: committed(sasl_kafka["plaintext"], f"connect-{name}", topic) == 3,
                60,
                "the sink's commit of its three records",
            )
            assert client.put(f"/connectors/{name}/stop").status_code == 204
            refused = client.get(f"/connectors/{name}/offsets")
            assert refused.status_code == 500, refused.text
            assert "Authentication failed" in refused.json()["message"], refused.text
            assert refused.elapsed.total_seconds() < REFUSED_WITHIN_S, refused.elapsed
            assert WRONG_PASSWORD not in refused.text
            patch = {"offsets": [{"partition": _partition(topic), "offset": {"kafka_offset": 1}}]}
            assert client.patch(f"/connectors/{name}/offsets", json=patch).status_code == 500
            assert committed(sasl_kafka["plaintext"], f"connect-{name}", topic) == 3
            # The right password in the override: the group is read and altered.
            sink["admin.override.sasl.password"] = SASL_PASSWORD
            assert client.put(f"/connectors/{name}/config", json=sink).status_code == 200
            assert client.patch(f"/connectors/{name}/offsets", json=patch).status_code == 200
            answer = client.get(f"/connectors/{name}/offsets")
            assert answer.json() == {
                "offsets": [{"partition": _partition(topic), "offset": {"kafka_offset": 1}}]
            }


def _partition(topic: str) -> dict[str, object]:
    return {"kafka_topic": topic, "kafka_partition": 0}
