"""A worker configured as Kafka Connect users configure one for a secured cluster moves records.

One Apache Kafka broker listens with SASL_PLAINTEXT (PLAIN and SCRAM-SHA-256) and with SSL
(a CA and certificates made here, client certificates required). Workers written with the Java
clients' keys (``sasl.jaas.config``, PEM truststores and keystores, and their ``producer.`` /
``consumer.`` / ``admin.`` copies), with config-provider placeholders in the worker config,
and connectors with ``producer.override.sasl.jaas.config``, each run a file source into a
topic and a file sink out of it through the secured listener.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from plugin_api import ConnectException
from tests.support.apache_kafka import ADMIN_TIMEOUT_S, ApacheKafka
from tests.support.rest import RestWorker, wait_for
from tests.support.tls import make_certs

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        os.environ.get("COPYCAT_TEST_BROKER") == "dev-broker",
        reason="starts an Apache Kafka broker with SASL and SSL listeners (needs Java)",
    ),
]

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
ALICE_PW = "alice-secret-pw"
BOB_PW = "bob-secret-pw-2"
LINES = 20


@dataclass
class SecuredKafka:
    broker: ApacheKafka
    certs: Path

    @property
    def sasl(self) -> str:
        return self.broker.address("SASL_PLAINTEXT")

    @property
    def ssl(self) -> str:
        return self.broker.address("SSL")


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredKafka]:
    tmp = tmp_path_factory.mktemp("secured-kafka")
    certs = tmp / "certs"
    make_certs(certs)
    overrides = {
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
            f'{PLAIN} required user_alice="{ALICE_PW}" user_bob="{BOB_PW}";'
        ),
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": f"{SCRAM} required;",
        "listener.name.ssl.ssl.keystore.type": "PEM",
        "listener.name.ssl.ssl.keystore.location": str(certs / "server.pem"),
        "listener.name.ssl.ssl.truststore.type": "PEM",
        "listener.name.ssl.ssl.truststore.location": str(certs / "ca.pem"),
        "listener.name.ssl.ssl.client.auth": "required",
    }
    broker = ApacheKafka(
        tmp / "broker", overrides, extra_listeners=("SASL_PLAINTEXT", "SSL")
    ).start(watch_pid=os.getpid())
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
        futures = admin.alter_user_scram_credentials(
            [UserScramCredentialUpsertion("alice", info, ALICE_PW.encode())]
        )
        for future in futures.values():
            future.result(timeout=ADMIN_TIMEOUT_S)
        yield SecuredKafka(broker, certs)
    finally:
        broker.stop()


def _jaas(module: str, user: str, password: str) -> str:
    return f'{module} required username="{user}" password="{password}";'


def _with_client_copies(props: Mapping[str, str]) -> dict[str, str]:
    """``props`` for the worker's own clients and, as Kafka Connect needs, its tasks'."""
    out = dict(props)
    for prefix in ("producer.", "consumer.", "admin."):
        out.update({prefix + k: v for k, v in props.items()})
    return out


def _pipeline(worker: RestWorker, tmp: Path, source_extra: Mapping[str, str] = {}) -> list[str]:
    """Run a file source into a new topic and a file sink out of it; the sink's lines."""
    topic = f"secured-{uuid.uuid4().hex[:8]}"
    lines = [f"line {i} of {topic}" for i in range(LINES)]
    (tmp / f"{topic}.in").write_text("".join(f"{line}\n" for line in lines))
    out = tmp / f"{topic}.out"
    source = {
        "connector.class": "FileStreamSource",
        "file": str(tmp / f"{topic}.in"),
        "topic": topic,
        "tasks.max": "1",
        **source_extra,
    }
    sink = {"connector.class": "FileStreamSink", "file": str(out), "topics": topic}
    with worker.client() as http:
        for name, config in ((f"{topic}-source", source), (f"{topic}-sink", sink)):
            response = http.post("/connectors", json={"name": name, "config": config})
            assert response.status_code == 201, response.text

        def read() -> list[str] | None:
            got = out.read_text().splitlines() if out.exists() else []
            if len(got) >= LINES:
                return got
            for name in (f"{topic}-source", f"{topic}-sink"):
                status = http.get(f"/connectors/{name}/status").json()
                failed = [t for t in status.get("tasks", []) if t["state"] == "FAILED"]
                assert not failed, failed
            return None

        got: list[str] = wait_for(read, timeout_s=90, what=f"{LINES} lines through {topic}")
    assert got == lines
    return got


def _start_fails(worker: RestWorker) -> ConnectException:
    """The error that stopped ``worker`` from starting (its REST server is stopped again)."""
    try:
        worker.__enter__()
    except ConnectException as exc:
        worker.__exit__(None, None, None)
        return exc
    worker.__exit__(None, None, None)
    raise AssertionError("the worker started")


