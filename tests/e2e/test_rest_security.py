"""Security of the REST API: basic auth, TLS listeners, and secrets through config providers."""

from __future__ import annotations

import json
import re
import ssl
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.rest import RestWorker, wait_for
from tests.support.tls import certificate, new_key, write_pem

pytestmark = pytest.mark.integration

BASIC_AUTH = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"

KAFKA_PROVIDERS = "org.apache.kafka.common.config.provider."

# Every route of the API with a path that exists, so a 401 cannot be mistaken for a 404.
ENDPOINTS = [
    ("GET", "/"),
    ("GET", "/connectors"),
    ("POST", "/connectors"),
    ("GET", "/connectors/c"),
    ("DELETE", "/connectors/c"),
    ("GET", "/connectors/c/config"),
    ("PUT", "/connectors/c/config"),
    ("PATCH", "/connectors/c/config"),
    ("GET", "/connectors/c/status"),
    ("GET", "/connectors/c/tasks"),
    ("GET", "/connectors/c/tasks/0/status"),
    ("POST", "/connectors/c/tasks/0/restart"),
    ("POST", "/connectors/c/restart"),
    ("PUT", "/connectors/c/pause"),
    ("PUT", "/connectors/c/resume"),
    ("PUT", "/connectors/c/stop"),
    ("GET", "/connectors/c/offsets"),
    ("PATCH", "/connectors/c/offsets"),
    ("DELETE", "/connectors/c/offsets"),
    ("GET", "/connectors/c/topics"),
    ("PUT", "/connectors/c/topics/reset"),
    ("GET", "/connector-plugins"),
    ("GET", "/connector-plugins/FileStreamSource/config"),
    ("PUT", "/connector-plugins/FileStreamSource/config/validate"),
    ("GET", "/admin/loggers"),
    ("GET", "/admin/loggers/root"),
    ("PUT", "/admin/loggers/root"),
    ("GET", "/metrics"),
    ("GET", "/openapi.json"),
    ("GET", "/docs"),
    ("GET", "/no/such/path"),
]


@pytest.fixture(scope="module")
def auth_worker(
    tmp_path_factory: pytest.TempPathFactory, bootstrap_servers: str, bundled_plugin_path: Path
) -> Iterator[RestWorker]:
    tmp = tmp_path_factory.mktemp("auth")
    (tmp / "credentials.properties").write_text("alice: wonderland\nbob=builder\n")
    jaas = tmp / "connect_jaas.conf"
    jaas.write_text(
        "KafkaConnect {\n  org.apache.kafka.connect.rest.basic.auth.extension."
        'PropertyFileLoginModule required\n  file="'
        f'{tmp / "credentials.properties"}";\n}};\n'
    )
    with RestWorker(
        tmp,
        bootstrap_servers,
        bundled_plugin_path,
        {
            "rest.extension.classes": BASIC_AUTH,
            "rest.extension.basic.auth.jaas.config": str(jaas),
        },
    ) as worker:
        yield worker


def test_basic_auth_guards_every_endpoint_but_health(auth_worker: RestWorker) -> None:
    with auth_worker.client() as anonymous:
        for method, path in ENDPOINTS:
            response = anonymous.request(method, path, json={})
            assert response.status_code == 401, (method, path, response.text)
            assert response.json() == {
                "error_code": 401,
                "message": "User cannot access the resource.",
            }
            assert response.headers["www-authenticate"].startswith("Basic")
        assert anonymous.get("/health").status_code == 200  # deliberately open
        assert anonymous.get("/", auth=("alice", "wrong")).status_code == 401
        assert anonymous.get("/", auth=("mallory", "wonderland")).status_code == 401
        assert anonymous.get("/", headers={"Authorization": "Basic !!!"}).status_code == 401
    with auth_worker.client(auth=("alice", "wonderland")) as alice:
        assert alice.get("/connectors").json() == []
        assert alice.get("/connectors/c").status_code == 404
        assert alice.get("/metrics").status_code == 200
    with auth_worker.client(auth=("bob", "builder")) as bob:
        assert bob.get("/").status_code == 200
    assert not any("wonderland" in line for line in auth_worker.log_lines)


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    """A keystore (key and certificate) for localhost, and the certificate as its own CA."""
    key = new_key()
    cert = certificate("localhost", key, ca=True)
    return write_pem(tmp / "keystore.pem", key, cert), write_pem(tmp / "ca.pem", None, cert)


