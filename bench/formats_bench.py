"""Converter + SMT chain throughput per core: bytes -> converter -> 3 SMTs -> converter -> bytes.

Run from the repository root:  uv run python bench/formats_bench.py

For 1 KiB records, one process (one core), the code a plugin host runs per record:
* JSON schemaless: JsonConverter(schemas.enable=false) -> chain -> JsonConverter
* JSON with schemas: JsonConverter(schemas.enable=true) envelope -> chain -> envelope
* Avro: AvroConverter (Confluent wire format; schema ids from a dev Schema Registry on a dev
  broker, cached after the first record) -> chain -> AvroConverter
The chain is the deep-dive seed's: RegexRouter + MaskField$Value + InsertField$Value. Records go
through in batches of 2,000, as a plugin host gets them: each batch's values are converted as
one column (``Converter.to_connect_data_batch``, as the host's sink path does), then record by
record through the chain and the encoder. Baselines in the same run: json.loads + json.dumps,
and orjson.loads + orjson.dumps (what JsonConverter uses), of the same bytes, no Connect types.
Every output is decoded again (Avro with fastavro and the registry's schema, not with our
converter) and compared with what the chain must make of its input, and the counts must match,
before a rate counts. Where java, javac and Kafka Connect's jars (a local Maven repository,
PEER_JARS) are here, the same JSON-with-schemas chain runs through Kafka Connect itself on the
same data (bench/peer/ConnectChainBench.java) and its rate is printed as the peer ratio, once
its outputs are byte-identical to Copycat's (CRC32 and count). All paths run once per round,
three rounds; each path's ratio is to the json baseline of its own round. Rates are records
per CPU second of this process (one core), which runs with a plugin host's allocator and
garbage collector settings.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import fastavro
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from copycat_avro import AvroConverter  # noqa: E402
from copycat_avro._avrodata import physical  # noqa: E402
from copycat_converters import JsonConverter  # noqa: E402
from copycat_transforms.insert_field import InsertFieldValue  # noqa: E402
from copycat_transforms.mask_field import MaskFieldValue  # noqa: E402
from copycat_transforms.regex_router import RegexRouter  # noqa: E402

from core.dev.broker import DevBroker  # noqa: E402
from core.dev.schema_registry import SchemaRegistry  # noqa: E402
from isolation import allocator  # noqa: E402
from plugin_api import SchemaBuilder, SinkRecord, Struct  # noqa: E402

RECORDS = 20_000
BATCH = 2_000  # the sink loop's MAX_RECORDS_PER_PUT
TARGET_SCHEMALESS_PER_CORE = 100_000
TOPIC = "mysql.customers"
# Rounds of all paths; each path's median over them is printed.
ROUNDS = 3
# CPU time of this (single-threaded) process: the rate per core, unaffected by other tenants
# of the machine taking the core away (wall time under load measured them, not us).
clock = time.process_time
TIMESTAMP = 1_700_000_000_000  # the first record's
# Records per millisecond of timestamp: a producer writing 100,000 records/s. (InsertField and
# the writers share a datetime between records of one millisecond.)
RECORDS_PER_MS = 100
MASKED = {"email": "", "phone": "", "credit_card": ""}


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


def run(decoder, encoder, inputs: list[bytes], check) -> float:
    """Records/s through decoder -> chain -> encoder, in batches of BATCH records as a plugin
    host handles them: a batch's values are converted as one column
    (``to_connect_data_batch``, as the host's sink path does), each record goes through the
    chain and is encoded. Every output of every batch is checked before the rate counts."""
    transforms = chain()
    elapsed = 0.0
    no_headers = [None] * BATCH
    for first in range(0, len(inputs), BATCH):
        batch = inputs[first : first + BATCH]
        out = []
        start = clock()
        pairs = decoder.to_connect_data_batch(TOPIC, batch, no_headers[: len(batch)])
        for offset, (schema, value) in enumerate(pairs, first):
            record = SinkRecord(TOPIC, 0, None, None, schema, value, offset, timestamp(offset))
            for t in transforms:
                record = t.apply(record)
            out.append(encoder.from_connect_data(record.topic, record.value_schema, record.value))
        elapsed += clock() - start
        assert len(out) == len(batch), f"{len(out)} outputs for {len(batch)} records"
        check(out, first)
    return len(inputs) / elapsed


def timestamp(offset: int) -> int:
    """The timestamp of the record at ``offset``."""
    return TIMESTAMP + offset // RECORDS_PER_MS


def expected(i: int, ingested_at: object) -> dict:
    """What the chain makes of document ``i``: three fields masked, the timestamp added."""
    return {**document(i), **MASKED, "ingested_at": ingested_at}


def baseline(loads, dumps, inputs: list[bytes]) -> float:
    """The same batches through a bare loads + dumps, no Connect types, every output checked."""
    elapsed = 0.0
    for first in range(0, len(inputs), BATCH):
        start = clock()
        out = [dumps(loads(b)) for b in inputs[first : first + BATCH]]
        elapsed += clock() - start
        for data, original in zip(out, inputs[first : first + BATCH], strict=True):
            assert json.loads(data) == json.loads(original)
    return len(inputs) / elapsed


# The peer: Apache Kafka Connect's JsonConverter and SMTs (bench/peer/ConnectChainBench.java)
# from a local Maven repository, when java, javac and these jars are here.
M2_REPOSITORY = Path(os.environ.get("M2_REPOSITORY", Path.home() / ".m2" / "repository"))
PEER_JARS = [
    "org/apache/kafka/connect-api/4.1.1/connect-api-4.1.1.jar",
    "org/apache/kafka/connect-json/4.1.1/connect-json-4.1.1.jar",
    "org/apache/kafka/connect-transforms/4.1.1/connect-transforms-4.1.1.jar",
    "org/apache/kafka/kafka-clients/4.1.1/kafka-clients-4.1.1.jar",
    "com/fasterxml/jackson/core/jackson-databind/2.19.0/jackson-databind-2.19.0.jar",
    "com/fasterxml/jackson/core/jackson-core/2.19.0/jackson-core-2.19.0.jar",
    "com/fasterxml/jackson/core/jackson-annotations/2.19.0/jackson-annotations-2.19.0.jar",
    "com/fasterxml/jackson/module/jackson-module-blackbird/2.19.0/jackson-module-blackbird-2.19.0.jar",
    "org/slf4j/slf4j-api/1.7.36/slf4j-api-1.7.36.jar",
]
# Rounds the JVM runs the chain; the first ones warm the JIT up, the median of the last
# ROUNDS counts.
PEER_ROUNDS = 10


def framed_crc(outputs: list[bytes]) -> int:
    """CRC32 of the outputs, each as 4-byte big-endian length + bytes (as the peer computes)."""
    crc = 0
    for data in outputs:
        crc = zlib.crc32(struct.pack(">I", len(data)) + data, crc)
    return crc


def connect_peer(inputs: list[bytes]) -> tuple[float, int, int] | None:
    """Kafka Connect's rate for the JSON-with-schemas chain on ``inputs`` (records per CPU
    second of its one thread, median of the warm rounds), with its outputs' CRC and count;
    None (said why) where Kafka Connect cannot run here."""
    jars = [M2_REPOSITORY / jar for jar in PEER_JARS]
    missing = [str(j.name) for j in jars if not j.exists()]
    if missing or not shutil.which("java") or not shutil.which("javac"):
        print(f"peer: Kafka Connect does not run here (missing: {missing or 'java/javac'})")
        return None
    source = Path(__file__).resolve().parent / "peer" / "ConnectChainBench.java"
    with tempfile.TemporaryDirectory(prefix="copycat-peer-") as tmp:
        classpath = ":".join([*map(str, jars), tmp])
        subprocess.run(["javac", "-d", tmp, "-cp", classpath, str(source)], check=True)
        data = Path(tmp) / "inputs.bin"
        data.write_bytes(b"".join(struct.pack(">I", len(r)) + r for r in inputs))
        done = subprocess.run(
            ["java", "-cp", classpath, "ConnectChainBench", str(data), str(PEER_ROUNDS)],
            check=True,
            capture_output=True,
            text=True,
        )
    lines = done.stdout.split()
    rates = [float(lines[i + 1]) for i, word in enumerate(lines) if word == "round"]
    crc, count = int(lines[lines.index("crc") + 1]), int(lines[lines.index("count") + 1])
    return statistics.median(rates[-ROUNDS:]), crc, count


def main() -> None:
    # A plugin host's memory and GC settings (isolation/allocator.py), for the baselines too:
    # with the default young-generation threshold (700) a batch of 2,000 records set off
    # collections that a host never runs.
    allocator.tune_this_process()
    allocator.tune_gc()
    docs = [document(i) for i in range(RECORDS)]
    raw = [json.dumps(d).encode() for d in docs]
    assert 950 < len(raw[0]) < 1100, len(raw[0])

    def check_json(outputs: list[bytes], first: int, envelope: bool) -> None:
        for i, data in enumerate(outputs, first):
            value = json.loads(data)["payload"] if envelope else json.loads(data)
            assert value == expected(i, timestamp(i)), (i, value)

    plain = JsonConverter()
    plain.configure({"schemas.enable": "false"}, False)
    enveloped = JsonConverter()
    enveloped.configure({"schemas.enable": "true"}, False)
    structs = [Struct.from_dict(SCHEMA, d) for d in docs]
    env_raw = [enveloped.from_connect_data(TOPIC, SCHEMA, s) for s in structs]

    with DevBroker() as broker, SchemaRegistry(broker.bootstrap_servers) as registry:
        avro = AvroConverter()
        avro.configure({"schema.registry.url": registry.url}, False)
        avro_raw = [avro.from_connect_data(TOPIC, SCHEMA, s) for s in structs]
        schemas: dict[int, object] = {}

        def writer_schema(schema_id: int) -> object:
            if schema_id not in schemas:
                text = avro._client.schema_by_id(schema_id)
                schemas[schema_id] = fastavro.parse_schema(physical(json.loads(text)))
            return schemas[schema_id]

        def check_avro(outputs: list[bytes], first: int) -> None:
            # Read with fastavro and the schema the registry holds, not with our converter.
            for i, data in enumerate(outputs, first):
                assert data[0] == 0, data[:5]
                writer = writer_schema(int.from_bytes(data[1:5], "big"))
                value = fastavro.schemaless_reader(io.BytesIO(data[5:]), writer, None)  # type: ignore[arg-type]
                assert value == expected(i, timestamp(i)), (i, value)

        paths = {
            "baseline json.loads+dumps": lambda: baseline(
                json.loads, lambda v: json.dumps(v).encode(), raw
            ),
            "baseline orjson.loads+dumps": lambda: baseline(orjson.loads, orjson.dumps, raw),
            "JSON schemaless + 3 SMTs": lambda: run(
                plain, plain, raw, lambda o, f: check_json(o, f, envelope=False)
            ),
            "JSON with schemas + 3 SMTs": lambda: run(
                enveloped, enveloped, env_raw, lambda o, f: check_json(o, f, envelope=True)
            ),
            "Avro + 3 SMTs": lambda: run(avro, avro, avro_raw, check_avro),
        }
        # Every path once per round, rounds in a row: on a shared machine the load drifts,
        # so each path's ratio is taken to the baseline of its own round.
        rates: dict[str, list[float]] = {label: [] for label in paths}
        for _ in range(ROUNDS):
            for label, measure in paths.items():
                rates[label].append(measure())
        avro.close()
    base = rates["baseline json.loads+dumps"]
    print(f"{'path':<30}{'rec/s per core':>16}{'ratio to stdlib json':>24}   per round")
    for label, found in rates.items():
        ratios = [r / b for r, b in zip(found, base, strict=True)]
        print(
            f"{label:<30}{statistics.median(found):>16,.0f}{statistics.median(ratios):>23.2f}x"
            f"   {', '.join(f'{r:.2f}' for r in ratios)}"
        )
    peer = connect_peer(env_raw)
    if peer is not None:
        # Ours, untimed, for the comparison of outputs: every byte must be Kafka's.
        transforms, ours = chain(), []
        pairs = enveloped.to_connect_data_batch(TOPIC, env_raw, [None] * len(env_raw))
        for offset, (schema, value) in enumerate(pairs):
            record = SinkRecord(TOPIC, 0, None, None, schema, value, offset, timestamp(offset))
            for t in transforms:
                record = t.apply(record)
            ours.append(
                enveloped.from_connect_data(record.topic, record.value_schema, record.value)
            )
        peer_rate, crc, count = peer
        assert count == len(ours), f"peer wrote {count} records of {len(ours)}"
        same = crc == framed_crc(ours)
        ratio = statistics.median(rates["JSON with schemas + 3 SMTs"]) / peer_rate
        print(
            f"peer: Kafka Connect 4.1.1, the JSON with schemas chain on the same data: "
            f"{peer_rate:,.0f} rec/s per core (its thread's CPU time, warm JIT), Copycat "
            f"{ratio:.2f}x of it; outputs "
            + ("byte-identical to Copycat's" if same else "DIFFER from Copycat's (no ratio)")
        )
        assert same, "Kafka Connect and Copycat wrote different bytes"
    schemaless = statistics.median(rates["JSON schemaless + 3 SMTs"])
    print(
        f"(median of {ROUNDS} rounds; CPU time of this process, one core) schemaless target "
        f">= {TARGET_SCHEMALESS_PER_CORE:,} rec/s per core: "
        f"{'met' if schemaless >= TARGET_SCHEMALESS_PER_CORE else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
