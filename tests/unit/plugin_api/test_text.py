"""plugin_api.java_string: Connect values as Java's toString() prints them."""

from __future__ import annotations

import datetime

from hypothesis import given
from hypothesis import strategies as st

from plugin_api import FLOAT32_SCHEMA, SchemaBuilder, Struct, java_string

# JSON-like values: what a schemaless JsonConverter gives a sink.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _recursive(value: object) -> str:
    """The obvious recursive rendering, as the file connector had it, for shallow values."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(map(_recursive, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_recursive(k)}={_recursive(v)}" for k, v in value.items()) + "}"
    return str(value)


@given(json_values)
def test_nested_values_render_as_the_recursive_definition(value: object) -> None:
    assert java_string(value) == _recursive(value)


def test_a_value_deeper_than_pythons_recursion_limit_renders() -> None:
    # Kafka's JSON parser accepts 1000 levels; a schemaless JsonConverter hands the sink such
    # a value, and the file sink's RecursionError failed the task on it (even with
    # errors.tolerance=all, since put() failures are not tolerated).
    value: object = []
    for _ in range(5000):
        value = [value, {"k": 1.0}]
    text = java_string(value)
    assert text.startswith("[" * 5001 + "], {k=1.0}]") and text.endswith(", {k=1.0}]")
    assert text.count("{k=1.0}") == 5000


def test_structs_maps_lists_and_scalars_as_java_prints_them() -> None:
    schema = (
        SchemaBuilder.struct()
        .field("line", SchemaBuilder.string().build())
        .field("src", SchemaBuilder.string().optional().build())
        .field("f", FLOAT32_SCHEMA)
        .field("inner", SchemaBuilder.array(SchemaBuilder.float32().build()).build())
        .build()
    )
    value = Struct(schema).put("line", "hello").put("f", 0.1).put("inner", [0.1, 1e7])
    assert java_string(value, schema) == "Struct{line=hello,f=0.1,inner=[0.1, 1.0E7]}"
    assert java_string({"n": 1e7, "b": False, "x": None, "l": []}) == (
        "{n=1.0E7, b=false, x=null, l=[]}"
    )
    moment = datetime.datetime(2026, 11, 28, 18, 59, 56, tzinfo=datetime.UTC)
    assert java_string(moment) == "Sat Nov 28 18:59:56 UTC 2026"
    assert java_string(b"caf\xc3\xa9") == "café"
    assert java_string([b"\xff"]) == "[[-1]]"


def test_a_float32_value_is_rounded_to_a_java_float_before_it_prints() -> None:
    # A FLOAT32 payload of 1e39 is Java's Float.POSITIVE_INFINITY ((float) 1e39); the file
    # sink failed on it with decimal.InvalidOperation (Kafka Connect 4.1.1 writes Infinity).
    assert java_string(1e39, FLOAT32_SCHEMA) == "Infinity"
    assert java_string(-1e39, FLOAT32_SCHEMA) == "-Infinity"
    assert java_string(3.4028236e38, FLOAT32_SCHEMA) == "Infinity"
    assert java_string(3.4028235e38, FLOAT32_SCHEMA) == "3.4028235E38"
    # ... and one too small for a float is a (signed) zero.
    assert java_string(1e-50, FLOAT32_SCHEMA) == "0.0"
    assert java_string(-1e-50, FLOAT32_SCHEMA) == "-0.0"
    assert java_string([1e39], SchemaBuilder.array(FLOAT32_SCHEMA).build()) == "[Infinity]"


def test_java_class_name_is_the_class_kafka_connect_would_hold() -> None:
    from decimal import Decimal as BigDecimal

    from plugin_api import (
        INT8_SCHEMA,
        INT16_SCHEMA,
        INT32_SCHEMA,
        SinkRecord,
        SourceRecord,
        java_class_name,
    )

    assert java_class_name(None) == "null"
    assert java_class_name("s") == "java.lang.String"
    assert java_class_name(True) == "java.lang.Boolean"
    # Without a schema an int is a Long (how a schemaless JsonConverter reads numbers).
    assert java_class_name(1) == "java.lang.Long"
    assert java_class_name(1, INT8_SCHEMA) == "java.lang.Byte"
    assert java_class_name(1, INT16_SCHEMA) == "java.lang.Short"
    assert java_class_name(1, INT32_SCHEMA) == "java.lang.Integer"
    assert java_class_name(1.5) == "java.lang.Double"
    assert java_class_name(1.5, FLOAT32_SCHEMA) == "java.lang.Float"
    assert java_class_name(b"x") == "[B"
    assert java_class_name(BigDecimal("1.5")) == "java.math.BigDecimal"
    assert java_class_name(datetime.datetime(2026, 1, 1)) == "java.util.Date"
    assert java_class_name(datetime.date(2026, 1, 1)) == "java.util.Date"
    assert java_class_name({}) == "java.util.HashMap"
    assert java_class_name([]) == "java.util.ArrayList"
    schema = SchemaBuilder.struct().field("a", INT32_SCHEMA).build()
    assert java_class_name(Struct(schema)) == "org.apache.kafka.connect.data.Struct"
    source = SourceRecord(None, None, "t", 0, None, None, None, 1)
    assert java_class_name(source) == "org.apache.kafka.connect.source.SourceRecord"
    assert java_class_name(SinkRecord("t", 0, None, None, None, 1, 0)) == (
        "org.apache.kafka.connect.sink.SinkRecord"
    )
    assert java_class_name(object()) == "object"
