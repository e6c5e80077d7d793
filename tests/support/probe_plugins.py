"""Source plugins built by the Spark tests: two pinning conflicting versions of one small
library, each record saying what its task saw (library version, host pid, ``sys.prefix``) and
numbered from its stored offset, so a repeat or a gap shows a lost or missing offset commit.
A connector has ``tasks.max`` tasks (all numbering one sequence: give it more only where the
numbers do not matter).
"""

from __future__ import annotations

import uuid
from pathlib import Path

from registry import install
from tests.support.marketplace import API_REQUIREMENT, PLUGIN_METADATA
from tests.support.wheels import build_wheel

__all__ = ["probe_plugins"]

_PROBE_SOURCE = """
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
        return [dict(self.props) for _ in range(max_tasks)]

    def stop(self):
        pass

    def config(self):
        return CONFIG

    def version(self):
        return "1.0"
"""


def probe_plugins(tmp: Path, plugin_path: Path) -> tuple[str, str, str]:
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
