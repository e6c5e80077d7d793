"""``/admin/loggers`` on a standalone Copycat and on Apache Kafka Connect 4.1.1, side by side.

Found by an exploratory comparison: Kafka lists loggers by name (a sorted map), root among
them, not root first. Which loggers are listed differs on purpose (Kafka lists every logger
log4j knows; Copycat root and the loggers with a level of their own, docs/rest.md), so only
the order of the ones both list is compared.
"""

from __future__ import annotations

import uuid

import pytest

from tests.support.differential import Peer

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]


def test_loggers_are_listed_by_name_as_kafkas_are(copycat: Peer, kafka_connect: Peer) -> None:
    uid = uuid.uuid4().hex[:8]
    names = [f"zz{uid}.late", f"aa{uid}.early", f"mm{uid}.middle"]
    orders = []
    for peer in (kafka_connect, copycat):
        with peer.client() as client:
            for name in names:
                response = client.put(f"/admin/loggers/{name}", json={"level": "WARN"})
                assert response.status_code == 200, response.text
                assert response.json() == [name]
            response = client.get("/admin/loggers")
        assert response.status_code == 200, response.text
        listed = list(response.json())
        orders.append([n for n in listed if n in {*names, "root"}])
    assert orders[0] == [f"aa{uid}.early", f"mm{uid}.middle", "root", f"zz{uid}.late"]
    assert orders[1] == orders[0]


# Not an empty level: Kafka Connect 4.1.1 answers it with a 500 (log4j's "Illegal null or
# empty Level name."), Copycat with its 404 for any level it does not know (docs/rest.md).
@pytest.mark.parametrize("body", [{"level": "FOO"}, {"level": "debug"}, {}, {"level": None}])
def test_a_put_is_answered_as_kafkas_is(
    copycat: Peer, kafka_connect: Peer, body: dict[str, str | None]
) -> None:
    name = f"put{uuid.uuid4().hex[:8]}.logger"
    answers = []
    for peer in (kafka_connect, copycat):
        with peer.client() as client:
            response = client.put(f"/admin/loggers/{name}", json=body)
            level = client.get(f"/admin/loggers/{name}")
        answers.append(
            (response.status_code, response.json(), level.status_code, level.json().get("level"))
        )
    assert answers[1] == answers[0]
