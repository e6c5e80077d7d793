"""Plugin isolation end to end: real uv-built venvs, real plugin host processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core.cli import main as cli_main
from isolation import (
    PluginEnvironment,
    PluginHostCrashed,
    PluginHostTimeout,
    ProducedBatch,
    RemotePluginError,
)
from registry import install, scan
from tests.support.wheels import build_wheel, build_zipapp

pytestmark = pytest.mark.integration

PLUGIN_SOURCE = """
import os, time
import conflictlib
from plugin_api import SourceConnector, SourceTask, SourceRecord, ConfigDef

MARKER = os.environ.get("COPYCAT_TEST_IMPORT_MARKER")
if MARKER:
    with open(MARKER, "a") as fh:
        fh.write(f"{{os.getpid()}}\\n")

class {cls}Task(SourceTask):
    def start(self, props):
        self.props = dict(props)
        self.sent = 0
    def poll(self):
        mode = self.props.get("mode", "")
        if mode == "sleep":
            time.sleep(float(self.props["seconds"]))
        if mode == "exit":
            print("about to exit with code 3", flush=True)
            os._exit(3)
        if mode == "raise":
            raise ValueError("bad thing in poll")
        self.sent += 1
        return [SourceRecord({{"p": 0}}, {{"n": self.sent}}, "t", value=conflictlib.VERSION)]
    def stop(self):
        pass
    def version(self):
        return "{version}"

class {cls}Connector(SourceConnector):
    def start(self, props):
        self.props = dict(props)
    def task_class(self):
        return {cls}Task
    def task_configs(self, max_tasks):
        return [dict(self.props, task=str(i)) for i in range(max_tasks)]
    def stop(self):
        pass
    def config(self):
        return ConfigDef()
    def version(self):
        return "{version}"

def pid_and_version():
    return os.getpid(), conflictlib.VERSION, conflictlib.__file__
