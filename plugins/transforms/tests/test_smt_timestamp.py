from __future__ import annotations

import datetime
import re

import pytest
from copycat_transforms import TimestampConverterKey, TimestampConverterValue, TimestampRouter
from copycat_transforms._datefmt import JavaDateFormat
from plugin_api.testing import apply_transform

from plugin_api import (
    ConfigException,
    ConnectException,
    DataException,
    Date,
    Schema,
    SchemaBuilder,
    SinkRecord,
    Struct,
    Time,
    Timestamp,
)

UTC = datetime.UTC
# 2017-01-02 03:04:05.006 UTC
MILLIS = 1483326245006
DATE_PLUS_TIME = datetime.datetime(2017, 1, 2, 3, 4, 5, 6000, tzinfo=UTC)
STRING_FORMAT = "yyyy MM dd HH:mm:ss SSS z"
DATE_PLUS_TIME_STRING = "2017 01 02 03:04:05 006 UTC"


def rec(value, schema=None, key=None, key_schema=None, timestamp=None) -> SinkRecord:
    return SinkRecord("test", 0, key_schema, key, schema, value, 0, timestamp=timestamp)


# -- SimpleDateFormat ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("yyyyMMdd", "20170102"),
        ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2017-01-02T03:04:05.006+0000"),
        ("yy/M/d h:mm a", "17/1/2 3:04 AM"),
        ("EEE, d MMM yyyy", "Mon, 2 Jan 2017"),
        ("EEEE MMMM", "Monday January"),
        ("'week' ww, D 'o''clock' XXX", "week 01, 2 o'clock Z"),
        (STRING_FORMAT, DATE_PLUS_TIME_STRING),
    ],
)
def test_java_date_format(pattern, expected) -> None:
    fmt = JavaDateFormat(pattern)
    assert fmt.format(MILLIS) == expected


@pytest.mark.parametrize(
    ("pattern", "text", "millis"),
    [
        ("yyyyMMdd", "20170102", 1483315200000),
        ("yyyy-MM-dd HH:mm:ss.SSS", "2017-01-02 03:04:05.006", MILLIS),
        (STRING_FORMAT, DATE_PLUS_TIME_STRING, MILLIS),
        ("yyyy-MM-dd'T'HH:mm:ssZ", "2017-01-02T05:04:05+0200", MILLIS - 6),
        ("dd MMM yyyy", "02 jan 2017", 1483315200000),
        ("yyyy-MM-dd", "2017-01-02 trailing text", 1483315200000),
        ("h:mm a", "3:04 PM", (15 * 60 + 4) * 60_000),
    ],
)
def test_java_date_parse(pattern, text, millis) -> None:
    assert JavaDateFormat(pattern).parse(text) == millis


@pytest.mark.parametrize(
    ("millis", "text"),
    [
        (1609686245678, "2021-W02 2 Sun"),  # ISO-8601 would say 2020-W53
        (1735603200005, "2025-W01 5 Tue"),  # shares its Sunday-first week with 2025-01-01
        (1704067199999, "2024-W01 6 Sun"),
        (951782400000, "2000-W10 5 Tue"),
    ],
)
def test_java_week_dates_are_en_us_weeks(millis, text) -> None:
    """Kafka's JVM formats in en-US: weeks start on Sunday, week 1 holds January 1st."""
    assert JavaDateFormat("YYYY-'W'ww W EEE").format(millis) == text


@pytest.mark.parametrize(
    ("pattern", "text", "millis"),
    [
        ("YYYY-'W'ww", "2021-W02", 1609632000000),  # the week's Sunday
        ("YYYY-'W'ww", "2025-W01", 1735430400000),
        ("YYYY-'W'ww u", "2021-W02 3", 1609891200000),
        ("YYYY-'W'ww EEE", "2021-W02 Fri", 1610064000000),
        ("yyyy-MM-dd HH:mm zzz", "2021-01-03 15:04 GMT+02:00", 1609679040000),
        ("yyyy-MM-dd HH:mm zzz", "2021-01-03 15:04 PST", 1609715040000),
        ("yyyy-MM-dd HH:mm zzz", "2021-07-03 15:04 PDT", 1625349840000),
        ("yyyy-MM-dd HH:mm zzz", "2021-07-03 15:04 Central European Summer Time", 1625317440000),
        ("yyyy-MM-dd", " 2021- 01-\t03", 1609632000000),  # spaces skipped before numbers
    ],
)
def test_java_date_parse_week_dates_and_zone_names(pattern, text, millis) -> None:
    assert JavaDateFormat(pattern).parse(text) == millis


