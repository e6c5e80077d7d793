"""The REST API answers for one request sequence, on Copycat and on Apache Kafka Connect.

Each worker gets the same requests for a FileStreamSource connector of its own: create,
status, tasks, config, validate (good, bad, mismatched), pause/resume/stop, offsets
get/patch/delete, restarts with query parameters, and the errors for unknown names and bad
bodies. Status codes and JSON must be equal after normalising what cannot be: the
connector's name and file, worker ids, versions, stack traces and the wording of error
messages (their presence and the error code are compared). Deliberate deviations are listed
in ``DEVIATIONS`` below with their reason, and in docs/rest.md.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import Peer
from tests.support.kafka import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

# Values that differ by nature, replaced before comparing.
_OPAQUE_KEYS = {"worker_id", "version", "trace", "commit", "kafka_cluster_id", "message"}

# Keys whose value is a class name: compared without the package, because Copycat's classes
# are Python classes standing in for Kafka's (docs/rest.md, "Differences from Kafka").
_CLASS_KEYS = {"task.class"}

# Requests Copycat answers differently on purpose: label -> (our status, Kafka's, why).
DEVIATIONS = {
    "malformed json": (400, 500, "a body that is not JSON is the client's error"),
    "config not an object": (400, 500, "a body of the wrong shape is the client's error"),
    "alter offsets bad body": (400, 500, "a body of the wrong shape is the client's error"),
    "alter offsets unknown field": (400, 500, "an unknown field is the client's error"),
    "alter offsets unknown entry field": (400, 500, "an unknown field is the client's error"),
    "create unknown field": (400, 500, "an unknown field is the client's error"),
}


@dataclass
class Step:
    """One request; ``settle`` waits (on that worker) before the request is sent."""

    label: str
    method: str
    path: str
    body: Any = None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    settle: tuple[str, list[str]] | None = None
    pick: Callable[[Any, str], Any] | None = field(default=None, repr=False)


def _source_config(file: str, topic: str) -> dict[str, str]:
    return {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "tasks.max": "1",
        "file": file,
        "topic": topic,
    }


def _steps(file: str, topic: str) -> list[Step]:
    good = _source_config(file, topic)
    plugin = "/connector-plugins/FileStreamSourceConnector/config/validate"
    return [
        Step("create", "POST", "/connectors", {"name": "{name}", "config": good}),
        Step("create again", "POST", "/connectors", {"name": "{name}", "config": good}),
        Step("info", "GET", "/connectors/{name}", settle=("RUNNING", ["RUNNING"])),
        Step("status", "GET", "/connectors/{name}/status"),
        Step("status with a trailing slash", "GET", "/connectors/{name}/status/"),
        Step("config", "GET", "/connectors/{name}/config"),
        Step("tasks", "GET", "/connectors/{name}/tasks"),
        Step("task status", "GET", "/connectors/{name}/tasks/0/status"),
        Step(
            "expanded list",
            "GET",
            "/connectors?expand=status&expand=info",
            pick=lambda body, name: body.get(name),
        ),
        Step("validate good", "PUT", plugin, good),
        Step("validate bad", "PUT", plugin, {**good, "topic": "", "tasks.max": "x"}),
        Step("validate mismatched class", "PUT", plugin, {**good, "connector.class": "Nope"}),
        Step("pause", "PUT", "/connectors/{name}/pause"),
        Step("paused status", "GET", "/connectors/{name}/status", settle=("PAUSED", ["PAUSED"])),
        Step("resume", "PUT", "/connectors/{name}/resume"),
        Step("restart", "POST", "/connectors/{name}/restart", settle=("RUNNING", ["RUNNING"])),
        Step(
            "restart with tasks",
            "POST",
            "/connectors/{name}/restart?includeTasks=true&onlyFailed=false",
            settle=("RUNNING", ["RUNNING"]),
        ),
        Step(
            "restart only failed",
            "POST",
            "/connectors/{name}/restart?includeTasks=true&onlyFailed=true",
            settle=("RUNNING", ["RUNNING"]),
        ),
        Step("restart task", "POST", "/connectors/{name}/tasks/0/restart"),
        Step("offsets while running", "GET", "/connectors/{name}/offsets"),
        Step(
            "alter offsets while running",
            "PATCH",
            "/connectors/{name}/offsets",
            {"offsets": [{"partition": {"filename": file}, "offset": {"position": 0}}]},
        ),
        Step("stop", "PUT", "/connectors/{name}/stop", settle=("RUNNING", ["RUNNING"])),
        Step("stopped status", "GET", "/connectors/{name}/status", settle=("STOPPED", [])),
        Step("stopped offsets", "GET", "/connectors/{name}/offsets"),
        Step(
            "restart stopped with tasks",
            "POST",
            "/connectors/{name}/restart?includeTasks=true&onlyFailed=false",
        ),
        Step(
            "restart stopped only failed",
            "POST",
            "/connectors/{name}/restart?includeTasks=true&onlyFailed=true",
            settle=("STOPPED", []),
        ),
        Step(
            "alter offsets",
            "PATCH",
            "/connectors/{name}/offsets",
            {"offsets": [{"partition": {"filename": file}, "offset": {"position": 6}}]},
            settle=("STOPPED", []),
        ),
        Step("altered offsets", "GET", "/connectors/{name}/offsets"),
        Step("alter offsets bad body", "PATCH", "/connectors/{name}/offsets", {"offsets": 5}),
        Step(
            "alter offsets unknown field",
            "PATCH",
            "/connectors/{name}/offsets",
            {
                "offsets": [{"partition": {"filename": file}, "offset": {"position": 1}}],
                "foo": 1,
            },
        ),
        Step(
            "alter offsets unknown entry field",
            "PATCH",
            "/connectors/{name}/offsets",
            {"offsets": [{"partition": {"filename": file}, "offset": None, "foo": 1}]},
        ),
        Step("offsets after unknown fields", "GET", "/connectors/{name}/offsets"),
        Step("reset offsets", "DELETE", "/connectors/{name}/offsets"),
        Step("reset offsets read", "GET", "/connectors/{name}/offsets"),
        Step("unknown connector", "GET", "/connectors/nope-{name}"),
        Step("unknown status", "GET", "/connectors/nope-{name}/status"),
        Step("unknown pause", "PUT", "/connectors/nope-{name}/pause"),
        Step("unknown delete", "DELETE", "/connectors/nope-{name}"),
        Step("malformed json", "POST", "/connectors", raw=b'{"name": "x", "config": {'),
        Step(
            "json sent as text/plain",
            "POST",
            "/connectors",
            raw=json.dumps({"name": "{name}-2", "config": good}).encode(),
            headers={"Content-Type": "text/plain"},
        ),
        Step("accept xml only", "GET", "/connectors/{name}", headers={"Accept": "application/xml"}),
        Step("config not an object", "POST", "/connectors", {"name": "{name}-2", "config": 7}),
        Step(
            "create unknown field",
            "POST",
            "/connectors",
            {"name": "{name}-3", "config": good, "foo": 1},
        ),
        Step(
            "create with the name only in its config",
            "POST",
            "/connectors",
            {"config": {**good, "name": "{name}-cfg"}},
        ),
        Step(
            "config name mismatch",
            "PUT",
            "/connectors/{name}/config",
            {**good, "name": "other"},
        ),
        # Last before the delete: Kafka Connect 4.1.1 standalone answers 404 but then lists a
        # FAILED task 9 (a NullPointerException) in the connector's status.
        Step("restart missing task", "POST", "/connectors/{name}/tasks/9/restart"),
        Step("delete", "DELETE", "/connectors/{name}"),
        Step("deleted", "GET", "/connectors/{name}"),
    ]


def _substitute(value: Any, name: str) -> Any:
    if isinstance(value, str):
        return value.replace("{name}", name)
    if isinstance(value, dict):
        return {k: _substitute(v, name) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, name) for v in value]
    return value


def _canonical(value: Any, tokens: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {
            k: f"<{k}>"
            if k in _OPAQUE_KEYS and v is not None
            else v.rsplit(".", 1)[-1]
            if k in _CLASS_KEYS and isinstance(v, str)
            else _canonical(v, tokens)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_canonical(v, tokens) for v in value]
    if isinstance(value, str):
        for real, placeholder in tokens.items():
            value = value.replace(real, placeholder)
    return value


def _settle(client: httpx.Client, name: str, connector: str, tasks: list[str]) -> None:
    last: list[Any] = [None]

    def settled() -> bool:
        body = last[0] = client.get(f"/connectors/{name}/status").json()
        return bool(
            body["connector"]["state"] == connector and [t["state"] for t in body["tasks"]] == tasks
        )

    try:
        wait_for(settled, 60, f"{client.base_url} {name}: {connector} {tasks}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last status: {last[0]}") from None


def _run(peer: Peer, broker: KafkaCluster, tmp: Path) -> list[tuple[str, int, Any]]:
    name = f"rest-{peer.name.split()[0].lower()}-{uuid.uuid4().hex[:8]}"
    file = tmp / f"{name}.txt"
    file.write_text("one\ntwo\n")
    topic = f"{name}-out"
    broker.create_topic(topic, 1)
    tokens = {str(file): "<file>", topic: "<topic>", name: "<name>"}
    answers = []
    with peer.client() as client:
        for step in _steps(str(file), topic):
            if step.settle is not None:
                _settle(client, name, *step.settle)
            path = _substitute(step.path, name)
            if step.raw is not None:
                response = client.request(
                    step.method,
                    path,
                    content=_substitute(step.raw.decode(), name).encode(),
                    headers={"Content-Type": "application/json", **step.headers},
                )
            else:
                body = _substitute(step.body, name)
                response = client.request(step.method, path, json=body, headers=step.headers)
            payload = response.json() if response.content else None
            if step.pick is not None and response.status_code == 200:
                payload = step.pick(payload, name)
            answers.append((step.label, response.status_code, _canonical(payload, tokens)))
    return answers


def _validate_summary(body: Any) -> Any:
    """A validate answer reduced to what both sides must agree on."""
    if not isinstance(body, dict) or "configs" not in body:
        return body
    errors = {
        c["value"]["name"]: c["value"]["errors"] for c in body["configs"] if c["value"]["errors"]
    }
    return {
        "name": body["name"].rsplit(".", 1)[-1],  # a class name, see _CLASS_KEYS
        "error_count": body["error_count"],
        "errors": errors,
    }


def test_one_request_sequence_gets_the_same_answers(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    ours = _run(copycat, apache_kafka, tmp_path)
    theirs = _run(kafka_connect, apache_kafka, tmp_path)
    lines = []
    for (label, our_status, our_body), (_, their_status, their_body) in zip(
        ours, theirs, strict=True
    ):
        if label.startswith("validate"):
            our_body, their_body = _validate_summary(our_body), _validate_summary(their_body)
        if label in DEVIATIONS:
            ours_expected, theirs_expected, _ = DEVIATIONS[label]
            if (our_status, their_status) != (ours_expected, theirs_expected):
                lines.append(
                    f"{label}: expected {ours_expected} vs Kafka's {theirs_expected},"
                    f" got {our_status} vs {their_status}"
                )
            our_status = their_status = 0
            for body, status in ((our_body, ours_expected), (their_body, theirs_expected)):
                assert body == {"error_code": status, "message": "<message>"}, (label, body)
            continue
        if (our_status, our_body) != (their_status, their_body):
            lines.append(
                f"{label}:\n  Copycat:       {our_status} {json.dumps(our_body)}"
                f"\n  Kafka Connect: {their_status} {json.dumps(their_body)}"
            )
    assert lines == [], "\n".join(lines)
