"""HTTP Basic authentication for the REST API (Kafka's BasicAuthSecurityRestExtension).

Enable it with::

    rest.extension.classes=org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension
    rest.extension.basic.auth.credentials.file=/etc/copycat/rest-credentials.properties

The credentials file has Kafka's ``PropertyFileLoginModule`` format: a Java properties file of
``user=password`` (or ``user: password``) lines. Instead of naming it directly, a Kafka JAAS file
may be given, with ``rest.extension.basic.auth.jaas.config=/path/connect_jaas.conf`` or, as
with Kafka, ``-Djava.security.auth.login.config=...`` in ``KAFKA_OPTS``. It is read as Java's
``ConfigFile`` reads it (comments, entries by whole name, ``module flag key=value ...;``,
quoted values); its ``KafkaConnect`` entry must hold one ``PropertyFileLoginModule``, whose
``file="..."`` option names the credentials file (Copycat runs no other login module).

Every request needs valid credentials except ``GET``/``HEAD /health`` (left open on purpose so load
balancers and orchestrators can probe liveness without a secret; it reveals nothing) and, as
Kafka's ``JaasBasicAuthFilter``, the two requests only workers make,
``POST /connectors/<name>/tasks`` and ``PUT /connectors/<name>/fence``: a worker has no user's
credentials to send, and the herder checks those requests' signatures instead (KIP-507,
:mod:`core.distributed.herder_signing`; 400/403 without a valid one). A request
without them gets ``401 {"error_code": 401, "message": "User cannot access the resource."}``
and a ``WWW-Authenticate`` challenge (Kafka: bare text, no challenge; docs/rest.md says why).
Passwords are compared in constant time and never logged. A credentials file without users
stops the worker (Kafka would let everyone in).
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

from core.client_security import JaasEntry, JaasTokens
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
_JAAS_OPTION = re.compile(r"-Djava\.security\.auth\.login\.config=(\S+)")
# The JAAS entry Kafka's JaasBasicAuthFilter logs in with, and the one login module Copycat
# implements (its ``file`` option names the credentials file).
JAAS_ENTRY = "KafkaConnect"
PROPERTY_FILE_LOGIN_MODULE = (
    "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"
)
_CONTROL_FLAGS = frozenset({"required", "requisite", "sufficient", "optional"})


def _jaas_entries(text: str) -> dict[str, list[JaasEntry]]:
    """The entries of a JAAS login configuration file, read as Java's ``ConfigFile`` reads
    it: ``Name { module flag key=value ...; ... };`` with ``//`` and ``/* */`` comments and
    quoted values. Raises ValueError saying what it expected where."""
    tokens = JaasTokens(text, word_chars="*").tokens
    values = (JaasTokens.WORD, JaasTokens.QUOTED)
    pos = 0

    def take(what: str, kinds: tuple[str, ...] = values, char: str | None = None) -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise ValueError(f"expected {what}, read end of file")
        kind, value = tokens[pos]
        if (char is not None and (kind, value) != (JaasTokens.CHAR, char)) or (
            char is None and kind not in kinds
        ):
            # only punctuation is quoted back: a misplaced word may be another entry's secret
            shown = repr(value) if kind == JaasTokens.CHAR else f"a {kind}"
            raise ValueError(f"expected {what}, found {shown}")
        pos += 1
        return value

    def at(char: str) -> bool:
        return pos < len(tokens) and tokens[pos] == (JaasTokens.CHAR, char)

    entries: dict[str, list[JaasEntry]] = {}
    while pos < len(tokens):
        name = take("an entry name")
        take(f"'{{' after {name}", char="{")
        modules: list[JaasEntry] = []
        while not at("}"):
            module = take(f"a login module class name in {name}")
            flag = take(f"the control flag of {module}").lower()
            if flag not in _CONTROL_FLAGS:
                raise ValueError(
                    f"invalid control flag {flag!r} for {module} (required, requisite, "
                    "sufficient or optional)"
                )
            options: dict[str, str] = {}
            while not at(";"):
                key = take(f"an option of {module}, or ';' after its options")
                take(f"'=' after option {key} of {module}", char="=")
                options[key] = take(f"the value of option {key} of {module}")
            take("';'", char=";")
            modules.append(JaasEntry(module, flag, options))
        take(f"'}}' closing {name}", char="}")
        take(f"';' after the closing '}}' of {name}", char=";")
        if name in entries:
            raise ValueError(f"can not specify multiple entries for {name}")
        entries[name] = modules
    return entries


def _jaas_file(props: Mapping[str, str]) -> tuple[str, str] | None:
    """The JAAS file to read, and the key or option that named it."""
    if props.get(JAAS_CONFIG):
        return props[JAAS_CONFIG], JAAS_CONFIG
    # The last of several -D options of one property wins, as in the JVM.
    found = _JAAS_OPTION.findall(os.environ.get("KAFKA_OPTS", ""))
    if found:
        # "==" (only this file) reads the same file here
        return found[-1].lstrip("="), "-Djava.security.auth.login.config (KAFKA_OPTS)"
    return None


def credentials_file(props: Mapping[str, str]) -> Path:
    """The credentials file: ``rest.extension.basic.auth.credentials.file``, else the ``file``
    option of the ``KafkaConnect`` entry's PropertyFileLoginModule in the JAAS file."""
    if props.get(CREDENTIALS_FILE):
        return Path(props[CREDENTIALS_FILE])
    named = _jaas_file(props)
    if named is None:
        raise ConfigException(
            "The basic auth REST extension needs the users' credentials: set "
            f"{CREDENTIALS_FILE}=<path> to a properties file of user=password lines, or "
            f"{JAAS_CONFIG}=<path> (or -Djava.security.auth.login.config=<path> in "
            f"KAFKA_OPTS) to a JAAS file whose {JAAS_ENTRY} entry is "
            f'{PROPERTY_FILE_LOGIN_MODULE} required file="<path>";'
        )
    jaas, key = named

    def refuse(reason: str) -> ConfigException:
        return ConfigException(
            JAAS_CONFIG, jaas, reason if key == JAAS_CONFIG else f"{key}: {reason}"
        )

    try:
        text = Path(jaas).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise refuse(f"cannot read it: {reason}") from None
    try:
        entries = _jaas_entries(text)
    except ValueError as exc:
        raise refuse(f"not a valid JAAS file: {exc}") from None
    modules = entries.get(JAAS_ENTRY)
    if modules is None:
        found = ", ".join(entries) or "none"
        raise refuse(f"no {JAAS_ENTRY} entry in it (entries: {found})")
    if len(modules) != 1:
        raise refuse(
            f"its {JAAS_ENTRY} entry has {len(modules)} login modules; Copycat supports "
            f"exactly one, {PROPERTY_FILE_LOGIN_MODULE}"
        )
    module = modules[0]
    if module.login_module != PROPERTY_FILE_LOGIN_MODULE:
        raise refuse(
            f"login module {module.login_module} in its {JAAS_ENTRY} entry is not supported: "
            f"Copycat's basic auth extension implements only {PROPERTY_FILE_LOGIN_MODULE} "
            f"(or set {CREDENTIALS_FILE})"
        )
    file = module.options.get("file", "")
    if not file.strip():
        raise refuse(
            f'{PROPERTY_FILE_LOGIN_MODULE} in its {JAAS_ENTRY} entry has no file="<path>" '
            "option (Kafka: Property Credentials file must be specified)"
        )
    return Path(file)


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
