"""Reading Kafka-style .properties files and JSON connector files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_api.errors import ConfigException

from core.properties import (
    PropertiesError,
    load_connector_file,
    load_connector_request,
    load_properties,
    parse_properties,
)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_separators_comments_and_blank_lines() -> None:
    text = (
        "# a comment\n"
        "! also a comment\n"
        "\n"
        "   \t\n"
        "a=1\n"
        "b: 2\n"
        "c 3\n"
        "   d   =   4\n"
        "e\t:\tfive six  \n"
        "f\n"
        "g=\n"
        "h==x\n"
    )
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "4",
        "e": "five six  ",  # trailing whitespace is part of the value, as in Java
        "f": "",
        "g": "",
        "h": "=x",
    }


def test_separator_characters_inside_value_are_literal() -> None:
    props = parse_properties("url=jdbc:postgresql://db:5432/x?a=b\nlisteners = http://:8083\n")
    assert props == {"url": "jdbc:postgresql://db:5432/x?a=b", "listeners": "http://:8083"}


def test_hash_not_at_line_start_is_not_a_comment() -> None:
    assert parse_properties("topic=a#b\n  # indented comment\n") == {"topic": "a#b"}


def test_line_endings_crlf_cr_and_form_feed_is_whitespace() -> None:
    assert parse_properties("a=1\r\nb=2\rc=3\n\fd=4") == {"a": "1", "b": "2", "c": "3", "d": "4"}


def test_continuation_lines_drop_leading_whitespace() -> None:
    text = "plugin.path=/a,\\\n          /b,\\\n\t/c\nnext=x\n"
    assert parse_properties(text) == {"plugin.path": "/a,/b,/c", "next": "x"}


def test_even_number_of_backslashes_does_not_continue() -> None:
    assert parse_properties("a=c:\\\\\nb=2\n") == {"a": "c:\\", "b": "2"}


def test_continuation_line_starting_with_hash_is_value_not_comment() -> None:
    assert parse_properties("a=x\\\n  #y\n") == {"a": "x#y"}


def test_comment_ending_in_backslash_does_not_swallow_next_line() -> None:
    assert parse_properties("# comment \\\na=1\n") == {"a": "1"}


def test_continuation_on_last_line_is_dropped() -> None:
    assert parse_properties("a=1\\") == {"a": "1"}


def test_escapes() -> None:
    text = (
        "tab=a\\tb\n"
        "nl=a\\nb\n"
        "cr=a\\rb\n"
        "ff=a\\fb\n"
        "bs=a\\\\b\n"
        "uni=\\u00e9t\\u00C9\n"
        "other=\\q\\#\n"
        "key\\=with\\:seps\\ and\\ spaces = v\n"
        "lead=\\  spaced\n"
        "emoji=\\uD83D\\uDE00\n"
    )
    assert parse_properties(text) == {
        "tab": "a\tb",
        "nl": "a\nb",
        "cr": "a\rb",
        "ff": "a\fb",
        "bs": "a\\b",
        "uni": "étÉ",
        "other": "q#",
        "key=with:seps and spaces": "v",
        "lead": "  spaced",
        "emoji": "\U0001f600",
    }


def test_duplicate_keys_last_wins() -> None:
    assert parse_properties("a=1\nb=2\na=3\n") == {"b": "2", "a": "3"}


@pytest.mark.parametrize("line", ["=value", ": value", "  = value"])
def test_empty_key_is_an_error_with_line_number(tmp_path: Path, line: str) -> None:
    path = _write(tmp_path, "worker.properties", "# header\n\na=1\n" + line + "\n")
    with pytest.raises(PropertiesError) as info:
        load_properties(path)
    err = info.value
    assert err.line_no == 4
    assert str(err) == f"{path}:4: malformed line '{line.strip()}': empty key"
    assert isinstance(err, ConfigException)


def test_error_message_format_uses_the_given_path() -> None:
    with pytest.raises(
        PropertiesError, match=r"^worker\.properties:12: malformed line '=value': empty key$"
    ):
        parse_properties("\n" * 11 + "=value\n", "worker.properties")


def test_line_number_of_continued_line_is_its_first_line() -> None:
    with pytest.raises(PropertiesError) as info:
        parse_properties("a=1\n\\\n  =x\n", "f.properties")
    assert info.value.line_no == 2


@pytest.mark.parametrize("value", ["\\u12G4", "\\u12", "\\u"])
def test_invalid_unicode_escape_is_an_error(value: str) -> None:
    with pytest.raises(PropertiesError) as info:
        parse_properties(f"ok=1\nbad={value}\n", "c.properties")
    assert info.value.line_no == 2
    assert "c.properties:2: malformed line" in str(info.value)
    assert "\\uxxxx" in str(info.value)


def test_long_malformed_line_is_shortened_in_message() -> None:
    with pytest.raises(PropertiesError) as info:
        parse_properties("=" + "x" * 500)
    assert len(str(info.value)) < 150


def test_missing_file_is_a_properties_error(tmp_path: Path) -> None:
    with pytest.raises(PropertiesError) as info:
        load_properties(tmp_path / "nope.properties")
    assert info.value.line_no is None
    assert "nope.properties: cannot read file" in str(info.value)


def test_latin1_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "legacy.properties"
    path.write_bytes("name=caf\u00e9\n".encode("latin-1"))
    assert load_properties(path) == {"name": "café"}


def test_utf8_file_is_read(tmp_path: Path) -> None:
    assert load_properties(_write(tmp_path, "u.properties", "name=caf\u00e9 ☕\n")) == {
        "name": "café ☕"
    }


def test_connector_properties_file(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "sink.properties", "name=local-file-sink\nconnector.class=FileStreamSink\n"
    )
    assert load_connector_file(path) == {
        "name": "local-file-sink",
        "connector.class": "FileStreamSink",
    }


def test_connector_json_flat_form_converts_values_to_strings(tmp_path: Path) -> None:
    document = {
        "name": "s",
        "connector.class": "FileStreamSource",
        "tasks.max": 2,
        "errors.log.enable": True,
        "x.ratio": 0.5,
        "y": False,
    }
    path = _write(tmp_path, "s.json", json.dumps(document))
    assert load_connector_file(path) == {
        "name": "s",
        "connector.class": "FileStreamSource",
        "tasks.max": "2",
        "errors.log.enable": "true",
        "x.ratio": "0.5",
        "y": "false",
    }


def test_connector_json_numbers_keep_their_spelling(tmp_path: Path) -> None:
    path = _write(tmp_path, "n.json", '{"name": "n", "big": 12345678901234567890, "e": 1e3}')
    assert load_connector_file(path) == {"name": "n", "big": "12345678901234567890", "e": "1e3"}


def test_connector_json_rest_form_merges_name(tmp_path: Path) -> None:
    document = {"name": "s", "config": {"connector.class": "FileStreamSink", "topics": "t"}}
    path = _write(tmp_path, "s.JSON", json.dumps(document))
    assert load_connector_file(path) == {
        "name": "s",
        "connector.class": "FileStreamSink",
        "topics": "t",
    }
    assert load_connector_request(path) == (load_connector_file(path), None)


def test_connector_json_rest_form_with_matching_name_in_config(tmp_path: Path) -> None:
    path = _write(tmp_path, "s.json", '{"name": "s", "config": {"name": "s", "a": "b"}}')
    assert load_connector_file(path) == {"name": "s", "a": "b"}


def test_connector_json_rest_form_without_top_level_name(tmp_path: Path) -> None:
    path = _write(tmp_path, "s.json", '{"config": {"name": "s", "a": "b"}}')
    assert load_connector_file(path) == {"name": "s", "a": "b"}


def test_connector_json_rest_form_name_mismatch(tmp_path: Path) -> None:
    path = _write(tmp_path, "s.json", '{"name": "s", "config": {"name": "other"}}')
    with pytest.raises(PropertiesError, match="does not match"):
        load_connector_file(path)


def test_connector_json_initial_state(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "s.json", '{"name": "s", "config": {"a": "b"}, "initial_state": "paused"}'
    )
    assert load_connector_request(path) == ({"name": "s", "a": "b"}, "PAUSED")
    bad = _write(tmp_path, "bad.json", '{"name": "s", "config": {}, "initial_state": "sleeping"}')
    with pytest.raises(PropertiesError, match="initial_state"):
        load_connector_request(bad)


def test_connector_json_rest_form_rejects_unknown_fields(tmp_path: Path) -> None:
    path = _write(tmp_path, "s.json", '{"name": "s", "config": {}, "tasks.max": "2"}')
    with pytest.raises(PropertiesError, match="tasks.max"):
        load_connector_file(path)


def test_connector_json_invalid_reports_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "broken.json", '{\n  "name": "s",\n  "topics": "t",,\n}\n')
    with pytest.raises(PropertiesError) as info:
        load_connector_file(path)
    assert info.value.line_no == 3
    assert str(info.value).startswith(f"{path}:3: invalid JSON")


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("[1, 2]", "must hold an object"),
        ('{"name": "s", "topics": ["a", "b"]}', "'topics' must be a string"),
        ('{"name": "s", "x": null}', "'x' must be a string, number or boolean, not null"),
        ('{"name": "s", "config": {"x": {"y": 1}}}', "not an object"),
    ],
)
def test_connector_json_rejects_non_scalar_values(tmp_path: Path, text: str, fragment: str) -> None:
    with pytest.raises(PropertiesError, match=fragment):
        load_connector_file(_write(tmp_path, "c.json", text))


def test_flat_json_with_string_config_key_stays_flat(tmp_path: Path) -> None:
    path = _write(tmp_path, "c.json", '{"name": "s", "config": "not-an-object"}')
    assert load_connector_file(path) == {"name": "s", "config": "not-an-object"}
