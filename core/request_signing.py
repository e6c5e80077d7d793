"""Signed internal requests between distributed workers (KIP-507), as Kafka Connect signs them.

The leader generates a *session key* (``inter.worker.key.generation.algorithm``,
``inter.worker.key.size`` bits) and writes it to the config topic; every worker reads it and
signs the requests only workers make (``POST /connectors/<name>/tasks``,
``PUT /connectors/<name>/fence``) with an HMAC of the request body
(``inter.worker.signature.algorithm``). The receiver checks the HMAC with the same key and
accepts only algorithms in its ``inter.worker.verification.algorithms``. On the wire, as
Kafka's ``InternalRequestSignature``:

* ``X-Connect-Authorization``: the HMAC of the body's bytes, base64 (standard alphabet, padded);
* ``X-Connect-Request-Signature-Algorithm``: the JCA name of the MAC, e.g. ``HmacSHA256``.

Algorithms carry their Java names (the config topic and the headers are shared with Kafka
Connect workers during a migration); :data:`MAC_ALGORITHMS` maps them to :mod:`hashlib`.
Key bytes never reach a log line or a ``repr``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from plugin_api.errors import ConfigException

__all__ = [
    "MAC_ALGORITHMS",
    "SIGNATURE_ALGORITHM_HEADER",
    "SIGNATURE_HEADER",
    "InvalidSignatureHeaders",
    "RequestSignature",
    "SessionKey",
    "generate_key",
    "key_length_bytes",
    "sign",
    "validate_key_algorithm",
    "validate_key_size",
    "validate_mac_algorithm",
    "validate_mac_algorithms",
]

SIGNATURE_HEADER = "X-Connect-Authorization"
SIGNATURE_ALGORITHM_HEADER = "X-Connect-Request-Signature-Algorithm"

# JCA MAC (and HMAC key generator) names -> hashlib names. Java looks them up ignoring case.
MAC_ALGORITHMS: Mapping[str, str] = {
    "hmacmd5": "md5",
    "hmacsha1": "sha1",
    "hmacsha224": "sha224",
    "hmacsha256": "sha256",
    "hmacsha384": "sha384",
    "hmacsha512": "sha512",
    "hmacsha512/224": "sha512_224",
    "hmacsha512/256": "sha512_256",
    "hmacsha3-224": "sha3_224",
    "hmacsha3-256": "sha3_256",
    "hmacsha3-384": "sha3_384",
    "hmacsha3-512": "sha3_512",
}
# SunJCE's KeyGenerator default key lengths in bytes (KeyGenerator.generateKey without init):
# HmacMD5 and HmacSHA1 generate 64-byte keys, the SHA-2/SHA-3 ones the digest's length.
_DEFAULT_KEY_BYTES: Mapping[str, int] = {
    "hmacmd5": 64,
    "hmacsha1": 64,
    "hmacsha224": 28,
    "hmacsha256": 32,
    "hmacsha384": 48,
    "hmacsha512": 64,
    "hmacsha512/224": 28,
    "hmacsha512/256": 32,
    "hmacsha3-224": 28,
    "hmacsha3-256": 32,
    "hmacsha3-384": 48,
    "hmacsha3-512": 64,
}
# SunJCE's HMAC key generators refuse shorter keys ("Key length must be at least 40 bits").
MIN_KEY_BITS = 40


def _digest(algorithm: str) -> str | None:
    name = MAC_ALGORITHMS.get(algorithm.lower())
    return name if name is not None and name in hashlib.algorithms_available else None


def _supported() -> str:
    names = [
        "HmacMD5",
        "HmacSHA1",
        "HmacSHA224",
        "HmacSHA256",
        "HmacSHA384",
        "HmacSHA512",
        "HmacSHA512/224",
        "HmacSHA512/256",
        "HmacSHA3-224",
        "HmacSHA3-256",
        "HmacSHA3-384",
        "HmacSHA3-512",
    ]
    return ", ".join(n for n in names if _digest(n) is not None)


def validate_mac_algorithm(name: str, value: Any) -> None:
    """ConfigDef validator: a MAC algorithm this worker can compute."""
    if not isinstance(value, str) or _digest(value) is None:
        raise ConfigException(
            name, value, f"Not a MAC algorithm supported by this worker (supported: {_supported()})"
        )


def validate_mac_algorithms(name: str, value: Any) -> None:
    """ConfigDef validator: one or more MAC algorithms, each supported."""
    if not value:
        raise ConfigException(name, "", "At least one signature verification algorithm is needed")
    for algorithm in value:
        validate_mac_algorithm(name, algorithm)


def validate_key_algorithm(name: str, value: Any) -> None:
    """ConfigDef validator: a key generation algorithm this worker has (the HMAC ones)."""
    if not isinstance(value, str) or _digest(value) is None:
        raise ConfigException(
            name,
            value,
            f"Not a key generation algorithm supported by this worker (supported: {_supported()})",
        )


def validate_key_size(name: str, value: Any) -> None:
    """ConfigDef validator: a key size in bits a generator accepts (unset: its default)."""
    if value is not None and value < MIN_KEY_BITS:
        raise ConfigException(name, value, f"Key length must be at least {MIN_KEY_BITS} bits")


def key_length_bytes(algorithm: str, size_bits: int | None) -> int:
    """How many bytes a key generated with ``algorithm`` and ``size_bits`` (or none) has."""
    if size_bits is None:
        return _DEFAULT_KEY_BYTES[algorithm.lower()]
    return (size_bits + 7) // 8


@dataclass(frozen=True)
class SessionKey:
    """The cluster's current session key, as the config topic's ``session-key`` record holds it.

    ``creation_timestamp_ms`` is the leader's wall clock when it generated the key; the key
    expires ``inter.worker.key.ttl.ms`` later. ``repr`` leaves the key's bytes out.
    """

    key: bytes = field(repr=False)
    algorithm: str
    creation_timestamp_ms: int

    def to_record(self) -> dict[str, Any]:
        """The record's value (KafkaConfigBackingStore's SESSION_KEY_V0 struct, schemaless)."""
        return {
            "key": base64.b64encode(self.key).decode("ascii"),
            "algorithm": self.algorithm,
            "creation-timestamp": self.creation_timestamp_ms,
        }

    @classmethod
    def from_record(cls, value: Any) -> SessionKey:
        """Read a ``session-key`` record's value.

        Raises:
            ValueError: a field is missing or of the wrong type (the message names it, never
                the key's value).
        """
        if not isinstance(value, dict):
            raise ValueError(f"the value is not a map but {type(value).__name__}")
        key = value.get("key")
        if not isinstance(key, str):
            raise ValueError("field 'key' should be a string")
        algorithm = value.get("algorithm")
        if not isinstance(algorithm, str):
            raise ValueError("field 'algorithm' should be a string")
        created = value.get("creation-timestamp")
        if not isinstance(created, int) or isinstance(created, bool):
            raise ValueError("field 'creation-timestamp' should be a long")
        try:
            raw = base64.b64decode(key, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("field 'key' is not base64") from None
        return cls(raw, algorithm, created)


def generate_key(algorithm: str, size_bits: int | None, now_ms: int) -> SessionKey:
    """A fresh random key (``secrets``: the OS's CSPRNG), as a JCA KeyGenerator makes one."""
    return SessionKey(
        secrets.token_bytes(key_length_bytes(algorithm, size_bits)), algorithm, now_ms
    )


def sign(key: SessionKey, body: bytes, algorithm: str) -> dict[str, str]:
    """The headers that sign ``body`` with ``key`` using MAC ``algorithm``."""
    digest = _digest(algorithm)
    if digest is None:
        raise ValueError(f"unsupported MAC algorithm {algorithm!r}")
    mac = hmac.new(key.key, body, digest).digest()
    return {
        SIGNATURE_HEADER: base64.b64encode(mac).decode("ascii"),
        SIGNATURE_ALGORITHM_HEADER: algorithm,
    }


class InvalidSignatureHeaders(ValueError):
    """The signature headers are present but unusable (Kafka answers 400)."""


@dataclass(frozen=True)
class RequestSignature:
    """A received request's signature (Kafka's ``InternalRequestSignature``)."""

    body: bytes = field(repr=False)
    algorithm: str
    signature: bytes = field(repr=False)

    @classmethod
    def from_headers(cls, body: bytes, headers: Mapping[str, str]) -> RequestSignature | None:
        """The signature of a request, or None when either header is missing.

        ``headers`` must look names up ignoring case (Starlette's do).

        Raises:
            InvalidSignatureHeaders: an unknown MAC algorithm, or a signature not in base64.
        """
        algorithm = headers.get(SIGNATURE_ALGORITHM_HEADER)
        encoded = headers.get(SIGNATURE_HEADER)
        if algorithm is None or encoded is None:
            return None
        if _digest(algorithm) is None:
            raise InvalidSignatureHeaders(f"{algorithm} Mac not available")
        try:
            signature = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidSignatureHeaders(f"Illegal base64 signature: {exc}") from None
        return cls(body, algorithm, signature)

    def is_valid(self, key: SessionKey) -> bool:
        digest = _digest(self.algorithm)
        assert digest is not None  # from_headers checked it
        expected = hmac.new(key.key, self.body, digest).digest()
        return hmac.compare_digest(expected, self.signature)
