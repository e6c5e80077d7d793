"""AvroConverter without a registry server: Confluent wire bytes and lossless round trips.

The expected bytes are written by hand from the Avro specification (zigzag varints,
length-prefixed strings and bytes, little-endian IEEE floats, union branch index, blocks
of array/map items ended by 0) behind Confluent's 5-byte header (magic 0 + big-endian id).
"""

from __future__ import annotations

import datetime
import decimal
import json
from typing import Any

import pytest
from copycat_avro import AvroConverter, from_connect_schema, to_connect_schema
from copycat_avro.registry_client import RegisteredSchema, SchemaRegistryError

from plugin_api import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    ConfigException,
    DataException,
    Date,
    Decimal,
    Headers,
    Schema,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
)

UTC = datetime.UTC


class FakeRegistry:
    """An in-memory stand-in for SchemaRegistryClient: ids from 1, one version per schema."""

    def __init__(self, first_id: int = 1) -> None:
        self.ids: dict[str, int] = {}
        self.subjects: dict[str, list[str]] = {}
        self.next_id = first_id

    def register(self, subject: str, schema: str) -> int:
        if schema not in self.ids:
            self.ids[schema] = self.next_id
            self.next_id += 1
        versions = self.subjects.setdefault(subject, [])
        if schema not in versions:
            versions.append(schema)
        return self.ids[schema]

    def lookup_id(self, subject: str, schema: str) -> int:
        if schema not in self.subjects.get(subject, []):
            raise SchemaRegistryError(
                f"Schema not found for subject {subject!r}", 404, 40403, subject
            )
        return self.ids[schema]

    def latest(self, subject: str) -> RegisteredSchema:
        schema = self.subjects[subject][-1]
        return RegisteredSchema(subject, len(self.subjects[subject]), self.ids[schema], schema)

    def schema_by_id(self, schema_id: int) -> str:
        return next(s for s, i in self.ids.items() if i == schema_id)

    def version_of(self, subject: str, schema_id: int, schema: str) -> int | None:
        return None  # no version: round trips compare schemas exactly

    def close(self) -> None:
        pass


def converter(registry: Any = None, is_key: bool = False, **config: object) -> AvroConverter:
    conv = AvroConverter(client=registry or FakeRegistry())
    conv.configure({"schema.registry.url": "http://unused", **config}, is_key)
    return conv


def header(schema_id: int) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big")


STRUCT = (
    SchemaBuilder.struct()
    .name("com.example.User")
    .field("id", INT64_SCHEMA)
    .field("name", STRING_SCHEMA)
    .build()
)

