"""Locks and wheelhouses: what exactly a plugin env holds, and how to build it again offline.

Every env :mod:`registry.installer` builds gets a lock beside its packages,
``<env>/pylock.toml``: a PEP 751 lock file (names, versions, the file each came from and its
sha256) written from uv's resolution, with a ``[tool.copycat]`` table naming the requirement,
the index and the interpreter it was built for. uv installs the env *from* that lock, so what
the lock says is what is installed, hashes verified.

A *wheelhouse* is a directory holding every wheel of a lock plus a ``pylock.toml`` that points
at them by relative path (and the env's ``copycat-plugin.json``, so a rebuilt env needs no
probe). It is how an env travels to a machine without an index (a Spark executor):

    wheelhouse = export_wheelhouse(env, dest)        # where the index is reachable
    env = build_env_offline(wheelhouse, plugin_dir)  # anywhere, no network

Both are called from the worker's process (CLI, REST admin thread) and from Spark drivers;
neither touches shared state beyond the directories it is given.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import sys
import tomllib
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from packaging.tags import sys_tags
from packaging.utils import canonicalize_name, parse_wheel_filename

from isolation.environment import LOCK_NAME as LOCK_NAME  # re-exported: the lock's file name
from isolation.environment import MANIFEST_NAME, PluginEnvironment
from plugin_api import ConnectException

# Seconds a wheel download from the index may take; local indexes answer in milliseconds, a
# remote one with a large binary wheel needs more.
DOWNLOAD_TIMEOUT_S = 120.0
# Files uv adds to a dist-info that are bookkeeping of the installer, not files of the wheel
# (uv_cache.json records where a local wheel came from): not part of "the same installed files".
INSTALLER_BOOKKEEPING = frozenset(
    {"INSTALLER", "REQUESTED", "RECORD", "direct_url.json", "uv_cache.json"}
)


class LockError(ConnectException):
    """A lock or wheelhouse is missing, unreadable, or does not match what it names."""


@dataclass(frozen=True)
class LockedFile:
    """One distribution file a lock names: where it is (``url`` or ``path``) and its hash."""

    name: str
    sha256: str
    url: str | None = None
    path: str | None = None


@dataclass(frozen=True)
class LockedPackage:
    name: str
    version: str
    wheels: tuple[LockedFile, ...] = ()
    archive: LockedFile | None = None  # a direct file reference (``name @ file:///x.whl``)
    # Only when the index has no wheel for this version: built by uv at install, and again on
    # an offline rebuild (which then needs the sdist's build backend in uv's cache).
    sdist: LockedFile | None = None


@dataclass(frozen=True)
class Lock:
    """A plugin env's lock: every installed distribution pinned to files with hashes."""

    packages: tuple[LockedPackage, ...]
    tool: Mapping[str, Any] = field(default_factory=dict)

    @property
    def interpreter(self) -> dict[str, str]:
        return dict(self.tool.get("interpreter", {}))

    def versions(self) -> dict[str, str]:
        return {p.name: p.version for p in self.packages}

    @classmethod
    def read(cls, path: Path) -> Lock:
        """Parse a PEP 751 ``pylock.toml`` (the subset uv and this module write)."""
        try:
            data = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise LockError(f"no lock at {path}") from None
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise LockError(f"unreadable lock {path}: {exc}") from exc
        packages = []
        for entry in data.get("packages", []):
            wheels = tuple(_locked_file(w, entry["name"]) for w in entry.get("wheels", []))
            archive, sdist = entry.get("archive"), entry.get("sdist")
            if not wheels and archive is None and sdist is None:
                raise LockError(
                    f"{path}: package {entry['name']} {entry.get('version')} is locked to "
                    "no file (a source tree cannot be rebuilt from a lock)"
                )
            packages.append(
                LockedPackage(
                    entry["name"],
                    str(entry.get("version", "")),
                    wheels,
                    _locked_file(archive, entry["name"]) if archive else None,
                    _locked_file(sdist, entry["name"]) if sdist else None,
                )
            )
        return cls(tuple(packages), data.get("tool", {}).get("copycat", {}))

    def write(self, path: Path) -> None:
        lines = ['lock-version = "1.0"', 'created-by = "copycat"', ""]
        for package in sorted(self.packages, key=lambda p: canonicalize_name(p.name)):
            lines += [
                "[[packages]]",
                f"name = {_q(package.name)}",
                f"version = {_q(package.version)}",
            ]
            if package.wheels:
                lines.append("wheels = [")
                lines += [f"    {_file_table(w)}," for w in package.wheels]
                lines.append("]")
            if package.archive is not None:
                lines.append(f"archive = {_file_table(package.archive)}")
            if package.sdist is not None:
                lines.append(f"sdist = {_file_table(package.sdist)}")
            lines.append("")
        if self.tool:
            lines.append("[tool.copycat]")
            for key, value in sorted(self.tool.items()):
                lines.append(f"{key} = {_toml_value(value)}")
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("\n".join(lines) + "\n")
        tmp.replace(path)


