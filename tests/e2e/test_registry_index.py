"""The private plugin index as a publisher and a plain pip user meet it: a fresh
``copycat registry serve`` (air-gapped, nothing added to it), real twine and pip.

The marketplace's end-to-end path (publish, install, run) is in test_marketplace.py, on the
session's index; the tests here need an index of their own (what a fresh one holds, what is
published under one name).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from registry.installer import runtime_api_version
from registry.server import RegistryApp, RegistryServer
from tests.support.marketplace import (
    API_REQUIREMENT,
    UPLOAD_TOKEN,
    source_plugin_wheel,
    twine_upload,
)
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.integration


@pytest.fixture
def index(tmp_path: Path) -> Iterator[RegistryServer]:
    """A fresh index, as ``copycat registry serve --data DIR`` starts one: no upstream."""
    with RegistryServer(tmp_path / "index", upload_token=UPLOAD_TOKEN) as server:
        yield server


def _said(done: subprocess.CompletedProcess[str]) -> str:
    """What twine printed, on one line (it wraps long reasons)."""
    return " ".join((done.stdout + done.stderr).split())


def _tick_counter(out: Path, version: str, summary: str = "Counts ticks") -> Path:
    metadata = {"Summary": summary, "License": "Apache-2.0"}
    return source_plugin_wheel(out, "tick-counter", version, metadata=metadata)


def test_two_uploads_of_one_new_file_at_once_store_and_list_the_same_wheel(
    index: RegistryServer, tmp_path: Path
) -> None:
    wheels = [_tick_counter(tmp_path / v, "1.3.0", f"variant {v}") for v in "ab"]
    assert wheels[0].name == wheels[1].name and wheels[0].read_bytes() != wheels[1].read_bytes()
    with ThreadPoolExecutor(2) as pool:  # both are validated while neither is stored
        done = list(pool.map(lambda w: twine_upload(index.url, w), wheels))

    accepted = [i for i, d in enumerate(done) if d.returncode == 0]
    assert len(accepted) == 1, [_said(d) for d in done]
    winner, loser = accepted[0], 1 - accepted[0]
    assert (index.app.plugins_dir / wheels[0].name).read_bytes() == wheels[winner].read_bytes()
    listed = httpx.get(f"{index.url}/api/plugins/tick-counter").json()["versions"]
    assert [e["summary"] for e in listed] == [f"variant {'ab'[winner]}"]
    assert f"{wheels[0].name} already exists on this index" in _said(done[loser])


def test_a_published_version_cannot_be_published_again_under_another_file_name(
    index: RegistryServer, tmp_path: Path
) -> None:
    wheel = _tick_counter(tmp_path, "1.0.0")
    assert twine_upload(index.url, wheel).returncode == 0
    tagged = tmp_path / "tagged" / "tick_counter-1.0.0-1-py3-none-any.whl"  # a build tag
    tagged.parent.mkdir()
    shutil.copy(wheel, tagged)

    done = twine_upload(index.url, tagged)
    assert done.returncode != 0
    assert (
        f"tick-counter 1.0.0 is already on this index as {wheel.name}: a published version "
        "cannot change" in _said(done)
    ), _said(done)
    assert [p.name for p in index.app.plugins_dir.iterdir()] == [wheel.name]
    found = httpx.get(f"{index.url}/api/plugins", params={"q": "tick"}).json()
    assert [(p["name"], p["versions"]) for p in found] == [("tick-counter", ["1.0.0"])]
    page = httpx.get(f"{index.index_url}tick-counter/").text
    assert wheel.name in page and tagged.name not in page


def _sdist(out: Path, name: str, version: str) -> Path:
    """A minimal sdist twine accepts (it reads PKG-INFO)."""
    base = f"{name.replace('-', '_')}-{version}"
    info = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    path = out / f"{base}.tar.gz"
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as archive:
        top = tarfile.TarInfo(base)
        top.type = tarfile.DIRTYPE
        archive.addfile(top)
        member = tarfile.TarInfo(f"{base}/PKG-INFO")
        member.size = len(info)
        archive.addfile(member, io.BytesIO(info))
    return path


def test_every_refused_upload_says_why_where_twine_prints_it(
    index: RegistryServer, tmp_path: Path
) -> None:
    """twine prints a refusal's status line, and its body only with --verbose."""
    wheel = _tick_counter(tmp_path, "1.0.0")
    assert twine_upload(index.url, wheel).returncode == 0

    again = twine_upload(index.url, wheel)
    assert again.returncode != 0
    assert f"400 Bad Request from {index.url}/ {wheel.name} already exists" in _said(again)

    sdist = twine_upload(index.url, _sdist(tmp_path, "tick-counter", "1.1.0"))
    assert sdist.returncode != 0
    assert "tick_counter-1.1.0.tar.gz: only wheels are accepted" in _said(sdist), _said(sdist)

    wrong = twine_upload(index.url, _tick_counter(tmp_path / "new", "1.2.0"), token="wrong")
    assert wrong.returncode != 0
    assert "401 Unauthorized" in _said(wrong)
    assert "uploads need the registry's token" in _said(wrong), _said(wrong)


