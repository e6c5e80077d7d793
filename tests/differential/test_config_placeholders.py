"""Config providers (``${provider:path:key}``) on Copycat and on Apache Kafka Connect 4.1.1, side
by side, with the same worker properties (file, dir and env providers, ``allowed.paths``,
``allowlist.pattern``).

Found by an exploratory comparison: a path outside ``allowed.paths`` (or relative, or the
``${env`` of a nested reference) is not an error in Kafka: its File- and
DirectoryConfigProvider log a warning and find nothing, so the placeholder stays and the
connector is created and runs. A provider that fails (an unreadable file, or one not in
UTF-8, a path given to the env provider) fails the request: 500 with the provider's message,
on create and on validate.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import (
    Peer,
    create,
    create_refusal,
    delete,
    standalone_peers,
    wait_running,
)
from tests.support.kafka import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

PROVIDERS = "org.apache.kafka.common.config.provider."
SINK = {
    "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
    "tasks.max": "1",
    "topics": "providers-topic",
    "file": "/dev/null",
}
ENV_VAR = "CPDIFF_TOKEN"


@pytest.fixture(scope="module")
def secrets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("providers")
    allowed = root / "allowed"
    (allowed / "d").mkdir(parents=True)
    (allowed / "s.properties").write_text(
        f"pw=hunter2\nkafka.file={root / 'kafka.out'}\ncopycat.file={root / 'copycat.out'}\n"
    )
    (allowed / "d" / "token").write_text("tok-123")
    (allowed / "d" / "latin-1").write_bytes(b"caf\xe9")  # no UTF-8
    (allowed / "latin-1.properties").write_bytes(b"pw=caf\xe9\n")
    (root / "outside.properties").write_text("pw=outside\n")
    return allowed


@pytest.fixture(scope="module")
def workers(
    apache_kafka: KafkaCluster,
    bundled_plugin_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    secrets: Path,
) -> Iterator[tuple[Peer, Peer]]:
    """(Kafka Connect, Copycat), both with the same config providers."""
    os.environ[ENV_VAR] = "env-secret"
    props = {
        "config.providers": "file,dir,env",
        "config.providers.file.class": PROVIDERS + "FileConfigProvider",
        "config.providers.dir.class": PROVIDERS + "DirectoryConfigProvider",
        "config.providers.env.class": PROVIDERS + "EnvVarConfigProvider",
        "config.providers.file.param.allowed.paths": str(secrets),
        "config.providers.dir.param.allowed.paths": str(secrets),
        "config.providers.env.param.allowlist.pattern": "CPDIFF_.*",
    }
    try:
        with standalone_peers(
            apache_kafka.bootstrap_servers, bundled_plugin_path, tmp_path_factory, props
        ) as (copycat, kafka):
            yield kafka, copycat
    finally:
        os.environ.pop(ENV_VAR, None)


def _views(client: httpx.Client, name: str) -> dict[str, Any]:
    """What REST shows of a connector's config: its config, and its task configs (without
    ``task.class``, which names each implementation's own class)."""
    tasks = wait_for(
        lambda: client.get(f"/connectors/{name}/tasks").json() or None, 60, f"{name} tasks"
    )
    return {
        "config": client.get(f"/connectors/{name}/config").json(),
        "info": client.get(f"/connectors/{name}").json()["config"],
        "tasks": [{k: v for k, v in t["config"].items() if k != "task.class"} for t in tasks],
    }


