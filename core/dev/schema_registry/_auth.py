"""HTTP basic authentication for the dev registry, as Confluent's offers it.

Confluent's Schema Registry with ``authentication.method=BASIC`` checks every request's
``Authorization: Basic ...`` against a JAAS realm (``authentication.realm``), typically
Jetty's ``PropertyFileLoginModule`` over a file of ``user: password[,role ...]`` lines, and
lets in only users with one of ``authentication.roles`` (default ``*``: any user it knows).
It answers a missing or wrong credential 401 with ``WWW-Authenticate: Basic realm="..."``
and a known user without an allowed role 403, both with a JSON error body
(``{"error_code": 401, "message": "Unauthorized"}``).

Here the users come from :class:`BasicAuth` (the CLI's ``--basic-auth USER:PASSWORD`` and
``--basic-auth-file``); passwords are plain text (Jetty's ``MD5:``/``CRYPT:``/``OBF:``
forms are not read). A dev server: use it over loopback or TLS in front of it.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DEFAULT_REALM", "BasicAuth", "BasicAuthError"]

DEFAULT_REALM = "SchemaRegistry"


class BasicAuthError(ValueError):
    """A user list that cannot be read (names the line or the argument at fault)."""


@dataclass(frozen=True)
class BasicAuth:
    """Who may use the registry.

    Attributes:
        users: user -> password.
        roles: user -> the roles the user has (users not in it have none).
        allowed_roles: The roles let in (Confluent's ``authentication.roles``); None (the
            default, Confluent's ``*``): every known user.
        realm: Named in ``WWW-Authenticate`` (Confluent's ``authentication.realm``).
    """

    users: Mapping[str, str]
    roles: Mapping[str, frozenset[str]] = field(default_factory=dict)
    allowed_roles: frozenset[str] | None = None
    realm: str = DEFAULT_REALM

    def __post_init__(self) -> None:
        if not self.users:
            raise BasicAuthError("basic authentication needs at least one user")

    @classmethod
    def from_pairs(
        cls,
        pairs: Iterable[str],
        *,
        allowed_roles: Iterable[str] | None = None,
        realm: str = DEFAULT_REALM,
    ) -> BasicAuth:
        """From ``USER:PASSWORD`` strings (split at the first colon), users without roles."""
        users: dict[str, str] = {}
        for pair in pairs:
            user, sep, password = pair.partition(":")
            if not sep or not user:
                raise BasicAuthError(f"expected USER:PASSWORD, got {user or pair!r} without ':'")
            users[user] = password
        return cls(users, allowed_roles=_roles(allowed_roles), realm=realm)

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        *,
        extra: Iterable[str] = (),
        allowed_roles: Iterable[str] | None = None,
        realm: str = DEFAULT_REALM,
    ) -> BasicAuth:
        """From a Jetty ``PropertyFileLoginModule`` file: ``user: password[,role ...]`` per
        line, ``#`` comments; ``extra``: more ``USER:PASSWORD`` pairs (no roles)."""
        users: dict[str, str] = {}
        roles: dict[str, frozenset[str]] = {}
        text = Path(path).read_text(encoding="utf-8")
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith(("#", "!")):
                continue
            user, sep, rest = line.partition(":")
            if not sep or not user.strip():
                raise BasicAuthError(
                    f"{path}:{number}: expected 'user: password[,role ...]', got no ':'"
                )
            password, *user_roles = (part.strip() for part in rest.split(","))
            users[user.strip()] = password
            roles[user.strip()] = frozenset(r for r in user_roles if r)
        more = cls.from_pairs(extra).users if extra else {}
        return cls({**users, **more}, roles, _roles(allowed_roles), realm)

    def check(self, authorization: str | None) -> int | None:
        """None if the ``Authorization`` header lets the request in, else 401 or 403."""
        if not authorization:
            return 401
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "basic":
            return 401
        try:
            decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return 401
        user, sep, password = decoded.partition(":")
        expected = self.users.get(user)
        # compare_digest even for an unknown user, so the answer takes as long either way
        matches = hmac.compare_digest(
            (expected if expected is not None else "\0" + password).encode(), password.encode()
        )
        if not sep or expected is None or not matches:
            return 401
        if self.allowed_roles is not None and not (
            self.roles.get(user, frozenset()) & self.allowed_roles
        ):
            return 403
        return None


def _roles(allowed: Iterable[str] | None) -> frozenset[str] | None:
    if allowed is None:
        return None
    roles = frozenset(r.strip() for r in allowed if r.strip())
    return None if not roles or "*" in roles else roles
