"""Where a 100 B record's time goes on each side of the data path, per stage, in one thread.

Run from the repository root:

    uv run python bench/data_path_costs.py [--size BYTES]

Each stage runs on one in-memory batch (no broker round trip in the timed part), best of
``REPEATS`` runs, reported in ns per record next to what a bare client loop does for the same
record. This is the accounting behind docs/architecture.md's "Where a task's data path runs":
what Copycat must do per record because of the Connect API (a SourceRecord or SinkRecord per
record, a converter) against what a bare loop does (``produce()``; ``value()`` + one join).

* source: a SourceRecord and its offset dict per line (the Connect API's per-record form),
  FileStreamSource's poll() as it is (one SourceRecordBatch), the host's column conversion
  of each (``copycat_pipeline.SourceRunner.poll``), ``produce()`` as the bare loop calls it and
  as Copycat's loop calls it (to an unreachable broker: librdkafka only queues);
* sink: the bare loop's per-record work on consumed messages, the worker's
  ``ConsumedBatch.from_messages`` (the split data path), the host's whole put() of the
  messages into FileStreamSink's text (``SinkRunner.put`` with a task that formats what it
  is given as FileStreamSink does, no I/O), the same when the task reads every record
  (SinkRecords built), and StringConverter's batch decode. Messages are consumed once from a
  dev broker.
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
from copycat_file.sink import lines_bytes  # noqa: E402
from copycat_file.source import FileStreamSourceTask  # noqa: E402

from core.dev.broker import DevBroker  # noqa: E402
from core.kafka import SINK_CONSUMER_DEFAULTS  # noqa: E402
from isolation import ConsumedBatch  # noqa: E402
from isolation.host import HOSTSIDE_DIR  # noqa: E402
from plugin_api import (  # noqa: E402
    STRING_SCHEMA,
    SinkTask,
    SourceRecord,
    SourceTask,
    Utf8Texts,
)

sys.path.insert(0, str(HOSTSIDE_DIR))  # the host-side modules, as a plugin host imports them
from copycat_batch import MessageBatch  # noqa: E402
from copycat_errors import ErrorPolicy  # noqa: E402
from copycat_pipeline import HostSinkTaskContext, Pipeline, SinkRunner, SourceRunner  # noqa: E402

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

    def __init__(self, records: Any) -> None:
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
    # FileStreamSource's own poll() over lines it has read (the file read itself not timed).
    file_task = FileStreamSourceTask()
    file_task._topic, file_task._batch_size = "t", BATCH
    file_task._partition = partition
    texts = Utf8Texts(values)  # as FileStreamSource keeps valid UTF-8 lines it has read

    def file_poll() -> Any:
        file_task._texts, file_task._lines = texts, texts.encoded
        file_task._next_line, file_task._position = 0, 0
        return file_task.poll()

    batch_runner = SourceRunner(ListSource(file_poll()), Pipeline(key, value, None))
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
        # As core/runtime/source.py's _send_uniform for a batch with keys (FileStreamSource's
        # keyless batches take the bare call: produce(topic, value)).
        for value in values:
            produce("t", value, b"k", -1, None, None, 0)
        producer.purge()

    return [
        ("bare: produce(topic, line)", best_ns(bare_produce, BATCH)),
        ("task: SourceRecord + offset dict per line", best_ns(make_records, BATCH)),
        ("host: their poll() answer by column (convert)", best_ns(runner.poll, BATCH)),
        ("task: FileStreamSource poll(), a SourceRecordBatch", best_ns(file_poll, BATCH)),
        ("host: its poll() answer by column (convert)", best_ns(batch_runner.poll, BATCH)),
        ("loop: produce(topic, value, key, -1, ...), keyed", best_ns(copycat_produce, BATCH)),
    ]


class TextSink(SinkTask):
    """Formats each put() as FileStreamSink does (no I/O); ``build``: reads every record."""

    def __init__(self, build: bool) -> None:
        self.build = build
        self.text = b""

    def version(self) -> str:
        return "1"

    def start(self, props: Any) -> None:
        pass

    def put(self, records: Any) -> None:
        self.text = lines_bytes(list(records) if self.build else records)

    def stop(self) -> None:
        pass


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
    wire = MessageBatch(messages, "costs", 0).wire()

    def bare() -> bytes:
        return b"\n".join([m.value() for m in messages if m.error() is None])

    def columns() -> ConsumedBatch:
        return ConsumedBatch.from_messages(messages)

    def decode() -> Any:
        return converter.to_connect_data_batch("costs", batch.values, [None] * BATCH)

    def put(build: bool) -> Callable[[], Any]:
        key, value = StringConverter(), StringConverter()
        key.configure({}, True)
        value.configure({}, False)
        runner = SinkRunner(
            TextSink(build),
            Pipeline(key, value, None),
            HostSinkTaskContext({}, False),
            ErrorPolicy(),
        )
        return lambda: runner.put(wire)

    return [
        ("bare: error() + value() per message, one join", best_ns(bare, BATCH)),
        ("worker: ConsumedBatch.from_messages", best_ns(columns, BATCH)),
        ("host: StringConverter batch decode", best_ns(decode, BATCH)),
        ("host: put() of the messages, values only, text", best_ns(put(False), BATCH)),
        ("host: the same, every SinkRecord built", best_ns(put(True), BATCH)),
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
