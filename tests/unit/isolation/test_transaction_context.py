"""Connector-defined transaction boundaries as the host answers them with a poll
(``transaction.boundary=connector``): after the named record, or after the batch; records
matched by identity; both commit and abort of one record or batch fail the task."""

from __future__ import annotations

import pytest

from isolation._hostside.copycat_transactions import (
    ABORT,
    AFTER_BATCH,
    COMMIT,
    HostTransactionContext,
    batch_boundary,
)
from plugin_api import ConnectException, SourceRecord


def _record(n: int) -> SourceRecord:
    return SourceRecord({"p": 0}, {"n": n}, "t", value=f"v{n}")


def test_a_record_boundary_is_used_once_and_matched_by_identity() -> None:
    context = HostTransactionContext()
    first, equal_twin = _record(1), _record(1)
    context.commit_transaction(first)
    assert context.any_record_requests
    assert context.boundary_of(equal_twin) is None  # an equal record is another record
    assert context.boundary_of(first) == COMMIT
    assert context.boundary_of(first) is None
    assert not context.any_record_requests
    second = _record(2)
    context.abort_transaction(second)
    assert context.boundary_of(second) == ABORT


def test_a_batch_boundary_comes_after_the_batch_with_its_offsets() -> None:
    context = HostTransactionContext()
    offsets = [({"p": 0}, {"n": 9})]
    assert batch_boundary(context, offsets) == []
    context.abort_transaction()
    assert batch_boundary(context, offsets) == [(AFTER_BATCH, ABORT, offsets)]
    assert batch_boundary(context, offsets) == []  # taken once


def test_asking_both_to_commit_and_abort_fails_the_task() -> None:
    context = HostTransactionContext()
    record = _record(3)
    context.commit_transaction(record)
    context.abort_transaction(record)
    with pytest.raises(ConnectException, match="both to commit and to abort"):
        context.boundary_of(record)
    context.commit_transaction()
    context.abort_transaction()
    with pytest.raises(ConnectException, match="same batch"):
        context.take_batch()
