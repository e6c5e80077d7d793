"""The plugin marketplace end to end: a real index (``copycat registry serve``), real pip, uv
and twine, a running worker that picks plugins up without a restart, versions side by side.

Everything runs against the session's index (``plugin_index``) and dev broker; each test
publishes plugins under names of its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import httpx
import pytest

from core.cli import main as cli_main
from isolation import PluginEnvironment
from registry import install
from registry.installer import WHEEL_STORE
from registry.locks import LOCK_NAME, Lock
from registry.manage import processes_using
from registry.server import RegistryServer, add_libraries
from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import read_all
from tests.support.marketplace import source_plugin_wheel, twine_upload
from tests.support.processes import host_pids
from tests.support.rest import RestWorker, wait_for
from tests.support.wheels import build_wheel

pytestmark = pytest.mark.integration


def _uid() -> str:
    return uuid.uuid4().hex[:6]


@pytest.fixture
def worker(
    tmp_path: Path,
    bootstrap_servers: str,
    bundled_plugin_path: Path,
    plugin_index: RegistryServer,
) -> Iterator[RestWorker]:
    """A running worker whose plugin.path is an empty directory (installs go there) followed
    by the bundled plugins (converters); REST installs may use the session's index."""
    own = tmp_path / "plugins"
    own.mkdir()
    extra = {
        "plugin.path": f"{own},{bundled_plugin_path}",
        "plugin.index.urls": plugin_index.index_url,
    }
    with RestWorker(tmp_path, bootstrap_servers, own, extra) as running:
        yield running


def _own_path(worker: RestWorker) -> Path:
    return Path(worker.props["plugin.path"].split(",")[0])


def _run_source(
    http: httpx.Client,
    broker: KafkaCluster,
    name: str,
    connector_class: str,
    extra: dict[str, str] | None = None,
) -> str:
    topic = f"market-{name}"
    broker.create_topic(topic, 1)
    config = {"connector.class": connector_class, "topic": topic, "count": "5", **(extra or {})}
    r = http.post("/connectors", json={"name": name, "config": config})
    assert r.status_code == 201, r.text
    wait_for(
        lambda: (
            http.get(f"/connectors/{name}/status").json().get("tasks", [{}])[0].get("state")
            == "RUNNING"
        ),
        what=f"{name} running",
    )
    return topic


def _values(bootstrap: str, topic: str, n: int) -> list[str]:
    return [m.value().decode() for m in read_all(bootstrap, topic, n)]


def _listed(http: httpx.Client, class_name: str) -> list[dict[str, str]]:
    plugins = http.get("/connector-plugins").json()
    return [p for p in plugins if p["class"] == class_name]


