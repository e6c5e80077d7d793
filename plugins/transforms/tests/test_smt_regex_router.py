from __future__ import annotations

import pytest
from copycat_transforms import RegexRouter
from plugin_api.testing import apply_transform

from plugin_api import ConfigException, SourceRecord


def route(regex: str, replacement: str, topic: str) -> str:
    record = SourceRecord(None, None, topic, 0, None, None, None, None)
    out = apply_transform(RegexRouter, {"regex": regex, "replacement": replacement}, record)
    assert out is not None
    return out.topic


@pytest.mark.parametrize(
    ("regex", "replacement", "topic", "expected"),
    [
        ("(.*)", "prefix-$1", "orig", "prefix-orig"),
        ("(.*)", "$1-suffix", "orig", "orig-suffix"),
        ("(.*)-(\\d\\d\\d\\d\\d\\d\\d\\d)", "$1", "index-20160117", "index"),
        ("(.*)", "static", "orig", "static"),
        ("mysql\\.(.*)", "processed.$1", "mysql.customers", "processed.customers"),
        ("mysql\\.(.*)", "processed.$1", "postgres.customers", "postgres.customers"),
        ("(?<db>\\w+)\\.(?<table>\\w+)", "${table}_from_${db}", "shop.orders", "orders_from_shop"),
        ("(.*)", "cost\\$1", "x", "cost$1"),
        ("\\Qa.b\\E(.*)", "$1", "a.bc", "c"),
        # Java reads "$10" as group 1 then "0" when there is no group 10.
        ("(a)", "$10", "a", "a0"),
    ],
)
def test_routes_like_java(regex, replacement, topic, expected) -> None:
    assert route(regex, replacement, topic) == expected


def test_partial_match_is_not_routed() -> None:
    assert route("mysql", "x", "mysql.customers") == "mysql.customers"


def test_other_fields_untouched() -> None:
    record = SourceRecord({"p": 1}, {"o": 2}, "a", 3, None, "k", None, "v", 7, [("h", "1")])
    out = apply_transform(RegexRouter, {"regex": "a", "replacement": "b"}, record)
    assert (out.topic, out.kafka_partition, out.key, out.value, out.timestamp) == (
        "b",
        3,
        "k",
        "v",
        7,
    )
    assert out.source_offset == {"o": 2}
    assert len(out.headers) == 1


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"replacement": "x"}, "regex"),
        ({"regex": "(", "replacement": "x"}, "regex"),
        ({"regex": "a"}, "replacement"),
        ({"regex": "(a)", "replacement": "$2"}, "replacement"),
        ({"regex": "(a)", "replacement": "${nope}"}, "replacement"),
        ({"regex": "(a)", "replacement": "x$"}, "replacement"),
    ],
)
def test_bad_config(config, key) -> None:
    with pytest.raises(ConfigException) as info:
        RegexRouter().configure(config)
    assert info.value.name == key


def test_validate_reports_bad_regex() -> None:
    results = {
        r.name: r for r in RegexRouter().config().validate({"regex": "(", "replacement": "x"})
    }
    assert results["regex"].error_messages
    assert not results["replacement"].error_messages


@pytest.mark.parametrize(
    ("regex", "reason"),
    [  # java.util.regex.PatternSyntaxException's messages, as Kafka Connect 4.1.1 gave them
        ("\\", "Unexpected internal error near index 1\n\\"),
        ("a{2,1}", "Illegal repetition range near index 5\na{2,1}\n     ^"),
    ],
)
def test_a_regex_java_refuses_is_worded_as_java(regex: str, reason: str) -> None:
    errors = {
        r.name: r.error_messages
        for r in RegexRouter().config().validate({"regex": regex, "replacement": "x"})
    }
    assert errors["regex"] == [
        f"Invalid value {regex} for configuration regex: Invalid regex: {reason}"
    ]
