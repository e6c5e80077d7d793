"""Install, list and remove plugins: one uv-built venv per plugin version under plugin.path.

An install resolves the plugin with uv into a lock (``pylock.toml``, see :mod:`registry.locks`),
builds the venv from that lock in a staging directory beside its final place, checks it (the
plugin declares Copycat entry points, accepts this runtime's plugin_api, every entry point
imports and is what its group says, every config definition is valid), writes the manifest and
only then renames the staging directory into place, so a failed or interrupted install leaves
nothing half-built behind, and a worker scanning plugin.path never sees a half-built env.
The final directory is ``<distribution>-<version>``, so versions sit side by side (KIP-891).

``plugin_api`` is never installed into a plugin venv: the plugin host takes it from the runtime
(parent-first, like Kafka's ``org.apache.kafka.connect.*``); uv is told to drop that requirement
and the plugin's declared range is checked against the runtime's version instead.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

import plugin_api
from isolation.environment import (
    ENTRY_POINT_GROUPS,
    ZIP_SUFFIXES,
    PluginEnvironment,
    PluginEnvironmentError,
    is_target_dir,
)
from plugin_api import ConnectException
from registry.locks import (
    LOCK_NAME,
    Lock,
    LockedFile,
    LockedPackage,
    LockError,
    current_interpreter,
    keep_locked_files,
)

log = logging.getLogger("copycat.registry")

PLUGIN_API_DISTRIBUTION = "copycat-plugin-api"
# uv reads requirement overrides from a file; a marker that is never true removes the
# requirement, which is how plugin_api stays out of plugin venvs.
_DROP_PLUGIN_API = f'{PLUGIN_API_DISTRIBUTION}; python_version < "0"\n'
# uv's own resolution and download output is kept to this many characters in error messages.
UV_ERROR_CHARS = 4000
# Inside an env: every file it was installed from (downloaded from the index, copied from
# local files, built from project directories), kept because the env's lock points at them,
# so the env can be exported and rebuilt later without the index (registry.locks).
WHEEL_STORE = "copycat-wheels"


class PluginInstallError(ConnectException):
    """A plugin could not be installed; nothing was left behind in plugin.path."""


class PluginNotFoundError(ConnectException):
    """No installed plugin matches the given name (and version)."""


_uv_lock = threading.Lock()
_uv_found: list[str] = []


def uv_binary() -> str:
    """The uv executable: the one shipped with the runtime's ``uv`` dependency, else PATH.

    Looked up once, under a lock: ``find_uv_bin`` reads ``sysconfig``, whose first use is not
    thread-safe (parallel installs saw ``get_config_var("EXE")`` return None).
    """
    with _uv_lock:
        if not _uv_found:
            try:
                from uv import find_uv_bin

                _uv_found.append(str(find_uv_bin()))
            except (ImportError, FileNotFoundError):
                found = shutil.which("uv")
                if found is None:
                    raise PluginInstallError("uv is not installed; `pip install uv`") from None
                _uv_found.append(found)
        return _uv_found[0]


def run_uv(args: Sequence[str], what: str, *, stdin: str | None = None) -> str:
    """Run uv; return its stdout, or raise PluginInstallError with its own explanation."""
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    # pylock.toml input/output is a preview feature of uv; its warning is noise here.
    env["UV_PREVIEW_FEATURES"] = "pylock"
    proc = subprocess.run(
        [uv_binary(), *args], capture_output=True, text=True, env=env, input=stdin
    )
    if proc.returncode != 0:
        output = (proc.stderr or proc.stdout).strip()
        raise PluginInstallError(
            f"{what} failed (uv exit {proc.returncode}):\n{output[-UV_ERROR_CHARS:]}"
        )
    return proc.stdout


_run_uv = run_uv


def make_venv(path: Path) -> None:
    """A new venv at ``path`` on the runtime's own interpreter (hosts must match the worker)."""
    run_uv(["venv", "--quiet", "--python", sys.executable, str(path)], f"creating a venv at {path}")


def _is_direct_reference(source: str) -> bool:
    """Whether ``source`` is a PEP 508 direct reference, ``NAME @ URL`` (not a path)."""
    try:
        return Requirement(source).url is not None
    except InvalidRequirement:
        return False


