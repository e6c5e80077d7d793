"""MaskField and InsertField copy a struct's values instead of putting each again; they give
exactly the records and errors of Kafka's rebuilding (kept as ``_apply_rebuilding``), for
generated schemas and values, incomplete structs (required fields unset) included."""

from __future__ import annotations

from typing import Any

import pytest
from connect_strategies import deep_repr, struct_schemas, values
from copycat_transforms.insert_field import InsertFieldKey, InsertFieldValue
from copycat_transforms.mask_field import MaskFieldKey, MaskFieldValue
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugin_api import ConfigException, Schema, SchemaBuilder, SinkRecord, SourceRecord, Struct

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def records(draw: st.DrawFn) -> tuple[Any, Struct]:
    """A sink or source record whose value is a struct, maybe with required fields unset
    (a connector's struct is only checked as a whole when someone calls validate())."""
    schema = draw(struct_schemas(max_leaves=8))
    struct = draw(values(schema, allow_none=False))
    field_values = struct.field_values()
    for index in draw(st.sets(st.integers(0, max(0, len(field_values) - 1)))):
        if index < len(field_values):
            field_values[index] = None
    struct = Struct.from_values(schema, field_values, validate=False)
    timestamp = draw(st.none() | st.integers(0, 2**41))
    if draw(st.booleans()):
        partition = draw(st.none() | st.integers(0, 2**31 - 1) | st.just(2**31))
        return SinkRecord("t", partition, None, None, schema, struct, 42, timestamp), struct
    return SourceRecord(
        {"p": 1}, {"o": 2}, "t", None, None, None, schema, struct, timestamp
    ), struct


def result(call: Any) -> tuple[str, str]:
    try:
        record = call()
    except Exception as exc:  # noqa: BLE001 - the error is the outcome
        return ("error", f"{type(exc).__qualname__}: {exc}")
    return ("ok", deep_repr((record.value_schema, record.value, record.topic, record.timestamp)))


@SETTINGS
@given(records(), st.data())
def test_mask_field_gives_the_rebuilding_result(found: tuple[Any, Struct], data: Any) -> None:
    record, struct = found
    names = [f.name for f in struct.schema.fields]
    fields = data.draw(st.lists(st.sampled_from([*names, "absent"]), min_size=1, max_size=4))
    config: dict[str, object] = {
        "fields": ",".join(fields),
        "replace.null.with.default": data.draw(st.sampled_from(["true", "false"])),
    }
    replacement = data.draw(st.none() | st.sampled_from(["0", "12", "99999999999", "x", "1.5"]))
    if replacement is not None:
        config["replacement"] = replacement
    mask = MaskFieldValue()
    mask.configure(config)
    expected = result(lambda: mask._apply_rebuilding(record, struct))
    assert result(lambda: mask.apply(record)) == expected
    assert result(lambda: mask.apply(record)) == expected  # with the plan cached


SPECS = st.none() | st.sampled_from(["ins", "ins?", "ins!"])


@SETTINGS
@given(records(), st.data())
def test_insert_field_gives_the_rebuilding_result(found: tuple[Any, Struct], data: Any) -> None:
    record, struct = found
    config: dict[str, object] = {
        "replace.null.with.default": data.draw(st.sampled_from(["true", "false"]))
    }
    for key, suffix in (
        ("topic.field", "t"),
        ("partition.field", "p"),
        ("offset.field", "o"),
        ("timestamp.field", "ts"),
        ("static.field", "s"),
    ):
        spec = data.draw(SPECS)
        if spec is not None:
            config[key] = spec.replace("ins", f"ins_{suffix}")
    if data.draw(st.booleans()):
        config["static.value"] = "v"
    insert = InsertFieldValue()
    if len(config) == 1 + ("static.value" in config) or (
        "static.field" in config and "static.value" not in config
    ):
        with pytest.raises(ConfigException):  # nothing to insert, or no static value: Kafka's
            insert.configure(config)
        return
    insert.configure(config)
    expected = result(lambda: insert._apply_rebuilding(record, struct))
    assert result(lambda: insert.apply(record)) == expected
    assert result(lambda: insert.apply(record)) == expected


def as_key(record: Any) -> Any:
    """The record with its value schema and value moved to the key side."""
    return record.new_record(
        key_schema=record.value_schema, key=record.value, value_schema=None, value=None
    )


@SETTINGS
@given(st.lists(records(), min_size=2, max_size=6), st.data())
def test_one_instance_over_records_of_several_schemas_and_both_sides(
    found: list[tuple[Any, Struct]], data: Any
) -> None:
    """The compiled function of the last schema is found by identity, the others by the
    cache; $Key variants read and rebuild the key. Each record gives the rebuilding result."""
    side = data.draw(st.sampled_from(["key", "value"]))
    names = sorted({f.name for _, struct in found for f in struct.schema.fields} | {"absent"})
    fields = data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=3))
    mask = MaskFieldKey() if side == "key" else MaskFieldValue()
    mask.configure({"fields": ",".join(fields)})
    insert = InsertFieldKey() if side == "key" else InsertFieldValue()
    insert.configure({"timestamp.field": "ts", "offset.field": "o?", "topic.field": "t!"})
    order = data.draw(st.lists(st.integers(0, len(found) - 1), min_size=3, max_size=12))
    for index in order:
        record, struct = found[index]
        if side == "key":
            record = as_key(record)
        for transform in (mask, insert):
            expected = result(lambda t=transform, r=record, s=struct: t._apply_rebuilding(r, s))
            got = result(lambda t=transform, r=record: t.apply(r))
            if side == "key":
                assert got[0] == expected[0]
                if got[0] == "ok":  # compare the key side
                    assert deep_repr(_key_of(transform.apply(record))) == deep_repr(
                        _key_of(transform._apply_rebuilding(record, struct))
                    )
            else:
                assert got == expected


def _key_of(record: Any) -> tuple[Any, Any, Any, Any]:
    return (record.key_schema, record.key, record.value_schema, record.value)


def test_structs_keep_the_schema_objects_of_the_general_path() -> None:
    """Equal schemas built separately (a connector may build one per record): MaskField's
    struct has the record's own schema object, InsertField's the cached updated one, as
    their general paths give (downstream caches look schemas up by identity first)."""

    def schema() -> Any:
        return SchemaBuilder.struct().field("a", Schema.STRING_SCHEMA).build()

    first, second = schema(), schema()
    assert first == second and first is not second
    mask, insert = MaskFieldValue(), InsertFieldValue()
    mask.configure({"fields": "a"})
    insert.configure({"timestamp.field": "ts"})
    for own in (first, second, first):
        record = SinkRecord("t", 0, None, None, own, Struct(own).put("a", "x"), 1, 5)
        masked = mask.apply(record)
        assert masked is not None and masked.value.schema is own
        assert masked.value_schema is own
        general = mask._apply_struct(record, record.value)
        assert general.value.schema is own and general.value == masked.value
        inserted = insert.apply(record)
        assert inserted is not None
        reference = insert._apply_with_schema(record, record.value)
        assert inserted.value_schema is reference.value_schema
        assert inserted.value.schema is reference.value.schema
        assert inserted.value == reference.value
