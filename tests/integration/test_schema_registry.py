"""The dev Schema Registry over HTTP.

Confluent's REST API, compatibility levels, replay from Kafka.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from core.dev.schema_registry import BasicAuth, SchemaRegistry
from tests.support.apache_kafka import KafkaCluster

pytestmark = pytest.mark.integration

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def record(*fields: dict[str, object], name: str = "User") -> str:
    return json.dumps(
        {"type": "record", "name": name, "namespace": "com.example", "fields": list(fields)}
    )


V1 = record({"name": "id", "type": "long"})
V2_OPTIONAL = record(
    {"name": "id", "type": "long"}, {"name": "email", "type": ["null", "string"], "default": None}
)
V2_REQUIRED = record({"name": "id", "type": "long"}, {"name": "email", "type": "string"})
V3_DROPS_ID = record({"name": "email", "type": ["null", "string"], "default": None})


@pytest.fixture
def http(schema_registry: SchemaRegistry) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=schema_registry.url, headers={"Content-Type": CONTENT_TYPE}
    ) as client:
        yield client


@pytest.fixture
def subject() -> str:
    return f"test-{uuid.uuid4().hex[:12]}-value"


def register(http: httpx.Client, subject: str, schema: str) -> httpx.Response:
    return http.post(f"/subjects/{subject}/versions", json={"schema": schema})


def set_level(http: httpx.Client, subject: str, level: str) -> None:
    response = http.put(f"/config/{subject}", json={"compatibility": level})
    assert response.status_code == 200, response.text
    assert response.json() == {"compatibility": level}


def test_register_lookup_and_fetch(http: httpx.Client, subject: str) -> None:
    response = register(http, subject, V1)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(CONTENT_TYPE)
    schema_id = response.json()["id"]
    # Registering the same schema again (even laid out differently) is idempotent.
    assert register(http, subject, json.dumps(json.loads(V1), indent=2)).json() == {"id": schema_id}
    assert subject in http.get("/subjects").json()
    assert http.get(f"/subjects/{subject}/versions").json() == [1]
    latest = http.get(f"/subjects/{subject}/versions/latest").json()
    assert latest == {"subject": subject, "version": 1, "id": schema_id, "schema": V1}
    assert http.get(f"/subjects/{subject}/versions/1").json() == latest
    assert http.post(f"/subjects/{subject}", json={"schema": V1}).json() == latest
    assert json.loads(http.get(f"/schemas/ids/{schema_id}").json()["schema"]) == json.loads(V1)
    assert http.get(f"/schemas/ids/{schema_id}/versions").json() == [
        {"subject": subject, "version": 1}
    ]


def test_same_schema_in_two_subjects_shares_its_id(http: httpx.Client, subject: str) -> None:
    other = subject.replace("-value", "-key")
    first = register(http, subject, V1).json()["id"]
    assert register(http, other, V1).json()["id"] == first
    versions = http.get(f"/schemas/ids/{first}/versions").json()
    assert {"subject": subject, "version": 1} in versions and {
        "subject": other,
        "version": 1,
    } in versions


@pytest.mark.parametrize(
    ("schema", "named"),
    [
        # Flatten's dotted field names: Java Avro's Schema.Parser refuses them.
        (record({"name": "outer.line", "type": "string"}), "'outer.line' of record"),
        (record({"name": "1st", "type": "string"}), "Illegal initial character: 1st"),
        (
            record(
                {
                    "name": "inner",
                    "type": [
                        "null",
                        {
                            "type": "record",
                            "name": "In",
                            "fields": [{"name": "a-b", "type": "int"}],
                        },
                    ],
                    "default": None,
                }
            ),
            "'a-b' of record 'com.example.In'",
        ),
        (record(name="my-rec"), "my-rec"),
        (json.dumps({"type": "record", "name": "R", "namespace": "com.1x", "fields": []}), "1x"),
        (json.dumps({"type": "enum", "name": "E", "symbols": ["a-b"]}), "enum symbol"),
    ],
)
def test_invalid_avro_names_anywhere_are_42201_naming_what_is_at_fault(
    http: httpx.Client, subject: str, schema: str, named: str
) -> None:
    """Confluent's registry parses with Java Avro, which refuses an invalid name of a record,
    field, namespace part or enum symbol: such a schema is never registered, so no Java
    consumer meets one it cannot parse."""
    for response in (
        register(http, subject, schema),
        http.post(f"/compatibility/subjects/{subject}/versions/latest", json={"schema": schema}),
    ):
        assert response.status_code == 422, response.text
        assert response.json()["error_code"] == 42201
        assert named in response.json()["message"], response.json()
    assert http.get(f"/subjects/{subject}/versions").status_code == 404


def test_error_codes(http: httpx.Client, subject: str) -> None:
    def error(response: httpx.Response) -> tuple[int, int]:
        return response.status_code, response.json()["error_code"]

    assert error(http.get(f"/subjects/{subject}/versions")) == (404, 40401)
    assert error(http.get(f"/subjects/{subject}/versions/latest")) == (404, 40401)
    assert error(http.get("/schemas/ids/987654321")) == (404, 40403)
    assert error(register(http, subject, '{"type": "recordx"}')) == (422, 42201)
    assert error(register(http, subject, "not json")) == (422, 42201)
    register(http, subject, V1)
    assert error(http.get(f"/subjects/{subject}/versions/7")) == (404, 40402)
    assert error(http.get(f"/subjects/{subject}/versions/zero")) == (422, 42202)
    assert error(http.post(f"/subjects/{subject}", json={"schema": V2_OPTIONAL})) == (404, 40403)
    assert error(http.put(f"/config/{subject}", json={"compatibility": "SIDEWAYS"})) == (422, 42203)
    assert error(http.get(f"/config/{subject}")) == (404, 40408)
    assert error(register(http, subject, V2_REQUIRED)) == (409, 409)


def test_backward_default_accepts_defaulted_field_rejects_required(
    http: httpx.Client, subject: str
) -> None:
    assert http.get(f"/config/{subject}", params={"defaultToGlobal": "true"}).json() == {
        "compatibilityLevel": "BACKWARD"
    }
    register(http, subject, V1)
    rejected = register(http, subject, V2_REQUIRED)
    assert rejected.status_code == 409
    body = rejected.json()
    assert body["error_code"] == 409
    assert subject in body["message"] and "READER_FIELD_MISSING_DEFAULT_VALUE" in body["message"]
    assert register(http, subject, V2_OPTIONAL).status_code == 200
    assert http.get(f"/subjects/{subject}/versions").json() == [1, 2]


def test_forward_is_the_reverse(http: httpx.Client, subject: str) -> None:
    set_level(http, subject, "FORWARD")
    register(http, subject, V1)
    # Old readers cannot fill "id" when the new writer dropped it...
    assert register(http, subject, V3_DROPS_ID).status_code == 409
    # ... but they ignore a new required field.
    assert register(http, subject, V2_REQUIRED).status_code == 200


def test_full_needs_both_directions(http: httpx.Client, subject: str) -> None:
    set_level(http, subject, "FULL")
    register(http, subject, V1)
    assert register(http, subject, V2_REQUIRED).status_code == 409
    assert register(http, subject, V2_OPTIONAL).status_code == 200


def test_none_accepts_anything(http: httpx.Client, subject: str) -> None:
    set_level(http, subject, "NONE")
    register(http, subject, V1)
    assert register(http, subject, '"string"').status_code == 200
    assert register(http, subject, V2_REQUIRED).status_code == 200


@pytest.mark.parametrize(
    ("level", "transitive_rejects"), [("BACKWARD", False), ("BACKWARD_TRANSITIVE", True)]
)
def test_transitive_checks_every_version(
    http: httpx.Client, subject: str, level: str, transitive_rejects: bool
) -> None:
    set_level(http, subject, "NONE")
    register(http, subject, V1)  # id: long, required
    register(http, subject, V3_DROPS_ID)  # no id
    set_level(http, subject, level)
    # Re-adding "id" without a default reads v2 data? No: v2 has no id. So use a defaulted id:
    readd = record(
        {"name": "email", "type": ["null", "string"], "default": None},
        {"name": "id", "type": "string", "default": "x"},
    )
    # Compatible with the latest (v2); against v1 the type of "id" changed from long to string.
    response = register(http, subject, readd)
    assert (response.status_code == 409) is transitive_rejects, response.text


def test_compatibility_endpoint(http: httpx.Client, subject: str) -> None:
    url = f"/compatibility/subjects/{subject}/versions/latest"
    assert http.post(url, json={"schema": V2_REQUIRED}).json() == {"is_compatible": True}
    register(http, subject, V1)
    assert http.post(url, json={"schema": V2_OPTIONAL}).json() == {"is_compatible": True}
    verbose = http.post(url, params={"verbose": "true"}, json={"schema": V2_REQUIRED}).json()
    assert verbose["is_compatible"] is False and verbose["messages"]
    assert http.post(
        f"/compatibility/subjects/{subject}/versions/1", json={"schema": V2_REQUIRED}
    ).json() == {"is_compatible": False}


def test_global_config(http: httpx.Client) -> None:
    assert http.get("/config").json() == {"compatibilityLevel": "BACKWARD"}


def test_soft_and_permanent_delete(http: httpx.Client, subject: str) -> None:
    register(http, subject, V1)
    register(http, subject, V2_OPTIONAL)
    assert http.delete(f"/subjects/{subject}/versions/1").json() == 1
    assert http.get(f"/subjects/{subject}/versions").json() == [2]
    assert http.get(f"/subjects/{subject}/versions", params={"deleted": "true"}).json() == [1, 2]
    assert (
        http.delete(f"/subjects/{subject}", params={"permanent": "true"}).json()["error_code"]
        == 40405
    )
    assert http.delete(f"/subjects/{subject}").json() == [2]
    assert http.get(f"/subjects/{subject}/versions").json()["error_code"] == 40401
    assert subject not in http.get("/subjects").json()
    assert subject in http.get("/subjects", params={"deleted": "true"}).json()
    # A new version after deletion continues the numbering.
    assert register(http, subject, V1).status_code == 200
    assert http.get(f"/subjects/{subject}/versions/latest").json()["version"] == 3


def test_soft_deleting_a_soft_deleted_version_is_40406(http: httpx.Client, subject: str) -> None:
    """Confluent's SubjectVersionsResource: 40406, not "version not found"."""
    register(http, subject, V1)
    register(http, subject, V2_OPTIONAL)
    assert http.delete(f"/subjects/{subject}/versions/1").json() == 1
    again = http.delete(f"/subjects/{subject}/versions/1")
    assert again.status_code == 404
    assert again.json() == {
        "error_code": 40406,
        "message": f"Subject '{subject}' Version 1 was soft deleted.Set permanent=true to delete "
        "permanently",
    }
    # Also once no version is left live, and a permanent delete still goes through.
    assert http.delete(f"/subjects/{subject}/versions/2").json() == 2
    assert http.delete(f"/subjects/{subject}/versions/2").json()["error_code"] == 40406
    assert http.delete(f"/subjects/{subject}/versions/1", params={"permanent": "true"}).json() == 1
    assert http.delete(f"/subjects/{subject}/versions/1").json()["error_code"] == 40402


