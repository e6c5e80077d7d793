"""An in-process :class:`~core.worker.Worker` on a real broker, as integration tests drive one:
real plugin hosts, a memory offset store, connectors started through the worker's own calls."""

from __future__ import annotations

from core.offsets import MemoryOffsetStore
from core.plugins import PluginCatalogue
from core.worker import Worker

# String converters, offsets committed every 200 ms, and a 6 s session timeout (a sink's group
# join then takes ~3 s on the dev broker, which holds joins for half of it).
WORKER_PROPS = {
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    "offset.flush.interval.ms": "200",
    "consumer.session.timeout.ms": "6000",
    "consumer.heartbeat.interval.ms": "1000",
}


def in_process_worker(catalogue: PluginCatalogue, bootstrap: str, **props: str) -> Worker:
    """A worker with :data:`WORKER_PROPS`, ``props`` over them."""
    return Worker(
        "w1",
        {**WORKER_PROPS, **props},
        catalogue,
        MemoryOffsetStore(),
        client_props={"bootstrap.servers": bootstrap},
    )


def start_connector(worker: Worker, name: str, props: dict[str, str]) -> None:
    """Start connector ``name`` and every task it configures, waiting for each task's start."""
    worker.start_connector(name, {"name": name, **props})
    for task_id, config in enumerate(worker.task_configs(name)):
        assert worker.start_task(name, task_id, config).wait_started(60)
