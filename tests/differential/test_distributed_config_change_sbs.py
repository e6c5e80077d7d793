"""Changing a running connector's config (``PUT``/``PATCH /connectors/<name>/config``, KIP-477)
on Copycat and on Apache Kafka Connect 4.1.1 distributed workers side by side: the answers a
client parses must be the same.

* A ``PATCH`` whose patch removes ``name`` (``{"name": null}``): Kafka's herder merges the patch
  into the stored config and validates the result as it is (only a ``PUT``'s resource puts the
  URL's name back into the body), so it answers 400 "Missing required configuration "name"
  which has no default value." and keeps the connector as it was. Copycat put the name back
  and answered 200.
* A refused change (a bad value, another connector's name) on a RUNNING connector: the same
  400 on both, and the connector runs on as it was (no difference found; kept as a guard).

Found by an exploratory side-by-side run of two-worker clusters; one worker each is enough
here (the answers are the leader's, on both).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.differential import DistributedPeers, running_file_source

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]


def _answer(response: httpx.Response) -> tuple[int, Any]:
    return response.status_code, response.json()


@pytest.mark.parametrize(
    "patch",
    [{"name": None}, {"name": None, "batch.size": "7"}],
    ids=["name removed", "name removed with another change"],
)
def test_patch_removing_the_name_is_refused(
    distributed_pair: DistributedPeers, tmp_path: Path, patch: dict[str, str | None]
) -> None:
    """Kafka validates the merged config without a name: 400, and the stored config stays."""
    name = f"config-change-unname-{len(patch)}"
    answers = {}
    for peer in distributed_pair.both():
        with peer.client() as client, running_file_source(client, name, tmp_path, name):
            before = client.get(f"/connectors/{name}/config").json()
            answer = _answer(client.patch(f"/connectors/{name}/config", json=patch))
            after = client.get(f"/connectors/{name}/config").json()
        assert after == before, f"{peer.name}: the refused patch changed the config"
        answers[peer.name] = answer
    assert answers["Copycat"] == answers["Kafka Connect"]
    assert answers["Copycat"][0] == 400


REFUSED = {
    "bad value": ("PUT", {"tasks.max": "abc"}),
    "name of another": ("PUT", {"name": "someone-else"}),
    "patched bad value": ("PATCH", {"tasks.max": "-3"}),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_change_leaves_the_running_connector_alone(
    distributed_pair: DistributedPeers, tmp_path: Path, case: str
) -> None:
    """A refused PUT or PATCH on a RUNNING connector: the same 400 on both, and the connector
    keeps its config, its task config and its state."""
    method, change = REFUSED[case]
    name = f"config-change-refused-{list(REFUSED).index(case)}"
    answers = {}
    for peer in distributed_pair.both():
        with peer.client() as client, running_file_source(client, name, tmp_path, name):
            before = client.get(f"/connectors/{name}/tasks").json()
            config = client.get(f"/connectors/{name}/config").json()
            body = change if method == "PATCH" else {**config, **change}
            answer = _answer(client.request(method, f"/connectors/{name}/config", json=body))
            assert client.get(f"/connectors/{name}/tasks").json() == before, peer.name
            status = client.get(f"/connectors/{name}/status").json()
        states = [status["connector"]["state"], *(t["state"] for t in status["tasks"])]
        assert states == ["RUNNING", "RUNNING"], f"{peer.name}: {status}"
        answers[peer.name] = answer
    assert answers["Copycat"] == answers["Kafka Connect"]
    assert answers["Copycat"][0] == 400