def _locked_file(raw: Mapping[str, Any], package: str) -> LockedFile:
    sha = raw.get("hashes", {}).get("sha256")
    if not sha:
        raise LockError(f"the lock names a file of {package} without a sha256 hash")
    url, path = raw.get("url"), raw.get("path")
    name = raw.get("name") or Path(urlsplit(url).path if url else str(path)).name
    return LockedFile(unquote(name), sha, url, path)


def _q(text: str) -> str:
    return json.dumps(text)  # a JSON string is a valid TOML basic string


def _toml_value(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return _q(str(value))


def _file_table(f: LockedFile) -> str:
    where = f"url = {_q(f.url)}" if f.url else f"path = {_q(str(f.path))}"
    return f"{{ name = {_q(f.name)}, {where}, hashes = {{ sha256 = {_q(f.sha256)} }} }}"


def current_interpreter() -> dict[str, str]:
    """What a lock records about the interpreter its env was built with."""
    return {
        "implementation": sys.implementation.name,
        "version": platform.python_version(),
        "executable": sys.executable,
    }


def venv_python_version(env: Path) -> str | None:
    """The Python version a venv was made with (``pyvenv.cfg``), or None if unknown."""
    try:
        text = (env / "pyvenv.cfg").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() in ("version_info", "version"):
            return value.strip()
    return None


def interpreter_changed(env: PluginEnvironment) -> str | None:
    """Why a locked venv no longer runs on this runtime's interpreter, or None if it does.

    A venv's ``bin/python`` is a link to the interpreter it was made with: after that
    interpreter is upgraded or removed, the link dangles or points at another version, and
    compiled dependencies no longer match.
    """
    if env.layout != "venv" or not (env.location / LOCK_NAME).exists():
        return None
    python = env.location / "bin" / "python"
    if not python.exists():
        return f"its interpreter {python} no longer exists"
    made = venv_python_version(env.location)
    runtime = platform.python_version()
    if made is not None and made.split(".")[:2] != runtime.split(".")[:2]:
        return f"it was built for Python {made}, the runtime is Python {runtime}"
    return None


def _best_wheel(files: Iterable[LockedFile]) -> LockedFile:
    """The wheel this interpreter would pick: the one whose tag ranks first in sys_tags()."""
    rank = {tag: i for i, tag in enumerate(sys_tags())}
    best: tuple[int, LockedFile] | None = None
    for f in files:
        try:
            _, _, _, tags = parse_wheel_filename(f.name)
        except ValueError:
            continue
        score = min((rank[t] for t in tags if t in rank), default=None)
        if score is not None and (best is None or score < best[0]):
            best = (score, f)
    if best is None:
        names = ", ".join(f.name for f in files)
        raise LockError(f"no locked wheel fits this interpreter ({names})")
    return best[1]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _fetch(f: LockedFile, base: Path, dest: Path, env: Path) -> None:
    """Copy or download one locked file to ``dest``, refusing it if its hash differs.

    Raises:
        LockError: the file is unreachable (naming ``env``, the file and where it was
            looked for) or its hash differs.
    """
    import httpx

    where = str(base / f.path) if f.path is not None else f.url
    try:
        if f.path is not None:
            shutil.copyfile(base / f.path, dest)
        elif f.url is not None and f.url.startswith("file://"):
            shutil.copyfile(unquote(urlsplit(f.url).path), dest)
        elif f.url is not None:
            with httpx.stream("GET", f.url, timeout=DOWNLOAD_TIMEOUT_S, follow_redirects=True) as r:
                if r.status_code != 200:
                    raise LockError(
                        f"plugin env {env}: cannot download {f.name} from {f.url}: "
                        f"HTTP {r.status_code}"
                    )
                with dest.open("wb") as out:
                    for chunk in r.iter_bytes():
                        out.write(chunk)
        else:
            raise LockError(f"plugin env {env}: its lock gives no location for {f.name}")
    except (OSError, httpx.HTTPError) as exc:  # a file gone; refused, timed out, a proxy
        raise LockError(
            f"plugin env {env}: cannot get {f.name} from {where}: {type(exc).__name__}: {exc}"
        ) from exc
    actual = _sha256(dest)
    if actual != f.sha256:
        dest.unlink()
        raise LockError(
            f"plugin env {env}: {f.name} does not match its lock: sha256 {actual}, "
            f"locked {f.sha256}"
        )


def _chosen(package: LockedPackage) -> LockedFile:
    """The file of ``package`` this interpreter installs: its direct archive, else its best
    wheel, else its sdist."""
    if package.archive is not None or package.wheels:
        return package.archive or _best_wheel(package.wheels)
    assert package.sdist is not None
    return package.sdist


def _with_file(package: LockedPackage, old: LockedFile, new: LockedFile) -> LockedPackage:
    return LockedPackage(
        package.name,
        package.version,
        tuple(new if w is old else w for w in package.wheels),
        new if package.archive is old else package.archive,
        new if package.sdist is old else package.sdist,
    )


def keep_locked_files(env_dir: Path, store: str) -> list[str]:
    """Put the file of every package of ``env_dir``'s lock that this interpreter installs into
    ``env_dir/store`` (downloaded from the index, or copied from a ``--find-links``
    directory) and point the lock at it by relative path; return the problems of files that
    could not be fetched (their entries keep their URL).

    At install time, before uv installs from the lock: uv then installs these very files,
    and the env holds everything it is made of, so it can be exported as a wheelhouse
    (shipped to Spark executors) later without the index or the original files.
    """
    lock_path = env_dir / LOCK_NAME
    lock = Lock.read(lock_path)
    kept = env_dir / store
    problems: list[str] = []
    packages = []
    for package in lock.packages:
        chosen = _chosen(package)
        inside = chosen.path is not None and not Path(chosen.path).is_absolute()
        if inside:
            packages.append(package)
            continue
        kept.mkdir(exist_ok=True)
        target = kept / chosen.name
        try:
            if not (target.exists() and _sha256(target) == chosen.sha256):
                _fetch(chosen, env_dir, target, env_dir)
        except LockError as exc:
            problems.append(str(exc))
            packages.append(package)
            continue
        local = LockedFile(chosen.name, chosen.sha256, path=f"{store}/{chosen.name}")
        packages.append(_with_file(package, chosen, local))
    Lock(tuple(packages), lock.tool).write(lock_path)
    return problems


def export_wheelhouse(env: PluginEnvironment, dest: Path) -> Path:
    """Put every wheel of ``env``'s lock into ``dest`` with a relative lock; return ``dest``.

    Wheels are copied from where the lock says: the env's own store for envs installed by
    this version (:func:`keep_locked_files`, no network), else the index or a local file.
    Each is checked against the locked sha256. ``dest`` also gets the env's manifest.

    Raises:
        LockError: the env has no lock, a file is unreachable or its hash differs (naming
            the env and the file and where it was looked for).
    """
    lock_path = env.location / LOCK_NAME
    lock = Lock.read(lock_path)
    dest.mkdir(parents=True, exist_ok=True)
    packages = []
    for package in lock.packages:
        chosen = _chosen(package)
        target = dest / chosen.name
        if not (target.exists() and _sha256(target) == chosen.sha256):
            _fetch(chosen, env.location, target, env.location)
        local = LockedFile(chosen.name, chosen.sha256, path=chosen.name)
        if chosen is package.sdist:
            packages.append(LockedPackage(package.name, package.version, sdist=local))
        else:
            packages.append(LockedPackage(package.name, package.version, (local,)))
    Lock(tuple(packages), {**lock.tool, "exported-from": str(env.location)}).write(dest / LOCK_NAME)
    manifest = env.read_manifest()
    if manifest is not None:
        (dest / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, sort_keys=True))
    return dest


