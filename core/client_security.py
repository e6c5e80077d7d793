"""Java client security keys, as Kafka Connect users write them, in librdkafka's terms.

Worker and connector configs written for Kafka Connect carry the Java clients' security keys:
``sasl.jaas.config`` with a login module, truststores and keystores. librdkafka refuses them
("Java JAAS configuration is not supported", "Java TrustStores are not supported"), so
:func:`translate_security_keys` rewrites them into librdkafka's equivalents before a client is
made:

=====================================================  ========================================
Java (Kafka 4.1.1 clients)                             librdkafka
=====================================================  ========================================
``sasl.jaas.config`` with ``PlainLoginModule`` or      ``sasl.username``, ``sasl.password``
``ScramLoginModule`` (``username``/``password``)
``ssl.truststore.type=PEM`` + ``ssl.truststore.location``  ``ssl.ca.location``
``ssl.truststore.certificates`` (inline PEM)             ``ssl.ca.pem``
``ssl.keystore.type=PEM`` + ``ssl.keystore.location``      ``ssl.certificate.location`` and
                                                         ``ssl.key.location`` (one file)
``ssl.keystore.certificate.chain``, ``ssl.keystore.key``  ``ssl.certificate.pem``, ``ssl.key.pem``
``ssl.keystore.type=PKCS12`` (location, password)      ``ssl.keystore.location``/``.password``
``ssl.endpoint.identification.algorithm`` (empty)      ``ssl.endpoint.identification.algorithm``
                                                         (``none``)
=====================================================  ========================================

What has no librdkafka equivalent (OAUTHBEARER or Kerberos login modules in
``sasl.jaas.config``, JKS stores, PKCS12 truststores) is a :class:`ConfigException` naming
the key and what is supported. No message ever quotes a value of these keys: they hold
passwords.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plugin_api import ConfigException

__all__ = [
    "BROKER_SECURITY_KEYS",
    "JaasEntry",
    "parse_jaas_config",
    "translate_security_keys",
]

# ssl.*/sasl.* keys of a Kafka broker (its server.properties), often copied into a Connect
# worker file: Kafka Connect starts, logging that they are unknown; no client uses them. A
# worker accepts them and its clients drop them with a warning (core.kafka).
BROKER_SECURITY_KEYS = frozenset(
    {
        "ssl.allow.dn.changes",
        "ssl.allow.san.changes",
        "ssl.principal.mapping.rules",
        "sasl.enabled.mechanisms",
        "sasl.kerberos.principal.to.local.rules",
        "sasl.mechanism.controller.protocol",
        "sasl.mechanism.inter.broker.protocol",
        "sasl.server.callback.handler.class",
        "sasl.server.max.receive.size",
    }
)

# What a ConfigException shows instead of a secret value (Kafka shows the same for
# PASSWORD-typed keys).
HIDDEN = "[hidden]"

JAAS_CONFIG = "sasl.jaas.config"
# Login modules whose username/password options are exactly what librdkafka's sasl.username
# and sasl.password hold. Java's SASL client takes the credentials these modules put in the
# Subject whatever the mechanism, so either serves PLAIN and SCRAM-SHA-256/512 alike.
_PASSWORD_LOGIN_MODULES = frozenset(
    {
        "org.apache.kafka.common.security.plain.PlainLoginModule",
        "org.apache.kafka.common.security.scram.ScramLoginModule",
    }
)
_CONTROL_FLAGS = frozenset({"required", "requisite", "sufficient", "optional"})

# Java-only TLS tuning keys with no librdkafka counterpart; OpenSSL's defaults stand in for
# the JVM's. Dropped rather than refused: librdkafka would refuse the whole client for them.
_JAVA_ONLY_SSL_KEYS = (
    "ssl.protocol",
    "ssl.enabled.protocols",
    "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm",
    "ssl.secure.random.implementation",
    "ssl.provider",
)
# The Java store keys, dropped when the protocol uses no TLS (Java ignores them then).
_JAVA_STORE_KEYS = (
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
)
# The first bytes of a JKS store (Java's KeyStore magic number). Since Java 9 a store typed
# JKS may also be PKCS12 (DER, starting with a SEQUENCE tag), which Java reads all the same.
_JKS_MAGIC = b"\xfe\xed\xfe\xed"
_DER_SEQUENCE = 0x30


@dataclass(frozen=True)
class JaasEntry:
    """One login module of a JAAS configuration: ``<module> <flag> [key=value ...];``."""

    login_module: str
    control_flag: str
    options: dict[str, str]


class JaasTokens:
    """The tokens of a JAAS text as Kafka's JaasConfig reads them with java.io.StreamTokenizer:
    words (letters, digits, ``. - _ $``; not starting with a digit or ``.``), quoted strings
    (``"`` or ``'``, with Java's backslash escapes, ending at a newline), ``//`` and ``/* */``
    comments, and single characters (``=``, ``;``). ``word_chars`` adds word characters (Java's
    ``ConfigFile``, which reads JAAS files, adds ``*``)."""

    WORD, QUOTED, NUMBER, CHAR = "word", "quoted", "number", "char"

    def __init__(self, text: str, word_chars: str = "") -> None:
        self.tokens: list[tuple[str, str]] = []
        extra = "-_$" + word_chars
        i, n = 0, len(text)
        while i < n:
            c = text[i]
            if c <= " ":
                i += 1
            elif text.startswith("//", i):
                end = text.find("\n", i)
                i = n if end < 0 else end + 1
            elif text.startswith("/*", i):
                end = text.find("*/", i + 2)
                i = n if end < 0 else end + 2
            elif c in "\"'":
                i = self._quoted(text, i + 1, c)
            elif c.isdigit() or c == ".":
                j = i
                while j < n and (text[j].isdigit() or text[j] == "."):
                    j += 1
                self.tokens.append((self.NUMBER, text[i:j]))
                i = j
            elif c.isalpha() or c in extra or ord(c) >= 128 + 32:
                j = i
                while j < n and (
                    text[j].isalnum() or text[j] in "." + extra or ord(text[j]) >= 160
                ):
                    j += 1
                self.tokens.append((self.WORD, text[i:j]))
                i = j
            else:
                self.tokens.append((self.CHAR, c))
                i += 1

    _ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}

    def _quoted(self, text: str, i: int, quote: str) -> int:
        out: list[str] = []
        n = len(text)
        while i < n and text[i] != quote and text[i] not in "\n\r":
            c = text[i]
            if c == "\\" and i + 1 < n:
                nxt = text[i + 1]
                if nxt in "01234567":
                    j = i + 1
                    limit = i + (4 if nxt <= "3" else 3)
                    while j < min(limit, n) and text[j] in "01234567":
                        j += 1
                    out.append(chr(int(text[i + 1 : j], 8)))
                    i = j
                    continue
                out.append(self._ESCAPES.get(nxt, nxt))
                i += 2
                continue
            out.append(c)
            i += 1
        self.tokens.append((self.QUOTED, "".join(out)))
        return i + 1 if i < n and text[i] == quote else i


def parse_jaas_config(text: str) -> list[JaasEntry]:
    """The login modules of a JAAS configuration, read as Kafka's ``JaasConfig`` reads
    ``sasl.jaas.config``.

    Raises:
        ValueError: the text is not valid JAAS; the message never quotes an option's value.
    """
    tokens = JaasTokens(text).tokens
    entries: list[JaasEntry] = []
    i = 0
    while i < len(tokens):
        kind, module = tokens[i]
        # Errors quote no token but an option's name: a misplaced token may be a password.
        if kind not in (JaasTokens.WORD, JaasTokens.QUOTED):
            raise ValueError("expected a login module class name")
        i += 1
        if i >= len(tokens):
            raise ValueError("login module control flag not specified")
        flag = tokens[i][1]
        if flag.lower() not in _CONTROL_FLAGS:
            raise ValueError(
                "invalid login module control flag (one of required, requisite, sufficient, "
                "optional)"
            )
        i += 1
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i] != (JaasTokens.CHAR, ";"):
            key = tokens[i][1]
            if i + 1 >= len(tokens) or tokens[i + 1] != (JaasTokens.CHAR, "="):
                raise ValueError("expected key=value options, or a semicolon")
            if i + 2 >= len(tokens) or tokens[i + 2][0] not in (JaasTokens.WORD, JaasTokens.QUOTED):
                raise ValueError(f"value not specified for key {key!r}")
            options[key] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise ValueError("entry not terminated by a semicolon")
        i += 1
        entries.append(JaasEntry(module, flag.lower(), options))
    if not entries:
        raise ValueError("login module not specified")
    return entries


def _jaas_credentials(text: str, key: str) -> tuple[str, str]:
    """username and password of the one login module in ``text`` (the value of ``key``)."""
    try:
        entries = parse_jaas_config(text)
    except ValueError as exc:
        raise ConfigException(key, HIDDEN, f"not a valid JAAS configuration: {exc}") from None
    if len(entries) != 1:
        raise ConfigException(
            key, HIDDEN, f"it holds {len(entries)} login modules; a client takes exactly one"
        )
    entry = entries[0]
    supported = " or ".join(sorted(_PASSWORD_LOGIN_MODULES))
    if entry.login_module not in _PASSWORD_LOGIN_MODULES:
        raise ConfigException(
            key,
            HIDDEN,
            f"login module {entry.login_module} is not supported by Copycat's Kafka client "
            f"(librdkafka); supported: {supported} (for PLAIN and SCRAM-SHA-256/512). For "
            "OAUTHBEARER or GSSAPI set librdkafka's sasl.oauthbearer.* or sasl.kerberos.* "
            "keys instead",
        )
    if entry.options.get("tokenauth", "").lower() == "true":
        raise ConfigException(
            key, HIDDEN, "delegation tokens (tokenauth=true) are not supported by librdkafka"
        )
    missing = [o for o in ("username", "password") if o not in entry.options]
    if missing:
        raise ConfigException(
            key, HIDDEN, f"{entry.login_module} needs the option(s) {', '.join(missing)}"
        )
    return entry.options["username"], entry.options["password"]


def _store_type(settings: MutableMapping[str, Any], key: str) -> str:
    """The store type Java would use for ``key`` (``ssl.truststore.type`` and the like):
    upper case, JKS when unset as in Java."""
    return str(settings.get(key) or "JKS").strip().upper()


def _is_jks(location: str) -> bool:
    """Whether the file is a real JKS store (a store typed JKS may hold PKCS12 since Java 9);
    an unreadable file is left to librdkafka, which names it."""
    try:
        with Path(location).open("rb") as file:
            head = file.read(4)
    except OSError:
        return False
    return head == _JKS_MAGIC or (bool(head) and head[0] != _DER_SEQUENCE)


def _translate_truststore(settings: MutableMapping[str, Any]) -> None:
    kind = _store_type(settings, "ssl.truststore.type")
    location = settings.pop("ssl.truststore.location", None)
    certificates = settings.pop("ssl.truststore.certificates", None)
    settings.pop("ssl.truststore.type", None)
    # A PEM truststore has no password (Java refuses one); librdkafka reads no other kind.
    settings.pop("ssl.truststore.password", None)
    if certificates:
        settings["ssl.ca.pem"] = certificates
    if not location:
        return
    if kind == "PEM":
        settings["ssl.ca.location"] = location
        return
    raise ConfigException(
        "ssl.truststore.location",
        location,
        f"a {kind} truststore cannot be read by Copycat's Kafka client (librdkafka). Use a "
        "PEM file of CA certificates with ssl.truststore.type=PEM (or librdkafka's "
        "ssl.ca.location); convert with `keytool -exportcert -rfc` or "
        "`openssl pkcs12 -nokeys`",
    )


def _translate_keystore(settings: MutableMapping[str, Any]) -> None:
    kind = _store_type(settings, "ssl.keystore.type")
    settings.pop("ssl.keystore.type", None)
    chain = settings.pop("ssl.keystore.certificate.chain", None)
    key = settings.pop("ssl.keystore.key", None)
    if chain:
        settings["ssl.certificate.pem"] = chain
    if key:
        settings["ssl.key.pem"] = key
    location = settings.get("ssl.keystore.location")
    if kind == "PEM":
        # Java refuses a keystore password with PEM stores; the key's own is ssl.key.password.
        settings.pop("ssl.keystore.password", None)
        if location:
            del settings["ssl.keystore.location"]
            settings["ssl.certificate.location"] = location
            settings["ssl.key.location"] = location
        return
    if not location:
        return
    if kind == "JKS" and _is_jks(str(location)):
        raise ConfigException(
            "ssl.keystore.location",
            location,
            "a JKS keystore cannot be read by Copycat's Kafka client (librdkafka). Convert it "
            "with `keytool -importkeystore -deststoretype PKCS12` and set "
            "ssl.keystore.type=PKCS12, or use ssl.keystore.type=PEM",
        )
    if kind not in ("JKS", "PKCS12"):
        raise ConfigException("ssl.keystore.type", kind, "supported with librdkafka: PEM, PKCS12")
    # PKCS12 (or a JKS-typed file that is PKCS12): librdkafka's ssl.keystore.location and
    # ssl.keystore.password are the same keys; ssl.key.password is the key's inside it.


def translate_security_keys(settings: MutableMapping[str, Any]) -> None:
    """Rewrite the Java client security keys in ``settings`` (a client config, merged from
    all its layers) into librdkafka's, in place. Idempotent: librdkafka keys are left alone,
    and a Java key wins over the librdkafka key it maps to.

    As Java's clients, ``sasl.jaas.config`` is read only with a ``SASL_*`` security.protocol
    and the stores only with ``SSL``/``SASL_SSL``; otherwise the Java keys are dropped unread.

    Raises:
        ConfigException: a Java key with no librdkafka equivalent, naming the key and what is
            supported; never quoting a password or JAAS text.
    """
    protocol = str(settings.get("security.protocol") or "PLAINTEXT").strip().upper()
    jaas = settings.pop(JAAS_CONFIG, None)
    if jaas and protocol.startswith("SASL_"):
        username, password = _jaas_credentials(str(jaas), JAAS_CONFIG)
        settings["sasl.username"] = username
        settings["sasl.password"] = password
    if protocol.endswith("SSL"):
        _translate_truststore(settings)
        _translate_keystore(settings)
    else:
        # Java's clients read no store without TLS; the worker's top-level ssl.* keys may be
        # the REST https listener's (a JKS keystore, say), which must not stop the clients.
        for key in _JAVA_STORE_KEYS:
            settings.pop(key, None)
    algorithm = settings.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None:
        # Java's empty value turns host name verification off; librdkafka calls that "none".
        text = str(algorithm).strip().lower()
        settings["ssl.endpoint.identification.algorithm"] = text or "none"
    for key in _JAVA_ONLY_SSL_KEYS:
        settings.pop(key, None)