def plain_requirement(text: str) -> str:
    """``text`` if only an index can satisfy it: a PEP 508 name with optional extras, version
    specifier and marker; not a direct reference (``NAME @ URL``), a wheel file or a directory.

    Raises:
        PluginInstallError: ``text`` is something else; the message says what.
    """
    text = text.strip()
    if "@" in text:
        why = "it is a direct reference (NAME @ URL)"
    elif text.endswith(".whl"):
        why = "it is a wheel file"
    elif os.sep in text or "/" in text or text.startswith("."):
        why = "it is a path"
    else:
        try:
            Requirement(text)
            return text
        except InvalidRequirement as exc:
            why = f"it is not a PEP 508 requirement ({exc})"
    raise PluginInstallError(
        f"{text!r} is not a plain requirement (a name and an optional version specifier, "
        f'e.g. "my-plugin==1.0"): {why}'
    )


def looks_like_path(source: str) -> bool:
    """Whether ``source`` names a local file or directory rather than a requirement, as pip
    decides (``pip._internal.req.constructors._looks_like_path``): it contains a path
    separator or starts with ``.``; or it is a wheel file name. A bare name is always a
    requirement, even where a directory of that name exists: ``copycat plugin new NAME``
    creates ./NAME, and installing NAME from its parent directory must take the published
    package, not the working copy (``./NAME`` installs the directory)."""
    if _is_direct_reference(source):
        return False
    return (
        os.sep in source
        or (os.altsep is not None and os.altsep in source)
        or source.startswith(".")
        or source.endswith(".whl")
    )


def _describe_source(source: str) -> str:
    if not looks_like_path(source):
        return f"requirement {source!r}"
    path = Path(source)
    if path.suffix == ".whl":
        return f"wheel {path}"
    if path.is_dir():
        return f"directory {path}"
    return f"path {path}"


def _index_args(
    index_url: str | None,
    find_links: Sequence[str],
    offline: bool,
    no_index: bool = False,
    extra_index_urls: Sequence[str] = (),
) -> list[str]:
    args: list[str] = []
    for link in find_links:
        args += ["--find-links", str(link)]
    if index_url:
        args += ["--index-url", index_url]
    for extra in extra_index_urls:
        args += ["--extra-index-url", extra]
    if no_index:
        args.append("--no-index")
    if offline:
        args.append("--offline")
    return args


def _as_requirement(source: str, staging: Path, index_args: list[str]) -> str:
    """The requirement uv resolves for ``source``. A wheel file is kept in the env's
    ``copycat-wheels`` store (the lock points at it, so the env can be exported and rebuilt
    later); a project directory is first built into a wheel there with ``uv build``."""
    path = Path(source)
    store = staging / WHEEL_STORE
    if looks_like_path(source) and path.is_dir():
        store.mkdir(parents=True, exist_ok=True)
        out = store / f".build-{uuid.uuid4().hex[:12]}"
        try:
            run_uv(
                ["build", "--wheel", "--quiet", "--out-dir", str(out), *index_args, str(path)],
                f"building a wheel of {_describe_source(source)}",
            )
            built = sorted(out.glob("*.whl"))
            if len(built) != 1:
                raise PluginInstallError(f"building {path} made {len(built)} wheels, not one")
            path = store / built[0].name
            built[0].replace(path)
        finally:
            shutil.rmtree(out, ignore_errors=True)
    if looks_like_path(source) and path.suffix == ".whl":
        try:
            name, _version, _build, _tags = parse_wheel_filename(path.name)
        except InvalidWheelFilename as exc:
            raise PluginInstallError(f"cannot install {path}: {exc}") from exc
        kept = store / path.name
        if path.resolve() != kept.resolve():
            store.mkdir(parents=True, exist_ok=True)
            tmp = store / f".{path.name}.{uuid.uuid4().hex[:8]}"
            shutil.copyfile(path, tmp)
            tmp.replace(kept)
        return f"{name} @ {kept.resolve().as_uri()}"
    try:
        Requirement(source)
    except InvalidRequirement as exc:
        raise PluginInstallError(f"cannot install {source!r}: not a requirement ({exc})") from exc
    return source