def build_env_offline(wheelhouse: Path, dest: Path) -> PluginEnvironment:
    """Build a plugin env at ``dest`` from a wheelhouse, with no network; return it.

    The env is built beside ``dest`` and renamed into place, so a failure leaves nothing.
    Hashes are verified by uv against the wheelhouse's lock.

    Raises:
        LockError: ``dest`` exists, or the wheelhouse is incomplete or does not match its lock.
    """
    from registry.installer import PluginInstallError, make_venv, run_uv

    lock = Lock.read(wheelhouse / LOCK_NAME)
    if dest.exists():
        raise LockError(f"cannot build a plugin env at {dest}: it exists")
    staging = dest.with_name(f".staging-{uuid.uuid4().hex[:12]}")
    try:
        make_venv(staging)
        run_uv(
            [
                "pip",
                "install",
                "--quiet",
                "--python",
                str(staging / "bin" / "python"),
                "--offline",
                "--no-index",
                "-r",
                str(wheelhouse / LOCK_NAME),
            ],
            f"building a plugin env from the wheelhouse {wheelhouse}",
        )
        tool = {k: v for k, v in lock.tool.items() if k != "exported-from"}
        tool["interpreter"] = current_interpreter()
        tool["built-from-wheelhouse"] = str(wheelhouse)

        # The env's lock points at the wheelhouse's files, so it can be exported again.
        def absolute_file(f: LockedFile) -> LockedFile:
            return LockedFile(f.name, f.sha256, path=str((wheelhouse / str(f.path)).resolve()))

        absolute = tuple(
            LockedPackage(
                p.name,
                p.version,
                tuple(absolute_file(f) for f in p.wheels),
                sdist=absolute_file(p.sdist) if p.sdist is not None else None,
            )
            for p in lock.packages
        )
        Lock(absolute, tool).write(staging / LOCK_NAME)
        env = PluginEnvironment(staging)
        manifest_file = wheelhouse / MANIFEST_NAME
        if manifest_file.exists():
            manifest = json.loads(manifest_file.read_text())
            manifest.update(location=str(dest.resolve()), fingerprint=env.fingerprint())
            for plugin in manifest.get("plugins", []):
                plugin["location"] = str(dest.resolve())
            env.write_manifest(manifest)
        staging.rename(dest)
        return PluginEnvironment(dest)
    except PluginInstallError as exc:
        raise LockError(str(exc)) from exc
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def installed_records(env: PluginEnvironment) -> dict[str, str]:
    """``path -> sha256`` of every file the env's wheels installed, from their RECORD files
    (installer bookkeeping excluded): two envs with equal records hold the same files."""
    out: dict[str, str] = {}
    for record in sorted(env.import_path.glob("*.dist-info/RECORD")):
        for line in record.read_text().splitlines():
            path, _, rest = line.partition(",")
            digest = rest.partition(",")[0]
            if not path or Path(path).name in INSTALLER_BOOKKEEPING:
                continue
            out[path] = digest
    return out
