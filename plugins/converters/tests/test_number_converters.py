"""Number and boolean converters: Kafka's fixed-width byte formats, byte for byte."""

from __future__ import annotations

import math

import pytest
from copycat_converters import (
    BooleanConverter,
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    LongConverter,
    ShortConverter,
)

from plugin_api import (
    BOOLEAN_SCHEMA,
    INT32_SCHEMA,
    OPTIONAL_BOOLEAN_SCHEMA,
    OPTIONAL_FLOAT32_SCHEMA,
    OPTIONAL_FLOAT64_SCHEMA,
    OPTIONAL_INT16_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    STRING_SCHEMA,
    DataException,
)

# (converter, value, bytes Kafka's serializer writes): big-endian two's complement and
# IEEE 754 raw bits, written out by hand.
VECTORS = [
    (ShortConverter, 0, b"\x00\x00"),
    (ShortConverter, 1, b"\x00\x01"),
    (ShortConverter, -1, b"\xff\xff"),
    (ShortConverter, 32767, b"\x7f\xff"),
    (ShortConverter, -32768, b"\x80\x00"),
    (IntegerConverter, 1, b"\x00\x00\x00\x01"),
    (IntegerConverter, -2, b"\xff\xff\xff\xfe"),
    (IntegerConverter, 0x12345678, b"\x12\x34\x56\x78"),
    (IntegerConverter, -(2**31), b"\x80\x00\x00\x00"),
    (LongConverter, 1, b"\x00\x00\x00\x00\x00\x00\x00\x01"),
    (LongConverter, -1, b"\xff" * 8),
    (LongConverter, 2**63 - 1, b"\x7f" + b"\xff" * 7),
    (LongConverter, 1_700_000_000_000, b"\x00\x00\x01\x8b\xcf\xe5\x68\x00"),
    (FloatConverter, 1.0, b"\x3f\x80\x00\x00"),
    (FloatConverter, -2.5, b"\xc0\x20\x00\x00"),
    (FloatConverter, 0.0, b"\x00\x00\x00\x00"),
    (FloatConverter, math.inf, b"\x7f\x80\x00\x00"),
    (DoubleConverter, 1.0, b"\x3f\xf0\x00\x00\x00\x00\x00\x00"),
    (DoubleConverter, -2.0, b"\xc0\x00\x00\x00\x00\x00\x00\x00"),
    (DoubleConverter, 0.1, b"\x3f\xb9\x99\x99\x99\x99\x99\x9a"),
    (BooleanConverter, True, b"\x01"),
    (BooleanConverter, False, b"\x00"),
]

SCHEMAS = {
    ShortConverter: OPTIONAL_INT16_SCHEMA,
    IntegerConverter: OPTIONAL_INT32_SCHEMA,
    LongConverter: OPTIONAL_INT64_SCHEMA,
    FloatConverter: OPTIONAL_FLOAT32_SCHEMA,
    DoubleConverter: OPTIONAL_FLOAT64_SCHEMA,
    BooleanConverter: OPTIONAL_BOOLEAN_SCHEMA,
}


def configured(cls: type, is_key: bool | None = False):  # noqa: ANN201
    converter = cls()
    converter.configure({}, is_key)
    return converter


@pytest.mark.parametrize(("cls", "value", "expected"), VECTORS)
def test_bytes_match_kafka_serializers(cls: type, value: object, expected: bytes) -> None:
    converter = configured(cls)
    assert converter.from_connect_data("t", SCHEMAS[cls], value) == expected
    assert converter.to_connect_data("t", expected) == (SCHEMAS[cls], value)
    # The same bytes as a header converter.
    header = configured(cls, None)
    assert header.from_connect_header("t", "h", SCHEMAS[cls], value) == expected
    assert header.to_connect_header("t", "h", expected) == (SCHEMAS[cls], value)


@pytest.mark.parametrize("cls", list(SCHEMAS))
def test_null_is_a_tombstone_both_ways(cls: type) -> None:
    converter = configured(cls)
    assert converter.from_connect_data("t", None, None) is None
    assert converter.to_connect_data("t", None) == (SCHEMAS[cls], None)


@pytest.mark.parametrize(
    "cls", [ShortConverter, IntegerConverter, LongConverter, FloatConverter, DoubleConverter]
)
def test_wrong_length_is_a_data_exception(cls: type) -> None:
    with pytest.raises(DataException, match="size of data"):
        configured(cls).to_connect_data("t", b"\x00\x00\x00")


