"""Apache Kafka Connect's side of ``bench/exactly_once_bench.py --peer``.

Kafka Connect offers exactly-once sources in distributed mode only, and
``exactly.once.source.support`` is a worker setting: :class:`ConnectEosWorkers` runs two
distributed workers on the bench's broker, each a group of its own, one with the setting
``disabled`` (the **off** variant: at-least-once, offsets flushed every
``offset.flush.interval.ms``) and one ``enabled`` (every other variant: each connector's
``transaction.boundary`` decides its transactions). Both stay up for the whole run; each copy
of the file is a fresh connector on the worker its variant needs, deleted afterwards. The
worker not in use idles (a heartbeat a few seconds), so the two do not compete for the cores.

Called from the bench script's main thread; the JVMs run under the keeper
(``tests/support/keeper.py``) and die with the bench process.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

from tests.support.jvm import BENCH_JVM_FLAGS
from tests.support.kafka_connect import KafkaConnect

__all__ = ["CONNECTOR_CLASS", "ConnectEosWorkers"]

CONNECTOR_CLASS = "org.apache.kafka.connect.file.FileStreamSourceConnector"

# How often a new connector's status is asked while waiting for its task to run: REST calls
# cost the worker little, and a task starts in about a second (fencing its zombies first).
STATUS_POLL_S = 0.1
TASK_START_TIMEOUT_S = 120.0


class ConnectEosWorkers:
    """Two Kafka Connect distributed workers: ``exactly.once.source.support`` off and on.

    Args:
        workdir: Their configs and logs (``disabled/`` and ``enabled/``).
        bootstrap_servers: The broker the bench runs on.
        offset_flush_interval_ms: The off variant's offset commit cadence (the default for
            ``transaction.boundary.interval.ms`` too; the bench sets that per connector).
    """

    def __init__(self, workdir: Path, bootstrap_servers: str, offset_flush_interval_ms: int):
        self.workers: dict[bool, KafkaConnect] = {}
        try:
            for eos in (False, True):
                support = "enabled" if eos else "disabled"
                self.workers[eos] = KafkaConnect(
                    workdir / support,
                    bootstrap_servers,
                    mode="distributed",
                    overrides={
                        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
                        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                        "offset.flush.interval.ms": str(offset_flush_interval_ms),
                        "exactly.once.source.support": support,
                    },
                    jvm_flags=BENCH_JVM_FLAGS,
                ).start(watch_pid=os.getpid())
        except BaseException:
            self.stop()
            raise
        self.http = {eos: worker.client() for eos, worker in self.workers.items()}

    def start(self, name: str, config: Mapping[str, str], *, eos: bool) -> None:
        """Create connector ``name`` on the worker for ``eos``; return once its task runs.

        Raises:
            AssertionError: the worker refused the connector, or its task failed or did not
                start in time (the message has the worker's answer or the task's trace).
        """
        http = self.http[eos]
        created = http.post("/connectors", json={"name": name, "config": dict(config)})
        assert created.status_code == 201, f"{name}: {created.status_code} {created.text}"
        deadline = time.monotonic() + TASK_START_TIMEOUT_S
        while True:
            status = http.get(f"/connectors/{name}/status")
            tasks = status.json().get("tasks", []) if status.status_code == 200 else []
            states = {task.get("state") for task in tasks}
            assert "FAILED" not in states, f"{name}: task failed: {tasks}"
            if states == {"RUNNING"}:
                return
            assert time.monotonic() < deadline, f"{name}: task not running: {status.text}"
            time.sleep(STATUS_POLL_S)

    def failed(self, name: str, *, eos: bool) -> str | None:
        """The trace of connector ``name``'s task if it failed, else None."""
        status = self.http[eos].get(f"/connectors/{name}/status")
        for task in status.json().get("tasks", []) if status.status_code == 200 else []:
            if task.get("state") == "FAILED":
                return str(task.get("trace", "FAILED"))
        return None

    def delete(self, name: str, *, eos: bool) -> None:
        self.http[eos].delete(f"/connectors/{name}")

    def stop(self) -> None:
        for http in getattr(self, "http", {}).values():
            http.close()
        for worker in self.workers.values():
            worker.stop()
