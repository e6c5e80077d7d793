"""A task the leader left with a worker runs there, even if its config came only later.

Found by the distributed lifecycle storm (tests/e2e/test_distributed.py): a task was assigned
to a worker in the very rebalance that raced its connector's delete, so the worker held it but
could not start it (no config); the connector was created again under its name before any
rebalance revoked the task, and the leader, which leaves held tasks where they are, never
moved it. Nobody ran it: the connector stayed with one task UNASSIGNED for good. Kafka restarts
a connector's assigned tasks after its task configs change; so does Copycat now.

The herder here is a real DistributedHerder that never joins a group: its worker (real plugin
hosts, the real broker) and config store (the in-memory one a herder starts with) are driven
by the test, as the group and the config topic would.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.distributed.assignor import Held
from core.distributed.herder import DistributedHerder
from core.offsets import MemoryOffsetStore
from core.plugins import PluginCatalogue
from core.status import State
from core.worker import Worker
from tests.support.processes import wait_until

pytestmark = pytest.mark.integration


def test_a_task_held_but_not_running_starts_once_its_configs_arrive(
    faulty_plugin_dirs: list[Path], bootstrap_servers: str, topic_name: str
) -> None:
    props = {
        "bootstrap.servers": bootstrap_servers,
        "group.id": f"held-{topic_name}",
        "config.storage.topic": f"{topic_name}-configs",
        "offset.storage.topic": f"{topic_name}-offsets",
        "status.storage.topic": f"{topic_name}-status",
        "key.converter": "StringConverter",
        "value.converter": "StringConverter",
    }
    herder = DistributedHerder(None, worker_props=props)
    worker = Worker(
        "w1",
        props,
        PluginCatalogue.scan(faulty_plugin_dirs),
        MemoryOffsetStore(),
        client_props={"bootstrap.servers": bootstrap_servers},
    )
    herder.worker = worker
    name = f"held-{topic_name}"
    try:
        # Assigned tasks 0 and 1 of a connector whose config is gone: nothing to start.
        herder._assigned = Held.of((), [(name, 0), (name, 1)])
        herder._start_task(name, 0)
        herder._start_task(name, 1)
        assert not worker.connectors.get(name)
        # Created again under its name: its config and task configs arrive.
        config = {
            "name": name,
            "connector.class": "FaultySource",
            "topic": topic_name,
            "tasks.max": "2",  # two task configs: each task start checks them (KIP-1004)
        }
        herder.configs.put_connector_config(name, config, None)
        herder.configs.put_task_configs(name, [config, config])
        herder._apply_task_configs(name)
        wait_until(
            lambda: all(
                (status := worker.status.task(name, task)) is not None
                and status.state is State.RUNNING
                for task in (0, 1)
            ),
            60,
            "both held tasks to run",
        )
        # A task that is not held here is not started by it.
        herder.configs.put_task_configs(name, [config, config, config])
        herder._apply_task_configs(name)
        assert sorted(worker.connectors[name].tasks) == [0, 1]
    finally:
        worker.stop()
