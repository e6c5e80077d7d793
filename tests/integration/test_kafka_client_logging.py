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


def _run_against_a_refusing_port(child: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``child`` with ``args`` and the address of a port that refuses connections
    (bound, not listening) as its last arguments but one: ``child ARGS... ADDRESS``."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{closed.getsockname()[1]}"
        proc = subprocess.run(
            [sys.executable, "-c", child, *args[:-1], address, args[-1]],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_librdkafka_lines_are_rate_limited_across_clients() -> None:
    proc = _run_against_a_refusing_port(_CHILD, str(RUN_S))
    lines = proc.stderr.splitlines()
    refused = [line for line in lines if "Connection refused" in line]
    assert refused, proc.stderr[-3000:]  # the problem is still reported...
    assert all(line.startswith("copycat.librdkafka ") for line in lines), proc.stderr[-3000:]
    # ...within the limit: a burst, then one line per interval (plus the suppression notes).
    bound = LIBRDKAFKA_LOG_BURST + RUN_S / LIBRDKAFKA_LOG_INTERVAL_S
    written = [line for line in lines if "suppressed" not in line]
    assert len(written) <= bound, proc.stderr[-3000:]


# A consumer with librdkafka's group debugging on (consumer.override.debug=cgrp) polled for
# CHATTER_S against a real broker, with copycat.librdkafka at INFO; then a producer whose
# broker refuses connections.
_DEBUG_CHILD = textwrap.dedent(
    """
    import logging, sys, time
    from confluent_kafka import Consumer, Producer
    from core.kafka import client_config

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s %(message)s")
    consumer = Consumer(
        client_config({"bootstrap.servers": sys.argv[1]}, {"group.id": "g", "debug": "cgrp"})
    )
    consumer.subscribe(["t"])
    deadline = time.monotonic() + float(sys.argv[3])
    while time.monotonic() < deadline:
        consumer.consume(100, 0.05)
    print("--- refused from here", file=sys.stderr, flush=True)
    producer = Producer(client_config({"bootstrap.servers": sys.argv[2]}))
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        consumer.consume(100, 0.05)
        producer.poll(0.05)
    """
)
CHATTER_S = 3.0


def test_lines_below_the_loggers_level_use_none_of_the_rate_limit(bootstrap_servers: str) -> None:
    proc = _run_against_a_refusing_port(_DEBUG_CHILD, bootstrap_servers, str(CHATTER_S))
    lines = proc.stderr.splitlines()
    marker = lines.index("--- refused from here")
    before, after = lines[:marker], lines[marker + 1 :]
    # The debug chatter was never shown, and nothing counts it as suppressed...
    assert not [line for line in before if "suppressed" in line], proc.stderr[-3000:]
    # ...so the warning that follows it is written at once, not held back by its budget.
    assert after and "Connection refused" in after[0], proc.stderr[-3000:]
