"""Where a 100 B record's time goes on each side of the data path, per stage, in one thread.

Run from the repository root:

    uv run python bench/data_path_costs.py [--size BYTES]

Each stage runs on one in-memory batch (no broker round trip in the timed part), best of
``REPEATS`` runs, reported in ns per record next to what a bare client loop does for the same
record. This is the accounting behind docs/architecture.md's "Where a task's data path runs":
what Copycat must do per record because of the Connect API (a SourceRecord or SinkRecord per
record, a converter) against what a bare loop does (``produce()``; ``value()`` + one join).

* source: FileStreamSource-style SourceRecord construction (with its offset dict), the host's
  column conversion (``copycat_pipeline.SourceRunner``'s path), ``produce()`` as the bare loop
  calls it and as Copycat's loop calls it (to an unreachable broker: librdkafka only queues);
* sink: the bare loop's per-record work on consumed messages, the worker's
  ``ConsumedBatch.from_messages``, SinkRecords as the host builds them (inlined constructor) and
  with the constructor, and StringConverter's batch decode. Messages are consumed once from a
  dev broker (confluent-kafka's Message objects cannot be made otherwise).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from copycat_converters.simple import StringConverter  # noqa: E402

from core.dev.broker import DevBroker  # noqa: E402
from core.kafka import SINK_CONSUMER_DEFAULTS  # noqa: E402
from isolation import ConsumedBatch  # noqa: E402
from isolation.host import HOSTSIDE_DIR  # noqa: E402
from plugin_api import (  # noqa: E402
    STRING_SCHEMA,
    SinkRecord,
    SourceRecord,
    SourceTask,
    TimestampType,
)

sys.path.insert(0, str(HOSTSIDE_DIR))  # the host-side modules, as a plugin host imports them
from copycat_pipeline import Pipeline, SourceRunner  # noqa: E402

# Records per timed batch: FileStreamSource's batch.size in the pipeline bench (5000) is of
# the same order; a sink put() holds at most 2000.
BATCH = 2000
# Timed runs of each stage; the best is reported (the least disturbed by other load).
REPEATS = 200
# Nothing listens here: produce() only queues, so its cost in the calling thread is measured.
NOWHERE = "127.0.0.1:9"


def best_ns(stage: Callable[[], Any], count: int) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        started = time.perf_counter()
        stage()
        best = min(best, time.perf_counter() - started)
    return best / count * 1e9


class ListSource(SourceTask):
    """Returns the same batch at each poll (no commit_record: no acks kept)."""

    def __init__(self, records: list[SourceRecord]) -> None:
        self.records = records

    def start(self, props: Any) -> None:
        pass

    def poll(self) -> list[SourceRecord]:
        return self.records

    def stop(self) -> None:
        pass

    def version(self) -> str:
        return "1"


def source_costs(size: int) -> list[tuple[str, float]]:
    lines = [f"{i:08d} " + "x" * (size - 9) for i in range(BATCH)]
    values = [line.encode() for line in lines]
    partition = {"filename": "in.txt"}

    def make_records() -> list[SourceRecord]:
        position, out = 0, []
        for text in lines:
            position += len(text) + 1
            out.append(
                SourceRecord(
                    partition, {"position": position}, "t", None, None, None, STRING_SCHEMA, text, 1
                )
            )
        return out

    records = make_records()
    key, value = StringConverter(), StringConverter()
    key.configure({}, True)
    value.configure({}, False)
    runner = SourceRunner(ListSource(records), Pipeline(key, value, None))
    producer = Producer(
        {
            "bootstrap.servers": NOWHERE,
            "queue.buffering.max.messages": 10_000_000,
            "queue.buffering.max.kbytes": 2_000_000,
            "delivery.report.only.error": True,
        }
    )
    produce = producer.produce

    def bare_produce() -> None:
        for v in values:
            produce("t", v)
        producer.purge()

    def copycat_produce() -> None:
        for index in range(BATCH):
            produce("t", values[index], None, -1, None, None, 1)
        producer.purge()

    return [
        ("bare: produce(topic, line)", best_ns(bare_produce, BATCH)),
        ("task: SourceRecord + offset dict per line", best_ns(make_records, BATCH)),
        ("host: poll() answer by column (convert)", best_ns(runner.poll, BATCH)),
        ("loop: produce(topic, value, key, partition, ...)", best_ns(copycat_produce, BATCH)),
    ]


def sink_costs(size: int) -> list[tuple[str, float]]:
    with DevBroker() as dev:
        producer = Producer({"bootstrap.servers": dev.bootstrap_servers, "linger.ms": 5})
        for i in range(BATCH):
            producer.produce("costs", b"%08d " % i + b"x" * (size - 9), partition=0)
        producer.flush(30)
        consumer = Consumer(
            {"bootstrap.servers": dev.bootstrap_servers, "group.id": "costs"}
            | SINK_CONSUMER_DEFAULTS
        )
        consumer.assign([TopicPartition("costs", 0, 0)])
        messages: list[Any] = []
        while len(messages) < BATCH:
            messages += [m for m in consumer.consume(BATCH, 1.0) if m.error() is None]
        consumer.close()
    assert len(messages) == BATCH, "the dev broker did not return the batch"
    converter = StringConverter()
    converter.configure({}, False)
    batch = ConsumedBatch.from_messages(messages)
    new, create = object.__new__, TimestampType.CREATE_TIME

    def bare() -> bytes:
        return b"\n".join([m.value() for m in messages if m.error() is None])

    def records_inlined() -> list[SinkRecord]:
        out = []
        for offset, value in zip(batch.offsets, batch.values, strict=True):
            record = new(SinkRecord)
            record.topic, record.kafka_partition = "costs", 0
            record.key_schema, record.key = None, None
            record.value_schema, record.value = None, value
            record.timestamp, record._headers = 1, None
            record.kafka_offset, record.timestamp_type = offset, create
            record.original_topic, record.original_kafka_partition = "costs", 0
            record.original_kafka_offset = offset
            out.append(record)
        return out

    def records_constructed() -> list[SinkRecord]:
        return [
            SinkRecord("costs", 0, None, None, None, v, o, 1, create)
            for o, v in zip(batch.offsets, batch.values, strict=True)
        ]

    def columns() -> ConsumedBatch:
        return ConsumedBatch.from_messages(messages)

    def decode() -> Any:
        return converter.to_connect_data_batch("costs", batch.values, [None] * BATCH)

    return [
        ("bare: error() + value() per message, one join", best_ns(bare, BATCH)),
        ("worker: ConsumedBatch.from_messages", best_ns(columns, BATCH)),
        ("host: StringConverter batch decode", best_ns(decode, BATCH)),
        ("host: SinkRecord, inlined constructor", best_ns(records_inlined, BATCH)),
        ("(SinkRecord through its constructor)", best_ns(records_constructed, BATCH)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100, help="record size in bytes")
    args = parser.parse_args()
    for title, costs in (("source", source_costs(args.size)), ("sink", sink_costs(args.size))):
        print(f"\n{title}, {args.size} B records, ns per record (best of {REPEATS}):")
        for label, ns in costs:
            print(f"  {label:<50}{ns:>8.0f}")


if __name__ == "__main__":
    main()