# (Connect schema, value, Avro binary body written by hand from the spec)
WIRE_VECTORS = [
    (INT32_SCHEMA, 1, b"\x02"),  # zigzag(1) = 2
    (INT32_SCHEMA, -1, b"\x01"),  # zigzag(-1) = 1
    (INT32_SCHEMA, 64, b"\x80\x01"),  # zigzag(64) = 128: two varint bytes
    (INT64_SCHEMA, -3, b"\x05"),
    (INT8_SCHEMA, -1, b"\x01"),
    (INT16_SCHEMA, 300, b"\xd8\x04"),  # zigzag(300) = 600 = 0x258
    (STRING_SCHEMA, "a", b"\x02a"),  # length 1 -> 0x02, then UTF-8
    (STRING_SCHEMA, "é", b"\x04\xc3\xa9"),
    (BOOLEAN_SCHEMA, True, b"\x01"),
    (BOOLEAN_SCHEMA, False, b"\x00"),
    (FLOAT32_SCHEMA, 1.0, b"\x00\x00\x80\x3f"),  # little-endian IEEE single
    (FLOAT64_SCHEMA, 1.0, b"\x00\x00\x00\x00\x00\x00\xf0\x3f"),
    (BYTES_SCHEMA, b"\x01\x02", b"\x04\x01\x02"),
    (OPTIONAL_STRING_SCHEMA, "a", b"\x02\x02a"),  # union ["null","string"]: branch 1
    (SchemaBuilder.array(INT32_SCHEMA).build(), [1, 2], b"\x04\x02\x04\x00"),  # block of 2, end 0
    (SchemaBuilder.array(INT32_SCHEMA).build(), [], b"\x00"),
    (SchemaBuilder.map(STRING_SCHEMA, INT32_SCHEMA).build(), {"a": 1}, b"\x02\x02a\x02\x00"),
    (
        SchemaBuilder.map(INT32_SCHEMA, STRING_SCHEMA).build(),
        {1: "a"},
        b"\x02\x02\x02a\x00",
    ),  # MapEntry array
    (STRUCT, Struct(STRUCT).put("id", 1).put("name", "a"), b"\x02\x02a"),
    (Decimal.schema(2), decimal.Decimal("1.23"), b"\x02\x7b"),  # unscaled 123 = 0x7b, 1 byte
    (Decimal.schema(2), decimal.Decimal("-1.28"), b"\x02\x80"),  # -128 two's complement
    (Date.SCHEMA, datetime.date(1970, 1, 2), b"\x02"),  # 1 day
    (Time.SCHEMA, datetime.time(0, 0, 1), b"\xd0\x0f"),  # 1000 ms -> zigzag 2000
    (Timestamp.SCHEMA, datetime.datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC), b"\x02"),  # 1 ms
]


@pytest.mark.parametrize(("schema", "value", "body"), WIRE_VECTORS)
def test_wire_bytes_match_confluent_format(schema: Schema, value: object, body: bytes) -> None:
    registry = FakeRegistry(first_id=258)  # 258 = 0x00000102: checks the id is big-endian
    conv = converter(registry)
    data = conv.from_connect_data("orders", schema, value)
    assert data == header(258) + body
    assert list(registry.subjects) == ["orders-value"]
    assert conv.to_connect_data("orders", data) == (schema, value)


def test_reading_gives_the_same_answer_whatever_the_headers() -> None:
    """What ``to_connect_data_reads_headers = False`` promises (the runtime then converts a
    batch without reading its headers): values and errors alike, record by record and by
    batch, with the headers or without."""
    assert AvroConverter.to_connect_data_reads_headers is False
    conv = converter()
    users = [Struct(STRUCT).put("id", i).put("name", f"user {i}") for i in range(3)]
    data: list[bytes | None] = [conv.from_connect_data("t", STRUCT, user) for user in users]
    data.append(None)
    headers = [Headers().add("trace", "abc").add("id", 7), Headers(), None, Headers().add("x", b"")]
    expected = [tuple(conv.to_connect_data("t", value)) for value in data]
    assert [
        tuple(conv.to_connect_data("t", v, h)) for v, h in zip(data, headers, strict=True)
    ] == expected
    batch = conv.to_connect_data_batch("t", data, headers)
    assert [tuple(answer) for answer in batch] == expected
    truncated = data[0][:-3]  # type: ignore[index]
    with pytest.raises(DataException) as without:
        conv.to_connect_data("t", truncated)
    with pytest.raises(DataException) as with_headers:
        conv.to_connect_data("t", truncated, headers[0])
    assert str(with_headers.value) == str(without.value)


def test_optional_struct_fields_and_nulls() -> None:
    schema = (
        SchemaBuilder.struct()
        .name("com.example.Opt")
        .field("a", SchemaBuilder.int32().optional().build())
        .field("b", SchemaBuilder.string().optional().default_value("d").build())
        .build()
    )
    conv = converter()
    data = conv.from_connect_data("t", schema, Struct(schema).put("a", None))
    # a: ["null","int"] branch 0; b: ["string","null"] (default first) holds the default "d".
    assert data == header(1) + b"\x00" + b"\x00\x02d"
    result = conv.to_connect_data("t", data)
    assert (
        result.schema == schema and result.value.get("a") is None and result.value.get("b") == "d"
    )


