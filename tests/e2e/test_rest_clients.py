"""Existing clients drive the worker unchanged: the deep-dive's curl commands and a PyPI client."""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.rest import RestWorker, wait_for

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT.parent / "shared" / "seeds" / "kafka-connect-deep-dive.txt"
SEED_URL = "http://localhost:8083"


@pytest.fixture(scope="module")
def worker(
    tmp_path_factory: pytest.TempPathFactory, bootstrap_servers: str, bundled_plugin_path: Path
) -> Iterator[RestWorker]:
    with RestWorker(
        tmp_path_factory.mktemp("clients"), bootstrap_servers, bundled_plugin_path
    ) as running:
        yield running


def _seed_commands() -> list[str]:
    """The 'Deploying a Connector (REST API)' curl commands of the deep-dive, as written."""
    text = SEED.read_text()
    block = text[text.index("# Create a JDBC Source Connector") :]
    block = block[: block.index("\n", block.index("curl -X DELETE")) + 1]
    commands, current = [], ""
    for line in block.splitlines():
        if not current and (line.startswith("#") or not line.strip()):
            continue
        current += line + "\n"
        if line.startswith("curl") and not line.rstrip().endswith("\\"):
            commands.append(current)
            current = ""
        elif line.rstrip() == "}'" or (current.startswith("curl") and line.endswith("}'")):
            commands.append(current)
            current = ""
    return [c.strip() for c in commands if c.strip()]


