"""A real plugin index for tests: ``copycat registry serve`` with real twine uploads.

The session's index (fixture ``plugin_index`` in tests/conftest.py) holds the bundled plugins,
published with twine exactly as a third-party author would, and copycat-plugin-api in its
libraries (plain pip needs it when it installs a plugin without Copycat's override).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.support.wheels import build_wheel

UPLOAD_TOKEN = "test-upload-token"
# Where the bundled plugins' dependencies (orjson, fastavro, httpx) come from: the public
# index, through uv's cache. Plugins published in tests never need it.
PUBLIC_INDEX = "https://pypi.org/simple/"
# What every plugin wheel a test publishes carries, so the index accepts its metadata.
PLUGIN_METADATA = {"Summary": "A plugin built by a test", "License": "Apache-2.0"}
API_REQUIREMENT = "copycat-plugin-api>=0.1,<0.2"


def twine_upload(
    registry_url: str, wheel: Path, token: str = UPLOAD_TOKEN
) -> subprocess.CompletedProcess[str]:
    """``twine upload`` of one wheel; the completed process (check ``returncode``)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "twine",
            "upload",
            "--disable-progress-bar",
            "--non-interactive",
            "--repository-url",
            registry_url.rstrip("/") + "/",
            "-u",
            "__token__",
            "-p",
            token,
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def source_plugin_wheel(
    out: Path,
    name: str,
    version: str,
    *,
    requires: Sequence[str] = (),
    body: str = "",
    entry_points: Mapping[str, Mapping[str, str]] | None = None,
    metadata: Mapping[str, str] | None = None,
    component_version: str | None = None,
) -> Path:
    """A plugin wheel with one source connector ``<Module>Source`` emitting ``COUNT`` records
    whose values are ``<prefix><n>``; ``body`` is extra module code (e.g. ``import dep``) and
    ``PREFIX`` may be set there (default: the plugin name). Its ``version()`` returns
    ``component_version``, by default the package ``version``."""
    module = name.replace("-", "_")
    code = f'''
from plugin_api import (
    STRING_SCHEMA, ConfigDef, ConfigType, Importance, SourceConnector, SourceRecord, SourceTask,
)
PREFIX = "{name}-"
{body}
CONFIG = ConfigDef().define(
    "topic", ConfigType.STRING, importance=Importance.HIGH, documentation="Target topic."
).define("count", ConfigType.INT, 20, importance=Importance.LOW, documentation="Records.")


class Task(SourceTask):
    def start(self, props):
        self.topic, self.left = props["topic"], int(props.get("count", "20"))
        self.n = 0

    def poll(self):
        if self.left <= 0:
            return None
        self.left -= 1
        self.n += 1
        return [SourceRecord({{"p": 0}}, {{"n": self.n}}, self.topic,
                             value_schema=STRING_SCHEMA, value=f"{{PREFIX}}{{self.n}}")]

    def stop(self):
        pass

    def version(self):
        return "{component_version or version}"


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
        return "{component_version or version}"
'''
    return build_wheel(
        out,
        name,
        version,
        {f"{module}.py": code},
        requires=[API_REQUIREMENT, *requires],
        entry_points=entry_points
        if entry_points is not None
        else {"copycat.connectors": {f"{module}-source": f"{module}:Source"}},
        metadata=PLUGIN_METADATA if metadata is None else metadata,
    )
