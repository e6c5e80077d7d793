"""A worker whose own credentials the cluster refuses exits at start-up at once, saying so.

``copycat standalone`` against a real Apache Kafka's SASL_PLAINTEXT listener with a wrong
``sasl.password``: it used to wait out default.api.timeout.ms and exit with "Broker transport
failure", which sent operators looking for a network problem.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.apache_kafka import SASL_USER

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
WRONG_PASSWORD = "WrongPw-not-in-any-output"
TIMEOUT_MS = 60_000
# Interpreter start-up, reading the plugins and librdkafka's first login (~0.3 s); a loaded
# 2-core machine takes a few seconds of it. Far below TIMEOUT_MS either way.
EXITS_WITHIN_S = 30.0


def test_a_worker_whose_password_is_refused_exits_at_once_naming_authentication(
    tmp_path: Path, sasl_kafka: dict[str, str], bundled_plugin_path: Path
) -> None:
    worker = tmp_path / "worker.properties"
    props = {
        "bootstrap.servers": sasl_kafka["sasl"],
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": SASL_USER,
        "sasl.password": WRONG_PASSWORD,
        "default.api.timeout.ms": str(TIMEOUT_MS),
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "offset.storage.file.filename": str(tmp_path / "connect.offsets"),
        "plugin.path": str(bundled_plugin_path),
        "listeners": "http://127.0.0.1:0",
    }
    worker.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "core.cli", "standalone", str(worker)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_MS / 1000 + 60,
    )
    elapsed = time.monotonic() - started
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert elapsed < EXITS_WITHIN_S, elapsed
    errors = [line for line in proc.stderr.splitlines() if line.startswith("copycat: error:")]
    assert len(errors) == 1, proc.stderr[-3000:]
    assert "Authentication failed: Invalid username or password" in errors[0], errors[0]
    assert f"bootstrap.servers={sasl_kafka['sasl']}" in errors[0], errors[0]
    assert "Traceback" not in proc.stderr
    assert WRONG_PASSWORD not in proc.stderr + proc.stdout
