"""What Copycat's Kafka client wrappers add per call, beside confluent-kafka's own clients.

Run from the repository root:

    uv run python bench/client_call_costs.py

``core.kafka.Consumer`` and ``Producer`` wrap the calls that serve the client's callbacks
(``consume``, ``poll``) to raise fatal errors and authentication failures. A sink calls
``consume`` once per batch and a source ``poll`` once per poll, never per record, so the figure
to compare is the per-call difference divided by a batch's records. Both clients point at a
closed port (no broker needed): each call returns at once with nothing, which isolates the
wrapper's own cost. Raw and wrapped alternate, best of ``REPEATS`` runs of ``CALLS`` calls.
"""

from __future__ import annotations

import functools
import timeit
from collections.abc import Callable

import confluent_kafka

from core.kafka import Consumer, Producer

REPEATS = 7
CALLS = 20_000
ROUNDS = 2
CONFIG = {"bootstrap.servers": "127.0.0.1:1", "log_level": 0}


def best_ns(call: Callable[[], object]) -> float:
    return min(timeit.repeat(call, number=CALLS, repeat=REPEATS)) / CALLS * 1e9


def main() -> None:
    consumers = (
        confluent_kafka.Consumer({**CONFIG, "group.id": "bench"}),
        Consumer({**CONFIG, "group.id": "bench"}),
    )
    producers = (confluent_kafka.Producer(CONFIG), Producer(CONFIG))
    print("call, ns per call: confluent-kafka / Copycat's wrapper (difference)")
    for _ in range(ROUNDS):
        raw, ours = (best_ns(functools.partial(c.consume, 1, 0)) for c in consumers)
        print(f"  Consumer.consume(1, 0): {raw:6.0f} / {ours:6.0f} (+{ours - raw:.0f})")
        raw, ours = (best_ns(functools.partial(p.poll, 0)) for p in producers)
        print(f"  Producer.poll(0):       {raw:6.0f} / {ours:6.0f} (+{ours - raw:.0f})")
    for consumer in consumers:
        consumer.close()


if __name__ == "__main__":
    main()
