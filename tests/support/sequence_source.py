"""A source connector for exactly-once tests, after Kafka's TestableSourceConnector.

Imported as it is by loop unit tests (the in-process host) and shipped as a wheel to real
plugin hosts (``wheel_sources()``). It uses ``plugin_api`` only.

Task ``n`` of connector ``c`` writes ``key-c-n-<seq>`` / ``value-c-n-<seq>`` for seq = 1, 2,
... with source partition ``{"task.id": "c-n"}`` and offset ``{"saved": seq}``, resuming after
the committed offset. Keys (all optional):

* ``topic`` (required), ``messages.per.poll`` (default 100), ``max.messages`` (stop after so
  many in all; default: never), ``throughput`` (records a second at most; default: as fast as
  it can), ``partitions`` (spread over this many partitions by seq; default: let the producer
  choose by key);
* ``custom.exactly.once.support`` / ``custom.transaction.boundaries``: what
  ``exactly_once_support()`` / ``can_define_transaction_boundaries()`` answer: ``supported``,
  ``unsupported``, ``null`` or ``fail`` (raise); default ``supported``;
* with a transaction context (``transaction.boundary=connector``): transactions end at the
  Fibonacci numbers (1, 2, 3, 5, 8, ...); one ending at an even seq is aborted, as Kafka's
  test connector does;
* ``naughty.topic``: instead, read an offset and then write one record to this topic (Kafka's
  NaughtyConnector, for the task's own offsets topic).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from plugin_api import (
    ConfigDef,
    ConnectException,
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
)

DEFAULT_MESSAGES_PER_POLL = 100


def _answer(value: str | None, kind: Any) -> Any:
    choice = (value or "supported").lower()
    if choice == "fail":
        raise ConnectException(f"{kind.__name__} check failed on purpose")
    if choice == "null":
        return None
    return kind.SUPPORTED if choice == "supported" else kind.UNSUPPORTED


class SequenceSourceConnector(SourceConnector):
    """See the module docstring."""

    def version(self) -> str:
        return "1.0"

    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type[Task]:
        return SequenceSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self.props, **{"task.index": str(i)}) for i in range(max_tasks)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return ConfigDef()

    def exactly_once_support(self, props: Mapping[str, str]) -> ExactlyOnceSupport | None:
        answer: ExactlyOnceSupport | None = _answer(
            props.get("custom.exactly.once.support"), ExactlyOnceSupport
        )
        return answer

    def can_define_transaction_boundaries(
        self, props: Mapping[str, str]
    ) -> ConnectorTransactionBoundaries | None:
        answer: ConnectorTransactionBoundaries | None = _answer(
            props.get("custom.transaction.boundaries"), ConnectorTransactionBoundaries
        )
        return answer


class SequenceSourceTask(SourceTask):
    """See the module docstring."""

    def version(self) -> str:
        return "1.0"

    def start(self, props: Mapping[str, str]) -> None:
        self.name = f"{props['name']}-{props.get('task.index', '0')}"
        self.topic = props["topic"]
        self.per_poll = int(props.get("messages.per.poll", DEFAULT_MESSAGES_PER_POLL))
        self.max = int(props["max.messages"]) if props.get("max.messages") else None
        throughput = float(props.get("throughput", "0"))
        self.pause_s = self.per_poll / throughput if throughput > 0 else 0.0
        self.partitions = int(props["partitions"]) if props.get("partitions") else None
        self.naughty = props.get("naughty.topic")
        self.partition = {"task.id": self.name}
        stored = self.context.offset_storage_reader().offset(self.partition)
        self.seq = int(stored["saved"]) if stored else 0
        # Fibonacci boundaries at or after the resumed position.
        self.prior, self.boundary = 1, 2
        self.next_boundary = 1
        while self.next_boundary <= self.seq:
            self._advance_boundary()

    def _advance_boundary(self) -> None:
        self.next_boundary = self.boundary
        self.prior, self.boundary = self.boundary, self.prior + self.boundary

    def poll(self) -> list[SourceRecord] | None:
        if self.naughty:
            self.context.offset_storage_reader().offset({"anything": ""})
            return [SourceRecord({"naughty": 1}, {"n": 1}, self.naughty, value="whoops")]
        if self.max is not None and self.seq >= self.max:
            time.sleep(0.05)
            return None
        if self.pause_s:
            time.sleep(self.pause_s)
        count = self.per_poll if self.max is None else min(self.per_poll, self.max - self.seq)
        records = []
        transactions = self.context.transaction_context()
        for _ in range(count):
            self.seq += 1
            text = f"{self.name}-{self.seq}"
            record = SourceRecord(
                self.partition,
                {"saved": self.seq},
                self.topic,
                None if self.partitions is None else self.seq % self.partitions,
                key=f"key-{text}",
                value=f"value-{text}",
            )
            records.append(record)
            if transactions is not None and self.seq == self.next_boundary:
                if self.seq % 2 == 0:
                    transactions.abort_transaction(record)
                else:
                    transactions.commit_transaction(record)
                self._advance_boundary()
        return records

    def stop(self) -> None:
        pass


def install_sequence_source(plugin_path: Path) -> Path:
    """This module as a plugin wheel (``SequenceSource``), installed offline into
    ``plugin_path``; returns ``plugin_path``. Test-side code, never run in a plugin host."""
    from registry import install
    from tests.support.wheels import build_wheel

    wheel = build_wheel(
        plugin_path.parent / "sequence-source-wheel",
        "sequence-source",
        "1.0",
        {"sequence_source.py": Path(__file__).read_text()},
        entry_points={
            "copycat.connectors": {"SequenceSource": "sequence_source:SequenceSourceConnector"}
        },
    )
    install(str(wheel), plugin_path, offline=True)
    return plugin_path
