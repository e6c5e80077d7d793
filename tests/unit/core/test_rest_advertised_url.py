"""How a worker's advertised URL is derived from its listeners and ``rest.advertised.*``, as
Kafka 4.1.1's ``RestServer.advertisedUrl()`` and ``determineAdvertisedProtocol()`` derive it
(checked against a real Kafka Connect 4.1.1 worker: ``http://0.0.0.0:P`` advertises
``http://0.0.0.0:P``, ``http://:P`` this host's address)."""

from __future__ import annotations

import socket

import pytest

from core.rest.server import advertised_url


def _url(
    listeners: list[tuple[str, str, int]],
    host: str | None = None,
    port: int | None = None,
    listener: str | None = None,
) -> str:
    raw = ",".join(f"{s}://{h}:{p}" for s, h, p in listeners)
    return advertised_url(listeners, raw, host, port, listener)


def test_the_advertised_host_name_and_port_replace_the_listeners() -> None:
    listeners = [("https", "0.0.0.0", 18481)]
    assert _url(listeners, host="127.0.0.1") == "https://127.0.0.1:18481"
    assert _url(listeners, host="w1.example.com", port=443) == "https://w1.example.com:443"


def test_a_wildcard_host_is_advertised_as_kafka_does() -> None:
    assert _url([("http", "0.0.0.0", 8083)]) == "http://0.0.0.0:8083"


def test_a_listener_without_a_host_advertises_this_hosts_address() -> None:
    try:
        local = socket.gethostbyname(socket.gethostname())
    except OSError:
        local = "127.0.0.1"
    assert _url([("http", "", 8083)]) == f"http://{local}:8083"


@pytest.mark.parametrize(
    ("listeners", "listener", "expected"),
    [
        # Any http listener: http, whichever comes first.
        ([("https", "a", 1), ("http", "b", 2)], None, "http://b:2"),
        ([("https", "a", 1)], None, "https://a:1"),
        ([("http", "a", 1), ("https", "b", 2)], "https", "https://b:2"),
        ([("http", "a", 1), ("https", "b", 2)], "HTTPS", "https://b:2"),
        # No listener of the advertised protocol: the first listener's host and port.
        ([("http", "a", 1)], "https", "https://a:1"),
    ],
)
def test_the_protocol_picks_the_listener(
    listeners: list[tuple[str, str, int]], listener: str | None, expected: str
) -> None:
    assert _url(listeners, listener=listener) == expected


def test_an_ipv6_host_is_in_brackets() -> None:
    assert _url([("http", "::1", 18383)]) == "http://[::1]:18383"
    assert _url([("http", "0.0.0.0", 1)], host="fe80::1") == "http://[fe80::1]:1"
