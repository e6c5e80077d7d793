"""Exactly-once sinks on the sink loop: offsets kept in the target, rewinds on start / open.

The loop runs on the in-process host twin and in-memory Kafka clients whose consumer behaves
as librdkafka's does in the rebalance callback (``seek()`` there fails; the callback may set
the assignment itself). The sink is :mod:`tests.support.target_sink`: its target refuses any
record that does not follow the last one of its partition, so a duplicate fails the test
where it happens.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from core.offsets import MemoryOffsetStore
from core.runtime.build import build_task
from core.runtime.loop import TaskLoop
from core.runtime.services import TaskServices
from core.runtime.spec import ClientConfigs, PipelineSpec, PluginRef, TaskSettings, TaskSpec
from tests.support.fake_kafka import FakeClients, FakeCluster, FakeConsumer
from tests.support.loops import Clock, InProcessHosts, run_until
from tests.support.target_sink import TARGETS, Target

COMMIT_INTERVAL_S = 10.0
TOPIC = "in"
RECORDS = 300
CONNECTOR = "tgt"
GROUP = f"connect-{CONNECTOR}"
TARGET_CLASS = "tests.support.target_sink:TargetSinkConnector"
EAGER = "range,roundrobin"  # librdkafka's default
COOPERATIVE = "cooperative-sticky"


def _spec(target: str, strategy: str = EAGER, **extra: str) -> TaskSpec:
    config = {"topics": TOPIC, "target": target, **extra}
    return TaskSpec(
        connector=CONNECTOR,
        task_id=0,
        kind="sink",
        task_config=dict(config),
        connector_config={"name": CONNECTOR, "connector.class": TARGET_CLASS, **config},
        plugin=PluginRef("sink", TARGET_CLASS, "tests.support", "1.0", "", "in-process", ""),
        pipeline=PipelineSpec(),
        clients=ClientConfigs(
            consumer={"group.id": GROUP, "partition.assignment.strategy": strategy}
        ),
        settings=TaskSettings(
            commit_interval_s=COMMIT_INTERVAL_S, topic_creation_enabled=False, call_timeout_s=30.0
        ),
    )


@pytest.fixture
def cluster() -> FakeCluster:
    # Batches of 25 at most: puts, prefetches and rebalances then fall mid-stream.
    made = FakeCluster(partitions=2, fetched_per_consume=25)
    for i in range(RECORDS):
        made.append(TOPIC, i % 2, None, f"v{i}".encode())
    return made


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def services(cluster: FakeCluster, clock: Clock) -> TaskServices:
    return TaskServices(
        hosts=InProcessHosts(),
        offsets=MemoryOffsetStore(),
        clients=FakeClients(cluster),
        clock=clock,
    )


@pytest.fixture
def target() -> Iterator[tuple[str, Target]]:
    name = uuid.uuid4().hex
    TARGETS[name] = Target()
    yield name, TARGETS[name]
    del TARGETS[name]


@pytest.fixture
def loops() -> Iterator[list[TaskLoop]]:
    made: list[TaskLoop] = []
    yield made
    for loop in made:
        try:
            loop.stop(failed=True, timeout_s=1)
        except Exception:  # noqa: BLE001 - already stopped
            pass


def _consumer(services: TaskServices, index: int = -1) -> FakeConsumer:
    consumers: list[FakeConsumer] = services.clients.consumers  # type: ignore[attr-defined]
    return consumers[index]


def _everything_once(target: Target) -> None:
    per_partition = RECORDS // 2
    for partition in (0, 1):
        assert target.offsets_of(TOPIC, partition) == list(range(per_partition))
    assert sorted(r[3] for r in target.rows) == sorted(f"v{i}".encode() for i in range(RECORDS))  # type: ignore[type-var]


def test_a_sink_keeping_its_offsets_in_the_target_commits_nothing_to_kafka(
    services: TaskServices,
    cluster: FakeCluster,
    clock: Clock,
    target: tuple[str, Target],
    loops: list[TaskLoop],
) -> None:
    name, written = target
    loop = build_task(_spec(name), services)
    loops.append(loop)
    loop.start()
    run_until(loop, lambda: len(written.rows) == RECORDS)
    clock.now += COMMIT_INTERVAL_S
    loop.iteration()
    loops.remove(loop)
    loop.stop(failed=False, timeout_s=1)
    assert written.pre_commits >= 2  # the periodic commit and the one on stop asked the task
    assert cluster.committed[GROUP] == {}
    _everything_once(written)


@pytest.mark.parametrize("strategy", [EAGER, COOPERATIVE])
def test_after_a_crash_the_sink_resumes_exactly_where_its_target_says(
    services: TaskServices,
    cluster: FakeCluster,
    target: tuple[str, Target],
    loops: list[TaskLoop],
    strategy: str,
) -> None:
    name, written = target
    first = build_task(_spec(name, strategy), services)
    loops.append(first)
    first.start()
    run_until(first, lambda: len(written.rows) >= RECORDS // 3)
    # A crash: the first loop is abandoned mid-stream, nothing is stopped, closed or committed.
    # (Its host would die with it; this one lives on, so its last put() is let finish first.)
    loops.remove(first)
    if first.host.pending:  # type: ignore[attr-defined]
        first.host.result()  # type: ignore[attr-defined]
    at_crash = dict(written.offsets)
    # And the group's committed offsets say something else (left by an earlier deployment,
    # or an operator): the target wins.
    cluster.committed[GROUP].update({(TOPIC, 0): 5, (TOPIC, 1): 5})

    second = build_task(_spec(name, strategy), services)
    loops.append(second)
    second.start()
    second.iteration()
    consumer = _consumer(services)
    assert {tp: consumer.positions[tp] >= at_crash.get(tp, 0) for tp in consumer.assigned} == {
        (TOPIC, 0): True,
        (TOPIC, 1): True,
    }
    run_until(second, lambda: len(written.rows) == RECORDS)
    _everything_once(written)


def test_a_rewind_asked_in_start_applies_when_the_partitions_are_assigned(
    services: TaskServices, target: tuple[str, Target], loops: list[TaskLoop]
) -> None:
    name, written = target
    written.offsets.update({(TOPIC, 0): 100, (TOPIC, 1): 140})
    loop = build_task(_spec(name, **{"rewind.in": "start"}), services)
    loops.append(loop)
    loop.start()
    run_until(loop, lambda: len(written.rows) == (150 - 100) + (150 - 140))
    assert written.offsets_of(TOPIC, 0) == list(range(100, 150))
    assert written.offsets_of(TOPIC, 1) == list(range(140, 150))


def test_partitions_revoked_and_assigned_again_resume_from_the_target(
    services: TaskServices,
    cluster: FakeCluster,
    target: tuple[str, Target],
    loops: list[TaskLoop],
) -> None:
    name, written = target
    loop = build_task(_spec(name), services)
    loops.append(loop)
    loop.start()
    consumer = _consumer(services)
    revoked_at: list[int] = []
    for _ in range(3):
        # A batch is in put() in the host and the next one prefetched when the group takes
        # every partition away; nothing was ever committed to Kafka, so only the target's
        # offsets, asked for again in open(), can say where to go on.
        run_until(loop, lambda: len(written.rows) > len(revoked_at) * 60 + 30)
        revoked_at.append(len(written.rows))
        consumer.revoke_all()
    run_until(loop, lambda: len(written.rows) == RECORDS)
    assert consumer.assignments == 4
    assert cluster.committed[GROUP] == {}
    _everything_once(written)


def test_a_rewind_asked_in_put_drops_what_was_prefetched_and_reads_from_there(
    services: TaskServices, target: tuple[str, Target], loops: list[TaskLoop]
) -> None:
    name, written = target
    # After 80 records of partition 0 the target loses its last 40 and the task rewinds to 40.
    loop = build_task(_spec(name, **{"lose.after": "80"}), services)
    loops.append(loop)
    loop.start()
    run_until(loop, lambda: len(written.rows) == RECORDS)
    _everything_once(written)
