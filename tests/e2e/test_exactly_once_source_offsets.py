"""Altering and resetting a source connector's offsets with exactly-once support enabled
(KIP-875 with KIP-618), on ``copycat distributed`` workers and Apache Kafka.

Kafka's DistributedHerder fences out the connector's zombie tasks before it modifies the
offsets of a source connector when exactly-once support is enabled, and its Worker writes them
in a transaction of task 0's transactional id. So must we: a task instance still alive
somewhere (a frozen worker) must not be able to commit records or offsets over the altered
ones once it wakes up.

The source is tests/support/sequence_source.py: task ``n`` of connector ``c`` writes
``key-c-n-<seq>`` and commits ``{"saved": seq}`` for source partition ``{"task.id": "c-n"}``.
"""

from __future__ import annotations

import collections
import json
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer

from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import DistributedCluster
from tests.support.exactly_once import (
    CLIENT_TIMEOUT_S,
    MINIMUM,
    SETTLE_S,
    WORKERS,
    eos_cluster,
    group_settings,
    offset_records,
    seqnos,
    sequence_source,
    transactional_producer,
)
from tests.support.kafka import read_topic
from tests.support.processes import wait_until
from tests.support.sequence_source import install_sequence_source

pytestmark = [
    pytest.mark.integration,
    pytest.mark.apache_kafka_only(reason="transactions, fencing and read_committed"),
]

# A departed worker's work must not move during a test: a new instance of a frozen worker's
# task would fence that zombie by itself (every exactly-once task start does), and the zombie
# test would not show whether the offsets' fencing does. Far longer than any test.
HOLD_MS = 600_000
# The zombie's open transaction must outlive its freeze, or the broker would abort it for its
# age (and fence the zombie) whatever the herder does. Under the broker's
# transaction.max.timeout.ms (15 minutes).
TRANSACTION_TIMEOUT_MS = 600_000
# The zombie test's premise is a frozen task with records in an open transaction: with
# transactions of 3 s and a poll every 0.1 s, one is open but for ~3 % of the time.
INTERVAL_MS = 3_000
# Far below anything the tasks reach in a test: altered offsets are told apart at a glance.
ALTERED = 7
# What a simulated zombie tries to commit as its task's offset.
ZOMBIE_SEQ = 999_999
# Over the broker's transaction.max.timeout.ms (15 minutes): the broker refuses to initialise
# a producer asking it, so fencing with these admin settings fails (as the ACLs Kafka's
# test withholds).
REFUSED_TRANSACTION_TIMEOUT_MS = 3_600_000
_FENCING_FAILED = "Failed to perform zombie fencing for source connector"