def test_null_is_a_tombstone() -> None:
    conv = converter()
    assert conv.from_connect_data("t", STRING_SCHEMA, None) is None
    assert conv.to_connect_data("t", None) == (None, None)


def _every_type_schema() -> Schema:
    inner = (
        SchemaBuilder.struct()
        .name("com.example.Inner")
        .doc("inner doc")
        .field("x", INT32_SCHEMA)
        .build()
    )
    return (
        SchemaBuilder.struct()
        .name("com.example.Everything")
        .version(3)
        .doc("all types")
        .parameter("owner", "team-a")
        .field("i8", INT8_SCHEMA)
        .field("i16", INT16_SCHEMA)
        .field("i32", INT32_SCHEMA)
        .field("i64", INT64_SCHEMA)
        .field("f32", FLOAT32_SCHEMA)
        .field("f64", FLOAT64_SCHEMA)
        .field("flag", BOOLEAN_SCHEMA)
        .field("text", STRING_SCHEMA)
        .field("raw", BYTES_SCHEMA)
        .field("opt", SchemaBuilder.string().optional().build())
        .field("defaulted", SchemaBuilder.int32().default_value(42).build())
        .field("opt_defaulted", SchemaBuilder.string().optional().default_value("x").build())
        .field("list", SchemaBuilder.array(STRING_SCHEMA).build())
        .field("smap", SchemaBuilder.map(STRING_SCHEMA, FLOAT64_SCHEMA).build())
        .field(
            "imap",
            SchemaBuilder.map(INT64_SCHEMA, SchemaBuilder.array(INT8_SCHEMA).build())
            .optional()
            .build(),
        )
        .field("inner", inner)
        .field(
            "inner_opt",
            SchemaBuilder.struct()
            .name("com.example.Other")
            .field("y", STRING_SCHEMA)
            .optional()
            .build(),
        )
        .field("dec", Decimal.builder(4).parameter("connect.decimal.precision", "10").build())
        .field("date", Date.SCHEMA)
        .field("time", Time.SCHEMA)
        .field("ts", Timestamp.SCHEMA)
        .field("named_string", SchemaBuilder.string().name("com.example.Code").version(2).build())
        .build()
    )


def test_round_trip_is_lossless_for_every_connect_type() -> None:
    schema = _every_type_schema()
    value = Struct(schema)
    for name, v in {
        "i8": -128,
        "i16": 32767,
        "i32": -(2**31),
        "i64": 2**63 - 1,
        "f32": 1.5,
        "f64": 1e-300,
        "flag": True,
        "text": "ünïcode",
        "raw": b"\x00\xff",
        "opt": None,
        "defaulted": 7,
        "opt_defaulted": "y",
        "list": ["a", "b"],
        "smap": {"k": 0.5},
        "imap": {-1: [1, 2], 5: []},
        "inner": Struct(schema.field("inner").schema).put("x", 9),
        "inner_opt": None,
        "dec": decimal.Decimal("-12345.6789"),
        "date": datetime.date(2024, 2, 29),
        "time": datetime.time(23, 59, 59, 999000),
        "ts": datetime.datetime(2024, 2, 29, 12, 0, 0, 123000, tzinfo=UTC),
        "named_string": "ABC",
    }.items():
        value.put(name, v)
    conv = converter()
    back = conv.to_connect_data("t", conv.from_connect_data("t", schema, value))
    assert back.schema == schema
    assert back.value == value
    assert back.schema.doc == "all types" and back.schema.field("inner").schema.doc == "inner doc"


