"""Kafka's (Jersey's) Content-Type and Accept rules, each case as a Kafka Connect 4.1.1
worker answered it (415 / 406, or served)."""

from __future__ import annotations

import pytest

from core.rest.media import not_acceptable, unsupported_content_type


@pytest.mark.parametrize(
    ("content_type", "body", "refused"),
    [
        ("application/json", True, False),
        ("APPLICATION/JSON", True, False),
        ("application/json ; charset=latin1", True, False),
        ("text/plain", False, True),  # a GET with one: Jersey checks @Consumes on every method
        ("application/x-www-form-urlencoded", True, True),  # curl -d without -H
        ("application/vnd.x+json", True, True),
        ("text/json", True, True),
        ("*/*", True, True),
        ("application/*", True, True),
        (None, True, True),  # read as application/octet-stream
        (None, False, False),  # no entity
    ],
)
def test_content_type(content_type: str | None, body: bool, refused: bool) -> None:
    assert unsupported_content_type(content_type, body=body) is refused


@pytest.mark.parametrize(
    ("accept", "refused"),
    [
        (None, False),
        ("", False),
        ("application/json", False),
        ("Application/JSON;charset=utf-8", False),
        ("application/json;q=0", False),  # Jersey weighs no quality factors
        ("*/*", False),
        ("application/*", False),
        ("*/json", False),
        ("*; q=.2", False),
        ("text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2", False),  # HttpURLConnection
        ("application/xml, */*;q=0.1", False),
        ("application/xml", True),
        ("text/html", True),
        ("text/*", True),
        ("nonsense", True),
    ],
)
def test_accept(accept: str | None, refused: bool) -> None:
    assert not_acceptable(accept) is refused
