"""The distributed herder's part in exactly-once source support (KIP-618): zombie fencing.

The mechanics are :mod:`core.distributed.fencing`'s (the leader's rounds, a task's checks
around its producer start); this mixin decides when they run: which task starts exactly-once
(with what checks), a task asking the leader (itself, or over REST) for a round, the
internal ``PUT /connectors/<name>/fence`` the leader answers, and KIP-875 offset changes.

**Offsets altered or reset** (``PATCH`` / ``DELETE /connectors/<name>/offsets``, on the
leader, the connector stopped), with ``exactly.once.source.support=enabled``, as Kafka's
``DistributedHerder.modifyConnectorOffsets`` and ``Worker.modifySourceConnectorOffsets``:

1. a round of fencing first: the generation of tasks that last ran (the task count record's,
   pending since the stop wrote empty task configs) is fenced out wherever it may still run
   (a frozen worker, one cut off from the group), and a task count record of 0 is written;
   a failed round fails the request naming the connector, before the plugin is asked and
   with no offset written;
2. the connector is checked again (still stopped, this worker still leading: the round took
   time);
3. the offsets are written in one transaction of task 0's transactional id
   (:func:`core.offset_topics.write_offsets_in_transaction`): all or none become visible,
   and task 0's producers opened since the round are fenced too.

With ``preparing`` (or ``disabled``), offsets are written as at-least-once connectors' are,
as in Kafka. One concern of the herder split (see :mod:`core.distributed.herder_base`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import partial
from typing import Any

from core.distributed.fencing import TaskFencing, request_fencing
from core.distributed.herder_signing import RequestSigning
from core.herder import BadRequestError
from core.offset_topics import write_offsets_in_transaction
from core.stores.task_offsets import TaskOffsetStore
from core.worker import prefixed
from plugin_api import ConnectException

__all__ = ["ExactlyOnceSupport"]

log = logging.getLogger("copycat.distributed")


class ExactlyOnceSupport(RequestSigning):
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
            request_fencing(
                lambda: self._leader_url, name, self.internal_http, self._signature_headers
            )

    def fence_zombies(self, name: str) -> None:
        """Internal ``PUT /connectors/<name>/fence`` (leader only, forwarded there): fence out
        the older generations of the connector's tasks if its task configs are pending
        fencing, and record the new generation (core/distributed/fencing.py)."""
        self._require_leader("fence zombie source tasks")  # the leader's copy says if it exists
        self._known(name)
        if self.exactly_once_source == "disabled":
            raise BadRequestError(
                f"Cannot fence out older tasks of connector {name}: the leader runs with "
                "exactly.once.source.support=disabled; set it to preparing (then enabled) on "
                "every worker of the cluster"
            )
        config = self._config(name)
        if self._kind(config) != "source":
            raise BadRequestError(f"Connector {name} is not a source connector")
        self._fence_round(name, config)

    def _fence_round(self, name: str, config: Mapping[str, str]) -> None:
        """A round of fencing for ``name`` with its admin settings (Kafka: its admin client).

        Raises:
            ConnectException: an older task generation could not be fenced out.
        """
        fencing = self.fencing
        assert fencing is not None
        resolved = self.resolver.resolve(config).config
        fencing.fence(name, {**self.client_props, **prefixed(resolved, "admin.override.")})

    # -- KIP-875 offsets of an exactly-once source connector (its operation thread) ----------

    def _before_source_offsets_change(self, name: str) -> None:
        """Steps 1 and 2 of the module docstring.

        Raises:
            ConnectException: fencing failed (names the connector); nothing changed.
            BadRequestError: the connector is no longer stopped.
            NotLeaderError, ConflictError: this worker no longer leads.
        """
        config = self._config(name)
        if not self._runs_exactly_once(config):
            return
        log.info("connector %s: fencing out its older tasks before its offsets change", name)
        try:
            self._fence_round(name, config)
        except ConnectException as exc:
            raise ConnectException(
                f"Failed to perform zombie fencing for source connector {name} prior to "
                f"modifying its offsets: {exc}"
            ) from exc
        self._require_leader("modify connector offsets")
        self._require_stopped(name)

    def _write_source_offsets(
        self, name: str, store: TaskOffsetStore, entries: list[tuple[dict[str, Any], Any]]
    ) -> None:
        """Step 3 of the module docstring (other connectors: the base's plain write)."""
        config = self._config(name)
        if not self._runs_exactly_once(config):
            super()._write_source_offsets(name, store, entries)
            return
        resolved = self.resolver.resolve(config).config
        producer = self._worker().specs.offsets_producer(name, resolved)
        write_offsets_in_transaction(producer, store, name, entries)