def test_java_date_format_errors() -> None:
    with pytest.raises(ValueError, match="Illegal pattern character 'b'"):
        JavaDateFormat("yyyy-bb")
    with pytest.raises(ValueError, match="^invalid ISO 8601 format: length=4$"):
        JavaDateFormat("HH XXXX")
    with pytest.raises(ValueError, match="Unterminated quote"):
        JavaDateFormat("yyyy 'oops")
    with pytest.raises(ValueError):
        JavaDateFormat("yyyy-MM-dd").parse("02/01/2017")
    for pattern, text in [
        ("yyyy-MM-dd'T'HH:mm:ssZ", "2021-01-03T15:04:05Z"),  # Z is no RFC 822 zone
        ("HH:mm X", "15:04 UTC"),  # X takes ISO 8601 zones only
        ("dd MMM yyyy", "03  Jan 2021"),  # no space skipped before text
        ("yyyy D", "2021 400"),  # out of range, not rolled over into 2022
    ]:
        with pytest.raises(ValueError):
            JavaDateFormat(pattern).parse(text)


# -- TimestampConverter: schemaless -------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "value", "expected"),
    [
        ({"target.type": "Timestamp"}, MILLIS, DATE_PLUS_TIME),
        ({"target.type": "Date"}, MILLIS, datetime.date(2017, 1, 2)),
        ({"target.type": "Time"}, MILLIS, datetime.time(3, 4, 5, 6000)),
        ({"target.type": "unix"}, DATE_PLUS_TIME, MILLIS),
        ({"target.type": "unix", "unix.precision": "seconds"}, DATE_PLUS_TIME, MILLIS // 1000),
        ({"target.type": "unix", "unix.precision": "microseconds"}, DATE_PLUS_TIME, MILLIS * 1000),
        ({"target.type": "unix", "unix.precision": "nanoseconds"}, DATE_PLUS_TIME, MILLIS * 10**6),
        (
            {"target.type": "Timestamp", "unix.precision": "seconds"},
            MILLIS // 1000,
            datetime.datetime(2017, 1, 2, 3, 4, 5, tzinfo=UTC),
        ),
        (
            {"target.type": "Timestamp", "unix.precision": "microseconds"},
            MILLIS * 1000 + 999,
            DATE_PLUS_TIME,
        ),
        ({"target.type": "string", "format": STRING_FORMAT}, DATE_PLUS_TIME, DATE_PLUS_TIME_STRING),
        (
            {"target.type": "Timestamp", "format": STRING_FORMAT},
            DATE_PLUS_TIME_STRING,
            DATE_PLUS_TIME,
        ),
        ({"target.type": "unix", "format": STRING_FORMAT}, DATE_PLUS_TIME_STRING, MILLIS),
        (
            {"target.type": "Timestamp"},
            datetime.date(2017, 1, 2),
            datetime.datetime(2017, 1, 2, tzinfo=UTC),
        ),
    ],
)
def test_schemaless_whole_value(config, value, expected) -> None:
    out = apply_transform(TimestampConverterValue, config, rec(value))
    assert out.value == expected
    assert out.value_schema is None


def test_schemaless_field_and_key_variant() -> None:
    config = {"target.type": "string", "format": "yyyy-MM-dd", "field": "ts"}
    out = apply_transform(
        TimestampConverterKey, config, rec({"v": 1}, key={"ts": MILLIS, "other": 1})
    )
    assert out.key == {"ts": "2017-01-02", "other": 1}
    assert out.value == {"v": 1}


# -- TimestampConverter: schemaful --------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "schema", "expected"),
    [
        ("Timestamp", Timestamp.SCHEMA, DATE_PLUS_TIME),
        ("Date", Date.SCHEMA, datetime.date(2017, 1, 2)),
        ("Time", Time.SCHEMA, datetime.time(3, 4, 5, 6000)),
        ("unix", Schema.INT64_SCHEMA, MILLIS),
        ("string", Schema.STRING_SCHEMA, DATE_PLUS_TIME_STRING),
    ],
)
def test_schemaful_whole_value(target, schema, expected) -> None:
    config = {"target.type": target, "format": STRING_FORMAT}
    out = apply_transform(TimestampConverterValue, config, rec(DATE_PLUS_TIME, Timestamp.SCHEMA))
    assert out.value_schema == schema
    assert out.value == expected


