"""What the config topic's changes do on this worker (the distributed herder's reactions).

Every worker reads the config topic; its store's listener calls the ``on_*`` methods on the
config log's thread, which only queue work: each change becomes an operation on the affected
connector's own operation thread (:mod:`core.serial`), so a hung plugin delays only its
connector. Those operations act on what the group assigned to this worker: start or restart a
connector's instance (which generates task configs: the leader writes them, a follower sends
them to the leader's internal ``POST /connectors/<name>/tasks``, signed as
:mod:`.herder_signing` says), start, restart or stop tasks whose configs changed, apply target
states, remove what a deletion removed, serve KIP-745 restart requests. One concern of the
herder split (see :mod:`core.distributed.herder_base`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from functools import partial
from urllib.parse import quote

import httpx

from core.distributed.assignor import Held
from core.distributed.config_store import PrivilegedWriteError, RestartRequest
from core.distributed.herder_fencing import ExactlyOnceSupport
from core.herder import BadRequestError, ConflictError, NotFoundError
from core.log_levels import parse_level
from core.rest import loggers
from core.status import State, Status
from core.stores.config import TargetState
from core.worker_herder import REST_REQUEST_TIMEOUT_S, _Runtime

__all__ = ["ConfigReactions"]

log = logging.getLogger("copycat.distributed")

# Retry pause when sending task configs to the leader failed (leader moving, rebalancing).
FORWARD_RETRY_S = 1.0


class ConfigReactions(ExactlyOnceSupport):
    """Config topic changes applied here (see the module docstring).

    Called by: the config log's thread (the listener methods, which only queue), connector
    operation threads (everything else), REST handler threads (``receive_task_configs``).
    """

    # -- config listener (the config log's thread: only queue work) --------------------------------

    def on_connector_config_update(self, connector: str) -> None:
        with self._lock:
            new = connector not in self._runtime
            runtime = self._runtime.setdefault(connector, _Runtime("unknown"))
            runtime.deleted = False
        runtime.kind = self._kind(self._config(connector))
        if new:
            self._request_rebalance(f"connector {connector} was created")
        elif connector in self._assigned.connectors:
            self._ops.post(connector, "reconfigure", partial(self._restart_instance, connector))

    def on_connector_config_removed(self, connector: str) -> None:
        with self._lock:
            runtime = self._runtime.pop(connector, None)
        if runtime is not None:
            runtime.deleted = True
        self._reclaim_if_stuck(connector)
        self._ops.post(connector, "remove", partial(self._remove_here, connector))
        if runtime is not None:
            self._request_rebalance(f"connector {connector} was deleted")

    def on_task_configs_update(self, connector: str) -> None:
        self._ops.post(connector, "task configs", partial(self._apply_task_configs, connector))
        self._request_rebalance(f"connector {connector}'s task configs changed")

    def on_target_state_change(self, connector: str) -> None:
        if self.configs.snapshot().target_state(connector) is TargetState.STOPPED:
            # The stop waits behind whatever runs for the connector here: a start that hangs
            # is reclaimed after the graceful timeout, as for a delete (docs/operator-guide.md).
            self._reclaim_if_stuck(connector, "connector stopped")
        self._ops.post(connector, "target state", partial(self._apply_target_here, connector))

    def _on_restart_request(self, request: RestartRequest) -> None:
        self._ops.post(request.connector, "restart", partial(self._restart_here, request))

    def _on_logger_level(self, namespace: str, level: str) -> None:
        value = parse_level(level)
        if value is None:
            log.warning("ignoring cluster logger level %r for %s", level, namespace)
            return
        affected = loggers.set_level(namespace, value)
        log.info("logger %s set to %s cluster-wide (%d loggers)", namespace, level, len(affected))

    # -- what runs here (connector operation threads) ----------------------------------------------

    def _stop_instance(self, name: str) -> None:
        self._worker().stop_connector_instance(name)

    def _start_connector(self, name: str) -> None:
        """Start the instance of a connector assigned here in its target state; a STARTED
        one then publishes its task configs (a PAUSED one does not: see
        :meth:`_publish_task_configs`)."""
        worker = self._worker()
        if name not in self._assigned.connectors or worker.instance_running(name):
            return
        snapshot = self.configs.snapshot()
        config = snapshot.config(name)
        runtime = self._runtime.get(name)
        if config is None or runtime is None:
            return
        if snapshot.target_state(name) is TargetState.STOPPED:
            self._report_stopped(name, config)
            return
        if worker.status.connector(name) is None:
            # Until its start returns (which may take long) the connector is UNASSIGNED, as in
            # Kafka and standalone mode, not without a status (a 404).
            worker.status.set_connector(name, Status(State.UNASSIGNED, worker.worker_id))
        if self._resolve_and_start(name, runtime, config) is None:
            return
        if snapshot.target_state(name) is TargetState.PAUSED:
            worker.pause(name, True)
        self._publish_task_configs(name)

    def _publish_task_configs(self, name: str) -> None:
        """Ask the connector for task configs; send them to the leader if they changed.

        Only while its target state is STARTED, as Kafka's ``reconfigureConnector``: a
        PAUSED connector's stored task configs stay as they are until it is resumed. They
        may have been written by Kafka Connect (a cluster migrating), whose workers read
        ``task.class`` from them and do not regenerate them for a paused connector, and a
        connector paused from STOPPED has none, so it shows no task, as in Kafka.
        """
        worker, runtime = self._worker(), self._runtime.get(name)
        if runtime is None or runtime.resolved is None or not worker.instance_running(name):
            return
        target = self.configs.snapshot().target_state(name)
        if target is not TargetState.STARTED:
            log.info(
                "connector %s: not reconfiguring its tasks, its target state is %s",
                name,
                target.value if target is not None else "unknown",
            )
            return
        generated = self._generate_task_configs(name, runtime.resolved)
        if generated is None:
            return
        fresh = generated[2]
        if self._task_configs_current(name, fresh) and (
            name not in self._kafka_configs().inconsistent()
        ):
            log.info("connector %s: task configs unchanged (%d tasks)", name, len(fresh))
            return
        log.info("connector %s: publishing %d task configs", name, len(fresh))
        self._send_task_configs(name, fresh)

    def _regenerate_task_configs(self, name: str) -> None:
        self._publish_task_configs(name)

    def _send_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        """Leader: write them; follower: POST them to the leader, retrying while it moves.

        A connector deleted meanwhile (the leader answers 404, or this worker has read the
        deletion) or reconfigured (its config is no longer the one these tasks came from) ends
        the retries, as Kafka's retries end once the connector no longer runs: this runs on
        the connector's operation thread, and the removal or reconfiguration queued behind it
        would otherwise wait for good, the instance's host outliving the connector. So does a
        stop that landed while they were generated: the leader refuses them (see
        :meth:`receive_task_configs`), and Kafka's retry skips a connector no longer STARTED.
        """
        config = self.configs.snapshot().config(name)
        while not self._stopping.is_set() and name in self._assigned.connectors:
            snapshot = self.configs.snapshot()
            if config is None or snapshot.config(name) != config:
                log.info(
                    "connector %s was deleted or reconfigured: its task configs are dropped", name
                )
                return
            if snapshot.target_state(name) is TargetState.STOPPED:
                log.info("connector %s is stopped: its task configs are dropped", name)
                return
            if self._is_leader:
                try:
                    self.receive_task_configs(name, configs)
                    return
                except NotFoundError:
                    log.info("connector %s was deleted: its task configs are dropped", name)
                    return
                except BadRequestError:
                    log.info("connector %s is stopped: its task configs are dropped", name)
                    return
                except (PrivilegedWriteError, ConflictError) as exc:
                    log.warning("writing task configs of %s: %s", name, exc)
            elif self._leader_url:
                # Signed over these exact bytes (KIP-507): the leader checks the HMAC of the
                # body it receives.
                body = json.dumps(configs, separators=(",", ":")).encode()
                try:
                    response = self.internal_http.post(
                        f"{self._leader_url}/connectors/{quote(name, safe='')}/tasks",
                        params={"forward": "true"},
                        content=body,
                        headers={
                            "Content-Type": "application/json",
                            **self._signature_headers(body),
                        },
                        timeout=REST_REQUEST_TIMEOUT_S,
                    )
                    if response.status_code < 300:
                        return
                    if response.status_code == 404:
                        log.info("connector %s was deleted: its task configs are dropped", name)
                        return
                    log.warning(
                        "the leader refused task configs of %s: %d %s",
                        name,
                        response.status_code,
                        response.text[:200],
                    )
                except httpx.HTTPError as exc:
                    log.warning("sending task configs of %s to the leader: %s", name, exc)
            time.sleep(FORWARD_RETRY_S)

    def _start_task(self, name: str, task: int) -> None:
        worker = self._worker()
        if (name, task) not in self._assigned.tasks or self._task_runs_here(name, task):
            return
        snapshot = self.configs.snapshot()
        config, tasks = snapshot.config(name), snapshot.tasks(name)
        if config is None or task >= len(tasks):
            return  # deleted or shrunk meanwhile: the next rebalance revokes it
        if snapshot.target_state(name) is TargetState.STOPPED:
            # Task configs of a STOPPED connector (written by a peer or a zombie leader
            # without the leader's check): Kafka's task ends as soon as it sees the target
            # (WorkerTask.isStopping). It stays held here and starts when the connector is
            # resumed or paused (_apply_target_here).
            log.info("task %s-%d: its connector is STOPPED; not starting it", name, task)
            return
        try:
            connector_props = self.resolver.resolve(config).config
            task_props = self.resolver.resolve(tasks[task]).config
            worker.start_task(
                name,
                task,
                task_props,
                connector_props=connector_props,
                paused=snapshot.target_state(name) is TargetState.PAUSED,
                task_count=len(tasks),
                **self._exactly_once_options(name, task, config),
            )
            self.task_starts += 1
        except Exception as exc:  # noqa: BLE001 - shown as FAILED in the status, like Kafka
            log.error("task %s-%d could not start: %s", name, task, exc)
            worker.status.set_task(
                name, task, Status(State.FAILED, worker.worker_id, trace=str(exc))
            )

    def _restart_instance(self, name: str) -> None:
        """The connector's config changed: restart its instance here, republish its tasks."""
        worker = self._worker()
        if worker.instance_running(name):
            self._stop_instance(name)
        self._start_connector(name)

    def _apply_task_configs(self, name: str) -> None:
        """New task configs: restart the tasks here whose config, or whose connector's config,
        changed; stop vanished ones.

        Exactly-once source tasks are all restarted, as Kafka restarts every task of a
        reconfigured connector: the new generation's fencing would otherwise fence the
        unchanged ones still running from the old generation, and they would fail.
        """
        snapshot = self.configs.snapshot()
        tasks, config = snapshot.tasks(name), snapshot.config(name)
        # Tasks beyond the new count are no longer this worker's, running or not: still
        # counted as held, they would be reported as running at the next rebalance, and a
        # connector growing again would never get them assigned.
        with self._assigned_lock:
            self._assigned = Held.of(
                self._assigned.connectors,
                (t for t in self._assigned.tasks if t[0] != name or t[1] < len(tasks)),
            )
        worker = self.worker
        if worker is None:
            return
        connector = worker.connectors.get(name)
        restart_all = config is not None and self._runs_exactly_once(config)
        connector_props = self._resolved_or_none(config)
        running = sorted(connector.tasks.items()) if connector is not None else []
        vanished = [task for task, _ in running if task >= len(tasks) or config is None]
        if vanished:
            # Gone from the config: their statuses go now and their stops write none, together.
            # The leader removes them too, after the rebalance these configs cause; an
            # UNASSIGNED written by a stop after that showed a removed task again for as long
            # as the stop took (a sink's final commit, seconds on a loaded machine).
            for task, runner in running:
                if task in vanished:
                    runner.silence()
                    worker.status.remove_task(name, task)
            worker.stop_tasks_of(name, vanished)
            self.task_stops += len(vanished)
        for task, runner in running:
            if task in vanished:
                continue
            wanted = self.resolver.resolve(tasks[task]).config
            # A task whose config is the same but whose connector config is not (a new
            # converter or transform: the task configs were written again because the one
            # they were generated from changed, KAFKA-9228) restarts too, as in Kafka, which
            # restarts every task of a connector whose task configs were written.
            if wanted != runner.task_props:
                why = "its config changed"
            elif connector_props != runner.spec.connector_config:
                why = "its connector's config changed"
            elif restart_all:
                why = "a new generation"
            else:
                continue
            log.info("task %s-%d: %s; restarting it", name, task, why)
            worker.stop_task(name, task)
            self.task_stops += 1
            self._start_task(name, task)
        # Tasks held here that do not run: assigned while their connector's config was gone
        # (deleted, and created again under its name before a rebalance revoked them), or whose
        # start failed before a runner existed. The leader leaves held tasks where they are, so
        # nobody else would ever start them: they start now that their configs exist, as Kafka
        # restarts a connector's assigned tasks after its task configs change.
        for held, task in sorted(self._assigned.tasks):
            if held == name and not self._task_runs_here(name, task):
                log.info("task %s-%d: held here and not running; starting it", name, task)
                self._start_task(name, task)

    def _resolved_or_none(self, config: Mapping[str, str] | None) -> dict[str, str] | None:
        """``config`` resolved by the config providers; None if it is None or does not
        resolve (a task started from it then fails, saying why: :meth:`_start_task`)."""
        if config is None:
            return None
        try:
            return dict(self.resolver.resolve(config).config)
        except Exception:  # noqa: BLE001 - reported by the task start that follows
            return None

    def _apply_target_here(self, name: str) -> None:
        worker = self._worker()
        snapshot = self.configs.snapshot()
        target = snapshot.target_state(name)
        if target is None:
            return
        if target is TargetState.STOPPED:
            if worker.instance_running(name):
                self._stop_instance(name)
            if name in self._assigned.connectors:
                self._report_stopped(name, snapshot.config(name) or {})
            return
        for held, task in sorted(self._assigned.tasks):
            # Held here but never started (kept back while the connector was STOPPED, see
            # _start_task); a FAILED one stays so until restarted, as through a pause.
            if held != name or self._task_runs_here(name, task):
                continue
            status = worker.status.task(name, task)
            if status is None or status.state is not State.FAILED:
                self._start_task(name, task)
        if name in self._assigned.connectors and not worker.instance_running(name):
            self._start_connector(name)  # resumed or paused from STOPPED
            return
        if name in worker.connectors:
            self._apply_target(name)
        if target is TargetState.STARTED:
            # Resumed: config changes while it was paused take effect now (Kafka requests a
            # task reconfiguration whenever a connector's new target state is STARTED).
            self._publish_task_configs(name)

    def _remove_here(self, name: str) -> None:
        """The connector was deleted: stop what of it runs here, tombstone its statuses."""
        worker = self._worker()
        owned_instance = name in self._assigned.connectors
        connector = worker.connectors.get(name)
        tasks = sorted(connector.tasks) if connector is not None else []
        if connector is not None:
            self.task_stops += len(tasks)
            worker.stop_connector(name)
        else:
            worker.forget_connector(name)  # a FAILED or STOPPED one held here
        worker.forget_topics(name)  # a deleted connector's active topics go with it
        if (owned_instance or self._is_leader) and self.statuses is not None:
            # ... on every worker, as in Kafka, whose leader tombstones them at a delete: a
            # connector created again under the name lists only the topics it uses itself.
            self.statuses.reset_topics(name)
        # The statuses go before this worker stops holding the name: once its join metadata
        # no longer lists it, a re-created connector may be assigned elsewhere, whose RUNNING
        # these tombstones must not follow.
        if owned_instance:
            worker.status.remove_connector(name)  # the connector and every task it knows
        else:
            for task in tasks:
                worker.status.remove_task(name, task)
        with self._assigned_lock:
            held = self._assigned
            self._assigned = Held.of(
                (c for c in held.connectors if c != name),
                (t for t in held.tasks if t[0] != name),
            )
        held_here = name in held.connectors or any(t[0] == name for t in held.tasks)
        if held_here and self.configs.snapshot().contains(name):
            # Created again while this removal waited (behind a stop that took its graceful
            # timeout, say): a round assigned meanwhile read the name configured and this
            # worker still holding it, so the leader counts it as running here. Rejoin without
            # it, and it is assigned as lost work; else nobody would run it until the next
            # rebalance.
            self._request_rebalance(f"connector {name} was created again while it was removed")

    def _restart_here(self, request: RestartRequest) -> None:
        """A KIP-745 restart request from the config topic: restart our part of it.

        In Kafka's order (DistributedHerder.doRestartConnectorAndTasks): stop the connector's
        instance, mark it RESTARTING; stop the planned tasks together, mark them RESTARTING;
        then start the instance and the tasks. A task stopped in the generation it started in
        thus reads RUNNING, RESTARTING, RUNNING: its stop's UNASSIGNED lands on its RUNNING (and
        is ignored, core/distributed/status_store.py), and its start writes nothing before
        RUNNING over the RESTARTING (Worker.start_task). Marked first, it read RESTARTING,
        UNASSIGNED (the stop's, then the start's, for as long as its host took to start),
        RUNNING."""
        worker = self._worker()
        name = request.connector
        status = worker.status.connector(name)
        if name in self._assigned.connectors and (
            not request.only_failed or (status is not None and status.state is State.FAILED)
        ):
            restart_connector = True
            if worker.instance_running(name):
                self._stop_instance(name)
            worker.status.set_connector(name, Status(State.RESTARTING, worker.worker_id))
        else:
            restart_connector = False
        # Planned after the instance's stop (which changes no task status), so that the tasks
        # marked RESTARTING are the ones held here right before: one a rebalance moved away
        # meanwhile is not started here (_start_task), and its RESTARTING could land on its
        # new owner's RUNNING, which nothing would replace.
        tasks: list[int] = []
        for task, task_status in sorted(worker.status.tasks_of(name).items()):
            if not request.include_tasks or (name, task) not in self._assigned.tasks:
                continue
            if request.only_failed and task_status.state is not State.FAILED:
                continue
            snapshot = self.configs.snapshot()
            if snapshot.target_state(name) is TargetState.STOPPED or task >= len(
                snapshot.tasks(name)
            ):
                # Stopped (or shrunk) since the request was made: the task starts no more
                # (_start_task), so it is not marked RESTARTING, which nothing would replace.
                if self._task_runs_here(name, task):
                    worker.stop_task(name, task)
                    self.task_stops += 1
                worker.status.remove_task(name, task)
                continue
            tasks.append(task)
        running = [task for task in tasks if self._task_runs_here(name, task)]
        if running:
            worker.stop_tasks_of(name, running)
            self.task_stops += len(running)
        for task in tasks:
            if (name, task) in self._assigned.tasks:  # not moved away during the stop
                worker.status.set_task(name, task, Status(State.RESTARTING, worker.worker_id))
        if restart_connector:
            self._start_connector(name)
        for task in tasks:
            self._start_task(name, task)

    def _reconfiguration_requested(self, name: str) -> None:
        self._ops.post(name, "task reconfiguration", partial(self._publish_task_configs, name))

    # -- the leader's end of publishing task configs ---------------------------------------------

    def receive_task_configs(self, name: str, configs: Sequence[Mapping[str, str]]) -> None:
        """Internal ``POST /connectors/<name>/tasks``: the connector's owner sends the task
        configs it generated; only the leader writes them, and only the leader says the
        connector is gone (a 404 makes the sender drop them).

        A non-empty set for a STOPPED connector is refused (400), as Kafka's
        ``writeTaskConfigs``: configs generated by an instance that a stop overtook would
        otherwise start their tasks under a connector that says STOPPED. The check runs in
        the same leader write step as the write, on the config topic read to its end, so a
        stop cannot land between them.
        """
        self._worker()

        def writable() -> None:
            self._known(name)
            if configs and self.configs.snapshot().target_state(name) is TargetState.STOPPED:
                raise BadRequestError(
                    f"Cannot submit non-empty set of task configs for stopped connector {name}"
                )

        self._leader_write(
            "write task configs", lambda: self.configs.put_task_configs(name, configs), writable
        )

    # -- one task restarted here (REST) ----------------------------------------------------------

    def _restart_one_task(self, name: str, task: int) -> None:
        if self._task_runs_here(name, task):
            self._worker().stop_task(name, task)
            self.task_stops += 1
        self._start_task(name, task)