def test_https_listener_with_pem_keystore(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path
) -> None:
    keystore, ca = _self_signed(tmp_path)
    with RestWorker(
        tmp_path,
        bootstrap_servers,
        bundled_plugin_path,
        {
            "listeners": "https://127.0.0.1:0",
            "listeners.https.ssl.keystore.type": "PEM",
            "listeners.https.ssl.keystore.location": str(keystore),
        },
    ) as worker:
        assert worker.url.startswith("https://127.0.0.1:")
        with httpx.Client(
            base_url=worker.url, verify=ssl.create_default_context(cafile=str(ca))
        ) as client:
            assert client.get("/connectors").json() == []
            assert client.get("/health").json()["status"] == "healthy"
        with pytest.raises(httpx.ConnectError):  # an untrusted certificate is refused
            httpx.get(worker.url + "/connectors")
        with pytest.raises(httpx.HTTPError):  # and plain HTTP is not served
            httpx.get(worker.url.replace("https://", "http://") + "/connectors")


def test_https_listener_without_a_keystore_refuses_to_start(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path
) -> None:
    worker = RestWorker(
        tmp_path, bootstrap_servers, bundled_plugin_path, {"listeners": "https://127.0.0.1:0"}
    )
    with pytest.raises(Exception, match="keystore"):
        worker.__enter__()
    worker.__exit__(None, None, None)


def test_config_provider_secrets_never_leave_the_worker(
    tmp_path: Path,
    bootstrap_servers: str,
    bundled_plugin_path: Path,
    topic_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = f"pa55-{uuid.uuid4().hex}"
    monkeypatch.setenv("COPYCAT_TEST_SECRET", secret)
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f"topic={topic_name}\ndb.password={secret}\n")
    secret_dir = tmp_path / "secret-dir"
    secret_dir.mkdir()
    (secret_dir / "token").write_text(secret)
    source_file = tmp_path / "input.txt"
    source_file.write_text("one\ntwo\n")
    placeholder_topic = f"${{file:{secrets}:topic}}"
    config = {
        "connector.class": "FileStreamSource",
        "file": str(source_file),
        "topic": placeholder_topic,
        "db.password": f"${{file:{secrets}:db.password}}",
        "api.token": f"${{dir:{secret_dir}:token}}",
        "other.secret": "${env:COPYCAT_TEST_SECRET}",
    }
    with (
        RestWorker(
            tmp_path,
            bootstrap_servers,
            bundled_plugin_path,
            {
                "config.providers": "file,dir,env",
                "config.providers.file.class": KAFKA_PROVIDERS + "FileConfigProvider",
                "config.providers.dir.class": KAFKA_PROVIDERS + "DirectoryConfigProvider",
                "config.providers.env.class": "EnvVarConfigProvider",
                "config.providers.file.param.allowed.paths": str(tmp_path),
            },
        ) as worker,
        worker.client() as http,
    ):
        bodies: list[str] = []

        def call(method: str, path: str, **kwargs: object) -> httpx.Response:
            response = http.request(method, path, **kwargs)  # type: ignore[arg-type]
            bodies.append(response.text)
            return response

        created = call("POST", "/connectors", json={"name": "secretive", "config": config})
        assert created.status_code == 201, created.text
        assert created.json()["config"]["topic"] == placeholder_topic
        # resolved inside the worker: the records went to the topic the provider named
        wait_for(
            lambda: (
                call("GET", "/connectors/secretive/topics").json()["secretive"]["topics"]
                == [topic_name]
            ),
            30,
            "records in the resolved topic",
        )
        assert call("GET", "/connectors/secretive/config").json() == {**config, "name": "secretive"}
        task_config = call("GET", "/connectors/secretive/tasks").json()[0]["config"]
        assert task_config["topic"] == placeholder_topic  # placeholders put back
        call("GET", "/connectors/secretive/status")
        call("GET", "/connectors", params={"expand": ["info", "status"]})
        validated = call(
            "PUT",
            "/connector-plugins/FileStreamSource/config/validate",
            json={**config, "name": "v", "tasks.max": "${env:COPYCAT_TEST_SECRET}"},
        )
        tasks_max = {c["value"]["name"]: c for c in validated.json()["configs"]}["tasks.max"]
        assert tasks_max["value"]["value"] == "${env:COPYCAT_TEST_SECRET}"
        assert tasks_max["value"]["errors"]  # invalid, but the message does not quote it
        bad = call(
            "POST",
            "/connectors",
            json={"name": "bad", "config": {**config, "tasks.max": "${env:COPYCAT_TEST_SECRET}"}},
        )
        assert bad.status_code == 400
        if any(
            p["class"].endswith("AvroConverter")
            for p in call("GET", "/connector-plugins", params={"connectorsOnly": "false"}).json()
        ):
            masked = call(
                "PUT",
                "/connector-plugins/FileStreamSource/config/validate",
                json={
                    **config,
                    "value.converter": "AvroConverter",
                    "value.converter.schema.registry.url": "http://localhost:1",
                    "value.converter.basic.auth.user.info": secret,
                },
            )
            entries = {c["value"]["name"]: c for c in masked.json()["configs"]}
            assert entries["value.converter.basic.auth.user.info"]["value"]["value"] == "[hidden]"
        call("PUT", "/connectors/secretive/stop")
        call("GET", "/connectors/secretive/offsets")
        call("DELETE", "/connectors/secretive")
        for body in bodies:
            assert secret not in body, body
        logged = "\n".join(worker.log_lines)
        assert "secretive" in logged  # the log was captured
    assert secret not in logged
    assert secret not in json.dumps(bodies)


