"""Kafka Connect's logical types (re-exported by :mod:`plugin_api.data`).

A logical type is a schema name on a physical type. The Python value of a
logical field is the logical object (``decimal.Decimal``, ``datetime.date``,
``datetime.time``, ``datetime.datetime``); converters call ``from_logical`` /
``to_logical`` to move between it and the physical encoding, which matches
Kafka Connect byte for byte.
"""

from __future__ import annotations

import datetime
import decimal

from plugin_api._builder import SchemaBuilder
from plugin_api._schema import LOGICAL_VALUE_TYPES, Schema
from plugin_api.errors import DataException

_EPOCH_DATE = datetime.date(1970, 1, 1)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_ONE_MS = datetime.timedelta(milliseconds=1)
_MS_PER_DAY = 24 * 60 * 60 * 1000

# Every logical schema Kafka Connect defines carries version 1.
LOGICAL_SCHEMA_VERSION = 1


def _check_schema(schema: Schema, logical_name: str, what: str) -> None:
    if schema.name != logical_name:
        raise DataException(
            f"Requested conversion of {what} object but the schema does not match "
            f"(expected {logical_name}, got {schema.name})"
        )


def _beyond_python(what: str, value: int, unit: str) -> str:
    """The error of a Date or Timestamp outside the years 1-9999 that Python's datetime
    holds (Kafka's java.util.Date holds about 292 million years either side of 1970)."""
    return (
        f"{what} value {value} ({unit} since 1970-01-01) is outside the years 1 to 9999 that "
        "Copycat can represent (Python's datetime)"
    )


