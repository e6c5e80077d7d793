"""For plugin authors: ``copycat plugin new`` (scaffold) and ``copycat plugin publish``.

:func:`scaffold` writes a project that builds, whose generated tests pass as generated (they
run the example on ``plugin_api.testing``), and that ``copycat registry serve`` accepts: a
pyproject with the Copycat entry point, the licence, a summary and the ``copycat-plugin-api``
range of this runtime. :func:`publish` builds its wheel with ``uv build`` and uploads it with
``twine`` (both standard tools, run as subprocesses from the CLI).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from packaging.version import Version

from plugin_api import ConnectException
from registry.installer import PLUGIN_API_DISTRIBUTION, run_uv, runtime_api_version

KINDS = ("source", "sink", "converter", "transform")
_GROUPS = {
    "source": "copycat.connectors",
    "sink": "copycat.connectors",
    "converter": "copycat.converters",
    "transform": "copycat.transforms",
}
_CLASS_SUFFIX = {
    "source": "SourceConnector",
    "sink": "SinkConnector",
    "converter": "Converter",
    "transform": "Transform",
}
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9._-]*$")
TOKEN_ENV = "COPYCAT_INDEX_TOKEN"


class ScaffoldError(ConnectException):
    """The project cannot be scaffolded (bad name or kind, or the directory exists)."""


def api_range() -> str:
    """The plugin_api range a new plugin declares: this runtime's minor series."""
    version = Version(runtime_api_version() or "0.1.0")
    # A 0.x minor may break compatibility (as SemVer allows), so a 0.x range ends at the next.
    upper = f"{version.major + 1}.0" if version.major else f"0.{version.minor + 1}"
    return f">={version.major}.{version.minor},<{upper}"


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", name) if part)


_SOURCE = '''"""{title}: a source connector emitting numbered greetings (replace: your system)."""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version

from plugin_api import (
    STRING_SCHEMA,
    ConfigDef,
    ConfigType,
    Importance,
    SourceConnector,
    SourceRecord,
    SourceTask,
)

try:
    # version() reports the package's version (pyproject.toml), so each release reports its
    # own: workers tell installed versions apart by version() (connector.plugin.version,
    # statuses), and a release that kept the old one could not be told from it.
    __version__ = package_version("{name}")
except PackageNotFoundError:  # imported from a source tree that is not installed
    __version__ = "0.0.0"

CONFIG = (
    ConfigDef()
    .define("topic", ConfigType.STRING, importance=Importance.HIGH,
            documentation="Topic the records go to.")
    .define("greeting", ConfigType.STRING, "hello", importance=Importance.LOW,
            documentation="Text each record starts with.")
    .define("count", ConfigType.INT, 100, importance=Importance.LOW,
            documentation="How many records to emit in total.")
)
# Records returned by one poll(): the worker moves them to Kafka in one batch.
BATCH = 10


class {cls}Task(SourceTask):
    def start(self, props: Mapping[str, str]) -> None:
        config = CONFIG.parse(props)
        self.topic, self.greeting = config["topic"], config["greeting"]
        self.count = config["count"]
        stored = self.context.offset_storage_reader().offset({{"source": "{name}"}})
        self.next = stored["n"] if stored else 0

    def poll(self) -> list[SourceRecord] | None:
        if self.next >= self.count:
            return None
        end = min(self.next + BATCH, self.count)
        batch = [
            SourceRecord({{"source": "{name}"}}, {{"n": n + 1}}, self.topic,
                         value_schema=STRING_SCHEMA, value=f"{{self.greeting}} {{n}}")
            for n in range(self.next, end)
        ]
        self.next = end
        return batch

    def stop(self) -> None:
        pass

    def version(self) -> str:
        return __version__


class {cls}(SourceConnector):
    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type[SourceTask]:
        return {cls}Task

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.props]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return CONFIG

    def version(self) -> str:
        return __version__
'''

