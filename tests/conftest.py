"""Fixtures shared by every test layer.

Only the standard library, pytest and ``core.dev.broker`` may be imported at module level
here: this file loads for unit tests too, before the rest of the code base necessarily exists.

Brokers. Tests that need Kafka ask for ``broker`` (a :class:`~tests.support.apache_kafka.
KafkaCluster`) or ``bootstrap_servers``. By default that is **Apache Kafka**: one
single-node KRaft broker JVM for the whole run, shared by every pytest-xdist worker
(``tests/support/apache_kafka.py``). Tests marked ``also_on_dev_broker`` run a second time on
the Tansu dev broker that the quickstart uses, so both stay true. Environment:

* ``COPYCAT_TEST_BOOTSTRAP=host:port``: use that Kafka cluster instead of starting one.
* ``COPYCAT_TEST_BROKER=dev-broker``: run everything on the dev broker (no Java needed);
  tests marked ``apache_kafka_only(reason)`` are skipped with their reason.
"""

from __future__ import annotations

import logging
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from core.dev.broker import DevBroker
    from core.plugins import PluginCatalogue
    from registry.server import RegistryServer
    from tests.support.apache_kafka import ApacheKafka, KafkaCluster

# Kafka allows topic names of up to 249 characters from [a-zA-Z0-9._-]. The test name part
# is only there to make a topic recognisable in broker output, so keep it short.
_TOPIC_TEST_NAME_CHARS = 60
_TOPIC_ILLEGAL_CHARS = re.compile(r"[^a-zA-Z0-9._-]+")

APACHE_KAFKA = "apache-kafka"
DEV_BROKER = "dev-broker"
_BROKER_KINDS = (APACHE_KAFKA, DEV_BROKER)


def _default_broker_kind() -> str:
    kind = os.environ.get("COPYCAT_TEST_BROKER", APACHE_KAFKA)
    if kind not in _BROKER_KINDS:
        raise pytest.UsageError(f"COPYCAT_TEST_BROKER={kind!r}: expected one of {_BROKER_KINDS}")
    return kind


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise every test that uses ``broker`` with the broker kinds it runs on."""
    if "broker" not in metafunc.fixturenames:
        return
    default = _default_broker_kind()
    kinds = [default]
    if metafunc.definition.get_closest_marker("also_on_dev_broker") and default != DEV_BROKER:
        kinds.append(DEV_BROKER)
    only = metafunc.definition.get_closest_marker("apache_kafka_only")
    params = [
        pytest.param(
            kind,
            marks=pytest.mark.skip(reason=f"Apache Kafka only: {only.kwargs.get('reason', '')}")
            if only is not None and kind == DEV_BROKER
            else (),
        )
        for kind in kinds
    ]
    metafunc.parametrize("broker", params, indirect=True, scope="session")


@pytest.fixture(scope="session")
def apache_kafka(tmp_path_factory: pytest.TempPathFactory) -> KafkaCluster:
    """Apache Kafka for this run: started once and shared by all xdist workers, or external.

    The broker JVM dies with the test run (see tests/support/keeper.py); its log is
    ``<pytest basetemp>/apache-kafka/broker.log``.
    """
    from tests.support.apache_kafka import ApacheKafka, KafkaCluster
    from tests.support.jvm import run_owner_pid, run_root, shared

    external = os.environ.get("COPYCAT_TEST_BOOTSTRAP")
    if external:
        return KafkaCluster(external, kind="external")

    def start(workdir: Path) -> dict[str, object]:
        kafka = ApacheKafka(workdir).start(watch_pid=run_owner_pid())
        return {"bootstrap": kafka.bootstrap_servers, "pid": kafka.pid}

    described = shared(run_root(tmp_path_factory.getbasetemp()), "apache-kafka", start)
    return KafkaCluster(str(described["bootstrap"]))


@pytest.fixture(scope="module")
def own_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheKafka]:
    """An Apache Kafka of the module's own, for tests that stop, restart or freeze it (the
    run's shared one must stay up for the others); stopped after the module. Such a module
    skips on runs that start no Apache Kafka: ``needs_own_apache_kafka`` of
    tests/support/apache_kafka.py in its ``pytestmark``."""
    from tests.support.apache_kafka import own_apache_kafka

    with own_apache_kafka(tmp_path_factory.mktemp("own-kafka")) as kafka:
        yield kafka


@pytest.fixture(scope="session")
def sasl_kafka(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A second Apache Kafka whose client listener ``sasl`` (SASL_PLAINTEXT, PLAIN) admits
    only ``SASL_USER`` of tests/support/apache_kafka.py; ``plaintext`` is its unauthenticated
    listener for test helpers (creating topics, reading what arrived). Started once per run,
    shared by xdist workers; its log is ``<pytest basetemp>/apache-kafka-sasl/broker.log``."""
    from tests.support.apache_kafka import SASL_PASSWORD, SASL_USER, ApacheKafka
    from tests.support.jvm import run_owner_pid, run_root, shared

    def start(workdir: Path) -> dict[str, object]:
        kafka = ApacheKafka(workdir, sasl_users={SASL_USER: SASL_PASSWORD})
        kafka.start(watch_pid=run_owner_pid())
        return {
            "plaintext": kafka.bootstrap_servers,
            "sasl": kafka.sasl_bootstrap_servers,
            "pid": kafka.pid,
        }

    described = shared(run_root(tmp_path_factory.getbasetemp()), "apache-kafka-sasl", start)
    return {"plaintext": str(described["plaintext"]), "sasl": str(described["sasl"])}


