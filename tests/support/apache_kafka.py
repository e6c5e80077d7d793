"""A single-node Apache Kafka (KRaft, combined broker + controller) for tests and benchmarks.

    broker = ApacheKafka(tmp_dir).start(watch_pid=os.getpid())
    cluster = KafkaCluster(broker.bootstrap_servers)
    cluster.create_topic("orders", partitions=3)

A test module that stops, freezes or configures a broker apart from the run's shared one takes
one of its own with :func:`own_apache_kafka`, and skips with :func:`needs_own_apache_kafka`
where a run starts no Apache Kafka.

:class:`ApacheKafka` formats a KRaft log directory with Kafka's ``StorageTool`` and starts
``kafka.Kafka`` on two free loopback ports (clients, controller), with settings for one node:
every replication factor 1, no initial rebalance delay, one partition for the internal topics
(they are created on first use, and 50 partitions cost seconds there). The jars come from
``tests/support/kafka_jars.py``. Ready in ~3 s on an idle 2-core machine, ~5 s under load
(two JVM starts).

:class:`KafkaCluster` is a handle on any running cluster (ours, one shared by another
process, or an external one from ``COPYCAT_TEST_BOOTSTRAP``): address and admin helpers.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import socket
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, ResourceType
from confluent_kafka.cimpl import NewTopic

from tests.support.jvm import STARTUP_JVM_FLAGS, JvmProcess, JvmStartError, free_port, wait_until

if TYPE_CHECKING:
    import pytest

__all__ = [
    "SASL_PASSWORD",
    "SASL_USER",
    "ApacheKafka",
    "KafkaCluster",
    "needs_own_apache_kafka",
    "own_apache_kafka",
]

# The user the ``sasl_kafka`` fixture's broker admits on its SASL listener, and its password.
SASL_USER, SASL_PASSWORD = "copycat", "copycat-secret"

# Two JVM starts (StorageTool, then the broker) take ~3.5 s on an idle 2-core machine; a test
# run starting beside four other suites can take several times that.
START_TIMEOUT_S = 120.0

# StorageTool formats an empty directory in about a second.
FORMAT_TIMEOUT_S = 60.0

# Admin requests on a local single-node cluster answer in milliseconds; the slack is for a
# loaded machine and librdkafka's first connection.
ADMIN_TIMEOUT_S = 30.0

# Ports are picked free and released before the JVM binds them, so another process can take
# one first; the broker then exits with a BindException and we try fresh ports.
PORT_ATTEMPTS = 3

_SINGLE_NODE_SETTINGS = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "num.partitions": "1",
    "default.replication.factor": "1",
    "min.insync.replicas": "1",
    "offsets.topic.replication.factor": "1",
    # Internal topics are created on first use; with the default 50 partitions the first
    # consumer group of a run waits seconds for them on 2 cores.
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    # Kafka delays the first rebalance of a new group by 3 s to gather members; tests start
    # one consumer at a time and would each wait it out.
    "group.initial.rebalance.delay.ms": "0",
    # A consumer killed with -9 stays in its group until its session times out, and the group
    # waits for it before assigning anything to the restarted one. Kafka's floor for
    # session.timeout.ms is 6 s; crash tests (tests/e2e/test_exactly_once_crash_loop.py)
    # restart ten times and use 3 s sessions. Tests that leave it at the default are unchanged.
    "group.min.session.timeout.ms": "1000",
    # The log cleaner sleeps 15 s when it finds nothing to compact; compaction tests should
    # see it act within a second or two.
    "log.cleaner.backoff.ms": "1000",
    "auto.create.topics.enable": "true",
}


def _cluster_id() -> str:
    """A random KRaft cluster id: 16 bytes, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class KafkaCluster:
    """Address of a running Kafka cluster plus the admin calls tests need.

    Args:
        bootstrap_servers: ``host:port[,host:port]``.
        kind: ``"apache-kafka"``, ``"external"`` or ``"dev-broker"``; tests that only pass on
            one kind check it (and say why).
    """

    def __init__(self, bootstrap_servers: str, kind: str = "apache-kafka") -> None:
        self.bootstrap_servers = bootstrap_servers
        self.kind = kind
        self._admin: AdminClient | None = None

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        return self._admin

    def create_topic(
        self, name: str, partitions: int = 1, config: Mapping[str, str] | None = None
    ) -> None:
        """Create ``name`` and wait until the cluster confirms it (and its leader is known).

        Raises:
            KafkaException: The cluster refused, e.g. because the topic exists.
        """
        topic = NewTopic(
            name, num_partitions=partitions, replication_factor=1, config=dict(config or {})
        )
        future = self.admin.create_topics([topic], operation_timeout=ADMIN_TIMEOUT_S)[name]
        future.result(timeout=ADMIN_TIMEOUT_S)
        self.wait_for_leaders(name, partitions)

    def add_partitions(self, name: str, total: int) -> None:
        """Grow ``name`` to ``total`` partitions."""
        future = self.admin.create_partitions([NewPartitions(name, total)])[name]
        future.result(timeout=ADMIN_TIMEOUT_S)
        self.wait_for_leaders(name, total)

    def wait_for_leaders(self, name: str, partitions: int) -> None:
        """Until metadata shows ``partitions`` partitions of ``name``, each with a leader.

        A freshly created topic's partitions may still be leaderless for a moment, and a
        producer that sends then gets ``NOT_LEADER`` errors and retries with back-off.
        """
        deadline = time.monotonic() + ADMIN_TIMEOUT_S
        while True:
            meta = self.admin.list_topics(name, timeout=ADMIN_TIMEOUT_S).topics.get(name)
            if (
                meta is not None
                and meta.error is None
                and len(meta.partitions) == partitions
                and all(p.leader >= 0 for p in meta.partitions.values())
            ):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {name!r}: {partitions} partitions with leaders")
            time.sleep(0.05)

    def delete_topics(self, names: Sequence[str]) -> None:
        for future in self.admin.delete_topics(list(names)).values():
            future.result(timeout=ADMIN_TIMEOUT_S)

    def session_timeout_ms(self, wanted: int) -> int:
        """``wanted``, or the cluster's ``group.min.session.timeout.ms`` if that is higher
        (consumers and workers asking less are refused). The run's broker allows 1 s; crash
        tests ask little so that a killed member is gone soon."""
        node = self.admin.describe_cluster(request_timeout=ADMIN_TIMEOUT_S).result(ADMIN_TIMEOUT_S)
        resource = ConfigResource(ResourceType.BROKER, str(node.nodes[0].id))
        configs = self.admin.describe_configs([resource])[resource].result(ADMIN_TIMEOUT_S)
        entry = configs.get("group.min.session.timeout.ms")
        return max(wanted, int(entry.value)) if entry is not None else wanted


