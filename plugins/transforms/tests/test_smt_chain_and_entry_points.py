"""The deep-dive seed's example chain, and the entry points that make Kafka class names resolve."""

from __future__ import annotations

import datetime
import importlib.metadata

from copycat_transforms import InsertFieldValue, MaskFieldValue, RegexRouter
from plugin_api.testing import apply_transform

from plugin_api import (
    Predicate,
    Schema,
    SchemaBuilder,
    SinkRecord,
    SourceRecord,
    Struct,
    Timestamp,
    Transformation,
)

# transforms=route,maskPII,addTimestamp, exactly as in the kafka-connect deep-dive seed.
CHAIN_CONFIG = {
    "transforms": "route,maskPII,addTimestamp",
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": "mysql\\.(.*)",
    "transforms.route.replacement": "processed.$1",
    "transforms.maskPII.type": "org.apache.kafka.connect.transforms.MaskField$Value",
    "transforms.maskPII.fields": "email,phone,credit_card",
    "transforms.addTimestamp.type": "org.apache.kafka.connect.transforms.InsertField$Value",
    "transforms.addTimestamp.timestamp.field": "ingested_at",
}
CLASSES = {
    cls.KAFKA_CLASS_ALIASES[0]: cls for cls in (RegexRouter, MaskFieldValue, InsertFieldValue)
}


def run_chain(records):
    """Configure the chain from the connector-style config and push records through it."""
    chain = []
    for alias in CHAIN_CONFIG["transforms"].split(","):
        prefix = f"transforms.{alias}."
        cls = CLASSES[CHAIN_CONFIG[prefix + "type"]]
        conf = {
            k[len(prefix) :]: v
            for k, v in CHAIN_CONFIG.items()
            if k.startswith(prefix) and k != prefix + "type"
        }
        chain.append((cls, conf))
    out = []
    for record in records:
        for cls, conf in chain:
            record = apply_transform(cls, conf, record)
            if record is None:
                break
        out.append(record)
    return out


def test_seed_chain_schemaless() -> None:
    records = [
        SourceRecord(
            {"db": "shop"},
            {"pos": 1},
            "mysql.customers",
            None,
            None,
            None,
            None,
            {
                "id": 1,
                "name": "Ann",
                "email": "ann@example.com",
                "phone": "555-1234",
                "credit_card": "4111111111111111",
            },
            1_700_000_000_000,
        ),
        SourceRecord(
            {"db": "shop"},
            {"pos": 2},
            "mysql.orders",
            None,
            None,
            None,
            None,
            {"id": 7, "email": "bob@example.com", "total": 12.5},
            1_700_000_000_500,
        ),
        SourceRecord(
            {"db": "shop"}, {"pos": 3}, "audit", None, None, None, None, {"phone": 5551234}, None
        ),
    ]
    first, second, third = run_chain(records)
    assert first.topic == "processed.customers"
    assert first.value == {
        "id": 1,
        "name": "Ann",
        "email": "",
        "phone": "",
        "credit_card": "",
        "ingested_at": 1_700_000_000_000,
    }
    assert first.source_offset == {"pos": 1}
    assert second.topic == "processed.orders"
    # As in Kafka, MaskField sets listed fields the map lacks to null.
    assert second.value == {
        "id": 7,
        "email": "",
        "total": 12.5,
        "phone": None,
        "credit_card": None,
        "ingested_at": 1_700_000_000_500,
    }
    assert third.topic == "audit"  # not matched by the router
    assert third.value == {"phone": 0, "email": None, "credit_card": None, "ingested_at": None}


def test_seed_chain_schemaful() -> None:
    schema = (
        SchemaBuilder.struct()
        .name("mysql.customers.Value")
        .field("id", Schema.INT64_SCHEMA)
        .field("email", Schema.STRING_SCHEMA)
        .field("phone", SchemaBuilder.string().optional().build())
        .field("credit_card", Schema.STRING_SCHEMA)
        .build()
    )
    value = Struct.from_dict(
        schema, {"id": 1, "email": "ann@example.com", "phone": None, "credit_card": "4111"}
    )
    record = SinkRecord(
        "mysql.customers", 2, None, None, schema, value, 99, timestamp=1_700_000_000_000
    )
    (out,) = run_chain([record])
    assert out.topic == "processed.customers"
    assert out.kafka_offset == 99 and out.original_topic == "mysql.customers"
    assert out.value_schema.name == "mysql.customers.Value"
    assert out.value_schema.field("ingested_at").schema == Timestamp.builder().optional().build()
    assert out.value.to_dict() == {
        "id": 1,
        "email": "",
        "phone": None,
        "credit_card": "",
        "ingested_at": datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=datetime.UTC),
    }


def test_every_entry_point_resolves_to_its_kafka_class() -> None:
    eps = importlib.metadata.entry_points()
    transforms = {
        ep.name: ep.load()
        for ep in eps.select(group="copycat.transforms")
        if ep.value.startswith("copycat_transforms")
    }
    predicates = {
        ep.name: ep.load()
        for ep in eps.select(group="copycat.predicates")
        if ep.value.startswith("copycat_transforms")
    }
    assert len(transforms) == 27 and len(predicates) == 3
    # Not in Apache Kafka (yet): the migration transform of the internal-topics sharing KIP.
    beyond_kafka = {"KafkaConnectTopicMigrator"}
    for name, cls in transforms.items():
        assert issubclass(cls, Transformation)
        if name in beyond_kafka:
            assert cls.KAFKA_CLASS_ALIASES == ()
        else:
            assert cls.KAFKA_CLASS_ALIASES == (f"org.apache.kafka.connect.transforms.{name}",)
        assert not getattr(cls, "__abstractmethods__", None), name
        cls().config()  # every transform describes its settings
    for name, cls in predicates.items():
        assert issubclass(cls, Predicate)
        assert cls.KAFKA_CLASS_ALIASES == (
            f"org.apache.kafka.connect.transforms.predicates.{name}",
        )