def test_placeholders_stay_in_rest_and_the_connector_gets_the_values(
    workers: tuple[Peer, Peer], secrets: Path
) -> None:
    seen = {}
    for peer in workers:
        key = "kafka.file" if peer.name == "Kafka Connect" else "copycat.file"
        config = {
            **SINK,
            "file": f"${{file:{secrets}/s.properties:{key}}}",
            "x.pw": f"pre-${{file:{secrets}/s.properties:pw}}-post",
            "x.dir": f"${{dir:{secrets}/d:token}}",
            "x.env": f"${{env:{ENV_VAR}}}",
            "x.missing": f"${{file:{secrets}/s.properties:nokey}}",
            "x.unknown": "${vault:a:b}",
        }
        name = f"providers-views-{peer.name.split()[0].lower()}"
        with peer.client() as client:
            create(client, name, config)
            try:
                wait_running(client, name)
                views = _views(client, name)
                assert views["config"] == {**config, "name": name}
                seen[peer.name] = views
            finally:
                delete(client, name)
    # The sink opened the file its resolved ``file`` names.
    assert (secrets.parent / "kafka.out").exists()
    assert (secrets.parent / "copycat.out").exists()
    kafka, copycat = seen["Kafka Connect"], seen["Copycat"]
    for views in (kafka, copycat):
        views["config"].pop("file"), views["config"].pop("name")
        views["info"].pop("file"), views["info"].pop("name")
        for task in views["tasks"]:
            task.pop("file"), task.pop("name")
    assert copycat == kafka


NOT_ALLOWED = {
    "file-outside": "${file:%(root)s/outside.properties:pw}",
    "dir-outside": "${dir:%(root)s:outside.properties}",
    "file-relative": "${file:s.properties:pw}",
    "file-dot-dot": "${file:%(allowed)s/../outside.properties:pw}",
    "nested": "${file:${env:%(env)s}:pw}",
}


@pytest.mark.parametrize("case", sorted(NOT_ALLOWED))
def test_path_outside_allowed_paths_leaves_the_placeholder(
    workers: tuple[Peer, Peer], secrets: Path, case: str
) -> None:
    """Kafka's providers find nothing outside ``allowed.paths`` (and log a warning): the
    config validates, the connector is created and runs, the placeholder stays."""
    value = NOT_ALLOWED[case] % {"root": secrets.parent, "allowed": secrets, "env": ENV_VAR}
    config = {**SINK, "x.pw": value}
    name = f"providers-{case}"
    answers = {}
    for peer in workers:
        with peer.client() as client:
            validated = client.put(
                "/connector-plugins/FileStreamSinkConnector/config/validate",
                json={**config, "name": name},
            )
            response = client.post("/connectors", json={"name": name, "config": config})
            try:
                tasks = _views(client, name)["tasks"] if response.status_code == 201 else None
            finally:
                delete(client, name)
        answers[peer.name] = (
            validated.status_code,
            validated.json().get("error_count"),
            response.status_code,
            tasks and tasks[0]["x.pw"],
        )
    assert answers["Kafka Connect"] == (200, 0, 201, value)
    assert answers["Copycat"] == answers["Kafka Connect"]


FAILING = {
    "missing-file": {"x.pw": "${file:%(allowed)s/nope.properties:pw}"},
    "file-is-a-directory": {"x.pw": "${file:%(allowed)s/d:pw}"},
    "file-names-the-sink-file": {"file": "${file:%(allowed)s/nope.properties:file}"},
    "env-with-a-path": {"x.pw": "${env:foo:%(env)s}"},
    "dir-file-not-utf-8": {"x.pw": "${dir:%(allowed)s/d:latin-1}"},
    "file-not-utf-8": {"x.pw": "${file:%(allowed)s/latin-1.properties:pw}"},
}


@pytest.mark.parametrize("case", sorted(FAILING))
def test_a_failing_provider_fails_the_request(
    workers: tuple[Peer, Peer], secrets: Path, case: str
) -> None:
    """A provider's ConfigException is no validation error in Kafka: validate and create both
    answer 500 with the provider's message (validate's names Java's exception class too)."""
    config = {
        **SINK,
        **{k: v % {"allowed": secrets, "env": ENV_VAR} for k, v in FAILING[case].items()},
    }
    name = f"providers-{case}"
    kafka, copycat = workers
    theirs, ours = (create_refusal(peer, name, config) for peer in workers)
    assert theirs[0] == 500
    assert ours == theirs
    validated = {}
    for peer in workers:
        with peer.client() as client:
            response = client.put(
                "/connector-plugins/FileStreamSinkConnector/config/validate",
                json={**config, "name": name},
            )
        validated[peer.name] = (response.status_code, response.json()["message"])
    assert validated["Kafka Connect"] == (
        500,
        f"org.apache.kafka.common.config.ConfigException: {theirs[1]}",
    )
    assert validated["Copycat"] == (500, theirs[1])