def test_schemaful_optional_keeps_optional() -> None:
    optional_ts = Timestamp.builder().optional().build()
    out = apply_transform(
        TimestampConverterValue, {"target.type": "unix"}, rec(DATE_PLUS_TIME, optional_ts)
    )
    assert out.value_schema == Schema.OPTIONAL_INT64_SCHEMA


def test_schemaful_field() -> None:
    schema = (
        SchemaBuilder.struct()
        .name("n")
        .field("ts", Schema.STRING_SCHEMA)
        .field("other", SchemaBuilder.string().optional().build())
        .build()
    )
    value = Struct(schema).put("ts", DATE_PLUS_TIME_STRING).put("other", "keep")
    config = {"target.type": "Timestamp", "field": "ts", "format": STRING_FORMAT}
    xform = TimestampConverterValue()
    out = apply_transform(xform, config, rec(value, schema))
    assert out.value_schema.name == "n"
    assert out.value_schema.field("ts").schema == Timestamp.SCHEMA
    assert out.value.get("ts") == DATE_PLUS_TIME
    assert out.value.get("other") == "keep"


def test_a_tombstone_keeps_its_null_and_gets_the_converted_schema() -> None:
    # Kafka 4.1.1 has no tombstone shortcut here: a null converts to null, and a schema is
    # converted all the same (JsonConverter with schemas writes it in the envelope).
    for config in ({"target.type": "unix"}, {"target.type": "unix", "field": "ts"}):
        out = apply_transform(TimestampConverterValue, config, rec(None))
        assert (out.value_schema, out.value) == (None, None)
    optional_ts = SchemaBuilder(Timestamp.SCHEMA.type).name(Timestamp.LOGICAL_NAME)
    optional_ts = optional_ts.version(1).optional().build()
    out = apply_transform(TimestampConverterValue, {"target.type": "unix"}, rec(None, optional_ts))
    assert out.value is None and out.value_schema == Schema.OPTIONAL_INT64_SCHEMA
    struct = SchemaBuilder.struct().name("n").field("ts", Timestamp.SCHEMA).optional().build()
    out = apply_transform(
        TimestampConverterValue, {"target.type": "unix", "field": "ts"}, rec(None, struct)
    )
    assert out.value is None and out.value_schema.optional
    assert out.value_schema.field("ts").schema == Schema.INT64_SCHEMA
    # The schema as Kafka's ConnectSchema.toString writes it, not Python's repr.
    with pytest.raises(
        ConnectException,
        match=r"^Schema Schema\{INT32\} does not correspond to a known timestamp type format$",
    ):
        apply_transform(
            TimestampConverterValue,
            {"target.type": "unix"},
            rec(None, Schema.OPTIONAL_INT32_SCHEMA),
        )
    with pytest.raises(
        ConnectException,
        match=r"^Schema Schema\{n:STRUCT\} does not correspond to a known timestamp type format$",
    ):
        apply_transform(TimestampConverterValue, {"target.type": "unix"}, rec(None, struct))


def test_a_field_conversion_lists_the_fields_of_a_schema_that_is_no_struct() -> None:
    # Kafka's requireStructOrNull lets the null through and schema.fields() refuses the
    # STRING schema; Copycat wrote the null on.
    with pytest.raises(DataException, match="^Cannot list fields on non-struct type$"):
        apply_transform(
            TimestampConverterValue,
            {"target.type": "unix", "field": "ts"},
            rec(None, Schema.OPTIONAL_STRING_SCHEMA),
        )


def test_a_string_without_a_format_fails_as_kafkas_null_format_does() -> None:
    # Kafka checks the format only for target.type string; parsing a string source without
    # one dereferences the null format: its DLQ says java.lang.NullPointerException.
    with pytest.raises(ValueError, match=r'because "config\.format" is null$') as raised:
        apply_transform(TimestampConverterValue, {"target.type": "Date"}, rec("2021-01-03"))
    assert type(raised.value).KAFKA_CLASS_ALIASES == ("java.lang.NullPointerException",)
    assert not isinstance(raised.value, DataException)


