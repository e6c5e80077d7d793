"""Source records that fail in a converter (or are dropped), on Copycat and on Apache Kafka
Connect 4.1.1.

A FileStreamSource on each worker, with the same config; once its task ran the connector is
stopped and its committed source offsets (``GET /connectors/<name>/offsets``) and the records
in its topic must be the same on both. Found by an exploratory comparison: under
``errors.tolerance=all`` a record whose conversion failed is skipped on both, but Kafka does
not commit its source offset (its sendRecords() drops it before it is submitted for offset
tracking; only a later record of its source partition that is written moves the offset past
it), where Copycat committed it. So after a restart, or once the converter is fixed, Kafka
reads those lines again and Copycat had lost them.
"""

from __future__ import annotations

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
    run_file_source,
    task_state,
    wait_running,
)
from tests.support.kafka import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

INTEGER_CONVERTER = "org.apache.kafka.connect.converters.IntegerConverter"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"


def _polled(client: httpx.Client, name: str, count: int) -> bool:
    """Copycat's ``GET /metrics`` counts ``count`` records polled by the task of ``name``."""
    response = client.get("/metrics", headers={"Accept": "text/plain"})
    assert response.status_code == 200, response.text
    for line in response.text.splitlines():
        if "source_record_poll_total{" in line and f'connector="{name}"' in line:
            return float(line.rsplit(" ", 1)[1]) >= count
    return False


def _run(
    peer: Peer,
    broker: KafkaCluster,
    tmp: Path,
    lines: list[str],
    settings: dict[str, str],
    expected: int,
) -> tuple[list[Record], list[dict[str, Any]]]:
    """The connector's ``expected`` records (and any extra) and its committed offsets once
    stopped. One poll returns the whole file: once a record of it is written, or on Copycat
    once its metrics count every line polled, the task has handled every line. A stop
    commits what the task finished: the poll it is in is finished with it."""
    source = file_source(broker, tmp, "src-conv", lines, {"errors.tolerance": "all", **settings})

    def handled(client: httpx.Client) -> None:
        wait_running(client, source.name)
        if peer.name == "Copycat":
            wait_for(lambda: _polled(client, source.name, len(lines)), 90, "every line polled")

    records, offsets, _ = run_file_source(peer, broker, source, expected, handled)
    return records, offsets


