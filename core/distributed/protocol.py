"""The worker group's protocol: what members send when they join, what the leader sends back.

The group has Kafka Connect's protocol type (``connect``) and a protocol name of our own
(:data:`PROTOCOL_NAME`). Kafka's coordinator picks a protocol every member supports, so a
Copycat worker cannot join a group that still has Kafka Connect workers in it (they offer
``sessioned``/``compatible``/``default``): the broker answers INCONSISTENT_GROUP_PROTOCOL and
the worker retries until the old workers are gone. That is on purpose: a mixed group would
hand connectors to workers that cannot run them. Migration is stop-then-start
(docs/operator-guide.md).

Both messages are compact JSON, versioned, so ``kafka-consumer-groups --describe`` and a
packet capture show something a person can read. What they carry is what Kafka Connect's
IncrementalCooperativeConnectProtocol carries:

* member metadata: the worker's REST URL (the leader's is where requests are forwarded), the
  config topic offset it has read to, everything it runs now (cooperative protocols report
  their current work so the leader revokes only what must move), and whether it signs
  internal requests (``connect.protocol=sessioned``, KIP-507);
* assignment: error (config mismatch: the leader is behind a member), leader id and URL, the
  config offset the assignment was computed at, connectors and tasks to start, to revoke, the
  delay after which to rejoin (a departed worker's work is waiting), and whether the group
  signs and verifies internal requests: only when every member is ``sessioned``, as Kafka's
  coordinator picks the lowest protocol every member supports (a worker without the field,
  an older Copycat, does not sign).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from core.distributed.assignor import Held

__all__ = [
    "ASSIGNMENT_CONFIG_MISMATCH",
    "ASSIGNMENT_OK",
    "PROTOCOL_NAME",
    "PROTOCOL_TYPE",
    "Assignment",
    "MemberMetadata",
    "ProtocolError",
]

PROTOCOL_TYPE = "connect"
PROTOCOL_NAME = "copycat-cooperative"
PROTOCOL_VERSION = 1
ASSIGNMENT_OK = 0
ASSIGNMENT_CONFIG_MISMATCH = 1


class ProtocolError(ValueError):
    """A member's metadata or an assignment that this worker cannot read."""


def _held(raw: Any) -> Held:
    if not isinstance(raw, dict):
        return Held()
    tasks = []
    for entry in raw.get("tasks", []):
        if isinstance(entry, list) and len(entry) == 2:
            tasks.append((str(entry[0]), int(entry[1])))
    return Held.of((str(c) for c in raw.get("connectors", [])), tasks)


def _held_json(held: Held) -> dict[str, Any]:
    return {
        "connectors": sorted(held.connectors),
        "tasks": [[c, t] for c, t in sorted(held.tasks)],
    }


def _load(data: bytes, what: str) -> dict[str, Any]:
    try:
        parsed = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"{what} is not {PROTOCOL_NAME} JSON: {exc}") from None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("version"), int):
        raise ProtocolError(f"{what} has no version")
    if parsed["version"] < PROTOCOL_VERSION:
        raise ProtocolError(f"{what} has version {parsed['version']} < {PROTOCOL_VERSION}")
    return parsed


@dataclass(frozen=True)
class MemberMetadata:
    url: str
    config_offset: int
    running: Held
    sessioned: bool = False

    def encode(self) -> bytes:
        return json.dumps(
            {
                "version": PROTOCOL_VERSION,
                "url": self.url,
                "config_offset": self.config_offset,
                "running": _held_json(self.running),
                "sessioned": self.sessioned,
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def decode(cls, data: bytes) -> MemberMetadata:
        parsed = _load(data, "member metadata")
        return cls(
            str(parsed.get("url", "")),
            int(parsed.get("config_offset", -1)),
            _held(parsed.get("running")),
            parsed.get("sessioned") is True,
        )


@dataclass(frozen=True)
class Assignment:
    error: int
    leader: str
    leader_url: str
    config_offset: int
    assigned: Held
    revoked: Held
    delay_ms: int
    sessioned: bool = False

    def encode(self) -> bytes:
        return json.dumps(
            {
                "version": PROTOCOL_VERSION,
                "error": self.error,
                "leader": self.leader,
                "leader_url": self.leader_url,
                "config_offset": self.config_offset,
                "assigned": _held_json(self.assigned),
                "revoked": _held_json(self.revoked),
                "delay_ms": self.delay_ms,
                "sessioned": self.sessioned,
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def decode(cls, data: bytes) -> Assignment:
        parsed = _load(data, "assignment")
        return cls(
            int(parsed.get("error", ASSIGNMENT_OK)),
            str(parsed.get("leader", "")),
            str(parsed.get("leader_url", "")),
            int(parsed.get("config_offset", -1)),
            _held(parsed.get("assigned")),
            _held(parsed.get("revoked")),
            int(parsed.get("delay_ms", 0)),
            parsed.get("sessioned") is True,
        )