"""


def _plugin_wheel(out: Path, name: str, version: str, lib_pin: str) -> Path:
    module = name.replace("-", "_")
    cls = module.title().replace("_", "")
    return build_wheel(
        out,
        name,
        version,
        {f"{module}/__init__.py": PLUGIN_SOURCE.format(cls=cls, version=version)},
        requires=[f"conflictlib=={lib_pin}", "copycat-plugin-api>=0.1,<1"],
        entry_points={"copycat.connectors": {f"{cls}Connector": f"{module}:{cls}Connector"}},
    )


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    house = tmp_path_factory.mktemp("wheelhouse")
    for version in ("1.0", "2.0"):
        build_wheel(
            house, "conflictlib", version, {"conflictlib/__init__.py": f"VERSION = {version!r}\n"}
        )
    _plugin_wheel(house, "alpha-plugin", "1.0.0", "1.0")
    _plugin_wheel(house, "beta-plugin", "1.0.0", "2.0")
    return house


@pytest.fixture(scope="module")
def installed(
    wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, PluginEnvironment]:
    plugin_path = tmp_path_factory.mktemp("plugin-path")
    envs = {}
    for name in ("alpha-plugin", "beta-plugin"):
        whl = next(wheelhouse.glob(f"{name.replace('-', '_')}-*.whl"))
        envs[name] = install(str(whl), plugin_path, find_links=[str(wheelhouse)], offline=True)
    return envs


def _start_task(env: PluginEnvironment, name: str, **props: str):
    host = env.start_host(name, call_timeout_s=30)
    connector = env.catalogue()[0]
    task_target = None
    obj = host.new(connector.target)
    host.call(obj, "start", {"name": name})
    task_target = host.task_class(obj)
    handle = host.next_handle()
    host.start_source_task(handle, task_target, props, {})
    return host, handle


def test_conflicting_library_versions_run_side_by_side(
    installed: dict[str, PluginEnvironment],
) -> None:
    alpha_host, alpha_task = _start_task(installed["alpha-plugin"], "alpha")
    beta_host, beta_task = _start_task(installed["beta-plugin"], "beta")
    try:
        assert alpha_host.alive and beta_host.alive and alpha_host.pid != beta_host.pid
        results: dict[str, list[str]] = {}

        def drive(label: str, host, handle) -> None:
            values = []
            for _ in range(50):
                values += ProducedBatch.from_wire(host.poll(handle).batch).values
            results[label] = values

        threads = [
            threading.Thread(target=drive, args=("alpha", alpha_host, alpha_task)),
            threading.Thread(target=drive, args=("beta", beta_host, beta_task)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results["alpha"] == ["1.0"] * 50
        assert results["beta"] == ["2.0"] * 50
        # Each host imports its library from its own venv.
        _, v1, f1 = alpha_host.eval("alpha_plugin:pid_and_version")
        _, v2, f2 = beta_host.eval("beta_plugin:pid_and_version")
        assert (v1, v2) == ("1.0", "2.0")
        assert f1.startswith(str(installed["alpha-plugin"].location))
        assert f2.startswith(str(installed["beta-plugin"].location))
        # plugin_api is the runtime's (parent-first), never a copy in the plugin venv.
        assert not list(installed["alpha-plugin"].import_path.glob("plugin_api*"))
    finally:
        alpha_host.close()
        beta_host.close()


def test_kill_9_of_one_host_fails_only_that_plugin(installed: dict[str, PluginEnvironment]) -> None:
    victim, victim_task = _start_task(
        installed["alpha-plugin"], "victim", mode="sleep", seconds="30"
    )
    other, other_task = _start_task(installed["beta-plugin"], "other")
    try:
        errors: list[BaseException] = []

        def poll_victim() -> None:
            try:
                victim.poll(victim_task)
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        t = threading.Thread(target=poll_victim)
        t.start()
        time.sleep(0.5)
        os.kill(victim.pid, signal.SIGKILL)
        t.join(10)
        assert len(errors) == 1 and isinstance(errors[0], PluginHostCrashed)
        assert "SIGKILL" in errors[0].exit_reason
        assert "victim" in str(errors[0])
        # Later requests fail fast with the same reason; the other plugin keeps working.
        with pytest.raises(PluginHostCrashed):
            victim.poll(victim_task)
        assert ProducedBatch.from_wire(other.poll(other_task).batch).values == ["2.0"]
    finally:
        victim.close()
        other.close()


def test_nonzero_exit_is_reported_with_output(installed: dict[str, PluginEnvironment]) -> None:
    host, task = _start_task(installed["alpha-plugin"], "quitter", mode="exit")
    with pytest.raises(PluginHostCrashed) as info:
        host.poll(task)
    assert info.value.exit_reason == "exited with code 3"
    assert "about to exit with code 3" in str(info.value)
    host.close()


def test_plugin_exception_carries_remote_traceback(installed: dict[str, PluginEnvironment]) -> None:
    host, task = _start_task(installed["alpha-plugin"], "raiser", mode="raise")
    try:
        with pytest.raises(RemotePluginError) as info:
            host.poll(task)
        assert "ValueError: bad thing in poll" in str(info.value)
        assert "alpha_plugin/__init__.py" in info.value.remote_traceback
        assert host.alive  # an exception in plugin code does not kill the host
    finally:
        host.close()


def test_hung_host_times_out_and_is_killed(installed: dict[str, PluginEnvironment]) -> None:
    host, task = _start_task(installed["alpha-plugin"], "sleeper", mode="sleep", seconds="60")
    started = time.monotonic()
    with pytest.raises(PluginHostTimeout):
        host.poll(task, timeout_s=1.0)
    assert time.monotonic() - started < 10
    time.sleep(0.2)
    assert not host.alive
    host.close()


def test_catalogue_is_listed_without_importing_plugin_code(
    wheelhouse: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    marker = tmp_path / "imports.log"
    monkeypatch.setenv("COPYCAT_TEST_IMPORT_MARKER", str(marker))
    plugin_path = tmp_path / "pp"
    whl = next(wheelhouse.glob("alpha_plugin-*.whl"))
    assert (
        cli_main(
            [
                "plugins",
                "--plugin-path",
                str(plugin_path),
                "install",
                str(whl),
                "--find-links",
                str(wheelhouse),
                "--offline",
            ]
        )
        == 0
    )
    # The install probe imported the plugin, but in a plugin host, not here.
    importers = marker.read_text().split()
    assert importers and str(os.getpid()) not in importers
    before = marker.read_text()
    capsys.readouterr()
    assert cli_main(["plugins", "--plugin-path", str(plugin_path), "list", "--json"]) == 0
    listing = capsys.readouterr().out
    assert "AlphaPluginConnector" in listing and '"type": "source"' in listing
    assert marker.read_text() == before, "listing must not import plugin code anywhere"
    assert "alpha_plugin" not in sys.modules


def test_versions_install_side_by_side_and_remove_one(wheelhouse: Path, tmp_path: Path) -> None:
    house = tmp_path / "house"
    house.mkdir()
    for whl in wheelhouse.glob("conflictlib-*.whl"):
        (house / whl.name).write_bytes(whl.read_bytes())
    plugin_path = tmp_path / "pp"
    for version in ("1.0.0", "1.1.0"):
        whl = _plugin_wheel(house, "gamma-plugin", version, "1.0")
        install(str(whl), plugin_path, find_links=[str(house)], offline=True)
    versions = sorted(d.version for env in scan([plugin_path]) for d in env.catalogue())
    assert versions == ["1.0.0", "1.1.0"]
    assert (
        cli_main(["plugins", "--plugin-path", str(plugin_path), "remove", "gamma-plugin==1.0.0"])
        == 0
    )
    assert [d.version for env in scan([plugin_path]) for d in env.catalogue()] == ["1.1.0"]


def test_install_errors_are_clear_and_leave_nothing_behind(
    wheelhouse: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plugin_path = tmp_path / "pp"
    no_eps = build_wheel(tmp_path / "w", "plain-lib", "1.0", {"plain_lib.py": "X = 1\n"})
    needs_new_api = build_wheel(
        tmp_path / "w",
        "future-plugin",
        "1.0",
        {"future_plugin.py": "X = 1\n"},
        requires=["copycat-plugin-api>=9"],
        entry_points={"copycat.connectors": {"F": "future_plugin:F"}},
    )
    broken_ep = build_wheel(
        tmp_path / "w",
        "broken-plugin",
        "1.0",
        {"broken_plugin.py": "X = 1\n"},
        entry_points={"copycat.connectors": {"Missing": "broken_plugin:Missing"}},
    )
    cases = {
        str(tmp_path / "nope.whl"): "does not exist",
        str(no_eps): "declares no Copycat entry points",
        str(needs_new_api): "requires copycat-plugin-api>=9",
        str(broken_ep): "broken entry points",
        "definitely-not-a-real-package-xyz==1.0": "resolving requirement",
    }
    for source, expected in cases.items():
        code = cli_main(
            [
                "plugins",
                "--plugin-path",
                str(plugin_path),
                "install",
                source,
                "--offline",
                "--find-links",
                str(wheelhouse),
            ]
        )
        err = capsys.readouterr().err
        assert code == 1, source
        assert expected in err, (source, err)
        assert not [p for p in plugin_path.iterdir()] if plugin_path.exists() else True
    code = cli_main(["plugins", "--plugin-path", str(plugin_path), "remove", "nothing-here"])
    assert code == 1 and "no installed plugin matches 'nothing-here'" in capsys.readouterr().err


SHARED_V = '''VERSION = "{v}"'''
ZIP_PLUGIN = """
import sharedlib
from plugin_api import Transformation, ConfigDef

