"""A record right after a reset of a sink's active topics (KIP-558) counts for it, wherever the
task's data path runs (task.data.path).

Found by the distributed reset test failing once under CI load: the task's loop in its plugin
host heard of a reset with the worker's next request, and the idle sink's slice then running
had often read the next record already and accounted it (its commit, due the moment it read a
batch) as a topic it knew; the topic stayed unlisted until a later record. The worker here
commits every 100 ms, so that a commit is due in nearly every idle slice, as in a worker whose
offset.flush.interval.ms is short or whose sink has been idle for a flush interval.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.integration.test_active_topics import _topics
from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import produce
from tests.support.rest import BOTH_DATA_PATHS, RestWorker, module_worker, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.also_on_dev_broker]

worker = module_worker("active-topics-race", {"offset.flush.interval.ms": "100"})

# Resets, each followed at once by a record. Before the fix most rounds lost the topic in the
# plugin host's data path.
RESET_ROUNDS = 10


@BOTH_DATA_PATHS
def test_a_record_right_after_each_reset_lists_its_topic_again(
    worker: RestWorker, broker: KafkaCluster, topic_name: str, tmp_path: Path
) -> None:
    broker.create_topic(topic_name, 1)
    out = tmp_path / "sink.out"
    name = f"active-again-{topic_name}"
    http = worker.client()
    created = http.post(
        "/connectors",
        json={
            "name": name,
            "config": {"connector.class": "FileStreamSink", "topics": topic_name, "file": str(out)},
        },
    )
    assert created.status_code == 201, created.text
    try:
        produce(broker.bootstrap_servers, topic_name, [b"first"])
        wait_for(lambda: _topics(http, name) == [topic_name], 60, "the sink's topic")
        for i in range(RESET_ROUNDS):
            time.sleep(0.13 * (i % 8))  # the reset lands anywhere in the host's slices
            reset = http.put(f"/connectors/{name}/topics/reset")
            assert reset.status_code == 202, reset.text
            produce(broker.bootstrap_servers, topic_name, [f"after reset {i}".encode()])
            wait_for(
                lambda: _topics(http, name) == [topic_name],
                10,
                f"the topic listed again after reset {i} and its record",
            )
        lines = lambda: out.read_text().splitlines() if out.exists() else []  # noqa: E731
        wait_for(lambda: len(lines()) == RESET_ROUNDS + 1, 60, "every record in the file")
    finally:
        http.delete(f"/connectors/{name}")
