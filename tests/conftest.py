"""Fixtures shared by every test layer.

Only the standard library, pytest and ``core.devbroker`` may be imported here: this file
loads for unit tests too, before the rest of the code base necessarily exists.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from core.devbroker import DevBroker
    from registry.server import RegistryServer

# Kafka allows topic names of up to 249 characters from [a-zA-Z0-9._-]. The test name part
# is only there to make a topic recognisable in broker output, so keep it short.
_TOPIC_TEST_NAME_CHARS = 60
_TOPIC_ILLEGAL_CHARS = re.compile(r"[^a-zA-Z0-9._-]+")


@pytest.fixture(scope="session")
def dev_broker() -> Iterator[DevBroker]:
    """One running dev broker per test session (per worker process under pytest-xdist)."""
    # Imported here so that collecting unit tests never needs the broker's dependencies.
    from core.devbroker import DevBroker

    with DevBroker() as broker:
        yield broker


@pytest.fixture(scope="session")
def bootstrap_servers(dev_broker: DevBroker) -> str:
    """``bootstrap.servers`` value for clients talking to the session's dev broker."""
    return dev_broker.bootstrap_servers


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    """A topic name no other test (or xdist worker) in this session uses.

    The topic is not created. The dev broker auto-creates topics on first produce, but
    with 4 partitions (Apache Kafka's default is 1), so tests that depend on the partition
    count, or on order across all records, call ``dev_broker.create_topic(topic_name, n)``.
    """
    readable = _TOPIC_ILLEGAL_CHARS.sub("-", request.node.name)[:_TOPIC_TEST_NAME_CHARS]
    return f"test-{readable.strip('-.')}-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def plugin_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryServer]:
    """A running ``copycat registry serve`` index for the session, with the bundled plugins
    published to it by twine (validated like any upload) and copycat-plugin-api in its
    libraries. Projects it does not hold are redirected to the public index (the bundled
    plugins' dependencies). Uploads need ``tests.support.marketplace.UPLOAD_TOKEN``."""
    from core.bundled import bundled_wheelhouse
    from registry.server import RegistryServer, add_libraries
    from tests.support.marketplace import (
        PUBLIC_INDEX,
        UPLOAD_TOKEN,
        build_plugin_api_wheel,
        twine_upload,
    )

    data = tmp_path_factory.mktemp("plugin-index")
    api = build_plugin_api_wheel()
    add_libraries(data, [api])
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


if TYPE_CHECKING:
    from core.schema_registry import SchemaRegistry


@pytest.fixture(scope="session")
def schema_registry(dev_broker: DevBroker) -> Iterator[SchemaRegistry]:
    """A dev Schema Registry on a free port, storing schemas in the session broker's ``_schemas``.

    Tests share it: use subject names no other test uses (e.g. derived from ``topic_name``).
    """
    from core.schema_registry import SchemaRegistry

    with SchemaRegistry(dev_broker.bootstrap_servers) as registry:
        yield registry


class _SecretLeakWatch(logging.Handler):
    """Checks every log line of the test run against the values resolved from config
    providers so far (``core.secrets``): none may appear in the log, scrubbed or not."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.leaks: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        from core import secrets

        values = [v for v in secrets.registered() if len(v) >= secrets.ANYWHERE_MIN_CHARS]
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
