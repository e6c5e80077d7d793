"""Both task loops, built by build_task() from a TaskSpec, on the in-process host twin and
in-memory Kafka clients: no broker, no subprocess. The bundled FileStream connectors and
StringConverter run in this interpreter (they are importable in the dev environment)."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from confluent_kafka import KafkaError

from core.offsets import MemoryOffsetStore
from core.runtime.build import build_task
from core.runtime.loop import TaskLoop
from core.runtime.services import TaskServices
from core.runtime.sink import CONSUME_TIMEOUT_S, TOPIC_ID_RETRY_S, TOPICS_REGEX_REFRESH_S
from core.runtime.source import DRAIN_AFTER_S
from core.runtime.spec import (
    ClientConfigs,
    PipelineSpec,
    PluginRef,
    StageSpec,
    TaskSettings,
    TaskSpec,
)
from plugin_api import (
    ConfigDef,
    ConnectException,
    RecordMetadata,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
    TopicPartition,
)
from tests.support.fake_kafka import FakeClients, FakeCluster, FakeProducer
from tests.support.loops import Clock, InProcessHosts, run_until
from tests.support.processes import wait_until

COMMIT_INTERVAL_S = 10.0


def _ref(kind: str, target: str) -> PluginRef:
    return PluginRef(
        kind, target, target.replace(":", "."), "0.1.0", "copycat-file==0.1.0", "in-process", ""
    )


def _spec(kind: str, connector_config: dict[str, str]) -> TaskSpec:
    target = (
        "copycat_file:FileStreamSourceConnector"
        if kind == "source"
        else "copycat_file:FileStreamSinkConnector"
    )
    converter = StageSpec(
        "copycat_converters:StringConverter", {"converter.type": "value"}, None, "value.converter"
    )
    return TaskSpec(
        connector="c",
        task_id=0,
        kind=kind,
        task_config=dict(connector_config),
        connector_config={"name": "c", "connector.class": target, **connector_config},
        plugin=_ref(kind, target),
        pipeline=PipelineSpec(value_converter=converter),
        # auto.offset.reset: Kafka Connect's sink default, as core.task_specs merges it.
        clients=ClientConfigs(
            producer={"client.id": "p"},
            consumer={"group.id": "connect-c", "auto.offset.reset": "earliest"},
        ),
        settings=TaskSettings(
            commit_interval_s=COMMIT_INTERVAL_S, topic_creation_enabled=False, call_timeout_s=30.0
        ),
    )


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster()


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
def loops() -> Iterator[list[TaskLoop]]:
    made: list[TaskLoop] = []
    yield made
    for loop in made:
        try:
            loop.stop(failed=True, timeout_s=1)
        except Exception:  # noqa: BLE001 - already stopped
            pass


# -- source -----------------------------------------------------------------------------------


def test_source_loop_sends_every_line_and_commits_offsets_when_due(
    tmp_path: Path,
    services: TaskServices,
    cluster: FakeCluster,
    clock: Clock,
    loops: list[TaskLoop],
) -> None:
    data = tmp_path / "in.txt"
    data.write_text("".join(f"line {i}\n" for i in range(250)))
    loop = build_task(_spec("source", {"file": str(data), "topic": "t"}), services)
    loops.append(loop)
    loop.start()
    run_until(loop, lambda: len(cluster.values("t")) == 250)
    assert cluster.values("t") == [f"line {i}".encode() for i in range(250)]
    offsets = services.offsets.connector_offsets("c")
    assert offsets == []  # not due yet
    clock.now += COMMIT_INTERVAL_S
    loop.iteration()
    assert [o for _, o in services.offsets.connector_offsets("c")] == [
        {"position": data.stat().st_size}
    ]
    assert loop.topics() == {"t"} and loop.records_moved == 250


def test_source_loop_paused_polls_nothing_and_resumes_where_it_was(
    tmp_path: Path, services: TaskServices, cluster: FakeCluster, loops: list[TaskLoop]
) -> None:
    data = tmp_path / "in.txt"
    data.write_text("a\nb\n")
    loop = build_task(_spec("source", {"file": str(data), "topic": "t"}), services)
    loops.append(loop)
    loop.start()
    run_until(loop, lambda: len(cluster.values("t")) == 2)
    loop.pause()
    loop.iteration()  # a poll already in flight when the pause came is collected and sent
    _append(data, "c\n")
    for _ in range(20):
        assert loop.iteration() == 0
    assert cluster.values("t") == [b"a", b"b"]
    loop.resume()
    run_until(loop, lambda: len(cluster.values("t")) == 3)
    assert cluster.values("t") == [b"a", b"b", b"c"]


def test_source_loop_stop_commits_what_was_acknowledged(
    tmp_path: Path, services: TaskServices, cluster: FakeCluster
) -> None:
    data = tmp_path / "in.txt"
    data.write_text("x\ny\n")
    loop = build_task(_spec("source", {"file": str(data), "topic": "t"}), services)
    loop.start()
    run_until(loop, lambda: len(cluster.values("t")) == 2)
    loop.stop(failed=False, timeout_s=1)
    assert [o for _, o in services.offsets.connector_offsets("c")] == [{"position": 4}]


class AckingSource(SourceTask):
    """Overrides commit_record(): needs every record's acknowledgement."""

    acked: list[tuple[object, int | None]] = []

    def start(self, props: Mapping[str, str]) -> None:
        AckingSource.acked = []
        self.sent = 0

    def poll(self) -> list[SourceRecord]:
        if self.sent >= 3:
            return []
        self.sent += 1
        return [SourceRecord({"p": 0}, {"n": self.sent}, "t", value=f"r{self.sent}")]

    def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        AckingSource.acked.append((record.value, None if metadata is None else metadata.offset))

    def stop(self) -> None:
        pass

    def version(self) -> str:
        return "1"


