"""Every client key a worker file may set reaches librdkafka in a form it accepts, or is
dropped with a warning: none may stop the worker's own clients (its start-up admin client,
its stores) from being created."""

from __future__ import annotations

import logging
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient

from core import kafka
from core.kafka import JAVA_ONLY_CLIENT_KEYS, client_config
from core.worker_config import (
    CLIENT_KEYS,
    CLIENT_PREFIXES,
    KAFKA_SECURITY_KEYS,
    LIBRDKAFKA_SECURITY_KEYS,
    WorkerConfig,
)
from plugin_api import ConfigException

MINIMAL = {
    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    # Nothing listens there: creating a client does not connect.
    "bootstrap.servers": "127.0.0.1:1",
}

# Every client key of Kafka 4.1.1's DistributedConfig and StandaloneConfig (their configDef
# names, read from connect-runtime-4.1.1.jar: CommonClientConfigs, SslConfigs, SaslConfigs,
# ssl.client.auth of RestServerConfig) plus Copycat's own CLIENT_KEYS, each with a value a
# Kafka Connect user could write.
PLAUSIBLE = {
    "bootstrap.servers": "127.0.0.1:1,localhost:2",
    "client.dns.lookup": "resolve_canonical_bootstrap_servers_only",
    "client.id": "connect-worker-1",
    "client.rack": "rack-a",
    "connections.max.idle.ms": "540000",
    "metadata.max.age.ms": "300000",
    "metadata.recovery.rebootstrap.trigger.ms": "300000",
    "metadata.recovery.strategy": "rebootstrap",
    "receive.buffer.bytes": "32768",
    "send.buffer.bytes": "-1",
    "reconnect.backoff.max.ms": "1000",
    "reconnect.backoff.ms": "50",
    "request.timeout.ms": "40000",
    "retry.backoff.max.ms": "1000",
    "retry.backoff.ms": "100",
    "security.protocol": "PLAINTEXT",
    "security.providers": "com.example.MyProviderCreator",
    "socket.connection.setup.timeout.max.ms": "30000",
    "socket.connection.setup.timeout.ms": "10000",
    "sasl.client.callback.handler.class": "com.example.Handler",
    "sasl.jaas.config": (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="u" password="p";'
    ),
    "sasl.kerberos.kinit.cmd": "/usr/bin/kinit",
    "sasl.kerberos.min.time.before.relogin": "60000",
    "sasl.kerberos.service.name": "kafka",
    "sasl.kerberos.ticket.renew.jitter": "0.05",
    "sasl.kerberos.ticket.renew.window.factor": "0.8",
    "sasl.login.callback.handler.class": "com.example.LoginHandler",
    "sasl.login.class": "com.example.Login",
    "sasl.login.connect.timeout.ms": "10000",
    "sasl.login.read.timeout.ms": "10000",
    "sasl.login.refresh.buffer.seconds": "300",
    "sasl.login.refresh.min.period.seconds": "60",
    "sasl.login.refresh.window.factor": "0.8",
    "sasl.login.refresh.window.jitter": "0.05",
    "sasl.login.retry.backoff.max.ms": "10000",
    "sasl.login.retry.backoff.ms": "100",
    "sasl.mechanism": "PLAIN",
    "sasl.oauthbearer.assertion.algorithm": "RS256",
    "sasl.oauthbearer.assertion.claim.aud": "https://idp.example.com",
    "sasl.oauthbearer.assertion.claim.exp.seconds": "300",
    "sasl.oauthbearer.assertion.claim.iss": "connect",
    "sasl.oauthbearer.assertion.claim.jti.include": "false",
    "sasl.oauthbearer.assertion.claim.nbf.seconds": "60",
    "sasl.oauthbearer.assertion.claim.sub": "connect",
    "sasl.oauthbearer.assertion.file": "/etc/kafka/assertion.jwt",
    "sasl.oauthbearer.assertion.private.key.file": "/etc/kafka/key.pem",
    "sasl.oauthbearer.assertion.private.key.passphrase": "secret",
    "sasl.oauthbearer.assertion.template.file": "/etc/kafka/template.json",
    "sasl.oauthbearer.client.credentials.client.id": "connect",
    "sasl.oauthbearer.client.credentials.client.secret": "secret",
    "sasl.oauthbearer.clock.skew.seconds": "30",
    "sasl.oauthbearer.expected.audience": "kafka",
    "sasl.oauthbearer.expected.issuer": "https://idp.example.com",
    "sasl.oauthbearer.header.urlencode": "false",
    "sasl.oauthbearer.jwks.endpoint.refresh.ms": "3600000",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": "10000",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms": "100",
    "sasl.oauthbearer.jwks.endpoint.url": "https://idp.example.com/jwks",
    "sasl.oauthbearer.jwt.retriever.class": "com.example.Retriever",
    "sasl.oauthbearer.jwt.validator.class": "com.example.Validator",
    "sasl.oauthbearer.scope": "kafka",
    "sasl.oauthbearer.scope.claim.name": "scope",
    "sasl.oauthbearer.sub.claim.name": "sub",
    "sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/token",
    "ssl.cipher.suites": "TLS_AES_128_GCM_SHA256",
    "ssl.client.auth": "none",
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    "ssl.endpoint.identification.algorithm": "https",
    "ssl.engine.factory.class": "com.example.EngineFactory",
    "ssl.key.password": "secret",
    "ssl.keymanager.algorithm": "SunX509",
    "ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE-----",
    "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----",
    "ssl.keystore.location": "/etc/kafka/keystore.jks",
    "ssl.keystore.password": "secret",
    "ssl.keystore.type": "JKS",
    "ssl.protocol": "TLSv1.3",
    "ssl.provider": "SunJSSE",
    "ssl.secure.random.implementation": "SHA1PRNG",
    "ssl.trustmanager.algorithm": "PKIX",
    "ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----",
    "ssl.truststore.location": "/etc/kafka/truststore.jks",
    "ssl.truststore.password": "secret",
    "ssl.truststore.type": "JKS",
}


