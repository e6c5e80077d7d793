"""A sink offsets PATCH body parsed as Kafka's SinkUtils.parseSinkConnectorOffsets does: a
partition is a Java int, an offset a Java long, either as a number or a string of digits;
anything else is a 400 with Kafka's message, naming the value."""

from __future__ import annotations

from typing import Any

import pytest

from core.herder import BadRequestError
from core.sink_offsets import parse_sink_offsets


def _entry(partition: Any = 0, offset: Any = 1) -> dict[str, Any]:
    return {
        "partition": {"kafka_topic": "t", "kafka_partition": partition},
        "offset": {"kafka_offset": offset},
    }


def test_numbers_and_strings_of_digits_up_to_javas_ranges() -> None:
    parsed = parse_sink_offsets(
        [_entry(2**31 - 1, 2**63 - 1), _entry("3", "+7"), _entry(1, "0012")]
    )
    assert parsed == {("t", 2**31 - 1): 2**63 - 1, ("t", 3): 7, ("t", 1): 12}


@pytest.mark.parametrize(
    ("offset", "shown"),
    [
        (12345678901234567890123, "12345678901234567890123"),
        (2**63, "9223372036854775808"),
        ("12345678901234567890123", "12345678901234567890123"),
        (1.5, "1.5"),
        (True, "true"),
        (None, "null"),
        ("1_000", "1_000"),
        (" 1", " 1"),
        ("x", "x"),
    ],
)
def test_an_offset_that_is_no_java_long_is_refused_naming_it(offset: Any, shown: str) -> None:
    with pytest.raises(BadRequestError) as caught:
        parse_sink_offsets([_entry(offset=offset)])
    assert str(caught.value) == (
        f"Failed to parse the following Kafka offset value in the provided offsets: "
        f"'{shown}'. Offset values for sink connectors need to be integers."
    )


@pytest.mark.parametrize("partition", [2**31, -(2**31) - 1, 12345678901234567890123, "x", 0.5])
def test_a_partition_that_is_no_java_int_is_refused_naming_it(partition: Any) -> None:
    with pytest.raises(BadRequestError) as caught:
        parse_sink_offsets([_entry(partition=partition)])
    assert str(caught.value).startswith(
        f"Failed to parse the following Kafka partition value in the provided offsets: "
        f"'{partition}'. Partition values"
    )


def test_a_null_partition_number_has_kafkas_own_message() -> None:
    with pytest.raises(BadRequestError, match="Kafka partitions must be valid numbers"):
        parse_sink_offsets([_entry(partition=None)])
