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
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path

from core.hookspecs import hookimpl
from core.worker_config import WorkerConfig
from plugin_api import ConfigException

_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


def _prefix(listener: str, config: WorkerConfig) -> str:
    admin = config.admin_listeners or []
    return "admin.listeners.https." if listener in admin else "listeners.https."


def _load_pkcs12(context: ssl.SSLContext, location: str, password: str | None) -> None:
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
    for c in [cert, *(chain or [])]:
        pem += c.public_bytes(serialization.Encoding.PEM)
    _load_inline(context, pem.decode(), None)


def _load_inline(context: ssl.SSLContext, pem: str, password: str | None) -> None:
    # ssl can only load key material from files: write it to a private temporary file.
    with tempfile.TemporaryDirectory(prefix="copycat-tls-") as tmp:
        path = Path(tmp) / "keystore.pem"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(pem)
        context.load_cert_chain(path, password=password)


def ssl_context(props: Mapping[str, str], prefix: str) -> ssl.SSLContext:
    """Build the server context from ``<prefix>ssl.*`` keys (see the module docstring)."""

    def get(key: str) -> str | None:
        value = props.get(prefix + key)
        return value if value else None

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    protocols = [p.strip() for p in (get("ssl.enabled.protocols") or "").split(",") if p.strip()]
    if protocols:
        unknown = [p for p in protocols if p not in _PROTOCOLS]
        if unknown:
            raise ConfigException(
                prefix + "ssl.enabled.protocols", ",".join(unknown), "supported: TLSv1.2, TLSv1.3"
            )
        context.minimum_version = min(_PROTOCOLS[p] for p in protocols)
    store_type = (get("ssl.keystore.type") or "PEM").upper()
    location, key_password = get("ssl.keystore.location"), get("ssl.key.password")
    chain, key = get("ssl.keystore.certificate.chain"), get("ssl.keystore.key")
    try:
        if store_type == "PKCS12" and location:
            _load_pkcs12(context, location, get("ssl.keystore.password"))
        elif store_type != "PEM":
            raise ConfigException(
                prefix + "ssl.keystore.type", store_type, "supported keystore types: PEM, PKCS12"
            )
        elif chain and key:
            _load_inline(context, key + "\n" + chain, key_password)
        elif location:
            context.load_cert_chain(location, password=key_password)
        else:
            raise ConfigException(
                prefix + "ssl.keystore.location",
                None,
                "an https listener needs a keystore (PEM key and certificate)",
            )
        trust_location, trust_inline = (
            get("ssl.truststore.location"),
            get("ssl.truststore.certificates"),
        )
        if trust_location:
            context.load_verify_locations(cafile=trust_location)
        elif trust_inline:
            context.load_verify_locations(cadata=trust_inline)
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise ConfigException(
            prefix + "ssl.keystore.location", location, f"cannot load TLS material: {exc}"
        ) from None
    client_auth = (get("ssl.client.auth") or "none").lower()
    modes = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
    if client_auth not in modes:
        raise ConfigException(
            prefix + "ssl.client.auth", client_auth, "must be none, requested or required"
        )
    context.verify_mode = modes[client_auth]
    return context


class TlsExtension:
    """The built-in provider of TLS contexts for https listeners."""

    @hookimpl
    def copycat_rest_ssl_context(
        self, listener: str, worker_config: WorkerConfig
    ) -> ssl.SSLContext | None:
        return ssl_context(worker_config.originals_strings(), _prefix(listener, worker_config))
