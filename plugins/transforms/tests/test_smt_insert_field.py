from __future__ import annotations

import datetime

import pytest
from copycat_transforms import InsertFieldKey, InsertFieldValue, __version__
from plugin_api.testing import apply_transform

from plugin_api import (
    INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    ConfigException,
    DataException,
    SchemaBuilder,
    SinkRecord,
    SourceRecord,
    Struct,
    Timestamp,
)

ALL = {
    "topic.field": "topic_field!",
    "partition.field": "partition_field",
    "offset.field": "offset_field!",
    "timestamp.field": "timestamp_field?",
    "static.field": "instance_id",
    "static.value": "my-instance-id",
}


def sink(value_schema=None, value=None, key_schema=None, key=None) -> SinkRecord:
    return SinkRecord(
        "test", 0, key_schema, key, value_schema, value, 42, timestamp=1_500_000_000_000
    )


def test_schemaful_value_gets_every_field_with_kafka_types() -> None:
    schema = (
        SchemaBuilder.struct()
        .name("name")
        .version(1)
        .doc("doc")
        .field("magic", SchemaBuilder.int64().optional().build())
        .build()
    )
    record = sink(schema, Struct(schema).put("magic", 42))
    out = apply_transform(InsertFieldValue, ALL, record)
    assert out is not None
    s = out.value_schema
    assert (s.name, s.version, s.doc) == ("name", 1, "doc")
    assert s.field("magic").schema == OPTIONAL_INT64_SCHEMA
    assert s.field("topic_field").schema == STRING_SCHEMA
    assert s.field("partition_field").schema.optional
    assert not s.field("offset_field").schema.optional
    assert s.field("timestamp_field").schema == Timestamp.builder().optional().build()
    assert s.field("instance_id").schema == OPTIONAL_STRING_SCHEMA
    v = out.value
    assert v.get("magic") == 42
    assert v.get("topic_field") == "test"
    assert v.get("partition_field") == 0
    assert v.get("offset_field") == 42
    assert v.get("timestamp_field") == datetime.datetime(2017, 7, 14, 2, 40, tzinfo=datetime.UTC)
    assert v.get("instance_id") == "my-instance-id"


def test_schema_is_cached_per_input_schema() -> None:
    schema = SchemaBuilder.struct().field("a", INT32_SCHEMA).build()
    xform = InsertFieldValue()
    xform.configure({"topic.field": "t"})
    first = xform.apply(sink(schema, Struct(schema).put("a", 1)))
    second = xform.apply(sink(schema, Struct(schema).put("a", 2)))
    assert first.value_schema is second.value_schema


def test_schemaless_value_gets_raw_metadata() -> None:
    out = apply_transform(InsertFieldValue, ALL, sink(None, {"magic": 42}))
    assert out.value == {
        "magic": 42,
        "topic_field": "test",
        "partition_field": 0,
        "offset_field": 42,
        "timestamp_field": 1_500_000_000_000,
        "instance_id": "my-instance-id",
    }
    assert out.value_schema is None


def test_key_variant_changes_only_the_key() -> None:
    record = sink(None, {"v": 1}, None, {"k": 1})
    out = apply_transform(InsertFieldKey, {"topic.field": "topic"}, record)
    assert out.key == {"k": 1, "topic": "test"}
    assert out.value == {"v": 1}
    assert out.kafka_offset == 42


def test_tombstone_passes_through() -> None:
    record = sink(None, None)
    assert apply_transform(InsertFieldValue, ALL, record) is record
    schema = SchemaBuilder.struct().optional().field("a", INT32_SCHEMA).build()
    record = sink(schema, None)
    assert apply_transform(InsertFieldValue, ALL, record) is record


def test_offset_requires_sink_record() -> None:
    record = SourceRecord(None, None, "t", 0, None, None, None, {"a": 1})
    with pytest.raises(
        DataException,
        match=r"^Only SinkRecord supported for \[field insertion\], found: "
        r"org\.apache\.kafka\.connect\.source\.SourceRecord$",
    ):
        apply_transform(InsertFieldValue, {"offset.field": "o"}, record)
    # Without offset.field a source record is fine.
    out = apply_transform(InsertFieldValue, {"topic.field": "t"}, record)
    assert out.value == {"a": 1, "t": "t"}


