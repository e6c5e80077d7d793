"""Scrubbing resolved config values: the forms a value takes, and whose text is scrubbed."""

from __future__ import annotations

import json
import uuid

from core import secrets
from core.status import State, Status, StatusBoard
from core.stores.status import ScrubbingStatusStore


def _connector() -> str:
    return f"c-{uuid.uuid4().hex[:8]}"


def test_a_value_is_scrubbed_as_is_repr_escaped_and_json_escaped() -> None:
    name = _connector()
    value = f"/tmp/nonexist/BS\\Path{uuid.uuid4().hex[:6]}\tTab"
    secrets.register({value: "${file:/s.properties:p}"}, name)
    text = "\n".join(
        [f"Couldn't find '{value}'", f"FileNotFoundError: {value!r}", json.dumps({"t": value})]
    )
    scrubbed = secrets.scrub_for(name, text)
    assert scrubbed is not None
    assert "BS" not in scrubbed and "Tab" not in scrubbed, scrubbed
    assert scrubbed.count("${file:/s.properties:p}") == 3
    assert "BS" not in secrets.scrub(text)  # long: in text about any connector too


def test_short_values_are_scrubbed_only_in_their_connectors_text_and_numbers_never() -> None:
    name, other = _connector(), _connector()
    secrets.register({"2": "${file:/n.properties:num}", "true": "${file:/n.properties:b}"}, name)
    secrets.register({"pw9": "${file:/n.properties:pw}"}, name)
    line = "task plainsink-2 starting; No status found for task src1-2; flag true"
    assert secrets.scrub(line) == line  # the worker's log lines, REST errors
    assert secrets.scrub_for(other, f"{line} pw9") == f"{line} pw9"  # another connector's
    assert secrets.scrub_for(name, line) == line  # numbers and booleans are no secrets
    assert secrets.scrub_for(name, "login pw9 refused, not pw99") == (
        "login ${file:/n.properties:pw} refused, not pw99"
    )
    assert not secrets.worth_hiding("42") and not secrets.worth_hiding("FALSE")
    assert secrets.worth_hiding("pw9")


def test_a_status_store_beneath_the_worker_never_sees_a_resolved_value() -> None:
    name = _connector()
    value = f"SecretDir{uuid.uuid4().hex[:8]}"
    secrets.register({value: "${dir:/d:name}"}, name)
    board = StatusBoard()
    store = ScrubbingStatusStore(board)
    store.set_task(name, 0, Status(State.FAILED, "w", trace=f"no such file {value!r}"))
    store.set_connector(name, Status(State.FAILED, "w", trace=f"failed in {value}"))
    store.update_task(name, 0, trace=f"again {value}")
    assert board.tasks[(name, 0)].trace == "again ${dir:/d:name}"
    connector = board.connector(name)
    assert connector is not None and connector.trace == "failed in ${dir:/d:name}"