# librdkafka's own keys under ssl./sasl., which a worker file may set as well.
LIBRDKAFKA_PLAUSIBLE = {
    "ssl.ca.location": "/etc/ssl/certs/ca.pem",
    "ssl.ca.pem": "-----BEGIN CERTIFICATE-----",
    "ssl.certificate.location": "/etc/kafka/client.pem",
    "ssl.certificate.pem": "-----BEGIN CERTIFICATE-----",
    "ssl.crl.location": "/etc/kafka/crl.pem",
    "ssl.curves.list": "P-256",
    "ssl.engine.id": "dynamic",
    "ssl.engine.location": "/usr/lib/engine.so",
    "ssl.key.location": "/etc/kafka/client.key",
    "ssl.key.pem": "-----BEGIN PRIVATE KEY-----",
    "ssl.providers": "default",
    "ssl.sigalgs.list": "RSA+SHA256",
    "sasl.kerberos.keytab": "/etc/kafka/client.keytab",
    "sasl.kerberos.principal": "connect",
    "sasl.mechanisms": "PLAIN",
    "sasl.oauthbearer.assertion.jwt.template.file": "/etc/kafka/template.json",
    "sasl.oauthbearer.assertion.private.key.pem": "-----BEGIN PRIVATE KEY-----",
    "sasl.oauthbearer.client.id": "connect",
    "sasl.oauthbearer.client.secret": "secret",
    "sasl.oauthbearer.config": "principal=connect",
    "sasl.oauthbearer.extensions": "a=b",
    "sasl.oauthbearer.grant.type": "client_credentials",
    "sasl.oauthbearer.metadata.authentication.type": "none",
    "sasl.oauthbearer.method": "oidc",
    "sasl.password": "secret",
    "sasl.username": "connect",
}


def test_every_client_key_of_the_worker_is_covered() -> None:
    assert CLIENT_KEYS <= PLAUSIBLE.keys()
    assert all(k in CLIENT_KEYS or k.startswith(CLIENT_PREFIXES) for k in PLAUSIBLE)
    assert {k for k in PLAUSIBLE if k.startswith(CLIENT_PREFIXES)} == KAFKA_SECURITY_KEYS
    assert LIBRDKAFKA_PLAUSIBLE.keys() == LIBRDKAFKA_SECURITY_KEYS


@pytest.mark.parametrize("key", sorted(LIBRDKAFKA_PLAUSIBLE))
def test_librdkafkas_own_security_keys_pass_as_they_are(key: str) -> None:
    config = WorkerConfig.from_properties({**MINIMAL, key: LIBRDKAFKA_PLAUSIBLE[key]})
    settings = client_config(config.client_config())
    assert settings[key] == LIBRDKAFKA_PLAUSIBLE[key]
    _clients(settings)


