"""Signed internal requests (KIP-507): the session key, signing, verifying, rotating.

Only workers call ``POST /connectors/<name>/tasks`` (a connector's owner sends the task
configs it generated to the leader) and ``PUT /connectors/<name>/fence`` (exactly-once
sources); REST extensions such as basic auth let them through unauthenticated, as Kafka's
``JaasBasicAuthFilter`` does, because the herder checks they come from a worker:

* the leader generates a session key and writes it to the config topic (``session-key``),
  again when it is ``inter.worker.key.ttl.ms`` old or no longer matches the configured
  algorithm and size; every worker reads it (:mod:`core.request_signing` for the formats);
* a worker signs its internal requests with the key it last read (none read yet: unsigned);
* the receiver answers, as Kafka's ``DistributedHerder.requestNotSignedProperly``: 400
  without a signature or with an algorithm outside ``inter.worker.verification.algorithms``,
  503 while it has read no key yet, 403 for a wrong signature.

All of it only while the group is *sessioned*: every member runs with
``connect.protocol=sessioned`` (the default). One member with ``eager`` or ``compatible``
turns signing and verification off for the whole group (logged as a warning), as it does in
Kafka Connect. One concern of the herder split (see :mod:`core.distributed.herder_base`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from core.distributed.herder_base import DistributedHerderBase
from core.herder import BadRequestError, ForbiddenError, ServiceUnavailableError
from core.request_signing import (
    InvalidSignatureHeaders,
    RequestSignature,
    SessionKey,
    generate_key,
    key_length_bytes,
    sign,
)
from plugin_api import ConnectException

__all__ = ["RequestSigning"]

log = logging.getLogger("copycat.distributed")

# Pause after a failed session key write (a fenced leader, the broker away) before the tick
# thread tries again: it ticks every 0.2 s and would otherwise log a warning each time.
KEY_WRITE_RETRY_S = 1.0
_KIP_507 = "https://cwiki.apache.org/confluence/display/KAFKA/KIP-507%3A+Securing+Internal+Connect+REST+Endpoints"


class RequestSigning(DistributedHerderBase):
    """Session keys and internal request signatures (see the module docstring).

    Called by: REST handler threads (:meth:`verify_internal_request`), connector operation
    threads (:meth:`_signature_headers`), the tick thread (:meth:`_rotate_session_key`,
    :meth:`_set_request_validation`) and the config log's thread (:meth:`_on_session_key`).
    """

    def _init_signing(self) -> None:
        c = self.config
        self._sessioned = str(c.get("connect.protocol")).lower() == "sessioned"
        # The group's: every member sessioned (set from each assignment); this worker's own
        # setting until the first rebalance completes.
        self._request_validation = self._sessioned
        self._key_write_retry_at = 0.0
        self._key_algorithm: str = c.get("inter.worker.key.generation.algorithm")
        self._key_size: int | None = c.get("inter.worker.key.size")
        self._key_ttl_ms: int = c.get("inter.worker.key.ttl.ms")
        self._signature_algorithm: str = c.get("inter.worker.signature.algorithm")
        self._verification_algorithms: list[str] = list(
            c.get("inter.worker.verification.algorithms")
        )
        if not self._sessioned:
            log.warning(
                "Internal request verification will be disabled for this cluster as this "
                "worker's connect.protocol configuration has been set to '%s'. If this is not "
                "intentional, either remove the 'connect.protocol' configuration from the "
                "worker config file or change its value to 'sessioned'. If this configuration "
                "is left as-is, the cluster will be insecure; for more information, see "
                "KIP-507: %s",
                c.get("connect.protocol"),
                _KIP_507,
            )

    # -- receiving -------------------------------------------------------------------------------

    def verify_internal_request(self, body: bytes, headers: Mapping[str, str]) -> None:
        """Refuse an internal request that is not signed with the current session key.

        Raises:
            BadRequestError: no signature, an unusable one, or an algorithm this worker does
                not accept (400).
            ServiceUnavailableError: no session key read yet (503).
            ForbiddenError: the signature is wrong (403).
        """
        if not self._request_validation:
            return
        try:
            signature = RequestSignature.from_headers(body, headers)
        except InvalidSignatureHeaders as exc:
            raise BadRequestError(str(exc)) from None
        if signature is None:
            raise BadRequestError("Internal request missing required signature")
        if signature.algorithm not in self._verification_algorithms:
            raise BadRequestError(
                f"This worker does not support the '{signature.algorithm}' key signing "
                "algorithm used by other workers. This worker is currently configured to use: "
                f"[{', '.join(self._verification_algorithms)}]. Check that all workers' "
                "configuration files permit the same set of signature algorithms, and correct "
                "any misconfigured worker and restart it."
            )
        key = self._session_key()
        if key is None:
            raise ServiceUnavailableError(
                "This worker is still starting up and has not been able to read a session key "
                "from the config topic yet"
            )
        if not signature.is_valid(key):
            raise ForbiddenError("Internal request contained invalid signature.")

    # -- sending ---------------------------------------------------------------------------------

    def _signature_headers(self, body: bytes) -> dict[str, str]:
        """Headers that sign an internal request's ``body``; none while no key is known (or
        the group is not sessioned), as Kafka's RestClient sends it unsigned then."""
        key = self._session_key()
        if key is None or not self._request_validation:
            return {}
        return sign(key, body, self._signature_algorithm)

    def _session_key(self) -> SessionKey | None:
        configs = self.configs
        getter = getattr(configs, "session_key", None)
        return getter() if getter is not None else None

    def _on_session_key(self, key: SessionKey) -> None:
        """Config log thread: a new key was read (its bytes are never logged)."""
        log.info("session key updated (algorithm %s)", key.algorithm)

    # -- the leader's key (tick thread) ------------------------------------------------------------

    def _set_request_validation(self, enabled: bool) -> None:
        if enabled == self._request_validation:
            return
        self._request_validation = enabled
        if enabled:
            log.info("Internal request validation has been re-enabled")
        else:
            log.warning(
                "A member of this Connect cluster runs with a connect.protocol other than "
                "'sessioned' (or an older Copycat) and internal request validation is now "
                "disabled. If this is not intentional, set connect.protocol=sessioned (or "
                "remove it) on that worker. If this configuration is left as-is, the cluster "
                "will be insecure; for more information, see KIP-507: %s",
                _KIP_507,
            )

    def _key_rotation_due(self, now_ms: int) -> str | None:
        """Why the leader must write a new key now, or None."""
        if not (self._request_validation and self._is_leader):
            return None
        key = self._session_key()
        if key is None:
            return "no session key has been distributed yet"
        if self._key_ttl_ms > 0 and key.creation_timestamp_ms + self._key_ttl_ms <= now_ms:
            return "the existing key has expired"
        if key.algorithm != self._key_algorithm or len(key.key) != key_length_bytes(
            self._key_algorithm, self._key_size
        ):
            return (
                "the previous key uses a different algorithm or key size than this worker's "
                "configuration requires"
            )
        return None

    def _rotate_session_key(self) -> None:
        """Leader, tick thread: write a new session key when one is due."""
        if time.monotonic() < self._key_write_retry_at:
            return
        now_ms = int(time.time() * 1000)
        reason = self._key_rotation_due(now_ms)
        if reason is None:
            return
        log.info("distributing a new session key: %s", reason)
        key = generate_key(self._key_algorithm, self._key_size, now_ms)
        configs = self._kafka_configs()
        try:
            self._leader_write("write a new session key", lambda: configs.put_session_key(key))
        except ConnectException as exc:
            log.warning(
                "could not write a new session key to the config topic (retrying in %g s): %s",
                KEY_WRITE_RETRY_S,
                exc,
            )
            self._key_write_retry_at = time.monotonic() + KEY_WRITE_RETRY_S