def test_config_update_takes_compatibility_and_names_it(http: httpx.Client, subject: str) -> None:
    """Confluent's ConfigUpdateRequest has ``compatibility`` only; ``compatibilityLevel`` is
    the name in GET /config's answer. Refused naming the field, rather than ignored."""
    response = http.put(f"/config/{subject}", json={"compatibilityLevel": "FULL"})
    assert response.status_code == 422
    assert response.json()["error_code"] == 42203
    assert '"compatibility"' in response.json()["message"]
    assert "compatibilityLevel" in response.json()["message"]
    assert http.get(f"/config/{subject}").json()["error_code"] == 40408
    set_level(http, subject, "FULL")
    assert http.get(f"/config/{subject}").json() == {"compatibilityLevel": "FULL"}


def test_state_is_rebuilt_from_the_topic_after_restart(broker: KafkaCluster) -> None:
    topic = f"_schemas-{uuid.uuid4().hex[:8]}"
    subject = "restart-value"
    with SchemaRegistry(broker.bootstrap_servers, topic=topic) as first:
        with httpx.Client(base_url=first.url) as http:
            ids = [register(http, subject, s).json()["id"] for s in (V1, V2_OPTIONAL)]
            set_level(http, subject, "FULL_TRANSITIVE")
            http.delete(f"/subjects/{subject}/versions/1")
            register(http, "other-key", '"string"')
    with SchemaRegistry(broker.bootstrap_servers, topic=topic) as second:
        assert second.url != "" and second.state.subject_names() == ["other-key", subject]
        with httpx.Client(base_url=second.url) as http:
            assert http.get(f"/subjects/{subject}/versions").json() == [2]
            assert http.get(f"/subjects/{subject}/versions/latest").json()["id"] == ids[1]
            assert http.get(f"/config/{subject}").json() == {
                "compatibilityLevel": "FULL_TRANSITIVE"
            }
            assert json.loads(http.get(f"/schemas/ids/{ids[0]}").json()["schema"]) == json.loads(V1)
            # New ids continue after the replayed ones.
            new_id = register(
                http, "third-value", record({"name": "z", "type": "int"}, name="Z")
            ).json()["id"]
            assert new_id > max(ids)