def test_plain_pip_installs_are_discovered_by_a_running_worker(
    worker: RestWorker,
    plugin_index: RegistryServer,
    broker: KafkaCluster,
    bootstrap_servers: str,
    tmp_path: Path,
) -> None:
    """``python -m venv`` + ``pip install`` and ``pip install --target``, no Copycat command:
    the running worker lists both plugins and runs them."""
    uid = _uid()
    venv_name, target_name = f"pipvenv-{uid}", f"piptarget-{uid}"
    wheels = tmp_path / "wheels"
    for name in (venv_name, target_name):
        wheel = source_plugin_wheel(wheels, name, "1.0")
        done = twine_upload(plugin_index.url, wheel)
        assert done.returncode == 0, done.stdout + done.stderr
    own = _own_path(worker)
    with worker.client() as http:
        assert not _listed(http, f"{venv_name.replace('-', '_')}.Source")

        subprocess.run([sys.executable, "-m", "venv", str(own / venv_name)], check=True)
        pip = [str(own / venv_name / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, "--index-url", plugin_index.index_url, venv_name], check=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--target",
                str(own / target_name),
                "--index-url",
                plugin_index.index_url,
                target_name,
            ],
            check=True,
        )
        for name in (venv_name, target_name):
            class_name = f"{name.replace('-', '_')}.Source"
            found = wait_for(partial(_listed, http, class_name), what=f"{class_name} listed")
            assert found == [{"class": class_name, "type": "source", "version": "1.0"}]
            topic = _run_source(http, broker, f"c-{name}", class_name)
            assert _values(bootstrap_servers, topic, 5) == [f"{name}-{n}" for n in range(1, 6)]

    listed = subprocess.run(
        [sys.executable, "-m", "core.cli", "plugins", "--plugin-path", str(own), "list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"{venv_name} 1.0  [pip venv, no lock]" in listed, listed
    assert f"{target_name} 1.0  [pip --target, no lock]" in listed, listed


def test_an_alias_two_plugins_claim_is_reported_as_ambiguous_over_rest(
    worker: RestWorker, tmp_path: Path
) -> None:
    """Installing a second plugin with a class of the same simple name takes the alias away:
    every REST path that looks a plugin up by that name says it is ambiguous, and why."""
    uid = _uid()
    names = [f"first-{uid}", f"second-{uid}"]
    classes = sorted(f"{n.replace('-', '_')}.Source" for n in names)
    own = _own_path(worker)
    with worker.client() as http:
        for name in names:
            install(str(source_plugin_wheel(tmp_path / name, name, "1.0")), own, offline=True)
        for class_name in classes:
            wait_for(partial(_listed, http, class_name), what=f"{class_name} listed")

        r = http.get("/connector-plugins/Source/config")
        assert r.status_code == 404, r.text
        assert f"ambiguous ({', '.join(classes)})" in r.json()["message"], r.text
        config = {"connector.class": "Source", "topic": f"t-{uid}"}
        r = http.put("/connector-plugins/Source/config/validate", json=config)
        errors = {c["value"]["name"]: c["value"]["errors"] for c in r.json()["configs"]}
        [error] = errors["connector.class"]
        assert "Source is ambiguous" in error and "full class name" in error, r.text
        r = http.post("/connectors", json={"name": f"c-{uid}", "config": config})
        assert r.status_code == 400 and "Source is ambiguous" in r.json()["message"], r.text


def test_scaffold_publish_install_and_run_without_restart(
    worker: RestWorker,
    plugin_index: RegistryServer,
    broker: KafkaCluster,
    bootstrap_servers: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = f"greeter-{_uid()}-source"
    assert cli_main(["plugin", "new", name, "--kind", "source", "--directory", str(tmp_path)]) == 0
    project = tmp_path / name
    # The generated tests pass as generated, with plugin_api from the index.
    tests = subprocess.run(
        [
            "uv",
            "run",
            "--quiet",
            "--no-project",
            "--index-url",
            plugin_index.index_url,
            "--with",
            "pytest",
            "--with-editable",
            str(project),
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(project / "tests"),
        ],
        capture_output=True,
        text=True,
        cwd=project,
    )
    assert tests.returncode == 0 and "3 passed" in tests.stdout, tests.stdout + tests.stderr

    from tests.support.marketplace import UPLOAD_TOKEN

    code = cli_main(
        ["plugin", "publish", str(project), "--index", plugin_index.url, "--token", UPLOAD_TOKEN]
    )
    assert code == 0, capsys.readouterr().err

    # Real pip and uv see it on the index.
    downloaded = tmp_path / "downloaded"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--index-url",
            plugin_index.index_url,
            "-d",
            str(downloaded),
            name,
        ],
        check=True,
    )
    assert [p.name for p in downloaded.iterdir()] == [
        f"{name.replace('-', '_')}-0.1.0-py3-none-any.whl"
    ]
    scratch = tmp_path / "scratch"
    subprocess.run(["uv", "venv", "--quiet", str(scratch)], check=True)
    subprocess.run(
        [
            "uv",
            "pip",
            "install",
            "--quiet",
            "--python",
            str(scratch / "bin" / "python"),
            "--index-url",
            plugin_index.index_url,
            name,
        ],
        check=True,
    )

    own = _own_path(worker)
    code = cli_main(
        [
            "plugins",
            "install",
            name,
            "--index-url",
            plugin_index.index_url,
            "--plugin-path",
            str(own),
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert (own / f"{name}-0.1.0" / "pylock.toml").exists()
    # What `plugin new` names the class: the camel-cased name, plus Connector.
    camel = "".join(part.capitalize() for part in name.split("-"))
    class_name = f"{name.replace('-', '_')}.{camel}Connector"
    with worker.client() as http:
        wait_for(lambda: _listed(http, class_name), what=f"{class_name} listed")
        topic = _run_source(http, broker, f"c-{name}", class_name, {"count": "30"})
        assert _values(bootstrap_servers, topic, 30) == [f"hello {n}" for n in range(30)]

        # A release bumps pyproject.toml's version only: the scaffold's version() follows it,
        # so workers tell the two apart (the running connector keeps 0.1.0 installed).
        pyproject = project / "pyproject.toml"
        pyproject.write_text(
            pyproject.read_text().replace('version = "0.1.0"', 'version = "0.1.1"', 1)
        )
        publish = ["plugin", "publish", str(project), "--index", plugin_index.url]
        assert cli_main([*publish, "--token", UPLOAD_TOKEN]) == 0, capsys.readouterr().err
        capsys.readouterr()
        assert cli_main(["plugins", "--plugin-path", str(own), "upgrade", name]) == 0
        captured = capsys.readouterr()
        assert f"installed {name}-0.1.1" in captured.out, captured.out
        assert "WARNING" not in captured.err, captured.err
        wait_for(
            lambda: sorted(p["version"] for p in _listed(http, class_name)) == ["0.1.0", "0.1.1"],
            what="both versions listed, each with its own version",
        )


def _versioned_plugin(tmp: Path, index: RegistryServer, name: str, dep: str) -> tuple[Path, Path]:
    """Versions 1.0 and 2.0 of plugin ``name``, pinning ``dep`` 1.0 and 2.0 respectively;
    the dependency goes into the index's libraries, the plugins are published with twine."""
    out = tmp / "versions"
    deps = [
        build_wheel(out, dep, v, {f"{dep.replace('-', '_')}.py": f'PREFIX = "dep{v[0]}-"\n'})
        for v in ("1.0", "2.0")
    ]
    add_libraries(index.app.data, deps)
    module = dep.replace("-", "_")
    plugins = tuple(
        source_plugin_wheel(
            out,
            name,
            v,
            requires=[f"{dep}=={v}"],
            body=f"import {module}\nPREFIX = {module}.PREFIX\n",
        )
        for v in ("1.0", "2.0")
    )
    for wheel in plugins:
        done = twine_upload(index.url, wheel)
        assert done.returncode == 0, done.stdout + done.stderr
    return plugins[0], plugins[1]


def test_two_versions_run_side_by_side_and_upgrade_one_connector(
    worker: RestWorker,
    plugin_index: RegistryServer,
    broker: KafkaCluster,
    bootstrap_servers: str,
    tmp_path: Path,
) -> None:
    uid = _uid()
    name, dep = f"versioned-{uid}", f"tinydep-{uid}"
    _versioned_plugin(tmp_path, plugin_index, name, dep)
    class_name = f"{name.replace('-', '_')}.Source"
    with worker.client() as http:
        for version in ("1.0", "2.0"):  # through the REST admin endpoint
            r = http.post("/admin/plugins", json={"requirement": f"{name}=={version}"})
            assert r.status_code == 201, r.text
            assert r.json()["version"] == version and r.json()["locked"] is True
        assert sorted(p["version"] for p in _listed(http, class_name)) == ["1.0", "2.0"]
        # One version's config definitions (KIP-891's ?version=); an unknown one is Kafka's 400.
        for params in ({"version": "1.0"}, {"version": "[2.0]"}, {}):
            r = http.get(f"/connector-plugins/{class_name}/config", params=params)
            assert r.status_code == 200 and r.json(), r.text
        # An empty version is Kafka's range [,], which no version matches.
        r = http.get(f"/connector-plugins/{class_name}/config", params={"version": ""})
        assert r.status_code == 400 and "range [,]" in r.json()["message"], r.text
        r = http.get(f"/connector-plugins/{class_name}/config", params={"version": "9.9"})
        assert r.status_code == 400 and "[1.0, 2.0]" in r.json()["message"], r.text

        old = _run_source(
            http, broker, f"old-{uid}", class_name, {"connector.plugin.version": "[1.0]"}
        )
        new = _run_source(http, broker, f"new-{uid}", class_name)  # newest by default
        assert _values(bootstrap_servers, old, 5) == [f"dep1-{n}" for n in range(1, 6)]
        assert _values(bootstrap_servers, new, 5) == [f"dep2-{n}" for n in range(1, 6)]
        status = http.get(f"/connectors/old-{uid}/status").json()
        assert status["connector"]["version"] == "1.0" and status["tasks"][0]["version"] == "1.0"
        assert http.get(f"/connectors/new-{uid}/status").json()["tasks"][0]["version"] == "2.0"

        # Removing a version running connectors use is refused, naming them.
        r = http.delete(f"/admin/plugins/{name}", params={"version": "1.0"})
        assert r.status_code == 409 and f"old-{uid} (RUNNING)" in r.json()["message"], r.text

        # Move the old connector to 2.0: the other connector's task is not touched.
        runner = worker.herder._worker().connectors[f"new-{uid}"].tasks[0]
        pid = runner.host.pid
        config = http.get(f"/connectors/old-{uid}/config").json()
        config["connector.plugin.version"] = "[2.0,3.0)"
        config["topic"] = old = f"{old}-moved"
        broker.create_topic(old, 1)
        assert http.put(f"/connectors/old-{uid}/config", json=config).status_code == 200
        assert _values(bootstrap_servers, old, 5) == [f"dep2-{n}" for n in range(1, 6)]
        same = worker.herder._worker().connectors[f"new-{uid}"].tasks[0]
        assert same is runner and same.host.pid == pid and same.is_alive()
        wait_for(
            lambda: (
                http.get(f"/connectors/old-{uid}/status").json()["tasks"][0].get("version") == "2.0"
            ),
            what="old connector on 2.0",
        )

        # 1.0 is no longer used: it can go, and the catalogue forgets it at once.
        r = http.delete(f"/admin/plugins/{name}", params={"version": "1.0"})
        assert r.status_code == 200, r.text
        assert [p["version"] for p in _listed(http, class_name)] == ["2.0"]


BAD = {
    "no-eps": "declares no Copycat entry points",
    "broken-ep": "broken entry points",
    "bad-config": "has no documentation",
    "old-api": "but this runtime provides copycat-plugin-api",
}


def _bad_wheels(out: Path, uid: str) -> dict[str, Path]:
    bad_config = (
        "from plugin_api import ConfigDef, ConfigType, SinkConnector\n"
        "class Sink(SinkConnector):\n"
        "    def start(self, props): pass\n"
        "    def task_class(self): return None\n"
        "    def task_configs(self, n): return []\n"
        "    def stop(self): pass\n"
        "    def config(self): return ConfigDef().define('path', ConfigType.STRING)\n"
    )
    return {
        "no-eps": build_wheel(
            out,
            f"no-eps-{uid}",
            "1.0",
            {f"no_eps_{uid}.py": "X = 1\n"},
            requires=["copycat-plugin-api>=0.1,<0.2"],
            metadata={"Summary": "s", "License": "MIT"},
        ),
        "broken-ep": source_plugin_wheel(
            out,
            f"broken-ep-{uid}",
            "1.0",
            entry_points={"copycat.connectors": {"Gone": f"broken_ep_{uid}:DoesNotExist"}},
        ),
        "bad-config": build_wheel(
            out,
            f"bad-config-{uid}",
            "1.0",
            {f"bad_config_{uid}.py": bad_config},
            requires=["copycat-plugin-api>=0.1,<0.2"],
            entry_points={"copycat.connectors": {"Sink": f"bad_config_{uid}:Sink"}},
            metadata={"Summary": "s", "License": "MIT"},
        ),
        "old-api": build_wheel(
            out,
            f"old-api-{uid}",
            "1.0",
            {f"old_api_{uid}.py": "X = 1\n"},
            requires=["copycat-plugin-api>=9"],
            entry_points={"copycat.connectors": {"X": f"old_api_{uid}:X"}},
            metadata={"Summary": "s", "License": "MIT"},
        ),
    }


def test_bad_wheels_are_rejected_at_publish_and_at_install(
    plugin_index: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uid = _uid()
    wheels = _bad_wheels(tmp_path / "bad", uid)
    plugin_path = tmp_path / "plugins"
    for what, wheel in wheels.items():
        done = twine_upload(plugin_index.url, wheel)
        output = " ".join((done.stdout + done.stderr).split())
        assert done.returncode != 0, (what, output)
        assert "400" in output and BAD[what] in output, (what, output)
        project = wheel.name.split("-")[0].replace("_", "-")
        assert not (plugin_index.app.plugins_dir / wheel.name).exists()
        # Not served here (the session's index redirects unknown projects upstream).
        assert httpx.get(f"{plugin_index.index_url}{project}/").status_code in (303, 404)
        assert not plugin_index.app.catalogue.plugin(project)

        code = cli_main(["plugins", "--plugin-path", str(plugin_path), "install", str(wheel)])
        err = " ".join(capsys.readouterr().err.split())
        assert code == 1 and BAD[what] in err, (what, err)
    assert not plugin_path.exists() or not list(plugin_path.iterdir())


def test_uploads_need_the_token_and_the_catalogue_searches(
    plugin_index: RegistryServer, tmp_path: Path
) -> None:
    uid = _uid()
    wheel = source_plugin_wheel(tmp_path, f"searchable-{uid}", "3.1")
    refused = twine_upload(plugin_index.url, wheel, token="wrong")
    assert refused.returncode != 0 and "401" in refused.stdout + refused.stderr
    assert twine_upload(plugin_index.url, wheel).returncode == 0

    found = httpx.get(f"{plugin_index.url}/api/plugins", params={"q": f"searchable_{uid}"}).json()
    assert [p["name"] for p in found] == [f"searchable-{uid}"]
    assert found[0]["versions"] == ["3.1"] and found[0]["plugin_api"] == "<0.2,>=0.1"
    assert found[0]["components"][0]["type"] == "source"
    by_config = httpx.get(f"{plugin_index.url}/api/plugins", params={"q": "count Target"}).json()
    assert f"searchable-{uid}" in [p["name"] for p in by_config]
    # The bundled plugins are in the catalogue with their Kafka aliases.
    kafka = httpx.get(
        f"{plugin_index.url}/api/plugins",
        params={"q": "org.apache.kafka.connect.file.FileStreamSourceConnector"},
    ).json()
    assert [p["name"] for p in kafka] == ["copycat-file"]
    detail = httpx.get(f"{plugin_index.url}/api/plugins/searchable-{uid}").json()
    config = detail["versions"][0]["components"][0]["config"]
    assert [d["name"] for d in config] == ["topic", "count"]
    assert detail["versions"][0]["licence"] == "Apache-2.0"


def test_plugin_admin_endpoints_live_where_the_admin_surface_is(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path
) -> None:
    """With admin.listeners set, /admin/plugins answers only there (as /admin/loggers)."""
    extra = {"admin.listeners": "http://127.0.0.1:0"}
    with RestWorker(tmp_path, bootstrap_servers, bundled_plugin_path, extra) as running:
        assert running.server.admin_url is not None
        with running.client() as main:
            assert main.get("/admin/plugins").status_code == 404
            assert main.post("/admin/plugins", json={"requirement": "x"}).status_code == 404
        rows = httpx.get(running.server.admin_url + "/admin/plugins").json()
        assert {r["name"] for r in rows} >= {"copycat-file", "copycat-converters"}
        assert all(r["made_by"] == "copycat" and r["locked"] for r in rows)
        bad = httpx.post(running.server.admin_url + "/admin/plugins", json={})
        assert bad.status_code == 400 and "requirement" in bad.json()["message"]
        # Without plugin.index.urls, REST installs are refused (no fetching from anywhere).
        off = httpx.post(running.server.admin_url + "/admin/plugins", json={"requirement": "x"})
        assert off.status_code == 400 and "plugin.index.urls" in off.json()["message"]


def _published_versions(index: RegistryServer, tmp: Path, name: str, *versions: str) -> list[Path]:
    wheels = [source_plugin_wheel(tmp / "published", name, v) for v in versions]
    for wheel in wheels:
        done = twine_upload(index.url, wheel)
        assert done.returncode == 0, done.stdout + done.stderr
    return wheels


def test_rest_installs_take_only_requirements_the_cli_takes_paths_and_urls(
    worker: RestWorker,
    plugin_index: RegistryServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """POST /admin/plugins installs only from plugin.index.urls: a path or a URL is a 400
    that says why, and nothing is installed; the CLI installs the same path and URL."""
    name = f"local-{_uid()}"
    [wheel] = _published_versions(plugin_index, tmp_path, name, "1.0")
    own = _own_path(worker)
    with worker.client() as http:
        for requirement in (
            str(wheel),
            wheel.name,
            str(wheel.parent),
            f"{name} @ {wheel.as_uri()}",
            f"{name} @ http://127.0.0.1:9/{wheel.name}",
            f"{name}@{wheel.as_uri()}",
        ):
            r = http.post("/admin/plugins", json={"requirement": requirement})
            assert r.status_code == 400, (requirement, r.text)
            message = r.json()["message"]
            assert "plugin.index.urls" in message and "name" in message, (requirement, message)
        assert list(own.iterdir()) == []
        # A plain requirement still installs, from the index.
        r = http.post("/admin/plugins", json={"requirement": f"{name}==1.0"})
        assert r.status_code == 201 and r.json()["version"] == "1.0", r.text

    base = ["plugins", "--plugin-path", str(tmp_path / "cli")]
    assert cli_main([*base, "install", str(wheel)]) == 0
    env = tmp_path / "cli" / f"{name}-1.0"
    # The lock names the wheel kept in the env, not in the staging directory it was built in.
    recorded = Lock.read(env / LOCK_NAME).tool["requirement"]
    assert recorded == f"{name} @ {(env / WHEEL_STORE / wheel.name).resolve().as_uri()}"
    assert cli_main([*base, "install", "--replace", f"{name} @ {wheel.as_uri()}"]) == 0, (
        capsys.readouterr().err
    )
    assert f"installed {name}-1.0" in capsys.readouterr().out


def test_a_pip_target_dir_is_removed_by_the_name_and_version_listed(
    worker: RestWorker,
    plugin_index: RegistryServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """DELETE finds what GET lists by the same name and version, and export-wheelhouse says
    why a pip install (no lock) cannot be exported."""
    name = f"target-{_uid()}"
    _published_versions(plugin_index, tmp_path, name, "1.0")
    own = _own_path(worker)
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--index-url"]
    subprocess.run(
        [*pip, plugin_index.index_url, "--target", str(own / "pip-dir"), name], check=True
    )
    with worker.client() as http:
        [row] = [r for r in http.get("/admin/plugins").json() if r["name"] == name]
        assert row["version"] == "1.0" and row["made_by"] == "pip --target", row

        base = ["plugins", "--plugin-path", str(own)]
        code = cli_main([*base, "export-wheelhouse", f"{name}==1.0", "--dest", str(tmp_path / "w")])
        err = " ".join(capsys.readouterr().err.split())
        assert code == 1 and "pip-dir" in err and "no lock" in err, err

        r = http.delete(f"/admin/plugins/{name}", params={"version": "1.0"})
        assert r.status_code == 200 and r.json()["removed"] == [row["location"]], r.text
    assert not (own / "pip-dir").exists()


def test_the_cli_keeps_versions_live_plugin_hosts_run_from(
    worker: RestWorker,
    plugin_index: RegistryServer,
    broker: KafkaCluster,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``plugins remove`` refuses (unless --force) and ``plugins upgrade`` keeps an env whose
    plugin hosts are running, naming their processes and the connector they run."""
    uid = _uid()
    name, connector = f"inuse-{uid}", f"c-inuse-{uid}"
    _published_versions(plugin_index, tmp_path, name, "1.0", "2.0")
    own = _own_path(worker)
    base = ["plugins", "--plugin-path", str(own)]
    for version in ("1.0", "2.0"):
        assert (
            cli_main(
                [*base, "install", f"{name}=={version}", "--index-url", plugin_index.index_url]
            )
            == 0
        )
    old, middle = own / f"{name}-1.0", own / f"{name}-2.0"
    class_name = f"{name.replace('-', '_')}.Source"
    with worker.client() as http:
        wait_for(lambda: len(_listed(http, class_name)) == 2, what="both versions listed")
        _run_source(http, broker, connector, class_name, {"connector.plugin.version": "1.0"})
        hosts = host_pids(f"{connector}")
        assert hosts, "no plugin host of the connector"
        capsys.readouterr()

        assert cli_main([*base, "remove", f"{name}==1.0"]) == 1
        err = " ".join(capsys.readouterr().err.split())
        assert str(old) in err and f"{connector}-0" in err and "--force" in err, err
        assert all(f"pid {pid}" in err for pid in hosts), (hosts, err)
        assert old.is_dir()

        _published_versions(plugin_index, tmp_path, name, "3.0")
        assert cli_main([*base, "upgrade", name]) == 0
        out = capsys.readouterr().out
        assert f"installed {name}-3.0" in out and f"removed {middle}" in out, out
        assert f"kept {old}: in use by pid" in out and connector in out, out
        assert old.is_dir() and not middle.exists()
        status = http.get(f"/connectors/{connector}/status").json()
        assert status["tasks"][0]["state"] == "RUNNING", status

        assert cli_main([*base, "remove", f"{name}==1.0", "--force"]) == 0
        assert not old.exists()


def test_a_bare_name_installs_the_published_package_not_a_directory_of_that_name(
    plugin_index: RegistryServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """As pip: ``install NAME`` is a requirement even where ./NAME exists (``copycat plugin
    new NAME`` makes one); ``./NAME`` is the directory."""
    name = f"samename-{_uid()}"
    _published_versions(plugin_index, tmp_path, name, "1.0")
    work = tmp_path / "work"
    (work / name).mkdir(parents=True)
    (work / name / "README.md").write_text("an unpublished working copy, not a project\n")
    monkeypatch.chdir(work)
    base = ["plugins", "--plugin-path", str(tmp_path / "plugins")]
    capsys.readouterr()

    assert cli_main([*base, "install", name, "--index-url", plugin_index.index_url]) == 0, (
        capsys.readouterr().err
    )
    assert f"installed {name}-1.0" in capsys.readouterr().out
    [row] = json.loads(_cli_json([*base, "info", name], capsys))
    assert row["source"] == name, row

    assert cli_main([*base, "install", f"./{name}", "--index-url", plugin_index.index_url]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"directory {name}" in err or f"directory {work / name}" in err, err


def _cli_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert cli_main([*argv, "--json"]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def test_an_idle_validation_host_does_not_block_remove_or_upgrade(
    worker: RestWorker,
    plugin_index: RegistryServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A host kept warm after config/validate is no user of its plugin: ``plugins remove``
    and ``upgrade`` retire it at once, and the next validation starts a new host."""
    name = f"idle-{_uid()}"
    _published_versions(plugin_index, tmp_path, name, "1.0", "2.0")
    own = _own_path(worker)
    base = ["plugins", "--plugin-path", str(own)]
    index = ["--index-url", plugin_index.index_url]
    class_name = f"{name.replace('-', '_')}.Source"
    config = {"name": f"v-{name}", "connector.class": class_name, "topic": "t"}

    def validate() -> None:
        with worker.client() as http:
            wait_for(lambda: len(_listed(http, class_name)) == 1, what=f"{class_name} listed")
            r = http.put(f"/connector-plugins/{class_name}/config/validate", json=config)
            assert r.status_code == 200 and r.json()["error_count"] == 0, r.text

    assert cli_main([*base, "install", f"{name}==1.0", *index]) == 0
    validate()
    warm = [p.pid for p in processes_using(PluginEnvironment(own / f"{name}-1.0"))]
    assert warm, "no warm validation host"
    capsys.readouterr()
    assert cli_main([*base, "remove", name]) == 0, capsys.readouterr().err
    assert not (own / f"{name}-1.0").exists()
    wait_for(lambda: not set(warm) & set(host_pids("validate:")), what="idle host retired")

    # The same env again: the pool must not hand out the host a remover retired.
    assert cli_main([*base, "install", f"{name}==1.0", *index]) == 0
    validate()
    capsys.readouterr()
    assert cli_main([*base, "upgrade", name]) == 0
    out = capsys.readouterr().out
    assert f"installed {name}-2.0" in out and f"removed {own / f'{name}-1.0'}" in out, out
    assert "kept" not in out, out


def _version_raises_wheel(out: Path, name: str) -> Path:
    module = name.replace("-", "_")
    code = (
        "from plugin_api import ConfigDef, SourceConnector\n"
        "class Source(SourceConnector):\n"
        "    def start(self, props): pass\n"
        "    def task_class(self): return None\n"
        "    def task_configs(self, n): return []\n"
        "    def stop(self): pass\n"
        "    def config(self): return ConfigDef()\n"
        "    def version(self):\n"
        "        raise RuntimeError('version exploded')\n"
    )
    return build_wheel(
        out,
        name,
        "1.0",
        {f"{module}.py": code},
        requires=["copycat-plugin-api>=0.1,<0.2"],
        entry_points={"copycat.connectors": {"Source": f"{module}:Source"}},
        metadata={"Summary": "s", "License": "MIT"},
    )


def test_a_plugin_that_does_not_load_says_where_and_why(
    worker: RestWorker,
    plugin_index: RegistryServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What fails to load is reported with its step (import, version(), ...) and file:line,
    never the install's staging directory; a connector naming a plain-pip plugin that does
    not load hears that it is installed and why it failed, not that it is not installed."""
    uid = _uid()
    importing, versioned = f"nameerror-{uid}", f"badversion-{uid}"
    import_module, version_module = importing.replace("-", "_"), versioned.replace("-", "_")
    wheels = tmp_path / "wheels"
    broken_import = source_plugin_wheel(wheels, importing, "1.0", body="compute_helper()\n")
    base = ["plugins", "--plugin-path", str(tmp_path / "cli")]
    capsys.readouterr()

    assert cli_main([*base, "install", str(broken_import)]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert (
        f"importing {import_module}:Source raised NameError: name 'compute_helper' is not "
        f"defined (at {import_module}.py:" in err
    ), err
    assert ".staging-" not in err, err

    assert cli_main([*base, "install", str(_version_raises_wheel(wheels, versioned))]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert (
        f"Source.version() raised RuntimeError: version exploded (at {version_module}.py:9)" in err
    ), err
    assert ".staging-" not in err, err

    # Plain pip installs what the CLI refuses; the worker cannot load it.
    own = _own_path(worker)
    venv = own / importing
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--index-url", plugin_index.index_url, str(broken_import)], check=True)
    config = {"connector.class": f"{import_module}.Source", "topic": "t"}
    with worker.client() as http:

        def refused() -> str | None:
            r = http.post("/connectors", json={"name": f"c-{importing}", "config": config})
            assert r.status_code == 400, r.text
            message = str(r.json()["message"])
            return message if "failed to load" in message else None

        message = " ".join(wait_for(refused, what="the failure to load reported").split())
        assert "is installed but failed to load" in message, message
        assert str(venv) in message and f"{import_module}.py:" in message, message
        assert "NameError: name 'compute_helper' is not defined" in message, message

        # The REST install names its own body field, not the CLI's flag.
        name = f"twice-{uid}"
        _published_versions(plugin_index, tmp_path, name, "1.0")
        r = http.post("/admin/plugins", json={"requirement": f"{name}==1.0"})
        assert r.status_code == 201, r.text
        r = http.post("/admin/plugins", json={"requirement": f"{name}==1.0"})
        assert r.status_code == 400, r.text
        message = r.json()["message"]
        assert '"replace": true' in message and "--replace" not in message, message
        r = http.post("/admin/plugins", json={"requirement": f"{name}==1.0", "replace": True})
        assert r.status_code == 201, r.text


def test_upgrading_to_a_release_whose_version_was_not_bumped_warns(
    plugin_index: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The guide's walkthrough: 1.0.1 published with version() still "1.0.0". `upgrade`
    installs it and says loudly that workers cannot tell it from the 1.0.0 kept beside it."""
    name = f"nobump-{_uid()}"
    module = name.replace("-", "_")
    for version in ("1.0.0", "1.0.1"):
        wheel = source_plugin_wheel(
            tmp_path / "w" / version, name, version, component_version="1.0.0"
        )
        done = twine_upload(plugin_index.url, wheel)
        assert done.returncode == 0, done.stdout + done.stderr
    own = tmp_path / "plugins"
    base = ["plugins", "--plugin-path", str(own)]
    assert (
        cli_main([*base, "install", f"{name}==1.0.0", "--index-url", plugin_index.index_url]) == 0
    )
    capsys.readouterr()
    assert cli_main([*base, "upgrade", name, "--keep"]) == 0
    captured = capsys.readouterr()
    assert f"installed {name}-1.0.1" in captured.out, captured.out
    err = " ".join(captured.err.split())
    assert err.startswith(f"WARNING: {name} 1.0.1"), err
    assert f"{own / f'{name}-1.0.0'}: {module}.Source 1.0.0" in err, err


def test_a_version_needing_another_plugin_api_is_not_offered_over_rest(
    worker: RestWorker, broker: KafkaCluster, bootstrap_servers: str, tmp_path: Path
) -> None:
    """What `plugins install` refuses (a copycat-plugin-api range excluding this runtime's)
    put into plugin.path by plain uv: GET /connector-plugins does not list it, a connector
    naming no version runs the older compatible one, and one pinning it is a 400 saying why."""
    uid = _uid()
    name = f"gated-{uid}"
    class_name = f"{name.replace('-', '_')}.Source"
    own = _own_path(worker)
    newer = source_plugin_wheel(
        tmp_path / "w2",
        name,
        "2.0",
        body='PREFIX = "needs-api-99-"\n',
        requires=["copycat-plugin-api>=99,<100"],
    )
    venv = own / f"{name}-2.0"
    subprocess.run(["uv", "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    subprocess.run(
        ["uv", "pip", "install", "-q", "--offline", "--no-deps"]
        + ["--python", str(venv / "bin" / "python"), str(newer)],
        check=True,
    )
    install(str(source_plugin_wheel(tmp_path / "w1", name, "1.0")), own, offline=True)
    with worker.client() as http:
        found = wait_for(partial(_listed, http, class_name), what=f"{class_name} listed")
        assert found == [{"class": class_name, "type": "source", "version": "1.0"}]
        topic = _run_source(http, broker, f"c-{name}", class_name)
        assert _values(bootstrap_servers, topic, 5) == [f"{name}-{n}" for n in range(1, 6)]

        config = {"connector.class": class_name, "topic": topic, "connector.plugin.version": "2.0"}
        r = http.post("/connectors", json={"name": f"pinned-{name}", "config": config})
        assert r.status_code == 400, r.text
        message = r.json()["message"]
        assert f"{name} 2.0 requires copycat-plugin-api<100,>=99" in message, message
        assert "this runtime provides copycat-plugin-api" in message and str(venv) in message
        rows = [row for row in http.get("/admin/plugins").json() if row["name"] == name]
        assert sorted((row["version"], bool(row["incompatible"])) for row in rows) == [
            ("1.0", False),
            ("2.0", True),
        ], rows
    assert any(str(venv) in line and "is not used" in line for line in worker.log_lines)
