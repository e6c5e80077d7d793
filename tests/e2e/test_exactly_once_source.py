"""Kafka's ExactlyOnceSourceIntegrationTest, re-created on ``copycat distributed`` workers and
Apache Kafka (KIP-618): pre-flight validation, poll / interval / connector-defined transaction
boundaries, fenced leader recovery, reconfiguration fencing the older task generations, tasks
failing when they cannot fence, a connector's own offsets topic (and a downgrade), and a task
refused its own offsets topic.

The source is tests/support/sequence_source.py (Kafka's TestableSourceConnector): task ``n`` of
connector ``c`` writes ``key-c-n-<seq>`` for seq = 1, 2, ... and commits ``{"saved": seq}``.
A ``read_committed`` reader must see, per task, every seq from 1 up exactly once: nothing
missing, nothing twice.

One cluster of two workers (exactly.once.source.support=enabled) serves most tests; the
separate-offsets-topic test restarts it with exactly-once support off and runs last.
"""

from __future__ import annotations

import collections
import json
import signal
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx
import pytest
from confluent_kafka import KafkaException, Message, Producer

from tests.support.apache_kafka import KafkaCluster
from tests.support.distributed import DistributedCluster
from tests.support.exactly_once import (
    CLIENT_TIMEOUT_S,
    MINIMUM,
    PER_POLL,
    SETTLE_S,
    WORKERS,
    eos_cluster,
    group_settings,
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

# Much longer than any test: a boundary committed by the offset flush would show.
OFFSET_FLUSH_INTERVAL_MS = 600_000
# A departed worker's work moves after this: short, so that the zombie test's task moves
# within seconds.
SCHEDULED_DELAY_MS = 1_000


@pytest.fixture(scope="module")
def plugins(bundled_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    extra = install_sequence_source(tmp_path_factory.mktemp("eos-source") / "plugins")
    return f"{bundled_plugin_path},{extra}"


@pytest.fixture(scope="module")
def cluster(
    broker: KafkaCluster, plugins: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DistributedCluster]:
    cluster = eos_cluster(
        tmp_path_factory.mktemp("eos-cluster"),
        broker,
        plugins,
        "enabled",
        **{
            "offset.flush.interval.ms": str(OFFSET_FLUSH_INTERVAL_MS),
            **group_settings(broker, SCHEDULED_DELAY_MS),
        },
    )
    try:
        yield cluster.start()
    finally:
        cluster.stop()


def _assert_exactly_once(messages: list[Message], name: str, tasks: int) -> None:
    """Per task: seqnos 1..n, each once (Kafka's assertExactlyOnceSeqnos)."""
    by_task = seqnos(messages, name)
    assert set(by_task) == set(range(tasks)), f"tasks that wrote: {sorted(by_task)}"
    for task, seqs in by_task.items():
        counts = collections.Counter(seqs)
        twice = sorted(s for s, n in counts.items() if n > 1)
        missing = sorted(set(range(1, max(seqs) + 1)) - set(seqs))
        assert not twice and not missing, f"task {task}: twice {twice[:20]}, missing {missing[:20]}"


def _saved(messages: list[Message], name: str) -> list[int]:
    """Offsets committed for task 0 of ``name`` in an offsets topic, in order."""
    saved = []
    for message in messages:
        key = json.loads(message.key() or b"null")
        if not isinstance(key, list) or key[0] != name or message.value() is None:
            continue
        assert key[1] == {"task.id": f"{name}-0"}
        saved.append(json.loads(message.value())["saved"])
    return saved


def _run_and_delete(
    cluster: DistributedCluster, broker: KafkaCluster, name: str, config: Mapping[str, str]
) -> list[Message]:
    """Create the connector, wait for MINIMUM records to be committed, delete it (its tasks
    stop and commit), and read its topic ``read_committed``."""
    cluster.create(name, config)
    topic = config["topic"]
    wait_until(
        lambda: len(read_topic(broker.bootstrap_servers, topic)) >= MINIMUM,
        SETTLE_S,
        f"{MINIMUM} committed records of {name}",
    )
    _delete(cluster, name)
    return read_topic(broker.bootstrap_servers, topic)


def _delete(cluster: DistributedCluster, name: str) -> None:
    """Delete the connector and wait until its tasks stopped (their last transactions are
    over: a reader then sees every transaction whole)."""
    response = cluster.request("DELETE", f"/connectors/{name}")
    assert response.status_code == 204, response.text
    wait_until(
        lambda: all(not cluster.status(name, via=i) for i in range(len(cluster.workers))),
        SETTLE_S,
        f"{name}'s statuses gone (its tasks stopped)",
    )


def _wait_for_records(broker: KafkaCluster, topic: str, count: int) -> None:
    wait_until(
        lambda: len(read_topic(broker.bootstrap_servers, topic)) >= count,
        SETTLE_S,
        f"{count} committed records in {topic}",
    )


def _validate(cluster: DistributedCluster, config: Mapping[str, str]) -> dict[str, list[str]]:
    response = cluster.request(
        "PUT", "/connector-plugins/SequenceSource/config/validate", json=dict(config)
    )
    assert response.status_code == 200, response.text
    body = response.json()
    errors = {c["value"]["name"]: c["value"]["errors"] for c in body["configs"]}
    assert body["error_count"] == sum(len(e) for e in errors.values())
    return {k: v for k, v in errors.items() if v}


def test_preflight_validation(cluster: DistributedCluster, topic_name: str) -> None:
    base = sequence_source("preflight", topic_name, **{"exactly.once.support": "required"})
    for answer in ("null", "unsupported", "fail"):
        errors = _validate(cluster, {**base, "custom.exactly.once.support": answer})
        assert list(errors) == ["exactly.once.support"], (answer, errors)
    assert _validate(cluster, {**base, "custom.exactly.once.support": "supported"}) == {}
    base = {**base, "transaction.boundary": "connector"}
    for answer in ("null", "unsupported", "fail"):
        errors = _validate(cluster, {**base, "custom.transaction.boundaries": answer})
        assert list(errors) == ["transaction.boundary"], (answer, errors)
    assert _validate(cluster, {**base, "custom.transaction.boundaries": "supported"}) == {}
    # "requested" (the default) asks nothing: a connector that does not say is accepted.
    lenient = {**base, "exactly.once.support": "requested", "custom.exactly.once.support": "null"}
    assert _validate(cluster, {**lenient, "custom.transaction.boundaries": "supported"}) == {}
    # And creating one that fails validation is refused, naming the reason.
    response = cluster.request(
        "POST",
        "/connectors",
        json={"name": "preflight", "config": {**base, "custom.transaction.boundaries": "null"}},
    )
    assert response.status_code == 400
    assert "connector-defined transaction boundaries" in response.json()["message"]


def test_poll_boundary(cluster: DistributedCluster, broker: KafkaCluster, topic_name: str) -> None:
    broker.create_topic(topic_name, 3)
    name = f"poll-{uuid.uuid4().hex[:6]}"
    config = sequence_source(name, topic_name, **{"transaction.boundary": "poll"})
    records = _run_and_delete(cluster, broker, name, config)
    assert len(records) >= MINIMUM
    _assert_exactly_once(records, name, 1)
    # Offsets were committed with every poll's transaction (the offset flush never ran).
    saved = _saved(
        read_topic(broker.bootstrap_servers, cluster.props["offset.storage.topic"]), name
    )
    assert len(saved) >= MINIMUM // PER_POLL and all(s % PER_POLL == 0 for s in saved), saved
    assert saved[-1] == max(seqnos(records, name)[0])


def test_interval_boundary(
    cluster: DistributedCluster, broker: KafkaCluster, topic_name: str
) -> None:
    broker.create_topic(topic_name, 3)
    name = f"interval-{uuid.uuid4().hex[:6]}"
    config = sequence_source(
        name,
        topic_name,
        **{"transaction.boundary": "interval", "transaction.boundary.interval.ms": "2000"},
    )
    records = _run_and_delete(cluster, broker, name, config)
    assert len(records) >= MINIMUM
    _assert_exactly_once(records, name, 1)
    saved = _saved(
        read_topic(broker.bootstrap_servers, cluster.props["offset.storage.topic"]), name
    )
    assert saved and saved[-1] == max(seqnos(records, name)[0])


def test_connector_boundary(
    cluster: DistributedCluster, broker: KafkaCluster, topic_name: str
) -> None:
    """Transactions end at the Fibonacci numbers; those ending at an even one are aborted:
    their records are never visible, their offsets are committed all the same."""
    broker.create_topic(topic_name, 3)
    name = f"connector-{uuid.uuid4().hex[:6]}"
    config = sequence_source(
        name,
        topic_name,
        **{
            "transaction.boundary": "connector",
            "custom.transaction.boundaries": "supported",
            "max.messages": "233",
        },
    )
    cluster.create(name, config)
    offsets_topic = cluster.props["offset.storage.topic"]
    fibonacci = [1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233]
    wait_until(
        lambda: _saved(read_topic(broker.bootstrap_servers, offsets_topic), name)[-1:] == [233],
        SETTLE_S,
        "the last boundary's offsets",
    )
    assert _saved(read_topic(broker.bootstrap_servers, offsets_topic), name) == fibonacci
    aborted: set[int] = set()
    for prior, boundary in zip(fibonacci, fibonacci[1:], strict=False):
        if boundary % 2 == 0:
            aborted |= set(range(prior + 1, boundary + 1))
    seqs = sorted(seqnos(read_topic(broker.bootstrap_servers, topic_name), name)[0])
    assert seqs == [s for s in range(1, 234) if s not in aborted]
    _delete(cluster, name)


def _transactional_producer(broker: KafkaCluster, transactional_id: str) -> Producer:
    return transactional_producer(broker.bootstrap_servers, transactional_id)


def test_fenced_leader_recovery(
    cluster: DistributedCluster, broker: KafkaCluster, topic_name: str
) -> None:
    """A zombie leader's producer fences the leader's: the next leader write fails, the
    leader claims its privileges again, and the request retried succeeds."""
    broker.create_topic(topic_name, 3)
    zombie = _transactional_producer(broker, f"connect-cluster-{cluster.group}")
    zombie.init_transactions(CLIENT_TIMEOUT_S)
    name = f"fenced-leader-{uuid.uuid4().hex[:6]}"
    config = sequence_source(name, topic_name)
    first = httpx.post(
        cluster.workers[cluster.leader()].url + "/connectors",
        json={"name": name, "config": config},
        timeout=90,
    )
    assert first.status_code == 409, first.text
    records = _run_and_delete(cluster, broker, name, config)
    _assert_exactly_once(records, name, 1)


def _assert_fenced(producer: Producer, topic: str) -> None:
    producer.begin_transaction()
    producer.produce(topic, b"\x45", b"\x60")
    with pytest.raises(KafkaException) as raised:
        producer.commit_transaction(CLIENT_TIMEOUT_S)
    assert raised.value.args[0].fatal() or "fenced" in str(raised.value).lower(), raised.value


def test_connector_reconfiguration(
    cluster: DistributedCluster, broker: KafkaCluster, topic_name: str
) -> None:
    """Each new generation of task configs fences every task of the one before, on whichever
    worker it may still run (simulated here by producers with those tasks' ids)."""
    broker.create_topic(topic_name, 3)
    name = f"reconfig-{uuid.uuid4().hex[:6]}"
    config = sequence_source(name, topic_name, **{"tasks.max": "3"})
    cluster.create(name, config)
    cluster.wait_running(name, 3, SETTLE_S)
    for current, new in ((3, 5), (5, 1), (1, 5), (5, 3)):
        producers = [
            _transactional_producer(broker, f"{cluster.group}-{name}-{task}")
            for task in range(current)
        ]
        for producer in producers:
            producer.init_transactions(CLIENT_TIMEOUT_S)
        response = cluster.request(
            "PUT", f"/connectors/{name}/config", json={**config, "tasks.max": str(new)}
        )
        assert response.status_code == 200, response.text
        cluster.wait_running(name, new, SETTLE_S)
        for producer in producers:
            _assert_fenced(producer, topic_name)
    wait_until(
        lambda: len(read_topic(broker.bootstrap_servers, topic_name)) >= MINIMUM,
        SETTLE_S,
        "records of the last generation",
    )
    _delete(cluster, name)
    records = read_topic(broker.bootstrap_servers, topic_name)
    _assert_exactly_once(records, name, 5)


def test_tasks_fail_when_they_cannot_fence(
    cluster: DistributedCluster, broker: KafkaCluster, topic_name: str
) -> None:
    """Fencing uses the connector's admin settings (Kafka: its admin client). Kafka's test
    withholds the ACLs; here the broker refuses the fencing request itself: a transaction
    timeout above its transaction.max.timeout.ms (15 minutes)."""
    broker.create_topic(topic_name, 3)
    name = f"nofence-{uuid.uuid4().hex[:6]}"
    config = sequence_source(name, topic_name, **{"tasks.max": "2"})
    cluster.create(name, config)
    cluster.wait_running(name, 2, SETTLE_S)  # the first generation needs no fencing
    refused = {**config, "admin.override.transaction.timeout.ms": str(3_600_000)}
    assert cluster.request("PUT", f"/connectors/{name}/config", json=refused).status_code == 200
    failed = cluster.wait_running(name, 2, SETTLE_S, state="FAILED")
    for task in failed["tasks"]:
        assert "could not be fenced out" in task["trace"], task["trace"]
    # Fixed: the next generation is fenced for, and its tasks run.
    assert cluster.request("PUT", f"/connectors/{name}/config", json=config).status_code == 200
    cluster.wait_running(name, 2, SETTLE_S)
    _delete(cluster, name)


def test_potential_deadlock_when_producing_to_offsets_topic(
    cluster: DistributedCluster, topic_name: str
) -> None:
    name = f"naughty-{uuid.uuid4().hex[:6]}"
    config = sequence_source(
        name,
        topic_name,
        **{
            "transaction.boundary": "interval",
            "offsets.storage.topic": f"{name}-whoops",
            "naughty.topic": f"{name}-whoops",
        },
    )
    cluster.create(name, config)
    status = cluster.wait_running(name, 1, SETTLE_S, state="FAILED")
    assert "may not write records to its own offsets topic" in status["tasks"][0]["trace"]
    _delete(cluster, name)


def test_a_zombie_task_cannot_write_once_its_task_moved(
    cluster: DistributedCluster, broker: KafkaCluster, topic_name: str
) -> None:
    """The worker running the task is frozen (SIGSTOP: the worker and its plugin hosts, in
    the middle of a transaction); its task moves to the other worker, whose producer fences
    the frozen one's; thawed (SIGCONT), the zombie's next commit fails with a fencing error
    and its task stops. A read_committed reader sees every record once."""
    broker.create_topic(topic_name, 3)
    name = f"zombie-{uuid.uuid4().hex[:6]}"
    config = sequence_source(
        name,
        topic_name,
        **{"transaction.boundary": "interval", "transaction.boundary.interval.ms": "1000"},
    )
    cluster.create(name, config)
    cluster.wait_running(name, 1, SETTLE_S)
    wait_until(
        lambda: len(read_topic(broker.bootstrap_servers, topic_name)) >= MINIMUM,
        SETTLE_S,
        f"{MINIMUM} committed records",
    )
    owner = cluster.placement()[f"{name}-0"][1]
    zombie = next(i for i in range(WORKERS) if cluster.worker_id(i) == owner)
    survivor = 1 - zombie
    mark = cluster.log_mark(zombie)
    cluster.workers[zombie].signal_group(signal.SIGSTOP)
    try:
        moved = wait_until(
            lambda: (
                cluster.placement(via=survivor).get(f"{name}-0", ("", ""))
                == ("RUNNING", cluster.worker_id(survivor))
            ),
            SETTLE_S,
            f"{name}-0 running on the other worker",
        )
        assert moved
        before = len(read_topic(broker.bootstrap_servers, topic_name))
        wait_until(
            lambda: len(read_topic(broker.bootstrap_servers, topic_name)) >= before + MINIMUM,
            SETTLE_S,
            "records committed by the task's new instance",
        )
    finally:
        cluster.workers[zombie].signal_group(signal.SIGCONT)

    def since_freeze() -> str:
        return cluster.workers[zombie].text()[mark:]

    try:
        wait_until(
            lambda: f"task {name}-0 was fenced out" in since_freeze(),
            SETTLE_S,
            "the zombie's fencing error in its worker's log",
        )
    except AssertionError as exc:
        tail = since_freeze()[-6000:]
        raise AssertionError(f"{exc}\nthe zombie's log since the freeze:\n{tail}") from None
    assert "Exception in thread" not in since_freeze()  # every error ends in the task's status
    assert cluster.placement(via=survivor)[f"{name}-0"] == ("RUNNING", cluster.worker_id(survivor))
    _delete(cluster, name)
    _assert_exactly_once(read_topic(broker.bootstrap_servers, topic_name), name, 1)


def test_a_cluster_rolls_from_disabled_through_preparing_to_enabled(
    broker: KafkaCluster, plugins: str, topic_name: str, tmp_path: Path
) -> None:
    """Kafka's documented upgrade, worker by worker with clean bounces while a source runs:
    every worker to ``preparing``, then every worker to ``enabled``. The task keeps running
    throughout, runs exactly-once at the end, and no record is lost or written twice."""
    broker.create_topic(topic_name, 3)
    rolling = eos_cluster(
        tmp_path, broker, plugins, "disabled", **group_settings(broker, SCHEDULED_DELAY_MS)
    )
    name = f"rolling-{uuid.uuid4().hex[:6]}"
    try:
        rolling.start()
        rolling.create(name, sequence_source(name, topic_name))
        rolling.wait_running(name, 1, SETTLE_S)
        for step in ("preparing", "enabled"):
            rolling.props["exactly.once.source.support"] = step
            for index in range(WORKERS):
                seen = len(read_topic(broker.bootstrap_servers, topic_name))
                rolling.bounce(index)
                rolling.wait_running(name, 1, SETTLE_S)
                _wait_for_records(broker, topic_name, seen + MINIMUM)
        owner = rolling.placement()[f"{name}-0"][1]
        runner = next(i for i in range(WORKERS) if rolling.worker_id(i) == owner)
        assert f"task {name}-0 runs exactly-once" in rolling.workers[runner].text()
        _delete(rolling, name)
    finally:
        rolling.stop()
    _assert_exactly_once(read_topic(broker.bootstrap_servers, topic_name), name, 1)


def test_separate_offsets_topic(
    cluster: DistributedCluster, broker: KafkaCluster, topic_name: str
) -> None:
    """The connector's own offsets topic holds its offsets at poll boundaries, copied to the
    worker's topic. Then a downgrade: the whole cluster restarted with exactly-once support
    off; the task resumes from those offsets, and every record up to the last committed
    offset is there exactly once (beyond it, at-least-once)."""
    broker.create_topic(topic_name, 3)
    name = f"own-offsets-{uuid.uuid4().hex[:6]}"
    own = f"{name}-offsets"
    config = sequence_source(name, topic_name, **{"offsets.storage.topic": own})
    cluster.create(name, config)
    cluster.wait_running(name, 1, SETTLE_S)
    wait_until(
        lambda: len(read_topic(broker.bootstrap_servers, topic_name)) >= MINIMUM,
        SETTLE_S,
        f"{MINIMUM} committed records",
    )
    saved = _saved(read_topic(broker.bootstrap_servers, own), name)
    assert saved and all(s % PER_POLL == 0 for s in saved), saved
    worker_topic = cluster.props["offset.storage.topic"]
    copied = _saved(read_topic(broker.bootstrap_servers, worker_topic), name)
    assert copied and all(s % PER_POLL == 0 for s in copied), copied

    cluster.stop_workers(range(WORKERS))
    cluster.props["exactly.once.source.support"] = "disabled"
    cluster.props["offset.flush.interval.ms"] = "500"
    cluster.restart_workers(range(WORKERS))
    cluster.wait_running(name, 1, SETTLE_S)
    before = len(read_topic(broker.bootstrap_servers, topic_name))
    wait_until(
        lambda: len(read_topic(broker.bootstrap_servers, topic_name)) >= before + MINIMUM,
        SETTLE_S,
        f"{MINIMUM} more records after the downgrade",
    )
    _delete(cluster, name)
    records = read_topic(broker.bootstrap_servers, topic_name)
    last = max(_saved(read_topic(broker.bootstrap_servers, own), name))
    upto = [m for m in records if int((m.key() or b"").decode().rsplit("-", 1)[1]) <= last]
    _assert_exactly_once(upto, name, 1)
    assert max(seqnos(upto, name)[0]) == last