class {cls}(Transformation):
    def configure(self, configs):
        pass
    def apply(self, record):
        return record
    def config(self):
        return ConfigDef()
    def version(self):
        return sharedlib.VERSION

def lib_version():
    return sharedlib.VERSION, sharedlib.__file__
"""


def _zip_plugin(tmp: Path, name: str, lib_version: str) -> Path:
    cls = name.title().replace("_", "")
    return build_zipapp(
        tmp / f"{name}.pyz",
        name.replace("_", "-"),
        "1.0",
        {
            f"{name}.py": ZIP_PLUGIN.format(cls=cls),
            "sharedlib/__init__.py": SHARED_V.format(v=lib_version),
        },
        {"copycat.transforms": {cls: f"{name}:{cls}"}},
    )


def test_zipapp_plugins_load_child_first_and_conflicts_are_reported(tmp_path: Path) -> None:
    plugin_path = tmp_path / "pp"
    plugin_path.mkdir()
    one = _zip_plugin(plugin_path, "zip_one", "1.0")
    two = _zip_plugin(plugin_path, "zip_two", "2.0")
    envs = {env.location.name: env for env in scan([plugin_path])}
    assert [d.kind for d in envs["zip_one.pyz"].catalogue()] == ["transformation"]
    assert envs["zip_two.pyz"].catalogue()[0].version == "2.0"

    host = envs["zip_one.pyz"].start_host("zip-one")
    try:
        version, origin = host.eval("zip_one:lib_version")
        assert version == "1.0" and origin.startswith(str(one))
        with pytest.raises(RemotePluginError) as info:
            host.attach(str(two))
        message = str(info.value)
        assert info.value.kind == "conflict"
        assert "'sharedlib'" in message and "zip-two==1.0" in message and "zip-one==1.0" in message
        # Nothing was half-loaded: the host still serves the first plugin's version.
        assert host.eval("zip_one:lib_version")[0] == "1.0"
    finally:
        host.close()
    # In a host of its own, the second plugin sees its own version.
    host2 = envs["zip_two.pyz"].start_host("zip-two")
    try:
        assert host2.eval("zip_two:lib_version")[0] == "2.0"
    finally:
        host2.close()


def test_plugin_api_installs_alone_with_no_dependencies(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    venv = tmp_path / "venv"
    subprocess.run(["uv", "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    proc = subprocess.run(
        [
            "uv",
            "pip",
            "install",
            "--python",
            str(venv / "bin" / "python"),
            "--offline",
            str(root / "plugin_api"),
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:  # the build backend may not be cached yet: allow the network
        subprocess.run(
            [
                "uv",
                "pip",
                "install",
                "-q",
                "--python",
                str(venv / "bin" / "python"),
                str(root / "plugin_api"),
            ],
            check=True,
        )
    listed = subprocess.run(
        ["uv", "pip", "list", "--python", str(venv / "bin" / "python")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = {line.split()[0] for line in listed.splitlines()[2:] if line.strip()}
    assert names == {"copycat-plugin-api"}
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import plugin_api; print(len(plugin_api.__all__))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert int(out) > 30


OWN_KAFKA_PLUGIN = """
import confluent_kafka
from plugin_api import ConfigDef, SourceConnector, SourceRecord, SourceTask