def test_secrets_in_plugin_errors_and_output_never_reach_logs_traces_or_rest(
    tmp_path: Path,
    bootstrap_servers: str,
    bundled_plugin_path: Path,
    topic_name: str,
) -> None:
    """A task that raises with a resolved secret in its message, prints it, or fails in a
    directory whose name merely contains a short resolved value: the worker's log lines,
    status traces and REST answers carry placeholders, and nothing else is rewritten."""
    from tests.support.faulty import install_faulty

    secret = f"hunter2-{uuid.uuid4().hex}"
    # A short resolved value is scrubbed wherever it stands alone, so it must not stand alone
    # in this run's temp path (pytest numbers its runs: ".../pytest-7/..." failed run 7).
    path_tokens = set(re.split(r"[^0-9A-Za-z]+", str(tmp_path)))
    short = next(str(n) for n in range(7, 1000) if str(n) not in path_tokens)
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f"password={secret}\nnum={short}\n")
    short_dir = tmp_path / f"s{short}"  # contains the short resolved value inside a word
    password = f"${{file:{secrets}:password}}"
    faulty = install_faulty(tmp_path / "faulty")
    extra = {
        "plugin.path": f"{bundled_plugin_path},{faulty}",
        "config.providers": "file",
        "config.providers.file.class": KAFKA_PROVIDERS + "FileConfigProvider",
    }
    with RestWorker(tmp_path, bootstrap_servers, bundled_plugin_path, extra) as worker:
        bodies: list[str] = []
        with worker.client() as http:

            def call(method: str, path: str, **kwargs: object) -> httpx.Response:
                response = http.request(method, path, **kwargs)  # type: ignore[arg-type]
                bodies.append(response.text)
                return response

            config = {
                "connector.class": "FaultySource",
                "topic": topic_name,
                "tasks.max": "1",
                "retries": f"${{file:{secrets}:num}}",
                "stdout.on.start": f"connecting with password {password}",
                "fail.with": f"login refused for {password} under {short_dir} (attempt {short})",
            }
            assert call("POST", "/connectors", json={"name": "leaky", "config": config})
            status = wait_for(
                lambda: (
                    (s := call("GET", "/connectors/leaky/status").json())["tasks"]
                    and s["tasks"][0]["state"] == "FAILED"
                    and s
                ),
                30,
                "the task to fail",
            )
            trace = status["tasks"][0]["trace"]
            assert f"login refused for {password}" in trace  # the placeholder, in place
            assert f"under {short_dir} (attempt" in trace  # the value inside "s<value>" left alone
            call("GET", "/connectors/leaky/tasks/0/status")
            call("POST", "/connectors/leaky/restart", params={"includeTasks": "true"})
            call("DELETE", "/connectors/leaky")
        logged = "\n".join(worker.log_lines)
    assert f"connecting with password {password}" in logged  # plugin output, scrubbed
    assert "login refused for" in logged  # the task's ERROR line, scrubbed
    assert secret not in logged
    for body in bodies:
        assert secret not in body, body


