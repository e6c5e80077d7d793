"""``tasks.max`` on Copycat and on Apache Kafka Connect 4.1.1, side by side.

* Refused values: ``tasks.max`` is an INT of at least 1. ``0`` and ``-1`` are "Value must be
  at least 1"; a value that is no Java integer (``abc``, the empty string, ``1_0``, which
  Python's ``int()`` reads) or one beyond 32 bits (``2147483648``: Java's ``parseInt`` fails
  on it as on any other bad string) is "Not a number of type INT", and its validator then runs
  on null ("Value must be non-null"). The same errors from ``PUT
  /connector-plugins/<plugin>/config/validate``, and the same 400 from ``POST /connectors``
  and ``PUT /connectors/<name>/config``. A missing ``tasks.max`` is 1 and a padded `` 2 `` is
  2. Found by this comparison: Copycat said "Expected value to be a 32-bit integer, but it is
  out of range" for ``2147483648`` (Kafka's ConfigDef has no such message for a string), took
  ``1_0`` as 10, and trimmed the no-break space off a ``2`` led by U+00A0 (Java's
  ``String.trim`` keeps it: no number).
* Lowering and raising ``tasks.max`` of a running sink with ``PUT .../config`` (1, 3, then 1
  again, on a three-partition topic): the status lists tasks 0..n-1 each time, every record is
  written to the file once (none lost, none twice), and ``connect-<name>`` commits the end of
  every partition, on standalone and on distributed workers (no difference found; kept as a
  guard).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import (
    FILE_SINK,
    STRING_CONVERTERS,
    DistributedPeers,
    Peer,
    create,
    create_refusal,
    delete,
    file_lines,
    validation_errors,
    wait_running,
)
from tests.support.kafka import group_offsets
from tests.support.rest import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

PLUGIN = "FileStreamSinkConnector"
BASE = {"connector.class": FILE_SINK, "topics": "tasks-max-topic", "file": "/dev/null"}


def _not_a_number(value: str) -> list[str]:
    return [
        f"Invalid value {value} for configuration tasks.max: Not a number of type INT",
        "Invalid value null for configuration tasks.max: Value must be non-null",
    ]


REFUSED = {
    "0": ["Invalid value 0 for configuration tasks.max: Value must be at least 1"],
    "-1": ["Invalid value -1 for configuration tasks.max: Value must be at least 1"],
    "abc": _not_a_number("abc"),
    "": _not_a_number(""),
    "1_0": _not_a_number("1_0"),
    "no-break space": _not_a_number("\u00a02"),
    "1.5": _not_a_number("1.5"),
    "2147483648": _not_a_number("2147483648"),
}


VALUES = {"no-break space": "\u00a02"}


def _refusals(peer: Peer, value: str) -> dict[str, Any]:
    name = f"tasks-max-{uuid.uuid4().hex[:8]}"
    config = {**BASE, "tasks.max": VALUES.get(value, value)}
    return {
        "validate": validation_errors(peer, PLUGIN, {**config, "name": name}),
        "POST": create_refusal(peer, name, {**config, "name": name}),
        "PUT": create_refusal(peer, name, config, put=True),
    }


@pytest.mark.parametrize("value", list(REFUSED))
def test_a_bad_tasks_max_is_refused_as_kafka_connect_refuses_it(
    copycat: Peer, kafka_connect: Peer, value: str
) -> None:
    errors = REFUSED[value]
    message = (
        f"Connector configuration is invalid and contains the following {len(errors)} "
        "error(s):\n" + "".join(f"{e}\n" for e in errors) + "You can also find the above list "
        "of errors at the endpoint `/connector-plugins/{connectorType}/config/validate`"
    )
    ours = _refusals(copycat, value)
    theirs = _refusals(kafka_connect, value)
    assert (
        ours
        == theirs
        == {
            "validate": {"error_count": len(errors), "tasks.max": errors},
            "POST": (400, message),
            "PUT": (400, message),
        }
    )


def _accepted(peer: Peer, value: str | None) -> dict[str, Any]:
    name = f"tasks-max-{uuid.uuid4().hex[:8]}"
    config = dict(BASE) if value is None else {**BASE, "tasks.max": value}
    with peer.client() as client:
        response = create(client, name, config)
        try:
            tasks = len(response.json()["tasks"]) or len(
                wait_for(lambda: client.get(f"/connectors/{name}/tasks").json(), 60, "tasks")
            )
        finally:
            delete(client, name)
    return {"validate": validation_errors(peer, PLUGIN, {**config, "name": name}), "tasks": tasks}


@pytest.mark.parametrize(("value", "tasks"), [(None, 1), (" 2 ", 2)], ids=["missing", "padded"])
def test_a_missing_or_padded_tasks_max_is_accepted_as_in_kafka_connect(
    copycat: Peer, kafka_connect: Peer, value: str | None, tasks: int
) -> None:
    ours = _accepted(copycat, value)
    theirs = _accepted(kafka_connect, value)
    assert ours == theirs == {"validate": {"error_count": 0}, "tasks": tasks}


def _produce(bootstrap: str, topic: str, phase: str, per_partition: int) -> list[str]:
    """``per_partition`` records ``<phase><partition>-<i>`` to each of the topic's 3 partitions."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    values = [f"{phase}{p}-{i}" for p in range(3) for i in range(per_partition)]
    for value in values:
        producer.produce(topic, value.encode(), partition=int(value[1]))
    assert producer.flush(30) == 0
    return values


