"""The exactly-once source loop (KIP-618) built by build_task() on the in-process host and the
in-memory cluster, whose transactional producer keeps records invisible until their
transaction commits and fences older producers of a transactional id (tests/support/
fake_kafka.py). What the cluster's logs hold is what a read_committed consumer would see.

The offsets live in a topic of the same cluster, read back from it (as the Kafka offset store
reads its topic), so a transaction that did not commit leaves no offset either.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from confluent_kafka import KafkaException
from plugin_api.connector import freeze_partition

from core.offsets import WriteWaiter
from core.runtime.build import build_task
from core.runtime.exactly_once import ExactlyOnceSourceTaskLoop, TaskFencedError
from core.runtime.services import TaskServices
from core.runtime.spec import (
    ClientConfigs,
    ExactlyOnceSpec,
    PipelineSpec,
    PluginRef,
    StageSpec,
    TaskSettings,
    TaskSpec,
)
from core.stores.offsets import offset_key, parse_offset_key
from core.stores.task_offsets import TaskOffsetStore
from plugin_api import ConnectException
from tests.support.fake_kafka import FakeClients, FakeCluster, FakeProducer
from tests.support.loops import Clock, InProcessHosts, run_until

OFFSETS_TOPIC = "connect-offsets"
TOPIC = "out"
PER_POLL = 10


class TopicOffsets:
    """Offsets read from the offsets topic's log (last value per key), as the Kafka store
    reads its topic; writes go to the log directly (the at-least-once path)."""

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster

    def _latest(self) -> dict[bytes, bytes | None]:
        latest: dict[bytes, bytes | None] = {}
        for message in self.cluster.logs.get((OFFSETS_TOPIC, 0), []):
            latest[message.key()] = message.value()  # type: ignore[index]
        return latest

    def get(self, connector: str, partitions: Iterable[Mapping[str, Any]]) -> dict[Any, Any]:
        latest = self._latest()
        found = {}
        for partition in partitions:
            value = latest.get(offset_key(connector, partition))
            if value is not None:
                found[freeze_partition(partition)] = json.loads(value)
        return found

    def put(self, connector: str, entries: Iterable[tuple[Mapping[str, Any], Any]]) -> WriteWaiter:
        for partition, offset in entries:
            value = None if offset is None else json.dumps(offset).encode()
            self.cluster.append(OFFSETS_TOPIC, 0, offset_key(connector, partition), value)
        return self.flush

    def flush(self) -> None:
        pass

    def connector_offsets(self, connector: str) -> list[tuple[dict[str, Any], Any]]:
        rows = []
        for key, value in self._latest().items():
            name, partition = parse_offset_key(key)
            if name == connector and value is not None:
                rows.append((partition, json.loads(value)))
        return rows


def _spec(
    boundary: str = "poll", interval_s: float = 5.0, config: Mapping[str, str] | None = None
) -> TaskSpec:
    target = "tests.support.sequence_source:SequenceSourceConnector"
    props = {"name": "c", "topic": TOPIC, "messages.per.poll": str(PER_POLL), **(config or {})}
    converter = StageSpec(
        "copycat_converters:StringConverter", {"converter.type": "value"}, None, "value.converter"
    )
    return TaskSpec(
        connector="c",
        task_id=0,
        kind="source",
        task_config=props,
        connector_config={"connector.class": target, **props},
        plugin=PluginRef("source", target, "SequenceSource", "1.0", "t==1", "in-process", ""),
        pipeline=PipelineSpec(key_converter=converter, value_converter=converter),
        clients=ClientConfigs(producer={"transactional.id": "g-c-0"}),
        settings=TaskSettings(topic_creation_enabled=False, call_timeout_s=30.0),
        exactly_once=ExactlyOnceSpec("g-c-0", boundary, interval_s),
    )


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster()


@pytest.fixture
def clock() -> Clock:
    return Clock()


def _services(cluster: FakeCluster, clock: Clock) -> TaskServices:
    offsets = TopicOffsets(cluster)
    return TaskServices(
        hosts=InProcessHosts(),
        offsets=offsets,
        clients=FakeClients(cluster),
        clock=clock,
        task_offsets=lambda spec: TaskOffsetStore(offsets, topic=OFFSETS_TOPIC),
    )


def _loop(spec: TaskSpec, cluster: FakeCluster, clock: Clock) -> ExactlyOnceSourceTaskLoop:
    loop = build_task(spec, _services(cluster, clock))
    assert isinstance(loop, ExactlyOnceSourceTaskLoop)
    loop.start()
    return loop


def _seqs(cluster: FakeCluster) -> list[int]:
    return [int(bytes(v or b"").decode().rsplit("-", 1)[1]) for v in cluster.values(TOPIC)]


def _saved(cluster: FakeCluster) -> list[int]:
    """Every offset written to the offsets topic, in order."""
    return [json.loads(v)["saved"] for v in cluster.values(OFFSETS_TOPIC) if v is not None]


def test_poll_boundary_commits_each_batch_with_its_offsets(
    cluster: FakeCluster, clock: Clock
) -> None:
    loop = _loop(_spec("poll"), cluster, clock)
    try:
        run_until(loop, lambda: len(cluster.values(TOPIC)) >= 5 * PER_POLL)
    finally:
        loop.stop(failed=False, timeout_s=5)
    seqs = _seqs(cluster)
    assert seqs == list(range(1, len(seqs) + 1))
    # One offset record per transaction, saying exactly how far the records go.
    saved = _saved(cluster)
    assert saved == [PER_POLL * i for i in range(1, len(saved) + 1)]
    assert saved[-1] == seqs[-1]
    assert cluster.transactions_committed == len(saved)


def test_interval_boundary_commits_when_due_even_while_idle(
    cluster: FakeCluster, clock: Clock
) -> None:
    loop = _loop(_spec("interval", 5.0, {"max.messages": "30"}), cluster, clock)
    try:
        run_until(loop, lambda: loop.records_moved >= 30)
        for _ in range(5):
            loop.iteration()
        assert cluster.values(TOPIC) == []  # all sent, none visible: the interval is not over
        clock.now += 5.0
        loop.iteration()  # nothing more to poll, but the transaction is due
        assert _seqs(cluster) == list(range(1, 31))
        assert _saved(cluster) == [30]
    finally:
        loop.stop(failed=False, timeout_s=5)


@pytest.mark.parametrize("boundary", ["poll", "interval"])
def test_an_idle_task_still_records_successful_commits(
    cluster: FakeCluster, clock: Clock, boundary: str
) -> None:
    """Kafka's ExactlyOnceWorkerSourceTask.commitTransaction records a successful commit when
    there is nothing to commit (an empty poll with poll boundaries, an interval that came
    round): offset-commit-success-percentage of a quiet task stays 1, not 0."""
    loop = _loop(_spec(boundary, 5.0, {"max.messages": "30"}), cluster, clock)
    try:
        run_until(loop, lambda: loop.records_moved >= 30)
        clock.now += 5.0
        for _ in range(5):
            loop.iteration()
        committed, ok = cluster.transactions_committed, loop.counters.commits_ok
        assert loop.counters.commits_failed == 0
        for _ in range(3):
            clock.now += 5.0
            for _ in range(5):
                loop.iteration()
        assert cluster.transactions_committed == committed  # nothing more was committed
        assert loop.counters.commits_ok >= ok + 3
        assert loop.counters.commits_failed == 0
    finally:
        loop.stop(failed=False, timeout_s=5)


def test_connector_boundaries_commit_and_abort_where_the_task_says(
    cluster: FakeCluster, clock: Clock
) -> None:
    loop = _loop(_spec("connector", config={"max.messages": "100"}), cluster, clock)
    try:
        run_until(loop, lambda: loop.records_moved >= 100)
        loop.iteration()
    finally:
        loop.stop(failed=False, timeout_s=5)
    fibonacci = [1, 2, 3, 5, 8, 13, 21, 34, 55, 89]
    # Offsets at every boundary, aborted transactions included (the task must not see their
    # records again); nothing past the last boundary (89): that transaction never ended.
    assert _saved(cluster) == fibonacci
    aborted: set[int] = set()
    for prior, boundary in zip(fibonacci, fibonacci[1:], strict=False):
        if boundary % 2 == 0:
            aborted |= set(range(prior + 1, boundary + 1))
    assert _seqs(cluster) == [s for s in range(1, 90) if s not in aborted]
    assert cluster.transactions_aborted == 3 + 1  # boundaries 2, 8, 34; the open one at stop


def test_a_fenced_task_fails_and_commits_nothing_more(cluster: FakeCluster, clock: Clock) -> None:
    loop = _loop(_spec("interval", interval_s=5.0), cluster, clock)
    run_until(loop, lambda: loop.records_moved >= 3 * PER_POLL)
    # A newer instance of the task initialises the same transactional id.
    FakeProducer(cluster, {"transactional.id": "g-c-0"}).init_transactions()
    clock.now += 5.0
    with pytest.raises(TaskFencedError, match="fenced out of transactional id 'g-c-0'"):
        loop.iteration()
    loop.stop(failed=True, timeout_s=5)
    assert cluster.values(TOPIC) == []
    assert _saved(cluster) == []


def test_a_fenced_error_met_by_a_poll_fails_the_task_as_fenced(
    cluster: FakeCluster, clock: Clock
) -> None:
    """No commit is due: the fatal error comes out of the producer's poll, which serves it."""
    loop = _loop(_spec("interval", interval_s=5.0), cluster, clock)
    run_until(loop, lambda: loop.records_moved >= 3 * PER_POLL)
    FakeProducer(cluster, {"transactional.id": "g-c-0"}).init_transactions()
    with pytest.raises(TaskFencedError, match="fenced out of transactional id 'g-c-0'"):
        loop.iteration()
    loop.stop(failed=True, timeout_s=5)
    assert cluster.values(TOPIC) == []


