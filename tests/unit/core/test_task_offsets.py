"""A task's offsets over a connector's own offsets topic and the worker's store (KIP-618):
the connector's offset wins on reads, the worker's fills in; writes are copied to the worker's
store, tombstones before the primary write; a failed copy is not the task's failure."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from plugin_api.connector import freeze_partition

from core.offsets import MemoryOffsetStore, WriteWaiter
from core.stores.offsets import offset_key
from core.stores.task_offsets import TaskOffsetStore

A, B, C = {"file": "a"}, {"file": "b"}, {"file": "c"}


class FailingStore(MemoryOffsetStore):
    """A worker store whose writes fail to become durable (a broker outage)."""

    def __init__(self) -> None:
        super().__init__()
        self.fail = False

    def put(self, connector: str, entries: Iterable[tuple[Mapping[str, Any], Any]]) -> WriteWaiter:
        written = super().put(connector, entries)

        def wait() -> None:
            if self.fail:
                raise OSError("worker offsets unavailable")
            written()

        return wait


class Recording(MemoryOffsetStore):
    """Records the order of flushed writes across two stores."""

    def __init__(self, name: str, journal: list[str]) -> None:
        super().__init__()
        self.name, self.journal = name, journal

    def put(self, connector: str, entries: Iterable[tuple[Mapping[str, Any], Any]]) -> WriteWaiter:
        for partition, offset in entries:
            kind = "tombstone" if offset is None else "value"
            self.journal.append(f"{self.name}:{kind}:{partition['file']}")
        return super().put(connector, entries)


def test_reads_prefer_the_connector_topic_and_fall_back_to_the_worker_store() -> None:
    primary, secondary = MemoryOffsetStore(), MemoryOffsetStore()
    secondary.put("c", [(A, {"pos": 1}), (B, {"pos": 2})])
    primary.put("c", [(B, {"pos": 20}), (C, {"pos": 30})])
    store = TaskOffsetStore(primary, secondary, topic="c-offsets")
    found = store.get("c", [A, B, C])
    assert found == {
        freeze_partition(A): {"pos": 1},
        freeze_partition(B): {"pos": 20},
        freeze_partition(C): {"pos": 30},
    }
    assert sorted((p["file"], o["pos"]) for p, o in store.connector_offsets("c")) == [
        ("a", 1),
        ("b", 20),
        ("c", 30),
    ]


def test_writes_reach_both_stores_tombstones_in_the_worker_store_first() -> None:
    journal: list[str] = []
    primary, secondary = Recording("connector", journal), Recording("worker", journal)
    store = TaskOffsetStore(primary, secondary, topic="c-offsets")
    store.put("c", [(A, {"pos": 5}), (B, None)])
    store.flush()
    assert journal == [
        "worker:tombstone:b",
        "connector:value:a",
        "connector:tombstone:b",
        "worker:value:a",
    ]
    assert secondary.get("c", [A]) == {freeze_partition(A): {"pos": 5}}


def test_a_failed_copy_to_the_worker_store_is_not_the_tasks_failure() -> None:
    primary, secondary = MemoryOffsetStore(), FailingStore()
    secondary.fail = True
    store = TaskOffsetStore(primary, secondary, topic="c-offsets")
    store.put("c", [(A, {"pos": 5})])
    store.flush()  # the value copy fails: logged, not raised
    assert store.get("c", [A]) == {freeze_partition(A): {"pos": 5}}
    store.put("c", [(A, None)])
    with pytest.raises(OSError):  # a tombstone that cannot reach the worker store first
        store.flush()


def test_records_are_the_connect_offsets_format_with_the_topics_key_prefix() -> None:
    store = TaskOffsetStore(MemoryOffsetStore(), topic="shared", encode_key=lambda k: b"G." + k)
    [(key, value), (gone, tombstone)] = store.records("c", [(A, {"pos": 7}), (B, None)])
    assert key == b"G." + offset_key("c", A) and json.loads(value or b"") == {"pos": 7}
    assert gone == b"G." + offset_key("c", B) and tombstone is None


def test_a_tombstone_record_covers_every_form_of_its_key_in_the_topic() -> None:
    """Kafka Connect writes a partition's fields in its own order: a reset (or a task's
    tombstone) in a transaction must delete that form too, as the plain store's write does."""
    kafka_form = b'["c",{"table":"t","db":"d"}]'
    asked: list[list[bytes]] = []

    def forms(keys: Iterable[bytes]) -> dict[bytes, set[bytes]]:
        listed = list(keys)
        asked.append(listed)
        return {key: {key, kafka_form} for key in listed}

    store = TaskOffsetStore(MemoryOffsetStore(), topic="offsets", key_forms=forms)
    partition = {"db": "d", "table": "t"}
    assert store.records("c", [(A, {"pos": 1})]) == [(offset_key("c", A), b'{"pos":1}')]
    assert asked == []  # values need no read of the topic
    records = store.records("c", [(partition, None), (A, {"pos": 2})])
    assert sorted(records, key=lambda r: r[0]) == sorted(
        [
            (offset_key("c", partition), None),
            (kafka_form, None),
            (offset_key("c", A), b'{"pos":2}'),
        ],
        key=lambda r: r[0],
    )
    assert asked == [[offset_key("c", partition)]]


def test_a_value_record_goes_under_the_forms_of_its_key_already_in_the_topic() -> None:
    """A migrated partition's offset goes under Kafka Connect's form of its key (which Kafka
    Connect looks up by its bytes after a migration back), without reading the topic."""
    kafka_form = b'["c",{"table":"t","db":"d"}]'
    partition = {"db": "d", "table": "t"}

    def written(keys: Iterable[bytes]) -> dict[bytes, set[bytes]]:
        return {key: {kafka_form} if key == offset_key("c", partition) else {key} for key in keys}

    store = TaskOffsetStore(MemoryOffsetStore(), topic="offsets", written_forms=written)
    assert store.records("c", [(partition, {"pos": 3}), (A, {"pos": 4})]) == [
        (kafka_form, b'{"pos":3}'),
        (offset_key("c", A), b'{"pos":4}'),
    ]


def test_tombstones_first_reach_the_worker_store_alone() -> None:
    journal: list[str] = []
    primary, secondary = Recording("connector", journal), Recording("worker", journal)
    store = TaskOffsetStore(primary, secondary, topic="c-offsets")
    store.tombstones_first("c", [(A, {"pos": 5}), (B, None)])
    assert journal == ["worker:tombstone:b"]
    failing = TaskOffsetStore(MemoryOffsetStore(), FailingStore(), topic="c-offsets")
    assert isinstance(failing.secondary, FailingStore)
    failing.secondary.fail = True
    failing.tombstones_first("c", [(A, {"pos": 5})])  # no tombstone: nothing to write
    with pytest.raises(OSError):
        failing.tombstones_first("c", [(A, None)])
