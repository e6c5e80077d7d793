"""A small, caching client for the Confluent Schema Registry REST API.

Only what a converter needs: register, look up, fetch by id and fetch the latest
version of a subject. Ids and schemas never change once assigned, so every answer
is cached for the life of the client (including "this id has no version under that
subject"); only "latest version" is fetched each time it is asked for (the converter
caches it for ``latest.cache.ttl.sec``).

Errors::

    ConnectException
     ├── RetriableException   the registry could not be reached, timed out or answered 5xx
     └── DataException        the registry refused the request (4xx), e.g. 409 incompatible
                              schema, 401/403 wrong or missing credentials; the message names
                              the registry URL, the subject and the status, and quotes the
                              registry

Only 40401 (no such subject) and 40403 (no such schema) mean "not registered" to
:meth:`SchemaRegistryClient.version_of`, as to Confluent's client; any other refusal (401,
403, 422 ...) is an error and nothing is cached for it.

Requests are not logged one line each: httpx logs every request at INFO ("HTTP Request: POST
... 409 Conflict"), which in a plugin host made a line per record a registry refused.
Confluent's client logs none; the records httpx logs below WARNING while this client makes
a request are dropped (a filter on the ``httpx`` logger, for this client's requests only:
the process's logging configuration and other httpx clients' lines stay as they are).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import httpx

from plugin_api import DataException, RetriableException

__all__ = ["RegisteredSchema", "SchemaRegistryClient", "SchemaRegistryError"]

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
SUBJECT_NOT_FOUND = 40401
SCHEMA_NOT_FOUND = 40403

# Per request. A registry answers in milliseconds; the bound only keeps a task from
# hanging on a registry that accepted the connection but never answers.
DEFAULT_TIMEOUT_S = 30.0


class _QuietRegistryRequests(logging.Filter):
    """Drops what httpx logs below WARNING in a thread while it makes a registry request."""

    def __init__(self) -> None:
        super().__init__()
        self._local = threading.local()

    @contextmanager
    def requesting(self) -> Iterator[None]:
        self._local.active = True
        try:
            yield
        finally:
            self._local.active = False

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or not getattr(self._local, "active", False)


_QUIET = _QuietRegistryRequests()
logging.getLogger("httpx").addFilter(_QUIET)


class SchemaRegistryError(DataException):
    """The registry answered with an error body.

    Named as Confluent's client's ``RestClientException`` in traces and dead letter queue
    headers (``KAFKA_CLASS_ALIASES``): the converter raises Kafka's ConfigException or
    DataException over it, as Confluent's converter does.

    Attributes:
        status: The HTTP status code.
        error_code: Confluent's ``error_code`` (e.g. 40401, 409, 42201).
        subject: The subject the request was about, if any.
    """

    KAFKA_CLASS_ALIASES = (
        "io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException",
    )

    def __init__(
        self, message: str, status: int, error_code: int | None, subject: str | None
    ) -> None:
        """Create the error."""
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.subject = subject


@dataclass(frozen=True, slots=True)
class RegisteredSchema:
    """A schema as the registry stores it under a subject."""

    subject: str
    version: int
    id: int
    schema: str


def _strip_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """The URL without its user-info, and the user-info's credentials percent-decoded (as
    Confluent's URL credential source decodes them: ``p%40ss`` is ``p@ss``)."""
    parts = urlsplit(url)
    if parts.username is None:
        return url.rstrip("/"), None
    netloc = parts.netloc.rpartition("@")[2]
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)).rstrip("/")
    return clean, (unquote(parts.username), unquote(parts.password or ""))


