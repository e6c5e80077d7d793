"""validate_offset_format: what a source partition or offset may hold to be stored."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from plugin_api import DataException, validate_offset_format


@pytest.mark.parametrize(
    "data",
    [
        None,
        {},
        {"s": "x", "i": 2**63 - 1, "neg": -(2**63), "f": 1.5, "b": True, "none": None},
    ],
)
def test_maps_of_str_to_primitives_pass(data: Any) -> None:
    validate_offset_format(data)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (5, "Offsets must be specified as a Map, not int"),
        ([1], "Offsets must be specified as a Map, not list"),
        ({1: 1}, "Offsets may only use String keys, but key 1 is int"),
        ({"n": [1, 2]}, "but field n contains ARRAY"),
        ({"n": (1,)}, "but field n contains ARRAY"),
        ({"m": {"a": 1}}, "but field m contains MAP"),
        ({"n": float("nan")}, "but field n contains nan, which is not a finite number"),
        ({"n": float("-inf")}, "but field n contains -inf, which is not a finite number"),
        ({"n": 2**63}, "but field n contains class java.math.BigInteger"),
        ({"ts": datetime.datetime(2026, 1, 1)}, "but field ts contains class datetime.datetime"),
        ({"raw": b"\x00"}, "but field raw contains BYTES, which the offsets store (JSON)"),
        ({"s": {1, 2}}, "but field s contains class set"),
    ],
)
def test_what_cannot_be_stored_is_refused_naming_the_field(data: Any, message: str) -> None:
    with pytest.raises(DataException) as refused:
        validate_offset_format(data)
    assert message in str(refused.value)
