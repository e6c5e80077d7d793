"""Locks and wheelhouses: an env rebuilt offline from its lock holds the same files; an env
whose interpreter changed is rebuilt from its lock; list/info/upgrade read what is installed."""

from __future__ import annotations

import json
import shutil
import threading
import time
import uuid
from pathlib import Path

import pytest

from core.cli import main as cli_main
from core.plugins import PluginCatalogue
from plugin_api import ConfigException
from registry import install, scan
from registry.locks import (
    LOCK_NAME,
    Lock,
    LockedFile,
    LockedPackage,
    LockError,
    build_env_offline,
    export_wheelhouse,
    installed_records,
)
from registry.server import RegistryServer, add_libraries
from tests.support.marketplace import source_plugin_wheel, twine_upload
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.integration


def _published(index: RegistryServer, tmp: Path, version: str = "1.0") -> tuple[str, str]:
    """A plugin with one dependency, both on the index; returns (plugin, dependency) names."""
    uid = uuid.uuid4().hex[:6]
    name, dep = f"locked-{uid}", f"lockdep-{uid}"
    wheel = build_wheel(tmp / "deps", dep, "1.0", {f"{dep.replace('-', '_')}.py": "X = 1\n"})
    add_libraries(index.app.data, [wheel])
    plugin = source_plugin_wheel(tmp / "plugins", name, version, requires=[f"{dep}==1.0"])
    done = twine_upload(index.url, plugin)
    assert done.returncode == 0, done.stdout + done.stderr
    return name, dep