def test_wrong_data_types() -> None:
    schema = SchemaBuilder.struct().field("a", INT32_SCHEMA).build()
    with pytest.raises(
        DataException,
        match=r"Only Struct objects supported for \[field insertion\], found: java\.lang\.String",
    ):
        apply_transform(InsertFieldValue, ALL, sink(schema, "nope"))
    with pytest.raises(
        DataException,
        match=r"Only Map objects supported in absence of schema for \[field insertion\], found: java\.lang\.Long",  # noqa: E501
    ):
        apply_transform(InsertFieldValue, ALL, sink(None, 42))


def test_bad_config_names_key() -> None:
    with pytest.raises(ConfigException) as info:
        InsertFieldValue().configure({"replace.null.with.default": "maybe"})
    assert info.value.name == "replace.null.with.default"
    results = {
        r.name: r for r in InsertFieldValue().config().validate({"replace.null.with.default": "x"})
    }
    assert results["replace.null.with.default"].error_messages


def test_nothing_to_insert_or_a_static_field_without_value_fails_configure_as_in_kafka() -> None:
    with pytest.raises(ConfigException, match="^No field insertion configured$"):
        InsertFieldValue().configure({})
    with pytest.raises(ConfigException, match="^No field insertion configured$"):
        InsertFieldKey().configure({"topic.field": "", "static.value": "v"})
    with pytest.raises(ConfigException) as info:
        InsertFieldValue().configure({"static.field": "instance_id"})
    assert info.value.name == "static.value"
    assert str(info.value).endswith("No value specified for static field: instance_id")


def test_replace_null_with_default() -> None:
    schema = (
        SchemaBuilder.struct()
        .field("opt", SchemaBuilder.string().optional().default_value("dflt").build())
        .build()
    )
    value = Struct(schema)
    out = apply_transform(InsertFieldValue, {"topic.field": "t"}, sink(schema, value))
    assert out.value.get_without_default("opt") == "dflt"
    out = apply_transform(
        InsertFieldValue,
        {"topic.field": "t", "replace.null.with.default": "false"},
        sink(schema, value),
    )
    assert out.value.get_without_default("opt") is None


def test_aliases() -> None:
    assert InsertFieldValue.KAFKA_CLASS_ALIASES == (
        "org.apache.kafka.connect.transforms.InsertField$Value",
    )
    assert InsertFieldKey.KAFKA_CLASS_ALIASES == (
        "org.apache.kafka.connect.transforms.InsertField$Key",
    )
    assert InsertFieldValue().version() == __version__


def test_a_record_timestamp_beyond_pythons_datetime_fails_the_record_naming_it() -> None:
    """Kafka inserts it (java.util.Date); Copycat cannot hold it and says so with the
    value, on the first record of a schema and on the compiled path of the records after."""
    schema = SchemaBuilder.struct().field("id", INT32_SCHEMA).build()
    smt = InsertFieldValue()
    smt.configure({"timestamp.field": "at"})
    far = 1_700_000_000_000_000  # microseconds taken for milliseconds: year ~55,800

    def record(timestamp: int) -> SinkRecord:
        return SinkRecord("t", 0, None, None, schema, Struct(schema).put("id", 1), 0, timestamp)

    for _ in range(2):
        out = smt.apply(record(1_500_000_000_000))
        assert out is not None
        assert out.value.get("at") == datetime.datetime(2017, 7, 14, 2, 40, tzinfo=datetime.UTC)
        with pytest.raises(DataException) as caught:
            smt.apply(record(far))
        assert str(caught.value) == (
            f"Timestamp value {far} (milliseconds since 1970-01-01) is outside the years 1 to "
            "9999 that Copycat can represent (Python's datetime)"
        )
