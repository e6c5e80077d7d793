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
def bundled_plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plugin.path with the bundled plugins (file connectors, converters) installed once."""
    from core.bundled import ensure_bundled_plugins

    path = tmp_path_factory.mktemp("bundled-plugins")
    ensure_bundled_plugins(path)
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
