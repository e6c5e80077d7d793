"""The REST request body limit (``rest.request.max.bytes``): 413 before a large body is read.

Without it a 50 MB connector config was read, parsed, stored and served back, and the
worker's memory grew from 71 to 451 MB. The check is an ASGI middleware placed outside
everything else, REST extensions included, so no handler, authentication or JSON parsing
sees a body over the limit:

* a ``Content-Length`` over the limit is answered at once, without reading the body;
* a body without a length (chunked) is read up to the limit and answered 413 as soon as it
  goes over; one within the limit is handed on to the app unchanged.

The answer is Kafka's error shape, ``{"error_code": 413, "message": ...}``. The connection is
not closed with it: uvicorn drops whatever of the body still arrives once a response is
complete, without keeping it. Closing at once made the kernel reset the connection while the
client was still sending, and clients then saw "connection reset" instead of the 413.
uvicorn calls the middleware on its event loop thread, once per request.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

REQUEST_MAX_BYTES_KEY = "rest.request.max.bytes"


class BodySizeLimit:
    """ASGI middleware answering 413 for request bodies over ``max_bytes``."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._reject(send, f"{declared} bytes")
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: nothing to answer
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._reject(send, f"more than {self.max_bytes} bytes")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: http.disconnect, as uvicorn sends it

        await self.app(scope, replay, send)

    async def _reject(self, send: Send, size: str) -> None:
        payload = json.dumps(
            {
                "error_code": 413,
                "message": f"Request body of {size} is larger than {REQUEST_MAX_BYTES_KEY}="
                f"{self.max_bytes} bytes",
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # malformed: the server rejects it, or the body is counted
    return None
