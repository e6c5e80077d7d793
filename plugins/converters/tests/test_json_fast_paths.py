"""The orjson paths write and read exactly what the stdlib paths do (which the byte-exact
envelope tests pin to Kafka's output), for every JSON-native tree."""

from __future__ import annotations

import json

import pytest
from copycat_converters import JsonConverter, _jsontext
from copycat_converters._jsontext import dumps, dumps_bytes
from hypothesis import given, settings
from hypothesis import strategies as st

from plugin_api import DataException

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
# The only doubles the converter leaves to the encoder: Java writes the others with an
# exponent and they go through the exact (Raw) path.
PLAIN_DOUBLES = st.floats(min_value=1e-3, max_value=1e7, exclude_max=True) | st.floats(
    min_value=-1e7, max_value=-1e-3, exclude_min=True
)
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)  # no lone surrogates
SCALARS = st.none() | st.booleans() | INT64 | PLAIN_DOUBLES | TEXT
TREES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(TEXT, inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(TREES)
def test_orjson_writes_the_stdlib_bytes(tree: object) -> None:
    assert _jsontext._orjson is not None
    assert dumps_bytes(tree, False) == dumps(tree, False).encode("utf-8")


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(TEXT, SCALARS, max_size=8))
def test_schemaless_converter_reads_and_writes_as_without_orjson(document: dict) -> None:
    converter = JsonConverter()
    converter.configure({"schemas.enable": "false"}, False)
    data = json.dumps(document, ensure_ascii=False).encode()
    fast = converter.to_connect_data("t", data)
    fast_out = converter.from_connect_data("t", None, fast.value)
    saved, _jsontext._orjson = _jsontext._orjson, None
    try:
        slow = converter.to_connect_data("t", data)
        slow_out = converter.from_connect_data("t", None, slow.value)
    finally:
        _jsontext._orjson = saved
    assert fast == slow
    assert fast_out == slow_out


def test_control_characters_are_escaped_with_upper_case_hex_as_jackson_does() -> None:
    assert dumps_bytes({"a": "\x1f\x00\\u001f"}, False) == b'{"a":"\\u001F\\u0000\\\\u001f"}'


def test_a_lone_surrogate_is_a_data_exception_on_either_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    converter = JsonConverter()
    converter.configure({"schemas.enable": "false"}, False)
    with pytest.raises(DataException, match="serialization error"):
        converter.from_connect_data("t", None, {"a": "\ud800"})
    monkeypatch.setattr(_jsontext, "_orjson", None)
    with pytest.raises(DataException, match="serialization error"):
        converter.from_connect_data("t", None, {"a": "\ud800"})


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("data", [b"{not json", b"NaN", b"[1,", b"\xff\xfe", b"[Infinity]"])
def test_bad_input_still_gets_the_converters_error(
    data: bytes, fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not fast:
        monkeypatch.setattr(_jsontext, "_orjson", None)
    converter = JsonConverter()
    converter.configure({"schemas.enable": "false"}, False)
    with pytest.raises(DataException, match="serialization error"):
        converter.to_connect_data("t", data)


def test_whitespace_only_input_is_still_null() -> None:
    converter = JsonConverter()
    converter.configure({"schemas.enable": "false"}, False)
    assert converter.to_connect_data("t", b"  \n").value is None
