"""Real Apache Kafka Connect workers (the reference implementation) for tests and benchmarks.

    worker = KafkaConnect(tmp_dir, bootstrap).start(watch_pid=os.getpid())
    httpx.post(worker.url + "/connectors", json={...})

:class:`KafkaConnect` runs ``ConnectStandalone`` or ``ConnectDistributed`` from the same
Apache Kafka release as the test broker (``tests/kafka/pom.xml``: connect-runtime, -file,
-json, -transforms on the class path, so Kafka's FileStream connectors, JsonConverter and SMTs
are there without a ``plugin.path``), with its REST API on a free loopback port. A worker is
ready when ``GET /connectors`` answers 200 (~8 s on 2 cores). :func:`connect_cluster` starts N
distributed workers that share one group and internal topics, for multi-worker tests.

Called from a test's (or bench script's) main thread; the JVMs run under the keeper
(``tests/support/keeper.py``) and die with ``watch_pid``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx

from tests.support.jvm import STARTUP_JVM_FLAGS, JvmProcess, JvmStartError, free_port, wait_until

__all__ = ["KafkaConnect", "connect_cluster"]

# A Connect worker scans its class path for plugins and, in distributed mode, joins its group
# and reads three internal topics before REST answers: ~8 s on an idle 2-core machine.
START_TIMEOUT_S = 180.0

_MAIN_CLASS = {
    "standalone": "org.apache.kafka.connect.cli.ConnectStandalone",
    "distributed": "org.apache.kafka.connect.cli.ConnectDistributed",
}

_COMMON_SETTINGS = {
    # The worker-wide defaults of Kafka's own config/connect-*.properties; the tests set the
    # converters they compare on each connector.
    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    # Only the class path: Kafka's file connectors, converters and SMTs are on it.
    "plugin.discovery": "only_scan",
    # Tests wait for committed offsets; Kafka's default flushes every 10 s (standalone) or
    # 60 s (distributed).
    "offset.flush.interval.ms": "1000",
    # Sink consumers join a new group on a single-node test broker; the defaults are fine but
    # a short session lets a test's stopped sink leave its group quickly.
    "consumer.session.timeout.ms": "10000",
}


class KafkaConnect:
    """One Apache Kafka Connect worker JVM.

    Args:
        workdir: Its config, offsets file (standalone) and ``connect.log``.
        bootstrap_servers: The Kafka cluster it uses.
        mode: ``"standalone"`` or ``"distributed"``.
        overrides: Extra worker settings.
        group_id: Distributed mode: the Connect cluster's group (and internal topics' prefix).
        jvm_flags: JVM flags (benchmarks pass the JIT's defaults).
    """

    def __init__(
        self,
        workdir: Path,
        bootstrap_servers: str,
        *,
        mode: str = "standalone",
        overrides: Mapping[str, str] | None = None,
        group_id: str | None = None,
        jvm_flags: Sequence[str] = STARTUP_JVM_FLAGS,
    ) -> None:
        if mode not in _MAIN_CLASS:
            raise ValueError(f"mode {mode!r}: expected one of {sorted(_MAIN_CLASS)}")
        self.workdir, self.bootstrap_servers, self.mode = workdir, bootstrap_servers, mode
        self.overrides = dict(overrides or {})
        self.group_id = group_id or f"connect-{uuid.uuid4().hex[:8]}"
        self.jvm_flags = tuple(jvm_flags)
        self.port = 0
        self._jvm: JvmProcess | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        """Pid of the keeper whose life is the worker's."""
        assert self._jvm is not None and self._jvm.keeper is not None, "worker not started"
        return self._jvm.keeper.pid

    def start(self, watch_pid: int, timeout_s: float = START_TIMEOUT_S) -> KafkaConnect:
        """Start the worker tied to ``watch_pid``; return once its REST API answers.

        Raises:
            JvmStartError: The JVM exited or REST did not answer in time (quotes its log).
        """
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        config = self.workdir / "worker.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self._settings().items()))
        jvm = JvmProcess(
            self.workdir, "connect", _MAIN_CLASS[self.mode], [str(config)], jvm_flags=self.jvm_flags
        )
        self._jvm = jvm.start(watch_pid)
        try:
            wait_until(
                self._serves,
                jvm.alive,
                time.monotonic() + timeout_s,
                f"Kafka Connect ({self.mode})",
                jvm.log,
            )
        except JvmStartError:
            jvm.stop()
            raise
        return self

    def stop(self) -> None:
        if self._jvm is not None:
            self._jvm.stop()

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60)

    def _settings(self) -> dict[str, str]:
        settings = {
            **_COMMON_SETTINGS,
            "bootstrap.servers": self.bootstrap_servers,
            "listeners": f"http://127.0.0.1:{self.port}",
        }
        if self.mode == "standalone":
            settings["offset.storage.file.filename"] = str(self.workdir / "connect.offsets")
        else:
            group = self.group_id
            settings.update(
                {
                    "group.id": group,
                    "config.storage.topic": f"{group}-configs",
                    "offset.storage.topic": f"{group}-offsets",
                    "status.storage.topic": f"{group}-status",
                    "config.storage.replication.factor": "1",
                    "offset.storage.replication.factor": "1",
                    "status.storage.replication.factor": "1",
                    # One partition each: a test cluster has few connectors, and 25 offset
                    # partitions (the default) cost seconds to create on 2 cores.
                    "offset.storage.partitions": "1",
                    "status.storage.partitions": "1",
                    "scheduled.rebalance.max.delay.ms": "10000",
                }
            )
        settings.update(self.overrides)
        return settings

    def _serves(self) -> bool:
        try:
            return httpx.get(f"{self.url}/connectors", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False


def connect_cluster(
    workdir: Path,
    bootstrap_servers: str,
    workers: int,
    *,
    watch_pid: int,
    overrides: Mapping[str, str] | None = None,
) -> list[KafkaConnect]:
    """Start ``workers`` distributed Kafka Connect workers of one new group, one after another.

    The caller stops them (``for w in cluster: w.stop()``).
    """
    group = f"connect-{uuid.uuid4().hex[:8]}"
    started: list[KafkaConnect] = []
    try:
        for i in range(workers):
            worker = KafkaConnect(
                workdir / f"worker-{i}",
                bootstrap_servers,
                mode="distributed",
                overrides=overrides,
                group_id=group,
            )
            started.append(worker.start(watch_pid))
    except BaseException:
        for worker in started:
            worker.stop()
        raise
    return started