def test_a_tolerated_converter_failure_commits_no_offset_of_its_own(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    """Every line fails in the value converter: both skip them all, and commit no offset."""
    lines = ["a", "b"]
    settings = {"value.converter": INTEGER_CONVERTER}
    theirs = _run(kafka_connect, apache_kafka, tmp_path, lines, settings, 0)
    ours = _run(copycat, apache_kafka, tmp_path, lines, settings, 0)

    assert theirs == ([], [])
    assert ours == theirs


def test_the_offset_stays_at_the_last_record_written_before_a_tolerated_failure(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    """A line converted and written, then one that fails (TimestampConverter on text that is
    no date): the committed offset is the written line's, not the file's end."""
    lines = ["2024-01-02", "oops"]
    settings = {
        "transforms": "ts",
        "transforms.ts.type": "org.apache.kafka.connect.transforms.TimestampConverter$Value",
        "transforms.ts.format": "yyyy-MM-dd",
        "transforms.ts.target.type": "Timestamp",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    }
    theirs = _run(kafka_connect, apache_kafka, tmp_path, lines, settings, 1)
    ours = _run(copycat, apache_kafka, tmp_path, lines, settings, 1)

    assert [value for _key, value, _headers in theirs[0]] == [b"1704153600000"]
    assert differences(ours[0], theirs[0]) == []
    assert theirs[1] == [{"partition": {"filename": ".txt"}, "offset": {"position": 11}}]
    assert ours[1] == theirs[1]


def test_records_a_filter_drops_commit_no_offset(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    """Kafka drops a filtered record where it drops one whose conversion failed: before it
    is submitted for offset tracking. A Filter without predicate drops every line."""
    settings = {
        "transforms": "drop",
        "transforms.drop.type": "org.apache.kafka.connect.transforms.Filter",
        "value.converter": STRING_CONVERTER,
    }
    theirs = _run(kafka_connect, apache_kafka, tmp_path, ["a", "b"], settings, 0)
    ours = _run(copycat, apache_kafka, tmp_path, ["a", "b"], settings, 0)

    assert theirs == ([], [])
    assert ours == theirs


def _failed_trace(
    peer: Peer, broker: KafkaCluster, tmp: Path, settings: dict[str, str], line: str = "a"
) -> str:
    """The status trace of a FileStreamSource task on a file of ``line``, failed by
    ``settings`` (tolerance none)."""
    source = file_source(broker, tmp, "src-conv", [line], settings)
    with peer.client() as client:
        create(client, source.name, source.config)
        try:

            def failed() -> str | None:
                status = task_state(client, source.name, "FAILED")
                return status["tasks"][0].get("trace") if status else None

            trace: str = wait_for(failed, 90, f"{peer.name} FAILED")
        finally:
            delete(client, source.name)
    return trace


@pytest.mark.parametrize(
    ("converter", "settings"),
    [
        ("LongConverter", {}),
        (
            "IntegerConverter",
            {
                "transforms": "hoist",
                "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
                "transforms.hoist.field": "line",
            },
        ),
    ],
)
def test_a_number_converter_names_the_java_class_it_refused(
    copycat: Peer,
    kafka_connect: Peer,
    apache_kafka: KafkaCluster,
    tmp_path: Path,
    converter: str,
    settings: dict[str, str],
) -> None:
    """The converter's DataException, in the task's trace (and the error log), reads as
    Kafka's: ``Failed to serialize to long (was class java.lang.String): ``."""
    settings = {"value.converter": f"org.apache.kafka.connect.converters.{converter}", **settings}
    theirs = _failed_trace(kafka_connect, apache_kafka, tmp_path, settings)
    ours = _failed_trace(copycat, apache_kafka, tmp_path, settings)

    cause = "org.apache.kafka.connect.errors.DataException: Failed to serialize to "
    (message,) = [line.split(cause, 1)[1] for line in theirs.splitlines() if cause in line]
    assert message.startswith(("long (was class java.lang.String): ", "integer (was class org"))
    assert f"{cause}{message}" in ours


@pytest.mark.parametrize(
    ("spec", "converter", "refused"),
    [
        ("int32", "LongConverter", "long (was class java.lang.Integer): "),
        ("int64", "IntegerConverter", "integer (was class java.lang.Long): "),
        ("float32", "DoubleConverter", "double (was class java.lang.Float): "),
    ],
)
def test_a_number_converter_refuses_a_number_its_schema_types_otherwise(
    copycat: Peer,
    kafka_connect: Peer,
    apache_kafka: KafkaCluster,
    tmp_path: Path,
    spec: str,
    converter: str,
    refused: str,
) -> None:
    """Cast$Value makes the line ``1`` a number its schema types (INT32: a Java Integer):
    Kafka's converter for another number type cannot serialize it and fails the task, where
    Copycat's wrote it in its own width."""
    settings = {
        "transforms": "cast",
        "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value",
        "transforms.cast.spec": spec,
        "value.converter": f"org.apache.kafka.connect.converters.{converter}",
    }
    cause = f"org.apache.kafka.connect.errors.DataException: Failed to serialize to {refused}"
    theirs = _failed_trace(kafka_connect, apache_kafka, tmp_path, settings, "1")
    assert cause in theirs
    ours = _failed_trace(copycat, apache_kafka, tmp_path, settings, "1")
    assert cause in ours


def test_a_source_records_headers_are_converted_before_its_key_and_value(
    copycat: Peer, kafka_connect: Peer, apache_kafka: KafkaCluster, tmp_path: Path
) -> None:
    """Header and value converter both refuse the record: Kafka's sendRecords() converts
    the headers first, so the header converter's error fails the task (stage
    HEADER_CONVERTER in the error log), not the value converter's."""
    settings = {
        "transforms": "header",
        "transforms.header.type": "org.apache.kafka.connect.transforms.InsertHeader",
        "transforms.header.header": "h",
        "transforms.header.value.literal": "x",
        "header.converter": "org.apache.kafka.connect.converters.LongConverter",
        "value.converter": INTEGER_CONVERTER,
    }
    cause = "org.apache.kafka.connect.errors.DataException: Failed to serialize to "
    theirs = _failed_trace(kafka_connect, apache_kafka, tmp_path, settings)
    assert f"{cause}long (was class java.lang.String)" in theirs
    assert f"{cause}integer" not in theirs
    ours = _failed_trace(copycat, apache_kafka, tmp_path, settings)
    assert f"{cause}long (was class java.lang.String)" in ours
    assert "HEADER_CONVERTER (org.apache.kafka.connect.converters.LongConverter)" in ours