def _run(tmp: Path, bootstrap: str, plugins: Path, props: Mapping[str, str]) -> RestWorker:
    return RestWorker(tmp, bootstrap, plugins, {"default.api.timeout.ms": "30000", **props})


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_worker_with_java_sasl_keys_moves_records(
    secured: SecuredKafka, bundled_plugin_path: Path, tmp_path: Path, mechanism: str
) -> None:
    module = PLAIN if mechanism == "PLAIN" else SCRAM
    props = _with_client_copies(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.jaas.config": _jaas(module, "alice", ALICE_PW),
        }
    )
    with _run(tmp_path, secured.sasl, bundled_plugin_path, props) as worker:
        _pipeline(worker, tmp_path)
    assert not any(ALICE_PW in line for line in worker.log_lines)


def test_worker_with_java_pem_stores_moves_records_over_ssl(
    secured: SecuredKafka, bundled_plugin_path: Path, tmp_path: Path
) -> None:
    props = _with_client_copies(
        {
            "security.protocol": "SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(secured.certs / "ca.pem"),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(secured.certs / "client.pem"),
            "ssl.endpoint.identification.algorithm": "https",  # the cert names 127.0.0.1
            "ssl.protocol": "TLSv1.3",  # Java-only, no librdkafka key: dropped
        }
    )
    with _run(tmp_path, secured.ssl, bundled_plugin_path, props) as worker:
        _pipeline(worker, tmp_path)


def test_provider_placeholders_in_the_worker_config_are_resolved(
    secured: SecuredKafka, bundled_plugin_path: Path, tmp_path: Path
) -> None:
    secrets = tmp_path / "kafka.properties"
    secrets.write_text(f"pw={ALICE_PW}\n")
    placeholder = f"${{file:{secrets}:pw}}"
    props = {
        "config.providers": "file",
        "config.providers.file.class": (
            "org.apache.kafka.common.config.provider.FileConfigProvider"
        ),
        # librdkafka's keys, as the tester wrote them, for the worker's own clients ...
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "alice",
        "sasl.password": placeholder,
        # ... and a placeholder inside Java's sasl.jaas.config for the tasks'.
        **{
            f"{prefix}.{key}": value
            for prefix in ("producer", "consumer", "admin")
            for key, value in {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": _jaas(PLAIN, "alice", placeholder),
            }.items()
        },
    }
    with _run(tmp_path, secured.sasl, bundled_plugin_path, props) as worker:
        assert worker.herder.config.raw_originals()["sasl.password"] == placeholder
        _pipeline(worker, tmp_path)
    assert not any(ALICE_PW in line for line in worker.log_lines)


def test_connector_override_of_sasl_jaas_config(
    secured: SecuredKafka, bundled_plugin_path: Path, tmp_path: Path
) -> None:
    """The worker's producers would log in with a wrong password; the source's records only
    arrive because its producer.override.sasl.jaas.config (bob's) is the one used."""
    base = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}
    props = {
        **_with_client_copies({**base, "sasl.jaas.config": _jaas(PLAIN, "alice", ALICE_PW)}),
        "producer.sasl.jaas.config": _jaas(PLAIN, "alice", "not-alices-password"),
    }
    with _run(tmp_path, secured.sasl, bundled_plugin_path, props) as worker:
        _pipeline(
            worker,
            tmp_path,
            {"producer.override.sasl.jaas.config": _jaas(PLAIN, "bob", BOB_PW)},
        )
    assert not any(BOB_PW in line for line in worker.log_lines)


def test_unsupported_login_module_fails_the_worker_at_once_naming_the_key(
    secured: SecuredKafka, bundled_plugin_path: Path, tmp_path: Path
) -> None:
    props = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.jaas.config": (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
            'clientSecret="oauth-secret-value";'
        ),
    }
    started = time.monotonic()
    message = str(_start_fails(_run(tmp_path, secured.sasl, bundled_plugin_path, props)))
    assert time.monotonic() - started < 10
    assert "sasl.jaas.config" in message and "OAuthBearerLoginModule" in message
    assert "oauth-secret-value" not in message


def test_wrong_password_fails_the_start_without_claiming_a_timeout(
    secured: SecuredKafka, bundled_plugin_path: Path, tmp_path: Path
) -> None:
    props = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.jaas.config": _jaas(SCRAM, "alice", "wrong-password-here"),
        "default.api.timeout.ms": "60000",
    }
    started = time.monotonic()
    message = str(_start_fails(RestWorker(tmp_path, secured.sasl, bundled_plugin_path, props)))
    elapsed = time.monotonic() - started
    assert "wrong-password-here" not in message
    # librdkafka would retry the login until the timeout and then name a "transport failure";
    # like Kafka's Java client, the worker gives up at once and says why.
    assert elapsed < 30, (elapsed, message)
    assert "within default.api.timeout.ms" not in message, message
    assert "Authentication" in message or "authentication" in message, message
