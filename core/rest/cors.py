"""Cross-origin requests and configured response headers on the main REST listeners.

As Kafka's RestServer sets them up (Jetty's CrossOriginHandler, then its HeaderFilter):

* ``access.control.allow.origin`` turns CORS on. Every response then says ``Vary: Origin``.
  A request whose ``Origin`` matches a pattern gets ``Access-Control-Allow-Origin`` (its own
  origin) and ``Access-Control-Allow-Credentials: true``; a preflight (``OPTIONS`` with
  ``Access-Control-Request-Method``) gets the allowed methods
  (``access.control.allow.methods``, default GET, POST, HEAD), ``Content-Type`` as the
  allowed header and a max age of 60 s too. Other origins get no CORS headers. Preflights go
  on to the routes, as Kafka delivers them to Jersey (so authentication still applies).
* ``OPTIONS`` on a path of the API answers 200 with an ``Allow`` header, and ``HEAD`` on a
  path a GET serves answers as that GET without its body, as Jersey does.
* ``response.http.headers.config`` rules apply to every response.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from email.utils import formatdate
from re import Pattern

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from core.http_headers import HeaderRule

DEFAULT_METHODS = ("GET", "POST", "HEAD")
PREFLIGHT_MAX_AGE_S = 60


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _with_headers(send: Send, update: list[tuple[bytes, bytes]], replace: set[bytes]) -> Send:
    """``send`` with ``update`` in the response start: headers named in ``replace`` first
    lose any value the app gave them."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            kept = [(k, v) for k, v in message.get("headers", ()) if k.lower() not in replace]
            message["headers"] = kept + update
        await send(message)

    return sending


class CrossOrigin:
    """ASGI middleware: Jetty's CrossOriginHandler as Kafka configures it."""

    def __init__(self, app: ASGIApp, origins: Sequence[Pattern[str]], methods: str) -> None:
        self.app = app
        self.origins = list(origins)
        allowed = [m.strip() for m in methods.split(",") if m.strip()] or list(DEFAULT_METHODS)
        self.methods = ",".join(allowed).encode()

    def _allowed(self, origin: str) -> bool:
        return any(
            pattern.fullmatch(candidate)
            for candidate in origin.split(" ")
            if candidate
            for pattern in self.origins
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = [(b"vary", b"Origin")]
        origin = _header(scope, b"origin")
        if origin is not None and self._allowed(origin):
            headers += [
                (b"access-control-allow-origin", origin.encode("latin-1")),
                (b"access-control-allow-credentials", b"true"),
            ]
            preflight = scope["method"] == "OPTIONS" and (
                _header(scope, b"access-control-request-method") is not None
            )
            if preflight:
                headers += [
                    (b"access-control-allow-methods", self.methods),
                    (b"access-control-allow-headers", b"Content-Type"),
                    (b"access-control-max-age", str(PREFLIGHT_MAX_AGE_S).encode()),
                ]
        names = {name for name, _ in headers if name != b"vary"}
        await self.app(scope, receive, _with_headers(send, headers, names))


class ResponseHeaders:
    """ASGI middleware: the ``response.http.headers.config`` rules, on every response."""

    def __init__(self, app: ASGIApp, rules: Sequence[HeaderRule]) -> None:
        self.app = app
        self.rules = list(rules)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        update: list[tuple[bytes, bytes]] = []
        replace: set[bytes] = set()
        for rule in self.rules:
            name = rule.name.lower().encode("latin-1")
            value = rule.value
            if rule.date:
                value = formatdate(time.time() + int(value) / 1000, usegmt=True)
            if not rule.add:
                replace.add(name)
                update = [(k, v) for k, v in update if k != name]
            update.append((name, value.encode("latin-1")))
        await self.app(scope, receive, _with_headers(send, update, replace))


class AnswerOptions:
    """ASGI middleware: ``OPTIONS`` on a path some route serves is answered 200 with the
    methods it allows (Jersey's automatic OPTIONS); other paths go on to a 404."""

    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "OPTIONS":
            await self.app(scope, receive, send)
            return
        methods: set[str] = set()
        for route in self.routes:
            match, _ = route.matches(scope)
            if match is not Match.NONE:
                methods |= set(getattr(route, "methods", None) or ())
        if not methods:
            await self.app(scope, receive, send)
            return
        methods |= {"OPTIONS"} | ({"HEAD"} if "GET" in methods else set())
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"allow", ",".join(sorted(methods)).encode()),
                    (b"content-length", b"0"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


class AnswerHead:
    """ASGI middleware: ``HEAD`` on a path some ``GET`` route serves is that ``GET``, answered
    with its status and headers (``Content-Length`` included) and no body, as Jersey answers
    HEAD on every GET resource (load balancers probe with HEAD). Other paths go on as they
    are (a 405 where only other methods are served, a 404 where nothing is)."""

    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        as_get = {**scope, "method": "GET"}
        if not any(route.matches(as_get)[0] is Match.FULL for route in self.routes):
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app(as_get, receive, headers_only)
