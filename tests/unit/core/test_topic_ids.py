"""The topic-ID lookups of sink tasks share an admin client per admin config."""

from __future__ import annotations

from core.runtime.topic_ids import AdminTopicIds
from tests.support.fake_kafka import FakeClients


def test_lookups_with_one_admin_config_share_one_admin_client_until_the_last_closes() -> None:
    clients = FakeClients()
    clients.cluster.recreate("t")
    first, second = AdminTopicIds(clients, {"a": "1"}), AdminTopicIds(clients, {"a": "1"})
    other = AdminTopicIds(clients, {"a": "2"})
    assert AdminTopicIds(clients, {"a": "1"}) is not first  # made lazily: no client yet
    assert clients.admins == []
    ids = first(["t"])
    assert ids == {"t": clients.cluster.topic_id("t")}
    assert second(["t"]) == ids and other(["t"]) == ids
    assert len(clients.admins) == 2  # one for {"a": "1"}, one for {"a": "2"}
    assert clients.admins[0].describes == 2
    first.close()
    first.close()  # twice: counted once
    second(["t"])
    assert len(clients.admins) == 2
    second.close()
    # The last user of {"a": "1"} closed: a later lookup makes a new client.
    third = AdminTopicIds(clients, {"a": "1"})
    third(["t"])
    assert len(clients.admins) == 3
    third.close()
    other.close()


def test_a_deleted_topic_has_no_id() -> None:
    clients = FakeClients()
    clients.cluster.recreate("t")
    clients.cluster.delete("t")
    lookup = AdminTopicIds(clients, {})
    assert lookup(["t"]) == {"t": None}
    lookup.close()