def test_dlq_context_headers_carry_placeholders_not_resolved_values(
    tmp_path: Path,
    bootstrap_servers: str,
    bundled_plugin_path: Path,
    topic_name: str,
) -> None:
    """An SMT configured through a provider quotes its value in its error: the DLQ's
    exception message and stack trace headers carry the placeholder instead."""
    from tests.support.kafka import header_text, produce, read_all

    field = f"SecretField{uuid.uuid4().hex[:8]}"
    secrets = tmp_path / "fields.properties"
    secrets.write_text(f"fieldname={field}\n")
    placeholder = f"${{file:{secrets}:fieldname}}"
    envelope = {
        "schema": {"type": "struct", "fields": [{"field": "a", "type": "int32"}]},
        "payload": {"a": 1},
    }
    produce(bootstrap_servers, topic_name, [json.dumps(envelope).encode()])
    dlq = f"{topic_name}-dlq"
    extra = {
        "config.providers": "file",
        "config.providers.file.class": KAFKA_PROVIDERS + "FileConfigProvider",
    }
    with RestWorker(tmp_path, bootstrap_servers, bundled_plugin_path, extra) as worker:
        with worker.client() as http:
            config = {
                "connector.class": "FileStreamSink",
                "topics": topic_name,
                "file": str(tmp_path / "out.txt"),
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable": "true",
                "transforms": "ef",
                "transforms.ef.type": "org.apache.kafka.connect.transforms.ExtractField$Value",
                "transforms.ef.field": placeholder,
                "errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": dlq,
                "errors.deadletterqueue.topic.replication.factor": "1",
                "errors.deadletterqueue.context.headers.enable": "true",
            }
            created = http.post("/connectors", json={"name": "efsink", "config": config})
            assert created.status_code == 201, created.text
            dead = read_all(bootstrap_servers, dlq, 1, timeout_s=60)
            http.delete("/connectors/efsink")
        logged = "\n".join(worker.log_lines)
    assert len(dead) == 1
    headers = header_text(dead[0])
    assert placeholder in headers["__connect.errors.exception.message"]
    for name, value in headers.items():
        assert field not in value, (name, value)
    assert field not in logged


def test_a_short_resolved_value_rewrites_no_other_connectors_output(
    tmp_path: Path,
    bootstrap_servers: str,
    bundled_plugin_path: Path,
    topic_name: str,
) -> None:
    """``tasks.max`` read through a provider (``2``) and a short word: another connector's
    log lines and REST answers about its task 2 keep the ``2``, and nothing names the
    placeholders but the connector that uses them."""
    secrets = tmp_path / "nums.properties"
    secrets.write_text("num=2\nword=sink\n")
    extra = {
        "config.providers": "file",
        "config.providers.file.class": KAFKA_PROVIDERS + "FileConfigProvider",
    }
    with RestWorker(tmp_path, bootstrap_servers, bundled_plugin_path, extra) as worker:
        with worker.client() as http:

            def sink(name: str, tasks_max: str, **more: str) -> None:
                config = {
                    "connector.class": "FileStreamSink",
                    "topics": topic_name,
                    "file": str(tmp_path / f"{name}.txt"),
                    "tasks.max": tasks_max,
                    **more,
                }
                created = http.post("/connectors", json={"name": name, "config": config})
                assert created.status_code == 201, created.text

            sink("numsink", f"${{file:{secrets}:num}}", label=f"${{file:{secrets}:word}}")
            sink("plainsink", "3")
            wait_for(
                lambda: len(http.get("/connectors/plainsink/tasks").json()) == 3,
                30,
                "plainsink's 3 tasks",
            )
            missing = http.get("/connectors/numsink/tasks/2/status")  # it has tasks 0 and 1
            assert missing.status_code == 404
            assert "task numsink-2" in missing.text, missing.text
            plain = http.get("/connectors/plainsink/tasks/2/status")
            assert plain.status_code == 200, plain.text
        logged = "\n".join(worker.log_lines)
    assert "plainsink-2" in logged
    assert "plainsink-${file" not in logged
    assert "File${file" not in logged  # "FileStreamSink" keeps its "Sink" (as a word)


GET_ENDPOINTS = [path for method, path in ENDPOINTS if method == "GET"]


def test_head_answers_every_get_route_as_get_without_a_body(auth_worker: RestWorker) -> None:
    """As Jersey: HEAD on a GET resource is that GET's status and headers with no body, behind
    the same authentication (load balancers probe with HEAD; /health stays open)."""
    with auth_worker.client(auth=("alice", "wonderland")) as alice:
        for path in [*GET_ENDPOINTS, "/health", "/connectors?expand=status"]:
            got, head = alice.get(path), alice.head(path)
            assert head.status_code == got.status_code, (path, head.status_code, head.headers)
            assert head.content == b"", path
            assert head.headers["content-type"] == got.headers["content-type"], path
            if "content-length" in got.headers:  # the length the GET body has
                assert head.headers["content-length"] == got.headers["content-length"], path
        # a path served by no GET: 405 as before, a path served by nothing: 404
        restart = alice.head("/connectors/c/restart")
        assert restart.status_code == 405, restart.headers
        assert alice.head("/no/such/path").status_code == 404
        assert "HEAD" in alice.options("/connectors").headers["allow"]
    with auth_worker.client() as anonymous:
        assert anonymous.head("/health").status_code == 200  # open, as GET /health
        for path in GET_ENDPOINTS:
            denied = anonymous.head(path)
            assert denied.status_code == 401, path
            assert denied.content == b""