@pytest.mark.parametrize(
    "schema",
    [
        INT8_SCHEMA,
        INT16_SCHEMA,
        INT32_SCHEMA,
        INT64_SCHEMA,
        FLOAT32_SCHEMA,
        FLOAT64_SCHEMA,
        BOOLEAN_SCHEMA,
        STRING_SCHEMA,
        BYTES_SCHEMA,
        OPTIONAL_STRING_SCHEMA,
        Decimal.schema(0),
        Date.SCHEMA,
        Time.SCHEMA,
        Timestamp.SCHEMA,
        SchemaBuilder.array(SchemaBuilder.int16().optional().build()).build(),
        SchemaBuilder.map(SchemaBuilder.string().optional().build(), INT32_SCHEMA).build(),
        SchemaBuilder.struct().field("anon", INT32_SCHEMA).build(),
        _every_type_schema(),
    ],
    ids=repr,
)
def test_schema_mapping_round_trips(schema: Schema) -> None:
    avro = from_connect_schema(schema)
    assert to_connect_schema(json.loads(json.dumps(avro))) == schema


def test_avro_schema_matches_confluent_avrodata() -> None:
    schema = (
        SchemaBuilder.struct()
        .name("com.example.User")
        .version(1)
        .doc("A user")
        .field("id", INT64_SCHEMA)
        .field("age", SchemaBuilder.int16().optional().build())
        .field("price", Decimal.schema(2))
        .field("created", Timestamp.SCHEMA)
        .field("tags", SchemaBuilder.map(INT32_SCHEMA, STRING_SCHEMA).build())
        .build()
    )
    assert from_connect_schema(schema) == {
        "type": "record",
        "name": "User",
        "namespace": "com.example",
        "fields": [
            {"name": "id", "type": "long"},
            {
                "name": "age",
                "type": ["null", {"type": "int", "connect.type": "int16"}],
                "default": None,
            },
            {
                "name": "price",
                "type": {
                    "type": "bytes",
                    "scale": 2,
                    "precision": 64,
                    "connect.version": 1,
                    "connect.parameters": {"scale": "2"},
                    "connect.name": "org.apache.kafka.connect.data.Decimal",
                    "logicalType": "decimal",
                },
            },
            {
                "name": "created",
                "type": {
                    "type": "long",
                    "connect.version": 1,
                    "connect.name": "org.apache.kafka.connect.data.Timestamp",
                    "logicalType": "timestamp-millis",
                },
            },
            {
                "name": "tags",
                "type": {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "MapEntry",
                        "namespace": "io.confluent.connect.avro",
                        "fields": [
                            {"name": "key", "type": "int"},
                            {"name": "value", "type": "string"},
                        ],
                    },
                },
            },
        ],
        "connect.doc": "A user",
        "connect.version": 1,
        "connect.name": "com.example.User",
    }
    unnamed = SchemaBuilder.struct().field("a", INT32_SCHEMA).build()
    assert from_connect_schema(unnamed)["name"] == "ConnectDefault"
    assert from_connect_schema(unnamed)["namespace"] == "io.confluent.connect.avro"


def test_reads_foreign_avro_enums_fixed_and_unions() -> None:
    avro = {
        "type": "record",
        "name": "Ev",
        "namespace": "x",
        "fields": [
            {
                "name": "color",
                "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]},
            },
            {"name": "either", "type": ["null", "int", "string"], "default": None},
            {"name": "id", "type": {"type": "fixed", "name": "Id", "size": 2}},
        ],
    }
    schema = to_connect_schema(avro)
    assert schema.field("color").schema.parameters == {
        "io.confluent.connect.avro.Enum": "x.Color",
        "io.confluent.connect.avro.Enum.RED": "RED",
        "io.confluent.connect.avro.Enum.GREEN": "GREEN",
    }
    union = schema.field("either").schema
    assert union.name == "io.confluent.connect.avro.Union" and union.optional
    assert [f.name for f in union.fields] == ["int", "string"]

    registry = FakeRegistry()
    schema_id = registry.register("t-value", json.dumps(avro))
    # color GREEN = 1 -> 0x02; either: branch 2 (string) "hi"; id: 2 raw bytes.
    data = header(schema_id) + b"\x02" + b"\x04\x04hi" + b"\xab\xcd"
    result = converter(registry).to_connect_data("t", data)
    assert result.value.get("color") == "GREEN"
    assert result.value.get("either").get("string") == "hi"
    assert result.value.get("id") == b"\xab\xcd"