class Decimal:
    """Arbitrary-precision decimal: BYTES holding the big-endian two's-complement unscaled value."""

    LOGICAL_NAME = "org.apache.kafka.connect.data.Decimal"
    SCALE_FIELD = "scale"

    @classmethod
    def builder(cls, scale: int) -> SchemaBuilder:
        """Return a builder for a Decimal schema with ``scale`` digits after the point."""
        return (
            SchemaBuilder.bytes_()
            .name(cls.LOGICAL_NAME)
            .parameter(cls.SCALE_FIELD, str(scale))
            .version(LOGICAL_SCHEMA_VERSION)
        )

    @classmethod
    def schema(cls, scale: int) -> Schema:
        """Return a required Decimal schema with ``scale``."""
        return cls.builder(scale).build()

    @classmethod
    def scale_of(cls, schema: Schema) -> int:
        """Return the scale parameter of a Decimal schema.

        Raises:
            DataException: If the parameter is missing or not an integer.
        """
        params = schema.parameters or {}
        raw = params.get(cls.SCALE_FIELD)
        if raw is None:
            raise DataException("Invalid Decimal schema: scale parameter not found.")
        try:
            return int(raw)
        except ValueError as exc:
            raise DataException(
                f"Invalid Decimal schema: scale parameter {raw!r} is not an integer"
            ) from exc

    @classmethod
    def from_logical(cls, schema: Schema, value: decimal.Decimal) -> bytes:
        """Encode ``value`` as the unscaled big-endian two's-complement integer.

        A value with fewer decimal places than the scale is padded exactly;
        one that would lose digits is rejected rather than rounded.

        Raises:
            DataException: If the schema is not Decimal, or ``value`` cannot be
                represented exactly at the schema's scale.
        """
        _check_schema(schema, cls.LOGICAL_NAME, "Decimal")
        scale = cls.scale_of(schema)
        if not isinstance(value, decimal.Decimal) or not value.is_finite():
            raise DataException(f"Decimal value must be a finite decimal.Decimal, got {value!r}")
        sign, digits, exponent = value.as_tuple()
        unscaled: int = int("".join(map(str, digits))) if digits else 0
        shift = int(exponent) + scale
        factor: int = 10 ** abs(shift)
        if shift >= 0:
            unscaled *= factor
        else:
            unscaled, remainder = divmod(unscaled, factor)
            if remainder:
                raise DataException(
                    f"Decimal value {value} has more decimal places than the schema's scale {scale}"
                )
        if sign:
            unscaled = -unscaled
        magnitude = unscaled if unscaled >= 0 else ~unscaled
        return unscaled.to_bytes(magnitude.bit_length() // 8 + 1, "big", signed=True)

    @classmethod
    def to_logical(cls, schema: Schema, value: bytes | bytearray | memoryview) -> decimal.Decimal:
        """Decode the unscaled bytes into an exact ``decimal.Decimal`` at the schema's scale."""
        _check_schema(schema, cls.LOGICAL_NAME, "Decimal")
        scale = cls.scale_of(schema)
        unscaled = int.from_bytes(bytes(value), "big", signed=True)
        digits = tuple(int(d) for d in str(abs(unscaled)))
        return decimal.Decimal((1 if unscaled < 0 else 0, digits, -scale))


class Date:
    """A calendar date: INT32 days since the Unix epoch; Python value ``datetime.date``."""

    LOGICAL_NAME = "org.apache.kafka.connect.data.Date"
    SCHEMA: Schema

    @classmethod
    def builder(cls) -> SchemaBuilder:
        """Return a builder for the Date schema."""
        return SchemaBuilder.int32().name(cls.LOGICAL_NAME).version(LOGICAL_SCHEMA_VERSION)

    @classmethod
    def schema(cls) -> Schema:
        """Return the required Date schema."""
        return cls.SCHEMA

    @classmethod
    def from_logical(cls, schema: Schema, value: datetime.date) -> int:
        """Return the days since the epoch.

        Raises:
            DataException: If ``value`` is a datetime that is not midnight (UTC).
        """
        _check_schema(schema, cls.LOGICAL_NAME, "Date")
        if isinstance(value, datetime.datetime):
            if value.tzinfo is not None:
                value = value.astimezone(datetime.UTC)
            if value.time() != datetime.time(0):
                raise DataException(
                    f"Kafka Connect Date type should not have any time fields set: {value}"
                )
            value = value.date()
        if not isinstance(value, datetime.date):
            raise DataException(f"Date value must be a datetime.date, got {value!r}")
        return (value - _EPOCH_DATE).days

    @classmethod
    def to_logical(cls, schema: Schema, value: int) -> datetime.date:
        """Return the date ``value`` days after the epoch."""
        _check_schema(schema, cls.LOGICAL_NAME, "Date")
        try:
            return _EPOCH_DATE + datetime.timedelta(days=value)
        except OverflowError:
            raise DataException(_beyond_python("Date", value, "days")) from None


class Time:
    """A time of day: INT32 milliseconds since midnight; Python value ``datetime.time``.

    Sub-millisecond precision is truncated; a time zone on the value is ignored.
    """

    LOGICAL_NAME = "org.apache.kafka.connect.data.Time"
    SCHEMA: Schema

    @classmethod
    def builder(cls) -> SchemaBuilder:
        """Return a builder for the Time schema."""
        return SchemaBuilder.int32().name(cls.LOGICAL_NAME).version(LOGICAL_SCHEMA_VERSION)

    @classmethod
    def schema(cls) -> Schema:
        """Return the required Time schema."""
        return cls.SCHEMA

    @classmethod
    def from_logical(cls, schema: Schema, value: datetime.time) -> int:
        """Return milliseconds since midnight."""
        _check_schema(schema, cls.LOGICAL_NAME, "Time")
        if not isinstance(value, datetime.time):
            raise DataException(f"Time value must be a datetime.time, got {value!r}")
        return (
            (value.hour * 60 + value.minute) * 60 + value.second
        ) * 1000 + value.microsecond // 1000

    @classmethod
    def to_logical(cls, schema: Schema, value: int) -> datetime.time:
        """Return the time ``value`` milliseconds after midnight.

        Raises:
            DataException: If ``value`` is outside one day.
        """
        _check_schema(schema, cls.LOGICAL_NAME, "Time")
        if not 0 <= value < _MS_PER_DAY:
            raise DataException(
                "Time values must use number of milliseconds greater than 0 and less than 86400000"
            )
        seconds, ms = divmod(value, 1000)
        minutes, second = divmod(seconds, 60)
        hour, minute = divmod(minutes, 60)
        return datetime.time(hour, minute, second, ms * 1000)


class Timestamp:
    """An instant: INT64 milliseconds since the epoch; Python value ``datetime.datetime``.

    ``to_logical`` returns UTC-aware datetimes; naive datetimes are treated as UTC.
    """

    LOGICAL_NAME = "org.apache.kafka.connect.data.Timestamp"
    SCHEMA: Schema

    @classmethod
    def builder(cls) -> SchemaBuilder:
        """Return a builder for the Timestamp schema."""
        return SchemaBuilder.int64().name(cls.LOGICAL_NAME).version(LOGICAL_SCHEMA_VERSION)

    @classmethod
    def schema(cls) -> Schema:
        """Return the required Timestamp schema."""
        return cls.SCHEMA

    @classmethod
    def from_logical(cls, schema: Schema, value: datetime.datetime) -> int:
        """Return epoch milliseconds (floored)."""
        _check_schema(schema, cls.LOGICAL_NAME, "Timestamp")
        if not isinstance(value, datetime.datetime):
            raise DataException(f"Timestamp value must be a datetime.datetime, got {value!r}")
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return (value - _EPOCH) // _ONE_MS

    @classmethod
    def to_logical(cls, schema: Schema, value: int) -> datetime.datetime:
        """Return the UTC datetime ``value`` milliseconds after the epoch."""
        _check_schema(schema, cls.LOGICAL_NAME, "Timestamp")
        try:
            return _EPOCH + datetime.timedelta(milliseconds=value)
        except OverflowError:
            raise DataException(_beyond_python("Timestamp", value, "milliseconds")) from None


Date.SCHEMA = Date.builder().build()
Time.SCHEMA = Time.builder().build()
Timestamp.SCHEMA = Timestamp.builder().build()

LOGICAL_VALUE_TYPES[Decimal.LOGICAL_NAME] = (decimal.Decimal,)
LOGICAL_VALUE_TYPES[Date.LOGICAL_NAME] = (datetime.date,)
LOGICAL_VALUE_TYPES[Time.LOGICAL_NAME] = (datetime.time,)
LOGICAL_VALUE_TYPES[Timestamp.LOGICAL_NAME] = (datetime.datetime,)