class OwnKafkaTask(SourceTask):
    def start(self, props):
        self.topic, self.sent = props["topic"], 0
    def poll(self):
        if self.sent:
            return []
        self.sent = 1
        return [SourceRecord({"p": 0}, {"n": 1}, self.topic, value=confluent_kafka.__version__)]
    def stop(self):
        pass
    def version(self):
        return "1.0.0"

class OwnKafkaConnector(SourceConnector):
    def start(self, props):
        self.props = dict(props)
    def task_class(self):
        return OwnKafkaTask
    def task_configs(self, max_tasks):
        return [dict(self.props)]
    def stop(self):
        pass
    def config(self):
        return ConfigDef()
    def version(self):
        return "1.0.0"
"""


@pytest.mark.parametrize("choice", ["auto", "host"])
def test_a_plugin_with_its_own_kafka_client_keeps_the_data_path_in_the_worker(
    tmp_path: Path,
    bundled_plugin_path: Path,
    bootstrap_servers: str,
    topic_name: str,
    choice: str,
) -> None:
    """task.data.path=auto runs a task's Kafka client in its plugin host only where the plugin
    can share the runtime's; this plugin ships another confluent_kafka, so its task runs with
    the client in the worker and still sees its own library (child-first). Forcing the host is
    a config error naming the conflict."""
    from core.offsets import MemoryOffsetStore
    from core.plugins import PluginCatalogue
    from core.worker import Worker
    from plugin_api import ConfigException
    from tests.support.kafka import read_all

    house = tmp_path / "house"
    build_wheel(
        house,
        "confluent-kafka",
        "0.0.1",
        {"confluent_kafka/__init__.py": "__version__ = '0.0.1'\n"},
    )
    whl = build_wheel(
        house,
        "own-kafka-plugin",
        "1.0.0",
        {"own_kafka_plugin/__init__.py": OWN_KAFKA_PLUGIN},
        requires=["confluent-kafka==0.0.1", "copycat-plugin-api>=0.1,<1"],
        entry_points={
            "copycat.connectors": {"OwnKafkaConnector": "own_kafka_plugin:OwnKafkaConnector"}
        },
    )
    plugins = tmp_path / "plugins"
    install(str(whl), plugins, find_links=[str(house)], offline=True)
    worker = Worker(
        "w1",
        {
            "key.converter": "StringConverter",
            "value.converter": "StringConverter",
            "task.data.path": choice,
        },
        PluginCatalogue.scan([bundled_plugin_path, plugins]),
        MemoryOffsetStore(),
        client_props={"bootstrap.servers": bootstrap_servers},
    )
    name = f"own-kafka-{choice}"
    worker.start_connector(
        name, {"name": name, "connector.class": "OwnKafkaConnector", "topic": topic_name}
    )
    try:
        if choice == "host":
            with pytest.raises(ConfigException, match="ships its own confluent_kafka"):
                worker.start_task(name, 0, worker.task_configs(name)[0])
            return
        runner = worker.start_task(name, 0, worker.task_configs(name)[0])
        assert runner.spec.data_path == "worker"
        assert [m.value() for m in read_all(bootstrap_servers, topic_name, 1)] == [b"0.0.1"]
    finally:
        worker.stop()
