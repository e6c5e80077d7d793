"""The restart API (KIP-745) of a distributed worker, on Copycat and on Apache Kafka Connect
4.1.1 distributed workers side by side: the answers a client parses must be the same.

* A connector the cluster does not know: Kafka's distributed herder says ``Unknown connector:
  <name>`` to both restarts and to a task restart, and ``Unknown connector <name>`` (no colon)
  to pause and resume (its AbstractHerder) and to stop. Copycat said ``Connector <name> not
  found`` to all six (the wording of Kafka's GET, config and delete answers).
* ``includeTasks`` and ``onlyFailed`` (and ``connectorsOnly`` of the plugin list) are read as
  Kafka's Jersey reads a boolean query parameter: ``Boolean.parseBoolean`` of the first value
  given, so ``" true"`` is false and ``?includeTasks=true&includeTasks=false`` restarts the
  tasks. Copycat trimmed the value and took the last one.

Found by an exploratory side-by-side run of two-worker clusters; one worker each is enough
here (the checks come before any forwarding, on both).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.differential import DistributedPeers, running_file_source

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]


UNKNOWN = [
    ("POST", "/restart"),
    ("POST", "/restart?includeTasks=true&onlyFailed=true"),
    ("POST", "/tasks/0/restart"),
    ("PUT", "/pause"),
    ("PUT", "/resume"),
    ("PUT", "/stop"),
]


@pytest.mark.parametrize(("method", "suffix"), UNKNOWN, ids=[f"{m} {s}" for m, s in UNKNOWN])
def test_unknown_connector_answers_are_kafkas(
    distributed_pair: DistributedPeers, method: str, suffix: str
) -> None:
    answers = {}
    for peer in distributed_pair.both():
        with peer.client() as client:
            response = client.request(method, f"/connectors/restart-unknown{suffix}")
        answers[peer.name] = (response.status_code, response.json())
    assert answers["Copycat"] == answers["Kafka Connect"]


QUERIES = [
    "includeTasks=%20true",
    "includeTasks=true%20",
    "includeTasks=true&includeTasks=false",
    "includeTasks=false&includeTasks=true",
    "includeTasks=true&onlyFailed=true&onlyFailed=false",
]


@pytest.mark.parametrize("query", QUERIES)
def test_restart_query_values_are_read_as_kafka_reads_them(
    distributed_pair: DistributedPeers, tmp_path: Path, query: str
) -> None:
    """Which restart a query asks for shows in the answer: 204 (the instance only) or 202
    with RESTARTING on what is planned (on a RUNNING connector, only with onlyFailed=false)."""
    name = f"restart-query-{QUERIES.index(query)}"
    answers = {}
    for peer in distributed_pair.both():
        with peer.client() as client, running_file_source(client, name, tmp_path, "restart-query"):
            response = client.post(f"/connectors/{name}/restart?{query}")
        body = response.json() if response.status_code == 202 else None
        states = (
            None
            if body is None
            else [body["connector"]["state"], *(t["state"] for t in body["tasks"])]
        )
        answers[peer.name] = (response.status_code, states)
    assert answers["Copycat"] == answers["Kafka Connect"]


@pytest.mark.parametrize(
    "query", ["connectorsOnly=%20true", "connectorsOnly=false&connectorsOnly=true"]
)
def test_connectors_only_is_read_as_kafka_reads_it(
    distributed_pair: DistributedPeers, query: str
) -> None:
    """The other boolean query parameter, read the same way: whether the plugin list holds
    only connectors (the plugins themselves differ between the two)."""
    only_connectors = {}
    for peer in distributed_pair.both():
        with peer.client() as client:
            response = client.get(f"/connector-plugins?{query}")
        assert response.status_code == 200, f"{peer.name}: {response.text}"
        kinds = {plugin["type"] for plugin in response.json()}
        only_connectors[peer.name] = kinds <= {"source", "sink"}
    assert only_connectors["Copycat"] == only_connectors["Kafka Connect"]
