"""Which Kafka client settings a connector may override (KIP-458).

A connector config may carry ``producer.override.*``, ``consumer.override.*`` and
``admin.override.*`` keys; they go on top of the worker's settings for that connector's
clients (``sasl.jaas.config`` to run it as its own principal, ``max.request.size``, ...).
The worker's ``connector.client.config.override.policy`` decides which are allowed:

* ``All`` (Kafka 4.1's default): every key;
* ``Principal``: only ``sasl.jaas.config``, ``sasl.mechanism`` and ``security.protocol``;
* ``None``: none at all;

or a policy a worker extension offers (hook ``copycat_client_config_override_policies``).
Kafka's class names (``org.apache.kafka.connect.connector.policy.NoneConnector...``) and
their simple names name the same built-ins, so a Kafka worker file works unchanged.

The policy is checked where Kafka checks it: validation (``config/validate`` reports each
refused key under its full name, creating or updating a connector answers 400, a standalone
connector file stops the worker), and again when a task's clients are configured, for
configs stored before the policy was tightened. Only the clients a connector uses are
checked, as Kafka's ``AbstractHerder``: a source's producer (and its admin client when it
creates topics, keeps offsets in a topic of its own or runs exactly-once), a sink's consumer,
and the producer and admin client of a dead letter queue.
Messages name the key, never its value: the values these keys carry are credentials.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "BUILTIN_POLICIES",
    "POLICY_KEY",
    "AllPolicy",
    "ClientConfigRequest",
    "ConnectorClientConfigOverridePolicy",
    "NonePolicy",
    "PrincipalPolicy",
    "client_overrides",
    "clients_used",
    "java_hash_order",
    "override_errors",
]

POLICY_KEY = "connector.client.config.override.policy"
PRODUCER, CONSUMER, ADMIN = "producer", "consumer", "admin"
_DLQ_TOPIC = "errors.deadletterqueue.topic.name"
_TOPIC_CREATION_PREFIX = "topic.creation."
_OFFSETS_TOPIC = "offsets.storage.topic"


@dataclass(frozen=True)
class ClientConfigRequest:
    """The overrides a connector asks for one of its clients (Kafka's
    ``ConnectorClientConfigRequest``); ``client_props`` have the ``*.override.`` prefix
    removed and are the submitted strings."""

    connector_name: str | None
    connector_type: str  # "source" or "sink"
    connector_class: str
    client_type: str  # "producer", "consumer" or "admin"
    client_props: Mapping[str, str]


class ConnectorClientConfigOverridePolicy(Protocol):
    """Decides which client overrides a connector may set; runs inside the worker.

    ``validate`` is called on a REST threadpool thread (validation, create, update) and on
    the thread that starts a task; it must not block. It returns error messages by key
    (without the prefix); a key it leaves out, or maps to no messages, is allowed. A message
    should name the key, never its value.
    """

    def validate(self, request: ClientConfigRequest) -> Mapping[str, Sequence[str]]: ...


class _KeyPolicy:
    """A policy that allows a fixed set of keys (Kafka's AbstractConnectorClient...Policy)."""

    name = ""

    def allowed(self, key: str) -> bool:
        raise NotImplementedError

    def validate(self, request: ClientConfigRequest) -> Mapping[str, Sequence[str]]:
        return {
            key: [
                f"The '{self.name}' policy does not allow '{key}' to be overridden in the "
                "connector configuration."
            ]
            for key in request.client_props
            if not self.allowed(key)
        }


class AllPolicy(_KeyPolicy):
    name = "All"

    def allowed(self, key: str) -> bool:
        return True


class NonePolicy(_KeyPolicy):
    name = "None"

    def allowed(self, key: str) -> bool:
        return False


class PrincipalPolicy(_KeyPolicy):
    """Lets each connector run as its own principal, nothing else."""

    name = "Principal"
    ALLOWED = frozenset({"sasl.jaas.config", "sasl.mechanism", "security.protocol"})

    def allowed(self, key: str) -> bool:
        return key in self.ALLOWED


def _aliases(
    policy: type[_KeyPolicy],
) -> dict[str, Callable[[], ConnectorClientConfigOverridePolicy]]:
    # Kafka resolves a plugin alias from the class's simple name, with or without the
    # interface's name as suffix; the full class name works too. Case matters, as in Kafka.
    simple = f"{policy.name}ConnectorClientConfigOverridePolicy"
    return {
        name: policy
        for name in (policy.name, simple, f"org.apache.kafka.connect.connector.policy.{simple}")
    }


BUILTIN_POLICIES: dict[str, Callable[[], ConnectorClientConfigOverridePolicy]] = {
    **_aliases(AllPolicy),
    **_aliases(NonePolicy),
    **_aliases(PrincipalPolicy),
}


def _java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), as an unsigned 32-bit number."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def java_hash_order(keys: Sequence[str]) -> list[str]:
    """``keys`` in the order a Java ``HashMap`` they were put into (in this order) iterates
    them. Kafka collects a connector's overrides per client in such a map, so its policy
    errors, and which unparsable value it reports, come in this order, which its 400
    message shows."""
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = _java_string_hash(key)
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(keys, key=bucket)  # stable: a bucket keeps the insertion order


def clients_used(kind: str, props: Mapping[str, str], *, exactly_once: bool = False) -> list[str]:
    """The client types whose overrides a connector of ``kind`` uses: Kafka's
    ``connectorUsesProducer``/``Admin``/``Consumer``, plus the admin client of what Kafka's
    validation leaves to its Worker to refuse later (a source's own offsets topic, the fencing
    of an ``exactly_once`` source) and of a source's dead letter queue (Copycat's own)."""
    dlq = bool((props.get(_DLQ_TOPIC) or "").strip())
    if kind == "sink":
        return [CONSUMER, *((PRODUCER, ADMIN) if dlq else ())]
    uses_admin = (
        dlq
        or exactly_once
        or bool((props.get(_OFFSETS_TOPIC) or "").strip())
        or any(k.startswith(_TOPIC_CREATION_PREFIX) for k in props)
    )
    return [PRODUCER, *((ADMIN,) if uses_admin else ())]


def override_errors(
    policy: ConnectorClientConfigOverridePolicy,
    kind: str,
    connector_class: str,
    props: Mapping[str, str],
    *,
    exactly_once: bool = False,
) -> list[tuple[str, str]]:
    """``(full key, message)`` for each override in ``props`` that ``policy`` refuses, for
    the clients a connector of ``kind`` uses (``exactly_once``: a source run so)."""
    errors = []
    used = clients_used(kind, props, exactly_once=exactly_once)
    # Kafka's order: the producer's, the consumer's, then the admin client's, each client's
    # keys in its HashMap's order.
    for client in (c for c in (PRODUCER, CONSUMER, ADMIN) if c in used):
        own = client_overrides(client, props)
        if not own:
            continue
        request = ClientConfigRequest(props.get("name"), kind, connector_class, client, own)
        refused = policy.validate(request)
        prefix = f"{client}.override."
        for key in [*(k for k in own if k in refused), *(k for k in refused if k not in own)]:
            errors += [(prefix + key, str(m)) for m in refused[key]]
    return errors


def client_overrides(client: str, props: Mapping[str, str]) -> dict[str, str]:
    """The ``<client>.override.*`` keys of ``props`` without the prefix, in the order Kafka
    collects them (:func:`java_hash_order`)."""
    prefix = f"{client}.override."
    own = {k[len(prefix) :]: v for k, v in props.items() if k.startswith(prefix)}
    return {k: own[k] for k in java_hash_order(list(own))}
