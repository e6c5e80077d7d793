"""The URL a distributed worker advertises to the others (the leader's URL followers forward
writes and send task configs to, the ``worker_id`` of statuses) is Kafka's
``RestServer.advertisedUrl()``: ``rest.advertised.listener`` (else http if any listener is
http) picks the listener, ``rest.advertised.host.name`` and ``rest.advertised.port`` override
its host and port. And a write a follower forwards answers with a ``Location`` built on the
URI the client called, as Kafka's ConnectorsResource builds it, not the leader's.

Before, the advertised URL was the first listener's, a wildcard host turned into
``localhost``, whatever the ``rest.advertised.*`` settings said: with a certificate naming the
advertised 127.0.0.1 only, every forwarded write failed with 500 "Hostname mismatch, certificate
is not valid for 'localhost'" and a follower's connector never got its tasks; with
``rest.advertised.listener=https`` the user's writes (and their Authorization header) were
forwarded over the plain http listener; and a forwarded create answered with
``Location: http://<the leader's listener>/connectors/...``.
"""

from __future__ import annotations

import contextlib
import re
import ssl
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import DistributedCluster
from tests.support.rest import RestWorker, wait_for
from tests.support.tls import make_certs

pytestmark = [
    pytest.mark.integration,
    pytest.mark.apache_kafka_only(reason="distributed mode reads Kafka's high watermarks"),
]

WORKERS = 2
# With two connectors on two workers, one runs on the follower, which sends the leader its
# task configs at the leader's advertised URL.
CONNECTORS = 2
_LISTENING = re.compile(r"REST server listening on (\S+), (https://[^\s,]+)")


def _tls(certs: Path) -> dict[str, str]:
    return {
        "listeners.https.ssl.keystore.type": "PEM",
        "listeners.https.ssl.keystore.location": str(certs / "server.pem"),
        "listeners.https.ssl.truststore.type": "PEM",
        "listeners.https.ssl.truststore.location": str(certs / "ca.pem"),
    }


def _sink(tmp_path: Path, name: str, topic: str) -> dict[str, str]:
    return {
        "connector.class": "FileStreamSink",
        "tasks.max": "1",
        "file": str(tmp_path / f"{name}.txt"),
        "topics": topic,
    }


@contextlib.contextmanager
def _tls_cluster(
    broker: KafkaCluster,
    plugin_path: Path,
    tmp_path: Path,
    listeners: dict[str, str],
    verify: ssl.SSLContext | bool = True,
) -> Iterator[DistributedCluster]:
    """WORKERS workers with ``listeners`` (and ``rest.advertised.*`` settings), the https one's
    keystore and truststore from ``tmp_path / "certs"``, started; stopped on the way out."""
    cluster = DistributedCluster(
        tmp_path,
        broker.bootstrap_servers,
        plugin_path,
        WORKERS,
        extra={**listeners, **_tls(tmp_path / "certs")},
        verify=verify,
    )
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _assert_no_failed_forward(cluster: DistributedCluster) -> None:
    """No worker warned of a request it failed to forward or task configs it failed to send."""
    assert "forward" not in cluster.warnings()
    assert "sending task configs" not in cluster.warnings()


def test_followers_reach_the_leader_at_its_advertised_host_name(
    broker: KafkaCluster, bundled_plugin_path: Path, tmp_path: Path
) -> None:
    certs = tmp_path / "certs"
    make_certs(certs, server_hosts=["127.0.0.1"])  # not "localhost"
    # The test's own requests check the CA only: they go to the bound listener, whatever
    # it is called; the workers' requests to each other check host names.
    verify = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    verify.check_hostname = False
    listeners = {"listeners": "https://0.0.0.0:0", "rest.advertised.host.name": "127.0.0.1"}
    with _tls_cluster(broker, bundled_plugin_path, tmp_path, listeners, verify) as cluster:
        leader = cluster.leader()
        follower = 1 - leader
        advertised = [f"127.0.0.1:{urlsplit(url).port}" for url in cluster.urls]
        topic = f"{cluster.group}-adv"
        broker.create_topic(topic, CONNECTORS)
        for i in range(CONNECTORS):
            name = f"adv-{i}"
            response = cluster.request(
                "POST",
                "/connectors",
                follower,
                json={"name": name, "config": _sink(tmp_path, name, topic)},
            )
            assert response.status_code == 201, (name, response.text)
        assert f"leader https://{advertised[leader]})" in cluster.workers[follower].text()
        owners = {cluster.wait_running(f"adv-{i}", 1)["connector"]["worker_id"] for i in range(2)}
        assert advertised[follower] in owners, owners
        assert owners <= set(advertised), owners
        _assert_no_failed_forward(cluster)


def test_the_advertised_listener_is_the_one_forwarded_to_and_location_is_the_callers(
    broker: KafkaCluster, bundled_plugin_path: Path, tmp_path: Path
) -> None:
    certs = tmp_path / "certs"
    make_certs(certs)
    listeners = {
        "listeners": "http://127.0.0.1:0,https://127.0.0.1:0",
        "rest.advertised.listener": "https",
    }
    with _tls_cluster(broker, bundled_plugin_path, tmp_path, listeners) as cluster:
        leader = cluster.leader()
        follower = 1 - leader
        https = []
        for worker in cluster.workers:
            found = _LISTENING.search(worker.text())
            assert found is not None, worker.text()[-2000:]
            https.append(found.group(2))
        topic = f"{cluster.group}-loc"
        broker.create_topic(topic, CONNECTORS)
        # Through the follower's http listener, as a client behind a proxy calls it.
        host = {"Host": "connect.example.com"}
        created = cluster.request(
            "POST",
            "/connectors",
            follower,
            headers=host,
            json={"name": "loc-0", "config": _sink(tmp_path, "loc-0", topic)},
        )
        assert created.status_code == 201, created.text
        assert created.headers["location"] == "http://connect.example.com/connectors/loc-0"
        put = cluster.request(
            "PUT",
            "/connectors/loc%201/config",
            follower,
            headers=host,
            json=_sink(tmp_path, "loc-1", topic),
        )
        assert put.status_code == 201, put.text
        assert put.headers["location"] == "http://connect.example.com/connectors/loc%201"
        assert f"leader {https[leader]})" in cluster.workers[follower].text()
        owners = {
            cluster.wait_running(name, 1)["connector"]["worker_id"] for name in ("loc-0", "loc 1")
        }
        assert owners <= {url.split("://", 1)[1] for url in https}, owners
        _assert_no_failed_forward(cluster)


def test_an_ipv6_listener_names_its_worker_as_a_uri_names_its_host(
    broker: KafkaCluster, bundled_plugin_path: Path, tmp_path: Path
) -> None:
    with RestWorker(
        tmp_path, broker.bootstrap_servers, bundled_plugin_path, {"listeners": "http://[::1]:0"}
    ) as worker:
        port = urlsplit(worker.url).port
        config = _sink(tmp_path, "v6", "v6")
        with worker.client() as http:
            assert http.post("/connectors", json={"name": "v6", "config": config}).is_success
            status = wait_for(
                lambda: http.get("/connectors/v6/status").json().get("connector"), what="status"
            )
        assert status["worker_id"] == f"[::1]:{port}"
        assert worker.server.advertised_url == f"http://[::1]:{port}"
