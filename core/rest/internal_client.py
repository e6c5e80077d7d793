"""The HTTP client of a worker's requests to other workers (distributed mode): REST forwarding
to the leader, a follower's task configs, fencing requests.

One thread-safe client per herder (a client per request left SSLContexts in cycles only a full
garbage collection frees). ``https://`` URLs go through a TLS context built, as Kafka's
RestClient builds its own, from the worker's ``listeners.https.ssl.*`` keys, or its top-level
``ssl.*`` keys when it has no such key (:func:`core.rest.tls.client_ssl_context`): the
truststore verifies the other worker, the keystore is the client certificate a listener with
``ssl.client.auth=required`` asks for. Kafka builds that context only for ``https://`` URLs, so
does this client, at its first such request: a worker whose cluster is plain HTTP never reads
TLS material its Kafka clients alone use. Bad TLS settings fail that request as an
:class:`httpx.ConnectError` naming the key, which every caller already handles.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

import httpx

from core.rest.tls import client_ssl_context
from plugin_api import ConfigException

__all__ = ["internal_client"]


class _HttpsTransport(httpx.BaseTransport):
    """An :class:`httpx.HTTPTransport` over the worker's client TLS context, made at first use."""

    def __init__(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)
        self._lock = threading.Lock()
        self._transport: httpx.HTTPTransport | None = None

    def _get(self, request: httpx.Request) -> httpx.HTTPTransport:
        with self._lock:
            if self._transport is None:
                try:
                    context = client_ssl_context(self._props)
                except ConfigException as exc:
                    raise httpx.ConnectError(
                        f"TLS settings for requests to other workers: {exc}", request=request
                    ) from exc
                self._transport = httpx.HTTPTransport(verify=context)
            return self._transport

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._get(request).handle_request(request)

    def close(self) -> None:
        with self._lock:
            if self._transport is not None:
                self._transport.close()
                self._transport = None


def internal_client(props: Mapping[str, str]) -> httpx.Client:
    """A client for requests to other workers, TLS from the worker's properties ``props``."""
    return httpx.Client(mounts={"https://": _HttpsTransport(props)})
