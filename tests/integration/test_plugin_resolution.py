"""Which plugin location a configured class name resolves to when plugin.path holds more than
one candidate: the same class twice, a location that broke, two classes sharing an alias.
Real venvs (one made by ``copycat plugins install``, others by plain ``uv venv`` + ``uv pip``),
real plugin hosts for the probes."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.cli import main as cli_main
from core.plugins import RESCAN_INTERVAL_S, PluginCatalogue
from isolation import PluginEnvironment
from plugin_api import ConfigException
from registry import install
from registry.manage import describe
from tests.support.marketplace import source_plugin_wheel

pytestmark = pytest.mark.integration

# A transformation every test plugin also ships, under the same simple name.
MASK = """
from plugin_api import Transformation


class Mask(Transformation):
    def apply(self, record):
        return record
"""


def _wheel(out: Path, name: str, version: str) -> Path:
    """Plugin ``name``: a source connector ``<module>.Source`` and a transform ``<module>.Mask``."""
    module = name.replace("-", "_")
    return source_plugin_wheel(
        out / name,
        name,
        version,
        body=MASK,
        entry_points={
            "copycat.connectors": {f"{module}-source": f"{module}:Source"},
            "copycat.transforms": {"Mask": f"{module}:Mask"},
        },
    )


def _plain_venv(location: Path, wheel: Path) -> Path:
    """What an operator makes without Copycat: ``uv venv`` + ``uv pip install`` (no lock)."""
    subprocess.run(["uv", "venv", "-q", "--python", sys.executable, str(location)], check=True)
    python = location / "bin" / "python"
    subprocess.run(
        [
            "uv",
            "pip",
            "install",
            "-q",
            "--offline",
            "--no-deps",
            "--python",
            str(python),
            str(wheel),
        ],
        check=True,
    )
    return location


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "copycat.plugins" and r.levelno == logging.WARNING
    ]


def test_the_same_class_and_version_twice_resolves_to_the_locked_env_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    plugins = tmp_path / "plugins.d"
    wheel = _wheel(tmp_path / "w", "tick-counter", "1.2.0")
    managed = install(str(wheel), plugins, offline=True)
    # Sorts before the managed env, so plugin.path order alone would pick it.
    pip_env = _plain_venv(plugins / "pip-tick2", wheel)

    caplog.set_level(logging.WARNING, logger="copycat.plugins")
    catalogue = PluginCatalogue.scan([plugins])
    for name in ("tick_counter.Source", "tick_counter-source"):
        assert catalogue.resolve("connector", name).location == str(managed.location)
    assert catalogue.resolve("connector", "Source", "1.2.0").location == str(managed.location)
    [warning] = _warnings(caplog)
    assert "tick_counter.Source" in warning and "1.2.0" in warning, warning
    assert str(managed.location) in warning and str(pip_env.resolve()) in warning, warning

    # Seen again on every rescan, warned about once.
    caplog.clear()
    catalogue.refresh(force=True)
    assert catalogue.resolve("connector", "tick_counter.Source").location == str(managed.location)
    assert _warnings(caplog) == []


def test_a_venv_whose_interpreter_is_gone_is_not_offered_and_is_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    plugins = tmp_path / "plugins.d"
    healthy = install(str(_wheel(tmp_path / "w", "healthy-tick", "1.0")), plugins, offline=True)
    broken = _plain_venv(plugins / "pip-tick", _wheel(tmp_path / "w", "broken-tick", "1.0"))
    catalogue = PluginCatalogue.scan([plugins])
    assert catalogue.resolve("connector", "broken_tick.Source").location == str(broken.resolve())

    caplog.set_level(logging.WARNING, logger="copycat.plugins")
    for python in (broken / "bin").glob("python*"):
        python.unlink()
    # The running worker notices (no restart, no forced rescan)...
    time.sleep(RESCAN_INTERVAL_S * 2)
    assert [p.location for p in catalogue.plugins] == [str(healthy.location)] * 2
    with pytest.raises(
        ConfigException, match="'broken_tick.Source' is installed but failed to load: .*interpreter"
    ):
        catalogue.resolve("connector", "broken_tick.Source")
    [warning] = [w for w in _warnings(caplog) if str(broken.resolve()) in w]
    assert "interpreter" in warning, warning

    # ... and so does a restarted one; `plugins list` and /admin/plugins say why.
    assert [p.location for p in PluginCatalogue.scan([plugins]).plugins] == [
        str(healthy.location)
    ] * 2
    row = describe(PluginEnvironment(broken))
    assert row["name"] == "broken-tick" and row["plugins"], row
    assert "interpreter" in row["broken"] and str(broken.resolve()) in row["broken"], row
    assert describe(healthy)["broken"] is None


def test_a_venv_whose_plugin_code_is_gone_is_not_offered_and_is_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Deleting a plugin's module leaves its .dist-info, so the cached manifest looks current;
    deleting site-packages whole must not break `plugins list` either."""
    plugins = tmp_path / "plugins.d"
    code_gone = _plain_venv(plugins / "pip-a", _wheel(tmp_path / "w", "code-gone", "1.0"))
    packages_gone = _plain_venv(plugins / "pip-b", _wheel(tmp_path / "w", "packages-gone", "1.0"))
    catalogue = PluginCatalogue.scan([plugins])
    assert len(catalogue.plugins) == 4

    caplog.set_level(logging.WARNING, logger="copycat.plugins")
    module = next(code_gone.glob("lib/python3*/site-packages/code_gone.py"))
    module.unlink()
    shutil.rmtree(next(packages_gone.glob("lib/python3*/site-packages")))
    time.sleep(RESCAN_INTERVAL_S * 2)
    assert catalogue.plugins == []
    with pytest.raises(ConfigException, match="'code_gone.Source' is installed but failed to load"):
        catalogue.resolve("connector", "code_gone.Source")
    [warning] = [w for w in _warnings(caplog) if str(code_gone.resolve()) in w]
    assert str(module.resolve()) in warning, warning

    assert PluginCatalogue.scan([plugins]).plugins == []
    row = describe(PluginEnvironment(code_gone))
    assert row["name"] == "code-gone" and str(module.resolve()) in row["broken"], row
    row = describe(PluginEnvironment(packages_gone))
    assert row["name"] == "packages-gone" and "site-packages" in row["broken"], row


