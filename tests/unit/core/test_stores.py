"""The store seams' in-memory and file implementations (core/stores)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.stores import (
    FileOffsetBackingStore,
    MemoryConfigStore,
    MemoryOffsetBackingStore,
    OffsetStorage,
    TargetState,
)
from core.stores.java_offsets import read_offsets_map, write_offsets_map
from core.stores.offsets import offset_key
from plugin_api import ConnectException


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def on_connector_config_update(self, connector: str) -> None:
        self.events.append(("config", connector))

    def on_connector_config_removed(self, connector: str) -> None:
        self.events.append(("removed", connector))

    def on_task_configs_update(self, connector: str) -> None:
        self.events.append(("tasks", connector))

    def on_target_state_change(self, connector: str) -> None:
        self.events.append(("target", connector))


def test_config_snapshots_are_immutable_views_and_listeners_hear_each_change() -> None:
    store = MemoryConfigStore()
    listener = Recorder()
    store.set_listener(listener)
    store.put_connector_config("a", {"k": "v"}, None)
    before = store.snapshot()
    store.put_task_configs("a", [{"t": "0"}, {"t": "1"}])
    store.put_target_state("a", TargetState.PAUSED)
    store.put_connector_config("a", {"k": "w"}, None)  # keeps its target state
    after = store.snapshot()
    assert before.tasks("a") == () and before.target_state("a") is TargetState.STARTED
    assert [dict(t) for t in after.tasks("a")] == [{"t": "0"}, {"t": "1"}]
    assert after.target_state("a") is TargetState.PAUSED
    assert dict(after.config("a") or {}) == {"k": "w"}
    assert after.offset > before.offset
    store.remove_connector_config("a")
    assert not store.snapshot().contains("a") and store.snapshot().tasks("a") == ()
    assert listener.events == [
        ("config", "a"),
        ("tasks", "a"),
        ("target", "a"),
        ("config", "a"),
        ("removed", "a"),
    ]


def test_the_memory_store_knows_the_connector_config_its_task_configs_were_stored_under() -> None:
    """As Kafka's MemoryConfigBackingStore: putting task configs applies the connector's
    current config; a later config is not applied until they are put again; a removed
    connector has none (standalone mode restarts tasks on a config that is not applied)."""
    store = MemoryConfigStore()
    old, new = {"connector.class": "S", "a": "1"}, {"connector.class": "S", "a": "2"}
    store.put_connector_config("c", old, None)
    assert store.snapshot().applied_config("c") is None
    store.put_task_configs("c", [{}])
    store.put_connector_config("c", new, None)
    assert store.snapshot().applied_config("c") == old
    store.put_task_configs("c", [{}])
    assert store.snapshot().applied_config("c") == new
    store.remove_connector_config("c")
    assert store.snapshot().applied_config("c") is None


def test_offset_keys_are_kafka_connects_format() -> None:
    assert offset_key("src", {"filename": "/tmp/in.txt"}) == b'["src",{"filename":"/tmp/in.txt"}]'
    backing = MemoryOffsetBackingStore()
    storage = OffsetStorage(backing)
    storage.put("src", [({"filename": "/in"}, {"position": 42}), ({"p": 1}, {"n": 3})])
    assert dict(backing.items())[b'["src",{"filename":"/in"}]'] == b'{"position":42}'
    assert storage.get("src", [{"filename": "/in"}, {"filename": "/other"}]) == {
        (("filename", "/in"),): {"position": 42}
    }
    storage.put("src", [({"p": 1}, None)])  # a tombstone removes it
    assert storage.connector_offsets("src") == [({"filename": "/in"}, {"position": 42})]
    assert storage.connector_offsets("other") == []


def test_the_offsets_file_round_trips_and_keeps_its_format(tmp_path: Path) -> None:
    path = tmp_path / "connect.offsets"
    storage = OffsetStorage(FileOffsetBackingStore(path))
    storage.put("src", [({"filename": "/in"}, {"position": 7})])
    assert not path.exists()  # durable only on flush
    storage.flush()
    assert json.loads(path.read_text()) == {
        "version": 1,
        "offsets": {'["src",{"filename":"/in"}]': {"position": 7}},
    }
    again = OffsetStorage(FileOffsetBackingStore(path))
    assert again.connector_offsets("src") == [({"filename": "/in"}, {"position": 7})]


def test_an_offset_stored_before_offsets_were_checked_can_still_be_reset() -> None:
    """An older version stored a partition Kafka's format refuses (an array in it): a new
    offset for it is refused, but its tombstone (DELETE /connectors/X/offsets) goes through,
    or the entry could never be removed over REST."""
    backing = MemoryOffsetBackingStore()
    backing.set({offset_key("src", {"shards": [1, 2]}): b'{"position":3}'})
    storage = OffsetStorage(backing)
    with pytest.raises(ConnectException, match="field shards contains ARRAY"):
        storage.put("src", [({"shards": [1, 2]}, {"position": 4})])
    storage.put("src", [({"shards": [1, 2]}, None)])
    assert storage.connector_offsets("src") == []


def test_a_write_that_failed_is_written_by_the_next_flush(tmp_path: Path) -> None:
    """A failed write (directory read-only, disk full, here a directory where the file
    goes) stays pending: the waiter of that write raises, and the next flush once the file can
    be written writes it. The dirty flag used to be cleared before the write, so after the
    periodic flush met the failure, the task's waiter returned as if durable and later flushes
    wrote nothing until some new offset came."""
    path = tmp_path / "connect.offsets"
    storage = OffsetStorage(FileOffsetBackingStore(path))
    storage.put("src", [({"filename": "/in"}, {"position": 1})])
    storage.flush()
    path.unlink()
    path.mkdir()  # every write now fails (os.replace onto a directory)
    (path / "keep").touch()
    waiter = storage.put("src", [({"filename": "/in"}, {"position": 2})])
    with pytest.raises(OSError):
        storage.flush()  # the worker's periodic flush meets the failure first
    with pytest.raises(OSError):
        waiter()  # and the task's own wait for its write is told
    (path / "keep").unlink()
    path.rmdir()
    storage.flush()
    again = OffsetStorage(FileOffsetBackingStore(path))
    assert again.connector_offsets("src") == [({"filename": "/in"}, {"position": 2})]


def test_a_kafka_connect_offsets_file_keeps_its_format_and_key_bytes(tmp_path: Path) -> None:
    """connect-standalone's file (a Java-serialized map): read, and written back in its format
    under the key bytes Kafka Connect wrote (it looks offsets up by those bytes), here a
    partition whose fields a Java map gave in unsorted order."""
    path = tmp_path / "connect.offsets"
    kafka_key = b'["src",{"table":"t","db":"d"}]'
    path.write_bytes(write_offsets_map({kafka_key: b'{"pos":1}', b'["src",{"p":9}]': b"{}"}))
    storage = OffsetStorage(FileOffsetBackingStore(path))
    assert storage.get("src", [{"db": "d", "table": "t"}]) == {
        (("db", "d"), ("table", "t")): {"pos": 1}
    }
    storage.put("src", [({"db": "d", "table": "t"}, {"pos": 2}), ({"p": 9}, None)])
    storage.flush()
    assert read_offsets_map(path.read_bytes()) == {kafka_key: b'{"pos":2}'}