class SchemaRegistryClient:
    """Talks to one or more registry URLs (tried in order when one cannot be reached)."""

    def __init__(
        self,
        urls: Sequence[str],
        auth: tuple[str, str] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """Create the client.

        Args:
            urls: Base URLs; credentials in a URL's user-info are used if ``auth`` is None.
            auth: Basic-auth ``(user, password)``.
            timeout_s: Per-request timeout.
            transport: An httpx transport (tests pass a mock).
        """
        if not urls:
            raise ValueError("at least one schema registry URL is required")
        cleaned = [_strip_userinfo(u.strip()) for u in urls]
        self._urls = [u for u, _ in cleaned]
        auth = auth or next((a for _, a in cleaned if a is not None), None)
        self._http = httpx.Client(
            auth=httpx.BasicAuth(*auth) if auth else None,
            timeout=timeout_s,
            headers={"Accept": CONTENT_TYPE, "Content-Type": CONTENT_TYPE},
            transport=transport,
        )
        self._ids: dict[tuple[str, str], int] = {}
        self._schemas: dict[int, str] = {}
        # (subject, id) -> version, or None: the registry said the id is not under the subject
        self._versions: dict[tuple[str, int], int | None] = {}

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    # -- API -------------------------------------------------------------------------------

    def register(self, subject: str, schema: str) -> int:
        """Register ``schema`` under ``subject`` (idempotent) and return its id.

        Raises:
            SchemaRegistryError: 409 if incompatible with the subject's existing versions,
                422 if the schema is invalid.
            RetriableException: If no registry could be reached.
        """
        key = (subject, schema)
        cached = self._ids.get(key)
        if cached is not None:
            return cached
        body = self._request(
            "POST", f"/subjects/{quote(subject, safe='')}/versions", {"schema": schema}, subject
        )
        schema_id = int(body["id"])
        self._ids[key] = schema_id
        self._schemas.setdefault(schema_id, schema)
        return schema_id

    def lookup(self, subject: str, schema: str, deleted: bool = False) -> RegisteredSchema:
        """Return the registered version of ``schema`` under ``subject`` (``deleted``: a
        soft-deleted version too, as Confluent's client looks versions up).

        Raises:
            SchemaRegistryError: 40401 (subject) or 40403 (schema) if not registered.
        """
        query = "?deleted=true" if deleted else ""
        body = self._request(
            "POST", f"/subjects/{quote(subject, safe='')}{query}", {"schema": schema}, subject
        )
        found = RegisteredSchema(
            subject, int(body["version"]), int(body["id"]), body.get("schema", schema)
        )
        if not deleted:  # an id to write with is never a soft-deleted version's
            self._ids[(subject, schema)] = found.id
        self._versions[(subject, found.id)] = found.version
        return found

    def lookup_id(self, subject: str, schema: str) -> int:
        """Return the id of an already registered schema (cached)."""
        cached = self._ids.get((subject, schema))
        return cached if cached is not None else self.lookup(subject, schema).id

    def version_of(self, subject: str, schema_id: int, schema: str) -> int | None:
        """Return the version ``schema_id`` has under ``subject``, or None if it has none.

        Both answers are cached, so each (subject, id) costs at most one request: "not
        registered" (40401 no such subject, 40403 the schema is not under it) is as final as
        a version, ids and versions never changing once assigned.

        Raises:
            SchemaRegistryError: Any other refusal, e.g. 401/403 (wrong or missing
                credentials); nothing is cached then.
            RetriableException: If no registry could be reached (nothing is cached then).
        """
        key = (subject, schema_id)
        try:
            return self._versions[key]
        except KeyError:
            pass
        try:
            # Soft-deleted versions too (Confluent's getVersion looks up with deleted=true):
            # records written before a version was soft-deleted still carry it.
            found = self.lookup(subject, schema, deleted=True)
        except SchemaRegistryError as exc:
            if exc.error_code not in (SUBJECT_NOT_FOUND, SCHEMA_NOT_FOUND):
                raise  # 401/403 and the like say nothing about the version: never cached
            self._versions[key] = None
            return None
        if found.id != schema_id:  # the same text registered under another id: not this one
            self._versions[key] = None
        return self._versions.get(key)

    def schema_by_id(self, schema_id: int) -> str:
        """Return the schema text with ``schema_id`` (cached).

        Raises:
            SchemaRegistryError: 40403 if no schema has that id.
        """
        cached = self._schemas.get(schema_id)
        if cached is None:
            body = self._request("GET", f"/schemas/ids/{schema_id}", None, None)
            cached = self._schemas[schema_id] = str(body["schema"])
        return cached

    def latest(self, subject: str) -> RegisteredSchema:
        """Return the latest version registered under ``subject``."""
        body = self._request(
            "GET", f"/subjects/{quote(subject, safe='')}/versions/latest", None, subject
        )
        found = RegisteredSchema(
            subject, int(body["version"]), int(body["id"]), str(body["schema"])
        )
        self._schemas.setdefault(found.id, found.schema)
        self._versions[(subject, found.id)] = found.version
        return found

    # -- plumbing --------------------------------------------------------------------------

    def _request(self, method: str, path: str, payload: Any, subject: str | None) -> dict[str, Any]:
        last_error: Exception | None = None
        for base in self._urls:
            try:
                with _QUIET.requesting():
                    response = self._http.request(
                        method,
                        base + path,
                        content=json.dumps(payload) if payload is not None else None,
                    )
            except httpx.TransportError as exc:
                last_error = exc
                continue
            if response.status_code < 400:
                result: dict[str, Any] = response.json()
                return result
            raise self._error(base, response, subject)
        raise RetriableException(
            f"Could not reach the schema registry at {', '.join(self._urls)}: {last_error}"
        ) from last_error

    @staticmethod
    def _error(base: str, response: httpx.Response, subject: str | None) -> Exception:
        try:
            body = response.json()
            message = str(body.get("message", response.text))
            error_code = body.get("error_code")
        except (ValueError, AttributeError):
            message, error_code = response.text, None
        about = f" for subject {subject!r}" if subject else ""
        status = response.status_code
        text = f"Schema registry at {base} rejected the request{about} (HTTP {status}"
        text += (
            f", error code {error_code}): {message}" if error_code is not None else f"): {message}"
        )
        if status in (401, 403):  # not transient: the same credentials get the same answer
            text += (
                " (check the converter's basic.auth.credentials.source and "
                "basic.auth.user.info, or the user-info of schema.registry.url)"
            )
        if status >= 500:
            return RetriableException(text)
        return SchemaRegistryError(text, response.status_code, error_code, subject)
