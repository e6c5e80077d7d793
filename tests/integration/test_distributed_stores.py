"""Distributed mode's Kafka-backed pieces against Apache Kafka: the log, the three stores in
Kafka Connect's record formats, fencing of a deposed leader, shared topics, the internal
topics' compaction check, and group membership through kafka-python.

Records are checked as bytes read back from the topics by a plain consumer, so the format is
what another Kafka Connect worker would read, not what our own reader accepts.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka.admin import AdminClient

from core.distributed import (
    ClusterKeys,
    GroupSettings,
    Held,
    InternalTopic,
    KafkaBasedLog,
    KafkaConfigStore,
    KafkaOffsetBackingStore,
    KafkaStatusStore,
    MemberMetadata,
    PrivilegedWriteError,
    WorkerGroupMember,
    ensure_internal_topics,
)
from core.distributed.membership import JoinedGroup, kafka_python_settings
from core.distributed.protocol import Assignment
from core.status import State, Status
from core.stores import OffsetStorage, TargetState
from plugin_api import ConfigException
from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import read_all, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.apache_kafka_only(reason="reading to the end needs Kafka's high watermark"),
]

START_TIMEOUT_S = 30.0


def _props(broker: KafkaCluster) -> dict[str, str]:
    return {"bootstrap.servers": broker.bootstrap_servers}


def _compacted(broker: KafkaCluster, name: str, partitions: int = 1) -> str:
    broker.create_topic(name, partitions, {"cleanup.policy": "compact"})
    return name


def _records(broker: KafkaCluster, topic: str, expected: int) -> list[tuple[str, object]]:
    return [
        (m.key().decode(), json.loads(m.value()) if m.value() is not None else None)
        for m in read_all(broker.bootstrap_servers, topic, expected)
    ]


@pytest.fixture
def config_topic(broker: KafkaCluster, topic_name: str) -> str:
    return _compacted(broker, topic_name + "-configs")


def _config_store(
    broker: KafkaCluster, topic: str, group: str = "g", sharing: bool = False
) -> KafkaConfigStore:
    store = KafkaConfigStore(
        topic, _props(broker), ClusterKeys(group if sharing else None), f"connect-cluster-{group}"
    )
    store.start(START_TIMEOUT_S)
    return store


def test_a_log_reads_what_was_written_before_it_started_and_tails_the_rest(
    broker: KafkaCluster, topic_name: str
) -> None:
    topic = _compacted(broker, topic_name, partitions=3)
    seen: list[bytes | None] = []
    writer = KafkaBasedLog(topic, _props(broker), lambda r: None, name="writer")
    writer.start(START_TIMEOUT_S)
    for i in range(50):
        writer.send(b"k%d" % i, b"v%d" % i)
    writer.flush(START_TIMEOUT_S)
    reader = KafkaBasedLog(topic, _props(broker), lambda r: seen.append(r.value), name="reader")
    try:
        reader.start(START_TIMEOUT_S)
        assert sorted(seen) == sorted(b"v%d" % i for i in range(50))  # all read before start()
        writer.send(b"late", b"tail").result(START_TIMEOUT_S)
        reader.read_to_end().result(START_TIMEOUT_S)
        assert seen[-1] == b"tail"
    finally:
        reader.stop()
        writer.stop()


def test_config_store_writes_kafka_connects_records_and_a_new_worker_rebuilds_them(
    broker: KafkaCluster, config_topic: str
) -> None:
    store = _config_store(broker, config_topic)
    try:
        store.claim_write_privileges()
        store.put_connector_config("src", {"connector.class": "FileStreamSource", "a": "1"}, None)
        store.put_connector_config("paused", {"connector.class": "X"}, TargetState.PAUSED)
        store.put_task_configs("src", [{"task.class": "T", "n": "0"}, {"task.class": "T"}])
        store.put_target_state("paused", TargetState.STOPPED)
        fresh = _config_store(broker, config_topic)
        try:
            snapshot = fresh.snapshot()
            assert snapshot.connectors() == ["paused", "src"]
            assert dict(snapshot.config("src") or {}) == {
                "connector.class": "FileStreamSource",
                "a": "1",
            }
            assert [dict(t) for t in snapshot.tasks("src")] == [
                {"task.class": "T", "n": "0"},
                {"task.class": "T"},
            ]
            assert snapshot.target_state("src") is TargetState.STARTED
            assert snapshot.target_state("paused") is TargetState.STOPPED
        finally:
            fresh.stop()
        store.remove_connector_config("paused")
        assert store.snapshot().connectors() == ["src"]
    finally:
        store.stop()
    records = _records(broker, config_topic, 9)
    assert records == [
        ("connector-src", {"properties": {"connector.class": "FileStreamSource", "a": "1"}}),
        ("target-state-paused", {"state": "PAUSED", "state.v2": "PAUSED"}),
        ("connector-paused", {"properties": {"connector.class": "X"}}),
        ("task-src-0", {"properties": {"task.class": "T", "n": "0"}}),
        ("task-src-1", {"properties": {"task.class": "T"}}),
        ("commit-src", {"tasks": 2}),
        ("target-state-paused", {"state": "PAUSED", "state.v2": "STOPPED"}),
        ("connector-paused", None),
        ("target-state-paused", None),
    ]


def test_config_store_knows_the_connector_config_each_task_commit_was_made_under(
    broker: KafkaCluster, config_topic: str
) -> None:
    """Kafka's appliedConnectorConfig (KAFKA-9228): a connector config written after the last
    task commit is not the applied one until task configs are committed again, however alike
    they are, and a worker reading the topic from its start (a restart) finds the same; a
    deleted connector has none. Before, the store kept no such thing, so a new converter that
    left the task configs as they were restarted no task in distributed mode."""
    old = {"connector.class": "S", "topics": "t", "value.converter": "JsonConverter"}
    new = {**old, "value.converter": "StringConverter"}
    tasks = [{"task.class": "T", "topics": "t"}]
    store = _config_store(broker, config_topic)
    try:
        store.claim_write_privileges()
        store.put_connector_config("snk", old, None)
        assert store.snapshot().applied_config("snk") is None
        store.put_task_configs("snk", tasks)
        store.put_connector_config("snk", new, None)
        assert dict(store.snapshot().applied_config("snk") or {}) == old
        restarted = _config_store(broker, config_topic)
        try:
            assert dict(restarted.snapshot().applied_config("snk") or {}) == old
            store.put_task_configs("snk", tasks)
            restarted.refresh()
            assert dict(restarted.snapshot().applied_config("snk") or {}) == new
        finally:
            restarted.stop()
        assert dict(store.snapshot().applied_config("snk") or {}) == new
        store.remove_connector_config("snk")
        assert store.snapshot().applied_config("snk") is None
    finally:
        store.stop()


def test_an_incomplete_task_commit_keeps_the_old_tasks_and_marks_the_connector(
    broker: KafkaCluster, config_topic: str
) -> None:
    store = _config_store(broker, config_topic)
    try:
        store.claim_write_privileges()
        store.put_connector_config("c", {"connector.class": "X"}, None)
        store.put_task_configs("c", [{"k": "old"}])
        store._write_privileged(
            [("task-c-1", b'{"properties":{"k":"x"}}'), ("commit-c", b'{"tasks":2}')]
        )
        assert [dict(t) for t in store.snapshot().tasks("c")] == [{"k": "old"}]
        assert store.inconsistent() == {"c"}
        store.put_task_configs("c", [{"k": "new"}])
        assert store.inconsistent() == set()
    finally:
        store.stop()


def test_a_deposed_leader_cannot_write_to_the_config_topic(
    broker: KafkaCluster, config_topic: str
) -> None:
    old, new = _config_store(broker, config_topic), _config_store(broker, config_topic)
    try:
        old.claim_write_privileges()
        old.put_connector_config("before", {"connector.class": "X"}, None)
        new.claim_write_privileges()  # the next leader: fences the old one's producer
        with pytest.raises(PrivilegedWriteError, match="fenced"):
            old.put_connector_config("zombie", {"connector.class": "X"}, None)
        new.put_connector_config("after", {"connector.class": "X"}, None)
        assert new.refresh().connectors() == ["after", "before"]
        assert old.refresh().connectors() == ["after", "before"]
    finally:
        old.stop()
        new.stop()
    assert "connector-zombie" not in [k for k, _ in _records(broker, config_topic, 2)]


def test_claims_made_at_once_leave_one_producer_that_can_write(
    broker: KafkaCluster, config_topic: str
) -> None:
    """A new leader claims its write privileges from its rebalance (the tick thread) and from
    its first REST write at once. Each claim made a producer of the same transactional id,
    the later initialisation fencing the earlier one, and the one kept could be the fenced
    one: the first POST /connectors answered 500 "Unexpected error: KafkaException"."""
    store = _config_store(broker, config_topic)
    claimers = 4
    try:
        for attempt in range(3):
            start = threading.Barrier(claimers)
            errors: list[BaseException] = []

            def claim(
                start: threading.Barrier = start, errors: list[BaseException] = errors
            ) -> None:
                start.wait()
                try:
                    store.claim_write_privileges()
                except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
                    errors.append(exc)

            threads = [threading.Thread(target=claim) for _ in range(claimers)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
            assert errors == []
            store.put_connector_config(f"c{attempt}", {"connector.class": "X"}, None)
            store.relinquish_write_privileges()
        assert store.refresh().connectors() == ["c0", "c1", "c2"]
    finally:
        store.stop()


def test_listeners_hear_of_changes_after_the_initial_read(
    broker: KafkaCluster, config_topic: str
) -> None:
    writer = _config_store(broker, config_topic)
    events: list[tuple[str, str]] = []

    class Listener:
        def on_connector_config_update(self, c: str) -> None:
            events.append(("config", c))

        def on_connector_config_removed(self, c: str) -> None:
            events.append(("removed", c))

        def on_task_configs_update(self, c: str) -> None:
            events.append(("tasks", c))

        def on_target_state_change(self, c: str) -> None:
            events.append(("target", c))

    try:
        writer.claim_write_privileges()
        writer.put_connector_config("old", {"connector.class": "X"}, None)
        reader = _config_store(broker, config_topic)
        reader.set_listener(Listener())
        restarts: list[object] = []
        reader.on_restart_request = restarts.append
        try:
            writer.put_connector_config("new", {"connector.class": "X"}, None)
            writer.put_task_configs("new", [{}])
            writer.put_target_state("new", TargetState.PAUSED)
            from core.distributed import RestartRequest

            writer.put_restart_request(RestartRequest("new", True, False))
            writer.remove_connector_config("new")
            reader.refresh()
            assert events == [
                ("config", "new"),
                ("tasks", "new"),
                ("target", "new"),
                ("removed", "new"),
            ]
            assert restarts == [RestartRequest("new", True, False)]
        finally:
            reader.stop()
    finally:
        writer.stop()


def test_offsets_round_trip_and_kafka_connects_key_order_is_found(
    broker: KafkaCluster, topic_name: str
) -> None:
    topic = _compacted(broker, topic_name + "-offsets", partitions=3)
    backing = KafkaOffsetBackingStore(topic, _props(broker), ClusterKeys(None))
    backing.start(START_TIMEOUT_S)
    try:
        # Kafka Connect writes the partition map in its HashMap order, not sorted.
        java_key = b'["src",{"b":"2","a":"1"}]'
        backing.set({java_key: b'{"position":7}'})
        backing.flush()
        storage = OffsetStorage(backing)
        partition = {"a": "1", "b": "2"}
        other = KafkaOffsetBackingStore(topic, _props(broker), ClusterKeys(None))
        other.start(START_TIMEOUT_S)
        try:
            found = OffsetStorage(other).get("src", [partition])
            assert list(found.values()) == [{"position": 7}]
            storage.put("src", [(partition, None)])  # reset: tombstones both forms
            storage.flush()
            assert OffsetStorage(other).get("src", [partition]) == {}
        finally:
            other.stop()
    finally:
        backing.stop()
    keys = [(m.key(), m.value()) for p in range(3) for m in _read_partition(broker, topic, p)]
    assert (b'["src",{"a":"1","b":"2"}]', None) in keys
    assert (java_key, None) in keys


def test_a_new_offset_goes_under_the_key_form_kafka_connect_wrote(
    broker: KafkaCluster, topic_name: str
) -> None:
    """Kafka Connect finds a source offset by its key's bytes: after a migration back it must
    read what Copycat wrote meanwhile under its own form of the key (its HashMap's field
    order, its escapes), not an older value. Copycat wrote its own form only, so Kafka Connect
    resent what Copycat had sent (found by an exploratory tester, FileStreamSource)."""
    topic = _compacted(broker, topic_name + "-offsets", partitions=3)
    # Jackson's bytes: UTF-8 for the accented letters, the emoji as escaped surrogates.
    java_key = '["src-\u00fc\\uD83D\\uDE00",{"zeta":1,"filename":"f-\u00e9.txt"}]'.encode()
    writer = KafkaOffsetBackingStore(topic, _props(broker), ClusterKeys(None))
    writer.start(START_TIMEOUT_S)
    try:
        writer.set({java_key: b'{"position":220}'})()
    finally:
        writer.stop()
    backing = KafkaOffsetBackingStore(topic, _props(broker), ClusterKeys(None))
    backing.start(START_TIMEOUT_S)
    try:
        storage = OffsetStorage(backing)
        partition = {"filename": "f-\u00e9.txt", "zeta": 1}
        assert list(storage.get("src-\u00fc\U0001f600", [partition]).values()) == [
            {"position": 220}
        ]
        storage.put("src-\u00fc\U0001f600", [(partition, {"position": 275})])()
    finally:
        backing.stop()
    keys = [(m.key(), m.value()) for p in range(3) for m in _read_partition(broker, topic, p)]
    assert (java_key, b'{"position":275}') in keys, keys
    assert len(keys) == 2, keys  # under Kafka Connect's form alone


def _read_partition(broker: KafkaCluster, topic: str, partition: int) -> list:  # type: ignore[type-arg]
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "x"})
    consumer.assign([TopicPartition(topic, partition, 0)])
    try:
        return [m for m in consumer.consume(1000, 2.0) if m.error() is None]
    finally:
        consumer.close()


def test_an_active_topics_reset_reaches_the_other_workers_tasks(
    broker: KafkaCluster, topic_name: str
) -> None:
    """A reset on one worker tombstones the connector's topics; every other worker that knew
    them has its tasks forget theirs (they record them again with their next record, as
    Kafka's tasks do), and the resetting worker, which forgot at once, is not told again."""
    topic = _compacted(broker, topic_name + "-status")
    one = KafkaStatusStore(topic, _props(broker), ClusterKeys(None))
    two = KafkaStatusStore(topic, _props(broker), ClusterKeys(None))
    resets: dict[str, list[str]] = {"one": [], "two": []}
    one.on_topics_reset = resets["one"].append
    two.on_topics_reset = resets["two"].append
    one.start(START_TIMEOUT_S)
    two.start(START_TIMEOUT_S)
    try:
        one.put_topic("c", "orders", 0)
        one.flush(START_TIMEOUT_S)
        assert wait_for(lambda: two.topics_of("c")) == ["orders"]
        one.reset_topics("c")
        one.flush(START_TIMEOUT_S)
        wait_for(lambda: resets["two"], what="the reset on the other worker")
        one.log.read_to_end().result(START_TIMEOUT_S)
        assert resets == {"one": [], "two": ["c"]}
        assert one.topics_of("c") == two.topics_of("c") == []
    finally:
        one.stop()
        two.stop()


def test_statuses_are_kafka_connects_records_and_every_worker_reads_them(
    broker: KafkaCluster, topic_name: str
) -> None:
    topic = _compacted(broker, topic_name + "-status")
    one = KafkaStatusStore(topic, _props(broker), ClusterKeys(None))
    two = KafkaStatusStore(topic, _props(broker), ClusterKeys(None))
    one.start(START_TIMEOUT_S)
    two.start(START_TIMEOUT_S)
    try:
        one.generation = 3
        one.set_connector("c", Status(State.RUNNING, "w1:8083", version="1.0"))
        one.set_task("c", 0, Status(State.FAILED, "w1:8083", trace="boom"))
        one.put_topic("c", "orders", 0)
        one.flush(START_TIMEOUT_S)
        wait_for(lambda: two.task("c", 0), what="task status on the other worker")
        assert two.connector("c") == Status(State.RUNNING, "w1:8083", version="1.0", generation=3)
        assert two.task("c", 0) == Status(State.FAILED, "w1:8083", trace="boom", generation=3)
        assert wait_for(lambda: two.topics_of("c")) == ["orders"]
        # A late UNASSIGNED from a worker that gave the task up does not hide RUNNING.
        two.generation = 4
        two.set_task("c", 1, Status(State.RUNNING, "w2:8083"))
        two.flush(START_TIMEOUT_S)
        one.generation = 4
        one.set_task("c", 1, Status(State.UNASSIGNED, "w1:8083"))
        one.flush(START_TIMEOUT_S)
        two.log.read_to_end().result(START_TIMEOUT_S)
        assert two.tasks_of("c")[1].state is State.RUNNING
        one.remove_connector("c")
        one.flush(START_TIMEOUT_S)
        two.log.read_to_end().result(START_TIMEOUT_S)
        assert two.connector("c") is None and two.tasks_of("c") == {}
    finally:
        one.stop()
        two.stop()
    records = dict(_records(broker, topic, 8)[:3])
    assert records["status-connector-c"] == {
        "state": "RUNNING",
        "trace": None,
        "worker_id": "w1:8083",
        "generation": 3,
        "version": "1.0",
    }
    assert records["status-task-c-0"]["trace"] == "boom"  # type: ignore[index]
    topic_record = records["status-topic-orders:connector-c"]["topic"]  # type: ignore[index]
    assert {k: topic_record[k] for k in ("name", "connector", "task")} == {
        "name": "orders",
        "connector": "c",
        "task": 0,
    }


def test_statuses_after_the_group_was_recreated_replace_the_old_clusters(
    broker: KafkaCluster, topic_name: str
) -> None:
    """Generations start again at 1 in a recreated group (a Kafka Connect cluster taken over,
    a whole cluster stopped long enough for the broker to delete its empty group): the new
    owners' statuses must replace the old cluster's higher-generation ones on every worker,
    while a zombie's late status in the new group is still ignored."""
    topic = _compacted(broker, topic_name + "-status")
    old = KafkaStatusStore(topic, _props(broker), ClusterKeys(None))
    old.start(START_TIMEOUT_S)
    try:
        old.generation = 5
        old.set_task("c", 0, Status(State.RUNNING, "old:8083"))
        old.generation = 6  # the old cluster's last generation: it stops, its tasks unassigned
        old.set_task("c", 0, Status(State.UNASSIGNED, "old:8083"))
        old.set_task("c", 1, Status(State.PAUSED, "old:8083"))
        old.flush(START_TIMEOUT_S)
    finally:
        old.stop()
    writer = KafkaStatusStore(topic, _props(broker), ClusterKeys(None))
    reader = KafkaStatusStore(topic, _props(broker), ClusterKeys(None))
    for store in (writer, reader):
        store.start(START_TIMEOUT_S)
    try:
        assert reader.task("c", 0) == Status(State.UNASSIGNED, "old:8083", generation=6)
        writer.generation = reader.generation = 2  # the new group, created afresh
        writer.set_task("c", 0, Status(State.RUNNING, "w1:8083"))
        writer.set_task("c", 1, Status(State.PAUSED, "w1:8083"))
        writer.flush(START_TIMEOUT_S)
        reader.log.read_to_end().result(START_TIMEOUT_S)
        assert reader.task("c", 0) == Status(State.RUNNING, "w1:8083", generation=2)
        assert reader.task("c", 1) == Status(State.PAUSED, "w1:8083", generation=2)
        # Task 0 moves to the reader's worker in generation 3 while w1 is frozen; w1 wakes,
        # still at generation 2, and writes its fenced task's FAILED late.
        reader.generation = 3
        reader.set_task("c", 0, Status(State.RUNNING, "w2:8083"))
        reader.flush(START_TIMEOUT_S)
        writer.set_task("c", 0, Status(State.FAILED, "w1:8083", trace="fenced"))
        writer.flush(START_TIMEOUT_S)
        reader.log.read_to_end().result(START_TIMEOUT_S)
        assert reader.task("c", 0) == Status(State.RUNNING, "w2:8083", generation=3)
    finally:
        for store in (writer, reader):
            store.stop()


def test_a_thawed_zombies_unassigned_does_not_hide_the_new_owners_running(
    broker: KafkaCluster, topic_name: str
) -> None:
    """A worker frozen past its session loses its task to another worker; thawed, it rejoins
    (a newer generation) and stops the task, writing UNASSIGNED. That UNASSIGNED carries the
    generation the zombie was in when told to stop, the one before its rejoin (a rebalance
    stops revoked work before adopting its generation), so no worker, the zombie included,
    takes it over the new owner's RUNNING. Stamped with the zombie's generation of now, it won
    on every worker (seen once in CI under load)."""
    topic = _compacted(broker, topic_name + "-status")
    zombie = KafkaStatusStore(topic, _props(broker), ClusterKeys(None))
    survivor = KafkaStatusStore(topic, _props(broker), ClusterKeys(None))
    for store in (zombie, survivor):
        store.start(START_TIMEOUT_S)
    newcomer = None
    try:
        zombie.generation = survivor.generation = 1
        zombie.set_task("c", 0, Status(State.RUNNING, "w1:8083"))
        zombie.flush(START_TIMEOUT_S)
        survivor.generation = 2  # the zombie froze; its task moved
        survivor.set_task("c", 0, Status(State.RUNNING, "w2:8083"))
        survivor.flush(START_TIMEOUT_S)
        zombie.generation = survivor.generation = 3  # thawed, it rejoined, then stops the task
        zombie.set_task("c", 0, Status(State.UNASSIGNED, "w1:8083", generation=1))
        zombie.flush(START_TIMEOUT_S)
        newcomer = KafkaStatusStore(topic, _props(broker), ClusterKeys(None))
        newcomer.start(START_TIMEOUT_S)  # a worker that reads the whole topic at start
        for store in (survivor, zombie):
            store.log.read_to_end().result(START_TIMEOUT_S)
        for store in (survivor, zombie, newcomer):
            assert store.task("c", 0) == Status(State.RUNNING, "w2:8083", generation=2)
        # Its own UNASSIGNED of a newer generation than its RUNNING (a task that ran through
        # a rebalance) replaces it, a task on Spark's too (its RUNNING names the executor and
        # the driving worker).
        survivor.set_task("c", 1, Status(State.RUNNING, "w2:8083"))
        survivor.set_task("c", 1, Status(State.UNASSIGNED, "w2:8083", generation=4))
        on_spark = "executor 0 on 127.0.0.1 (Spark job group copycat-1-c-2, driver w2:8083)"
        survivor.set_task("c", 2, Status(State.RUNNING, on_spark))
        survivor.set_task("c", 2, Status(State.UNASSIGNED, "w2:8083", generation=4))
        survivor.flush(START_TIMEOUT_S)
        zombie.log.read_to_end().result(START_TIMEOUT_S)
        for store in (survivor, zombie):
            assert store.task("c", 1) == Status(State.UNASSIGNED, "w2:8083", generation=4)
            assert store.task("c", 2) == Status(State.UNASSIGNED, "w2:8083", generation=4)
    finally:
        for store in (zombie, survivor, newcomer):
            if store is not None:
                store.stop()


def test_a_task_stopped_in_the_generation_it_started_in_keeps_showing_running(
    broker: KafkaCluster, topic_name: str
) -> None:
    """Kafka's readTaskStatus ignores an UNASSIGNED over a RUNNING of the same or a newer
    generation, whoever wrote them (KAFKA-12525): a task moved off a worker in the generation
    it started in shows its RUNNING there until the new owner's RUNNING, on every worker, the
    one that stopped it included (its own copy follows the same rule)."""
    topic = _compacted(broker, topic_name + "-status")
    old = KafkaStatusStore(topic, _props(broker), ClusterKeys(None))
    other = KafkaStatusStore(topic, _props(broker), ClusterKeys(None))
    for store in (old, other):
        store.start(START_TIMEOUT_S)
    newcomer = None
    try:
        old.generation = other.generation = 5
        old.set_task("c", 0, Status(State.RUNNING, "w1:8083"))
        old.set_task("c", 0, Status(State.UNASSIGNED, "w1:8083", generation=5))
        on_spark = "executor 1 on 127.0.0.1 (Spark job group copycat-1-c-1, driver w1:8083)"
        old.set_task("c", 1, Status(State.RUNNING, on_spark))
        old.set_task("c", 1, Status(State.UNASSIGNED, "w1:8083", generation=5))
        old.flush(START_TIMEOUT_S)
        other.log.read_to_end().result(START_TIMEOUT_S)
        newcomer = KafkaStatusStore(topic, _props(broker), ClusterKeys(None))
        newcomer.start(START_TIMEOUT_S)
        for store in (old, other, newcomer):
            assert store.task("c", 0) == Status(State.RUNNING, "w1:8083", generation=5)
            assert store.task("c", 1) == Status(State.RUNNING, on_spark, generation=5)
        other.generation = old.generation = 7  # the new owner's RUNNING replaces it
        other.set_task("c", 0, Status(State.RUNNING, "w2:8083"))
        other.flush(START_TIMEOUT_S)
        old.log.read_to_end().result(START_TIMEOUT_S)
        assert old.task("c", 0) == Status(State.RUNNING, "w2:8083", generation=7)
    finally:
        for store in (old, other, newcomer):
            if store is not None:
                store.stop()


def test_a_cut_off_workers_late_unassigned_does_not_hide_the_new_owners_running_connector(
    broker: KafkaCluster, topic_name: str
) -> None:
    """A worker cut off from the group coordinator stops its connector and writes UNASSIGNED
    in the generation it ran it in; the write waits in its producer until the broker is back
    and can land after the RUNNING of the connector's new owner. No worker takes it over that
    RUNNING, the cut-off one included, whichever generation it has reached (before, every
    worker showed the running connector UNASSIGNED until its owner wrote again). The owner's
    own UNASSIGNED (a later revocation) still applies, and so does a newer status of the old
    worker once the connector comes back to it."""
    topic = _compacted(broker, topic_name + "-status")
    cut_off = KafkaStatusStore(topic, _props(broker), ClusterKeys(None))
    owner = KafkaStatusStore(topic, _props(broker), ClusterKeys(None))
    for store in (cut_off, owner):
        store.start(START_TIMEOUT_S)
    newcomer = None
    try:
        cut_off.generation = owner.generation = 5
        cut_off.set_connector("c", Status(State.RUNNING, "w1:8083"))
        cut_off.flush(START_TIMEOUT_S)
        owner.generation = 7  # the cut-off worker's connector moved
        owner.set_connector("c", Status(State.RUNNING, "w2:8083"))
        owner.flush(START_TIMEOUT_S)
        cut_off.log.read_to_end().result(START_TIMEOUT_S)
        # Its stop, stamped with the generation it ran the connector in, lands last; the
        # cut-off worker has not adopted generation 7 yet.
        cut_off.set_connector("c", Status(State.UNASSIGNED, "w1:8083"))
        cut_off.flush(START_TIMEOUT_S)
        newcomer = KafkaStatusStore(topic, _props(broker), ClusterKeys(None))
        newcomer.generation = 7
        owner.log.read_to_end().result(START_TIMEOUT_S)
        newcomer.start(START_TIMEOUT_S)
        for store in (owner, cut_off, newcomer):
            assert store.connector("c") == Status(State.RUNNING, "w2:8083", generation=7)
        # A FAILED of the old owner's generation, written late, once its group is at 7.
        cut_off.generation = 7
        cut_off.set_connector("c", Status(State.FAILED, "w1:8083", "trace", generation=5))
        cut_off.flush(START_TIMEOUT_S)
        owner.log.read_to_end().result(START_TIMEOUT_S)
        for store in (owner, cut_off):
            assert store.connector("c") == Status(State.RUNNING, "w2:8083", generation=7)
        # The owner's revocation applies; so does the old worker's RUNNING of a newer
        # generation when the connector comes back to it.
        # The revocation is flushed before the new start is written, as a rebalance orders them
        # (two producers' writes sent together land in either order).
        owner.generation = cut_off.generation = 8
        owner.set_connector("c", Status(State.UNASSIGNED, "w2:8083"))
        owner.flush(START_TIMEOUT_S)
        cut_off.set_connector("c", Status(State.RUNNING, "w1:8083"))
        cut_off.flush(START_TIMEOUT_S)
        for store in (owner, cut_off, newcomer):
            store.log.read_to_end().result(START_TIMEOUT_S)
            assert store.connector("c") == Status(State.RUNNING, "w1:8083", generation=8)
    finally:
        for store in (cut_off, owner, newcomer):
            if store is not None:
                store.stop()


def test_clusters_sharing_topics_never_see_each_others_records(
    broker: KafkaCluster, topic_name: str
) -> None:
    configs = _compacted(broker, topic_name + "-configs")
    offsets = _compacted(broker, topic_name + "-offsets")
    stores = {
        "A": _config_store(broker, configs, "A", sharing=True),
        "B": _config_store(broker, configs, "B", sharing=True),
        "plain": _config_store(broker, configs, "plain"),
    }
    try:
        for name, store in stores.items():
            store.claim_write_privileges()
            store.put_connector_config(f"mine-{name}", {"connector.class": "X"}, None)
            store.put_connector_config("same-name", {"owner": name}, None)
        for name, store in stores.items():
            snapshot = store.refresh()
            assert snapshot.connectors() == [f"mine-{name}", "same-name"]
            assert dict(snapshot.config("same-name") or {}) == {"owner": name}
    finally:
        for store in stores.values():
            store.stop()
    keys = [k for k, _ in _records(broker, configs, 6)]
    assert "A.connector-mine-A" in keys and "connector-mine-plain" in keys

    partition = {"filename": "/data/in.txt"}  # dots in a partition survive the prefix
    backings = {
        g: KafkaOffsetBackingStore(offsets, _props(broker), ClusterKeys(g)) for g in ("A", "B")
    }
    backings["plain"] = KafkaOffsetBackingStore(offsets, _props(broker), ClusterKeys(None))
    for backing in backings.values():
        backing.start(START_TIMEOUT_S)
    try:
        for i, backing in enumerate(backings.values()):
            OffsetStorage(backing).put("same-name", [(partition, {"position": i})])
            OffsetStorage(backing).flush()
        for i, backing in enumerate(backings.values()):
            assert OffsetStorage(backing).connector_offsets("same-name") == [
                (partition, {"position": i})
            ]
    finally:
        for backing in backings.values():
            backing.stop()


def test_internal_topics_are_created_compacted_and_uncompacted_ones_refused(
    broker: KafkaCluster, topic_name: str
) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    topics = [
        InternalTopic("config.storage.topic", topic_name + "-c", 1, 1, "configs", True),
        InternalTopic("offset.storage.topic", topic_name + "-o", 2, 1, "offsets"),
    ]
    ensure_internal_topics(admin, topics, check_compaction=True)
    meta = admin.list_topics(timeout=10).topics
    assert len(meta[topic_name + "-o"].partitions) == 2
    ensure_internal_topics(admin, topics, check_compaction=True)  # existing: fine

    broker.create_topic(topic_name + "-d", 1, {"cleanup.policy": "delete"})
    bad = [InternalTopic("status.storage.topic", topic_name + "-d", 1, 1, "statuses")]
    with pytest.raises(ConfigException, match=r"status\.storage\.topic.*cleanup\.policy=delete"):
        ensure_internal_topics(admin, bad, check_compaction=True)
    ensure_internal_topics(admin, bad, check_compaction=False)  # the dev broker's switch


def _group_settings(broker: KafkaCluster) -> GroupSettings:
    """A new group on ``broker``: 6 s sessions, heartbeats every 0.5 s."""
    group = f"copycat-test-{uuid.uuid4().hex[:8]}"
    return GroupSettings(group, 6000, 500, 30_000, kafka_python_settings(_props(broker)))


def _assign_nothing(
    leader: str, metadata: dict[str, MemberMetadata], generation: int
) -> dict[str, Assignment]:
    url = metadata[leader].url
    return {m: Assignment(0, leader, url, 0, Held(), Held(), 0) for m in metadata}


@pytest.fixture
def members(broker: KafkaCluster) -> Iterator[list[WorkerGroupMember]]:
    started: list[WorkerGroupMember] = []
    yield started
    for member in started:
        member.stop()


def test_workers_join_one_group_and_the_leader_assigns(
    broker: KafkaCluster, members: list[WorkerGroupMember]
) -> None:
    settings = _group_settings(broker)
    leaders: list[str] = []

    def assign(leader: str, metadata: dict[str, MemberMetadata], generation: int):  # type: ignore[no-untyped-def]
        leaders.append(leader)
        url = metadata[leader].url
        return {
            m: Assignment(0, leader, url, 0, Held.of([md.url]), Held(), 0)
            for m, md in metadata.items()
        }

    def metadata_of(i: int) -> Callable[[], MemberMetadata]:
        return lambda: MemberMetadata(f"http://w{i}", 0, Held())

    for i in range(2):
        member = WorkerGroupMember(settings, metadata_of(i), assign)
        member.start()
        members.append(member)
    stop = threading.Event()

    def drive(member: WorkerGroupMember) -> None:
        while not stop.is_set():
            member.poll(0.5)
            time.sleep(0.05)

    threads = [threading.Thread(target=drive, args=(m,), daemon=True) for m in members]
    for thread in threads:
        thread.start()
    try:

        def settled() -> bool:
            return (
                not any(m.rebalancing for m in members)
                and len({m.generation for m in members}) == 1
            )

        wait_for(settled, what="both members in one generation")
        latest = []
        for member in members:
            joined = None
            while (event := member.take_assignment()) is not None:
                joined = event
            latest.append(joined)
        assert all(j is not None for j in latest)
        assert sorted(next(iter(j.assignment.assigned.connectors)) for j in latest) == [  # type: ignore[union-attr]
            "http://w0",
            "http://w1",
        ]
        assert sum(j.is_leader for j in latest) == 1  # type: ignore[union-attr]
    finally:
        stop.set()
        for thread in threads:
            thread.join(5)


def _poll_like_the_tick_thread(member: WorkerGroupMember) -> None:
    member.poll(0.2)
    while member.joining:
        member.poll(0.2)


@contextlib.contextmanager
def _two_members_in_one_generation(
    settings: GroupSettings,
    metadata_of: Callable[[int], Callable[[], MemberMetadata]],
    members: list[WorkerGroupMember],
) -> Iterator[tuple[WorkerGroupMember, threading.Event]]:
    """Two members of a new group in one generation, their assignments taken: the second,
    yielded, polled by the test; the first by a thread of its own, only while the yielded
    event is set (cleared, it cannot rejoin: a round the test starts stays in flight)."""
    for i in range(2):
        member = WorkerGroupMember(settings, metadata_of(i), _assign_nothing)
        member.start()
        members.append(member)
    other, member = members
    may_poll, stop = threading.Event(), threading.Event()
    may_poll.set()

    def drive_other() -> None:
        while not stop.is_set():
            may_poll.wait()
            _poll_like_the_tick_thread(other)
            stop.wait(0.05)

    thread = threading.Thread(target=drive_other, daemon=True)
    thread.start()
    try:

        def settled() -> bool:
            _poll_like_the_tick_thread(member)
            return not member.rebalancing and member.generation == other.generation > 0

        wait_for(settled, what="both members in one generation")
        while member.take_assignment() is not None:
            pass
        yield member, may_poll
    finally:
        stop.set()
        may_poll.set()
        thread.join(5)


def test_a_join_still_in_flight_when_poll_returns_completes_on_the_next_poll(
    broker: KafkaCluster, members: list[WorkerGroupMember]
) -> None:
    """kafka-python completes a join only inside a call that awaits it: a member whose poll
    returned with its join in flight (the other member has not rejoined yet) says so with
    ``joining``, and polling again at once ends that round, without a second one."""
    settings = _group_settings(broker)

    urls = ["http://w0", "http://w1"]

    def metadata_of(i: int) -> Callable[[], MemberMetadata]:
        return lambda: MemberMetadata(urls[i], 0, Held())

    with _two_members_in_one_generation(settings, metadata_of, members) as (member, may_poll):
        before = member.generation

        may_poll.clear()  # the other member cannot rejoin until this one's poll returned
        time.sleep(0.3)
        urls[1] = "http://w1-moved"  # new metadata: a round even if this one follows
        member.request_rejoin()
        member.poll(0.2)
        assert member.joining
        may_poll.set()
        while member.joining:
            member.poll(0.2)

        assert not member.rebalancing
        assert member.generation == before + 1
        joined = member.take_assignment()
        assert joined is not None and joined.generation == before + 1
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:  # and no further round follows
            _poll_like_the_tick_thread(member)
            time.sleep(0.05)
        assert (member.generation, members[0].generation) == (before + 1, before + 1)
        assert member.take_assignment() is None


def test_a_member_that_joined_stops_without_an_error_in_the_log(
    broker: KafkaCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """kafka-python's metadata refresh loop ends with the member: it used to outlive it and
    log "Metadata refresh loop error: weakly-referenced object no longer exists" at every
    worker shutdown."""
    settings = _group_settings(broker)

    member = WorkerGroupMember(
        settings, lambda: MemberMetadata("http://w", 0, Held()), _assign_nothing
    )
    member.start()
    try:

        def joined() -> bool:
            _poll_like_the_tick_thread(member)
            return not member.rebalancing and member.generation > 0

        wait_for(joined, what="the member in its group")
    finally:
        with caplog.at_level(logging.WARNING):
            member.stop()
            gc.collect()
            time.sleep(1.0)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_rejoin_asked_for_while_a_join_is_in_flight_gets_a_round_of_its_own(
    broker: KafkaCluster, members: list[WorkerGroupMember]
) -> None:
    """A rebalance asked for after this member's JoinGroup went out (the herder removed a
    deleted connector and stopped holding it, or read a config change) is not answered by
    that round, whose metadata predates it: once the round completes, the member joins again.
    kafka-python clears its rejoin flag when a join completes, so the request was dropped: a
    distributed storm left a re-created connector held by nobody, its status a 404 on every
    worker, because its old holder's metadata said it still ran it."""
    settings = _group_settings(broker)
    held = [Held(), Held()]

    def metadata_of(i: int) -> Callable[[], MemberMetadata]:
        return lambda: MemberMetadata(f"http://w{i}", 0, held[i])

    with _two_members_in_one_generation(settings, metadata_of, members) as (member, may_poll):
        before = member.generation

        may_poll.clear()  # the round cannot end before the request below
        time.sleep(0.3)
        held[1] = Held.of(["a"])  # new metadata: a round even if this member follows
        member.request_rejoin()
        member.poll(0.2)
        assert member.joining  # its JoinGroup, with its metadata, is out
        held[1] = Held.of(["a", "b"])  # what it holds changes, and it asks again
        member.request_rejoin()
        may_poll.set()
        while member.joining:
            member.poll(0.2)
        first = member.take_assignment()
        assert first is not None and first.generation == before + 1

        def next_round() -> JoinedGroup | None:
            _poll_like_the_tick_thread(member)
            return member.take_assignment()

        second = wait_for(next_round, what="the round the second request asked for")
        assert second.generation == before + 2
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:  # and that one was enough
            _poll_like_the_tick_thread(member)
            time.sleep(0.05)
        assert member.generation == before + 2
        assert member.take_assignment() is None
