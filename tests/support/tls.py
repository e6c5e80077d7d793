"""Certificates for tests: made with ``cryptography`` (a dev dependency), written as PEM.

A leaf certificate names ``localhost`` and ``127.0.0.1``, so clients that check host names
accept it; every certificate is valid from five minutes ago for a day.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["Key", "certificate", "make_certs", "new_key", "write_pem"]

Key = ec.EllipticCurvePrivateKey


def new_key() -> Key:
    return ec.generate_private_key(ec.SECP256R1())


def certificate(
    common_name: str,
    key: Key,
    issuer: tuple[x509.Certificate, Key] | None = None,
    *,
    ca: bool = False,
    hosts: bool | Sequence[str] = True,
) -> x509.Certificate:
    """A certificate for ``key``, signed by ``issuer`` (its certificate and key) or by itself;
    ``ca`` marks a certificate authority, ``hosts`` names localhost and 127.0.0.1 (or the
    host names and IP addresses listed)."""
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    issuer_name, signer = (issuer[0].subject, issuer[1]) if issuer else (name, key)
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    if hosts:
        names = ("localhost", "127.0.0.1") if hosts is True else hosts
        builder = builder.add_extension(
            x509.SubjectAlternativeName([_general_name(n) for n in names]), critical=False
        )
    if ca:
        builder = builder.add_extension(
            x509.BasicConstraints(ca=True, path_length=None), critical=True
        )
    return builder.sign(signer, hashes.SHA256())


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def write_pem(path: Path, key: Key | None, *certs: x509.Certificate) -> Path:
    """``path`` holding ``key`` (PKCS#8, the form Kafka's PEM keystores read), then ``certs``."""
    parts = []
    if key is not None:
        parts.append(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    parts += [c.public_bytes(serialization.Encoding.PEM) for c in certs]
    path.write_bytes(b"".join(parts))
    return path


def make_certs(directory: Path, server_hosts: Sequence[str] | None = None) -> None:
    """ca.pem; server.pem and client.pem (key and certificate chain) signed by the CA;
    ``server_hosts``: the only names of server.pem (default: localhost and 127.0.0.1)."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = new_key()
    ca = certificate("copycat test CA", ca_key, ca=True, hosts=False)
    write_pem(directory / "ca.pem", None, ca)
    for name in ("server", "client"):
        key = new_key()
        hosts: bool | Sequence[str] = True
        if name == "server" and server_hosts is not None:
            hosts = server_hosts
        cert = certificate(name, key, (ca, ca_key), hosts=hosts)
        write_pem(directory / f"{name}.pem", key, cert, ca)
