"""ConsumedBatch: consumed records by column, as a put() batch crosses to the plugin host."""

from __future__ import annotations

import pickle

from isolation._hostside.copycat_batch import ConsumedBatch


def _rows(
    count: int,
    *,
    topic: str = "t",
    partition: int = 0,
    start: int = 0,
    key: bytes | None = None,
    headers: list | None = None,
) -> list[tuple]:
    return [
        (topic, partition, start + i, 1_700_000_000_000 + i, 1, key, b"v%d" % i, headers)
        for i in range(count)
    ]


def test_shared_fields_are_stored_once_and_rows_come_back_in_order() -> None:
    rows = _rows(5)
    batch = ConsumedBatch.from_rows(rows)
    assert (batch.topics, batch.partitions, batch.timestamp_types) == ("t", 0, 1)
    assert batch.keys is None and batch.headers is None
    assert batch.values == [b"v0", b"v1", b"v2", b"v3", b"v4"]
    assert list(batch.rows()) == rows
    assert len(batch) == 5 and batch


def test_fields_that_differ_stay_per_record() -> None:
    rows = [
        ("a", 0, 7, 10, 1, b"k1", b"x", [("h", b"1")]),
        ("b", 1, 3, None, 0, None, None, None),
        ("a", 0, 8, 12, 2, b"k1", b"", [("h", b"1")]),
    ]
    batch = ConsumedBatch.from_rows(rows)
    assert batch.topics == ["a", "b", "a"] and batch.partitions == [0, 1, 0]
    assert batch.timestamp_types == [1, 0, 2] and batch.keys == [b"k1", None, b"k1"]
    assert list(batch.rows()) == rows


def test_identical_header_lists_are_never_taken_for_a_shared_value() -> None:
    # A shared column is a single non-list value; header lists must stay one per record.
    rows = _rows(3, headers=[("h", b"1")])
    batch = ConsumedBatch.from_rows(rows)
    assert batch.headers == [[("h", b"1")]] * 3
    assert list(batch.rows()) == rows


def test_the_wire_form_pickles_without_the_class_and_round_trips() -> None:
    rows = _rows(4, key=b"same")
    wire = ConsumedBatch.from_rows(rows).wire()
    assert b"ConsumedBatch" not in pickle.dumps(wire, protocol=5)
    assert list(ConsumedBatch.from_wire(pickle.loads(pickle.dumps(wire))).rows()) == rows


def test_positions_are_the_offset_after_each_partitions_last_record() -> None:
    assert ConsumedBatch.from_rows(_rows(3, start=40)).positions() == {("t", 0): 43}
    mixed = (
        _rows(2, partition=0, start=10)
        + _rows(3, partition=1, start=5)
        + _rows(1, topic="u", partition=0, start=99)
    )
    assert ConsumedBatch.from_rows(mixed).positions() == {("t", 0): 12, ("t", 1): 8, ("u", 0): 100}
    assert ConsumedBatch.from_rows([]).positions() == {}


def test_without_drops_partitions_and_names_their_first_offsets() -> None:
    rows = _rows(2, partition=0, start=10) + _rows(3, partition=1, start=5)
    batch = ConsumedBatch.from_rows(rows)
    kept, first = batch.without({("t", 1)})
    assert first == {("t", 1): 5}
    assert list(kept.rows()) == rows[:2]
    unchanged, none = batch.without({("other", 0)})
    assert unchanged is batch and none == {}
    empty, first = batch.without({("t", 0), ("t", 1)})
    assert not empty and first == {("t", 0): 10, ("t", 1): 5}