def test_subject_name_strategies() -> None:
    record = SchemaBuilder.struct().name("com.example.Order").field("id", INT32_SCHEMA).build()
    cases = {
        "io.confluent.kafka.serializers.subject.TopicNameStrategy": "orders-key",
        "io.confluent.kafka.serializers.subject.RecordNameStrategy": "com.example.Order",
        "TopicRecordNameStrategy": "orders-com.example.Order",
    }
    for strategy, subject in cases.items():
        registry = FakeRegistry()
        conv = converter(registry, is_key=True, **{"key.subject.name.strategy": strategy})
        conv.from_connect_data("orders", record, Struct(record).put("id", 1))
        assert list(registry.subjects) == [subject]
    conv = converter(FakeRegistry(), **{"value.subject.name.strategy": "RecordNameStrategy"})
    with pytest.raises(DataException, match="RecordNameStrategy requires a record"):
        conv.from_connect_data("orders", STRING_SCHEMA, "x")
    with pytest.raises(ConfigException, match="value.subject.name.strategy"):
        converter(FakeRegistry(), **{"value.subject.name.strategy": "com.acme.Nope"})


def test_without_auto_register_the_schema_must_exist() -> None:
    registry = FakeRegistry()
    conv = converter(registry, **{"auto.register.schemas": "false"})
    with pytest.raises(DataException, match="orders-value") as raised:
        conv.from_connect_data("orders", STRING_SCHEMA, "x")
    # Kafka's DataException (as Confluent's converter over a 40403), the registry's refusal
    # its cause.
    assert type(raised.value) is DataException
    assert isinstance(raised.value.__cause__, SchemaRegistryError)
    registry.register("orders-value", json.dumps("string"))
    assert conv.from_connect_data("orders", STRING_SCHEMA, "x") == header(1) + b"\x02x"


def test_use_latest_version_writes_with_the_latest_schema() -> None:
    registry = FakeRegistry()
    latest = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "string", "default": "z"}],
    }
    registry.register(
        "t-value",
        json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}),
    )
    latest_id = registry.register("t-value", json.dumps(latest))
    conv = converter(registry, **{"auto.register.schemas": "false", "use.latest.version": "true"})
    schema = (
        SchemaBuilder.struct().name("R").field("a", INT32_SCHEMA).field("b", STRING_SCHEMA).build()
    )
    data = conv.from_connect_data("t", schema, Struct(schema).put("a", 1).put("b", "q"))
    assert data == header(latest_id) + b"\x02\x02q"


def test_bad_input_is_a_data_exception() -> None:
    conv = converter()
    with pytest.raises(DataException, match="Unknown magic byte"):
        conv.to_connect_data("t", b"\x01\x00\x00\x00\x01\x02")
    with pytest.raises(DataException, match="too short"):
        conv.to_connect_data("t", b"\x00\x00")
    with pytest.raises(DataException, match="needs a schema"):
        conv.from_connect_data("t", None, "x")
    with pytest.raises(DataException):
        conv.from_connect_data("t", INT8_SCHEMA, 1000)


def test_config_requires_url_and_well_formed_user_info() -> None:
    with pytest.raises(ConfigException, match="schema.registry.url"):
        AvroConverter().configure({}, False)
    with pytest.raises(ConfigException, match="basic.auth.user.info"):
        AvroConverter().configure(
            {
                "schema.registry.url": "http://x",
                "basic.auth.credentials.source": "USER_INFO",
                "basic.auth.user.info": "no-colon",
            },
            False,
        )


def test_kafka_class_alias_and_entry_point() -> None:
    from importlib.metadata import entry_points

    assert AvroConverter.KAFKA_CLASS_ALIASES == ("io.confluent.connect.avro.AvroConverter",)
    assert "AvroConverter" in {ep.name for ep in entry_points(group="copycat.converters")}