class AckingSourceConnector(SourceConnector):
    def start(self, props: Mapping[str, str]) -> None:
        pass

    def task_class(self) -> type[SourceTask]:
        return AckingSource

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{}]

    def config(self) -> ConfigDef:
        return ConfigDef()

    def stop(self) -> None:
        pass

    def version(self) -> str:
        return "1"


def _producer(services: TaskServices) -> FakeProducer:
    return services.clients.producers[-1]  # type: ignore[attr-defined, no-any-return]


def _file_source(
    tmp_path: Path, services: TaskServices, text: str
) -> tuple[Path, TaskLoop, FakeProducer]:
    """A FileStreamSource loop (not started) on a file of ``text`` to topic ``t``: the file,
    the loop and its producer."""
    data = tmp_path / "in.txt"
    data.write_text(text)
    loop = build_task(_spec("source", {"file": str(data), "topic": "t"}), services)
    return data, loop, _producer(services)


def _append(data: Path, text: str) -> None:
    with data.open("a") as fh:
        fh.write(text)


def _acking_source(services: TaskServices) -> TaskLoop:
    """An AckingSourceConnector loop (not started), to topic ``t``."""
    target = f"{__name__}:AckingSourceConnector"
    spec = dataclasses.replace(_spec("source", {"topic": "t"}), plugin=_ref("source", target))
    return build_task(spec, services)


def _too_large() -> KafkaError:
    return KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "Broker: Message size too large")


SEND_FAILED = "could not send a record for topic .t. partition 0"


def test_source_offsets_wait_until_the_producer_has_every_record_acknowledged(
    tmp_path: Path, services: TaskServices, cluster: FakeCluster, clock: Clock
) -> None:
    data, loop, producer = _file_source(tmp_path, services, "a\nb\n")
    assert producer.config["delivery.report.only.error"] is True  # no per-record callbacks
    producer.holding = True  # the broker has not acknowledged anything yet
    loop.start()
    run_until(loop, lambda: loop.records_moved == 2)
    clock.now += COMMIT_INTERVAL_S
    loop.iteration()  # the commit is due with records in flight: it waits for them
    _append(data, "c\n")
    run_until(loop, lambda: loop.records_moved == 3)  # polling goes on meanwhile
    assert services.offsets.connector_offsets("c") == []
    clock.now += DRAIN_AFTER_S  # the queue never emptied on its own: a drain
    loop.iteration()
    _append(data, "d\n")
    for _ in range(5):
        assert loop.iteration() == 0  # the drain holds back further polls
    assert loop.records_moved == 3 and services.offsets.connector_offsets("c") == []
    producer.holding = False
    loop.iteration()  # drained: the commit happens, then polling goes on
    assert [o for _, o in services.offsets.connector_offsets("c")] == [{"position": 6}]
    run_until(loop, lambda: loop.records_moved == 4)
    loop.stop(failed=False, timeout_s=1)
    assert [o for _, o in services.offsets.connector_offsets("c")] == [{"position": 8}]
    assert cluster.values("t") == [b"a", b"b", b"c", b"d"]


