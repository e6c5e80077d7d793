"""REST calls that need the broker ride out a brief outage instead of answering 500.

A real worker and a real dev broker reached only through a proxy (the broker advertises the
proxy's address). For each call below the proxy swallows the consumer group request and a
second later resets its connection, so the admin request in flight fails with librdkafka's
"Broker transport failure", as it did under the parallel suite's load
(tests/e2e/test_rest_api.py::test_sink_offsets_and_active_topics answered 500 then).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from core.dev.broker import DevBroker
from tests.support.flaky_proxy import DELETE_GROUPS, OFFSET_COMMIT, OFFSET_FETCH, FlakyProxy
from tests.support.rest import RestWorker

pytestmark = pytest.mark.integration

# How long the swallowed request hangs before its connection is reset.
STALL_S = 1.0


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
    assert len(retried) == 3, worker.log_lines
