"""Kafka's content negotiation: its resources are Jersey ``@Produces(APPLICATION_JSON)`` and,
but for the root and internal ones, ``@Consumes(APPLICATION_JSON)`` (Copycat exempts the root
only: docs/rest.md).

Jersey picks a resource method by path (404), then HTTP method (405), then the request's
``Content-Type`` against ``@Consumes`` (415), then its ``Accept`` against ``@Produces`` (406),
all before the body is read. Copycat's routes check the last two in that order, after routing
and before a handler reads the body (``core.rest.app``). Both answers are Kafka's error shape,
``{"error_code": 415, "message": "HTTP 415 Unsupported Media Type"}``.
"""

from __future__ import annotations

__all__ = ["not_acceptable", "unsupported_content_type"]

_JSON = ("application", "json")


def _media_type(value: str) -> tuple[str, str] | None:
    """``("type", "subtype")`` of a media type or range, lower case, without parameters."""
    essence = value.split(";", 1)[0].strip().lower()
    if essence == "*":  # what Java's HttpURLConnection sends ("*; q=.2"); Jersey reads */*
        return ("*", "*")
    kind, slash, subtype = essence.partition("/")
    return (kind.strip(), subtype.strip()) if slash and kind and subtype else None


def unsupported_content_type(content_type: str | None, *, body: bool) -> bool:
    """415: a ``Content-Type`` other than application/json (any case, any parameters).

    Jersey checks a given one on every method of a ``@Consumes`` resource, a GET included.
    Without one, it reads a ``body`` as application/octet-stream, which its JSON provider
    refuses (415 too); an empty body, or one an endpoint does not read, is no entity at all.
    """
    if content_type is None:
        return body
    return _media_type(content_type) != _JSON


def not_acceptable(accept: str | None) -> bool:
    """406: an ``Accept`` header none of whose ranges matches application/json.

    As Jersey: quality factors are not weighed (``application/json;q=0`` is still served
    JSON), and a missing or empty header accepts anything.
    """
    if accept is None or not accept.strip():
        return False
    for item in accept.split(","):
        media = _media_type(item)
        if media is not None and media[0] in ("*", "application") and media[1] in ("*", "json"):
            return False
    return True


def _quality(item: str) -> float:
    """The ``q`` parameter of one ``Accept`` range (1 without one, 0 when unreadable)."""
    for param in item.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "q":
            try:
                return float(value.strip())
            except ValueError:
                return 0.0
    return 1.0


def not_acceptable_text(accept: str | None) -> bool:
    """406 for a text/plain answer (``GET /metrics``, Copycat's own): an ``Accept`` header
    none of whose ranges matches text/plain (Prometheus asks for
    ``text/plain;version=0.0.4`` among others), or whose most specific range that matches
    refuses it with ``q=0`` (RFC 9110 12.5.1: ``text/plain;q=0, */*`` refuses text)."""
    if accept is None or not accept.strip():
        return False
    best: tuple[int, float] | None = None  # (specificity, quality) of the best match
    for item in accept.split(","):
        media = _media_type(item)
        if media is None or media[0] not in ("*", "text") or media[1] not in ("*", "plain"):
            continue
        specificity = (media[0] != "*") + (media[1] != "*")
        if best is None or specificity > best[0]:
            best = (specificity, _quality(item))
        elif specificity == best[0]:
            best = (specificity, max(best[1], _quality(item)))
    return best is None or best[1] <= 0
