"""The dependency rules of STYLE.md section 1 that import-linter cannot express.

``lint-imports`` (run by ./scripts/test, contracts in pyproject.toml) checks which of our own
packages may import which. This module checks the third-party side: the host side of
``isolation`` and every bundled plugin import only what will exist where they run, and every
third-party module the runtime imports comes from a dependency it declares (so a clean
``pip install copycat`` cannot fail with an ImportError that the dev env hides).
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUR_PACKAGES = {"plugin_api", "core", "isolation", "registry"}
STDLIB = set(sys.stdlib_module_names) | {"__future__"}


def _imported_roots(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, top-level module)`` of every absolute import in ``path``."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.lineno, node.module.split(".")[0]


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(pyproject: Path, *, extras: bool = True) -> set[str]:
    """Normalised names of the distributions ``pyproject`` declares as dependencies."""
    project = tomllib.loads(pyproject.read_text())["project"]
    requirements = list(project.get("dependencies", []))
    if extras:
        for group in project.get("optional-dependencies", {}).values():
            requirements += group
    return {_normalise(re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0]) for r in requirements}


def _providers() -> dict[str, set[str]]:
    """Top-level module -> normalised names of the distributions that provide it."""
    return {
        module: {_normalise(d) for d in dists}
        for module, dists in importlib.metadata.packages_distributions().items()
    }


def test_host_side_imports_only_stdlib_plugin_api_and_itself() -> None:
    hostside = ROOT / "isolation" / "_hostside"
    own = {p.stem for p in hostside.glob("*.py")}
    allowed = STDLIB | own | {"plugin_api"}
    offenders = [
        f"{path.name}:{line}: {root}"
        for path in sorted(hostside.glob("*.py"))
        for line, root in _imported_roots(path)
        if root not in allowed
    ]
    assert offenders == []


def test_runtime_imports_only_declared_dependencies() -> None:
    declared = _declared(ROOT / "pyproject.toml") | {"copycat-plugin-api"}
    providers = _providers()
    offenders = []
    for package in ("core", "isolation", "registry"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if "_hostside" in path.parts:
                continue  # runs in plugin venvs; checked above
            for line, root in _imported_roots(path):
                if root in STDLIB or root in OUR_PACKAGES:
                    continue
                if not providers.get(root, set()) & declared:
                    offenders.append(
                        f"{path.relative_to(ROOT)}:{line}: {root} "
                        f"(from {sorted(providers.get(root, set())) or 'nothing installed'})"
                    )
    assert offenders == [], "imported but not declared in pyproject.toml [project]"


@pytest.mark.parametrize(
    "plugin",
    sorted(p.name for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").exists()),
)
def test_bundled_plugin_imports_only_plugin_api_and_its_own_dependencies(plugin: str) -> None:
    project = ROOT / "plugins" / plugin
    declared = _declared(project / "pyproject.toml")
    providers = _providers()
    src = project / "src"
    own = {p.name for p in src.iterdir() if p.is_dir()}
    offenders = []
    for path in sorted(src.rglob("*.py")):
        for line, root in _imported_roots(path):
            if root in STDLIB or root in own or root == "plugin_api":
                continue
            if root in OUR_PACKAGES:
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {root} (runtime internals)")
            elif not providers.get(root, set()) & declared:
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {root} (not declared)")
    assert offenders == []


def _module_file(name: str) -> Path | None:
    """The source file of one of our modules (a package's ``__init__``), if it is ours."""
    path = ROOT.joinpath(*name.split("."))
    if (path / "__init__.py").exists():
        return path / "__init__.py"
    if path.with_suffix(".py").exists():
        return path.with_suffix(".py")
    return None


def _imports_of(path: Path, module: str) -> Iterator[tuple[int, str]]:
    """``(line, dotted name)`` of every import in ``path`` (relative ones resolved)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            yield node.lineno, base
            for alias in node.names:  # ``from package import module``
                yield node.lineno, f"{base}.{alias.name}"


def test_the_data_path_that_runs_in_plugin_hosts_imports_only_what_hosts_have() -> None:
    """A task's data path runs in its plugin host (core/runtime/hosted.py), which has the
    standard library, plugin_api and core.runtime.hosted.SHARED_MODULES parent-first, and
    nothing else of the runtime's environment. Everything ``core.runtime.in_host`` reaches must
    come from there; a new import of FastAPI or pydantic in a module on that path would fail
    only in a host, at a task's start."""
    from core.runtime.hosted import SHARED_MODULES

    hostside = {p.stem for p in (ROOT / "isolation" / "_hostside").glob("*.py")}
    allowed = STDLIB | set(SHARED_MODULES) | {"plugin_api"} | hostside
    seen: set[str] = set()
    todo = ["core.runtime.in_host"]
    offenders = []
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        path = _module_file(module)
        if path is None:
            continue  # a name imported from a module, or not ours
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # parent packages run too
        for line, name in _imports_of(path, module):
            root = name.split(".")[0]
            if root not in allowed:
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {name}")
            elif root in OUR_PACKAGES:
                todo.append(name)
    assert offenders == []
    assert {"core.runtime.build", "core.runtime.source", "core.runtime.sink"} <= seen


def test_test_modules_have_unique_names() -> None:
    """Test directories are not packages, so pytest imports each test module by its base name:
    two files of one name (say in tests/integration and plugins/file/tests) make whichever is
    collected second an error of the whole run, and only when both are collected together."""
    names: dict[str, list[str]] = {}
    for path in ROOT.glob("**/test_*.py"):
        relative = path.relative_to(ROOT)
        if relative.parts[0].startswith("."):
            continue  # .venv and tool caches
        names.setdefault(path.name, []).append(str(relative))
    assert {name: paths for name, paths in names.items() if len(paths) > 1} == {}
