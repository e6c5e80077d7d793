"""REST calls that need the broker ride out a brief outage instead of answering 500.

A real worker and a real dev broker reached only through a proxy (the broker advertises the
proxy's address). For each call below the proxy swallows the consumer group request and a
second later resets its connection, so the request in flight fails with librdkafka's
"Broker transport failure", as it did under the parallel suite's load
(tests/e2e/test_rest_api.py::test_sink_offsets_and_active_topics answered 500 then).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from core.dev.broker import DevBroker
from tests.support.flaky_proxy import DELETE_GROUPS, OFFSET_COMMIT, OFFSET_FETCH, FlakyProxy
from tests.support.kafka import produce
from tests.support.rest import RestWorker, wait_for

pytestmark = pytest.mark.integration

# How long the swallowed request hangs before its connection is reset.
STALL_S = 1.0
# How long a swallowed final offset commit hangs: well past the graceful timeout.
STALLED_COMMIT_S = 20.0
GRACEFUL_MS = 10_000


@pytest.fixture
def outage_setup(
    tmp_path: Path, bundled_plugin_path: Path
) -> Iterator[tuple[FlakyProxy, DevBroker, RestWorker]]:
    with FlakyProxy() as proxy, DevBroker(advertised=proxy.address) as broker:
        proxy.target = broker.port
        with RestWorker(tmp_path, proxy.address, bundled_plugin_path) as worker:
            yield proxy, broker, worker


def test_sink_offsets_calls_survive_dropped_broker_connections(
    outage_setup: tuple[FlakyProxy, DevBroker, RestWorker], tmp_path: Path
) -> None:
    proxy, broker, worker = outage_setup
    topic = f"outage-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    name = f"sink-{topic}"
    tp = {"kafka_topic": topic, "kafka_partition": 0}
    with worker.client() as http:
        created = http.post(
            "/connectors",
            json={
                "name": name,
                "config": {
                    "connector.class": "FileStreamSink",
                    "topics": topic,
                    "file": str(tmp_path / "out.txt"),
                },
                "initial_state": "STOPPED",
            },
        )
        assert created.status_code == 201, created.text

        def during_outage(call: Callable[[], httpx.Response]) -> httpx.Response:
            dropped = proxy.dropped
            proxy.drop_next({OFFSET_COMMIT, OFFSET_FETCH, DELETE_GROUPS}, STALL_S)
            response = call()
            assert proxy.dropped == dropped + 1  # the call really lost a request
            return response

        altered = during_outage(
            lambda: http.patch(
                f"/connectors/{name}/offsets",
                json={"offsets": [{"partition": tp, "offset": {"kafka_offset": 3}}]},
            )
        )
        assert altered.status_code == 200, altered.text
        read = during_outage(lambda: http.get(f"/connectors/{name}/offsets"))
        assert read.status_code == 200, read.text
        assert read.json() == {"offsets": [{"partition": tp, "offset": {"kafka_offset": 3}}]}
        reset = during_outage(lambda: http.delete(f"/connectors/{name}/offsets"))
        assert reset.status_code == 200, reset.text
        assert http.get(f"/connectors/{name}/offsets").json() == {"offsets": []}
    retried = [line for line in worker.log_lines if "Broker transport failure); retrying" in line]
    # The commit is retried by SinkOffsets (a new admin client); the reads (GET, and DELETE's
    # read of what it resets, which met the dropped OffsetFetch) by librdkafka's consumer
    # itself, within the attempt: its committed() asks again on the new connection.
    assert len(retried) == 1 and "alter the offsets of group" in retried[0], worker.log_lines


def test_a_sink_stopped_while_its_final_commit_hangs_stops_in_time_and_loses_nothing(
    tmp_path: Path, faulty_plugin_dirs: list[Path]
) -> None:
    """The broker swallows the final offset commit of a sink being stopped (an outage at the
    wrong moment): the commit blocked the stop until the connection reset, past the graceful
    timeout, and the task's plugin host was killed. Now the stop waits for the commit until
    just before the timeout and leaves it to finish behind the consumer's close; nothing is
    lost, what was not committed is delivered again."""
    put = tmp_path / "put.txt"
    props = {
        # The stop waits for the commit until 0.9 of it: the rest is the host's exit, which
        # a 3 s timeout left 0.3 s for, too little under CI's load.
        "task.shutdown.graceful.timeout.ms": str(GRACEFUL_MS),
        "plugin.path": ",".join(str(d) for d in faulty_plugin_dirs),
        "offset.flush.interval.ms": "600000",  # the stop's commit is the first
        # As the embedded dev broker's defaults: a quick restart of a sink on it needs this.
        "sink.group.join.finish.before.close": "true",
    }
    with FlakyProxy() as proxy, DevBroker(advertised=proxy.address) as broker:
        proxy.target = broker.port
        topic = f"commit-stall-{uuid.uuid4().hex[:8]}"
        broker.create_topic(topic, 1)
        with RestWorker(tmp_path, proxy.address, faulty_plugin_dirs[0], props) as worker:
            name = f"sink-{topic}"
            config = {"connector.class": "FaultySink", "topics": topic, "put.values.log": str(put)}
            with worker.client() as http:
                assert http.post("/connectors", json={"name": name, "config": config}).is_success
                produce(proxy.address, topic, [f"before {i}".encode() for i in range(3)])
                before = {f"before {i}" for i in range(3)}
                wait_for(lambda: set(_lines(put)) == before, 60, "the first records put")
                proxy.drop_next({OFFSET_COMMIT}, STALLED_COMMIT_S)
                began = time.monotonic()
                assert http.put(f"/connectors/{name}/stop").status_code == 204
                took = time.monotonic() - began
                assert proxy.dropped == 1  # the final commit really hung
                assert took < GRACEFUL_MS / 1000 + 1.5, f"the stop took {took:.1f} s"
                assert not [line for line in worker.log_lines if "killing" in line]
                produce(proxy.address, topic, [f"after {i}".encode() for i in range(3)])
                assert http.put(f"/connectors/{name}/resume").status_code == 202
                after = {f"after {i}" for i in range(3)}
                wait_for(lambda: after <= set(_lines(put)), 90, "the records after the stop")


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []
