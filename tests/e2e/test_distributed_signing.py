"""Signed internal requests (KIP-507) between ``copycat distributed`` workers on Apache Kafka,
with the REST API behind basic auth.

Two workers with ``BasicAuthSecurityRestExtension``: a connector whose instance runs on the
follower gets its tasks (the follower's ``POST /connectors/<name>/tasks`` to the leader carries
no user's credentials: basic auth lets it through, as Kafka's ``JaasBasicAuthFilter`` does, and
the leader checks its signature instead). From outside, the same request unsigned is refused
with 400, wrongly signed with 403, as Kafka's ``DistributedHerder`` answers; signed with the
session key the leader wrote to the config topic (in Kafka Connect's record format) it is
accepted. The key never reaches a log.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import (
    DistributedCluster,
    session_key,
    session_keys,
    signed,
)
from tests.support.processes import wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.apache_kafka_only(reason="distributed mode reads Kafka's high watermarks"),
]

BASIC_AUTH = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
USER = ("alice", "wonderland")
WORKERS = 2
# Connectors created: the assignor spreads connector instances round-robin, so with two workers
# at least one instance runs on the follower.
CONNECTORS = 3
# inter.worker.key.ttl.ms: short, so the test sees the leader rotate the key (Kafka: 1 hour).
KEY_TTL_MS = 8_000


@pytest.fixture(scope="module")
def cluster(
    broker: KafkaCluster,
    bundled_plugin_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[DistributedCluster]:
    tmp = tmp_path_factory.mktemp("distributed-signing")
    credentials = tmp / "credentials.properties"
    credentials.write_text(f"{USER[0]}: {USER[1]}\n")
    cluster = DistributedCluster(
        tmp,
        broker.bootstrap_servers,
        bundled_plugin_path,
        WORKERS,
        extra={
            "rest.extension.classes": BASIC_AUTH,
            "rest.extension.basic.auth.credentials.file": str(credentials),
            "inter.worker.key.ttl.ms": str(KEY_TTL_MS),
        },
        auth=USER,
    )
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _sink(path: Path, topic: str) -> dict[str, str]:
    return {
        "connector.class": "FileStreamSink",
        "tasks.max": "1",
        "file": str(path),
        "topics": topic,
    }


def test_connectors_on_the_follower_get_their_tasks_behind_basic_auth(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    """Before signing, the follower's task configs were refused with 401 every second and its
    connectors stayed RUNNING with no tasks."""
    topic = f"{cluster.group}-follower"
    broker.create_topic(topic, 1)
    names = [f"fw{i}" for i in range(CONNECTORS)]
    for i, name in enumerate(names):
        cluster.create(name, _sink(tmp_path / f"{name}.txt", topic), via=i % WORKERS)
    for name in names:
        cluster.wait_running(name, 1)
    leader = cluster.worker_id(cluster.leader())
    owners = {cluster.status(name)["connector"]["worker_id"] for name in names}
    assert owners - {leader}, f"no connector ran on the follower: {owners}"
    assert "refused task configs" not in cluster.warnings()


def test_internal_requests_must_carry_the_session_keys_signature(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    topic = f"{cluster.group}-internal"
    broker.create_topic(topic, 1)
    cluster.create("target", _sink(tmp_path / "target.txt", topic))
    cluster.wait_running("target", 1)
    before = cluster.request("GET", "/connectors/target/tasks").json()
    record = session_key(cluster, broker)
    # Kafka's record: {"key": base64, "algorithm": ..., "creation-timestamp": ms}
    assert sorted(record) == ["algorithm", "creation-timestamp", "key"], sorted(record)
    assert record["algorithm"] == "HmacSHA256"
    assert isinstance(record["creation-timestamp"], int)
    key = base64.b64decode(record["key"])
    assert len(key) == 32  # HmacSHA256's default key size, 256 bits

    leader_url = cluster.workers[cluster.leader()].url
    forged_file = str(tmp_path / "forged.txt")
    forged = [{**before[0]["config"], "file": forged_file}]
    body = json.dumps(forged).encode()
    url = f"{leader_url}/connectors/target/tasks"
    json_type = {"Content-Type": "application/json"}

    unsigned = httpx.post(url, content=body, headers=json_type, timeout=30)
    assert unsigned.status_code == 400, unsigned.text
    assert unsigned.json()["message"] == "Internal request missing required signature"

    wrong = httpx.post(
        url, content=body, headers={**json_type, **signed(b"not the key", body)}, timeout=30
    )
    assert wrong.status_code == 403, wrong.text
    assert wrong.json() == {
        "error_code": 403,
        "message": "Internal request contained invalid signature.",
    }
    # Signed over other bytes than those sent: refused too.
    other = httpx.post(
        url, content=body, headers={**json_type, **signed(key, body + b" ")}, timeout=30
    )
    assert other.status_code == 403, other.text
    # An algorithm outside inter.worker.verification.algorithms (default: HmacSHA256 only).
    sha1 = httpx.post(
        url, content=body, headers={**json_type, **signed(key, body, "HmacSHA1")}, timeout=30
    )
    assert sha1.status_code == 400, sha1.text
    assert "'HmacSHA1' key signing algorithm" in sha1.json()["message"]
    assert "configured to use: [HmacSHA256]." in sha1.json()["message"]  # a Java list
    # Zombie fencing is internal too.
    fence = httpx.put(f"{leader_url}/connectors/target/fence", timeout=30)
    assert fence.status_code == 400, fence.text
    assert cluster.request("GET", "/connectors/target/tasks").json() == before

    # Signed with the key from the config topic, as a worker signs: accepted (once the leader
    # rotated the key, 403: read the new one and sign again).
    def accepted() -> bool:
        key = base64.b64decode(session_key(cluster, broker)["key"])
        headers = {**json_type, **signed(key, body)}
        answer = httpx.post(url, content=body, headers=headers, timeout=30)
        assert answer.status_code in (204, 403), answer.text
        return answer.status_code == 204

    wait_until(accepted, 30, "a request signed with the session key accepted")
    wait_until(
        lambda: (
            cluster.request("GET", "/connectors/target/tasks").json()[0]["config"]["file"]
            == forged_file
        ),
        30,
        "the signed task configs written",
    )
    for worker in cluster.workers:
        assert record["key"] not in worker.text()  # the key is never logged


def test_the_leader_rotates_the_key_and_followers_sign_with_the_new_one(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    first = session_key(cluster, broker)
    rotated = wait_until(
        lambda: [
            k
            for k in session_keys(cluster, broker)
            if k["creation-timestamp"] > first["creation-timestamp"]
        ],
        KEY_TTL_MS / 1000 * 3,
        "a new session key after inter.worker.key.ttl.ms",
    )
    assert rotated[0]["creation-timestamp"] >= first["creation-timestamp"] + KEY_TTL_MS
    assert rotated[0]["key"] != first["key"]
    # Followers sign with the new key: connectors created now still get their tasks.
    topic = f"{cluster.group}-rotated"
    broker.create_topic(topic, 1)
    names = [f"rot{i}" for i in range(CONNECTORS)]
    for i, name in enumerate(names):
        cluster.create(name, _sink(tmp_path / f"{name}.txt", topic), via=i % WORKERS)
    for name in names:
        cluster.wait_running(name, 1)
    for worker in cluster.workers:
        assert all(k["key"] not in worker.text() for k in rotated)


def test_below_sessioned_the_cluster_neither_signs_nor_verifies_as_kafka(
    broker: KafkaCluster, bundled_plugin_path: Path, tmp_path: Path
) -> None:
    """``connect.protocol=compatible`` (Kafka's protocol before KIP-507): no session key is
    written and unsigned internal requests are accepted, with a warning saying the cluster is
    insecure."""
    single = DistributedCluster(
        tmp_path / "compatible",
        broker.bootstrap_servers,
        bundled_plugin_path,
        1,
        extra={"connect.protocol": "compatible"},
    )
    try:
        single.start()
        topic = f"{single.group}-compatible"
        broker.create_topic(topic, 1)
        single.create("plain", _sink(tmp_path / "plain.txt", topic))
        single.wait_running("plain", 1)
        tasks = single.request("GET", "/connectors/plain/tasks").json()
        unsigned = httpx.post(
            f"{single.urls[0]}/connectors/plain/tasks",
            json=[t["config"] for t in tasks],
            timeout=30,
        )
        assert unsigned.status_code == 204, unsigned.text
        assert session_keys(single, broker) == []
        assert "Internal request verification will be disabled" in single.workers[0].text()
    finally:
        single.stop()