def test_a_locked_env_whose_interpreter_is_gone_is_still_rebuilt_from_its_lock(
    tmp_path: Path,
) -> None:
    plugins = tmp_path / "plugins.d"
    env = install(str(_wheel(tmp_path / "w", "locked-tick", "1.0")), plugins, offline=True)
    for python in (env.location / "bin").glob("python*"):
        python.unlink()
    catalogue = PluginCatalogue.scan([plugins])
    assert catalogue.resolve("connector", "locked_tick.Source").location == str(env.location)
    assert (env.location / "bin" / "python").exists()


@pytest.mark.parametrize(
    ("kind", "key", "alias"),
    [
        ("connector", "connector.class", "Source"),
        ("transformation", "transforms.mask.type", "Mask"),
    ],
)
def test_an_alias_two_plugins_claim_is_reported_as_ambiguous(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, kind: str, key: str, alias: str
) -> None:
    plugins = tmp_path / "plugins.d"
    install(str(_wheel(tmp_path / "w", "tick-counter", "1.0")), plugins, offline=True)
    catalogue = PluginCatalogue.scan([plugins])
    assert catalogue.resolve(kind, alias).class_name == f"tick_counter.{alias}"

    caplog.set_level(logging.WARNING, logger="copycat.plugins")
    install(str(_wheel(tmp_path / "w", "other-tick", "1.0")), plugins, offline=True)
    catalogue.refresh(force=True)
    with pytest.raises(ConfigException) as raised:
        catalogue.resolve(kind, alias, key=key)
    message = str(raised.value)
    assert message.startswith(f"Invalid value {alias} for configuration {key}: "), message
    assert "ambiguous" in message and "full class name" in message, message
    assert f"other_tick.{alias}, tick_counter.{alias}" in message, message
    # The full names still resolve; the warning came when the second plugin appeared.
    assert catalogue.resolve(kind, f"other_tick.{alias}").class_name == f"other_tick.{alias}"
    warnings = [w for w in _warnings(caplog) if f"other_tick.{alias}" in w]
    assert len(warnings) == 1 and repr(alias) in warnings[0], warnings
    caplog.clear()
    catalogue.refresh(force=True)
    assert _warnings(caplog) == []


def test_a_class_of_another_kind_or_an_empty_name_is_refused_as_kafka_refuses_it(
    bundled_plugin_path: Path,
) -> None:
    catalogue = PluginCatalogue.scan([bundled_plugin_path])
    predicate = "org.apache.kafka.connect.transforms.predicates.HasHeaderKey"
    with pytest.raises(ConfigException) as info:
        catalogue.resolve("transformation", predicate, key="transforms.a.type")
    # Kafka Connect 4.1.1's words; it is installed, so no list of the installed
    # transformations, which would read as if it were not.
    assert str(info.value) == (
        f"Class class {predicate} does not implement the Transformation interface"
    )
    assert info.value.name == "transforms.a.type"
    with pytest.raises(ConfigException) as info:
        catalogue.resolve("predicate", "RegexRouter", key="predicates.p.type")
    assert str(info.value) == ("Class class RegexRouter does not implement the Predicate interface")
    with pytest.raises(ConfigException) as info:  # a connector.class keeps Copycat's words
        catalogue.resolve("connector", predicate)
    assert str(info.value).endswith(": Not a Connector (it is installed as a Predicate)")
    with pytest.raises(ConfigException) as info:
        catalogue.resolve("converter", "", key="key.converter")
    assert (
        str(info.value)
        == "Invalid value  for configuration key.converter: Class  could not be found."
    )


