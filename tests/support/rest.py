"""A real standalone worker with its REST server, in-process, for the REST end-to-end tests.

The herder, the worker and the uvicorn listeners run in this process (threads); connectors
and tasks run in real plugin hosts against the test's broker. Every log record the
worker emits is kept in :attr:`RestWorker.log_lines`, so tests can grep the log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx

from core.rest.server import RestServer
from core.standalone import StandaloneHerder


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


def _no_resolved_secret(response: httpx.Response) -> None:
    from core import secrets

    if response.request.url.path.endswith("/topics"):
        return  # active topics are Kafka's names, even when a provider named the topic
    response.read()
    text = response.text
    leaked = [v for v in secrets.registered() if len(v) >= secrets.ANYWHERE_MIN_CHARS and v in text]
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
