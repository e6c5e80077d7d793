"""The Spark data plane on a real Spark cluster (``local-cluster[2,1,1024]``: two executor JVMs
of one slot each) and the run's Apache Kafka: tasks run on executors, plugins stay isolated
there, nothing is lost when an executor is killed, offsets move between runtimes, and REST
controls tasks on Spark as it controls local ones.

One SparkSession for the whole module (starting one takes ~20 s); pytest-xdist's ``loadfile``
keeps every test of this module in one process, where the session lives. Each test runs an
in-process standalone worker (``RestWorker``) that joins that session.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from registry import install
from tests.support.kafka import read_all, wait_for
from tests.support.marketplace import API_REQUIREMENT, PLUGIN_METADATA
from tests.support.rest import RestWorker
from tests.support.spark import (
    ancestors,
    executor_jvm_of,
    process_cwd,
    processes_under,
    start_session,
    stop_session,
)
from tests.support.wheels import build_wheel

pyspark = pytest.importorskip("pyspark")

pytestmark = [pytest.mark.integration, pytest.mark.spark]

# A task on Spark reports every 0.5 s in these tests (the default is 1 s).
HEARTBEAT_MS = "500"
# Starting a task on a busy 2-core machine: job scheduling, a Python worker fork, an env built
# offline with uv on first use, the plugin host, the Kafka clients.
TASK_START_S = 90.0
# What REST control must take on Spark-run tasks ("within a few seconds"), with slack for
# a loaded machine.
CONTROL_S = 10.0


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = start_session()
    try:
        yield session
    finally:
        stop_session(session)


def _worker(tmp: Path, bootstrap: str, plugin_path: Path, **extra: str) -> RestWorker:
    return RestWorker(
        tmp,
        bootstrap,
        plugin_path,
        {
            "task.runtime": "spark",
            "spark.master": "local-cluster[2,1,1024]",  # joins the module's session
            "task.spark.heartbeat.interval.ms": HEARTBEAT_MS,
            **extra,
        },
    )


def _status(http: httpx.Client, name: str) -> dict[str, Any]:
    response = http.get(f"/connectors/{name}/status")
    return response.json() if response.status_code == 200 else {}


def _task_state(http: httpx.Client, name: str, task: int = 0) -> str | None:
    tasks = _status(http, name).get("tasks", [])
    return next((t["state"] for t in tasks if t["id"] == task), None)


def _wait_state(http: httpx.Client, name: str, state: str, timeout_s: float) -> dict[str, Any]:
    wait_for(lambda: _task_state(http, name) == state, timeout_s, f"{name} task 0 {state}")
    return _status(http, name)


def _runner(worker: RestWorker, name: str, task: int = 0) -> Any:
    assert worker.herder.worker is not None
    return worker.herder.worker.connectors[name].tasks[task]


# -- plugins built by the tests ------------------------------------------------------------------

_PROBE_SOURCE = '''
import json, os, sys, time
import {lib}
from plugin_api import (
    STRING_SCHEMA, ConfigDef, ConfigType, Importance, SourceConnector, SourceRecord, SourceTask,
)
CONFIG = ConfigDef().define(
    "topic", ConfigType.STRING, importance=Importance.HIGH, documentation="Target topic."
).define("interval.ms", ConfigType.INT, 100, importance=Importance.LOW, documentation="Pace.")


class Task(SourceTask):
    def start(self, props):
        self.topic = props["topic"]
        self.interval = int(props.get("interval.ms", "100")) / 1000
        stored = self.context.offset_storage_reader().offset({{"probe": "{name}"}})
        self.n = stored["n"] if stored else 0

    def poll(self):
        time.sleep(self.interval)
        self.n += 1
        value = json.dumps({{"n": self.n, "lib": {lib}.VERSION, "pid": os.getpid(),
                            "prefix": sys.prefix}})
        return [SourceRecord({{"probe": "{name}"}}, {{"n": self.n}}, self.topic,
                             value_schema=STRING_SCHEMA, value=value)]

    def stop(self):
        pass

    def version(self):
        return "1.0"


class Source(SourceConnector):
    def start(self, props):
        self.props = dict(props)

    def task_class(self):
        return Task

    def task_configs(self, max_tasks):
        return [self.props]

    def stop(self):
        pass

    def config(self):
        return CONFIG

    def version(self):
        return "1.0"
'''


def _probe_plugins(tmp: Path, plugin_path: Path) -> tuple[str, str, str]:
    """Two source plugins pinning conflicting versions of one small library (``tinylib-<uid>``
    1.0 and 2.0), installed into ``plugin_path`` from local wheels; returns (library module,
    plugin a's module, plugin b's module). Each record says which library version its task
    saw, the host's pid and ``sys.prefix``."""
    uid = uuid.uuid4().hex[:6]
    lib = f"tinylib_{uid}"
    wheels = tmp / "wheels"
    for version in ("1.0", "2.0"):
        build_wheel(wheels, f"tinylib-{uid}", version, {f"{lib}.py": f'VERSION = "{version}"\n'})
    modules = []
    for letter, version in (("a", "1.0"), ("b", "2.0")):
        name = f"probe-{letter}-{uid}"
        module = name.replace("-", "_")
        wheel = build_wheel(
            wheels,
            name,
            "1.0",
            {f"{module}.py": _PROBE_SOURCE.format(lib=lib, name=name)},
            requires=[API_REQUIREMENT, f"tinylib-{uid}=={version}"],
            entry_points={"copycat.connectors": {f"{module}-source": f"{module}:Source"}},
            metadata=PLUGIN_METADATA,
        )
        install(str(wheel), plugin_path, find_links=[str(wheels)], no_index=True)
        modules.append(module)
    return lib, modules[0], modules[1]


