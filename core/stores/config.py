"""Connector configs, task configs and target states: the :class:`ConfigStore` seam.

Kafka Connect's ConfigBackingStore, in Python. Writers put configs; readers take an immutable
:class:`ClusterConfigState` snapshot (never a live dict another thread is changing) and hear
about changes through a :class:`ConfigUpdateListener`. Configs are stored as the user wrote
them (``${provider:...}`` placeholders kept); resolving them is the worker's business.

:class:`MemoryConfigStore` is standalone mode's store and the twin for tests; a
Kafka-backed store (distributed mode) writes Kafka Connect's records (``connector-<name>``,
``task-<name>-<n>``, ``commit-<name>``, ``target-state-<name>``) to the config topic.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Protocol

__all__ = [
    "ClusterConfigState",
    "ConfigStore",
    "ConfigUpdateListener",
    "MemoryConfigStore",
    "TargetState",
]


class TargetState(enum.Enum):
    """What the user asked a connector to be (Kafka's TargetState)."""

    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"

    @classmethod
    def from_initial_state(cls, value: str | None) -> TargetState:
        """``initial_state`` of a create request: RUNNING (default), PAUSED or STOPPED.

        Raises:
            ValueError: any other value (the REST layer answers 400).
        """
        mapping = {
            None: cls.STARTED,
            "RUNNING": cls.STARTED,
            "PAUSED": cls.PAUSED,
            "STOPPED": cls.STOPPED,
        }
        key = value.upper() if isinstance(value, str) else value
        if key not in mapping:
            raise ValueError(
                f"Invalid initial state {value!r}: must be one of RUNNING, PAUSED or STOPPED"
            )
        return mapping[key]


@dataclass(frozen=True)
class ClusterConfigState:
    """An immutable view of every connector's config, task configs and target state."""

    offset: int = -1  # position in the store's log this state reflects (-1: not a log)
    connector_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    task_configs: Mapping[str, Sequence[Mapping[str, str]]] = field(default_factory=dict)
    target_states: Mapping[str, TargetState] = field(default_factory=dict)
    # Per connector, its config as it stood when its current task configs were stored
    # (Kafka's appliedConnectorConfig): kept in memory only, rebuilt from the log's order.
    applied_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def connectors(self) -> list[str]:
        return sorted(self.connector_configs)

    def contains(self, connector: str) -> bool:
        return connector in self.connector_configs

    def config(self, connector: str) -> Mapping[str, str] | None:
        return self.connector_configs.get(connector)

    def tasks(self, connector: str) -> Sequence[Mapping[str, str]]:
        return self.task_configs.get(connector, ())

    def target_state(self, connector: str) -> TargetState | None:
        return self.target_states.get(connector)

    def applied_config(self, connector: str) -> Mapping[str, str] | None:
        """The connector config (as stored, placeholders kept) current when the connector's
        task configs were last stored; None if none were stored since it was created.

        A new config that leaves the generated task configs as they were still restarts the
        tasks when it differs from this one (Kafka's taskConfigsChanged, KAFKA-9228): the
        tasks take their converters, transforms and the rest from the connector config.
        """
        return self.applied_configs.get(connector)


class ConfigUpdateListener(Protocol):
    """Told (on the store's thread) what changed; must not block."""

    def on_connector_config_update(self, connector: str) -> None: ...

    def on_connector_config_removed(self, connector: str) -> None: ...

    def on_task_configs_update(self, connector: str) -> None: ...

    def on_target_state_change(self, connector: str) -> None: ...


class ConfigStore(Protocol):
    def snapshot(self) -> ClusterConfigState: ...

    def put_connector_config(
        self, connector: str, config: Mapping[str, str], target_state: TargetState | None
    ) -> None:
        """Create or replace; ``target_state`` None keeps a present connector's state and
        starts a new one STARTED."""
        ...

    def remove_connector_config(self, connector: str) -> None: ...

    def put_task_configs(self, connector: str, configs: Sequence[Mapping[str, str]]) -> None: ...

    def put_target_state(self, connector: str, state: TargetState) -> None: ...

    def set_listener(self, listener: ConfigUpdateListener | None) -> None: ...


def _frozen(config: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(config))


class MemoryConfigStore:
    """Configs in memory (standalone mode, tests): writes are seen at once and told to the
    listener synchronously, on the writer's thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = ClusterConfigState(0)
        self._listener: ConfigUpdateListener | None = None

    def snapshot(self) -> ClusterConfigState:
        return self._state

    def set_listener(self, listener: ConfigUpdateListener | None) -> None:
        self._listener = listener

    def _replace(self, **changes: object) -> None:
        """Swap in a new snapshot (readers holding the old one keep a consistent view)."""
        self._state = replace(self._state, offset=self._state.offset + 1, **changes)  # type: ignore[arg-type]

    def put_connector_config(
        self, connector: str, config: Mapping[str, str], target_state: TargetState | None
    ) -> None:
        with self._lock:
            state = self._state
            targets = dict(state.target_states)
            if target_state is not None or connector not in targets:
                targets[connector] = target_state or TargetState.STARTED
            self._replace(
                connector_configs={**state.connector_configs, connector: _frozen(config)},
                target_states=targets,
            )
        if self._listener is not None:
            self._listener.on_connector_config_update(connector)

    def remove_connector_config(self, connector: str) -> None:
        with self._lock:
            state = self._state
            self._replace(
                connector_configs={
                    k: v for k, v in state.connector_configs.items() if k != connector
                },
                task_configs={k: v for k, v in state.task_configs.items() if k != connector},
                target_states={k: v for k, v in state.target_states.items() if k != connector},
                applied_configs={k: v for k, v in state.applied_configs.items() if k != connector},
            )
        if self._listener is not None:
            self._listener.on_connector_config_removed(connector)

    def put_task_configs(self, connector: str, configs: Sequence[Mapping[str, str]]) -> None:
        with self._lock:
            state = self._state
            frozen = tuple(_frozen(c) for c in configs)
            applied = dict(state.applied_configs)
            current = state.connector_configs.get(connector)
            if current is not None:  # as Kafka's MemoryConfigBackingStore.putTaskConfigs
                applied[connector] = current
            self._replace(
                task_configs={**state.task_configs, connector: frozen}, applied_configs=applied
            )
        if self._listener is not None:
            self._listener.on_task_configs_update(connector)

    def put_target_state(self, connector: str, state: TargetState) -> None:
        with self._lock:
            current = self._state
            self._replace(target_states={**current.target_states, connector: state})
        if self._listener is not None:
            self._listener.on_target_state_change(connector)