def test_cli_subcommand_is_registered() -> None:
    from core.cli import build_parser

    args = build_parser().parse_args(
        ["schema-registry", "--bootstrap-servers", "localhost:9092", "--port", "18081"]
    )
    assert (args.bootstrap_servers, args.port, args.topic) == ("localhost:9092", 18081, "_schemas")


def test_basic_auth_refuses_missing_and_wrong_credentials_with_confluents_401(
    broker: KafkaCluster,
) -> None:
    """As Confluent's with authentication.method=BASIC: every path needs credentials; a
    missing or wrong one is 401 with a Basic challenge and a JSON error body; a known user
    without an allowed role (authentication.roles) is 403."""
    auth = BasicAuth(
        {"alice": "s3cr:et", "bob": "pw"},
        roles={"alice": frozenset({"developer"}), "bob": frozenset({"viewer"})},
        allowed_roles=frozenset({"developer", "admin"}),
        realm="SchemaRegistry-Props",
    )
    topic = f"_schemas-auth-{uuid.uuid4().hex[:8]}"
    with SchemaRegistry(broker.bootstrap_servers, topic=topic, basic_auth=auth) as registry:
        base = registry.url
        for path in ("/", "/subjects", "/schemas/ids/1", "/config"):
            refused = httpx.get(base + path)
            assert refused.status_code == 401, (path, refused.text)
            assert refused.headers["www-authenticate"] == 'Basic realm="SchemaRegistry-Props"'
            assert refused.headers["content-type"] == CONTENT_TYPE
            assert refused.json() == {"error_code": 401, "message": "Unauthorized"}
        wrong = [("alice", "s3cr"), ("alice", "wrong"), ("mallory", "s3cr:et"), ("", "")]
        for user, password in wrong:
            answer = httpx.get(base + "/subjects", auth=(user, password))
            assert answer.status_code == 401, (user, answer.text)
        for header in ("Bearer abc", "Basic not-base64!", "Basic YWxpY2U="):  # no colon
            answer = httpx.get(base + "/subjects", headers={"Authorization": header})
            assert answer.status_code == 401, (header, answer.text)
        forbidden = httpx.get(base + "/subjects", auth=("bob", "pw"))
        assert forbidden.status_code == 403, forbidden.text
        assert forbidden.json() == {"error_code": 403, "message": "Forbidden"}
        assert "www-authenticate" not in forbidden.headers
        # A refused write changes nothing.
        posted = httpx.post(
            base + "/subjects/s-value/versions",
            json={"schema": V1},
            headers={"Content-Type": CONTENT_TYPE},
            auth=("alice", "wrong"),
        )
        assert posted.status_code == 401
        with httpx.Client(
            base_url=base, auth=("alice", "s3cr:et"), headers={"Content-Type": CONTENT_TYPE}
        ) as alice:
            assert alice.get("/subjects").json() == []
            schema_id = register(alice, "s-value", V1).json()["id"]
            assert alice.get(f"/schemas/ids/{schema_id}").status_code == 200
        assert registry.requests["GET /subjects"] >= len(wrong) + 5  # refusals counted too


