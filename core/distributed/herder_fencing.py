"""The distributed herder's part in exactly-once source support (KIP-618): zombie fencing.

The mechanics are :mod:`core.distributed.fencing`'s (the leader's rounds, a task's checks
around its producer start); this mixin decides when they run: which task starts exactly-once
(with what checks), a task asking the leader (itself, or over REST) for a round, and the
internal ``PUT /connectors/<name>/fence`` the leader answers. One concern of the herder split
(see :mod:`core.distributed.herder_base`).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from core.distributed.fencing import TaskFencing, request_fencing
from core.distributed.herder_base import DistributedHerderBase
from core.herder import BadRequestError
from core.worker import prefixed

__all__ = ["ExactlyOnceSupport"]


class ExactlyOnceSupport(DistributedHerderBase):
    """Exactly-once source tasks' fencing, herder side (see the module docstring).

    Called by: connector operation threads (task starts), task threads (fencing requests,
    through :class:`TaskFencing`), REST handler threads (``fence_zombies``).
    """

    def _exactly_once_options(
        self, name: str, task: int, config: Mapping[str, str]
    ) -> dict[str, Any]:
        """``Worker.start_task`` options of an exactly-once source task: the flag, and the
        checks around its producer start (core/distributed/fencing.py)."""
        if not self._runs_exactly_once(config):
            return {}
        configs = self._kafka_configs()
        return {
            "exactly_once": True,
            "fencing": TaskFencing(
                configs,
                name,
                task,
                configs.fencing_state(name).generation,
                partial(self._request_fencing, name),
                lambda: (name, task) in self._assigned.tasks,
            ),
        }

    def _runs_exactly_once(self, config: Mapping[str, str]) -> bool:
        return self.exactly_once_source == "enabled" and self._kind(config) == "source"

    def _request_fencing(self, name: str) -> None:
        """A task of ``name`` is about to start: have the leader fence older generations."""
        if self._is_leader:
            self.fence_zombies(name)
        else:
            request_fencing(lambda: self._leader_url, name)

    def fence_zombies(self, name: str) -> None:
        """Internal ``PUT /connectors/<name>/fence`` (leader only, forwarded there): fence out
        the older generations of the connector's tasks if its task configs are pending
        fencing, and record the new generation (core/distributed/fencing.py)."""
        self._known(name)
        self._require_leader("fence zombie source tasks")
        if self.exactly_once_source == "disabled":
            raise BadRequestError(
                f"Cannot fence out older tasks of connector {name}: the leader runs with "
                "exactly.once.source.support=disabled; set it to preparing (then enabled) on "
                "every worker of the cluster"
            )
        config = self._config(name)
        if self._kind(config) != "source":
            raise BadRequestError(f"Connector {name} is not a source connector")
        fencing = self.fencing
        assert fencing is not None
        resolved = self.resolver.resolve(config).config
        fencing.fence(name, {**self.client_props, **prefixed(resolved, "admin.override.")})
