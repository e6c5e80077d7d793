"""``/connectors/`` served as ``/connectors``, as Kafka Connect serves it.

Jersey matches a resource path with or without one trailing slash (its path patterns end in
an optional ``/``), so Kafka answers ``GET /connectors/`` with the list and ``POST
/connectors/`` creates. Starlette instead answered a 307 redirect with an empty body: no error
shape, and curl without ``-L`` (or a client that does not resend a POST body) saw nothing.

An ASGI middleware outside the REST extensions, so authentication sees the path the routes
see (``/health/`` is as open as ``/health``). Only one slash goes: ``/connectors//`` stays
unknown (404; Kafka's Jetty answers 400 to the empty segment), and ``/`` is left alone.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["TrailingSlash"]


class TrailingSlash:
    """ASGI middleware dropping one trailing ``/`` from every HTTP request path but ``/``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] == "http" and len(path) > 1 and path.endswith("/"):
            scope = {**scope, "path": path[:-1]}
            raw: bytes | None = scope.get("raw_path")
            if raw is not None and raw.endswith(b"/"):
                scope["raw_path"] = raw[:-1]
        await self.app(scope, receive, send)