def test_a_waiting_commit_is_made_once_the_queue_empties_on_its_own(
    tmp_path: Path, services: TaskServices, clock: Clock
) -> None:
    data, loop, producer = _file_source(tmp_path, services, "a\nb\n")
    producer.holding = True
    loop.start()
    run_until(loop, lambda: loop.records_moved == 2)
    clock.now += COMMIT_INTERVAL_S
    loop.iteration()
    assert services.offsets.connector_offsets("c") == []
    producer.holding = False
    loop.iteration()  # acknowledged meanwhile: committed now, not at the next interval
    assert [o for _, o in services.offsets.connector_offsets("c")] == [{"position": 4}]
    loop.stop(failed=False, timeout_s=1)


def test_a_failed_delivery_fails_the_source_and_commits_nothing(
    tmp_path: Path, services: TaskServices, clock: Clock
) -> None:
    data, loop, producer = _file_source(tmp_path, services, "a\nb\n")
    producer.failing = "MSG_SIZE_TOO_LARGE"
    loop.start()
    with pytest.raises(ConnectException, match=SEND_FAILED):
        for _ in range(20):
            loop.iteration()
            clock.now += COMMIT_INTERVAL_S
    loop.stop(failed=True, timeout_s=1)
    assert services.offsets.connector_offsets("c") == []


def test_a_failed_delivery_still_commits_the_polls_acknowledged_before_it(
    tmp_path: Path, services: TaskServices
) -> None:
    # No per-record acks: "a" and "b" are known acknowledged once the producer's queue was
    # seen empty; the delivery of "c" then fails the task, whose final commit stores them,
    # as Kafka's does (offset.flush.interval.ms has not come round yet).
    data, loop, producer = _file_source(tmp_path, services, "a\nb\n")
    loop.start()
    run_until(loop, lambda: loop.records_moved == 2)
    loop.iteration()  # the queue is empty: "a" and "b" are acknowledged
    producer.failing = _too_large()
    _append(data, "c\n")
    with pytest.raises(ConnectException, match=SEND_FAILED):
        run_until(loop, lambda: False)
    assert services.offsets.connector_offsets("c") == []  # no periodic commit was due
    loop.stop(failed=True, timeout_s=1)
    assert [o for _, o in services.offsets.connector_offsets("c")] == [{"position": 4}]


def test_a_failed_delivery_commits_nothing_still_in_flight_with_it(
    tmp_path: Path, services: TaskServices, cluster: FakeCluster
) -> None:
    # No per-record acks: "a" fails while "b", sent after it, is acknowledged; nothing says
    # which poll the failed record was in, so neither poll's offsets are committed.
    data, loop, producer = _file_source(tmp_path, services, "a\n")
    producer.holding = True
    loop.start()
    run_until(loop, lambda: loop.records_moved == 1)
    _append(data, "b\n")
    run_until(loop, lambda: loop.records_moved == 2)
    producer.failing = _too_large()
    producer.failing_if = lambda value: value == b"a"
    producer.holding = False
    with pytest.raises(ConnectException, match=SEND_FAILED):
        run_until(loop, lambda: False)
    loop.stop(failed=True, timeout_s=1)
    assert cluster.values("t") == [b"b"]
    assert services.offsets.connector_offsets("c") == []


def test_a_failed_delivery_with_per_record_acks_commits_the_acknowledged_polls_before_it(
    services: TaskServices,
) -> None:
    loop = _acking_source(services)
    producer = _producer(services)
    producer.failing = _too_large()
    producer.failing_if = lambda value: b"r2" in value
    loop.start()
    with pytest.raises(ConnectException, match="could not send a record for topic .t."):
        run_until(loop, lambda: False)
    loop.stop(failed=True, timeout_s=1)
    # r1 acknowledged, r2 refused: r3, acknowledged or not, is after the failed record.
    assert [o for _, o in services.offsets.connector_offsets("c")] == [{"n": 1}]


def test_a_source_overriding_commit_record_gets_each_records_acknowledgement(
    services: TaskServices, clock: Clock
) -> None:
    loop = _acking_source(services)
    assert "delivery.report.only.error" not in _producer(services).config
    loop.start()
    run_until(loop, lambda: loop.records_moved == 3)
    clock.now += COMMIT_INTERVAL_S
    loop.iteration()
    loop.iteration()  # acks go back to the host with the next poll
    assert AckingSource.acked == [("r1", 0), ("r2", 1), ("r3", 2)]
    assert [o for _, o in services.offsets.connector_offsets("c")] == [{"n": 3}]
    loop.stop(failed=False, timeout_s=1)


