"""Pre-flight validation of a source connector for exactly-once support (KIP-618).

A distributed worker, whatever its own ``exactly.once.source.support``, and a standalone one
with it ``enabled``, check in ``config/validate`` and every create or update what a source
connector asks for, asking the connector plugin on a fresh instance in a plugin host, as
Kafka's DistributedHerder does:

* with ``exactly.once.support=required``: the worker must have the support ``enabled``
  ("preparing" is not enough), else an error on ``exactly.once.support``; and
  ``SourceConnector.exactly_once_support(props)`` must answer SUPPORTED; None (the connector
  does not say), UNSUPPORTED or an exception is an error on the key too (``requested``, the
  default, skips both);
* with ``transaction.boundary=connector``: ``can_define_transaction_boundaries(props)`` must
  answer SUPPORTED, else an error on ``transaction.boundary``.

Copycat also runs exactly-once sources in standalone mode, where the offsets must be in a
Kafka topic for a transaction to include them: a source connector there needs its own
``offsets.storage.topic``.

Called on a REST handler's thread (or the standalone start-up's), inside a plugin host lease.
"""

from __future__ import annotations

from collections.abc import Mapping

from isolation import HostClient, RemotePluginError
from plugin_api import ConnectorTransactionBoundaries, ExactlyOnceSupport

__all__ = ["exactly_once_errors"]

_NO_ANSWER = (
    "The connector does not implement the API required for preflight validation of "
    "exactly-once source support (SourceConnector.exactly_once_support() returned None). "
    "Check in the connector's documentation whether it supports exactly-once semantics; if "
    'it does, set this property to "requested" (which skips this check).'
)
_UNSUPPORTED = (
    "The connector does not support exactly-once semantics with the provided configuration."
)
_NOT_ENABLED = "This worker does not have exactly-once source support enabled."
# Kafka's words, so that a client matching them reads the same refusal.
_NO_BOUNDARIES = (
    "The connector does not support connector-defined transaction boundaries with the given "
    "configuration. Please reconfigure it to use a different transaction boundary definition."
)
_NEEDS_TOPIC = (
    "Exactly-once source support in a standalone worker needs the connector's offsets in a "
    "Kafka topic of its own, for its transactions to include them: set offsets.storage.topic."
)


def exactly_once_errors(
    host: HostClient,
    handle: int,
    props: Mapping[str, str],
    *,
    worker_enabled: bool,
    needs_offsets_topic: bool,
) -> list[tuple[str, str]]:
    """``(config key, message)`` for each reason the connector (``handle``, a fresh instance
    in ``host``) cannot run with ``props`` on this worker (``worker_enabled``: its
    ``exactly.once.source.support`` is ``enabled``)."""
    errors: list[tuple[str, str]] = []
    if (props.get("exactly.once.support") or "requested").strip().lower() == "required":
        if not worker_enabled:
            errors.append(("exactly.once.support", _NOT_ENABLED))
        try:
            support = host.call(handle, "exactly_once_support", dict(props))
        except RemotePluginError as exc:
            errors.append(
                (
                    "exactly.once.support",
                    "Could not check whether the connector supports exactly-once semantics: "
                    f"exactly_once_support() raised {exc.remote_type}: {exc.remote_message}",
                )
            )
        else:
            if support is None:
                errors.append(("exactly.once.support", _NO_ANSWER))
            elif support != ExactlyOnceSupport.SUPPORTED:
                errors.append(("exactly.once.support", _UNSUPPORTED))
    if (props.get("transaction.boundary") or "poll").strip().lower() == "connector":
        try:
            boundaries = host.call(handle, "can_define_transaction_boundaries", dict(props))
        except RemotePluginError as exc:
            errors.append(
                (
                    "transaction.boundary",
                    "Could not check whether the connector can define transaction boundaries: "
                    f"can_define_transaction_boundaries() raised {exc.remote_type}: "
                    f"{exc.remote_message}",
                )
            )
        else:
            if boundaries != ConnectorTransactionBoundaries.SUPPORTED:
                errors.append(("transaction.boundary", _NO_BOUNDARIES))
    if needs_offsets_topic and not (props.get("offsets.storage.topic") or "").strip():
        errors.append(("offsets.storage.topic", _NEEDS_TOPIC))
    return errors
