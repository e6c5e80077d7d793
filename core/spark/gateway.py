"""Starting the Spark driver JVM (pyspark's py4j gateway) for a worker, and its errors.

The worker starts the JVM itself, with what pyspark's own ``launch_gateway`` takes, rather
than letting ``SparkSession.builder.getOrCreate()`` start it: in a session of its own (see
:func:`launch_gateway`), its stderr relayed so that a JVM that exits while starting becomes
one error naming ``spark.master``. ``getOrCreate()`` then finds the gateway and uses it.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Mapping
from typing import Any

from plugin_api import ConfigException

__all__ = ["launch_gateway", "not_started", "reason_of"]

log = logging.getLogger("copycat.spark")

# How long a driver JVM that exited while starting gets to finish writing why.
JVM_EXIT_OUTPUT_WAIT_S = 5.0
# spark-submit's last word before it exits: 'Exception in thread "main" a.b.SomeException: why'.
_JAVA_EXCEPTION = re.compile(r'Exception in thread "main" [\w.$]+: (.+)')


def not_started(master: str | None, reason: str) -> ConfigException:
    return ConfigException(
        "spark.master",
        master,
        f"the Spark application could not start: {reason} (is the master reachable from "
        "this worker, and are the other spark.* keys right?)",
    )


def reason_of(exc: BaseException) -> str:
    """The first line of a Spark error (a Py4J error's Java message, not its stack)."""
    java = getattr(exc, "java_exception", None)
    text = str(java) if java is not None else str(exc)
    if "stopped SparkContext" in text:  # Spark stopped it while it started (log above)
        return "Spark stopped the application while it started (its log above says why)"
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


def launch_gateway(options: Mapping[str, str]) -> None:
    """Start the Spark driver JVM (pyspark's gateway) in a session of its own, unless one runs.

    A terminal's Ctrl-C and systemd's stop (``KillMode=control-group``) signal the worker's
    whole process group. In that group the driver JVM, and on ``local-cluster`` the Master,
    Workers and executor JVMs it starts, would handle the signal themselves and end the
    application while the herder is still stopping tasks: their final offset commits would be
    lost. In a session of its own only the worker decides when Spark stops
    (:meth:`SparkDriver.close`). The JVM still dies with the worker, however it dies: it exits
    when its stdin, a pipe from this process, closes (pyspark's ``PythonGatewayServer``).

    Its stderr is relayed to ours; while it starts, the lines are held back, so a JVM that
    exits before it is up (a malformed master) becomes one :class:`ConfigException` naming
    its reason instead of a Java stack trace.
    """
    from pyspark import SparkConf, SparkContext, java_gateway

    spark_context: Any = SparkContext
    with spark_context._lock:
        if spark_context._gateway is not None:
            return
        spark_conf = SparkConf()
        for key, value in options.items():
            spark_conf.set(key, value)
        stderr = _JvmStderr()
        try:
            gateway = java_gateway.launch_gateway(  # type: ignore[no-untyped-call]
                spark_conf, popen_kwargs={"start_new_session": True, "stderr": stderr.write_fd}
            )
        except Exception as exc:
            raise not_started(
                options.get("spark.master"), stderr.failed() or reason_of(exc)
            ) from exc
        stderr.launched()
        spark_context._gateway = gateway
        spark_context._jvm = gateway.jvm


class _JvmStderr:
    """The driver JVM's stderr, relayed to ours (fd 2, where it would have written) from a
    pipe, and held back until the JVM is up: one that exits first (spark-submit refusing its
    arguments) has its output turned into the reason of one error instead."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self._held: list[bytes] = []
        self._relaying = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._pump, name="copycat-spark-jvm-stderr", daemon=True
        )
        self._thread.start()

    def _pump(self) -> None:
        with open(self.read_fd, "rb") as pipe:
            for line in pipe:
                with self._lock:
                    if not self._relaying:
                        self._held.append(line)
                        continue
                _write_stderr(line)

    def launched(self) -> None:
        """The JVM is up: what it said so far, then everything it says, goes to stderr."""
        os.close(self.write_fd)
        with self._lock:
            held, self._held, self._relaying = self._held, [], True
        for line in held:
            _write_stderr(line)

    def failed(self) -> str | None:
        """The JVM exited before it was up: the reason it gave (its whole output at DEBUG)."""
        os.close(self.write_fd)
        self._thread.join(JVM_EXIT_OUTPUT_WAIT_S)
        with self._lock:
            text = b"".join(self._held).decode(errors="replace")
        log.debug("the Spark driver JVM exited while starting; its output:\n%s", text)
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        for line in lines:
            found = _JAVA_EXCEPTION.search(line)
            if found:
                return found.group(1)
        errors = [line for line in lines if "Error" in line or "Exception" in line]
        chosen = errors or lines
        return chosen[0] if chosen else None


def _write_stderr(line: bytes) -> None:
    try:
        os.write(2, line)
    except OSError:
        pass  # stderr closed: the lines are lost, as the JVM's own writes would be
