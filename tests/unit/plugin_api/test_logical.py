"""Logical types: Kafka-compatible encodings and exact round trips."""

from __future__ import annotations

import datetime
import decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from plugin_api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from plugin_api.errors import DataException

UTC = datetime.UTC


def test_decimal_schema_shape() -> None:
    schema = Decimal.schema(2)
    assert schema.type is Type.BYTES
    assert schema.name == "org.apache.kafka.connect.data.Decimal" == Decimal.LOGICAL_NAME
    assert schema.parameters == {Decimal.SCALE_FIELD: "2"}
    assert schema.version == 1
    assert Decimal.builder(2).optional().build().optional


@pytest.mark.parametrize(
    ("value", "scale", "encoded"),
    [
        ("0", 0, "00"),
        ("127", 0, "7f"),
        ("128", 0, "0080"),
        ("-128", 0, "80"),
        ("-129", 0, "ff7f"),
        ("1.56", 2, "009c"),  # unscaled 156, as Java's BigInteger.toByteArray
        ("-1.56", 2, "ff64"),
        ("-0.01", 2, "ff"),
        ("1.5", 2, "0096"),  # padded to the scale exactly
    ],
)
def test_decimal_encoding_matches_kafka(value: str, scale: int, encoded: str) -> None:
    schema = Decimal.schema(scale)
    raw = Decimal.from_logical(schema, decimal.Decimal(value))
    assert raw.hex() == encoded
    back = Decimal.to_logical(schema, raw)
    assert back == decimal.Decimal(value)
    assert back.as_tuple().exponent == -scale


@given(st.integers(min_value=-(10**40), max_value=10**40), st.integers(min_value=0, max_value=12))
def test_decimal_round_trip_is_exact(unscaled: int, scale: int) -> None:
    value = decimal.Decimal(unscaled).scaleb(-scale, decimal.Context(prec=100))
    schema = Decimal.schema(scale)
    assert Decimal.to_logical(schema, Decimal.from_logical(schema, value)) == value


def test_decimal_errors() -> None:
    with pytest.raises(DataException, match="more decimal places"):
        Decimal.from_logical(Decimal.schema(1), decimal.Decimal("1.25"))
    with pytest.raises(DataException, match="finite"):
        Decimal.from_logical(Decimal.schema(1), decimal.Decimal("NaN"))
    with pytest.raises(DataException, match="schema does not match"):
        Decimal.from_logical(Schema.BYTES_SCHEMA, decimal.Decimal("1"))
    with pytest.raises(DataException, match="scale parameter not found"):
        Decimal.to_logical(SchemaBuilder.bytes_().name(Decimal.LOGICAL_NAME).build(), b"\x01")


def test_date() -> None:
    assert Date.SCHEMA == Date.schema() == Date.builder().build()
    assert Date.SCHEMA.type is Type.INT32 and Date.SCHEMA.version == 1
    assert Date.SCHEMA.name == "org.apache.kafka.connect.data.Date"
    assert Date.from_logical(Date.SCHEMA, datetime.date(1970, 1, 2)) == 1
    assert Date.from_logical(Date.SCHEMA, datetime.date(1969, 12, 31)) == -1
    assert Date.to_logical(Date.SCHEMA, 19723) == datetime.date(2024, 1, 1)
    assert Date.from_logical(Date.SCHEMA, datetime.datetime(2024, 1, 1, tzinfo=UTC)) == 19723
    with pytest.raises(DataException, match="time fields"):
        Date.from_logical(Date.SCHEMA, datetime.datetime(2024, 1, 1, 12))


def test_time() -> None:
    assert (
        Time.SCHEMA.type is Type.INT32 and Time.SCHEMA.name == "org.apache.kafka.connect.data.Time"
    )
    t = datetime.time(13, 14, 15, 678_000)
    ms = Time.from_logical(Time.SCHEMA, t)
    assert ms == ((13 * 60 + 14) * 60 + 15) * 1000 + 678
    assert Time.to_logical(Time.SCHEMA, ms) == t
    with pytest.raises(DataException):
        Time.to_logical(Time.SCHEMA, 86_400_000)