class ApacheKafka:
    """One KRaft broker+controller JVM in ``workdir`` (log dirs, config, ``broker.log``).

    Args:
        workdir: An empty or new directory, kept after stop for post-mortems.
        overrides: Extra broker settings (``server.properties`` keys).
        jvm_flags: JVM flags; benchmarks may want the JIT's defaults.
        extra_listeners: Security protocols (``SASL_PLAINTEXT``, ``SSL``, ...) to listen
            with besides PLAINTEXT, each on a port of its own (:meth:`address`) and named after
            its protocol, so ``listener.name.<protocol lower case>.*`` overrides configure it.
            PLAINTEXT stays the inter-broker listener and the one readiness is checked on.
        sasl_users: With users (name -> password), a SASL_PLAINTEXT listener (one of
            ``extra_listeners``) with mechanism PLAIN that admits exactly them
            (:attr:`sasl_bootstrap_servers`); the PLAINTEXT one stays for admin helpers.
    """

    def __init__(
        self,
        workdir: Path,
        overrides: Mapping[str, str] | None = None,
        jvm_flags: Sequence[str] = STARTUP_JVM_FLAGS,
        extra_listeners: Sequence[str] = (),
        sasl_users: Mapping[str, str] | None = None,
    ) -> None:
        self.workdir = workdir
        self.overrides = dict(overrides or {})
        self.jvm_flags = tuple(jvm_flags)
        self.sasl_users = dict(sasl_users or {})
        sasl = ("SASL_PLAINTEXT",) if self.sasl_users else ()
        self.extra_listeners = tuple(dict.fromkeys((*extra_listeners, *sasl)))
        self.extra_ports: dict[str, int] = {}
        self.port = 0
        self._jvm: JvmProcess | None = None
        self._config: Path | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def address(self, protocol: str) -> str:
        """``host:port`` of the listener for ``protocol`` (one of ``extra_listeners``)."""
        return f"127.0.0.1:{self.extra_ports[protocol]}"

    @property
    def sasl_bootstrap_servers(self) -> str:
        """The SASL_PLAINTEXT listener's address (only with ``sasl_users``)."""
        assert self.sasl_users, "no SASL listener: pass sasl_users"
        return self.address("SASL_PLAINTEXT")

    @property
    def pid(self) -> int:
        """Pid of the keeper whose life is the broker's (see tests/support/keeper.py)."""
        assert self._jvm is not None and self._jvm.keeper is not None, "broker not started"
        return self._jvm.keeper.pid

    @contextlib.contextmanager
    def frozen(self) -> Iterator[None]:
        """Stop the broker's JVM (SIGSTOP) for the block, as a long GC pause or a stalled host
        would: connections stay open, requests go unanswered. SIGCONT on the way out."""
        keeper = self.pid
        children = Path(f"/proc/{keeper}/task/{keeper}/children").read_text().split()
        assert len(children) == 1, f"the broker's keeper {keeper} has children {children}"
        jvm = int(children[0])
        os.kill(jvm, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(jvm, signal.SIGCONT)

    def start(self, watch_pid: int, timeout_s: float = START_TIMEOUT_S) -> ApacheKafka:
        """Format storage, start the broker tied to ``watch_pid``, return once it serves.

        Raises:
            JvmStartError: It exited or was not ready in time (the message quotes its log).
            KafkaJarsError: Java or the jars are missing.
        """
        deadline = time.monotonic() + timeout_s
        for attempt in range(1, PORT_ATTEMPTS + 1):
            self.port, controller = free_port(), free_port()
            self.extra_ports = {protocol: free_port() for protocol in self.extra_listeners}
            data = self.workdir / f"data-{attempt}"
            config = self._write_config(data, controller, attempt)
            JvmProcess(
                self.workdir,
                f"storage-format-{attempt}",
                "kafka.tools.StorageTool",
                # "=": a random id may start with "-", which would read as an option.
                [
                    "format",
                    "--ignore-formatted",
                    f"--cluster-id={_cluster_id()}",
                    "-c",
                    str(config),
                ],
                jvm_flags=self.jvm_flags,
                log_level="WARN",
            ).run_to_completion(FORMAT_TIMEOUT_S)
            jvm = JvmProcess(
                self.workdir, "broker", "kafka.Kafka", [str(config)], jvm_flags=self.jvm_flags
            )
            self._jvm = jvm.start(watch_pid)
            try:
                wait_until(self._serves, jvm.alive, deadline, "Apache Kafka broker", jvm.log)
                self._config = config
                return self
            except JvmStartError:
                jvm.stop()
                if "BindException" not in jvm.log.read_text(errors="replace"):
                    raise
        raise JvmStartError(f"Apache Kafka found no free ports in {PORT_ATTEMPTS} attempts")

    def stop(self) -> None:
        if self._jvm is not None:
            self._jvm.stop()

    def restart(self, watch_pid: int, timeout_s: float = START_TIMEOUT_S) -> ApacheKafka:
        """Stop the broker and start it again on the same ports and log directory.

        Raises:
            JvmStartError: It did not come back (the message quotes its log).
        """
        assert self._config is not None, "broker never started"
        self.stop()
        jvm = JvmProcess(
            self.workdir,
            "broker",
            "kafka.Kafka",
            [str(self._config)],
            jvm_flags=self.jvm_flags,
            log_level="WARN",
        )
        self._jvm = jvm.start(watch_pid)
        wait_until(
            self._serves,
            jvm.alive,
            time.monotonic() + timeout_s,
            "restarted Apache Kafka broker",
            jvm.log,
        )
        return self

    def _write_config(self, data: Path, controller: int, attempt: int) -> Path:
        extra = "".join(f",{p}://127.0.0.1:{port}" for p, port in self.extra_ports.items())
        settings = {
            **_SINGLE_NODE_SETTINGS,
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{controller}{extra}"
            ),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}{extra}",
            "listener.security.protocol.map": ",".join(
                [
                    _SINGLE_NODE_SETTINGS["listener.security.protocol.map"],
                    *(f"{p}:{p}" for p in self.extra_ports),
                ]
            ),
            "controller.quorum.voters": f"1@127.0.0.1:{controller}",
            "log.dirs": str(data),
            **self._sasl_settings(),
            **self.overrides,
        }
        self.workdir.mkdir(parents=True, exist_ok=True)
        path = self.workdir / f"server-{attempt}.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        return path

    def _sasl_settings(self) -> dict[str, str]:
        """The SASL_PLAINTEXT listener's PLAIN mechanism, its users in its JAAS line."""
        if not self.sasl_users:
            return {}
        users = " ".join(f'user_{name}="{pw}"' for name, pw in self.sasl_users.items())
        return {
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
            ),
        }

    def _serves(self) -> bool:
        """True once the client listener answers a metadata request naming this broker."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                pass
        except OSError:
            return False
        try:
            meta = KafkaCluster(self.bootstrap_servers).admin.list_topics(timeout=1.0)
        except KafkaException:
            return False
        return bool(meta.brokers)


def needs_own_apache_kafka(reason: str) -> pytest.MarkDecorator:
    """Skips a test (or module, in its ``pytestmark``) that starts an Apache Kafka of its own
    on runs that start none: on the dev broker (``COPYCAT_TEST_BROKER=dev-broker``, no Java
    needed) or on an external cluster (``COPYCAT_TEST_BOOTSTRAP``). ``reason``: what it does
    with its broker, shown with the skip."""
    import pytest  # here: benchmarks use this module without pytest

    return pytest.mark.skipif(
        os.environ.get("COPYCAT_TEST_BROKER") == "dev-broker"
        or "COPYCAT_TEST_BOOTSTRAP" in os.environ,
        reason=reason,
    )


@contextlib.contextmanager
def own_apache_kafka(
    workdir: Path, overrides: Mapping[str, str] | None = None
) -> Iterator[ApacheKafka]:
    """A broker of the caller's own in ``workdir`` (``overrides`` over the single-node
    settings), tied to this process and stopped on the way out: one a test may stop, restart
    or freeze without breaking the others on the run's shared broker."""
    kafka = ApacheKafka(workdir, overrides=overrides).start(watch_pid=os.getpid())
    try:
        yield kafka
    finally:
        kafka.stop()
