"""This runtime's ``copycat-plugin-api`` as a wheel, for an index's ``libraries``.

Every plugin requires ``copycat-plugin-api``. Copycat's own installs drop that requirement
(the plugin host takes plugin_api from the runtime), but plain pip and uv users of an index,
and plugin authors running their tests, resolve it there. The wheel is packed from the
plugin_api this runtime imports and its installed metadata: no build backend, no network (an
air-gapped index can make it), and exactly the modules the runtime's plugin hosts load.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import uuid
import zipfile
from collections.abc import Mapping
from pathlib import Path

import plugin_api
from plugin_api import ConnectException
from registry.installer import PLUGIN_API_DISTRIBUTION

_WHEEL = (
    b"Wheel-Version: 1.0\nGenerator: copycat-registry\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
)


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def pack_wheel(wheel: Path, contents: Mapping[str, bytes], info: str) -> Path:
    """Write ``contents`` (archive path -> bytes) as the wheel file ``wheel``, adding the
    RECORD of ``info`` (its ``.dist-info`` directory). Written aside and renamed into place, so
    a reader never sees half a wheel."""
    record = [_record_line(p, d) for p, d in contents.items()] + [f"{info}/RECORD,,"]
    files = {**contents, f"{info}/RECORD": ("\n".join(record) + "\n").encode()}
    wheel.parent.mkdir(parents=True, exist_ok=True)
    tmp = wheel.parent / f".{wheel.name}.{uuid.uuid4().hex[:8]}"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    tmp.replace(wheel)
    return wheel


def ensure_plugin_api_wheel(directory: Path) -> Path:
    """The wheel of this runtime's copycat-plugin-api version in ``directory``, written there
    if no wheel of that version is (one added by ``copycat registry add`` is kept).

    Raises:
        ConnectException: the runtime's plugin_api has no installed metadata to pack.
    """
    try:
        dist = importlib.metadata.distribution(PLUGIN_API_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError as exc:
        raise ConnectException(
            f"cannot make a {PLUGIN_API_DISTRIBUTION} wheel: this runtime has no installed "
            f"{PLUGIN_API_DISTRIBUTION} metadata"
        ) from exc
    stem = f"{PLUGIN_API_DISTRIBUTION.replace('-', '_')}-{dist.version}"
    present = sorted(directory.glob(f"{stem}-*.whl"))
    if present:
        return present[0]
    package = Path(plugin_api.__file__).parent
    contents = {
        f"plugin_api/{path.relative_to(package).as_posix()}": path.read_bytes()
        for path in sorted(package.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }
    info = f"{stem}.dist-info"
    contents[f"{info}/METADATA"] = (dist.read_text("METADATA") or "").encode()
    contents[f"{info}/WHEEL"] = _WHEEL
    return pack_wheel(directory / f"{stem}-py3-none-any.whl", contents, info)
