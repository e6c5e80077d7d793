"""A real standalone worker with its REST server, in-process, for the REST end-to-end tests.

The herder, the worker and the uvicorn listeners run in this process (threads); connectors
and tasks run in real plugin hosts against the test's broker. Every log record the
worker emits is kept in :attr:`RestWorker.log_lines`, so tests can grep the log.
"""

from __future__ import annotations

import collections
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.rest.server import RestServer
from core.standalone import StandaloneHerder
from tests.support.faulty import install_faulty


class _Collect(logging.Handler):
    def __init__(self, sink: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.sink = sink
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.sink.append(self.format(record))
        except Exception:  # noqa: BLE001
            self.handleError(record)


class RestWorker:
    """``with RestWorker(...) as w: httpx.get(w.url + "/connectors")``."""

    def __init__(
        self, tmp: Path, bootstrap: str, plugin_path: Path, extra: Mapping[str, str] | None = None
    ) -> None:
        self.tmp = tmp
        self.props = {
            "bootstrap.servers": bootstrap,
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "offset.storage.file.filename": str(tmp / "connect.offsets"),
            "offset.flush.interval.ms": "500",
            "plugin.path": str(plugin_path),
            "listeners": "http://127.0.0.1:0",
            "consumer.session.timeout.ms": "6000",
            "consumer.heartbeat.interval.ms": "1000",
            "task.shutdown.graceful.timeout.ms": "3000",
            **(extra or {}),
        }
        self.log_lines: list[str] = []
        self._handler = _Collect(self.log_lines)
        self.herder = StandaloneHerder(None, worker_props=self.props)
        self.server = RestServer(self.herder, self.herder.config, self.herder.extensions)

    @property
    def url(self) -> str:
        return self.server.url

    def __enter__(self) -> RestWorker:
        root = logging.getLogger()
        root.addHandler(self._handler)
        if root.level > logging.INFO or root.level == logging.NOTSET:
            root.setLevel(logging.INFO)
        self.herder.prepare()
        self.server.start()
        self.herder.worker_id = self.server.worker_id
        self.herder.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.server.stop()
            self.herder.shutdown()
        finally:
            logging.getLogger().removeHandler(self._handler)

    def client(self, **kwargs: Any) -> httpx.Client:
        """A client whose every response is checked for provider-resolved values."""
        hooks = kwargs.pop("event_hooks", {})
        hooks.setdefault("response", []).append(_no_resolved_secret)
        return httpx.Client(base_url=self.url, timeout=60, event_hooks=hooks, **kwargs)


# A test that runs its task in both places a task's data path can run (task.data.path), with
# a module's ``worker`` fixture made by :func:`data_path_worker`.
BOTH_DATA_PATHS = pytest.mark.parametrize("worker", ["host", "worker"], indirect=True)


@contextmanager
def data_path_worker(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    bootstrap: str,
    plugin_path: Path,
    name: str,
    extra: Mapping[str, str] | None = None,
    *,
    faulty: bool = False,
) -> Iterator[RestWorker]:
    """A module's REST worker whose ``task.data.path`` is the fixture's indirect parameter
    (``auto`` without one), with the faulty test plugins beside the bundled ones if asked."""
    data_path = getattr(request, "param", "auto")
    tmp = tmp_path_factory.mktemp(f"{name}-{data_path}")
    plugins = f"{plugin_path},{install_faulty(tmp / 'plugins')}" if faulty else str(plugin_path)
    props = {"plugin.path": plugins, "task.data.path": data_path, **(extra or {})}
    with RestWorker(tmp, bootstrap, plugin_path, props) as worker:
        yield worker


def module_worker(
    name: str, extra: Mapping[str, str] | None = None, *, faulty: bool = False
) -> Any:
    """A module-scoped ``worker`` fixture made by :func:`data_path_worker` (assign it to
    ``worker`` in the module): ``worker = module_worker("idle", faulty=True)``."""

    @pytest.fixture(scope="module", name="worker")
    def fixture(
        request: pytest.FixtureRequest,
        tmp_path_factory: pytest.TempPathFactory,
        bootstrap_servers: str,
        bundled_plugin_path: Path,
    ) -> Iterator[RestWorker]:
        with data_path_worker(
            request,
            tmp_path_factory,
            bootstrap_servers,
            bundled_plugin_path,
            name,
            extra,
            faulty=faulty,
        ) as w:
            yield w

    return fixture


def _no_resolved_secret(response: httpx.Response) -> None:
    from core import secrets

    if response.request.url.path.endswith("/topics"):
        return  # active topics are Kafka's names, even when a provider named the topic
    response.read()
    text = response.text
    leaked = [
        v
        for v in secrets.registered()
        if len(v) >= secrets.ANYWHERE_MIN_CHARS and secrets.worth_hiding(v) and v in text
    ]
    assert not leaked, f"{response.request.method} {response.request.url} answered a secret"


def wait_for(predicate: Callable[[], Any], timeout_s: float = 30.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what or predicate}: last={last!r}")


# Every REST call of a connector's life cycle (the lifecycle storm tests), and what Kafka may
# answer to each: 409 for a create of an existing name, or while a distributed group
# rebalances (``rebalancing``); a config PUT creates (201) or updates (200).
LIFECYCLE_CALLS = ("create", "config", "delete", "pause", "resume", "stop", "restart")


def lifecycle_answers(rebalancing: bool) -> dict[str, set[int]]:
    conflict = {409} if rebalancing else set()
    return {
        "create": {201, 409},
        "config": {200, 201, 409},
        "delete": {204, 404} | conflict,
        "pause": {202, 404},
        "resume": {202, 404},
        "stop": {204, 404} | conflict,
        "restart": {202, 204, 404, 409},
    }


def lifecycle_call(url: str, what: str, name: str, config: Mapping[str, str]) -> httpx.Response:
    """One of :data:`LIFECYCLE_CALLS` on connector ``name`` at the worker at ``url``."""
    connectors = f"{url}/connectors"
    with httpx.Client(timeout=120) as client:
        if what == "create":
            return client.post(connectors, json={"name": name, "config": dict(config)})
        if what == "config":
            return client.put(f"{connectors}/{name}/config", json=dict(config))
        if what == "delete":
            return client.delete(f"{connectors}/{name}")
        if what == "restart":
            return client.post(f"{connectors}/{name}/restart?includeTasks=true")
        return client.put(f"{connectors}/{name}/{what}")


def lifecycle_storm(
    urls: Sequence[str],
    names: Sequence[str],
    config: Mapping[str, str],
    calls: int,
    threads: int,
    rebalancing: bool,
) -> collections.Counter[tuple[str, int]]:
    """``calls`` of :data:`LIFECYCLE_CALLS` at once from ``threads`` threads, call ``i`` on a
    name, a worker and a call chosen by ``random.Random(i)``; asserts every answer is one Kafka
    gives (:func:`lifecycle_answers`) and returns how often each ``(call, status)`` came."""
    answers: collections.Counter[tuple[str, int]] = collections.Counter()
    lock = threading.Lock()

    def call(i: int) -> None:
        rng = random.Random(i)
        name, what, url = rng.choice(names), rng.choice(LIFECYCLE_CALLS), rng.choice(urls)
        response = lifecycle_call(url, what, name, config)
        with lock:
            answers[(what, response.status_code)] += 1

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(call, range(calls)))
    allowed = lifecycle_answers(rebalancing)
    unexpected = {k: n for k, n in answers.items() if k[1] not in allowed[k[0]]}
    assert not unexpected, (unexpected, answers)
    return answers
