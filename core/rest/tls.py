"""TLS for ``https://`` REST listeners, as a worker extension (``copycat_rest_ssl_context``).

Kafka configures the HTTPS listener with ``listeners.https.ssl.*`` keys (and
``admin.listeners.https.ssl.*`` for admin listeners). Copycat reads the same keys, in PEM form
(KIP-651); only the prefixed keys are read, because unprefixed ``ssl.*`` keys belong to the
Kafka clients:

=============================================  ==================================================
``...ssl.keystore.type``                       ``PEM`` (default) or ``PKCS12``
``...ssl.keystore.location``                   PEM file with the private key and certificate chain
                                               (or a PKCS12 file)
``...ssl.keystore.certificate.chain``          the certificate chain inline, PEM (instead of a file)
``...ssl.keystore.key``                        the private key inline, PEM
``...ssl.key.password``                        password of an encrypted key
``...ssl.keystore.password``                   password of a PKCS12 keystore
``...ssl.truststore.location``                 PEM CA bundle for client certificates
``...ssl.truststore.certificates``             the CA bundle inline, PEM
``...ssl.client.auth``                         ``none`` (default), ``requested`` or ``required``
``...ssl.enabled.protocols``                   e.g. ``TLSv1.2,TLSv1.3`` (the lowest is the minimum)
=============================================  ==================================================

JKS keystores are not supported: convert them with ``keytool -importkeystore -deststoretype
PKCS12``.

A worker's own requests to other workers' https listeners (distributed mode) are TLS clients
built from the same keys, as Kafka's RestClient: :func:`client_ssl_context`.
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from core.hookspecs import hookimpl
from core.worker_config import WorkerConfig
from plugin_api import ConfigException

_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
# The prefix of the https listener's keys, also read by a worker's requests to other workers.
CLIENT_PREFIX = "listeners.https."
_PEM_CERTIFICATE = re.compile(r"-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----")


def _prefix(listener: str, config: WorkerConfig) -> str:
    admin = config.admin_listeners or []
    return "admin.listeners.https." if listener in admin else "listeners.https."


def _load_pkcs12(context: ssl.SSLContext, location: str, password: str | None) -> str:
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError as exc:
        raise ConfigException(
            "ssl.keystore.type", "PKCS12", "PKCS12 keystores need the 'cryptography' package"
        ) from exc
    key, cert, chain = pkcs12.load_key_and_certificates(
        Path(location).read_bytes(), password.encode() if password else None
    )
    if key is None or cert is None:
        raise ConfigException("ssl.keystore.location", location, "no key and certificate in it")
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    certificates = b"".join(
        c.public_bytes(serialization.Encoding.PEM) for c in [cert, *(chain or [])]
    )
    _load_inline(context, (pem + certificates).decode(), None)
    return certificates.decode()


def _load_inline(context: ssl.SSLContext, pem: str, password: str | None) -> None:
    # ssl can only load key material from files: write it to a private temporary file.
    with tempfile.TemporaryDirectory(prefix="copycat-tls-") as tmp:
        path = Path(tmp) / "keystore.pem"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(pem)
        context.load_cert_chain(path, password=password)


def _getter(props: Mapping[str, str], prefix: str) -> Callable[[str], str | None]:
    def get(key: str) -> str | None:
        value = props.get(prefix + key)
        return value if value else None

    return get


def _set_protocols(context: ssl.SSLContext, get: Callable[[str], str | None], prefix: str) -> None:
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    protocols = [p.strip() for p in (get("ssl.enabled.protocols") or "").split(",") if p.strip()]
    if protocols:
        unknown = [p for p in protocols if p not in _PROTOCOLS]
        if unknown:
            raise ConfigException(
                prefix + "ssl.enabled.protocols", ",".join(unknown), "supported: TLSv1.2, TLSv1.3"
            )
        context.minimum_version = min(_PROTOCOLS[p] for p in protocols)


def _load_keystore(
    context: ssl.SSLContext, get: Callable[[str], str | None], prefix: str
) -> str | None:
    """Load the keystore named by ``<prefix>ssl.keystore.*``, if any; its certificates (PEM)."""
    store_type = (get("ssl.keystore.type") or "PEM").upper()
    location, key_password = get("ssl.keystore.location"), get("ssl.key.password")
    chain, key = get("ssl.keystore.certificate.chain"), get("ssl.keystore.key")
    if store_type == "PKCS12":
        if not location:
            raise ConfigException(
                f"Missing {prefix}ssl.keystore.location: {prefix}ssl.keystore.type is PKCS12, "
                "which is read from a file; set the location to the PKCS12 keystore"
            )
        return _load_pkcs12(context, location, get("ssl.keystore.password"))
    if store_type != "PEM":
        raise ConfigException(
            prefix + "ssl.keystore.type", store_type, "supported keystore types: PEM, PKCS12"
        )
    if chain and key:
        _load_inline(context, key + "\n" + chain, key_password)
        return chain
    if location:
        context.load_cert_chain(location, password=key_password)
        return Path(location).read_text()
    return None


def _load_truststore(context: ssl.SSLContext, get: Callable[[str], str | None]) -> bool:
    """Load the CA bundle named by ``ssl.truststore.*``, if any; whether there was one."""
    trust_location, trust_inline = (
        get("ssl.truststore.location"),
        get("ssl.truststore.certificates"),
    )
    if trust_location:
        context.load_verify_locations(cafile=trust_location)
    elif trust_inline:
        context.load_verify_locations(cadata=trust_inline)
    return bool(trust_location or trust_inline)


def _failure(exc: Exception) -> str:
    """Why key material did not load, without the path (the error names the key and file)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


