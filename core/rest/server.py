"""Serving the REST apps with uvicorn, one server per listener, each on its own thread.

``listeners`` (default ``http://:8083``) lists the main listeners; ``admin.listeners`` moves
``/admin/loggers`` to listeners of its own (empty: no admin endpoints at all), as in Kafka.
Sockets are bound before any connector starts, so a port already in use fails the worker at
once, and port 0 picks a free port (tests read the bound :attr:`RestServer.url`).

:attr:`RestServer.advertised_url` is the URL the worker names itself by, as Kafka's
``RestServer.advertisedUrl()``: the group metadata other workers forward requests to, and
(its ``host:port``) the ``worker_id`` of statuses. See :func:`advertised_url`.
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
    scheme: str
    host: str  # as configured ("" when the listener names no host)
    port: int  # as bound


def _uri_host(host: str) -> str:
    """``host`` as a URI names it: an IPv6 literal in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _local_address() -> str:
    """The address Jetty names a listener without a host by (Java's
    ``InetAddress.getLocalHost().getHostAddress()``): this host name's address."""
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def advertised_url(
    listeners: list[tuple[str, str, int]],
    raw_listeners: str,
    host_name: str | None,
    port: int | None,
    listener: str | None,
) -> str:
    """The URL a worker advertises, as Kafka 4.1.1's ``RestServer.advertisedUrl()``.

    ``listeners`` are the main listeners' ``(scheme, configured host, bound port)``, in
    order; ``raw_listeners`` the ``listeners`` value as written; ``host_name``, ``port`` and
    ``listener`` the ``rest.advertised.*`` settings. The protocol is ``listener`` if set,
    else http if any listener is http, else https. The host is ``host_name``, else the host
    of the first listener of that protocol, else the first listener's (a listener without a
    host: this host's address). A wildcard host (``0.0.0.0``) is advertised as it is, as
    Kafka does: other hosts cannot reach it, so a cluster of several hosts sets
    ``rest.advertised.host.name``. The port is ``port``, else the bound port of that
    listener, else the first listener's.
    """
    if listener:
        protocol = listener.lower()
    else:
        raw = raw_listeners.lower()
        protocol = "https" if "http://" not in raw and "https://" in raw else "http"
    first = listeners[0]
    matching = next((li for li in listeners if li[0] == protocol), None)
    host = first[1] or _local_address()
    if host_name:
        host = host_name
    elif matching is not None and matching[1]:
        host = matching[1]
    bound = matching[2] if matching is not None else first[2]
    return f"{protocol}://{_uri_host(host)}:{port if port is not None else bound}"


def _bind(listener: str) -> tuple[socket.socket, str, str, str, int]:
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
    # A URL this machine reaches the listener at (a wildcard: the loopback of its family).
    local = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    scheme = parts.scheme.lower()
    return sock, scheme, f"{scheme}://{_uri_host(local)}:{bound_port}", host, bound_port


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
        """The first main listener's URL on this machine, as bound (port 0 resolved)."""
        return self.listeners[0].url

    @property
    def advertised_url(self) -> str:
        """The URL other workers reach this one at (see :func:`advertised_url`)."""
        return advertised_url(
            [(li.scheme, li.host, li.port) for li in self.listeners],
            ",".join(self.config.listeners),
            self.config.rest_advertised_host_name,
            self.config.rest_advertised_port,
            self.config.rest_advertised_listener,
        )

    @property
    def admin_url(self) -> str | None:
        if self.admin_listeners:
            return self.admin_listeners[0].url
        return None if self.config.admin_listeners == [] else self.url

    @property
    def worker_id(self) -> str:
        """``host:port`` of the advertised URL, that names this worker in statuses, as
        Kafka's (an IPv6 host in brackets, as a URI's host)."""
        return self.advertised_url.split("://", 1)[1]

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
            "REST server listening on %s, advertising URL %s%s",
            ", ".join(li.url for li in self.listeners),
            self.advertised_url,
            f" (admin: {', '.join(li.url for li in self.admin_listeners)})"
            if self.admin_listeners
            else "",
        )

    def _serve(self, listener: str, app: Any) -> _Listener:
        sock, scheme, url, host, port = _bind(listener)
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
        return _Listener(url, server, thread, sock, scheme, host, port)

    def stop(self) -> None:
        for listener in self.listeners + self.admin_listeners:
            listener.server.should_exit = True
        for listener in self.listeners + self.admin_listeners:
            listener.thread.join(SHUTDOWN_GRACE_S + 5)
            listener.sock.close()
        self.listeners, self.admin_listeners = [], []