def test_rebuilt_offline_from_lock_and_wheelhouse_holds_the_same_files(
    plugin_index: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name, dep = _published(plugin_index, tmp_path)
    plugins = tmp_path / "plugins.d"
    env = install(name, plugins, index_url=plugin_index.index_url)
    lock = Lock.read(env.location / LOCK_NAME)
    assert sorted(lock.versions()) == sorted([name, dep])
    assert all(len(f.sha256) == 64 for p in lock.packages for f in p.wheels)
    assert lock.interpreter["version"].startswith("3.")
    before = installed_records(env)
    assert any(path.startswith(name.replace("-", "_")) for path in before)

    wheelhouse = tmp_path / "wheelhouse"
    code = cli_main(
        [
            "plugins",
            "--plugin-path",
            str(plugins),
            "export-wheelhouse",
            name,
            "--dest",
            str(wheelhouse),
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert sorted(p.name for p in wheelhouse.glob("*.whl")) == sorted(
        f.name for p in lock.packages for f in p.wheels
    )
    shutil.rmtree(env.location)

    # Offline: the index is not asked (uv runs with --offline --no-index).
    code = cli_main(["plugins", "--plugin-path", str(plugins), "build-offline", str(wheelhouse)])
    assert code == 0, capsys.readouterr().err
    [rebuilt] = scan([plugins])
    assert rebuilt.location == env.location
    assert installed_records(rebuilt) == before
    assert [d.class_name for d in rebuilt.catalogue()] == [f"{name.replace('-', '_')}.Source"]


def test_a_tampered_wheelhouse_is_refused(plugin_index: RegistryServer, tmp_path: Path) -> None:
    name, _ = _published(plugin_index, tmp_path)
    env = install(name, tmp_path / "plugins.d", index_url=plugin_index.index_url)
    wheelhouse = export_wheelhouse(env, tmp_path / "wheelhouse")
    victim = next(wheelhouse.glob(f"{name.replace('-', '_')}-*.whl"))
    victim.write_bytes(victim.read_bytes() + b"\0")
    with pytest.raises(LockError, match="[Hh]ash mismatch"):
        build_env_offline(wheelhouse, tmp_path / "elsewhere" / "env")
    assert not (tmp_path / "elsewhere" / "env").exists()


def test_an_env_whose_interpreter_changed_is_rebuilt_from_its_lock(
    plugin_index: RegistryServer, tmp_path: Path
) -> None:
    name, _ = _published(plugin_index, tmp_path)
    plugins = tmp_path / "plugins.d"
    env = install(name, plugins, index_url=plugin_index.index_url)
    before = installed_records(env)
    # As if the venv had been made by another Python: its interpreter link points nowhere.
    (env.location / "bin" / "python").unlink()
    (env.location / "bin" / "python").symlink_to(tmp_path / "gone" / "python3")
    catalogue = PluginCatalogue.scan([plugins])
    [plugin] = catalogue.plugins
    assert plugin.class_name == f"{name.replace('-', '_')}.Source"
    assert (env.location / "bin" / "python").exists()
    assert installed_records(env) == before
    assert Lock.read(env.location / LOCK_NAME).versions()


def test_list_info_and_upgrade(
    plugin_index: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name, _ = _published(plugin_index, tmp_path)
    plugins = tmp_path / "plugins.d"
    base = ["plugins", "--plugin-path", str(plugins)]
    assert cli_main([*base, "install", name, "--index-url", plugin_index.index_url]) == 0
    capsys.readouterr()
    assert cli_main([*base, "list"]) == 0
    assert f"{name} 1.0  [copycat, locked]" in capsys.readouterr().out

    assert cli_main([*base, "info", name, "--json"]) == 0
    [info] = json.loads(capsys.readouterr().out)
    assert info["licence"] == "Apache-2.0" and info["index_url"] == plugin_index.index_url
    assert [d["name"] for d in info["plugins"][0]["config"]] == ["topic", "count"]

    plugin = source_plugin_wheel(tmp_path / "v2", name, "2.0", requires=[])
    assert twine_upload(plugin_index.url, plugin).returncode == 0
    assert cli_main([*base, "list", "--outdated"]) == 0
    assert f"{name}" in (out := capsys.readouterr().out) and "1.0" in out and "-> 2.0" in out
    assert cli_main([*base, "upgrade", name]) == 0
    capsys.readouterr()
    assert [e.location.name for e in scan([plugins])] == [f"{name}-2.0"]
    assert cli_main([*base, "upgrade", name]) == 0
    assert "up to date" in capsys.readouterr().out


def test_the_catalogue_is_live(plugin_index: RegistryServer, tmp_path: Path) -> None:
    plugins = tmp_path / "plugins.d"
    plugins.mkdir()
    catalogue = PluginCatalogue.scan([plugins])
    assert catalogue.plugins == []
    name, _ = _published(plugin_index, tmp_path)
    env = install(name, plugins, index_url=plugin_index.index_url)
    catalogue.refresh(force=True)
    assert [p.location for p in catalogue.plugins] == [str(env.location)]
    assert catalogue.resolve("connector", "Source").version == "1.0"
    shutil.rmtree(env.location)
    catalogue.refresh(force=True)
    assert catalogue.plugins == []


def test_lookups_during_installs_and_removals_never_fail(
    plugin_index: RegistryServer, tmp_path: Path
) -> None:
    """REST threads resolve plugins while plugin.path changes under them: every lookup sees a
    whole snapshot (the plugin, or a clean 'not installed'), never a half-scanned one."""
    plugins = tmp_path / "plugins.d"
    plugins.mkdir()
    catalogue = PluginCatalogue.scan([plugins])
    name, _ = _published(plugin_index, tmp_path)
    errors: list[BaseException] = []
    seen: set[str] = set()
    done = threading.Event()

    def look() -> None:
        while not done.is_set():
            try:
                seen.add(catalogue.resolve("connector", "Source").version)
            except ConfigException:
                seen.add("none")
            except BaseException as exc:  # noqa: BLE001 - the test reports it
                errors.append(exc)
            time.sleep(0.001)  # a busy REST server, not a spinning core: installs need CPU too

    threads = [threading.Thread(target=look) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        env = install(name, plugins, index_url=plugin_index.index_url)
        deadline = time.monotonic() + 10
        while "1.0" not in seen and time.monotonic() < deadline:
            time.sleep(0.05)
        shutil.rmtree(env.location)
        catalogue.refresh(force=True)
    finally:
        done.set()
        for t in threads:
            t.join(10)
    assert not errors, errors
    assert seen == {"none", "1.0"}
    assert catalogue.plugins == []


def _installed_from_find_links(tmp: Path) -> tuple[Path, str, Path]:
    """A plugin with one dependency installed offline from a --find-links directory; returns
    (the env's location, the dependency's wheel name, that directory)."""
    uid = uuid.uuid4().hex[:6]
    name, dep = f"linked-{uid}", f"linkdep-{uid}"
    wheels = tmp / "wheels"
    dep_wheel = build_wheel(wheels, dep, "1.0", {f"{dep.replace('-', '_')}.py": "X = 1\n"})
    plugin = source_plugin_wheel(wheels, name, "1.0", requires=[f"{dep}==1.0"])
    env = install(
        str(plugin), tmp / "plugins.d", find_links=[str(wheels)], offline=True, no_index=True
    )
    return env.location, dep_wheel.name, wheels


def test_an_env_exports_from_the_files_it_was_installed_from_without_index_or_find_links(
    tmp_path: Path,
) -> None:
    location, dep_wheel, wheels = _installed_from_find_links(tmp_path)
    # The env keeps every file it was installed from, and its lock points at those copies.
    lock = Lock.read(location / LOCK_NAME)
    files = [f for p in lock.packages for f in (*p.wheels, p.archive) if f is not None]
    assert len(files) == 2, lock
    assert all(
        f.path == f"copycat-wheels/{f.name}" and (location / f.path).is_file() for f in files
    ), lock
    env = scan([tmp_path / "plugins.d"])[0]
    before = installed_records(env)
    shutil.rmtree(wheels)  # the --find-links directory is gone (an index may be unreachable)
    wheelhouse = export_wheelhouse(env, tmp_path / "wheelhouse")
    assert dep_wheel in [p.name for p in wheelhouse.glob("*.whl")]
    rebuilt = build_env_offline(wheelhouse, tmp_path / "elsewhere" / "env")
    assert installed_records(rebuilt) == before


def test_a_locked_file_that_cannot_be_fetched_is_a_lock_error_naming_env_file_and_place(
    tmp_path: Path,
) -> None:
    location, dep_wheel, _ = _installed_from_find_links(tmp_path)
    # As an env installed before envs kept their files: the dependency is named by URL only,
    # on an index that refuses connections.
    lock = Lock.read(location / LOCK_NAME)
    url = f"http://127.0.0.1:9/packages/{dep_wheel}"
    lock = Lock(
        tuple(
            LockedPackage(
                p.name,
                p.version,
                tuple(
                    LockedFile(f.name, f.sha256, url=url) if f.name == dep_wheel else f
                    for f in p.wheels
                ),
                p.archive,
                p.sdist,
            )
            for p in lock.packages
        ),
        lock.tool,
    )
    lock.write(location / LOCK_NAME)
    (location / "copycat-wheels" / dep_wheel).unlink()
    env = scan([tmp_path / "plugins.d"])[0]
    with pytest.raises(LockError) as raised:
        export_wheelhouse(env, tmp_path / "wheelhouse")
    message = str(raised.value)
    assert f"plugin env {location}" in message and dep_wheel in message and url in message
    assert "ConnectError" in message
