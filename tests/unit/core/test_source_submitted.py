"""Source offsets become committable batch by batch, only as the acknowledged prefix."""

from __future__ import annotations

from typing import Any, cast

from plugin_api.connector import freeze_partition

from core.runtime.source import _Batch, _Submitted


def _batch(submitted: _Submitted, errors: list, offsets: dict, size: int) -> _Batch:
    batch = _Batch(lambda err, msg: errors.append(err))
    batch.size = size
    batch.offsets.update(offsets)
    submitted.batches.append(batch)
    submitted.records += size
    return batch


def test_a_later_batch_acked_first_waits_for_the_earlier_one() -> None:
    submitted, errors = _Submitted(), cast(list[Any], [])
    first = _batch(submitted, errors, {"f": ({"file": "a"}, {"position": 10})}, 2)
    second = _batch(submitted, errors, {"f": ({"file": "a"}, {"position": 20})}, 1)
    second.delivered(None, None)
    assert submitted.committable() == []
    assert submitted.records == 3
    first.delivered(None, None)
    assert submitted.committable() == []  # one record of the first batch still unacked
    first.delivered(None, None)
    assert submitted.committable() == [({"file": "a"}, {"position": 20})]
    assert submitted.records == 0
    assert submitted.committable() == []  # handed out once


def test_each_partition_gets_its_latest_offset_from_the_acked_prefix() -> None:
    submitted, errors = _Submitted(), cast(list[Any], [])
    one = _batch(submitted, errors, {"a": ("A", 1), "b": ("B", 5)}, 2)
    two = _batch(submitted, errors, {"a": ("A", 3)}, 1)
    for batch in (one, one, two):
        batch.delivered(None, None)
    assert sorted(submitted.committable()) == [("A", 3), ("B", 5)]


def test_a_failed_delivery_is_reported_and_never_counts_as_acked() -> None:
    submitted, errors = _Submitted(), cast(list[Any], [])
    batch = _batch(submitted, errors, {"a": ("A", 1)}, 1)
    batch.delivered("broker said no", None)  # type: ignore[arg-type]
    assert errors == ["broker said no"]
    assert submitted.committable() == []
    assert submitted.records == 1


def test_an_empty_batch_never_holds_back_later_ones() -> None:
    submitted, errors = _Submitted(), cast(list[Any], [])
    _batch(submitted, errors, {}, 0)
    later = _batch(submitted, errors, {"a": ("A", 7)}, 1)
    later.delivered(None, None)
    assert submitted.committable() == [("A", 7)]


def test_offsets_of_a_failed_commit_go_with_the_next_one_unless_newer_ones_came() -> None:
    """As Kafka's OffsetStorageWriter.cancelFlush: a failed flush's offsets are flushed again
    later, a partition's newer offset winning."""
    a, b = {"file": "a"}, {"file": "b"}
    submitted, errors = _Submitted(), cast(list[Any], [])
    first = _batch(
        submitted,
        errors,
        {freeze_partition(a): (a, {"position": 10}), freeze_partition(b): (b, {"position": 5})},
        1,
    )
    first.delivered(None, None)
    failed = submitted.committable()
    second = _batch(submitted, errors, {freeze_partition(a): (a, {"position": 20})}, 1)
    second.delivered(None, None)
    submitted.settle()
    submitted.retry(failed)
    assert sorted(submitted.committable(), key=str) == [
        (a, {"position": 20}),
        (b, {"position": 5}),
    ]
    assert submitted.committable() == []