@pytest.fixture(scope="module")
def plugins(bundled_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    extra = install_sequence_source(tmp_path_factory.mktemp("eos-offsets-source") / "plugins")
    return f"{bundled_plugin_path},{extra}"


@pytest.fixture(scope="module")
def cluster(
    broker: KafkaCluster, plugins: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DistributedCluster]:
    cluster = eos_cluster(
        tmp_path_factory.mktemp("eos-offsets-cluster"),
        broker,
        plugins,
        "enabled",
        **group_settings(broker, HOLD_MS),
    )
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _partition(name: str, task: int) -> dict[str, str]:
    return {"task.id": f"{name}-{task}"}


def _offsets(cluster: DistributedCluster, name: str, via: int = 0) -> dict[int, Any]:
    """task -> offset, as ``GET /connectors/<name>/offsets`` says."""
    response = cluster.request("GET", f"/connectors/{name}/offsets", via)
    assert response.status_code == 200, response.text
    return {
        int(entry["partition"]["task.id"].rsplit("-", 1)[1]): entry["offset"]
        for entry in response.json()["offsets"]
    }


def _wait_for_offsets(cluster: DistributedCluster, name: str, expected: dict[int, Any]) -> None:
    """Until ``GET .../offsets`` says ``expected`` (a transaction's offsets become readable
    once its commit markers are written, just after the commit returns)."""
    wait_until(lambda: _offsets(cluster, name) == expected, SETTLE_S, f"offsets {expected}")


def _alter(
    cluster: DistributedCluster, name: str, offsets: dict[int, Any], via: int = 0
) -> dict[str, Any]:
    response = cluster.request(
        "PATCH",
        f"/connectors/{name}/offsets",
        via,
        json={
            "offsets": [
                {"partition": _partition(name, task), "offset": offset}
                for task, offset in offsets.items()
            ]
        },
    )
    body: dict[str, Any] = {"status": response.status_code, **response.json()}
    return body


def _run_then_stop(
    cluster: DistributedCluster, name: str, config: dict[str, str], tasks: int, via: int = 0
) -> None:
    """Create the connector, wait until each task committed offsets, stop it (Kafka's order:
    no task configs, then STOPPED) and wait until every worker says so."""
    cluster.create(name, config, via)
    cluster.wait_running(name, tasks, SETTLE_S)
    wait_until(
        lambda: len(_offsets(cluster, name, via)) == tasks,
        SETTLE_S,
        f"offsets of {tasks} tasks of {name}",
    )
    response = cluster.request("PUT", f"/connectors/{name}/stop", via)
    assert response.status_code == 204, response.text
    cluster.wait_running(name, 0, SETTLE_S, state="STOPPED")


def _offset_records(
    broker: KafkaCluster, cluster: DistributedCluster, name: str
) -> list[tuple[int, dict[str, Any] | None]]:
    """``(task, offset)`` of the connector in the worker's offsets topic, in order."""
    topic = cluster.props["offset.storage.topic"]
    return offset_records(read_topic(broker.bootstrap_servers, topic), name)


def _each_committed(broker: KafkaCluster, topic: str, name: str, tasks: int) -> int:
    """The fewest records any of the connector's ``tasks`` tasks committed to ``topic``."""
    found = seqnos(read_topic(broker.bootstrap_servers, topic), name)
    return min((len(found.get(task, [])) for task in range(tasks)), default=0)


def _zombie(
    broker: KafkaCluster, cluster: DistributedCluster, name: str, task: int, seq: int
) -> Producer:
    """A simulated zombie of task ``task``: its transactional id, an open transaction holding
    the offset ``seq`` for the task's partition, sent to the broker but not committed."""
    zombie = transactional_producer(broker.bootstrap_servers, f"{cluster.group}-{name}-{task}")
    zombie.init_transactions(CLIENT_TIMEOUT_S)
    zombie.begin_transaction()
    zombie.produce(
        cluster.props["offset.storage.topic"],
        json.dumps({"saved": seq}).encode(),
        json.dumps([name, _partition(name, task)]).encode(),
    )
    zombie.flush(CLIENT_TIMEOUT_S)
    return zombie


def _end_quietly(zombies: list[Producer]) -> None:
    """Abort what a simulated zombie left open (a test that failed before fencing it): an
    open transaction on the offsets topic would hide later offsets from read_committed
    readers, and fail the next tests, until the broker timed it out."""
    for zombie in zombies:
        try:
            zombie.abort_transaction(CLIENT_TIMEOUT_S)
        except KafkaException:
            pass  # fenced (the expected end) or never begun


def _assert_fenced(zombie: Producer, what: str) -> None:
    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(CLIENT_TIMEOUT_S)
    error = raised.value.args[0]
    assert error.fatal() or "fenced" in str(raised.value).lower(), (what, raised.value)


def test_reset_fences_every_task_of_the_last_generation(
    cluster: DistributedCluster, broker: KafkaCluster, topic_name: str
) -> None:
    """A reset fences each task of the generation that last ran (their open transactions
    are aborted, their commits fail) and writes the tombstones in a transaction. A later
    alteration, with no fencing due any more, still writes with task 0's transactional id:
    a producer of that id opened since cannot commit either."""
    broker.create_topic(topic_name, 3)
    name = f"reset-{uuid.uuid4().hex[:6]}"
    _run_then_stop(cluster, name, sequence_source(name, topic_name, **{"tasks.max": "2"}), 2)
    zombies = [_zombie(broker, cluster, name, task, ZOMBIE_SEQ) for task in range(2)]
    try:
        response = cluster.request("DELETE", f"/connectors/{name}/offsets")
        assert response.status_code == 200, response.text
        for task, zombie in enumerate(zombies):
            _assert_fenced(zombie, f"zombie of task {task}")
    finally:
        _end_quietly(zombies)
    _wait_for_offsets(cluster, name, {})
    written = _offset_records(broker, cluster, name)
    last = {task: offset for task, offset in written}
    assert last == {0: None, 1: None}, written[-6:]
    assert all(offset != {"saved": ZOMBIE_SEQ} for _, offset in written)

    late = _zombie(broker, cluster, name, 0, ZOMBIE_SEQ)
    try:
        assert _alter(cluster, name, {0: {"saved": ALTERED}})["status"] == 200
        _assert_fenced(late, "a producer of task 0's id opened after the reset")
    finally:
        _end_quietly([late])
    _wait_for_offsets(cluster, name, {0: {"saved": ALTERED}})
    assert cluster.request("DELETE", f"/connectors/{name}").status_code == 204


def test_a_failed_fencing_changes_no_offset(
    cluster: DistributedCluster, broker: KafkaCluster, topic_name: str
) -> None:
    """Fencing uses the connector's admin settings, as the tasks' fencing does. When the
    broker refuses it, the alteration fails naming the connector and no offset changes; with
    the settings fixed, the same request succeeds."""
    broker.create_topic(topic_name, 3)
    name = f"nofence-{uuid.uuid4().hex[:6]}"
    config = sequence_source(name, topic_name, **{"tasks.max": "2"})
    _run_then_stop(cluster, name, config, 2)
    before = _offsets(cluster, name)
    refused = {
        **config,
        "admin.override.transaction.timeout.ms": str(REFUSED_TRANSACTION_TIMEOUT_MS),
    }
    assert cluster.request("PUT", f"/connectors/{name}/config", json=refused).status_code == 200

    failed = _alter(cluster, name, {0: {"saved": ALTERED}})
    assert failed["status"] == 500, failed
    assert _FENCING_FAILED in failed["message"] and name in failed["message"], failed
    assert _offsets(cluster, name) == before

    assert cluster.request("PUT", f"/connectors/{name}/config", json=config).status_code == 200
    assert _alter(cluster, name, {0: {"saved": ALTERED}})["status"] == 200
    _wait_for_offsets(cluster, name, {**before, 0: {"saved": ALTERED}})
    assert cluster.request("DELETE", f"/connectors/{name}").status_code == 204


def test_a_frozen_zombie_cannot_commit_over_altered_offsets(
    cluster: DistributedCluster, broker: KafkaCluster, topic_name: str
) -> None:
    """The worker running task 1 is frozen (SIGSTOP: the worker and its plugin hosts, in the
    middle of a transaction). Through the other worker the connector is stopped and task 1's
    offset altered. Thawed (SIGCONT), the zombie sees the connector stopped and stops its
    task: its commit fails with a fencing error. Task 1's last offset is still the altered
    one, and none of its records after its last committed offset before the freeze is
    visible. Without the fencing, the zombie commits its transaction: records and an offset
    after the altered one."""
    broker.create_topic(topic_name, 3)
    name = f"frozen-{uuid.uuid4().hex[:6]}"
    config = sequence_source(
        name,
        topic_name,
        **{
            "tasks.max": "2",
            "transaction.boundary": "interval",
            "transaction.boundary.interval.ms": str(INTERVAL_MS),
            "producer.override.transaction.timeout.ms": str(TRANSACTION_TIMEOUT_MS),
        },
    )
    cluster.create(name, config)
    cluster.wait_running(name, 2, SETTLE_S)
    wait_until(
        lambda: _each_committed(broker, topic_name, name, 2) >= MINIMUM,
        SETTLE_S,
        f"{MINIMUM} committed records of each task",
    )
    owner = cluster.placement()[f"{name}-1"][1]
    zombie = next(i for i in range(WORKERS) if cluster.worker_id(i) == owner)
    survivor = 1 - zombie
    mark = cluster.log_mark(zombie)
    cluster.workers[zombie].signal_group(signal.SIGSTOP)
    frozen = time.monotonic()
    try:
        # A frozen leader answers nothing: the survivor leads once the group dropped it.
        wait_until(lambda: cluster.leads(survivor), SETTLE_S, "the other worker leading")
        response = cluster.request("PUT", f"/connectors/{name}/stop", survivor)
        assert response.status_code == 204, response.text
        altered = _alter(cluster, name, {1: {"saved": ALTERED}}, survivor)
        assert altered["status"] == 200, altered
        assert time.monotonic() - frozen < TRANSACTION_TIMEOUT_MS / 1000 / 2
    finally:
        cluster.workers[zombie].signal_group(signal.SIGCONT)
    wait_until(
        lambda: (f"{name}-1", "stopped") in cluster.task_events(zombie, mark),
        SETTLE_S,
        "the zombie's task stopped",
    )
    written = _offset_records(broker, cluster, name)
    task1 = [offset for task, offset in written if task == 1]
    assert task1[-1] == {"saved": ALTERED}, task1[-5:]
    assert _offsets(cluster, name, survivor)[1] == {"saved": ALTERED}
    committed_before = max(o["saved"] for o in task1[:-1] if o is not None)
    records = seqnos(read_topic(broker.bootstrap_servers, topic_name), name)[1]
    twice = [s for s, n in collections.Counter(records).items() if n > 1]
    assert not twice and sorted(records) == list(range(1, committed_before + 1)), (
        f"task 1's records: {len(records)}, up to {max(records)}, twice {twice[:10]}; "
        f"its last offset committed before the alteration: {committed_before}"
    )
    # The premise: the zombie did try to write (its commit, or the records of its open
    # transaction, refused as fenced).
    log = cluster.workers[zombie].text()[mark:].splitlines()
    fenced = [
        line
        for line in log
        if "fenced" in line and (f"task {name}-1 " in line or f"producer-{name}-1#" in line)
    ]
    assert fenced, "\n".join(log[-30:])
    assert cluster.request("DELETE", f"/connectors/{name}", survivor).status_code == 204
