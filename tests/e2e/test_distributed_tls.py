"""A distributed cluster whose REST listeners are https with certificates from a private CA:
the workers' requests to each other (a follower forwarding to the leader, task configs sent to
the leader) verify the leader with the worker's truststore and present its keystore as a client
certificate, as Kafka's RestClient does (core/rest/internal_client.py).

Before, those requests verified against the system's CAs only and presented no certificate:
every request a follower had to forward failed with 500 "IO Error trying to forward REST
request: ConnectError: ... certificate verify failed", and a follower running a connector could
never send its task configs.
"""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import DistributedCluster
from tests.support.tls import make_certs

pytestmark = [
    pytest.mark.integration,
    pytest.mark.apache_kafka_only(reason="distributed mode reads Kafka's high watermarks"),
]

WORKERS = 2
# Connectors created through the follower: with two of them on two workers, one instance runs
# on the follower, which sends the leader its task configs.
CONNECTORS = 2


def _tls_props(certs: Path, client_auth: str) -> dict[str, str]:
    """Every worker: the server certificate (signed by the private CA, naming 127.0.0.1) as
    keystore, the CA as truststore; the same keys, prefixed, serve the listener and its
    requests to other workers."""
    return {
        "listeners": "https://127.0.0.1:0",
        "listeners.https.ssl.keystore.type": "PEM",
        "listeners.https.ssl.keystore.location": str(certs / "server.pem"),
        "listeners.https.ssl.truststore.type": "PEM",
        "listeners.https.ssl.truststore.location": str(certs / "ca.pem"),
        "listeners.https.ssl.client.auth": client_auth,
    }


@pytest.mark.parametrize("client_auth", ["none", "required"])
def test_a_follower_forwards_to_an_https_leader_signed_by_a_private_ca(
    broker: KafkaCluster, bundled_plugin_path: Path, tmp_path: Path, client_auth: str
) -> None:
    certs = tmp_path / "certs"
    make_certs(certs)
    verify = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    verify.load_cert_chain(certs / "client.pem")  # for ssl.client.auth=required
    cluster = DistributedCluster(
        tmp_path,
        broker.bootstrap_servers,
        bundled_plugin_path,
        WORKERS,
        extra=_tls_props(certs, client_auth),
        verify=verify,
    )
    try:
        cluster.start()
        assert all(url.startswith("https://") for url in cluster.urls)
        leader = cluster.leader()
        follower = 1 - leader
        topic = f"{cluster.group}-tls"
        broker.create_topic(topic, CONNECTORS)
        for i in range(CONNECTORS):
            name = f"tls-{i}"
            config = {
                "connector.class": "FileStreamSink",
                "tasks.max": "1",
                "file": str(tmp_path / f"{name}.txt"),
                "topics": topic,
            }
            response = cluster.request(
                "POST", "/connectors", follower, json={"name": name, "config": config}
            )
            assert response.status_code == 201, (name, response.text)
            assert response.json()["name"] == name
        owners = set()
        for i in range(CONNECTORS):
            status = cluster.wait_running(f"tls-{i}", 1)
            owners.add(status["connector"]["worker_id"])
        # A follower's task configs reached the leader too (the task runs, somewhere).
        assert cluster.worker_id(follower) in owners, owners
        assert "forward" not in cluster.warnings()
        assert "sending task configs" not in cluster.warnings()
    finally:
        cluster.stop()