@pytest.mark.parametrize(
    ("cls", "value"),
    [
        (ShortConverter, 32768),
        (ShortConverter, "1"),
        (IntegerConverter, 2**31),
        (IntegerConverter, 1.5),
        (LongConverter, True),
        (DoubleConverter, "x"),
    ],
)
def test_bad_values_are_data_exceptions(cls: type, value: object) -> None:
    with pytest.raises(DataException):
        configured(cls).from_connect_data("t", None, value)


def test_number_converters_ignore_the_schema_like_kafka() -> None:
    assert (
        configured(IntegerConverter).from_connect_data("t", STRING_SCHEMA, 7) == b"\x00\x00\x00\x07"
    )


def test_float_is_rounded_to_single_precision() -> None:
    converter = configured(FloatConverter)
    data = converter.from_connect_data("t", None, 0.1)
    assert data == b"\x3d\xcc\xcc\xcd"
    assert converter.to_connect_data("t", data).value == pytest.approx(0.1, rel=1e-7)


def test_double_nan_round_trips() -> None:
    converter = configured(DoubleConverter)
    assert math.isnan(
        converter.to_connect_data("t", converter.from_connect_data("t", None, math.nan)).value
    )


def test_boolean_rejects_other_schemas_and_bytes() -> None:
    converter = configured(BooleanConverter)
    with pytest.raises(DataException, match="Invalid schema type for BooleanConverter: INT32"):
        converter.from_connect_data("t", INT32_SCHEMA, True)
    with pytest.raises(DataException, match="not compatible"):
        converter.from_connect_data("t", BOOLEAN_SCHEMA, 1)
    with pytest.raises(DataException, match="unexpected byte"):
        converter.to_connect_data("t", b"\x02")
    with pytest.raises(DataException, match="not 1"):
        converter.to_connect_data("t", b"\x00\x01")


def test_kafka_class_names_and_entry_points() -> None:
    from importlib.metadata import entry_points

    for cls in SCHEMAS:
        assert cls.KAFKA_CLASS_ALIASES == (f"org.apache.kafka.connect.converters.{cls.__name__}",)
    converters = {ep.name for ep in entry_points(group="copycat.converters")}
    headers = {ep.name for ep in entry_points(group="copycat.header_converters")}
    for cls in SCHEMAS:
        assert cls.__name__ in converters and cls.__name__ in headers
    assert "SimpleHeaderConverter" in headers


@pytest.mark.parametrize(
    ("converter", "schema", "value", "java"),
    [
        (LongConverter, OPTIONAL_INT32_SCHEMA, 1, "java.lang.Integer"),
        (IntegerConverter, OPTIONAL_INT64_SCHEMA, 1, "java.lang.Long"),
        (ShortConverter, OPTIONAL_INT32_SCHEMA, 1, "java.lang.Integer"),
        (DoubleConverter, OPTIONAL_FLOAT32_SCHEMA, 1.5, "java.lang.Float"),
        (FloatConverter, OPTIONAL_FLOAT64_SCHEMA, 1.5, "java.lang.Double"),
        (DoubleConverter, OPTIONAL_INT32_SCHEMA, 1, "java.lang.Integer"),
    ],
)
def test_a_value_its_schema_types_as_another_number_is_refused_as_kafka(
    converter: type[LongConverter], schema: object, value: object, java: str
) -> None:
    """Kafka's serializer casts the Java object, which the schema's type says, so a
    LongConverter refuses an INT32's Integer."""
    c = converter()
    c.configure({}, is_key=False)
    with pytest.raises(DataException) as refused:
        c.from_connect_data("t", schema, value)  # type: ignore[arg-type]
    assert str(refused.value).startswith(
        f"Failed to serialize to {c.TYPE_NAME} (was class {java}): "
    )


def test_a_value_with_no_or_a_matching_number_schema_is_written() -> None:
    c = LongConverter()
    c.configure({}, is_key=False)
    assert c.from_connect_data("t", None, 1) == b"\x00" * 7 + b"\x01"
    assert c.from_connect_data("t", OPTIONAL_INT64_SCHEMA, 1) == b"\x00" * 7 + b"\x01"
    assert c.from_connect_data("t", STRING_SCHEMA, 1) == b"\x00" * 7 + b"\x01"
