"""The PEP 751 lock Copycat writes reads back the same, and refuses what it cannot rebuild."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from registry.locks import Lock, LockedFile, LockedPackage, LockError

SHA = "ab" * 32


def test_round_trip_and_valid_toml(tmp_path: Path) -> None:
    lock = Lock(
        (
            LockedPackage(
                "my-plugin",
                "1.0",
                (LockedFile("my_plugin-1.0-py3-none-any.whl", SHA, url="http://i/p.whl"),),
            ),
            LockedPackage(
                "local",
                "2.0",
                archive=LockedFile("local-2.0-py3-none-any.whl", SHA, path="w/l.whl"),
            ),
        ),
        {"requirement": 'my-plugin "quoted"', "interpreter": {"version": "3.11.7"}},
    )
    path = tmp_path / "pylock.toml"
    lock.write(path)
    data = tomllib.loads(path.read_text())
    assert data["lock-version"] == "1.0"
    assert data["tool"]["copycat"]["requirement"] == 'my-plugin "quoted"'
    again = Lock.read(path)
    assert sorted(again.packages, key=lambda p: p.name) == sorted(
        lock.packages, key=lambda p: p.name
    )
    assert again.tool == lock.tool


def test_a_package_without_files_or_hashes_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "pylock.toml"
    path.write_text('lock-version = "1.0"\n[[packages]]\nname = "x"\nversion = "1"\n')
    with pytest.raises(LockError, match="locked to no file"):
        Lock.read(path)
    path.write_text(
        'lock-version = "1.0"\n[[packages]]\nname = "x"\nversion = "1"\n'
        'wheels = [{ url = "http://i/x-1-py3-none-any.whl" }]\n'
    )
    with pytest.raises(LockError, match="without a sha256"):
        Lock.read(path)
