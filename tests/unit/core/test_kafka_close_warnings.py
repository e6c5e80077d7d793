"""confluent-kafka's close warnings reach the worker's log as log lines (core.kafka).

Producer.close() warns from C (``PyErr_WarnFormat``) when its flush or transaction abort
fails; Python printed that raw on stderr, once per call site. Run in a child process: the
hook is process-wide, as the CLI installs it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

WARNING = "Producer abort_transaction failed during close: KafkaError{code=_TIMED_OUT}"

SCRIPT = textwrap.dedent(
    f"""
    import logging
    import warnings
    from core.cli import _setup_logging

    _setup_logging(logging.INFO)
    for _ in range(2):  # the same call site twice: both are logged
        warnings.warn({WARNING!r}, RuntimeWarning)
    warnings.warn("something else", UserWarning)
    """
)


def test_close_warnings_are_logged_by_copycat_kafka_each_time() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True
    )
    lines = done.stderr.splitlines()
    logged = [line for line in lines if line.endswith(f"WARNING copycat.kafka: {WARNING}")]
    assert len(logged) == 2, done.stderr
    assert not any("RuntimeWarning" in line for line in lines), done.stderr
    assert any("UserWarning: something else" in line for line in lines), done.stderr