def _jaas(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text)
    return path


PROPERTY_FILE_LOGIN_MODULE = (
    "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"
)


def test_the_jaas_file_is_read_as_java_reads_it(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path
) -> None:
    """Commented-out entries and entries whose name merely ends in KafkaConnect are not the
    KafkaConnect entry (Java's ConfigFile): the worker serves the users of the real one."""
    (tmp_path / "real.properties").write_text("alice=secret\n")
    jaas = _jaas(
        tmp_path,
        "connect_jaas.conf",
        "// old setup, disabled:\n"
        f'// KafkaConnect {{ {PROPERTY_FILE_LOGIN_MODULE} required file="/nonexistent/old"; }};\n'
        f'/* KafkaConnect {{ {PROPERTY_FILE_LOGIN_MODULE} required file="/nonexistent/b"; }}; */\n'
        "KafkaClient { org.apache.kafka.common.security.plain.PlainLoginModule required\n"
        '  username="u" password="p"; };\n'
        f'MyKafkaConnect {{ {PROPERTY_FILE_LOGIN_MODULE} required file="/nonexistent/my"; }};\n'
        f"KafkaConnect {{\n  {PROPERTY_FILE_LOGIN_MODULE} required\n"
        f'  debug="true" file="{tmp_path / "real.properties"}";\n}};\n',
    )
    with RestWorker(
        tmp_path,
        bootstrap_servers,
        bundled_plugin_path,
        {"rest.extension.classes": BASIC_AUTH, "rest.extension.basic.auth.jaas.config": str(jaas)},
    ) as worker:
        with worker.client() as http:
            assert http.get("/connectors", auth=("alice", "secret")).status_code == 200
            assert http.get("/connectors", auth=("alice", "wrong")).status_code == 401


def _refused(tmp: Path, bootstrap: str, plugin_path: Path, extra: dict[str, str]) -> str:
    """The error that stops a worker with ``extra`` at start."""
    with pytest.raises(Exception) as refused:  # noqa: PT011 - the message is what we check
        worker = RestWorker(tmp, bootstrap, plugin_path, extra)
        try:
            worker.__enter__()
        finally:
            worker.__exit__(None, None, None)
    return str(refused.value)


def test_a_login_module_copycat_cannot_run_stops_the_worker_naming_it(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path
) -> None:
    jaas = _jaas(
        tmp_path,
        "ldap.conf",
        'KafkaConnect {\n  com.example.LdapLoginModule required\n  file="/x" debug="true";\n};\n',
    )
    message = _refused(
        tmp_path,
        bootstrap_servers,
        bundled_plugin_path,
        {"rest.extension.classes": BASIC_AUTH, "rest.extension.basic.auth.jaas.config": str(jaas)},
    )
    assert "com.example.LdapLoginModule" in message, message
    assert PROPERTY_FILE_LOGIN_MODULE in message, message
    assert "rest.extension.basic.auth.jaas.config" in message, message


def test_basic_auth_without_credentials_says_what_to_set(
    tmp_path: Path,
    bootstrap_servers: str,
    bundled_plugin_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KAFKA_OPTS", raising=False)
    message = _refused(
        tmp_path, bootstrap_servers, bundled_plugin_path, {"rest.extension.classes": BASIC_AUTH}
    )
    assert "None" not in message, message
    assert "rest.extension.basic.auth.credentials.file" in message, message
    assert "rest.extension.basic.auth.jaas.config" in message, message


def test_a_bad_truststore_is_reported_as_the_truststore(
    tmp_path: Path, bootstrap_servers: str, bundled_plugin_path: Path
) -> None:
    keystore, _ca = _self_signed(tmp_path)
    missing = tmp_path / "no-such-ca.pem"
    message = _refused(
        tmp_path,
        bootstrap_servers,
        bundled_plugin_path,
        {
            "listeners": "https://127.0.0.1:0",
            "listeners.https.ssl.keystore.location": str(keystore),
            "listeners.https.ssl.truststore.location": str(missing),
            "listeners.https.ssl.client.auth": "required",
        },
    )
    assert f"Invalid value {missing} for configuration listeners.https.ssl.truststore" in message
    assert str(keystore) not in message, message
