"""Java client security keys become librdkafka's (core.client_security): the JAAS parser reads
sasl.jaas.config as Kafka's JaasConfig does, stores map to librdkafka's keys, and what has no
equivalent is refused naming the key, never quoting a secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.client_security import parse_jaas_config, translate_security_keys
from core.kafka import client_config, librdkafka_keys
from plugin_api import ConfigException

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def test_jaas_plain_entry_with_quoted_options() -> None:
    [entry] = parse_jaas_config(f'{PLAIN} required username="alice" password="alice-secret-pw";')
    assert entry.login_module == PLAIN
    assert entry.control_flag == "required"
    assert entry.options == {"username": "alice", "password": "alice-secret-pw"}


def test_jaas_quoting_rules_follow_javas_stream_tokenizer() -> None:
    text = (
        f"{SCRAM} REQUIRED // a comment\n"
        "  username=bob_1.x-$ /* another */ password='p;w \"q\" \\\\ \\t\\101' ;"
    )
    [entry] = parse_jaas_config(text)
    assert entry.control_flag == "required"
    assert entry.options == {"username": "bob_1.x-$", "password": 'p;w "q" \\ \tA'}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "login module not specified"),
        (PLAIN, "control flag not specified"),
        (f"{PLAIN} mandatory;", "invalid login module control flag"),
        (f'{PLAIN} required username="a"', "not terminated by a semicolon"),
        (f"{PLAIN} required username=;", "value not specified for key 'username'"),
        (f"{PLAIN} required password=1234;", "value not specified for key 'password'"),
    ],
)
def test_jaas_errors_are_kafkas(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_jaas_config(text)


def test_jaas_config_becomes_sasl_username_and_password_and_wins() -> None:
    settings = librdkafka_keys(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "old",
            "sasl.jaas.config": f'{SCRAM} required username="alice" password="s3cret-pw";',
        }
    )
    assert "sasl.jaas.config" not in settings
    assert settings["sasl.username"] == "alice"
    assert settings["sasl.password"] == "s3cret-pw"
    assert librdkafka_keys(settings) == settings  # idempotent


@pytest.mark.parametrize(
    ("jaas", "problem"),
    [
        (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
            "OAuthBearerLoginModule is not supported",
        ),
        (
            'com.sun.security.auth.module.Krb5LoginModule required principal="x-secret-pw";',
            "Krb5LoginModule is not supported",
        ),
        (f'{PLAIN} required username="u-secret-pw";', "needs the option\\(s\\) password"),
        (f'{PLAIN} required username="a" password="x-secret-pw"; {PLAIN} required;', "2 login"),
        (f'{SCRAM} required username="a" password="x-secret-pw" tokenauth="true";', "tokens"),
        ('broken "x-secret-pw', "not a valid JAAS configuration"),
    ],
)
def test_unsupported_jaas_is_refused_naming_the_key_not_the_secret(jaas: str, problem: str) -> None:
    with pytest.raises(ConfigException, match=problem) as raised:
        client_config({"security.protocol": "SASL_SSL", "sasl.jaas.config": jaas})
    assert raised.value.name == "sasl.jaas.config"
    assert "sasl.jaas.config" in str(raised.value)
    assert "secret-pw" not in str(raised.value)


def test_pem_truststore_and_keystore_files(tmp_path: Path) -> None:
    settings: dict[str, object] = {
        "security.protocol": "SSL",
        "ssl.truststore.type": "pem",
        "ssl.truststore.location": "/etc/ca.pem",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": "/etc/client.pem",
        "ssl.key.password": "key-pw",
        "ssl.endpoint.identification.algorithm": "",
        "ssl.protocol": "TLSv1.3",
    }
    translate_security_keys(settings)
    assert settings == {
        "security.protocol": "SSL",
        "ssl.ca.location": "/etc/ca.pem",
        "ssl.certificate.location": "/etc/client.pem",
        "ssl.key.location": "/etc/client.pem",
        "ssl.key.password": "key-pw",
        "ssl.endpoint.identification.algorithm": "none",
    }


def test_inline_pem_certificates_and_key() -> None:
    settings: dict[str, object] = {
        "security.protocol": "SASL_SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----ca",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": "-----BEGIN CERTIFICATE-----me",
        "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----k",
        "ssl.endpoint.identification.algorithm": "HTTPS",
    }
    translate_security_keys(settings)
    assert settings == {
        "security.protocol": "SASL_SSL",
        "ssl.ca.pem": "-----BEGIN CERTIFICATE-----ca",
        "ssl.certificate.pem": "-----BEGIN CERTIFICATE-----me",
        "ssl.key.pem": "-----BEGIN PRIVATE KEY-----k",
        "ssl.endpoint.identification.algorithm": "https",
    }


def test_pkcs12_keystore_is_librdkafkas_keystore(tmp_path: Path) -> None:
    store = tmp_path / "client.p12"
    store.write_bytes(b"\x30\x82\x01\x00rest")
    for kind in ("PKCS12", None):  # a JKS-typed store holding PKCS12 is read as Java reads it
        settings = {
            "security.protocol": "SSL",
            "ssl.keystore.location": str(store),
            "ssl.keystore.password": "store-pw",
            **({"ssl.keystore.type": kind} if kind else {}),
        }
        translate_security_keys(settings)
        assert settings == {
            "security.protocol": "SSL",
            "ssl.keystore.location": str(store),
            "ssl.keystore.password": "store-pw",
        }


def test_jks_stores_are_refused_naming_the_key(tmp_path: Path) -> None:
    jks = tmp_path / "client.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02")
    with pytest.raises(ConfigException, match="JKS keystore") as raised:
        client_config(
            {
                "security.protocol": "SSL",
                "ssl.keystore.location": str(jks),
                "ssl.keystore.password": "pw-secret",
            }
        )
    assert raised.value.name == "ssl.keystore.location"
    assert "pw-secret" not in str(raised.value)
    for kind in ("JKS", "PKCS12", None):
        with pytest.raises(ConfigException, match="truststore cannot be read") as raised:
            client_config(
                {
                    "security.protocol": "SASL_SSL",
                    "ssl.truststore.location": str(jks),
                    "ssl.truststore.password": "pw-secret",
                    **({"ssl.truststore.type": kind} if kind else {}),
                }
            )
        assert raised.value.name == "ssl.truststore.location"
        assert "pw-secret" not in str(raised.value)


def test_without_tls_or_sasl_the_java_keys_are_dropped_unread(tmp_path: Path) -> None:
    """As Java's clients: the worker's top-level ssl.* keys may be its REST https listener's
    (a JKS keystore), and must not stop PLAINTEXT clients."""
    jks = tmp_path / "rest.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02")
    settings = librdkafka_keys(
        {
            "bootstrap.servers": "b:9092",
            "ssl.keystore.location": str(jks),
            "ssl.keystore.password": "pw",
            "ssl.truststore.location": str(jks),
            "sasl.jaas.config": "org.example.Unsupported required;",
        }
    )
    assert settings == {"bootstrap.servers": "b:9092"}
    ssl_only = librdkafka_keys(
        {"security.protocol": "ssl", "sasl.jaas.config": "org.example.Unsupported required;"}
    )
    assert ssl_only == {"security.protocol": "ssl"}