def install(
    source: str,
    plugin_path: Path,
    *,
    find_links: Sequence[str] = (),
    index_url: str | None = None,
    offline: bool = False,
    no_index: bool = False,
    replace: bool = False,
    extra_index_urls: Sequence[str] = (),
    requirement_only: bool = False,
    replace_hint: str = "install with --replace",
) -> PluginEnvironment:
    """Install ``source`` (a wheel file, a project directory or a requirement) as a plugin.

    ``replace_hint`` says how the caller asks for ``replace`` (the CLI's flag, REST's field).
    With ``requirement_only`` (REST installs), ``source`` must be a :func:`plain_requirement`
    and is never taken for a path, even where a file or directory of that name exists.

    uv resolves the plugin and its dependencies (wheels preferred) into a PEP 751 lock, and
    the env is installed from that lock, hashes verified; the lock stays in the env
    (:mod:`registry.locks`). Called from the CLI and from REST admin threads; concurrent
    installs into one plugin.path are safe (each builds in its own staging directory).

    Raises:
        PluginInstallError: the source is missing, uv cannot build the env, the plugin declares
            no Copycat entry points, needs another plugin_api, an entry point is broken, or a
            component's config definition is invalid.
    """
    from_path = not requirement_only and looks_like_path(source)
    if requirement_only:
        source = plain_requirement(source)
    path = Path(source)
    if from_path and not path.exists():
        raise PluginInstallError(
            f"cannot install plugin: {_describe_source(source)} does not exist"
        )
    if from_path and path.exists():
        source = str(path.resolve())
    plugin_path.mkdir(parents=True, exist_ok=True)
    index_args = _index_args(index_url, find_links, offline, no_index, extra_index_urls)
    staging = plugin_path / f".staging-{uuid.uuid4().hex[:12]}"
    try:
        make_venv(staging)
        requirement = _as_requirement(source, staging, index_args) if from_path else source
        overrides = staging / "copycat-overrides.txt"
        overrides.write_text(_DROP_PLUGIN_API)
        lock_path = staging / LOCK_NAME
        run_uv(
            [
                "pip",
                "compile",
                "--quiet",
                "--no-header",
                "--format",
                "pylock.toml",
                "--python",
                str(staging / "bin" / "python"),
                "--override",
                str(overrides),
                *index_args,
                "-o",
                str(lock_path),
                "-",
            ],
            f"resolving {_describe_source(source)}",
            stdin=requirement + "\n",
        )
        resolved = Lock.read(lock_path)
        Lock(
            _relative_to(resolved.packages, staging),
            {
                "requirement": requirement,
                "index-url": index_url or "",
                "interpreter": current_interpreter(),
            },
        ).write(lock_path)
        # The env keeps the files it is installed from (uv installs these very copies), so
        # it can be shipped to Spark executors later without the index or --find-links.
        for problem in keep_locked_files(staging, WHEEL_STORE):
            log.warning(
                "%s; it is not kept in the env and is fetched again when the env is "
                "shipped to Spark (task.runtime=spark)",
                problem,
            )
        run_uv(
            [
                "pip",
                "install",
                "--quiet",
                "--python",
                str(staging / "bin" / "python"),
                *(["--offline"] if offline else []),
                "-r",
                str(lock_path),
            ],
            f"installing {_describe_source(source)}",
        )
        env = PluginEnvironment(staging)
        primary = _primary_distribution(env, source)
        _check_plugin_api(env, primary)
        manifest = env.probe()
        _check_config_definitions(manifest, source)
        manifest.update(
            installer="copycat", source=source, primary=primary, index_url=index_url or None
        )
        version = env.distributions()[primary]
        final = plugin_path / f"{canonicalize_name(primary)}-{version}"
        if final.exists():
            if not replace:
                raise PluginInstallError(
                    f"{primary} {version} is already installed at {final}; remove it first "
                    f"or replace it ({replace_hint})"
                )
            _remove_tree(final)
        manifest["location"] = str(final.resolve())
        for plugin in manifest["plugins"]:
            plugin["location"] = manifest["location"]
        env.write_manifest(manifest)
        if from_path:
            # The requirement names the wheel in the staging directory's store; the lock
            # should name it where the env will be.
            lock = Lock.read(lock_path)
            kept = requirement.replace(staging.resolve().as_uri(), final.resolve().as_uri())
            Lock(lock.packages, {**lock.tool, "requirement": kept}).write(lock_path)
        staging.rename(final)
        return PluginEnvironment(final)
    except (PluginEnvironmentError, LockError) as exc:
        raise PluginInstallError(
            f"cannot install {_describe_source(source)}: {_without_staging(str(exc), staging)}"
        ) from exc
    finally:
        if staging.exists():
            _remove_tree(staging)


def _without_staging(message: str, staging: Path) -> str:
    """``message`` without the staging directory an install was built in: it is gone once
    the install fails, and names nothing the user knows ("plugin location
    <plugin.path>/.staging-... has broken entry points" reads "the plugin has broken entry
    points", as the index's validation says it, registry/validation.py)."""
    for path in {str(staging.resolve()), str(staging)}:
        message = message.replace(f"plugin location {path} ", "the plugin ")
        message = message.replace(path, "the plugin's env")
    return message