_SINK = '''"""{title}: a sink connector appending values to a file (replace: your system)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version

from plugin_api import ConfigDef, ConfigType, Importance, SinkConnector, SinkRecord, SinkTask

try:
    # version() reports the package's version (pyproject.toml), so each release reports its
    # own: workers tell installed versions apart by version() (connector.plugin.version,
    # statuses), and a release that kept the old one could not be told from it.
    __version__ = package_version("{name}")
except PackageNotFoundError:  # imported from a source tree that is not installed
    __version__ = "0.0.0"

CONFIG = ConfigDef().define(
    "file", ConfigType.STRING, importance=Importance.HIGH,
    documentation="File the record values are appended to, one per line.",
)


class {cls}Task(SinkTask):
    def start(self, props: Mapping[str, str]) -> None:
        self.path = CONFIG.parse(props)["file"]

    def put(self, records: Sequence[SinkRecord]) -> None:
        with open(self.path, "a", encoding="utf-8") as out:
            out.writelines(f"{{r.value}}\\n" for r in records)

    def stop(self) -> None:
        pass

    def version(self) -> str:
        return __version__


class {cls}(SinkConnector):
    def start(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def task_class(self) -> type[SinkTask]:
        return {cls}Task

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [self.props]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return CONFIG

    def version(self) -> str:
        return __version__
'''

_CONVERTER = '''"""{title}: a converter storing text upper-cased (replace: your format)."""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version

from plugin_api import (
    STRING_SCHEMA,
    ConfigDef,
    ConfigType,
    Converter,
    Headers,
    Importance,
    Schema,
    SchemaAndValue,
)

try:
    # version() reports the package's version (pyproject.toml), so each release reports its
    # own: workers tell installed versions apart by version() (connector.plugin.version,
    # statuses), and a release that kept the old one could not be told from it.
    __version__ = package_version("{name}")
except PackageNotFoundError:  # imported from a source tree that is not installed
    __version__ = "0.0.0"

CONFIG = ConfigDef().define(
    "encoding", ConfigType.STRING, "utf-8", importance=Importance.LOW,
    documentation="Character encoding of the bytes in Kafka.",
)


class {cls}(Converter):
    def configure(self, configs: Mapping[str, object], is_key: bool) -> None:
        self.encoding = CONFIG.parse(configs)["encoding"]

    def from_connect_data(
        self, topic: str, schema: Schema | None, value: object, headers: Headers | None = None
    ) -> bytes | None:
        return None if value is None else str(value).upper().encode(self.encoding)

    def to_connect_data(
        self, topic: str, data: bytes | None, headers: Headers | None = None
    ) -> SchemaAndValue:
        if data is None:
            return SchemaAndValue(STRING_SCHEMA, None)
        return SchemaAndValue(STRING_SCHEMA, bytes(data).decode(self.encoding))

    def config(self) -> ConfigDef:
        return CONFIG

    def version(self) -> str:
        return __version__
'''

_TRANSFORM = '''"""{title}: a transformation upper-casing values (replace: your logic)."""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version

from plugin_api import ConfigDef, ConfigType, ConnectRecord, Importance, Transformation

try:
    # version() reports the package's version (pyproject.toml), so each release reports its
    # own: workers tell installed versions apart by version() (connector.plugin.version,
    # statuses), and a release that kept the old one could not be told from it.
    __version__ = package_version("{name}")
except PackageNotFoundError:  # imported from a source tree that is not installed
    __version__ = "0.0.0"

CONFIG = ConfigDef().define(
    "suffix", ConfigType.STRING, "", importance=Importance.LOW,
    documentation="Text appended to each upper-cased value.",
)


class {cls}(Transformation[ConnectRecord]):
    def configure(self, configs: Mapping[str, object]) -> None:
        self.suffix = CONFIG.parse(configs)["suffix"]

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if not isinstance(record.value, str):
            return record
        return record.new_record(value=record.value.upper() + self.suffix)

    def config(self) -> ConfigDef:
        return CONFIG

    def version(self) -> str:
        return __version__
'''

