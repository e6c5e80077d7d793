"""librdkafka's own log lines, from real clients against a port that refuses connections.

Without a logger, librdkafka writes straight to stderr: one line per reconnect attempt, about
20 a second per client with no broker. Clients built with core.kafka.client_config write
through one rate-limited logger.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.kafka import LIBRDKAFKA_LOG_BURST, LIBRDKAFKA_LOG_INTERVAL_S

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RUN_S = 4.0

# A consumer and a producer, each polled as the task loops poll them, for RUN_S seconds.
_CHILD = textwrap.dedent(
    """
    import logging, sys, time
    from confluent_kafka import Consumer, Producer
    from core.kafka import client_config

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s %(message)s")
    base = {"bootstrap.servers": sys.argv[1]}
    consumer = Consumer(client_config(base, {"group.id": "g"}))
    consumer.subscribe(["t"])
    producer = Producer(client_config(base))
    deadline = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < deadline:
        consumer.consume(100, 0.05)
        producer.poll(0.05)
    """
)


def test_librdkafka_lines_are_rate_limited_across_clients() -> None:
    with socket.socket() as closed:  # bound, not listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{closed.getsockname()[1]}"
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, address, str(RUN_S)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    refused = [line for line in lines if "Connection refused" in line]
    assert refused, proc.stderr[-3000:]  # the problem is still reported...
    assert all(line.startswith("copycat.librdkafka ") for line in lines), proc.stderr[-3000:]
    # ...within the limit: a burst, then one line per interval (plus the suppression notes).
    bound = LIBRDKAFKA_LOG_BURST + RUN_S / LIBRDKAFKA_LOG_INTERVAL_S
    written = [line for line in lines if "suppressed" not in line]
    assert len(written) <= bound, proc.stderr[-3000:]