def _keystore(context: ssl.SSLContext, get: Callable[[str], str | None], prefix: str) -> str | None:
    """:func:`_load_keystore`, a failure to load being an error on the keystore's key."""
    try:
        return _load_keystore(context, get, prefix)
    except (OSError, ssl.SSLError, ValueError) as exc:
        location = get("ssl.keystore.location")
        if location:
            raise ConfigException(
                prefix + "ssl.keystore.location",
                location,
                f"cannot load the keystore: {_failure(exc)}",
            ) from None
        raise ConfigException(
            f"Invalid {prefix}ssl.keystore.key / {prefix}ssl.keystore.certificate.chain: "
            f"cannot load the keystore: {_failure(exc)}"
        ) from None


def _truststore(context: ssl.SSLContext, get: Callable[[str], str | None], prefix: str) -> bool:
    """:func:`_load_truststore`, a failure to load being an error on the truststore's key."""
    try:
        return _load_truststore(context, get)
    except (OSError, ssl.SSLError, ValueError) as exc:
        location = get("ssl.truststore.location")
        if location:
            raise ConfigException(
                prefix + "ssl.truststore.location",
                location,
                f"cannot load the truststore: {_failure(exc)}",
            ) from None
        raise ConfigException(
            f"Invalid {prefix}ssl.truststore.certificates: cannot load the truststore: "
            f"{_failure(exc)}"
        ) from None


def ssl_context(props: Mapping[str, str], prefix: str) -> ssl.SSLContext:
    """Build the server context from ``<prefix>ssl.*`` keys (see the module docstring)."""
    get = _getter(props, prefix)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _set_protocols(context, get, prefix)
    if _keystore(context, get, prefix) is None:
        raise ConfigException(
            f"Missing {prefix}ssl.keystore.location: an https listener needs a keystore (PEM "
            f"key and certificate; or {prefix}ssl.keystore.key and "
            f"{prefix}ssl.keystore.certificate.chain inline)"
        )
    _truststore(context, get, prefix)
    client_auth = (get("ssl.client.auth") or "none").lower()
    modes = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
    if client_auth not in modes:
        raise ConfigException(
            prefix + "ssl.client.auth", client_auth, "must be none, requested or required"
        )
    context.verify_mode = modes[client_auth]
    return context


def client_ssl_prefix(props: Mapping[str, str]) -> str:
    """Where a worker's requests to other workers take their ``ssl.*`` keys from: all from
    ``listeners.https.`` when any key has that prefix, else all from the top level (Kafka's
    ``valuesWithPrefixAllOrNothing``, never a mix)."""
    if any(k.startswith(CLIENT_PREFIX) and len(k) > len(CLIENT_PREFIX) for k in props):
        return CLIENT_PREFIX
    return ""


def client_ssl_context(props: Mapping[str, str]) -> ssl.SSLContext:
    """The context of a worker's requests to other workers' https listeners (REST forwarding,
    task configs, fencing), as Kafka's RestClient builds it (``SSLUtils
    .createClientSideSslContextFactory``), from the keys :func:`client_ssl_prefix` picks:

    * the truststore verifies the other worker; without one, the system's CAs and the
      keystore's own certificate do (Jetty trusts the keystore then; a cluster sharing one
      self-signed certificate works without a truststore);
    * the keystore, if any, is the client certificate (for ``ssl.client.auth=required``);
    * ``ssl.endpoint.identification.algorithm`` empty turns host name checks off (on by
      default, as Kafka's ``https``);
    * ``ssl.enabled.protocols`` sets the lowest version, as for the listener.
    """
    prefix = client_ssl_prefix(props)
    get = _getter(props, prefix)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _set_protocols(context, get, prefix)
    own = _keystore(context, get, prefix)
    trusted = _truststore(context, get, prefix)
    if not trusted:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
        leaf = _PEM_CERTIFICATE.search(own or "")
        if leaf:
            context.load_verify_locations(cadata=leaf.group(0))
            # The keystore's certificate is trusted as it is, even if a CA signed it.
            context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    if props.get(prefix + "ssl.endpoint.identification.algorithm") == "":
        context.check_hostname = False
    return context


class TlsExtension:
    """The built-in provider of TLS contexts for https listeners."""

    @hookimpl
    def copycat_rest_ssl_context(
        self, listener: str, worker_config: WorkerConfig
    ) -> ssl.SSLContext | None:
        return ssl_context(worker_config.originals_strings(), _prefix(listener, worker_config))
