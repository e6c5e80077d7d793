"""plugin_api.parse_string: Kafka's Values.parseString, shared by header converters and SMTs.

Its full behaviour is tested with SimpleHeaderConverter (plugins/converters/tests) and
InsertHeader (plugins/transforms/tests); here, that plugins get it from plugin_api itself.
"""

from __future__ import annotations

import datetime

import plugin_api
from plugin_api import INT8_SCHEMA, STRING_SCHEMA, Date, SchemaBuilder, parse_string


def test_parse_string_is_public_and_one_function() -> None:
    assert "parse_string" in plugin_api.__all__
    assert plugin_api.parse_string is plugin_api.values.parse_string


def test_parse_string_infers_what_kafka_infers() -> None:
    assert parse_string(None) == (None, None)
    assert parse_string("null") == (None, None)
    assert parse_string("") == (STRING_SCHEMA, "")
    assert parse_string("[1, 2]") == (SchemaBuilder.array(INT8_SCHEMA).build(), [1, 2])
    assert parse_string("1e3").value == 1000
    assert parse_string("12:34:56") == (INT8_SCHEMA, 12)
    assert parse_string("2024-13-01") == (Date.SCHEMA, datetime.date(2025, 1, 1))
    assert parse_string("TRUE") == (STRING_SCHEMA, "TRUE")