def test_data_errors() -> None:
    config = {"target.type": "Timestamp", "format": "yyyy-MM-dd"}
    with pytest.raises(
        DataException,
        match=r"Could not parse timestamp: value \(nope\) does not match pattern \(yyyy-MM-dd\)",
    ):
        apply_transform(TimestampConverterValue, config, rec("nope"))
    with pytest.raises(
        DataException,
        match=r"^TimestampConverter does not support class java\.lang\.Double objects as timestamps$",  # noqa: E501
    ):
        apply_transform(TimestampConverterValue, {"target.type": "unix"}, rec(1.5))
    with pytest.raises(ConnectException, match="does not correspond to a known timestamp type"):
        apply_transform(
            TimestampConverterValue, {"target.type": "unix"}, rec(True, Schema.BOOLEAN_SCHEMA)
        )
    with pytest.raises(
        DataException,
        match=r"Only Map objects supported in absence of schema for \[converting timestamp formats\]",  # noqa: E501
    ):
        apply_transform(TimestampConverterValue, {"target.type": "unix", "field": "a"}, rec([1]))
    schema = SchemaBuilder.struct().field("a", Schema.INT64_SCHEMA).build()
    with pytest.raises(
        DataException, match=r"Only Struct objects supported for \[converting timestamp formats\]"
    ):
        apply_transform(
            TimestampConverterValue, {"target.type": "unix", "field": "a"}, rec("x", schema)
        )


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({}, "target.type"),
        ({"target.type": "invalid"}, "target.type"),
        ({"target.type": "string"}, "format"),
        ({"target.type": "string", "format": "bad-pattern-q"}, "format"),
        ({"target.type": "unix", "unix.precision": "minutes"}, "unix.precision"),
    ],
)
def test_bad_config(config, key) -> None:
    with pytest.raises(ConfigException) as info:
        TimestampConverterValue().configure(config)
    assert info.value.name == key


# -- TimestampRouter ----------------------------------------------------------------------------


def test_timestamp_router_defaults() -> None:
    out = apply_transform(TimestampRouter, {}, rec("v", timestamp=MILLIS))
    assert out.topic == "test-20170102"
    assert out.value == "v"


def test_timestamp_router_custom_formats() -> None:
    config = {"topic.format": "logs_${timestamp}_${topic}", "timestamp.format": "yyyy.MM.dd-HH"}
    out = apply_transform(TimestampRouter, config, rec("v", timestamp=MILLIS))
    assert out.topic == "logs_2017.01.02-03_test"


def test_timestamp_router_errors() -> None:
    with pytest.raises(DataException, match="Timestamp missing on record"):
        apply_transform(TimestampRouter, {}, rec("v"))
    with pytest.raises(ConfigException) as info:
        TimestampRouter().configure({"timestamp.format": "yyyy-ee"})
    assert info.value.name == "timestamp.format"
    errors = {
        r.name: r.error_messages
        for r in TimestampRouter().config().validate({"timestamp.format": "'x"})
    }
    assert errors["timestamp.format"]


@pytest.mark.parametrize(
    ("schema", "value", "message"),
    [
        (
            Timestamp.SCHEMA,
            5,
            "Expected Timestamp to be a java.util.Date, but found class java.lang.Long",
        ),
        (Date.SCHEMA, 5, "Expected Date to be a java.util.Date, but found class java.lang.Integer"),
        (
            Time.SCHEMA,
            "x",
            "Expected Time to be a java.util.Date, but found class java.lang.String",
        ),
    ],
)
def test_a_logical_date_of_the_wrong_type_names_javas_classes(schema, value, message) -> None:
    """Kafka's TimestampConverter holds all three as java.util.Date, and says so."""
    with pytest.raises(DataException, match=f"^{re.escape(message)}$"):
        apply_transform(TimestampConverterValue, {"target.type": "unix"}, rec(value, schema))


FAR = 9_223_372_036_854_775_807  # Kafka: Sun Aug 17 07:12:55 UTC 292278994
FAR_REASON = (
    f"Timestamp value {FAR} (milliseconds since 1970-01-01) is outside the years 1 to 9999 "
    "that Copycat can represent (Python's datetime)"
)


@pytest.mark.parametrize(
    "config",
    [
        {"target.type": "string", "format": STRING_FORMAT},
        {"target.type": "Timestamp"},
        {"target.type": "Date"},
    ],
)
def test_a_unix_time_beyond_pythons_datetime_fails_the_record_naming_it(config) -> None:
    with pytest.raises(DataException) as caught:
        apply_transform(TimestampConverterValue, config, rec(FAR))
    assert (
        str(caught.value) == FAR_REASON
        if config["target.type"] != "Date"
        else (
            "Date value 106751991167 (days since 1970-01-01) is outside the years 1 to 9999 that "
            "Copycat can represent (Python's datetime)"
        )
    )


def test_a_record_timestamp_beyond_pythons_datetime_fails_the_router_naming_it() -> None:
    with pytest.raises(DataException) as caught:
        apply_transform(TimestampRouter, {}, rec("v", timestamp=FAR))
    assert str(caught.value) == FAR_REASON
