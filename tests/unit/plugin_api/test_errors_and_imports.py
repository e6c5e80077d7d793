"""The exception tree and the zero-dependency rule of plugin_api."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from plugin_api.errors import (
    ConfigException,
    ConnectException,
    DataException,
    IllegalWorkerStateException,
    NotFoundException,
    RetriableException,
    SchemaBuilderException,
)

import plugin_api

SRC = Path(plugin_api.__file__).parent


def test_exception_tree() -> None:
    assert issubclass(RetriableException, ConnectException)
    assert issubclass(SchemaBuilderException, DataException)
    for cls in (DataException, ConfigException, NotFoundException, IllegalWorkerStateException):
        assert issubclass(cls, ConnectException)


def test_config_exception_kafka_message() -> None:
    exc = ConfigException("batch.size", -1, "Value must be at least 1")
    assert str(exc) == "Invalid value -1 for configuration batch.size: Value must be at least 1"
    assert exc.name == "batch.size"
    assert exc.value == -1


def test_config_exception_plain_message_has_no_name() -> None:
    exc = ConfigException("something broke")
    assert str(exc) == "something broke"
    assert exc.name is None


def test_config_exception_two_args() -> None:
    assert str(ConfigException("k", None)) == "Invalid value null for configuration k"


def test_plugin_api_imports_only_stdlib_and_itself() -> None:
    allowed = set(sys.stdlib_module_names) | {"plugin_api"}
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                roots = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                roots = [] if node.level else [(node.module or "").split(".")[0]]
            else:
                continue
            offenders += [f"{path.name}: {root}" for root in roots if root not in allowed]
    assert offenders == []
    assert len(list(SRC.glob("*.py"))) >= 8


def test_public_names_are_exported() -> None:
    missing = [name for name in plugin_api.__all__ if not hasattr(plugin_api, name)]
    assert missing == []
    for name in ("SchemaBuilder", "ConfigDef", "SinkTask", "run_source_task", "Decimal", "Headers"):
        assert name in plugin_api.__all__


@pytest.mark.parametrize(
    "module", ["errors", "data", "records", "connector", "config", "components", "testing"]
)
def test_public_modules_have_explicit_all(module: str) -> None:
    mod = __import__(f"plugin_api.{module}", fromlist=["__all__"])
    assert all(hasattr(mod, name) for name in mod.__all__)
