"""Forwarding a request to the worker that can serve it (distributed mode), as Kafka does.

A herder raises :class:`~core.herder.NotLeaderError` with the URL of the worker that can apply
the request (the leader; the leader itself names the worker that runs a connector or task);
this module repeats the request there, with Kafka's hidden ``forward`` query parameter:

* a user's request has none: the first worker forwards it with ``forward=true``, which allows
  one more hop (a follower -> the leader -> the owner of a task);
* ``forward=true`` arriving: forward again, with ``forward=false``;
* ``forward=false`` arriving and still not the right worker: 409, "Cannot complete request
  because of a conflicting operation (e.g. worker rebalance)": within two hops the target
  should have been found, so the group must have changed under the request.

No leader known (a rebalance is under way): 409 "Cannot complete request momentarily due to
no known leader URL...". The answer of the worker that served the request is passed back as
it is (status, body), but a ``Location`` is this worker's: Kafka's ConnectorsResource builds it
from the URI the client called, not from the other worker's address. Runs on a REST threadpool
thread; waits up to Kafka's 90-second request timeout. Requests go through the herder's own
client (``internal_http``, see :func:`use_client`), never a client made per request.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
from fastapi import FastAPI, Request, Response
from starlette.concurrency import run_in_threadpool

from core.herder import NotLeaderError

__all__ = ["FORWARD_PARAM", "forward", "use_client"]

log = logging.getLogger("copycat.rest.forwarding")

FORWARD_PARAM = "forward"
# Kafka's REST request timeout, for the hop as for the request.
FORWARD_TIMEOUT_S = 90.0
NO_LEADER = (
    "Cannot complete request momentarily due to no known leader URL, likely because a "
    "rebalance was underway."
)
TOO_MANY_HOPS = "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"
# Request headers the next worker needs to treat the request as the user's.
_PASSED_HEADERS = ("content-type", "accept", "authorization")


def use_client(app: FastAPI, client: httpx.Client | None) -> None:
    """Forward the requests ``app`` cannot serve through ``client`` (the herder's; None for a
    herder that never names another worker)."""
    app.state.forwarding_client = client


async def forward(
    request: Request, exc: NotLeaderError, error: Callable[[int, str], Response]
) -> Response:
    """Repeat ``request`` at ``exc.leader_url``; ``error(status, message)`` builds our errors."""
    raw = request.query_params.get(FORWARD_PARAM)
    hop = None if raw is None else raw.strip().lower() == "true"
    if hop is False:
        return error(409, TOO_MANY_HOPS)
    if not exc.leader_url:
        return error(409, NO_LEADER)
    client: httpx.Client | None = getattr(request.app.state, "forwarding_client", None)
    if client is None:
        return error(500, f"this worker cannot forward requests (to {exc.leader_url})")
    url = exc.leader_url.rstrip("/") + _raw_path(request)
    params: list[tuple[str, str | int | float | bool | None]] = [
        (k, v) for k, v in request.query_params.multi_items() if k != FORWARD_PARAM
    ]
    params.append((FORWARD_PARAM, "true" if hop is None else "false"))
    headers = {k: request.headers[k] for k in _PASSED_HEADERS if k in request.headers}
    body = await request.body()
    try:
        answer = await run_in_threadpool(
            client.request,
            request.method,
            url,
            params=params,
            content=body,
            headers=headers,
            timeout=FORWARD_TIMEOUT_S,
        )
    except httpx.HTTPError as err:
        log.warning("forwarding %s %s to %s failed: %s", request.method, request.url.path, url, err)
        return error(500, f"IO Error trying to forward REST request: {type(err).__name__}: {err}")
    returned = {}
    if "location" in answer.headers:
        returned["location"] = _here(request, answer.headers["location"])
    return Response(
        content=answer.content,
        status_code=answer.status_code,
        headers=returned,
        media_type=answer.headers.get("content-type"),
    )


def _here(request: Request, location: str) -> str:
    """``location`` (another worker's ``Location``) on the base URI of ``request``."""
    parts = urlsplit(location)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    return str(request.base_url).rstrip("/") + path


def _raw_path(request: Request) -> str:
    """The path as the client encoded it: a connector name's ``%``, ``?`` or ``/`` must
    reach the next worker encoded as they came (the decoded path, re-sent, named another
    connector: ``a%2541`` arrived as ``a%41`` and was read there as ``aA``)."""
    raw = request.scope.get("raw_path")
    if isinstance(raw, bytes) and raw:
        return raw.decode("latin-1").split("?", 1)[0]
    return request.url.path