_TESTS = {
    "source": """from plugin_api.testing import run_source_task

from {module} import {cls}, {cls}Task


def test_emits_numbered_greetings() -> None:
    run = run_source_task({cls}Task, {{"topic": "t", "count": "25"}})
    assert run.values == [f"hello {{n}}" for n in range(25)]
    assert run.offset_for({{"source": "{name}"}}) == {{"n": 25}}


def test_resumes_after_its_committed_offset() -> None:
    run = run_source_task(
        {cls}Task, {{"topic": "t", "count": "25"}}, offsets=[({{"source": "{name}"}}, {{"n": 20}})]
    )
    assert run.values == [f"hello {{n}}" for n in range(20, 25)]


def test_config_definition_is_valid() -> None:
    assert {{"topic", "greeting", "count"}} <= set({cls}().config().names())
""",
    "sink": """from pathlib import Path

from plugin_api.testing import run_sink_task, sink_records

from {module} import {cls}, {cls}Task


def test_appends_every_value(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    run = run_sink_task({cls}Task, {{"file": str(out)}}, sink_records("t", ["a", "b", "c"]))
    assert out.read_text().splitlines() == ["a", "b", "c"]
    assert sum(run.committed.values()) == 3


def test_config_definition_is_valid() -> None:
    assert "file" in {cls}().config().names()
""",
    "converter": """from plugin_api import STRING_SCHEMA
from plugin_api.testing import converter_round_trip

from {module} import {cls}


def test_round_trip_upper_cases() -> None:
    result = converter_round_trip({cls}, {{}}, "t", STRING_SCHEMA, "hello")
    assert result.value == "HELLO"


def test_config_definition_is_valid() -> None:
    assert "encoding" in {cls}().config().names()
""",
    "transform": """from plugin_api.testing import apply_transform, sink_records

from {module} import {cls}


def test_upper_cases_string_values() -> None:
    record = sink_records("t", ["hello"])[0]
    result = apply_transform({cls}, {{"suffix": "!"}}, record)
    assert result is not None and result.value == "HELLO!"


def test_config_definition_is_valid() -> None:
    assert "suffix" in {cls}().config().names()
""",
}

_PYPROJECT = """[project]
name = "{name}"
version = "0.1.0"
description = "{title}: a Copycat {kind} plugin."
readme = "README.md"
requires-python = ">=3.11"
license = "Apache-2.0"
dependencies = ["{api}{api_range}"]

[project.entry-points."{group}"]
{cls} = "{module}:{cls}"

[project.optional-dependencies]
test = ["pytest>=8", "{api}{api_range}"]

[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[tool.hatch.build.targets.wheel]
packages = ["src/{module}"]

[tool.pytest.ini_options]
pythonpath = ["src"]
"""

_README = """# {name}

A Copycat {kind} plugin (`{cls}`), scaffolded by `copycat plugin new`.

## Develop

The generated tests run on `plugin_api.testing`, no broker. `copycat-plugin-api` is not on
PyPI: it comes from your Copycat index (`copycat registry serve` serves it) or from a Copycat
checkout; pytest comes from PyPI.

```bash
uv run --no-project --index http://REGISTRY:8090/simple/ --with pytest --with-editable . pytest
uv run --no-project --with-editable ~/copycat/plugin_api --with pytest --with-editable . pytest
```

## Publish and install

```bash
copycat plugin publish --index http://REGISTRY:8090 --token TOKEN
copycat plugins --plugin-path /opt/copycat/plugins install {name} \\
    --index-url http://REGISTRY:8090/simple/
```

A running worker picks the plugin up without a restart; then create a connector with
`"{config_key}": "{cls}"`. See Copycat's docs/plugin-author-guide.md.
"""


