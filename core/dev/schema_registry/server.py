"""Run the dev Schema Registry: replay ``_schemas``, then serve the REST API with uvicorn.

::

    with SchemaRegistry(bootstrap_servers) as registry:
        converter_config = {"schema.registry.url": registry.url}

One registry instance per ``_schemas`` topic: the registry applies every record of the topic
(its own and others') as it reads them, but plans ids from its own memory, so two instances
writing the same topic at once could hand out the same id (Confluent elects a leader for
that; this is a dev server).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections import Counter
from types import TracebackType

import uvicorn

from core.dev.schema_registry._auth import BasicAuth
from core.dev.schema_registry._state import RegistryState
from core.dev.schema_registry._store import DEFAULT_TOPIC, WRITE_TIMEOUT_S, SchemaTopicStore
from core.dev.schema_registry.app import create_app

__all__ = ["SchemaRegistry", "SchemaRegistryStartError"]

log = logging.getLogger("copycat.schema_registry")

LOOPBACK_HOST = "127.0.0.1"
# uvicorn binds within milliseconds; the bound turns a port clash or a crash in the
# server thread into an error instead of a hang.
START_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 10.0


class SchemaRegistryStartError(RuntimeError):
    """The registry could not read its topic or bind its port."""


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class SchemaRegistry:
    """A Confluent-compatible Schema Registry backed by a compacted Kafka topic."""

    def __init__(
        self,
        bootstrap_servers: str,
        port: int = 0,
        host: str = LOOPBACK_HOST,
        topic: str = DEFAULT_TOPIC,
        write_timeout_s: float = WRITE_TIMEOUT_S,
        basic_auth: BasicAuth | None = None,
    ) -> None:
        """Configure the registry; ``port=0`` picks a free port on :meth:`start`.

        ``write_timeout_s`` bounds the wait for the broker to take a change (else 50001).
        ``basic_auth``: require HTTP basic authentication on every request (as Confluent's
        ``authentication.method=BASIC``); None (the default): no authentication.
        """
        self.bootstrap_servers = bootstrap_servers
        self.host = host
        self.topic = topic
        self.write_timeout_s = write_timeout_s
        self.basic_auth = basic_auth
        self._requested_port = port
        self.port = port
        self.state = RegistryState()
        # Requests served, by "METHOD /path" (percent-decoded path), since construction.
        self.requests: Counter[str] = Counter()
        self._store: SchemaTopicStore | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:8081``."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> SchemaRegistry:
        """Create/replay the topic and serve in a background thread; returns ``self``.

        Raises:
            SchemaRegistryStartError: If the topic cannot be read or the server does not start.
        """
        store = SchemaTopicStore(self.bootstrap_servers, self.topic, self.write_timeout_s)
        try:
            store.ensure_topic()
            started = time.monotonic()
            count = store.start(self.state.apply)
        except Exception as exc:
            store.close()
            raise SchemaRegistryStartError(
                f"Could not read {self.topic!r} from {self.bootstrap_servers}: {exc}"
            ) from exc
        log.info(
            "replayed %d record(s) of %s in %.2fs", count, self.topic, time.monotonic() - started
        )
        self._store = store
        self.port = self._requested_port or _free_port(self.host)
        config = uvicorn.Config(
            create_app(self.state, store, self.requests, self.basic_auth),
            host=self.host,
            port=self.port,
            log_level="warning",
            lifespan="off",
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run, name=f"schema-registry-{self.port}", daemon=True
        )
        thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                store.close()
                self._store = None
                raise SchemaRegistryStartError(f"Schema registry did not start on {self.url}")
            time.sleep(0.01)
        self._server, self._thread = server, thread
        log.info(
            "schema registry serving on %s (topic %s on %s)",
            self.url,
            self.topic,
            self.bootstrap_servers,
        )
        return self

    def serve_forever(self) -> None:
        """Block until the server stops (the CLI's main loop)."""
        if self._thread is not None:
            while self._thread.is_alive():
                self._thread.join(0.5)

    def stop(self) -> None:
        """Stop serving, then stop reading the topic and drop its producer."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_S)
        if self._store is not None:
            self._store.close()
        self._server = self._thread = self._store = None

    def __enter__(self) -> SchemaRegistry:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        auth = " basic-auth" if self.basic_auth is not None else ""
        return f"<SchemaRegistry {self.url} topic={self.topic} on {self.bootstrap_servers}{auth}>"