@pytest.fixture(scope="session")
def broker(request: pytest.FixtureRequest) -> KafkaCluster:
    """The cluster this test runs on (see the module docstring for which and why)."""
    from tests.support.apache_kafka import KafkaCluster

    kind = getattr(request, "param", _default_broker_kind())
    if kind == DEV_BROKER:
        dev: DevBroker = request.getfixturevalue("dev_broker")
        return KafkaCluster(dev.bootstrap_servers, kind=DEV_BROKER)
    cluster: KafkaCluster = request.getfixturevalue("apache_kafka")
    return cluster


@pytest.fixture(scope="session")
def dev_broker() -> Iterator[DevBroker]:
    """One running dev broker per test session (per worker process under pytest-xdist)."""
    # Imported here so that collecting unit tests never needs the broker's dependencies.
    from core.dev.broker import DevBroker

    with DevBroker() as broker:
        yield broker


@pytest.fixture(scope="session")
def bootstrap_servers(broker: KafkaCluster) -> str:
    """``bootstrap.servers`` value for clients talking to this test's ``broker``."""
    return broker.bootstrap_servers


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    """A topic name no other test (or xdist worker) in this session uses.

    The topic is not created. Both brokers auto-create topics on first use, but the dev
    broker with 4 partitions (Apache Kafka here: 1), so tests that depend on the partition
    count, or on order across all records, call ``broker.create_topic(topic_name, n)``.
    """
    readable = _TOPIC_ILLEGAL_CHARS.sub("-", request.node.name)[:_TOPIC_TEST_NAME_CHARS]
    return f"test-{readable.strip('-.')}-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def plugin_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryServer]:
    """A running ``copycat registry serve`` index for the session, with the bundled plugins
    published to it by twine (validated like any upload) and copycat-plugin-api in its
    libraries (the one the server packs at start, as a fresh index has). Projects it does not
    hold are redirected to the public index (the bundled plugins' dependencies). Uploads need
    ``tests.support.marketplace.UPLOAD_TOKEN``."""
    from core.bundled import bundled_wheelhouse
    from registry.server import RegistryServer
    from tests.support.marketplace import PUBLIC_INDEX, UPLOAD_TOKEN, twine_upload

    data = tmp_path_factory.mktemp("plugin-index")
    with RegistryServer(data, upload_token=UPLOAD_TOKEN, upstream=PUBLIC_INDEX) as server:
        from concurrent.futures import ThreadPoolExecutor

        wheels = sorted(bundled_wheelhouse().glob("*.whl"))
        with ThreadPoolExecutor(len(wheels)) as pool:  # twine's start-up overlaps
            for done in pool.map(lambda w: twine_upload(server.url, w), wheels):
                assert done.returncode == 0, done.stdout + done.stderr
        yield server


@pytest.fixture(scope="session")
def bundled_plugin_path(
    tmp_path_factory: pytest.TempPathFactory, plugin_index: RegistryServer
) -> Path:
    """A plugin.path with the bundled plugins installed once, from the session's index, by
    name, the way third-party plugins are installed."""
    from concurrent.futures import ThreadPoolExecutor

    from core.bundled import bundled_plugin_dirs, project_version
    from registry import install

    path = tmp_path_factory.mktemp("bundled-plugins")
    wanted = [project_version(p) for p in bundled_plugin_dirs()]
    with ThreadPoolExecutor(len(wanted)) as pool:
        list(
            pool.map(
                lambda nv: install(f"{nv[0]}=={nv[1]}", path, index_url=plugin_index.index_url),
                wanted,
            )
        )
    return path


@pytest.fixture(scope="module")
def catalogue(bundled_plugin_path: Path) -> PluginCatalogue:
    """The bundled plugins' catalogue, scanned once per module. A module whose tests need a
    plugin of their own beside them overrides it (:func:`tests.support.plugins.catalogue_with`)."""
    from core.plugins import PluginCatalogue

    return PluginCatalogue.scan([bundled_plugin_path])


@pytest.fixture(scope="session")
def faulty_plugin_dirs(
    bundled_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> list[Path]:
    """Plugin directories with the bundled plugins and the fault-injection plugin
    (tests/support/faulty.py), for tests that make a Worker themselves."""
    from tests.support.faulty import install_faulty

    return [bundled_plugin_path, install_faulty(tmp_path_factory.mktemp("faulty") / "plugins")]


if TYPE_CHECKING:
    from core.dev.schema_registry import SchemaRegistry


@pytest.fixture(scope="session")
def schema_registry(broker: KafkaCluster) -> Iterator[SchemaRegistry]:
    """A dev Schema Registry on a free port, storing schemas in the broker's ``_schemas``.

    Tests share it: use subject names no other test uses (e.g. derived from ``topic_name``).
    """
    from core.dev.schema_registry import SchemaRegistry

    with SchemaRegistry(broker.bootstrap_servers) as registry:
        yield registry


class _SecretLeakWatch(logging.Handler):
    """Checks every log line of the test run against the values resolved from config
    providers so far (``core.secrets``): none may appear in the log, scrubbed or not."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.leaks: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        from core import secrets

        values = [
            v
            for v in secrets.registered()
            if len(v) >= secrets.ANYWHERE_MIN_CHARS and secrets.worth_hiding(v)
        ]
        if not values:
            return
        try:
            line = self.format(record)
        except Exception:  # noqa: BLE001 - a broken record is logging's to report
            return
        self.leaks += [f"{record.name}: {line[:200]}" for v in values if v in line]


@pytest.fixture(scope="session", autouse=True)
def no_resolved_secret_in_any_log_line() -> Iterator[None]:
    """The whole suite's log, every line, never shows a provider-resolved value."""
    watch = _SecretLeakWatch()
    root = logging.getLogger()
    root.addHandler(watch)
    try:
        yield
    finally:
        root.removeHandler(watch)
    assert watch.leaks == [], f"resolved secrets in log lines: {watch.leaks[:5]}"
