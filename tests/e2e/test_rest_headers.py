"""CORS (``access.control.allow.*``) and ``response.http.headers.config`` on a real worker,
as Kafka's RestServer applies them (Jetty's CrossOriginHandler and HeaderFilter)."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.http_headers import parse_rules, split_csv
from core.worker_config import WorkerConfig
from plugin_api import ConfigException
from tests.support.rest import RestWorker

pytestmark = pytest.mark.integration

BASIC_AUTH = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
ORIGIN = "http://ui.example.com"
HEADERS = (
    "set X-Frame-Options: DENY,"
    '"add Cache-Control: no-cache, no-store",'
    "setDate Expires: 3600000,"
    "add X-Extra: one, add X-Extra: two"
)


@pytest.fixture(scope="module")
def worker(
    tmp_path_factory: pytest.TempPathFactory, bootstrap_servers: str, bundled_plugin_path: Path
) -> Iterator[RestWorker]:
    tmp = tmp_path_factory.mktemp("headers")
    (tmp / "credentials.properties").write_text("alice: wonderland\n")
    with RestWorker(
        tmp,
        bootstrap_servers,
        bundled_plugin_path,
        {
            "access.control.allow.origin": r"http://ui\.example\.com, https://.*\.corp\.example",
            "access.control.allow.methods": "GET,POST,PUT,DELETE",
            "response.http.headers.config": HEADERS,
            "rest.extension.classes": BASIC_AUTH,
            "rest.extension.basic.auth.credentials.file": str(tmp / "credentials.properties"),
        },
    ) as w:
        yield w


def test_an_allowed_origin_gets_cors_headers_and_others_none(worker: RestWorker) -> None:
    with worker.client(auth=("alice", "wonderland")) as http:
        allowed = http.get("/connectors", headers={"Origin": ORIGIN})
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == ORIGIN
        assert allowed.headers["access-control-allow-credentials"] == "true"
        assert allowed.headers["vary"] == "Origin"
        assert "access-control-allow-methods" not in allowed.headers  # a preflight's only
        regex = http.get("/connectors", headers={"Origin": "https://app.corp.example"})
        assert regex.headers["access-control-allow-origin"] == "https://app.corp.example"
        for other in ("http://evil.example", "http://ui.example.com.evil", "http://uiXexample.com"):
            refused = http.get("/connectors", headers={"Origin": other})
            assert refused.status_code == 200, other  # served, but a browser will not read it
            assert "access-control-allow-origin" not in refused.headers, other
            assert refused.headers["vary"] == "Origin"


def test_a_preflight_gets_the_allowed_methods_and_goes_on_to_authentication(
    worker: RestWorker,
) -> None:
    preflight = {"Origin": ORIGIN, "Access-Control-Request-Method": "PUT"}
    with worker.client() as anonymous:
        refused = anonymous.options("/connectors/c/config", headers=preflight)
        # Browsers send no credentials on a preflight; Kafka's filter asks for them anyway.
        assert refused.status_code == 401
        assert refused.headers["access-control-allow-methods"] == "GET,POST,PUT,DELETE"
        assert refused.headers["access-control-allow-headers"] == "Content-Type"
        assert refused.headers["access-control-max-age"] == "60"
    with worker.client(auth=("alice", "wonderland")) as http:
        answered = http.options("/connectors/c/config", headers=preflight)
        assert answered.status_code == 200
        assert answered.headers["allow"] == "GET,HEAD,OPTIONS,PATCH,PUT"
        assert answered.headers["access-control-allow-origin"] == ORIGIN
        assert http.options("/no/such/path").status_code == 404


def test_configured_response_headers_are_on_every_response(worker: RestWorker) -> None:
    with worker.client() as anonymous:
        unauthorized = anonymous.get("/connectors")
    with worker.client(auth=("alice", "wonderland")) as http:
        ok = http.get("/connectors")
        missing = http.get("/connectors/nope")
    for response, status in ((unauthorized, 401), (ok, 200), (missing, 404)):
        assert response.status_code == status
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["cache-control"] == "no-cache, no-store"
        assert response.headers.get_list("x-extra") == ["one", "two"]
        expires = email.utils.parsedate_to_datetime(response.headers["expires"]).timestamp()
        assert abs(expires - (time.time() + 3600)) < 60
        assert response.headers["content-type"] == "application/json"  # the app's own kept


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("X-Frame-Options", "Invalid format of header config 'X-Frame-Options'"),
        ("X-Frame-Options: DENY", "Invalid header config action: 'X-Frame-Options:'"),
        ("put X-A: b", "Invalid header config action: 'put'. Expected one of [set, add, "),
        ("set X-A", "Invalid format of header name and header value pair 'X-A'"),
        ("set X-A: http://x", "Invalid format of header name and header value pair"),
        ("set :b", "Invalid header name ''"),
        ("setDate Expires: soon", "milliseconds"),
    ],
)
def test_a_bad_header_rule_stops_the_worker_naming_the_key(value: str, message: str) -> None:
    with pytest.raises(ConfigException) as refused:
        WorkerConfig({"response.http.headers.config": value})
    assert "response.http.headers.config" in str(refused.value)
    assert message in str(refused.value)


def test_a_bad_origin_pattern_stops_the_worker_naming_the_key() -> None:
    with pytest.raises(ConfigException, match=r"access\.control\.allow\.origin.*\(unclosed"):
        WorkerConfig({"access.control.allow.origin": "http://(unclosed"})


def test_rules_split_as_jetty_splits_them() -> None:
    assert split_csv(' a , "b, c" ,"d\\"e", ,f') == ["a", "b, c", 'd"e', "", "f"]
    assert split_csv("") == [] and split_csv("a,") == ["a"]
    assert [(r.name, r.value, r.add, r.date) for r in parse_rules("addDate Date: 0")] == [
        ("Date", "0", True, True)
    ]
    assert parse_rules("  ") == []