def _curl(command: str, curl_home: Path) -> tuple[int, str]:
    # ~/.curlrc adds the status line; the command itself runs as the seed wrote it.
    proc = subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        timeout=60,
        env={"CURL_HOME": str(curl_home), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    body, _, status = proc.stdout.rstrip("\n").rpartition("\n")
    return int(status), body


@pytest.mark.skipif(
    shutil.which("curl") is None or not SEED.exists(),
    reason="needs curl and the seed text beside the repository",
)
def test_deep_dive_curl_commands(worker: RestWorker, tmp_path: Path, topic_name: str) -> None:
    commands = _seed_commands()
    methods = [
        re.match(r"curl(?: -X (\w+))?", c).group(1) or "GET"  # type: ignore[union-attr]
        for c in commands
    ]
    assert methods == ["POST", "GET", "GET", "PUT", "PUT", "POST", "DELETE"]
    source = tmp_path / "orders.txt"
    source.write_text("".join(f"order {i}\n" for i in range(10)))
    file_config = json.dumps(
        {
            "connector.class": "FileStreamSource",
            "file": str(source),
            "topic": topic_name,
            "tasks.max": "1",
        },
        indent=1,
    )
    # the file connector stands in for JDBC; everything else is the seed's text
    create = re.sub(r'"config": \{.*?\n\}', f'"config": {file_config}', commands[0], flags=re.S)
    assert "FileStreamSource" in create
    commands[0] = create
    commands = [c.replace(SEED_URL, worker.url) for c in commands]
    (tmp_path / ".curlrc").write_text('silent\nwrite-out = "\\n%{http_code}\\n"\n')
    name = "mysql-orders-source"

    status, body = _curl(commands[0], tmp_path)
    assert status == 201, body
    assert json.loads(body)["name"] == name
    status, body = _curl(commands[1], tmp_path)
    assert status == 200 and json.loads(body)["connector"]["state"] == "RUNNING"
    status, body = _curl(commands[2], tmp_path)
    assert status == 200 and name in json.loads(body)
    assert _curl(commands[3], tmp_path)[0] == 202  # pause
    assert json.loads(_curl(commands[1], tmp_path)[1])["connector"]["state"] == "PAUSED"
    assert _curl(commands[4], tmp_path)[0] == 202  # resume
    assert json.loads(_curl(commands[1], tmp_path)[1])["connector"]["state"] == "RUNNING"
    status, body = _curl(commands[5], tmp_path)  # restart failed tasks: none failed
    assert status == 202 and json.loads(body)["connector"]["state"] == "RUNNING"

    # the offsets section's requests, written as curl commands (the seed gives bare HTTP)
    base = f"{worker.url}/connectors/{name}"
    partition = {"filename": str(source)}
    wait_for(
        lambda: json.loads(_curl(f"curl {base}/offsets", tmp_path)[1])["offsets"],
        30,
        "source offsets",
    )
    assert _curl(f"curl -X PUT {base}/stop", tmp_path)[0] == 204
    status, body = _curl(f"curl {base}/offsets", tmp_path)
    assert json.loads(body) == {"offsets": [{"partition": partition, "offset": {"position": 80}}]}
    alter = json.dumps({"offsets": [{"partition": partition, "offset": {"position": 40}}]})
    status, body = _curl(
        f"curl -X PATCH {base}/offsets -H 'Content-Type: application/json' -d '{alter}'", tmp_path
    )
    assert status == 200, body
    assert json.loads(_curl(f"curl {base}/offsets", tmp_path)[1])["offsets"][0]["offset"] == {
        "position": 40
    }
    status, body = _curl(f"curl -X DELETE {base}/offsets", tmp_path)
    assert status == 200 and "reset successfully" in body
    assert json.loads(_curl(f"curl {base}/offsets", tmp_path)[1]) == {"offsets": []}

    assert _curl(commands[6], tmp_path)[0] == 204  # delete
    assert _curl(commands[2], tmp_path)[1] == "[]"


def test_kafka_connect_py_client(worker: RestWorker, tmp_path: Path, topic_name: str) -> None:
    from kafka_connect import KafkaConnect  # kafka-connect-py from PyPI, used unchanged
    from requests.exceptions import HTTPError

    client = KafkaConnect(url=worker.url, logger=logging.getLogger("kafka-connect-py"))
    assert set(client.get_cluster_info()) == {"version", "commit", "kafka_cluster_id"}
    source = tmp_path / "in.txt"
    source.write_text("a\nb\n")
    config = {"connector.class": "FileStreamSource", "file": str(source), "topic": topic_name}
    created = client.create_connector({"name": "py-client", "config": config})
    assert created["name"] == "py-client"
    assert "py-client" in client.list_connectors()
    assert (
        client.list_connectors(expand="status")["py-client"]["status"]["connector"]["state"]
        == "RUNNING"
    )
    assert client.list_connectors(expand="status", state="running") == client.list_connectors(
        expand="status"
    )
    assert client.get_connector("py-client")["type"] == "source"
    assert client.get_connector_config("py-client")["file"] == str(source)
    # Tasks start asynchronously (UNASSIGNED until their start() returns), as in Kafka.
    wait_for(
        lambda: client.get_connector_status("py-client")["tasks"][0]["state"] == "RUNNING",
        30,
        "the task to run",
    )
    assert client.list_connector_tasks("py-client")[0]["id"]["task"] == 0
    assert client.get_connector_task_status("py-client", 0)["state"] == "RUNNING"
    client.restart_connector_task("py-client", 0)
    assert client.restart_connector("py-client") is None  # 204
    body = client.restart_connector("py-client", include_tasks=True)
    assert body["tasks"][0]["state"] == "RESTARTING"
    client.pause_connector("py-client")
    assert client.get_connector_status("py-client")["connector"]["state"] == "PAUSED"
    client.resume_connector("py-client")
    updated = client.update_connector("py-client", {**config, "batch.size": "5"})
    assert updated["config"]["batch.size"] == "5"
    wait_for(
        lambda: client.list_connector_topics("py-client")["py-client"]["topics"],
        30,
        "active topics",
    )
    client.reset_connector_topics("py-client")
    plugins = client.list_connector_plugins()
    assert any(p["class"].endswith("FileStreamSourceConnector") for p in plugins)
    validated = client.validate_connector_config(
        "FileStreamSource", {**config, "name": "py-client"}
    )
    assert validated["error_count"] == 0
    client.stop_connector("py-client")
    assert client.get_connector_status("py-client")["connector"]["state"] == "STOPPED"
    client.delete_connector("py-client")
    with pytest.raises(HTTPError):
        client.get_connector("py-client")