def test_cli_basic_auth_file_and_roles(broker: KafkaCluster, tmp_path: Path) -> None:
    """``copycat schema-registry --basic-auth-file/--basic-auth/--basic-auth-roles``."""
    users = tmp_path / "password.properties"
    users.write_text("# Jetty PropertyFileLoginModule format\nfret: letmein,developer\n")
    port = _free_port()
    argv = [
        sys.executable,
        "-m",
        "core.cli",
        "schema-registry",
        "--bootstrap-servers",
        broker.bootstrap_servers,
        "--port",
        str(port),
        "--topic",
        f"_schemas-cli-{uuid.uuid4().hex[:8]}",
        "--basic-auth-file",
        str(users),
        "--basic-auth",
        "ops:pw:with:colons",
        "--basic-auth-roles",
        "developer",
        "--basic-auth-realm",
        "Dev",
    ]
    process = subprocess.Popen(
        argv, cwd=Path(__file__).resolve().parents[2], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "basic auth, realm Dev" in line, line
        url = f"http://127.0.0.1:{port}"
        refused = httpx.get(f"{url}/subjects")
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == 'Basic realm="Dev"'
        assert httpx.get(f"{url}/subjects", auth=("fret", "letmein")).status_code == 200
        # --basic-auth users have no role: not let in where roles are required.
        assert httpx.get(f"{url}/subjects", auth=("ops", "pw:with:colons")).status_code == 403
    finally:
        process.terminate()
        process.wait(15)


def test_cli_basic_auth_without_a_colon_is_refused() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "core.cli",
            "schema-registry",
            "--bootstrap-servers",
            "127.0.0.1:9",
            "--basic-auth",
            "x",
        ],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "expected USER:PASSWORD" in done.stderr and "'x'" in done.stderr, done.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_without_basic_auth_no_credentials_are_asked(schema_registry: SchemaRegistry) -> None:
    answer = httpx.get(f"{schema_registry.url}/subjects")
    assert answer.status_code == 200 and "www-authenticate" not in answer.headers
