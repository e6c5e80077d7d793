"""A plugin catalogue with one test plugin beside the bundled ones, for tests that need a
connector written for them (its source kept in the test, see :mod:`tests.support.wheels`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from core.plugins import PluginCatalogue
from registry import install
from tests.support.wheels import build_wheel


def catalogue_with(
    bundled: Path,
    work: Path,
    name: str,
    files: Mapping[str, str],
    connectors: Mapping[str, str],
) -> PluginCatalogue:
    """The bundled plugins plus distribution ``name`` 1.0 holding ``files``, whose
    ``copycat.connectors`` entry points are ``connectors`` (alias -> ``module:Class``),
    installed offline into a plugin path under ``work``."""
    wheel = build_wheel(
        work / "w", name, "1.0", files, entry_points={"copycat.connectors": dict(connectors)}
    )
    install(str(wheel), work / "pp", offline=True)
    return PluginCatalogue.scan([bundled, work / "pp"])


def one_task_sink(name: str, task_class: str) -> str:
    """Source of sink connector class ``name`` whose one task runs ``task_class`` with the
    connector's own config: a test plugin's boilerplate, appended to the plugin module that
    defines the task (which imports ``SinkConnector`` and ``ConfigDef``)."""
    return f"""
class {name}(SinkConnector):
    def start(self, props):
        self.props = dict(props)
    def task_class(self):
        return {task_class}
    def task_configs(self, n):
        return [self.props]
    def stop(self):
        pass
    def config(self):
        return ConfigDef()
"""
