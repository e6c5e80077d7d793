"""Distributed mode's requests between workers on Apache Kafka, with 3 ``copycat distributed``
worker processes: connector names that must be encoded in a URL (a follower's task configs
sent to the leader, requests forwarded), checks a follower must leave to the leader, and the
statuses of tasks removed while their worker was down (Kafka's KAFKA-9472).

One cluster serves the module; the test that stops a worker starts it again.
"""

from __future__ import annotations

import gc
import ssl
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from core.distributed.herder import DistributedHerder
from core.offsets import MemoryOffsetStore
from core.plugins import PluginCatalogue
from core.rest.server import RestServer
from core.worker import Worker
from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import DistributedCluster
from tests.support.processes import wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.apache_kafka_only(reason="distributed mode reads Kafka's high watermarks"),
]

WORKERS = 3
# Names a URL path must encode: a query, a fragment, a space and a plus, and a literal
# percent sign that, decoded once too often, names another connector ('pct%41x' -> 'pctAx').
ENCODED_NAMES = ("q?x1", "h#sh", "sp ace+1", "pct%41x")
# Create, delete, create through a follower: the tester's 10 rounds found 1 refusal.
RECREATE_ROUNDS = 20
# Tasks before tasks.max drops to 1: spread over 3 workers, every follower that does not run
# the connector's instance runs a task that the drop removes.
SHRINK_FROM = 6
# Requests a follower forwards to the leader in the one-client test.
FORWARDED_REQUESTS = 20


