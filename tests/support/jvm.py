"""Start a JVM of Apache Kafka's (broker, Kafka Connect) under a keeper, and share it per run.

:class:`JvmProcess` runs ``java -cp <Kafka's jars>/* <main class> ...`` through
``tests/support/keeper.py``, so the JVM dies with the process it is tied to (the pytest-xdist
controller, or a bench script) even after a ``kill -9`` of everything else.

:func:`shared` starts a service once per test run: the first pytest-xdist worker that asks
starts it under an ``flock`` in the run's shared temp directory and writes its address to a
JSON file there; the others (and later asks) read the file. 2 cores cannot afford a broker
JVM per worker.

Called from the pytest worker's main thread or a bench script; nothing here starts threads.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.support.kafka_jars import java_executable, kafka_classpath

__all__ = [
    "JvmProcess",
    "JvmStartError",
    "BENCH_JVM_FLAGS",
    "STARTUP_JVM_FLAGS",
    "free_port",
    "log_tail",
    "run_owner_pid",
    "run_root",
    "shared",
    "wait_until",
]

KEEPER = Path(__file__).with_name("keeper.py")

# JVM flags for test services, chosen for start-up time on 2 busy cores. C1 only: the C2
# compiler's threads compete with the tests for the cores while a test broker never runs long
# enough to profit (broker ready in 4.6 s instead of 7.7-10.6 s, measured alternating under
# load). Serial GC: one GC thread instead of one per core. Heap: a test broker holds a few MB;
# 512 MiB keeps several engineers' brokers and Connect workers on one 24 GiB machine.
# Benchmarks pass the JVM's defaults instead (BENCH_JVM_FLAGS): they measure steady state.
STARTUP_JVM_FLAGS: tuple[str, ...] = (
    "-XX:TieredStopAtLevel=1",
    "-Xms128m",
    "-Xmx512m",
    "-XX:+UseSerialGC",
    "-Djava.awt.headless=true",
)

# Flags for benchmarked JVMs: the full JIT, and Kafka's own start script's heap (1 GiB).
BENCH_JVM_FLAGS: tuple[str, ...] = ("-Xms1g", "-Xmx1g", "-Djava.awt.headless=true")

# Lines of a JVM's log quoted when it fails to start: a Java exception and its causes.
LOG_TAIL_LINES = 60

# Time to wait for the keeper (and so the JVM) to exit after SIGTERM.
STOP_WAIT_S = 10.0

# Pause between readiness probes: a JVM service becomes ready after seconds, so 50 ms adds
# little to a start and costs nothing measurable.
PROBE_INTERVAL_S = 0.05

_LOG4J2 = """\
status = warn
rootLogger.level = {level}
rootLogger.appenderRef.out.ref = OUT
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
"""


class JvmStartError(RuntimeError):
    """A JVM service exited or did not become ready; the message quotes its log."""


def free_port() -> int:
    """A loopback port that was free a moment ago (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of ``path``, or a note that there is none."""
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return f"<no log: {exc}>"
    return "\n".join(text.splitlines()[-lines:]) or "<empty log>"


def run_root(basetemp: Path) -> Path:
    """The temp directory every process of a pytest run shares, given this process's basetemp.

    Under pytest-xdist each worker's basetemp is a directory of the controller's.
    """
    return basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp


def run_owner_pid() -> int:
    """The process whose exit ends this run: the xdist controller, or this process."""
    return os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid()


def wait_until(
    probe: Callable[[], bool], alive: Callable[[], bool], deadline: float, what: str, log: Path
) -> None:
    """Call ``probe`` until it is true; fail with the log's tail if the process dies first."""
    while not probe():
        if not alive():
            raise JvmStartError(f"{what} exited during startup; its log:\n{log_tail(log)}")
        if time.monotonic() > deadline:
            raise JvmStartError(f"{what} not ready in time; its log:\n{log_tail(log)}")
        time.sleep(PROBE_INTERVAL_S)


class JvmProcess:
    """One ``java`` process of Kafka's, started through the keeper.

    Args:
        workdir: Where its log (``<name>.log``) and log4j2 config go.
        name: Short name used for the log file and in errors.
        main_class: The Java main class.
        args: Its arguments.
        jvm_flags: Flags before ``-cp``.
        log_level: Root log4j2 level.
    """

    def __init__(
        self,
        workdir: Path,
        name: str,
        main_class: str,
        args: Sequence[str],
        *,
        jvm_flags: Sequence[str] = STARTUP_JVM_FLAGS,
        log_level: str = "INFO",
    ) -> None:
        self.workdir, self.name = workdir, name
        self.log = workdir / f"{name}.log"
        self.main_class, self.args, self.jvm_flags = main_class, list(args), list(jvm_flags)
        self.log_level = log_level
        self.keeper: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        log4j = self.workdir / f"{self.name}-log4j2.properties"
        log4j.write_text(_LOG4J2.format(level=self.log_level))
        return [
            java_executable(),
            *self.jvm_flags,
            f"-Dlog4j2.configurationFile={log4j}",
            "-cp",
            f"{kafka_classpath()}/*",
            self.main_class,
            *self.args,
        ]

    def start(self, watch_pid: int) -> JvmProcess:
        """Spawn the keeper and the JVM; returns at once (readiness is the caller's probe)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, str(KEEPER), str(watch_pid), str(self.log), "--", *self.command()]
        # A session of its own: a Ctrl-C in the terminal reaches pytest, whose exit then
        # stops the keeper; the JVM must not see the SIGINT before the tests are done.
        self.keeper = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True)
        return self

    def run_to_completion(self, timeout_s: float) -> None:
        """Run the JVM in the foreground (for tools such as StorageTool); raise on failure."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            proc = subprocess.run(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
                check=False,
            )
        if proc.returncode != 0:
            raise JvmStartError(
                f"{self.name} ({self.main_class}) exited with {proc.returncode}; its log:\n"
                f"{log_tail(self.log)}"
            )

    def alive(self) -> bool:
        return self.keeper is not None and self.keeper.poll() is None

    def stop(self) -> None:
        """SIGTERM the keeper, which stops the JVM; wait for both. Safe to call twice."""
        keeper, self.keeper = self.keeper, None
        if keeper is None or keeper.poll() is not None:
            return
        keeper.send_signal(signal.SIGTERM)
        try:
            keeper.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            keeper.kill()  # the JVM gets SIGKILL with it (PR_SET_PDEATHSIG)
            keeper.wait()


def shared(root: Path, name: str, start: Callable[[Path], Mapping[str, Any]]) -> dict[str, Any]:
    """Start a service once for everyone sharing ``root``; return what ``start`` described.

    ``start(workdir)`` must start the service so that it outlives the caller (a
    :class:`JvmProcess` tied to the run's controller), wait until it is ready, and return a
    JSON-able description (its address) including ``"pid"``: the process whose life is the
    service's. A description whose pid is gone is stale and the service is started again.
    """
    workdir = root / name
    workdir.mkdir(parents=True, exist_ok=True)
    state = workdir / "state.json"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if state.exists():
            described: dict[str, Any] = json.loads(state.read_text())
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(described["pid"]), 0)
                return described
        described = dict(start(workdir))
        state.write_text(json.dumps(described))
        return described