def test_a_source_names_each_topic_to_its_driver_before_producing_to_it(
    tmp_path: Path, services: TaskServices, cluster: FakeCluster, loops: list[TaskLoop]
) -> None:
    """A driver in another process (the data path in the host) learns the task's topics this
    way, before any record reaches them: a stop right after can no longer lose one."""
    data = tmp_path / "in.txt"
    data.write_text("a\nb\n")
    loop = build_task(_spec("source", {"file": str(data), "topic": "t"}), services)
    loops.append(loop)
    queued_when_told: list[tuple[str, int]] = []
    producer = _producer(services)
    loop.on_new_topic = lambda topic: queued_when_told.append((topic, len(producer)))  # type: ignore[attr-defined]
    loop.start()
    run_until(loop, lambda: len(cluster.values("t")) == 2)
    _append(data, "c\n")
    run_until(loop, lambda: len(cluster.values("t")) == 3)
    assert queued_when_told == [("t", 0)]  # once, before its first record was produced


class HeaderSource(SourceTask):
    """30 records per poll with a header each (the loop's record-by-record path), 90 in all."""

    def start(self, props: Mapping[str, str]) -> None:
        self.sent = 0

    def poll(self) -> list[SourceRecord]:
        if self.sent >= 90:
            return []
        batch = range(self.sent, self.sent + 30)
        self.sent += 30
        return [
            SourceRecord({"p": 0}, {"n": n + 1}, "t", value=f"r{n}", headers=[("h", "x")])
            for n in batch
        ]

    def stop(self) -> None:
        pass

    def version(self) -> str:
        return "1"


class HeaderSourceConnector(AckingSourceConnector):
    def task_class(self) -> type[SourceTask]:
        return HeaderSource


@pytest.mark.parametrize("path", ["uniform", "record by record"])
def test_a_full_producer_queue_holds_the_loop_and_loses_or_repeats_nothing(
    path: str, tmp_path: Path, services: TaskServices, cluster: FakeCluster
) -> None:
    if path == "uniform":
        data = tmp_path / "in.txt"
        data.write_text("".join(f"r{i}\n" for i in range(90)))
        spec = _spec("source", {"file": str(data), "topic": "t", "batch.size": "30"})
    else:
        spec = dataclasses.replace(
            _spec("source", {"topic": "t"}),
            plugin=_ref("source", f"{__name__}:HeaderSourceConnector"),
        )
    loop = build_task(spec, services)
    producer = _producer(services)
    producer.capacity, producer.holding = 7, True  # a slow broker: the queue fills at 7
    stop_requested = [False]
    loop.should_stop = lambda: stop_requested[0]  # type: ignore[attr-defined]
    loop.start()
    stop_requested[0] = True  # a driver's stop check ends the wait for room...
    loop.iteration()
    assert loop.records_moved == 7 and cluster.values("t") == []
    stop_requested[0] = False  # ... and the next iteration starts where it stopped
    producer.holding = False
    run_until(loop, lambda: len(cluster.values("t")) == 90)
    assert cluster.values("t") == [f"r{i}".encode() for i in range(90)]
    assert loop.records_moved == 90
    loop.stop(failed=False, timeout_s=1)
    assert cluster.values("t") == [f"r{i}".encode() for i in range(90)]


# -- sink -------------------------------------------------------------------------------------