def test_records_refused_for_an_old_epoch_fail_the_task_as_fenced(
    cluster: FakeCluster, clock: Clock
) -> None:
    """The fatal error was served elsewhere; what is left are the records the broker refused."""
    loop = _loop(_spec("interval", interval_s=5.0), cluster, clock)
    run_until(loop, lambda: loop.records_moved >= 3 * PER_POLL)
    producer = loop.producer
    assert isinstance(producer, FakeProducer)
    producer.holding = True
    loop.iteration()  # records queued, not delivered yet
    FakeProducer(cluster, {"transactional.id": "g-c-0"}).init_transactions()
    producer.holding = False
    with pytest.raises(KafkaException):
        producer.poll(0)  # serves the fatal error and the refused deliveries
    with pytest.raises(TaskFencedError, match="fenced out of transactional id 'g-c-0'"):
        loop.iteration()
    loop.stop(failed=True, timeout_s=5)
    assert cluster.values(TOPIC) == []


def test_a_task_fenced_when_told_to_stop_says_so(cluster: FakeCluster, clock: Clock) -> None:
    loop = _loop(_spec("interval", interval_s=5.0), cluster, clock)
    run_until(loop, lambda: loop.records_moved >= 3 * PER_POLL)
    FakeProducer(cluster, {"transactional.id": "g-c-0"}).init_transactions()
    with pytest.raises(TaskFencedError, match="fenced out of transactional id 'g-c-0'"):
        loop.stop(failed=False, timeout_s=5)
    assert cluster.values(TOPIC) == []
    assert _saved(cluster) == []