def scaffold(name: str, kind: str, parent: Path) -> Path:
    """Write a new plugin project ``parent/name`` of ``kind``; return its directory.

    Raises:
        ScaffoldError: a bad name or kind, or the directory exists.
    """
    if kind not in KINDS:
        raise ScaffoldError(f"unknown plugin kind {kind!r}: choose one of {', '.join(KINDS)}")
    if not _NAME.match(name):
        raise ScaffoldError(
            f"{name!r} is not a valid distribution name (letters, digits, '.', '_', '-')"
        )
    project = parent / name
    if project.exists():
        raise ScaffoldError(f"{project} already exists")
    module = re.sub(r"[^A-Za-z0-9]+", "_", name).lower()
    cls = _camel(name)
    suffix = _CLASS_SUFFIX[kind]
    if kind in ("source", "sink") and cls.endswith(kind.capitalize()):
        suffix = "Connector"  # greeter-source -> GreeterSourceConnector
    if not cls.endswith(suffix):
        cls += suffix
    values = {
        "name": name,
        "kind": kind,
        "module": module,
        "cls": cls,
        "title": _camel(name),
        "group": _GROUPS[kind],
        "api": PLUGIN_API_DISTRIBUTION,
        "api_range": api_range(),
        "config_key": {
            "source": "connector.class",
            "sink": "connector.class",
            "converter": "value.converter",
            "transform": "transforms.<alias>.type",
        }[kind],
    }
    code = {"source": _SOURCE, "sink": _SINK, "converter": _CONVERTER, "transform": _TRANSFORM}
    (project / "src" / module).mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "pyproject.toml").write_text(_PYPROJECT.format(**values))
    (project / "README.md").write_text(_README.format(**values))
    (project / "src" / module / "__init__.py").write_text(code[kind].format(**values))
    (project / "tests" / f"test_{module}.py").write_text(_TESTS[kind].format(**values))
    return project


def test_command(project: Path) -> str:
    """The command that runs ``project``'s generated tests: with this runtime's own
    ``plugin_api`` when it runs from a Copycat checkout (``copycat-plugin-api`` is not on
    PyPI), else with plugin_api from a Copycat index (its URL left for the author to fill)."""
    import plugin_api

    source = Path(plugin_api.__file__).resolve().parents[2]  # <checkout>/plugin_api/src/...
    if (source / "pyproject.toml").is_file():
        api = f"--with-editable {source}"
    else:
        api = "--index http://REGISTRY:8090/simple/"
    return f"cd {project} && uv run --no-project {api} --with pytest --with-editable . pytest"


def build_wheel(project: Path, out_dir: Path) -> Path:
    """Build ``project``'s wheel with ``uv build`` into ``out_dir``; return the wheel."""
    before = set(out_dir.glob("*.whl")) if out_dir.exists() else set()
    run_uv(
        ["build", "--wheel", "--quiet", "--out-dir", str(out_dir), str(project)],
        f"building the wheel of {project}",
    )
    built = sorted(set(out_dir.glob("*.whl")) - before, key=lambda p: p.stat().st_mtime)
    if not built:  # rebuilt to an identical name: take the newest
        built = sorted(out_dir.glob("*.whl"), key=lambda p: p.stat().st_mtime)
    if not built:
        raise ConnectException(f"uv build produced no wheel for {project}")
    return built[-1]


def publish(project: Path, index: str, token: str | None = None) -> Path:
    """Build ``project``'s wheel and upload it to ``index`` (a registry URL) with twine.

    Raises:
        ConnectException: the build fails, or the index rejects the upload (its reasons are in
            the message).
    """
    wheel = build_wheel(project, project / "dist")
    env = dict(os.environ)
    env["TWINE_USERNAME"] = "__token__"
    env["TWINE_PASSWORD"] = token or os.environ.get(TOKEN_ENV) or "anonymous"
    env["TWINE_NON_INTERACTIVE"] = "1"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "twine",
            "upload",
            "--disable-progress-bar",
            "--repository-url",
            index.rstrip("/") + "/",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode != 0:
        raise ConnectException(
            f"uploading {wheel.name} to {index} failed:\n{(proc.stdout + proc.stderr).strip()}"
        )
    return wheel