def _fill(cluster: FakeCluster, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        cluster.append("in", 0, None, f"v{i}".encode())


def test_sink_loop_puts_every_record_and_commits_what_pre_commit_allows(
    tmp_path: Path,
    services: TaskServices,
    cluster: FakeCluster,
    clock: Clock,
    loops: list[TaskLoop],
) -> None:
    out = tmp_path / "out.txt"
    _fill(cluster, 300)
    loop = build_task(_spec("sink", {"file": str(out), "topics": "in"}), services)
    loops.append(loop)
    loop.start()
    run_until(loop, lambda: loop.records_moved == 300)
    clock.now += COMMIT_INTERVAL_S
    loop.iteration()
    assert cluster.committed["connect-c"] == {("in", 0): 300}
    assert out.read_text().splitlines() == [f"v{i}" for i in range(300)]
    assert loop.topics() == {"in"}


def test_sink_loop_reads_a_topic_created_again_from_its_new_start_and_commits_no_old_offset(
    tmp_path: Path,
    services: TaskServices,
    cluster: FakeCluster,
    clock: Clock,
    loops: list[TaskLoop],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The consumer keeps its position in a topic deleted and created again (librdkafka's
    does); the loop notices the new topic ID at its next look-up and reads the new topic from
    its start, as Kafka's consumer does, with one warning naming the topic."""
    out = tmp_path / "out.txt"
    _fill(cluster, 5)
    loop = build_task(_spec("sink", {"file": str(out), "topics": "in"}), services)
    loops.append(loop)
    loop.start()
    run_until(loop, lambda: loop.records_moved == 5)
    clock.now += COMMIT_INTERVAL_S
    loop.iteration()
    assert cluster.committed["connect-c"] == {("in", 0): 5}
    cluster.recreate("in")
    for i in range(7):
        cluster.append("in", 0, None, f"w{i}".encode())
    # Not yet looked up: the consumer goes on from its old position, as librdkafka's.
    run_until(loop, lambda: loop.records_moved == 7)
    clock.now += TOPICS_REGEX_REFRESH_S  # the consumer's metadata refresh interval
    run_until(loop, lambda: loop.records_moved == 14)
    expected = [f"v{i}" for i in range(5)] + ["w5", "w6"] + [f"w{i}" for i in range(7)]
    assert out.read_text().splitlines() == expected
    clock.now += COMMIT_INTERVAL_S
    loop.iteration()
    assert cluster.committed["connect-c"] == {("in", 0): 7}
    recreated = [r.getMessage() for r in caplog.records if "created again" in r.getMessage()]
    assert len(recreated) == 1 and "topic in " in recreated[0] and "in-0@0" in recreated[0]


def test_sink_loop_looks_a_deleted_topic_up_again_soon_and_resets_when_it_is_back(
    tmp_path: Path,
    services: TaskServices,
    cluster: FakeCluster,
    clock: Clock,
    loops: list[TaskLoop],
) -> None:
    out = tmp_path / "out.txt"
    _fill(cluster, 3)
    loop = build_task(_spec("sink", {"file": str(out), "topics": "in"}), services)
    loops.append(loop)
    loop.start()
    run_until(loop, lambda: loop.records_moved == 3)
    cluster.delete("in")
    clock.now += TOPICS_REGEX_REFRESH_S
    loop.iteration()  # the topic is missing: looked up again in TOPIC_ID_RETRY_S
    cluster.recreate("in")
    _fill(cluster, 4, start=10)
    clock.now += TOPIC_ID_RETRY_S
    run_until(loop, lambda: loop.records_moved == 7)
    clock.now += COMMIT_INTERVAL_S
    loop.iteration()
    assert out.read_text().splitlines() == [f"v{i}" for i in [0, 1, 2, 10, 11, 12, 13]]
    assert cluster.committed["connect-c"] == {("in", 0): 4}


def test_sink_loop_a_revocation_commits_no_offset_read_before_its_topic_was_created_again(
    tmp_path: Path,
    services: TaskServices,
    cluster: FakeCluster,
    clock: Clock,
    loops: list[TaskLoop],
) -> None:
    """The partition's next owner starts at the group's committed offset: an offset of the
    old topic committed onto the new one would have it skip the new records below it."""
    out = tmp_path / "out.txt"
    _fill(cluster, 3)
    loop = build_task(_spec("sink", {"file": str(out), "topics": "in"}), services)
    loops.append(loop)
    loop.start()
    run_until(loop, lambda: loop.records_moved == 3)
    clock.now += COMMIT_INTERVAL_S
    loop.iteration()
    assert cluster.committed["connect-c"] == {("in", 0): 3}
    cluster.recreate("in")
    _fill(cluster, 5, start=10)
    run_until(loop, lambda: loop.records_moved == 5)  # v13, v14: read at the old position
    consumer = services.clients.consumers[-1]  # type: ignore[attr-defined]
    consumer.revoke_all()
    assert cluster.committed["connect-c"] == {}


def test_sink_loop_a_new_task_ignores_an_offset_committed_under_the_old_topic_id(
    tmp_path: Path,
    services: TaskServices,
    cluster: FakeCluster,
    clock: Clock,
    loops: list[TaskLoop],
) -> None:
    """Another task (it never knew the old topic) is assigned the partition of a topic
    created again, and the group still has the old topic's offset (written onto the new topic
    before it was noticed, or not dropped yet): it starts at auto.offset.reset, not there."""
    out = tmp_path / "out.txt"
    _fill(cluster, 3)
    first = build_task(_spec("sink", {"file": str(out), "topics": "in"}), services)
    loops.append(first)
    first.start()
    run_until(first, lambda: first.records_moved == 3)
    first.stop(failed=False, timeout_s=1)
    loops.remove(first)
    assert cluster.committed["connect-c"] == {("in", 0): 3}
    old = (dict(cluster.committed["connect-c"]), dict(cluster.commit_metadata["connect-c"]))
    cluster.recreate("in")
    cluster.committed["connect-c"], cluster.commit_metadata["connect-c"] = old
    _fill(cluster, 5, start=10)
    second = build_task(_spec("sink", {"file": str(tmp_path / "2.txt"), "topics": "in"}), services)
    loops.append(second)
    second.start()
    run_until(second, lambda: second.records_moved == 5)
    clock.now += COMMIT_INTERVAL_S
    second.iteration()
    assert (tmp_path / "2.txt").read_text().splitlines() == [f"v{i}" for i in range(10, 15)]
    assert cluster.committed["connect-c"] == {("in", 0): 5}


def test_a_sink_on_a_direct_channel_never_waits_for_a_put_that_has_not_run(
    tmp_path: Path, cluster: FakeCluster, clock: Clock
) -> None:
    """With the data path in the host, a submitted put() runs only when collected: the loop
    must not wait for more records meanwhile, as it does while a host process works."""
    from core.runtime.in_host import _DirectHosts

    services = TaskServices(
        hosts=_DirectHosts({}), offsets=MemoryOffsetStore(), clients=FakeClients(cluster)
    )
    out = tmp_path / "out.txt"
    _fill(cluster, 30)
    loop = build_task(_spec("sink", {"file": str(out), "topics": "in"}), services)
    loop.start()
    consumer = services.clients.consumers[-1]  # type: ignore[attr-defined]
    run_until(loop, lambda: loop.records_moved == 30)
    _fill(cluster, 30, start=30)
    run_until(loop, lambda: loop.records_moved == 60)
    loop.stop(failed=False, timeout_s=1)
    assert out.read_text().splitlines() == [f"v{i}" for i in range(60)]
    # The only waits are an idle task's waits for a first record (nothing submitted); none
    # is the wait that gathers a batch while a host process works on the previous one.
    assert {timeout for timeout, _ in consumer.waits} <= {0, CONSUME_TIMEOUT_S}


def test_a_paused_sink_keeps_polling_with_its_partitions_paused(
    tmp_path: Path, services: TaskServices, cluster: FakeCluster, loops: list[TaskLoop]
) -> None:
    out = tmp_path / "out.txt"
    _fill(cluster, 10)
    loop = build_task(_spec("sink", {"file": str(out), "topics": "in"}), services)
    loops.append(loop)
    loop.start()
    run_until(loop, lambda: loop.records_moved == 10)
    consumer = services.clients.consumers[0]  # type: ignore[attr-defined]
    loop.pause()
    assert consumer.paused == {("in", 0)}
    _fill(cluster, 5, start=10)
    polls = consumer.consume_calls
    for _ in range(10):
        assert loop.iteration() == 0
    assert consumer.consume_calls >= polls + 10  # still polling: the group sees it alive
    assert loop.records_moved == 10
    loop.resume()
    assert consumer.paused == set()
    run_until(loop, lambda: loop.records_moved == 15)
    loops.remove(loop)
    loop.stop(failed=False, timeout_s=1)  # FileStreamSink writes on flush
    assert out.read_text().splitlines() == [f"v{i}" for i in range(15)]
    assert consumer.assignments == 1  # one assignment: no rebalance through the pause


def test_sink_loop_stop_after_failure_commits_what_was_put(
    tmp_path: Path, services: TaskServices, cluster: FakeCluster
) -> None:
    """As Kafka's closing commit: a failed task commits the records whose put() succeeded
    (through pre_commit, which flushes them), so a restart does not write them again."""
    out = tmp_path / "out.txt"
    _fill(cluster, 5)
    loop = build_task(_spec("sink", {"file": str(out), "topics": "in"}), services)
    loop.start()
    run_until(loop, lambda: loop.records_moved == 5)
    loop.stop(failed=True, timeout_s=1)
    assert cluster.committed["connect-c"] == {("in", 0): 5}
    assert out.read_text().splitlines() == [f"v{i}" for i in range(5)]
    assert services.clients.consumers[0].closed  # type: ignore[attr-defined]


def test_a_fenced_sink_loop_commits_nothing(
    tmp_path: Path, services: TaskServices, cluster: FakeCluster
) -> None:
    """A replaced (fenced) attempt's consumer may still be in the group: it commits nothing,
    failed or not, so it cannot take the new attempt's offsets back."""
    _fill(cluster, 5)
    loop = build_task(_spec("sink", {"file": str(tmp_path / "out.txt"), "topics": "in"}), services)
    loop.start()
    run_until(loop, lambda: loop.records_moved == 5)
    loop.stop(failed=False, fenced=True, timeout_s=1)
    assert cluster.committed["connect-c"] == {}
    assert services.clients.consumers[0].closed  # type: ignore[attr-defined]


class PreCommitFailingSink(SinkTask):
    """Takes every record; its pre_commit() raises."""

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def put(self, records: Sequence[SinkRecord]) -> None:
        pass

    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        raise ConnectException("target unreachable")

    def stop(self) -> None:
        pass


class PreCommitFailingSinkConnector(SinkConnector):
    def start(self, props: Mapping[str, str]) -> None:
        pass

    def task_class(self) -> type[SinkTask]:
        return PreCommitFailingSink

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{}]

    def config(self) -> ConfigDef:
        return ConfigDef()

    def stop(self) -> None:
        pass


def _sink_of(connector_class: str) -> TaskSpec:
    """The spec of a sink task of ``connector_class`` (defined in this module) reading "in"."""
    spec = _spec("sink", {"topics": "in"})
    return dataclasses.replace(spec, plugin=_ref("sink", f"{__name__}:{connector_class}"))


def test_sink_loop_stop_after_failure_commits_nothing_when_pre_commit_raises(
    services: TaskServices, cluster: FakeCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """As Kafka's closing commit: the failure is logged, nothing committed, the task stopped."""
    _fill(cluster, 5)
    loop = build_task(_sink_of("PreCommitFailingSinkConnector"), services)
    loop.start()
    run_until(loop, lambda: loop.records_moved == 5)
    loop.stop(failed=True, timeout_s=1)
    assert cluster.committed["connect-c"] == {}
    assert "target unreachable" in caplog.text
    assert services.clients.consumers[0].closed  # type: ignore[attr-defined]


def test_sink_loop_a_commit_failing_on_revocation_is_logged_and_the_task_goes_on(
    tmp_path: Path,
    services: TaskServices,
    cluster: FakeCluster,
    loops: list[TaskLoop],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As Kafka's WorkerSinkTask (doCommitSync): a synchronous commit that fails when the
    group takes the partitions away is logged, not the task's failure; the records since the
    last commit are read again by whoever owns the partitions next (here the same task)."""
    out = tmp_path / "out.txt"
    _fill(cluster, 50)
    loop = build_task(_spec("sink", {"file": str(out), "topics": "in"}), services)
    loops.append(loop)
    loop.start()
    run_until(loop, lambda: loop.records_moved == 50)
    consumer = services.clients.consumers[0]  # type: ignore[attr-defined]
    cluster.commit_error = KafkaError(KafkaError.REBALANCE_IN_PROGRESS)
    consumer.revoke_all()  # the closing commit of the revoked partition fails
    cluster.commit_error = None
    _fill(cluster, 10, start=50)
    run_until(loop, lambda: loop.records_moved == 110)  # all 50 again, then 10 more
    assert cluster.committed["connect-c"] == {}
    assert "offset commit 1 failed" in caplog.text and "rebalance in progress" in caplog.text
    loop.stop(failed=False, timeout_s=1)
    assert cluster.committed["connect-c"] == {("in", 0): 60}
    lines = out.read_text().splitlines()
    assert lines == [f"v{i}" for i in range(50)] * 2 + [f"v{i}" for i in range(50, 60)]


def test_sink_loop_a_pre_commit_failing_on_revocation_is_logged_and_the_task_goes_on(
    services: TaskServices, cluster: FakeCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """As Kafka's commitOffsets when partitions close: a preCommit() that raises is logged
    ("Offset commit failed during close"), nothing of them is committed, the task goes on."""
    _fill(cluster, 5)
    loop = build_task(_sink_of("PreCommitFailingSinkConnector"), services)
    loop.start()
    run_until(loop, lambda: loop.records_moved == 5)
    consumer = services.clients.consumers[0]  # type: ignore[attr-defined]
    consumer.revoke_all()
    _fill(cluster, 3, start=5)
    run_until(loop, lambda: loop.records_moved == 13)  # the 5 again, then 3 more
    assert cluster.committed["connect-c"] == {}
    assert "offset commit failed while closing" in caplog.text
    assert "target unreachable" in caplog.text
    loop.stop(failed=False, timeout_s=1)  # its closing commit fails alike, and is logged
    assert cluster.committed["connect-c"] == {}
    assert services.clients.consumers[0].closed  # type: ignore[attr-defined]


class PreCommitFailingOnceSink(SinkTask):
    """Writes every record's value to the list ``written``; its first pre_commit() raises."""

    written: list[str] = []
    failures_left = 0

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def put(self, records: Sequence[SinkRecord]) -> None:
        type(self).written.extend(str(record.value) for record in records)

    def pre_commit(self, offsets: Mapping[TopicPartition, int]) -> Mapping[TopicPartition, int]:
        if type(self).failures_left:
            type(self).failures_left -= 1
            raise ConnectException("target unreachable for now")
        return offsets

    def stop(self) -> None:
        pass


class PreCommitFailingOnceSinkConnector(PreCommitFailingSinkConnector):
    def task_class(self) -> type[SinkTask]:
        return PreCommitFailingOnceSink


def test_sink_loop_a_periodic_pre_commit_failure_rewinds_to_the_last_commit_and_goes_on(
    services: TaskServices,
    cluster: FakeCluster,
    clock: Clock,
    loops: list[TaskLoop],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As Kafka's commitOffsets: a preCommit() that raises at a periodic commit is logged,
    not the task's failure, and the consumer rewinds to the last committed offsets (where
    the task began reading, before any commit): those records are put again."""
    PreCommitFailingOnceSink.written = []
    PreCommitFailingOnceSink.failures_left = 1
    _fill(cluster, 30)
    loop = build_task(_sink_of("PreCommitFailingOnceSinkConnector"), services)
    loops.append(loop)
    loop.start()
    run_until(loop, lambda: loop.records_moved == 30)
    clock.now += COMMIT_INTERVAL_S
    run_until(loop, lambda: loop.records_moved == 60)  # the failed commit rewound to 0
    assert cluster.committed["connect-c"] == {}
    assert "offset commit 1 failed (pre_commit raised), rewinding" in caplog.text
    clock.now += COMMIT_INTERVAL_S
    _fill(cluster, 10, start=30)
    run_until(loop, lambda: cluster.committed["connect-c"] == {("in", 0): 40})
    expected = [f"v{i}" for i in range(30)]
    assert PreCommitFailingOnceSink.written == expected * 2 + [f"v{i}" for i in range(30, 40)]
    # Once something is committed, a failed pre_commit rewinds to it.
    PreCommitFailingOnceSink.failures_left = 1
    _fill(cluster, 5, start=40)
    run_until(loop, lambda: loop.records_moved == 75)
    clock.now += COMMIT_INTERVAL_S
    run_until(loop, lambda: loop.records_moved == 80)  # 40-44 again
    clock.now += COMMIT_INTERVAL_S
    run_until(loop, lambda: cluster.committed["connect-c"] == {("in", 0): 45})
    assert PreCommitFailingOnceSink.written[70:] == [f"v{i}" for i in range(40, 45)] * 2


def test_sink_loop_a_final_commit_that_outlives_the_stop_is_logged_and_the_stop_ends(
    tmp_path: Path,
    services: TaskServices,
    cluster: FakeCluster,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As Kafka's doCommitSync of a commit that times out: the stop's final commit, held by a
    broker that does not answer, is logged and left to finish behind the consumer's close;
    the stop itself ends in time and does not fail."""
    _fill(cluster, 5)
    loop = build_task(_spec("sink", {"file": str(tmp_path / "out.txt"), "topics": "in"}), services)
    loop.start()
    run_until(loop, lambda: loop.records_moved == 5)
    cluster.commit_held = held = threading.Event()
    began = time.monotonic()
    try:
        loop.stop(failed=False, timeout_s=0.5)
    finally:
        took = time.monotonic() - began
        held.set()
    assert took < 2, took
    assert "the final offset commit did not complete within the graceful timeout" in caplog.text
    wait_until(lambda: cluster.committed["connect-c"] == {("in", 0): 5}, 10, "the held commit")