def test_an_unknown_security_key_is_refused_naming_the_file_with_a_suggestion() -> None:
    # Handed to librdkafka it failed the worker's first client, in a traceback.
    with pytest.raises(ConfigException) as info:
        WorkerConfig.from_properties(
            {**MINIMAL, "ssl.truststore.lcation": "/etc/kafka/ts.pem"}, "w.properties"
        )
    assert str(info.value) == (
        "w.properties: unknown worker configuration key 'ssl.truststore.lcation' "
        "(did you mean 'ssl.truststore.location'?)"
    )


def test_the_java_jwt_assertion_template_is_librdkafkas() -> None:
    settings = client_config({"sasl.oauthbearer.assertion.template.file": "/etc/t.json"})
    assert settings["sasl.oauthbearer.assertion.jwt.template.file"] == "/etc/t.json"
    assert "sasl.oauthbearer.assertion.template.file" not in settings


def _clients(settings: dict[str, Any]) -> None:
    """Make each kind of client the worker makes, as librdkafka is handed ``settings``."""
    confluent_kafka.Producer(settings).flush(0)
    confluent_kafka.Consumer({**settings, "group.id": "g"}).close()
    AdminClient(settings)


# With TLS and SASL on: the stores name files (core.client_security's tests cover them), and
# the rest must still make clients.
SASL_SSL = {
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "PLAIN",
    "sasl.jaas.config": PLAUSIBLE["sasl.jaas.config"],
}
_CASES = [
    *(pytest.param(key, {}, id=f"PLAINTEXT-{key}") for key in sorted(PLAUSIBLE)),
    *(
        pytest.param(
            key,
            SASL_SSL,
            id=f"SASL_SSL-{key}",
            marks=[
                pytest.mark.xfail(
                    strict=True,
                    reason="Java's IANA cipher suite names are not OpenSSL's (not translated)",
                )
            ]
            if key == "ssl.cipher.suites"
            else [],
        )
        for key in sorted(PLAUSIBLE)
        if ".keystore." not in key and ".truststore." not in key and key != "security.protocol"
    ),
]


@pytest.mark.parametrize(("key", "base"), _CASES)
def test_each_client_key_of_a_worker_file_makes_clients_librdkafka_accepts(
    key: str,
    base: dict[str, str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(kafka, "_warned_java_only", set())
    caplog.set_level(logging.WARNING, logger="copycat.kafka")
    props = {**MINIMAL, **base, key: PLAUSIBLE[key]}
    config = WorkerConfig.from_properties(props, "w.properties")
    settings = client_config(config.client_config())
    _clients(settings)  # raises KafkaException "No such configuration property" otherwise
    if key in JAVA_ONLY_CLIENT_KEYS and key in config.client_config():
        assert key not in settings
        assert key in caplog.text  # dropped with a warning naming it


def test_a_java_only_key_is_warned_about_once_per_process(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kafka, "_warned_java_only", set())
    caplog.set_level(logging.WARNING, logger="copycat.kafka")
    for _ in range(3):
        client_config({"socket.connection.setup.timeout.max.ms": "30000"})
    assert caplog.text.count("socket.connection.setup.timeout.max.ms") == 1


def test_ssl_client_auth_is_the_rest_listeners_not_the_clients() -> None:
    config = WorkerConfig.from_properties({**MINIMAL, "ssl.client.auth": "required"})
    assert "ssl.client.auth" not in config.client_config()


def test_broker_security_keys_copied_from_server_properties_are_dropped_with_a_warning(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kafka Connect starts with a broker's ssl./sasl. keys in its worker file (logging them
    as unknown); they were refused as unknown worker keys."""
    monkeypatch.setattr(kafka, "_warned_java_only", set())
    copied = {
        "ssl.principal.mapping.rules": "DEFAULT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
    }
    config = WorkerConfig.from_properties({**MINIMAL, **copied})
    with caplog.at_level(logging.WARNING, logger="copycat.kafka"):
        settings = client_config(config.client_config())
        AdminClient(settings)
    assert not copied.keys() & settings.keys()
    assert "sasl.enabled.mechanisms" in caplog.text