def test_timestamp() -> None:
    assert Timestamp.SCHEMA.type is Type.INT64 and Timestamp.SCHEMA.version == 1
    aware = datetime.datetime(2024, 5, 6, 7, 8, 9, 123_000, tzinfo=UTC)
    ms = Timestamp.from_logical(Timestamp.SCHEMA, aware)
    assert ms == 1714979289123
    assert Timestamp.to_logical(Timestamp.SCHEMA, ms) == aware
    assert Timestamp.to_logical(Timestamp.SCHEMA, ms).tzinfo is not None
    naive = aware.replace(tzinfo=None)
    assert Timestamp.from_logical(Timestamp.SCHEMA, naive) == ms  # naive = UTC
    plus2 = aware.astimezone(datetime.timezone(datetime.timedelta(hours=2)))
    assert Timestamp.from_logical(Timestamp.SCHEMA, plus2) == ms
    assert (
        Timestamp.from_logical(
            Timestamp.SCHEMA, datetime.datetime(1969, 12, 31, 23, 59, 59, 999_000)
        )
        == -1
    )


@pytest.mark.parametrize(
    ("logical", "value", "unit"),
    [
        (Timestamp, 253402300800000, "milliseconds"),  # 10000-01-01T00:00:00Z
        (Timestamp, -62135596800001, "milliseconds"),  # the last millisecond of year 0
        (Timestamp, 1_700_000_000_000_000, "milliseconds"),  # microseconds taken for millis
        (Timestamp, 2**63 - 1, "milliseconds"),  # past even timedelta's range
        (Date, 2932897, "days"),  # 10000-01-01
        (Date, -(2**31), "days"),
    ],
)
def test_dates_beyond_pythons_datetime_are_a_data_exception_naming_the_value(
    logical: type[Date] | type[Timestamp], value: int, unit: str
) -> None:
    """Kafka's java.util.Date holds them; Python's datetime stops at years 1 and 9999, so the
    record fails with the value and the reason, not a bare OverflowError."""
    with pytest.raises(DataException) as caught:
        logical.to_logical(logical.SCHEMA, value)
    assert str(caught.value) == (
        f"{logical.__name__} value {value} ({unit} since 1970-01-01) is outside the years 1 to "
        "9999 that Copycat can represent (Python's datetime)"
    )
    # The range's own ends still convert.
    assert Timestamp.to_logical(Timestamp.SCHEMA, 253402300799999).year == 9999
    assert Timestamp.to_logical(Timestamp.SCHEMA, -62135596800000).year == 1
    assert Date.to_logical(Date.SCHEMA, 2932896) == datetime.date(9999, 12, 31)


@given(st.integers(min_value=-(2**40), max_value=2**40))
def test_timestamp_round_trip(ms: int) -> None:
    assert (
        Timestamp.from_logical(Timestamp.SCHEMA, Timestamp.to_logical(Timestamp.SCHEMA, ms)) == ms
    )


def test_logical_values_are_validated_by_python_type() -> None:
    schema = (
        SchemaBuilder.struct()
        .field("price", Decimal.schema(2))
        .field("day", Date.SCHEMA)
        .field("at", Timestamp.builder().optional())
        .build()
    )
    row = Struct(schema).put("price", decimal.Decimal("9.99")).put("day", datetime.date(2024, 1, 1))
    row.put("at", datetime.datetime.now(UTC))
    row.validate()
    with pytest.raises(DataException, match='"price".*decimal.Decimal'):
        row.put("price", 9.99)
    with pytest.raises(DataException, match='"day"'):
        row.put("day", 19723)
    with pytest.raises(DataException, match='"at"'):
        row.put("at", datetime.date(2024, 1, 1))
