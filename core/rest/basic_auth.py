"""HTTP Basic authentication for the REST API (Kafka's BasicAuthSecurityRestExtension).

Enable it with::

    rest.extension.classes=org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension
    rest.extension.basic.auth.credentials.file=/etc/copycat/rest-credentials.properties

The credentials file has Kafka's ``PropertyFileLoginModule`` format: a Java properties file of
``user=password`` (or ``user: password``) lines. Instead of naming it directly, a Kafka JAAS file
may be given, with ``rest.extension.basic.auth.jaas.config=/path/connect_jaas.conf`` or, as
with Kafka, ``-Djava.security.auth.login.config=...`` in ``KAFKA_OPTS``; its ``KafkaConnect``
entry's ``file="..."`` option names the credentials file.

Every request needs valid credentials except ``GET /health`` (left open on purpose so load
balancers and orchestrators can probe liveness without a secret; it reveals nothing) and, as
Kafka's ``JaasBasicAuthFilter``, the two requests only workers make,
``POST /connectors/<name>/tasks`` and ``PUT /connectors/<name>/fence``: a worker has no user's
credentials to send, and the herder checks those requests' signatures instead (KIP-507,
:mod:`core.distributed.herder_signing`; 400/403 without a valid one). A request
without them gets ``401 {"error_code": 401, "message": "User cannot access the resource."}``
and a ``WWW-Authenticate`` challenge. Passwords are compared in constant time and never logged.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.hookspecs import hookimpl
from core.properties import parse_properties
from core.worker_config import WorkerConfig
from plugin_api import ConfigException

log = logging.getLogger("copycat.rest.auth")

CREDENTIALS_FILE = "rest.extension.basic.auth.credentials.file"
JAAS_CONFIG = "rest.extension.basic.auth.jaas.config"
OPEN_ENDPOINTS = frozenset({("GET", "/health"), ("HEAD", "/health")})
UNAUTHORIZED = "User cannot access the resource."
# Kafka's JaasBasicAuthFilter.INTERNAL_REQUEST_MATCHERS (the herder verifies these instead).
INTERNAL_REQUESTS = (
    ("POST", re.compile(r"/?connectors/([^/]+)/tasks/?")),
    ("PUT", re.compile(r"/?connectors/[^/]+/fence/?")),
)
_JAAS_FILE = re.compile(r"KafkaConnect\s*\{[^}]*?\bfile\s*=\s*\"([^\"]+)\"", re.S)
_JAAS_OPTION = re.compile(r"-Djava\.security\.auth\.login\.config=(\S+)")


def credentials_file(props: Mapping[str, str]) -> Path:
    if props.get(CREDENTIALS_FILE):
        return Path(props[CREDENTIALS_FILE])
    jaas = props.get(JAAS_CONFIG)
    if not jaas:
        found = _JAAS_OPTION.search(os.environ.get("KAFKA_OPTS", ""))
        jaas = found.group(1) if found else None
    if not jaas:
        raise ConfigException(
            CREDENTIALS_FILE,
            None,
            "the basic auth REST extension needs a "
            f"credentials file ({CREDENTIALS_FILE}) or a JAAS file "
            f"({JAAS_CONFIG})",
        )
    try:
        match = _JAAS_FILE.search(Path(jaas).read_text())
    except OSError as exc:
        raise ConfigException(JAAS_CONFIG, jaas, f"cannot read it: {exc.strerror}") from None
    if match is None:
        raise ConfigException(JAAS_CONFIG, jaas, "no KafkaConnect entry with a file= option")
    return Path(match.group(1))


def load_credentials(path: Path) -> dict[str, str]:
    try:
        users = parse_properties(path.read_text(encoding="utf-8"), path)
    except OSError as exc:
        raise ConfigException(
            CREDENTIALS_FILE, str(path), f"cannot read credentials: {exc.strerror}"
        ) from None
    if not users:
        raise ConfigException(CREDENTIALS_FILE, str(path), "no users in the credentials file")
    return users


def _internal_request(method: str, path: str) -> bool:
    return any(method == m and pattern.fullmatch(path) for m, pattern in INTERNAL_REQUESTS)


class BasicAuthMiddleware:
    """ASGI middleware: 401 unless the request carries a valid ``Authorization: Basic``."""

    def __init__(self, app: Any, credentials: Mapping[str, str]) -> None:
        self.app = app
        self.credentials = {u.encode(): p.encode() for u, p in credentials.items()}

    def _authorized(self, header: bytes | None) -> bool:
        if not header or not header[:6].lower() == b"basic ":
            return False
        try:
            user, sep, password = base64.b64decode(header[6:].strip(), validate=True).partition(
                b":"
            )
        except (binascii.Error, ValueError):
            return False
        expected = self.credentials.get(user)
        # compare even for unknown users so timing does not reveal which users exist
        return (
            bool(sep)
            and hmac.compare_digest(expected or b"\0" * 32, password)
            and expected is not None
        )

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if (
            scope["type"] != "http"
            or (scope["method"], scope["path"]) in OPEN_ENDPOINTS
            or _internal_request(scope["method"], scope["path"])
        ):
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers") or []).get(b"authorization")
        if self._authorized(header):
            await self.app(scope, receive, send)
            return
        from core.rest.app import error

        response = error(401, UNAUTHORIZED, {"WWW-Authenticate": 'Basic realm="copycat"'})
        await response(scope, receive, send)


class BasicAuthSecurityRestExtension:
    """The REST extension: loads the credentials at start-up and installs the middleware."""

    credentials: dict[str, str]

    def configure(self, props: Mapping[str, str]) -> None:
        self.credentials = load_credentials(credentials_file(props))
        log.info("basic authentication enabled for the REST API (%d users)", len(self.credentials))

    @hookimpl
    def copycat_rest_extension(self, app: Any, worker_config: WorkerConfig) -> None:
        if not hasattr(self, "credentials"):
            self.configure(worker_config.originals_strings())
        app.add_middleware(BasicAuthMiddleware, credentials=self.credentials)
