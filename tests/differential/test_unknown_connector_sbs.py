"""What a standalone worker answers for a connector or task it does not know, on Copycat and
on Apache Kafka Connect 4.1.1 standalone: the status code and the exact message, per request.

Kafka's standalone herder words the 404 per request: ``Connector <name> not found`` for most,
``Unknown connector: <name>`` for a KIP-745 restart (with ``includeTasks`` or
``onlyFailed``), ``Unknown connector <name>`` (no colon) for pause and resume (its
AbstractHerder), ``Task <name>-<n> not found`` for a task restart of a task the connector does
not have; a task id that is not a number is Jersey's ``HTTP 404 Not Found`` (Copycat said 400,
a validation error). Clients that match on the message see the same text on both. Copycat said
``Connector <name> not found`` and ``Unknown task: <name>-<n>`` (the distributed herder's
wording) throughout. tests/differential/test_distributed_restart_sbs.py holds the distributed
herder's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.differential import Peer, running_file_source

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

REQUESTS = [
    ("GET", ""),
    ("GET", "/status"),
    ("GET", "/config"),
    ("GET", "/tasks"),
    ("GET", "/tasks/0/status"),
    ("GET", "/offsets"),
    ("DELETE", ""),
    ("POST", "/restart?includeTasks=true"),
    ("POST", "/restart?includeTasks=true&onlyFailed=true"),
    ("POST", "/restart?onlyFailed=true"),
    ("PUT", "/pause"),
    ("PUT", "/resume"),
    # A task id that is not a number names no resource: Jersey's plain 404.
    ("GET", "/tasks/abc/status"),
    ("POST", "/tasks/abc/restart"),
    ("POST", "/tasks/1.5/restart"),
]

# Kafka Connect 4.1.1 standalone completes these with its 404 and then goes on (no return after
# the callback in StandaloneHerder.restartConnector and restartTask) into an error its REST
# layer answers 500 first ('Cannot invoke "java.util.Map.get(Object)" because "connProps" is
# null', 'Failed to start task ... since it is not a recognizable type'). Copycat answers the
# 404 (docs/rest.md).
KAFKA_500S = {
    ("POST", "/restart"): "Connector unknown-sbs not found",
    ("POST", "/tasks/0/restart"): "Connector unknown-sbs not found",
    # Its stop of an unknown connector fails with a plain ConnectException ("No connector
    # `unknown-sbs` configured"), which its REST layer answers as a 500; found by a randomized
    # REST comparison.
    ("PUT", "/stop"): "Connector unknown-sbs not found",
}


# Kafka Connect answers these for any name, known or not (its herder reads the status store's
# topics without looking the connector up): 200 {"<name>": {"topics": []}} and a 202. Copycat
# answers the 404 of every other request about an unknown connector (docs/rest.md).
KAFKA_ANY_NAME = {
    ("GET", "/topics"): 200,
    ("PUT", "/topics/reset"): 202,
}


def _answer(peer: Peer, method: str, path: str) -> tuple[int, object]:
    with peer.client() as client:
        response = client.request(method, path)
    return response.status_code, response.json() if response.content else None


@pytest.mark.parametrize(("method", "suffix"), REQUESTS, ids=[f"{m} {s}" for m, s in REQUESTS])
def test_unknown_connector_answers_are_kafkas(
    copycat: Peer, kafka_connect: Peer, method: str, suffix: str
) -> None:
    path = f"/connectors/unknown-sbs{suffix}"
    assert _answer(copycat, method, path) == _answer(kafka_connect, method, path)


@pytest.mark.parametrize(("method", "suffix"), KAFKA_500S, ids=[f"{m} {s}" for m, s in KAFKA_500S])
def test_where_kafka_fails_with_a_500_copycat_answers_its_404(
    copycat: Peer, kafka_connect: Peer, method: str, suffix: str
) -> None:
    path = f"/connectors/unknown-sbs{suffix}"
    status, body = _answer(kafka_connect, method, path)
    assert status == 500, body  # still Kafka's behaviour
    message = KAFKA_500S[(method, suffix)]
    assert _answer(copycat, method, path) == (404, {"error_code": 404, "message": message})


def test_a_task_the_connector_lacks_is_kafkas_404(
    copycat: Peer, kafka_connect: Peer, tmp_path: Path
) -> None:
    name = "unknown-task-sbs"
    answers = {}
    for peer in (copycat, kafka_connect):
        with peer.client() as client, running_file_source(client, name, tmp_path, name):
            answers[peer.name] = [
                _answer(peer, "POST", f"/connectors/{name}/tasks/3/restart"),
                _answer(peer, "GET", f"/connectors/{name}/tasks/x/status"),
            ]
    assert answers["Copycat"] == answers["Kafka Connect"]
    assert answers["Copycat"][0][1] == {
        "error_code": 404,
        "message": "Task unknown-task-sbs-3 not found",
    }


@pytest.mark.parametrize(
    ("method", "suffix"), KAFKA_ANY_NAME, ids=[f"{m} {s}" for m, s in KAFKA_ANY_NAME]
)
def test_active_topics_of_an_unknown_connector_are_a_404_where_kafka_answers_any_name(
    copycat: Peer, kafka_connect: Peer, method: str, suffix: str
) -> None:
    path = f"/connectors/unknown-sbs{suffix}"
    status, _ = _answer(kafka_connect, method, path)
    assert status == KAFKA_ANY_NAME[(method, suffix)]  # still Kafka's behaviour
    expected = {"error_code": 404, "message": "Connector unknown-sbs not found"}
    assert _answer(copycat, method, path) == (404, expected)