def test_unknown_strategy_and_unsupported_options_fail_validation_not_only_configure() -> None:
    """config/validate runs CONFIG_DEF.validate: what configure() would refuse at task start
    must show there, on its key."""
    errors = {
        v.name: v.error_messages
        for v in AvroConverter.CONFIG_DEF.validate(
            {
                "schema.registry.url": "http://x",
                "value.subject.name.strategy": "com.nope.Strategy",
                "key.subject.name.strategy": "RecordNameStrategy",
                "enhanced.avro.schema.support": "true",
                "connect.meta.data": "false",
                "scrub.invalid.names": "true",
            }
        )
    }
    (message,) = errors["value.subject.name.strategy"]
    assert message.startswith(
        "Invalid value com.nope.Strategy for configuration value.subject.name.strategy: "
        "Unknown subject name strategy"
    ), message
    assert errors["key.subject.name.strategy"] == []
    (message,) = errors["enhanced.avro.schema.support"]
    assert "does not support" in message, message
    assert errors["connect.meta.data"] == errors["scrub.invalid.names"] == []
    with pytest.raises(ConfigException, match="enhanced.avro.schema.support"):
        AvroConverter().configure(
            {"schema.registry.url": "http://x", "enhanced.avro.schema.support": "true"}, False
        )


def test_schema_names_are_checked_by_part_an_empty_namespace_being_none() -> None:
    """Java Avro: ".Rec" is "Rec" without a namespace; "com.1x.R" has an invalid part."""

    def record(name: str) -> Schema:
        return SchemaBuilder.struct().name(name).field("a", STRING_SCHEMA).build()

    avro = from_connect_schema(record(".Rec"))
    assert avro["name"] == "Rec" and "namespace" not in avro
    with pytest.raises(DataException, match=r"'com.1x.R'.*Illegal initial character: 1x.*SetSch"):
        from_connect_schema(record("com.1x.R"))
    assert from_connect_schema(record("com.1x.R"), scrub_invalid_names=True)["namespace"] == (
        "com.x1x"
    )


def _zigzag(value: int) -> bytes:
    """An Avro long: zigzag, then base-128 varint."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


@pytest.mark.parametrize(
    ("logical", "value", "unit"),
    [
        (Timestamp, 1_700_000_000_000_000, "milliseconds"),
        (Timestamp, -62135596800001, "milliseconds"),
        (Date, 2_147_483_647, "days"),
    ],
)
def test_a_date_beyond_pythons_datetime_fails_its_record_naming_the_value(
    logical: type[Date] | type[Timestamp], value: int, unit: str
) -> None:
    """Kafka reads these (java.util.Date); Copycat cannot hold them, and says so with the
    value, on the first read, the compiled reader's and in a batch."""
    schema = (
        SchemaBuilder.struct()
        .name("com.example.Event")
        .field("id", INT32_SCHEMA)
        .field("at", logical.SCHEMA)
        .build()
    )
    conv = converter()
    epoch = (
        datetime.date(1970, 1, 1) if logical is Date else datetime.datetime(1970, 1, 1, tzinfo=UTC)
    )
    good = conv.from_connect_data("t", schema, Struct(schema).put("id", 1).put("at", epoch))
    assert good is not None and good[5:] == _zigzag(1) + _zigzag(0)
    bad = good[:5] + _zigzag(2) + _zigzag(value)
    reason = (
        f"{logical.__name__} value {value} ({unit} since 1970-01-01) is outside the years 1 to "
        "9999 that Copycat can represent (Python's datetime)"
    )
    for _ in range(2):
        assert conv.to_connect_data("t", good).value.get("id") == 1
        with pytest.raises(DataException) as caught:
            conv.to_connect_data("t", bad)
        assert str(caught.value) == reason
    with pytest.raises(DataException) as in_batch:
        conv.to_connect_data_batch("t", [good, bad], [None, None])
    assert str(in_batch.value) == reason
