"""The TLS context of a worker's requests to other workers (core/rest/tls.py
``client_ssl_context``): which keys it reads (Kafka's ``valuesWithPrefixAllOrNothing
("listeners.https.")``), what it trusts, and errors that name the key at fault."""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx
import pytest

from core.rest.internal_client import internal_client
from core.rest.tls import client_ssl_context, client_ssl_prefix
from plugin_api import ConfigException
from tests.support.tls import certificate, make_certs, new_key, write_pem


def _subjects(context: ssl.SSLContext) -> set[str]:
    """The common names of the CAs ``context`` trusts (those loaded from files and data)."""
    names: set[str] = set()
    for cert in context.get_ca_certs():
        for rdn in cert["subject"]:
            names.update(str(pair[1]) for pair in rdn if pair[0] == "commonName")
    return names


def test_prefixed_keys_when_any_else_top_level_never_a_mix(tmp_path: Path) -> None:
    make_certs(tmp_path)
    ca = str(tmp_path / "ca.pem")
    assert client_ssl_prefix({"ssl.truststore.location": ca}) == ""
    assert _subjects(client_ssl_context({"ssl.truststore.location": ca})) == {"copycat test CA"}
    # One prefixed key: the top-level truststore is not read at all.
    mixed = {
        "ssl.truststore.location": ca,
        "listeners.https.ssl.keystore.location": str(tmp_path / "client.pem"),
    }
    assert client_ssl_prefix(mixed) == "listeners.https."
    assert "copycat test CA" not in _subjects(client_ssl_context(mixed))
    # The admin listener's keys are another prefix.
    assert client_ssl_prefix({"admin.listeners.https.ssl.keystore.location": "x"}) == ""


def test_without_a_truststore_the_keystore_certificate_is_trusted(tmp_path: Path) -> None:
    key = new_key()
    keystore = write_pem(tmp_path / "keystore.pem", key, certificate("self", key, ca=True))
    context = client_ssl_context({"listeners.https.ssl.keystore.location": str(keystore)})
    assert "self" in _subjects(context)
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED


def test_an_empty_endpoint_identification_algorithm_turns_host_name_checks_off() -> None:
    assert client_ssl_context({}).check_hostname
    off = {"listeners.https.ssl.endpoint.identification.algorithm": ""}
    assert not client_ssl_context(off).check_hostname
    assert client_ssl_context({"ssl.endpoint.identification.algorithm": "https"}).check_hostname


def test_bad_material_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigException, match=r"listeners\.https\.ssl\.truststore\.location"):
        client_ssl_context({"listeners.https.ssl.truststore.location": str(tmp_path / "no")})
    with pytest.raises(ConfigException, match=r"^Invalid value JKS for configuration ssl\.key"):
        client_ssl_context({"ssl.keystore.type": "JKS", "ssl.keystore.location": "x.jks"})


def test_the_client_reads_tls_keys_only_for_https_urls(tmp_path: Path) -> None:
    """As Kafka's RestClient: a plain-HTTP cluster never reads the TLS keys (which may be the
    Kafka clients' JKS stores); an https request with bad keys fails as a connection error
    naming the key, which every caller handles."""
    props = {"ssl.keystore.type": "JKS", "ssl.keystore.location": str(tmp_path / "k.jks")}
    with internal_client(props) as client:
        with pytest.raises(httpx.ConnectError, match=r"ssl\.keystore\.type"):
            client.get("https://127.0.0.1:9/")
        with pytest.raises(httpx.ConnectError) as refused:
            client.get("http://127.0.0.1:9/")
        assert "ssl." not in str(refused.value)


def test_the_listener_names_the_key_and_file_at_fault(tmp_path: Path) -> None:
    """core/rest/tls.py ``ssl_context`` (the https listener): a bad truststore is the
    truststore's error, not the keystore's; a PKCS12 type without a location says so."""
    from core.rest.tls import ssl_context

    make_certs(tmp_path)
    p = "listeners.https."
    keystore = str(tmp_path / "client.pem")
    missing = str(tmp_path / "no-such-ca.pem")
    with pytest.raises(ConfigException) as bad_trust:
        ssl_context(
            {p + "ssl.keystore.location": keystore, p + "ssl.truststore.location": missing}, p
        )
    message = str(bad_trust.value)
    assert message.startswith(f"Invalid value {missing} for configuration {p}ssl.truststore."), (
        message
    )
    assert keystore not in message
    with pytest.raises(ConfigException) as bad_key:
        ssl_context({p + "ssl.keystore.location": missing}, p)
    assert str(bad_key.value).startswith(f"Invalid value {missing} for configuration {p}ssl.key")
    with pytest.raises(ConfigException) as no_location:
        ssl_context({p + "ssl.keystore.type": "PKCS12"}, p)
    message = str(no_location.value)
    assert f"{p}ssl.keystore.location" in message and "supported keystore types" not in message
