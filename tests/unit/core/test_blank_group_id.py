"""A blank group id never reaches confluent-kafka's Consumer, which asserts on it and aborts the
process that makes it (the worker, or a plugin host). Run in a subprocess: a regression shows
as that process's abort, not as a dead pytest worker."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import sys
from core.kafka import Consumer
from core.sink_offsets import SinkOffsets
group = sys.argv[1]
try:
    Consumer({"bootstrap.servers": "localhost:1", "group.id": group})
except Exception as exc:
    print("consumer:", type(exc).__name__, exc)
try:
    SinkOffsets({"bootstrap.servers": "localhost:1"}, group).get()
except Exception as exc:
    print("offsets:", type(exc).__name__, exc)
"""


@pytest.mark.parametrize("group", ["", " ", " \t\n"], ids=["empty", "space", "whitespace"])
def test_a_blank_group_id_is_refused_in_kafkas_words_not_aborted_on(group: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, group], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    words = "The configured group.id should not be an empty string or whitespace."
    consumer, _, offsets = done.stdout.partition("\noffsets: ")
    assert consumer.startswith("consumer: KafkaException") and words in consumer, done.stdout
    assert words in offsets, done.stdout
