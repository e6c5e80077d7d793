"""Write real PEP 427 wheels for tests and benchmarks, without a build backend.

Tests need wheels that differ in exactly one way (two versions of one library, a plugin with
no entry points, a plugin whose import has a side effect); writing them directly is fast and
keeps every such fixture visible in the test that uses it.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from registry.api_wheel import pack_wheel


def build_wheel(
    out_dir: Path,
    name: str,
    version: str,
    files: Mapping[str, str],
    *,
    requires: Sequence[str] = (),
    entry_points: Mapping[str, Mapping[str, str]] | None = None,
    metadata: Mapping[str, str] | None = None,
) -> Path:
    """Write ``{name}-{version}-py3-none-any.whl`` holding ``files`` and return its path.

    ``metadata`` adds core metadata fields (``Summary``, ``License-Expression``, ...).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    fields = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    fields += [f"{k}: {v}" for k, v in (metadata or {}).items()]
    fields += [f"Requires-Dist: {r}" for r in requires]
    contents: dict[str, bytes] = {p: c.encode() for p, c in files.items()}
    contents[f"{info}/METADATA"] = ("\n".join(fields) + "\n").encode()
    contents[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: copycat-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    if entry_points:
        lines = []
        for group, eps in entry_points.items():
            lines.append(f"[{group}]")
            lines += [f"{k} = {v}" for k, v in eps.items()]
            lines.append("")
        contents[f"{info}/entry_points.txt"] = "\n".join(lines).encode()
    return pack_wheel(out_dir / f"{dist}-{version}-py3-none-any.whl", contents, info)


def build_zipapp(
    out: Path,
    name: str,
    version: str,
    files: Mapping[str, str],
    entry_points: Mapping[str, Mapping[str, str]],
) -> Path:
    """A pure-Python plugin packed as one zip: its modules plus a .dist-info, importable as is."""
    wheel = build_wheel(
        out.parent / ".zipapp-build", name, version, files, entry_points=entry_points
    )
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.namelist():
            dst.writestr(item, src.read(item))
    return out