def rebuild_from_lock(env: PluginEnvironment) -> PluginEnvironment:
    """Build ``env`` again from its own lock on this runtime's interpreter, in place.

    Used when the interpreter a venv was made with is gone (see
    :func:`registry.locks.interpreter_changed`). The new env is built and probed in a staging
    directory and swapped in only when complete.

    Raises:
        PluginInstallError: no lock, or uv cannot install what it names.
    """
    lock_path = env.location / LOCK_NAME
    try:
        lock = Lock.read(lock_path)
    except LockError as exc:
        raise PluginInstallError(f"cannot rebuild {env.location}: {exc}") from exc
    staging = env.location.with_name(f".staging-{uuid.uuid4().hex[:12]}")
    try:
        make_venv(staging)
        store = env.location / WHEEL_STORE
        if store.is_dir():
            shutil.copytree(store, staging / WHEEL_STORE)
        Lock(lock.packages, {**lock.tool, "interpreter": current_interpreter()}).write(
            staging / LOCK_NAME
        )
        run_uv(
            [
                "pip",
                "install",
                "--quiet",
                "--python",
                str(staging / "bin" / "python"),
                "-r",
                str(staging / LOCK_NAME),
            ],
            f"rebuilding {env.location.name} from its lock",
        )
        previous = env.read_manifest() or {}
        rebuilt = PluginEnvironment(staging)
        manifest = rebuilt.probe()
        for key in ("installer", "source", "primary", "index_url"):
            if key in previous:
                manifest[key] = previous[key]
        manifest["location"] = str(env.location)
        for plugin in manifest["plugins"]:
            plugin["location"] = str(env.location)
        rebuilt.write_manifest(manifest)
        doomed = env.location.with_name(f".removing-{uuid.uuid4().hex[:12]}")
        env.location.rename(doomed)
        staging.rename(env.location)
        shutil.rmtree(doomed, ignore_errors=True)
        return PluginEnvironment(env.location)
    except PluginEnvironmentError as exc:
        raise PluginInstallError(f"cannot rebuild {env.location}: {exc}") from exc
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _relative_to(packages: Sequence[LockedPackage], env: Path) -> tuple[LockedPackage, ...]:
    """Paths into the env's own wheel store, relative to the lock, so the env can move."""
    root = env.resolve()

    def rel(f: LockedFile) -> LockedFile:
        where = f.path
        if where is None and f.url is not None and f.url.startswith("file:"):
            where = unquote(urlsplit(f.url).path)
        if where is None or not Path(where).resolve().is_relative_to(root):
            return f
        return LockedFile(f.name, f.sha256, path=str(Path(where).resolve().relative_to(root)))

    return tuple(
        LockedPackage(
            p.name,
            p.version,
            tuple(rel(w) for w in p.wheels),
            rel(p.archive) if p.archive is not None else None,
            p.sdist,
        )
        for p in packages
    )


def _check_config_definitions(manifest: dict[str, Any], source: str) -> None:
    problems = [e for plugin in manifest["plugins"] for e in plugin.get("config_errors", [])]
    if problems:
        raise PluginInstallError(
            f"{_describe_source(source)} has invalid config definitions: " + "; ".join(problems)
        )


def _primary_distribution(env: PluginEnvironment, source: str) -> str:
    """The distribution the user asked for: the one that declares Copycat entry points."""
    eps = env.entry_points()
    declaring = sorted({ep.distribution for ep in eps})
    if not declaring:
        installed = ", ".join(f"{n}=={v}" for n, v in sorted(env.distributions().items()))
        raise PluginInstallError(
            f"{_describe_source(source)} declares no Copycat entry points (none of the groups "
            f"{', '.join(ENTRY_POINT_GROUPS)}); installed distributions: {installed or 'none'}"
        )
    if len(declaring) == 1:
        return declaring[0]
    wanted = _requested_name(source)
    for name in declaring:
        if wanted and canonicalize_name(name) == canonicalize_name(wanted):
            return name
    return declaring[0]


def _requested_name(source: str) -> str | None:
    path = Path(source)
    if looks_like_path(source):
        return path.name.split("-", 1)[0] if path.suffix == ".whl" else None
    try:
        return Requirement(source).name
    except InvalidRequirement:
        return None


def runtime_api_version() -> str | None:
    """The copycat-plugin-api version this runtime provides to every plugin host."""
    return getattr(plugin_api, "__version__", None) or _installed_api_version()


def _plugin_api_mismatch(env: PluginEnvironment, distribution: str) -> str | None:
    """Why ``distribution`` (installed in ``env``) cannot run on this runtime's plugin API: its
    ``copycat-plugin-api`` requirement excludes the runtime's version. None if it accepts it
    (or states no range). Read from the env's metadata, without importing plugin code."""
    runtime_version = runtime_api_version()
    if not runtime_version:
        return None
    for text in env.requirements_of(distribution):
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) != PLUGIN_API_DISTRIBUTION:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        if not req.specifier.contains(runtime_version, prereleases=True):
            return (
                f"requires {PLUGIN_API_DISTRIBUTION}{req.specifier}, but this runtime "
                f"provides {PLUGIN_API_DISTRIBUTION} {runtime_version}"
            )
    return None