def test_the_next_instance_resumes_from_the_committed_offsets_only(
    cluster: FakeCluster, clock: Clock
) -> None:
    first = _loop(_spec("interval", interval_s=5.0), cluster, clock)
    run_until(first, lambda: first.records_moved >= 2 * PER_POLL)
    clock.now += 5.0
    first.iteration()  # commits what it sent so far
    committed = len(cluster.values(TOPIC))
    run_until(first, lambda: first.records_moved >= committed + 3 * PER_POLL)
    # A crash here: the open transaction is simply never committed. The next instance fences
    # it and resumes after the committed offsets.
    second = _loop(_spec("poll"), cluster, clock)
    try:
        run_until(second, lambda: len(cluster.values(TOPIC)) >= committed + 2 * PER_POLL)
    finally:
        second.stop(failed=False, timeout_s=5)
    seqs = _seqs(cluster)
    assert seqs == list(range(1, len(seqs) + 1))
    with pytest.raises(TaskFencedError):
        first.commit_offsets()
    first.stop(failed=True, timeout_s=5)
    assert _seqs(cluster) == seqs


def test_a_task_may_not_write_to_its_own_offsets_topic(cluster: FakeCluster, clock: Clock) -> None:
    loop = _loop(_spec("poll", config={"naughty.topic": OFFSETS_TOPIC}), cluster, clock)
    with pytest.raises(ConnectException, match="may not write records to its own offsets topic"):
        run_until(loop, lambda: False, rounds=5)
    loop.stop(failed=True, timeout_s=5)
    assert cluster.values(OFFSETS_TOPIC) == []


def test_stopping_commits_an_open_interval_transaction(cluster: FakeCluster, clock: Clock) -> None:
    loop = _loop(_spec("interval", interval_s=60.0), cluster, clock)
    run_until(loop, lambda: loop.records_moved >= PER_POLL)
    loop.stop(failed=False, timeout_s=5)
    assert _seqs(cluster)[-1] == _saved(cluster)[-1] >= PER_POLL
