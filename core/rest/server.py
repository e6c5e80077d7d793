"""Serving the REST apps with uvicorn, one server per listener, each on its own thread.

``listeners`` (default ``http://:8083``) lists the main listeners; ``admin.listeners`` moves
``/admin/loggers`` to listeners of its own (empty: no admin endpoints at all), as in Kafka.
Sockets are bound before any connector starts, so a port already in use fails the worker at
once, and port 0 picks a free port (tests read the bound :attr:`RestServer.url`).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import uvicorn

from core.herder import Herder
from core.rest.app import create_app
from core.worker_config import WorkerConfig
from plugin_api import ConfigException, ConnectException

log = logging.getLogger("copycat.rest")

# How long start() waits for uvicorn to accept connections before giving up.
STARTUP_TIMEOUT_S = 30.0
# Seconds uvicorn gives open connections on shutdown; requests in flight are short.
SHUTDOWN_GRACE_S = 5


@dataclass
class _Listener:
    url: str
    server: uvicorn.Server
    thread: threading.Thread
    sock: socket.socket


def _bind(listener: str) -> tuple[socket.socket, str, str]:
    parts = urlsplit(listener)
    host = parts.hostname or ""
    port = parts.port or 0
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host or ("::" if family == socket.AF_INET6 else "0.0.0.0"), port))
    except OSError as exc:
        sock.close()
        raise ConnectException(
            f"Unable to initialize REST server: cannot bind {listener}: {exc.strerror}"
        ) from None
    sock.listen(128)
    sock.set_inheritable(True)
    bound_port = sock.getsockname()[1]
    shown = host if host not in ("", "0.0.0.0", "::") else "localhost"
    if ":" in shown:
        shown = f"[{shown}]"
    return sock, parts.scheme.lower(), f"{parts.scheme.lower()}://{shown}:{bound_port}"


class RestServer:
    """Every REST listener of one worker."""

    def __init__(self, herder: Herder, config: WorkerConfig, extensions: Any = None) -> None:
        self.herder = herder
        self.config = config
        self.extensions = extensions
        self.listeners: list[_Listener] = []
        self.admin_listeners: list[_Listener] = []

    @property
    def url(self) -> str:
        """The first main listener's URL, as bound (port 0 resolved)."""
        return self.listeners[0].url

    @property
    def admin_url(self) -> str | None:
        if self.admin_listeners:
            return self.admin_listeners[0].url
        return None if self.config.admin_listeners == [] else self.url

    @property
    def worker_id(self) -> str:
        """``host:port`` that names this worker in statuses, as Kafka's advertised URL does."""
        bound = urlsplit(self.url)
        host = self.config.rest_advertised_host_name or (
            bound.hostname if bound.hostname != "localhost" else socket.gethostname()
        )
        port = self.config.rest_advertised_port or bound.port
        return f"{host}:{port}"

    def start(self) -> None:
        admin = self.config.admin_listeners
        try:
            for listener in self.config.listeners:
                app = create_app(
                    self.herder,
                    self.config,
                    main=True,
                    admin=admin is None,
                    extensions=self.extensions,
                )
                self.listeners.append(self._serve(listener, app))
            for listener in admin or []:
                app = create_app(
                    self.herder, self.config, main=False, admin=True, extensions=self.extensions
                )
                self.admin_listeners.append(self._serve(listener, app))
        except BaseException:
            self.stop()
            raise
        log.info(
            "REST server listening on %s%s",
            ", ".join(li.url for li in self.listeners),
            f" (admin: {', '.join(li.url for li in self.admin_listeners)})"
            if self.admin_listeners
            else "",
        )

    def _serve(self, listener: str, app: Any) -> _Listener:
        sock, scheme, url = _bind(listener)
        kwargs: dict[str, Any] = {}
        if scheme == "https":
            context = None
            if self.extensions is not None:
                context = self.extensions.hook.copycat_rest_ssl_context(
                    listener=listener, worker_config=self.config
                )
            if context is None:
                sock.close()
                raise ConfigException(
                    "listeners", listener, "no TLS configuration for this https listener"
                )
            kwargs["ssl_context_factory"] = lambda _config, _default: context
        config = uvicorn.Config(
            app,
            log_config=None,
            lifespan="off",
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
            **kwargs,
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name=f"rest-{url}", daemon=True
        )
        thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                sock.close()
                raise ConnectException(f"Unable to initialize REST server on {listener}")
            time.sleep(0.01)
        return _Listener(url, server, thread, sock)

    def stop(self) -> None:
        for listener in self.listeners + self.admin_listeners:
            listener.server.should_exit = True
        for listener in self.listeners + self.admin_listeners:
            listener.thread.join(SHUTDOWN_GRACE_S + 5)
            listener.sock.close()
        self.listeners, self.admin_listeners = [], []
