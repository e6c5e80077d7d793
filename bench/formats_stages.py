"""Where the time of bench/formats_bench.py's schemaful chains goes, stage by stage.

Run from the repository root:  uv run python bench/formats_stages.py [--rounds 5]

The loop of formats_bench.run(), on the same records, grown one stage at a time: decode (the
batch method) and build the SinkRecord; + RegexRouter; + MaskField$Value; + InsertField$Value;
+ encode. Every variant and the stdlib json baseline run once per round, alternating; a
stage's cost is the median difference between the variant that has it and the one before
(microseconds of CPU time per record). Each stage runs where it runs in the real loop (on
records of a batch decoded first, outputs kept until the batch ends), so these add up to the
bench's figure, which per-stage micro-benchmarks on one hot record do not (they measured
about half). The outputs are not checked here: formats_bench.py does that.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import formats_bench as bench  # noqa: E402
from copycat_avro import AvroConverter  # noqa: E402
from copycat_converters import JsonConverter  # noqa: E402

from core.dev.broker import DevBroker  # noqa: E402
from core.dev.schema_registry import SchemaRegistry  # noqa: E402
from isolation import allocator  # noqa: E402
from plugin_api import SinkRecord, Struct  # noqa: E402

STAGES = ["decode + SinkRecord", "RegexRouter", "MaskField", "InsertField", "encode"]
clock = time.process_time


def loop(converter: Any, inputs: list[bytes], stages: int) -> Callable[[], float]:
    """formats_bench.run()'s loop with the first ``stages`` stages; µs per record."""
    transforms = bench.chain()[: max(0, stages - 1)]
    encode = stages == len(STAGES)

    def measure() -> float:
        elapsed = 0.0
        no_headers = [None] * bench.BATCH
        for first in range(0, len(inputs), bench.BATCH):
            batch = inputs[first : first + bench.BATCH]
            out = []
            start = clock()
            pairs = converter.to_connect_data_batch(bench.TOPIC, batch, no_headers[: len(batch)])
            for offset, (schema, value) in enumerate(pairs, first):
                record = SinkRecord(
                    bench.TOPIC, 0, None, None, schema, value, offset, bench.timestamp(offset)
                )
                for t in transforms:
                    record = t.apply(record)
                if encode:
                    out.append(
                        converter.from_connect_data(record.topic, record.value_schema, record.value)
                    )
            elapsed += clock() - start
        return elapsed / len(inputs) * 1e6

    return measure


def baseline(inputs: list[bytes]) -> Callable[[], float]:
    def measure() -> float:
        elapsed = 0.0
        for first in range(0, len(inputs), bench.BATCH):
            start = clock()
            [json.dumps(json.loads(b)).encode() for b in inputs[first : first + bench.BATCH]]
            elapsed += clock() - start
        return elapsed / len(inputs) * 1e6

    return measure


def report(label: str, converter: Any, inputs: list[bytes], raw: list[bytes], rounds: int) -> None:
    variants = {"baseline": baseline(raw)}
    for count in range(1, len(STAGES) + 1):
        variants[STAGES[count - 1]] = loop(converter, inputs, count)
    found: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, measure in variants.items():
            found[name].append(measure())
    print(f"{label}: us per record (CPU time), median of {rounds} rounds")
    print(f"  baseline json.loads + dumps {statistics.median(found['baseline']):6.2f}")
    previous = [0.0] * rounds
    for name in STAGES:
        step = [now - before for now, before in zip(found[name], previous, strict=True)]
        print(f"  {name:<27} {statistics.median(step):6.2f}")
        previous = found[name]
    total = statistics.median(found[STAGES[-1]])
    ratios = [b / t for b, t in zip(found["baseline"], found[STAGES[-1]], strict=True)]
    print(f"  {'whole chain':<27} {total:6.2f}   ratio {statistics.median(ratios):.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    allocator.tune_this_process()
    allocator.tune_gc()
    docs = [bench.document(i) for i in range(bench.RECORDS)]
    raw = [json.dumps(d).encode() for d in docs]
    structs = [Struct.from_dict(bench.SCHEMA, d) for d in docs]
    enveloped = JsonConverter()
    enveloped.configure({"schemas.enable": "true"}, False)
    env_raw = [enveloped.from_connect_data(bench.TOPIC, bench.SCHEMA, s) for s in structs]
    report("JSON with schemas", enveloped, env_raw, raw, rounds)  # type: ignore[arg-type]
    with DevBroker() as broker, SchemaRegistry(broker.bootstrap_servers) as registry:
        avro = AvroConverter()
        avro.configure({"schema.registry.url": registry.url}, False)
        avro_raw = [avro.from_connect_data(bench.TOPIC, bench.SCHEMA, s) for s in structs]
        report("Avro", avro, avro_raw, raw, rounds)  # type: ignore[arg-type]
        avro.close()


if __name__ == "__main__":
    main()
