"""Source task failures under ``errors.tolerance``, on Copycat and on Apache Kafka Connect 4.1.1.

A FileStreamSource on each worker, with the same config; after the task failed (or ran) the
connector is stopped and its committed source offsets (``GET /connectors/<name>/offsets``)
and the records in its topic must be the same on both. Found by an exploratory comparison:
a line the producer refused under ``errors.tolerance=none`` (larger than
``producer.override.max.request.size``) failed the task on both, but Copycat committed no
offset for the lines of the same poll before it, which the broker had acknowledged, so a
restart wrote them again (Kafka commits them: its offsets advance record by record).

The same after an asynchronous failure: a line the broker refuses (over the topic's
max.message.bytes) fails the task on both, and Kafka's final commit stores the offsets of the
lines acknowledged before it, polled earlier; Copycat committed nothing once a delivery had
failed, so with offset.flush.interval.ms at its default (60 s) a restart wrote up to a
minute of records again. That case runs on a worker of each with the 60 s interval.

Under errors.tolerance=all Kafka skips a record whatever the send callback reports (KIP-779):
lines without a key sent to a compacted topic, which the broker refuses as invalid records,
are skipped and their offsets committed. Copycat skipped only a record too large or one for a
missing topic, and failed the task on the broker's INVALID_RECORD.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import (
    Peer,
    Record,
    create,
    delete,
    differences,
    file_source,
    read_records,
    run_file_source,
    standalone_peers,
    task_state,
)
from tests.support.kafka import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]


# Kafka's default offset.flush.interval.ms: no periodic commit within a test's few seconds.
SLOW_COMMITS = {"offset.flush.interval.ms": "60000"}


@pytest.fixture(scope="module")
def slow_commit_peers(
    apache_kafka: KafkaCluster, bundled_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Peer, Peer]]:
    """(Copycat, Kafka Connect) standalone workers that commit source offsets every 60 s."""
    with standalone_peers(
        apache_kafka.bootstrap_servers, bundled_plugin_path, tmp_path_factory, SLOW_COMMITS
    ) as peers:
        yield peers


def _first_trace_line(client: httpx.Client, name: str, state: str, what: str) -> str:
    """Once the connector's task is in ``state``: its trace's first line."""
    status: dict[str, Any] = wait_for(lambda: task_state(client, name, state), 90, what)
    trace: str = status["tasks"][0].get("trace") or ""
    return trace.split("\n", 1)[0]


def _run(
    peer: Peer,
    broker: KafkaCluster,
    tmp: Path,
    lines: list[str],
    settings: dict[str, str],
    state: str,
    expected: int,
) -> tuple[list[Record], list[dict[str, Any]], str]:
    """The connector's records, its committed offsets once stopped, and its task's trace's
    first line, after its task reached ``state``."""
    source = file_source(broker, tmp, "src-err", lines, settings)
    return run_file_source(
        peer,
        broker,
        source,
        expected,
        lambda client: _first_trace_line(client, source.name, state, f"{peer.name} {state}"),
    )


def test_a_record_the_producer_refuses_fails_the_task_after_committing_those_before_it(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    lines = ["a", "b" * 3000, "c"]
    settings = {
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "producer.override.max.request.size": "1500",
        "errors.tolerance": "none",
    }
    ours = _run(copycat, apache_kafka, tmp_path, lines, settings, "FAILED", 1)
    theirs = _run(kafka_connect, apache_kafka, tmp_path, lines, settings, "FAILED", 1)

    assert [value for _key, value, _headers in theirs[0]] == [b"a"]
    assert differences(ours[0], theirs[0]) == []
    assert theirs[1] == [{"partition": {"filename": ".txt"}, "offset": {"position": 2}}]
    assert ours[1] == theirs[1]


def _run_broker_refusal(
    peer: Peer, broker: KafkaCluster, tmp: Path
) -> tuple[list[Record], list[dict[str, Any]], str]:
    """Two lines, polled and acknowledged, then a line over the topic's max.message.bytes
    (but under the producer's max.request.size, so the broker refuses it): the records, the
    offsets committed once the failed connector is stopped, and the trace's first line."""
    settings = {
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "producer.override.max.request.size": "100000",
        "errors.tolerance": "none",
    }
    source = file_source(
        broker, tmp, "src-brk", ["a", "b"], settings, {"max.message.bytes": "1000"}
    )

    def refused(client: httpx.Client) -> str:
        read_records(broker.bootstrap_servers, source.topic, 2)  # the first poll is acknowledged
        with source.file.open("a") as appended:
            appended.write("c" * 3000 + "\n")
        return _first_trace_line(client, source.name, "FAILED", f"{peer.name}")

    return run_file_source(peer, broker, source, 2, refused)


def test_a_record_the_broker_refuses_fails_the_task_after_committing_those_acknowledged_before(
    slow_commit_peers: tuple[Peer, Peer], apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    copycat, kafka_connect = slow_commit_peers
    ours = _run_broker_refusal(copycat, apache_kafka, tmp_path)
    theirs = _run_broker_refusal(kafka_connect, apache_kafka, tmp_path)

    assert [value for _key, value, _headers in theirs[0]] == [b"a", b"b"]
    assert differences(ours[0], theirs[0]) == []
    assert theirs[1] == [{"partition": {"filename": ".txt"}, "offset": {"position": 4}}]
    assert ours[1] == theirs[1]
    # Both fail on the send's failure (the traces' wording is each implementation's own).
    assert theirs[2].endswith("Unrecoverable exception from producer send callback"), theirs[2]
    assert ours[2].startswith("core.kafka.KafkaClientError: task "), ours[2]
    assert "Broker: Message size too large" in ours[2], ours[2]


def test_records_the_broker_refuses_as_invalid_are_skipped_under_tolerance_all(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    """FileStreamSource lines have no key; a compacted topic refuses every one of them."""

    def run(peer: Peer) -> tuple[list[Record], list[dict[str, Any]], str]:
        settings = {
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "errors.tolerance": "all",
        }
        source = file_source(
            apache_kafka, tmp_path, "src-inv", ["a", "b"], settings, {"cleanup.policy": "compact"}
        )

        def skipped(client: httpx.Client) -> str:
            # Once the lines' offsets are committed (they were skipped), or the task failed.
            def settled() -> str | None:
                status = client.get(f"/connectors/{source.name}/status").json()
                state = str(status["tasks"][0]["state"]) if status["tasks"] else None
                offsets = client.get(f"/connectors/{source.name}/offsets").json()["offsets"]
                return state if state == "FAILED" or (offsets and state) else None

            found: str = wait_for(settled, 90, f"{peer.name} skipping the lines or failing")
            return found

        return run_file_source(peer, apache_kafka, source, 0, skipped)

    ours, theirs = run(copycat), run(kafka_connect)

    assert theirs == (
        [],
        [{"partition": {"filename": ".txt"}, "offset": {"position": 4}}],
        "RUNNING",
    )
    assert ours == theirs


def test_a_batch_over_the_topics_limit_of_records_that_fit_it_names_batch_size(
    copycat: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    """Found by an exploratory comparison: 300 lines of 1 KiB to a topic whose
    max.message.bytes is 64 KiB. Kafka Connect writes them all (its producer's batches are 16
    KiB, and a refused batch is split). librdkafka's batches reach its batch.size (1,000,000
    bytes) and it never splits one the broker refuses: every record of it fails with "Message
    size too large", though each fits the topic. The task's failure must say so and name the
    setting that avoids it; the record's size alone (1000 bytes "over" a 64 KiB limit) misled."""
    lines = [f"{i:04d}" + "x" * 996 for i in range(300)]
    settings = {
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "errors.tolerance": "none",
    }
    source = file_source(
        apache_kafka, tmp_path, "src-bat", lines, settings, {"max.message.bytes": "65536"}
    )
    with copycat.client() as client:
        create(client, source.name, source.config)
        try:
            status: dict[str, Any] = wait_for(
                lambda: task_state(client, source.name, "FAILED"), 90, "Copycat FAILED"
            )
        finally:
            delete(client, source.name)
    trace = status["tasks"][0]["trace"].split("\n", 1)[0]
    assert "Broker: Message size too large" in trace, trace
    assert "does not split" in trace, trace
    assert "producer.override.batch.size" in trace, trace
    assert "(1000000 bytes)" in trace, trace