def test_a_release_whose_version_was_not_bumped_is_used_over_the_one_before_with_warnings(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """same-ver 1.0.1 still reports version() 1.0.0: `plugins install` warns on stderr that
    workers cannot tell it from 1.0.0, and the worker uses the newer package, not the first
    in plugin.path order."""
    plugins = tmp_path / "plugins.d"
    old = source_plugin_wheel(tmp_path / "w" / "old", "same-ver", "1.0.0")
    new = source_plugin_wheel(
        tmp_path / "w" / "new", "same-ver", "1.0.1", component_version="1.0.0"
    )
    base = ["plugins", "--plugin-path", str(plugins), "install", "--offline"]
    assert cli_main([*base, str(old)]) == 0
    assert capsys.readouterr().err == ""
    assert cli_main([*base, str(new)]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert err.startswith("WARNING: same-ver 1.0.1"), err
    assert f"component versions as {plugins / 'same-ver-1.0.0'}: same_ver.Source 1.0.0" in err
    assert "copycat plugins remove same-ver==1.0.0" in err, err

    caplog.set_level(logging.WARNING, logger="copycat.plugins")
    catalogue = PluginCatalogue.scan([plugins])
    used = str(plugins / "same-ver-1.0.1")
    assert catalogue.resolve("connector", "same_ver.Source").location == used
    [warning] = _warnings(caplog)
    assert f"{used} is used" in warning and "newest package" in warning, warning


def test_a_version_needing_another_plugin_api_is_not_offered_and_an_older_one_is_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """A plain pip venv holds what `plugins install` refuses: a release whose
    copycat-plugin-api range excludes this runtime's (a newer plugin, or what a newer Copycat
    installed into a shared plugin.path). The worker reads that range from the env's metadata
    (no probe, no plugin code run), does not offer the env, warns once naming it, and uses the
    older version beside it; a pin naming the newer one hears why it cannot have it."""
    from registry.installer import runtime_api_version

    runtime = runtime_api_version()
    plugins = tmp_path / "plugins.d"
    old = install(str(_wheel(tmp_path / "w1", "api-gated", "1.0.0")), plugins, offline=True)
    newer = source_plugin_wheel(
        tmp_path / "w2",
        "api-gated",
        "2.0.0",
        # It loads, but uses what only a plugin API this runtime lacks has.
        body=MASK.replace(
            "    def apply",
            "    def configure(self, props):\n"
            "        from plugin_api import feature_of_api_99  # noqa: F401\n\n    def apply",
        ),
        requires=["copycat-plugin-api>=99,<100"],
        entry_points={
            "copycat.connectors": {"api_gated-source": "api_gated:Source"},
            "copycat.transforms": {"Mask": "api_gated:Mask"},
        },
    )
    pip_env = _plain_venv(plugins / "api-gated-2.0.0", newer).resolve()

    caplog.set_level(logging.WARNING, logger="copycat.plugins")
    catalogue = PluginCatalogue.scan([plugins])
    assert {(p.class_name, p.version, p.location) for p in catalogue.plugins} == {
        ("api_gated.Source", "1.0.0", str(old.location)),
        ("api_gated.Mask", "undefined", str(old.location)),  # Mask has no version()
    }
    for kind, name in (("connector", "api_gated.Source"), ("transformation", "api_gated.Mask")):
        assert catalogue.resolve(kind, name).location == str(old.location)
    [warning] = [w for w in _warnings(caplog) if str(pip_env) in w]
    assert "api-gated 2.0.0 requires copycat-plugin-api<100,>=99" in warning, warning
    assert f"this runtime provides copycat-plugin-api {runtime}" in warning, warning
    assert not (pip_env / "copycat-plugin.json").exists()  # never probed

    with pytest.raises(ConfigException) as raised:
        catalogue.resolve("connector", "api_gated.Source", "2.0.0")
    message = str(raised.value)
    assert "connector.plugin.version" in message, message
    assert "api-gated 2.0.0 requires copycat-plugin-api<100,>=99" in message, message
    assert f"this runtime provides copycat-plugin-api {runtime}" in message, message
    assert str(pip_env) in message and "1.0.0" in message, message

    # Warned about once; still not offered after a rescan.
    caplog.clear()
    catalogue.refresh(force=True)
    assert _warnings(caplog) == []
    assert catalogue.resolve("connector", "Source").location == str(old.location)

    # With the older version gone, the name is installed but unusable, and says why.
    shutil.rmtree(old.location)
    catalogue.refresh(force=True)
    with pytest.raises(ConfigException) as raised:
        catalogue.resolve("connector", "api_gated.Source")
    message = str(raised.value)
    assert "installed but cannot run on this runtime" in message, message
    assert "requires copycat-plugin-api<100,>=99" in message and str(pip_env) in message

    # `plugins list` (and GET /admin/plugins, the same rows) says so too.
    row = describe(PluginEnvironment(pip_env))
    assert (row["name"], row["version"]) == ("api-gated", "2.0.0"), row
    assert "requires copycat-plugin-api<100,>=99" in row["incompatible"], row
    assert row["broken"] is None, row
    capsys.readouterr()
    assert cli_main(["plugins", "--plugin-path", str(plugins), "list"]) == 0
    listed = " ".join(capsys.readouterr().out.split())
    assert "api-gated 2.0.0 [uv venv, no lock, INCOMPATIBLE: api-gated 2.0.0 requires" in listed
