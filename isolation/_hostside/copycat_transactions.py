"""Connector-defined transaction boundaries on the host side (KIP-618, stdlib + plugin_api).

A source task running with ``transaction.boundary=connector`` gets a
:class:`HostTransactionContext` from ``context.transaction_context()``. Its requests are kept
here and turned into *boundaries* when the records of a poll are converted
(:meth:`HostTransactionContext.boundary_of` per record, :meth:`HostTransactionContext.take_batch`
after the batch): ``(row index, "commit" | "abort", offsets so far)``, row index -1 meaning
"after the whole batch". The worker's exactly-once loop ends its transaction there.

Records are matched by identity, not equality: two equal records returned by different polls
are different records to commit after.
"""

from __future__ import annotations

import threading
from typing import Any

from plugin_api import ConnectException, SourceRecord, TransactionContext

COMMIT = "commit"
ABORT = "abort"
# The row index of a boundary after the whole batch rather than after one record.
AFTER_BATCH = -1


class HostTransactionContext(TransactionContext):
    """Requests of one source task; called from the task's thread (any thread is safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._commit_batch = False
        self._abort_batch = False
        # id(record) -> record: the record is kept so that its id cannot be reused meanwhile.
        self._commit_records: dict[int, SourceRecord] = {}
        self._abort_records: dict[int, SourceRecord] = {}

    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        with self._lock:
            if record is None:
                self._commit_batch = True
            else:
                self._commit_records[id(record)] = record

    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        with self._lock:
            if record is None:
                self._abort_batch = True
            else:
                self._abort_records[id(record)] = record

    @property
    def any_record_requests(self) -> bool:
        """Whether some record is waiting for a boundary (the per-record check is skipped
        otherwise)."""
        return bool(self._commit_records or self._abort_records)

    def boundary_of(self, record: SourceRecord) -> str | None:
        """``"commit"``, ``"abort"`` or None for a record being sent; each request is used once.

        Raises:
            ConnectException: the task asked both to commit and to abort after this record
                (Kafka fails the task rather than trust it to notice its own mistake).
        """
        key = id(record)
        with self._lock:
            commit = self._commit_records.pop(key, None) is not None
            abort = self._abort_records.pop(key, None) is not None
        if commit and abort:
            raise ConnectException(
                "the task requested both to commit and to abort the transaction after the same "
                f"record (topic {record.topic!r}, source offset {record.source_offset})"
            )
        return COMMIT if commit else ABORT if abort else None

    def take_batch(self) -> str | None:
        """The request for the batch just sent (``"commit"``, ``"abort"`` or None); clears it.

        Raises:
            ConnectException: both were requested for the same batch.
        """
        with self._lock:
            commit, abort = self._commit_batch, self._abort_batch
            self._commit_batch = self._abort_batch = False
        if commit and abort:
            raise ConnectException(
                "the task requested both to commit and to abort the same batch's transaction"
            )
        return COMMIT if commit else ABORT if abort else None


def batch_boundary(
    context: HostTransactionContext, offsets: list[tuple[Any, Any]]
) -> list[tuple[int, str, list[tuple[Any, Any]]]]:
    """The after-batch boundary (if the task asked for one), as the worker takes it."""
    action = context.take_batch()
    return [] if action is None else [(AFTER_BATCH, action, offsets)]
