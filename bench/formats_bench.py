"""Converter + SMT chain throughput per core: bytes -> converter -> 3 SMTs -> converter -> bytes.

Run from the repository root:  uv run python bench/formats_bench.py

For 1 KiB records, one process (one core), the code a plugin host runs per record:
* JSON schemaless: JsonConverter(schemas.enable=false) -> chain -> JsonConverter
* JSON with schemas: JsonConverter(schemas.enable=true) envelope -> chain -> envelope
* Avro: AvroConverter (Confluent wire format; schema ids from a dev Schema Registry on a dev
  broker, cached after the first record) -> chain -> AvroConverter
The chain is the deep-dive seed's: RegexRouter + MaskField$Value + InsertField$Value. Records go
through in batches of 2,000, as a plugin host gets them. Baselines in the same run: json.loads +
json.dumps, and orjson.loads + orjson.dumps (what JsonConverter uses), of the same bytes, no
Connect types. Every batch's output is decoded again and checked (masked fields empty, inserted
field present) before it counts.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from copycat_avro import AvroConverter  # noqa: E402
from copycat_converters import JsonConverter  # noqa: E402
from copycat_transforms.insert_field import InsertFieldValue  # noqa: E402
from copycat_transforms.mask_field import MaskFieldValue  # noqa: E402
from copycat_transforms.regex_router import RegexRouter  # noqa: E402

from core.devbroker import DevBroker  # noqa: E402
from core.schema_registry import SchemaRegistry  # noqa: E402
from plugin_api import SchemaBuilder, SinkRecord, Struct  # noqa: E402

RECORDS = 20_000
BATCH = 2_000  # the sink loop's MAX_RECORDS_PER_PUT
TARGET_SCHEMALESS_PER_CORE = 100_000


def chain() -> list:
    route = RegexRouter()
    route.configure({"regex": r"mysql\.(.*)", "replacement": "processed.$1"})
    mask = MaskFieldValue()
    mask.configure({"fields": "email,phone,credit_card"})
    insert = InsertFieldValue()
    insert.configure({"timestamp.field": "ingested_at"})
    return [route, mask, insert]


def document(i: int) -> dict:
    return {
        "id": i,
        "email": f"user{i}@example.com",
        "phone": "555-0100",
        "credit_card": "4111111111111111",
        "city": "Oslo",
        "notes": "x" * 880,
    }


SCHEMA = (
    SchemaBuilder.struct()
    .name("customer")
    .field("id", SchemaBuilder.int32().build())
    .field("email", SchemaBuilder.string().build())
    .field("phone", SchemaBuilder.string().build())
    .field("credit_card", SchemaBuilder.string().build())
    .field("city", SchemaBuilder.string().build())
    .field("notes", SchemaBuilder.string().build())
    .build()
)


def run(label: str, decoder, encoder, inputs: list[bytes], check) -> float:
    """Records/s through decoder -> chain -> encoder, in batches of BATCH records as a plugin
    host handles them (a sink's put(), a source's poll()); every batch's output is checked."""
    transforms = chain()
    elapsed = 0.0
    for first in range(0, len(inputs), BATCH):
        out = []
        start = time.perf_counter()
        for offset, data in enumerate(inputs[first : first + BATCH], first):
            schema, value = decoder.to_connect_data("mysql.customers", data)
            record = SinkRecord(
                "mysql.customers", 0, None, None, schema, value, offset, 1_700_000_000_000
            )
            for t in transforms:
                record = t.apply(record)
            out.append(encoder.from_connect_data(record.topic, record.value_schema, record.value))
        elapsed += time.perf_counter() - start
        check(out)
    rate = len(inputs) / elapsed
    print(f"{label:<34}{rate:>12,.0f} rec/s per core")
    return rate


def baseline(label: str, loads, dumps, inputs: list[bytes]) -> float:
    """The same batches through a bare loads + dumps, no Connect types."""
    elapsed = 0.0
    for first in range(0, len(inputs), BATCH):
        start = time.perf_counter()
        out = [dumps(loads(b)) for b in inputs[first : first + BATCH]]
        elapsed += time.perf_counter() - start
        assert json.loads(out[-1]) == json.loads(inputs[first + len(out) - 1])
    rate = len(inputs) / elapsed
    print(f"{label:<34}{rate:>12,.0f} rec/s per core")
    return rate


def main() -> None:
    docs = [document(i) for i in range(RECORDS)]
    raw = [json.dumps(d).encode() for d in docs]
    assert 950 < len(raw[0]) < 1100, len(raw[0])

    base_rate = baseline(
        "baseline json.loads+dumps", json.loads, lambda v: json.dumps(v).encode(), raw
    )
    orjson_rate = baseline("baseline orjson.loads+dumps", orjson.loads, orjson.dumps, raw)

    def check_json(outputs: list[bytes], envelope: bool) -> None:
        for data in (outputs[0], outputs[-1]):
            value = json.loads(data)["payload"] if envelope else json.loads(data)
            assert value["email"] == "" and value["ingested_at"] is not None, value

    plain = JsonConverter()
    plain.configure({"schemas.enable": "false"}, False)
    r1 = run("JSON schemaless + 3 SMTs", plain, plain, raw, lambda o: check_json(o, envelope=False))

    enveloped = JsonConverter()
    enveloped.configure({"schemas.enable": "true"}, False)
    structs = [Struct(SCHEMA) for _ in range(RECORDS)]
    for s, d in zip(structs, docs, strict=True):
        for k, v in d.items():
            s.put(k, v)
    env_raw = [enveloped.from_connect_data("mysql.customers", SCHEMA, s) for s in structs]
    r2 = run(
        "JSON with schemas + 3 SMTs",
        enveloped,
        enveloped,
        env_raw,
        lambda o: check_json(o, envelope=True),
    )

    with DevBroker() as broker, SchemaRegistry(broker.bootstrap_servers) as registry:
        avro = AvroConverter()
        avro.configure({"schema.registry.url": registry.url}, False)
        avro_raw = [avro.from_connect_data("mysql.customers", SCHEMA, s) for s in structs]

        def check_avro(outputs: list[bytes]) -> None:
            schema, value = avro.to_connect_data("processed.customers", outputs[-1])
            assert value.get("email") == "" and value.get("ingested_at") is not None

        r3 = run("Avro + 3 SMTs", avro, avro, avro_raw, check_avro)
        avro.close()
    print(
        f"ratios to the bare json baseline: schemaless {r1 / base_rate:.2f}x, "
        f"schemas {r2 / base_rate:.2f}x, avro {r3 / base_rate:.2f}x; to orjson: schemaless "
        f"{r1 / orjson_rate:.2f}x; schemaless target "
        f">= {TARGET_SCHEMALESS_PER_CORE:,} rec/s per core: "
        f"{'met' if r1 >= TARGET_SCHEMALESS_PER_CORE else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