def _converters(plugin_index: Any, plugin_path: Path) -> None:
    """The bundled converters (StringConverter), from the session's index, into a plugin.path
    of the test's own."""
    from core.bundled import bundled_plugin_dirs, project_version

    for project in bundled_plugin_dirs():
        name, version = project_version(project)
        if name in ("copycat-converters", "copycat-file"):
            install(f"{name}=={version}", plugin_path, index_url=plugin_index.index_url)


# -- tests -------------------------------------------------------------------------------------


def test_tasks_run_in_executor_processes_from_envs_built_there_with_conflicting_libraries(
    spark: Any, tmp_path: Path, bootstrap_servers: str, plugin_index: Any, broker: Any
) -> None:
    plugins = tmp_path / "plugins"
    _converters(plugin_index, plugins)
    lib, mod_a, mod_b = _probe_plugins(tmp_path, plugins)
    topics = {m: f"probe-{m}-{uuid.uuid4().hex[:6]}" for m in (mod_a, mod_b)}
    for topic in topics.values():
        broker.create_topic(topic)
    with _worker(tmp_path, bootstrap_servers, plugins) as worker, worker.client() as http:
        for module, topic in topics.items():
            config = {"connector.class": f"{module}.Source", "topic": topic, "tasks.max": "1"}
            assert http.put(f"/connectors/{module}/config", json=config).status_code == 201
        statuses = {m: _wait_state(http, m, "RUNNING", TASK_START_S) for m in topics}
        records = {
            m: [json.loads(r.value()) for r in read_all(bootstrap_servers, t, 3)]
            for m, t in topics.items()
        }
        sc = spark.sparkContext
        jvms = {}
        for module, status in statuses.items():
            runner = _runner(worker, module)
            placement = runner.placement
            # Spark's status API: the task's job group has a running job whose task runs on
            # the executor its status names.
            assert placement is not None and placement.job_id is not None
            assert placement.job_id in sc.statusTracker().getJobIdsForGroup(runner.group)
            assert sc.statusTracker().getJobInfo(placement.job_id).status == "RUNNING"
            worker_id = status["tasks"][0]["worker_id"]
            assert f"executor {placement.executor_id} on {placement.host}" in worker_id
            assert runner.group in worker_id
            latest = records[module][-1]
            jvm = executor_jvm_of(latest["pid"])
            assert jvm is not None, f"host {latest['pid']} is not under an executor JVM"
            jvms[module] = jvm
            # The host runs from the env cache inside that executor's working directory,
            # built from the archive Spark shipped to it.
            cache = process_cwd(jvm) / "copycat-envs"
            prefix = Path(latest["prefix"])
            assert prefix.parent == cache, (prefix, cache)
            lock = (prefix / "pylock.toml").read_text()
            assert f'"{process_cwd(jvm)}/copycat-env-' in lock  # built-from-wheelhouse
            assert runner.remote.get("plugin_modules_here") == []
            assert all(r["pid"] == latest["pid"] for r in records[module])
        # Both connectors at once, one per executor, each with its own library version.
        assert jvms[mod_a] != jvms[mod_b]
        assert {r["lib"] for r in records[mod_a]} == {"1.0"}
        assert {r["lib"] for r in records[mod_b]} == {"2.0"}
        # The executors' Python (PYSPARK_PYTHON) cannot import any of it.
        for module in (lib, mod_a, mod_b):
            probe = subprocess.run(
                [os.environ["PYSPARK_PYTHON"], "-c", f"import {module}"], capture_output=True
            )
            assert probe.returncode != 0 and b"ModuleNotFoundError" in probe.stderr