def test_a_search_answers_with_every_version_of_the_plugins_it_finds(
    index: RegistryServer, tmp_path: Path
) -> None:
    for version, summary in (("1.2.0", "Suffix to append"), ("1.3.0", "Counts ticks")):
        wheel = _tick_counter(tmp_path / version, version, summary)
        assert twine_upload(index.url, wheel).returncode == 0

    found = httpx.get(f"{index.url}/api/plugins", params={"q": "Suffix to append"}).json()
    assert [(p["name"], p["latest"], p["versions"], p["summary"]) for p in found] == [
        ("tick-counter", "1.3.0", ["1.3.0", "1.2.0"], "Counts ticks")
    ]
    assert httpx.get(f"{index.url}/api/plugins", params={"q": "no such words"}).json() == []


def test_rejections_name_the_uploaded_file_not_the_index_s_temporary_paths(
    index: RegistryServer, tmp_path: Path
) -> None:
    broken = source_plugin_wheel(
        tmp_path,
        "broken-ep",
        "1.0",
        entry_points={"copycat.connectors": {"Gone": "broken_ep:DoesNotExist"}},
    )
    undocumented = build_wheel(
        tmp_path,
        "bad-config",
        "1.0",
        {
            "bad_config.py": "from plugin_api import ConfigDef, ConfigType, SinkConnector\n"
            "class Sink(SinkConnector):\n"
            "    def start(self, props): pass\n"
            "    def task_class(self): return None\n"
            "    def task_configs(self, n): return []\n"
            "    def stop(self): pass\n"
            "    def config(self): return ConfigDef().define('path', ConfigType.STRING)\n"
        },
        requires=[API_REQUIREMENT],
        entry_points={"copycat.connectors": {"Sink": "bad_config:Sink"}},
        metadata={"Summary": "s", "License": "MIT"},
    )
    expected = {
        broken: "cannot install wheel broken_ep-1.0-py3-none-any.whl: the plugin has broken "
        "entry points: copycat.connectors:Gone = broken_ep:DoesNotExist",
        undocumented: "wheel bad_config-1.0-py3-none-any.whl has invalid config definitions: "
        "Sink: config key 'path' has no documentation",
    }
    for wheel, reason in expected.items():
        done = twine_upload(index.url, wheel)
        said = _said(done)
        assert done.returncode != 0 and reason in said, said
        unwrapped = said.replace(" ", "")  # twine breaks long paths across lines
        for internal in ("copycat-upload-", "copycat-validate-", ".staging-"):
            assert internal not in unwrapped, said


def test_a_fresh_index_serves_the_plugin_api_so_plain_pip_installs_a_plugin(
    index: RegistryServer, tmp_path: Path
) -> None:
    runtime = runtime_api_version()
    listed = httpx.get(f"{index.index_url}copycat-plugin-api/")
    assert listed.status_code == 200
    assert f"copycat_plugin_api-{runtime}-py3-none-any.whl" in listed.text
    assert twine_upload(index.url, _tick_counter(tmp_path, "1.0.0")).returncode == 0

    target = tmp_path / "target"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-cache-dir",
            "--target",
            str(target),
            "--index-url",
            index.index_url,
            "tick-counter",
        ],
        check=True,
        timeout=120,
    )
    assert (target / "tick_counter.py").exists()
    assert (target / "plugin_api" / "__init__.py").exists()
    assert (target / f"copycat_plugin_api-{runtime}.dist-info").is_dir()

    # Starting again on the same directory adds nothing: the wheel is there.
    RegistryApp(index.app.data)
    assert [p.name for p in index.app.libraries_dir.iterdir()] == [
        f"copycat_plugin_api-{runtime}-py3-none-any.whl"
    ]