@pytest.fixture(scope="module")
def cluster(
    broker: KafkaCluster,
    bundled_plugin_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[DistributedCluster]:
    tmp = tmp_path_factory.mktemp("distributed-requests")
    cluster = DistributedCluster(tmp, broker.bootstrap_servers, bundled_plugin_path, WORKERS)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _sink(path: Path, topic: str, tasks: int) -> dict[str, str]:
    return {
        "connector.class": "FileStreamSink",
        "tasks.max": str(tasks),
        "file": str(path),
        "topics": topic,
    }


def _path(name: str) -> str:
    return f"/connectors/{quote(name, safe='')}"


def _worker_index(cluster: DistributedCluster, worker_id: str) -> int:
    return next(i for i in range(len(cluster.workers)) if cluster.worker_id(i) == worker_id)


def test_connectors_whose_names_need_encoding_get_their_tasks_on_any_worker(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    """A follower running such a connector sends its task configs to the leader under the
    encoded name (unencoded, ``q?x1`` reached the leader as ``q`` and was refused with 405
    every second, forever); requests forwarded to the leader keep the name encoded."""
    topic = f"{cluster.group}-names"
    broker.create_topic(topic, 2)
    for i, name in enumerate(ENCODED_NAMES):
        cluster.create(name, _sink(tmp_path / f"out-{i}.txt", topic, 2), via=i % WORKERS)
    owners = {}
    for name in ENCODED_NAMES:
        status = cluster.wait_running(quote(name, safe=""), 2)
        assert status["name"] == name
        owners[name] = _worker_index(cluster, status["connector"]["worker_id"])
    leader = cluster.leader()
    assert set(owners.values()) - {leader}, f"every connector runs on the leader: {owners}"
    follower = next(i for i in range(WORKERS) if i != leader)

    # Through a follower: forwarded to the leader with the name as the user encoded it.
    for i, name in enumerate(ENCODED_NAMES):
        response = cluster.request(
            "PUT",
            _path(name) + "/config",
            follower,
            json=_sink(tmp_path / f"out-{i}.txt", topic, 1),
        )
        assert response.status_code == 200, (name, response.text)
        assert response.json()["name"] == name
    for name in ENCODED_NAMES:
        cluster.wait_running(quote(name, safe=""), 1)
    for name in ENCODED_NAMES:
        response = cluster.request("DELETE", _path(name), follower)
        assert response.status_code == 204, (name, response.text)
    for index in range(WORKERS):
        assert httpx.get(cluster.urls[index] + "/connectors", timeout=30).json() == []
    for name in ENCODED_NAMES:
        for index in range(WORKERS):
            response = httpx.get(cluster.urls[index] + _path(name) + "/status", timeout=30)
            assert response.status_code == 404, (name, index, response.text)
    assert "refused task configs" not in "".join(w.text() for w in cluster.workers)


def test_a_connector_deleted_through_the_leader_can_be_created_at_once_through_a_follower(
    cluster: DistributedCluster, tmp_path: Path
) -> None:
    """The existence check is the leader's, after forwarding, as in Kafka: a follower that
    had not read the deletion yet answered 409 'already exists' from its own copy."""
    leader = cluster.leader()
    follower = next(i for i in range(WORKERS) if i != leader)
    config = _sink(tmp_path / "tmp.txt", f"{cluster.group}-tmp", 1)
    for round_ in range(RECREATE_ROUNDS):
        created = cluster.request("PUT", "/connectors/tmp/config", leader, json=config)
        assert created.status_code == 201, (round_, created.text)
        deleted = cluster.request("DELETE", "/connectors/tmp", leader)
        assert deleted.status_code == 204, (round_, deleted.text)
        again = cluster.request(
            "POST", "/connectors", follower, json={"name": "tmp", "config": config}
        )
        assert again.status_code == 201, (round_, again.text)
        assert cluster.request("DELETE", "/connectors/tmp", leader).status_code == 204


@pytest.mark.parametrize("how", ["kill", "stop"])
def test_statuses_of_tasks_removed_while_their_worker_was_down_are_deleted(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path, how: str
) -> None:
    """tasks.max lowered to 1, within the scheduled delay, while a follower running removed
    tasks is down: the leader deletes the removed tasks' statuses after the next rebalance
    (Kafka's KAFKA-9472), else they stayed for good (RUNNING on the dead worker, or UNASSIGNED
    after a clean stop) and restarts listed them. The victim is a follower (a leader is there
    to write the change at once) not running the connector's instance (which would generate
    the new task configs only once the delay moved it, after the removed tasks had moved to
    live workers, which remove their statuses themselves)."""
    name = f"shrink-{how}"
    topic = f"{cluster.group}-{name}"
    broker.create_topic(topic, 3)
    config = _sink(tmp_path / "out.txt", topic, SHRINK_FROM)
    cluster.create(name, config)
    status = cluster.wait_running(name, SHRINK_FROM)
    leader = cluster.leader()
    instance = _worker_index(cluster, status["connector"]["worker_id"])
    removed_on = {_worker_index(cluster, t["worker_id"]) for t in status["tasks"][1:]}
    candidates = removed_on - {leader, instance}
    assert candidates, f"no follower runs only removed tasks: {status}"
    victim = min(candidates)
    if how == "kill":
        cluster.kill(victim)
    else:
        cluster.stop_workers([victim])
    try:
        response = cluster.request(
            "PUT", f"/connectors/{name}/config", leader, json={**config, "tasks.max": "1"}
        )
        assert response.status_code == 200, response.text

        def task_configs() -> list[int]:
            listed = cluster.request("GET", f"/connectors/{name}/tasks", leader).json()
            return [t["id"]["task"] for t in listed]

        wait_until(lambda: task_configs() == [0], 30, f"{name}: the task config of task 0 only")

        def only_task_0_everywhere_live() -> bool:
            return all(
                [t["id"] for t in cluster.status(name, via=i).get("tasks", [])] == [0]
                for i in range(WORKERS)
                if i != victim
            )

        wait_until(only_task_0_everywhere_live, 60, f"{name}: the status of task 0 only")
    finally:
        cluster.restart(victim)
    cluster.wait_running(name, 1)
    for index in range(WORKERS):
        for task in (1, 2):
            response = httpx.get(
                f"{cluster.urls[index]}/connectors/{name}/tasks/{task}/status", timeout=30
            )
            assert response.status_code == 404, (index, task, response.text)
    restarted = cluster.request("POST", f"/connectors/{name}/restart?includeTasks=true", leader)
    assert restarted.status_code == 202, restarted.text
    assert [t["id"] for t in restarted.json()["tasks"]] == [0]
    assert cluster.request("DELETE", f"/connectors/{name}", leader).status_code == 204


def test_unsigned_or_wrongly_signed_internal_requests_are_refused_without_basic_auth(
    cluster: DistributedCluster, broker: KafkaCluster, tmp_path: Path
) -> None:
    """KIP-507: the internal task config and fencing endpoints answer only requests signed with
    the cluster's session key, whatever the REST listeners require (before, anyone who could
    reach a worker's port could replace a connector's task configs)."""
    topic = f"{cluster.group}-unsigned"
    broker.create_topic(topic, 1)
    cluster.create("guarded", _sink(tmp_path / "guarded.txt", topic, 1))
    cluster.wait_running("guarded", 1)
    before = cluster.request("GET", "/connectors/guarded/tasks").json()
    forged = [{**before[0]["config"], "file": str(tmp_path / "forged.txt")}]
    for index in range(WORKERS):  # the leader refuses, and a follower before forwarding
        url = f"{cluster.workers[index].url}/connectors/guarded"
        unsigned = httpx.post(f"{url}/tasks", json=forged, timeout=30)
        assert unsigned.status_code == 400, unsigned.text
        assert unsigned.json()["message"] == "Internal request missing required signature"
        wrong = httpx.post(
            f"{url}/tasks",
            json=forged,
            headers={
                "X-Connect-Authorization": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
                "X-Connect-Request-Signature-Algorithm": "HmacSHA256",
            },
            timeout=30,
        )
        assert wrong.status_code == 403, wrong.text
        fence = httpx.put(f"{url}/fence", timeout=30)
        assert fence.status_code == 400, fence.text
    assert cluster.request("GET", "/connectors/guarded/tasks").json() == before


def _ssl_contexts() -> int:
    return sum(isinstance(o, ssl.SSLContext) for o in gc.get_objects())


def test_requests_a_follower_forwards_to_the_leader_share_one_client(
    cluster: DistributedCluster, tmp_path: Path
) -> None:
    """Found by a churn soak: a follower's RSS grew ~22 MB a minute, its cyclic garbage full of
    sockets, transports and SSLContexts (~0.8 MB each), because every request it forwarded
    made a client of its own (httpx.request), freed only by a full garbage collection.

    The follower here is a real DistributedHerder and REST server in this process, so its
    objects can be counted, that never joins the group: it is told the leader's URL, as a
    rebalance would tell it, and forwards what only the leader may do to the cluster's leader.
    """
    props = {**cluster.props, "listeners": "http://127.0.0.1:0"}
    herder = DistributedHerder(None, worker_props=props)
    herder.worker = Worker(
        "follower",
        props,
        PluginCatalogue([]),
        MemoryOffsetStore(),
        client_props={"bootstrap.servers": props["bootstrap.servers"]},
    )
    herder._leader_url = cluster.urls[cluster.leader()]
    server = RestServer(herder, herder.config)
    server.start()
    gc.collect()
    gc.disable()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            before = _ssl_contexts()
            for i in range(FORWARDED_REQUESTS):
                # Only the leader resets offsets: it answers, for a connector it does not know.
                answer = http.delete(f"/connectors/absent-{i}/offsets")
                assert answer.status_code == 404, answer.text
                assert answer.json()["message"] == f"Connector absent-{i} not found"
            made = _ssl_contexts() - before
        assert made == 0, f"{made} SSL contexts made by {FORWARDED_REQUESTS} forwarded requests"
    finally:
        gc.enable()
        server.stop()
        herder.shutdown()