def _check_plugin_api(env: PluginEnvironment, primary: str) -> None:
    why = _plugin_api_mismatch(env, primary)
    if why is not None:
        raise PluginInstallError(f"{primary} {why}")


def incompatible_api(env: PluginEnvironment) -> str | None:
    """Why the plugins of ``env`` cannot run on this runtime: a distribution declaring Copycat
    entry points requires a ``copycat-plugin-api`` range that excludes this runtime's (what
    :func:`install` refuses; a plain pip install, or a newer Copycat sharing plugin.path, puts
    it there anyway). ``"<name> <version> requires ..., but this runtime provides ..."``, or
    None. Reads metadata only (importlib.metadata on the env's packages): no plugin code runs,
    no host starts."""
    try:
        declaring = sorted({(ep.distribution, ep.version) for ep in env.entry_points()})
    except (PluginEnvironmentError, OSError):
        return None  # unreadable: the scan reports it as unusable instead
    for distribution, version in declaring:
        why = _plugin_api_mismatch(env, distribution)
        if why is not None:
            return f"{distribution} {version} {why}"
    return None


def _installed_api_version() -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(PLUGIN_API_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def _remove_tree(path: Path) -> None:
    # Rename first so a crash halfway through deleting never leaves a half-plugin in place.
    doomed = path.with_name(f".removing-{uuid.uuid4().hex[:12]}")
    path.rename(doomed)
    shutil.rmtree(doomed, ignore_errors=True)


def scan(plugin_paths: Sequence[Path]) -> list[PluginEnvironment]:
    """Every plugin location under the given ``plugin.path`` directories (hidden ones skipped)."""
    found: list[PluginEnvironment] = []
    for root in plugin_paths:
        if not root.is_dir():
            continue
        for child in sorted(root.iterdir()):
            if child.name.startswith("."):
                continue
            if child.is_dir() and ((child / "pyvenv.cfg").exists() or is_target_dir(child)):
                found.append(PluginEnvironment(child))
            elif child.is_file() and child.suffix in ZIP_SUFFIXES:
                found.append(PluginEnvironment(child))
    return found


def primary_name(manifest: dict[str, Any]) -> str | None:
    """The distribution a location is listed under: the one installed as the plugin, else
    (pip installs) the first that declares a plugin."""
    primary = manifest.get("primary")
    if primary:
        return str(primary)
    for plugin in manifest.get("plugins", []):
        return str(plugin["distribution"]).split("==", 1)[0]
    return None


_NAME_VERSION = re.compile(r"^(?P<name>.+?)(?:==(?P<version>.+))?$")


def find(plugin_paths: Sequence[Path], spec: str) -> list[PluginEnvironment]:
    """Installed locations matching ``name`` or ``name==version``: the distribution and version
    ``plugins list`` and ``GET /admin/plugins`` show (:func:`primary_name`), or the directory
    name. Reads each manifest, probing a location that has none or a stale one, as listing
    does, so pip installs are found by the name they are listed under."""
    match = _NAME_VERSION.match(spec.strip())
    assert match is not None
    name, version = canonicalize_name(match["name"]), match["version"]
    hits = []
    for env in scan(plugin_paths):
        if canonicalize_name(env.location.name) == name and version is None:
            hits.append(env)
            continue
        try:
            manifest = env.current_manifest()
        except ConnectException:
            # Unreadable, or its probe failed (a host that cannot start raises PluginHostError):
            # found by its directory name only, and never in the way of finding the others.
            continue
        primary = primary_name(manifest)
        dists = manifest.get("distributions", {})
        if primary and canonicalize_name(primary) == name:
            if version is None or dists.get(primary) == version:
                hits.append(env)
    return hits


def remove(plugin_paths: Sequence[Path], spec: str) -> list[PluginEnvironment]:
    """Remove every installed version matching ``spec``; raise if nothing matches."""
    hits = find(plugin_paths, spec)
    if not hits:
        raise PluginNotFoundError(
            f"no installed plugin matches {spec!r} in {', '.join(str(p) for p in plugin_paths)}"
        )
    for env in hits:
        if env.is_zip:
            env.manifest_path.unlink(missing_ok=True)
            env.location.unlink()
        else:
            _remove_tree(env.location)
    return hits