def _task_ids(client: httpx.Client, name: str) -> list[int]:
    return sorted(t["id"] for t in client.get(f"/connectors/{name}/status").json()["tasks"])


def _resized(peer: Peer, broker: KafkaCluster, tmp: Path) -> dict[str, Any]:
    """A FileStreamSink over a 3-partition topic, tasks.max 1, then 3, then 1 again (PUT
    /config), records produced at each step: what the worker showed and wrote."""
    tag = f"{peer.name.split()[0].lower()}-{uuid.uuid4().hex[:8]}"
    name = topic = f"tasks-max-resize-{tag}"
    out = tmp / f"{tag}.out"
    broker.create_topic(topic, 3)
    config = {"connector.class": FILE_SINK, "topics": topic, "file": str(out), **STRING_CONVERTERS}
    seen: dict[str, Any] = {}
    produced: list[str] = []
    with peer.client() as client:
        create(client, name, {**config, "tasks.max": "1"})
        try:
            for phase, tasks in (("a", 1), ("b", 3), ("c", 1)):
                if phase != "a":
                    response = client.put(
                        f"/connectors/{name}/config", json={**config, "tasks.max": str(tasks)}
                    )
                    seen[f"PUT tasks.max={tasks}"] = response.status_code
                wait_running(client, name, tasks)
                produced += _produce(broker.bootstrap_servers, topic, phase, 4)
                count = len(produced)
                wait_for(
                    lambda count=count: len(file_lines(out)) >= count,  # type: ignore[misc]
                    90,
                    f"{peer.name}: {count} lines in {out}",
                )
                seen[f"tasks ({phase})"] = _task_ids(client, name)
                seen[f"task configs ({phase})"] = len(
                    client.get(f"/connectors/{name}/tasks").json()
                )
            seen["committed"] = wait_for(
                lambda: (
                    (
                        committed := {
                            tp.partition: tp.offset
                            for tp in group_offsets(
                                broker.bootstrap_servers, f"connect-{name}", [topic]
                            )
                        }
                    )
                    == {0: 12, 1: 12, 2: 12}
                    and committed
                ),
                90,
                f"{peer.name}: connect-{name} committing the end of {topic}",
            )
            seen["lines"] = sorted(file_lines(out))
            seen["produced"] = sorted(produced)
        finally:
            delete(client, name)
    return seen


def test_raising_and_lowering_tasks_max_of_a_running_sink_loses_and_repeats_nothing(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    ours = _resized(copycat, apache_kafka, tmp_path)
    theirs = _resized(kafka_connect, apache_kafka, tmp_path)
    assert ours == theirs
    assert theirs["lines"] == theirs["produced"]  # each record once
    assert {k: v for k, v in theirs.items() if k not in ("lines", "produced")} == {
        "tasks (a)": [0],
        "task configs (a)": 1,
        "PUT tasks.max=3": 200,
        "tasks (b)": [0, 1, 2],
        "task configs (b)": 3,
        "PUT tasks.max=1": 200,
        "tasks (c)": [0],
        "task configs (c)": 1,
        "committed": {0: 12, 1: 12, 2: 12},
    }


def test_raising_and_lowering_tasks_max_on_distributed_workers_loses_and_repeats_nothing(
    distributed_pair: DistributedPeers, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    """The same on a distributed worker of each: the new task configs go through the config
    topic and the tasks are revoked and assigned again by a rebalance."""
    ours = _resized(distributed_pair.copycat, apache_kafka, tmp_path)
    theirs = _resized(distributed_pair.kafka_connect, apache_kafka, tmp_path)
    assert ours == theirs
    assert theirs["lines"] == theirs["produced"]
    assert theirs["tasks (b)"] == [0, 1, 2] and theirs["tasks (c)"] == [0]
