"""What a sink consumes: ``topics.regex`` matched as Kafka Connect matches it, ``topics`` as a set.

Real Apache Kafka, real worker and plugin host (the bundled FileStreamSink). Kafka Connect's
pattern subscription takes a topic when Java's ``Pattern.matcher(topic).matches()``: the whole
name, Java's syntax, internal topics never. Before the fix the sink handed ``^<regex>`` to
librdkafka, which searches in POSIX syntax and includes internal topics: ``v1`` consumed
``v1x`` too, ``v\\d`` consumed nothing, ``(?i)V1`` failed the task, ``__.*`` consumed
``__consumer_offsets``, and a sink consumed its own dead letter queue ``<topic>-dlq`` forever.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer
from plugin_api.errors import ConfigException

import core.runtime.sink as sink_module
from core.offsets import MemoryOffsetStore
from core.plugins import PluginCatalogue
from core.status import State
from core.worker import Worker
from tests.support.apache_kafka import KafkaCluster
from tests.support.kafka import produce, read_topic, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.apache_kafka_only("internal topics and pattern semantics of Apache Kafka"),
]

RECORDS = 20
# Past JOIN_WARN_S, how long the join-warning test waits for a warning that must not come
# (the loop checks at each consume, every 0.2 s while idle).
JOIN_WARN_MARGIN_S = 8.0
# After the expected records arrived, how long a test waits for records that must not come
# (another topic's, the DLQ's): longer than a metadata refresh of the sink's matcher.
QUIET_S = 12.0


@pytest.fixture
def worker(catalogue: PluginCatalogue, bootstrap_servers: str) -> Iterator[Worker]:
    w = Worker(
        "w1",
        {
            "key.converter": "StringConverter",
            "value.converter": "StringConverter",
            "offset.flush.interval.ms": "500",
        },
        catalogue,
        MemoryOffsetStore(),
        client_props={"bootstrap.servers": bootstrap_servers},
    )
    yield w
    w.stop()


def _start(worker: Worker, name: str, config: dict[str, str]) -> None:
    worker.start_connector(name, {"name": name, "connector.class": "FileStreamSink", **config})
    assert worker.start_task(name, 0, worker.task_configs(name)[0]).wait_started(60)


def _state(worker: Worker, name: str) -> State | None:
    status = worker.status.task(name, 0)
    return None if status is None else status.state


def _lines(out: Path) -> list[str]:
    return out.read_text().splitlines() if out.exists() else []


def _consumes_exactly(worker: Worker, name: str, out: Path, expected: list[str]) -> None:
    wait_for(lambda: len(_lines(out)) >= len(expected), 60, f"{len(expected)} lines in {out}")
    time.sleep(QUIET_S)
    assert sorted(_lines(out)) == sorted(expected)
    assert _state(worker, name) is State.RUNNING, worker.status.task(name, 0)


def _topics(broker: KafkaCluster, bootstrap: str, names: dict[str, str]) -> None:
    """Create each topic (one partition) and write RECORDS records ``<tag>-<i>`` to it."""
    for name in names:
        broker.create_topic(name, 1)
    for name, tag in names.items():
        produce(bootstrap, name, (f"{tag}-{i}".encode() for i in range(RECORDS)))


def _expected(*tags: str) -> list[str]:
    return [f"{tag}-{i}" for tag in tags for i in range(RECORDS)]


def test_topics_regex_matches_whole_names(
    worker: Worker, broker: KafkaCluster, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    _topics(broker, bootstrap_servers, {f"{topic_name}-v1": "v1", f"{topic_name}-v1x": "v1x"})
    out = tmp_path / "out.txt"
    _start(worker, "whole", {"file": str(out), "topics.regex": f"{topic_name}-v1"})
    _consumes_exactly(worker, "whole", out, _expected("v1"))


def test_topics_regex_has_javas_syntax(
    worker: Worker, broker: KafkaCluster, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    _topics(
        broker,
        bootstrap_servers,
        {f"{topic_name}-v1": "v1", f"{topic_name}-v2": "v2", f"{topic_name}-vx": "vx"},
    )
    digits, flags = tmp_path / "digits.txt", tmp_path / "flags.txt"
    _start(worker, "digits", {"file": str(digits), "topics.regex": rf"{topic_name}-v\d"})
    # Java applies an inline flag from where it stands; Python wants it first.
    _start(worker, "flags", {"file": str(flags), "topics.regex": f"{topic_name}-(?i)V1"})
    _consumes_exactly(worker, "digits", digits, _expected("v1", "v2"))
    _consumes_exactly(worker, "flags", flags, _expected("v1"))


def test_topics_regex_never_matches_internal_topics(
    worker: Worker, broker: KafkaCluster, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    _topics(broker, bootstrap_servers, {topic_name: "t"})
    out = tmp_path / "out.txt"
    _start(worker, "internal", {"file": str(out), "topics.regex": f"__.*|{topic_name}"})
    _consumes_exactly(worker, "internal", out, _expected("t"))


def test_regex_sink_does_not_consume_its_dead_letter_queue(
    worker: Worker, broker: KafkaCluster, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    dlq = f"{topic_name}-dlq"
    broker.create_topic(topic_name, 1)
    produce(bootstrap_servers, topic_name, [b"not json", b'"fine"'])
    out = tmp_path / "out.txt"
    _start(
        worker,
        "own-dlq",
        {
            "file": str(out),
            "topics.regex": topic_name,
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": dlq,
            "errors.deadletterqueue.topic.replication.factor": "1",
        },
    )
    _consumes_exactly(worker, "own-dlq", out, ["fine"])
    assert [m.value() for m in read_topic(bootstrap_servers, dlq)] == [b"not json"]


def test_repeated_topics_are_consumed_once_and_an_illegal_one_fails_the_task(
    worker: Worker, broker: KafkaCluster, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    _topics(broker, bootstrap_servers, {topic_name: "t"})
    out = tmp_path / "out.txt"
    _start(worker, "twice", {"file": str(out), "topics": f"{topic_name},{topic_name}"})
    wait_for(lambda: len(_lines(out)) >= RECORDS, 60, f"{RECORDS} lines in {out}")
    assert _lines(out) == _expected("t")
    assert _state(worker, "twice") is State.RUNNING
    # Kafka Connect accepts an illegal name at create and its task fails; refused at once here.
    with pytest.raises(ConfigException, match='Topic name "bad!" is illegal'):
        _start(worker, "illegal", {"file": str(tmp_path / "x.txt"), "topics": f"{topic_name},bad!"})


def test_a_sink_waiting_for_its_topics_does_not_warn_of_a_stuck_join(
    worker: Worker,
    broker: KafkaCluster,
    bootstrap_servers: str,
    topic_name: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The loop runs in the plugin host: the warning's delay is waited out for real.
    caplog.set_level(logging.INFO, logger="copycat.sink")
    _start(worker, "no-match", {"file": str(tmp_path / "a.txt"), "topics.regex": topic_name})
    _start(worker, "not-yet", {"file": str(tmp_path / "b.txt"), "topics": topic_name + "-ny"})
    time.sleep(sink_module.JOIN_WARN_S + JOIN_WARN_MARGIN_S)
    assert _state(worker, "no-match") is State.RUNNING
    assert _state(worker, "not-yet") is State.RUNNING
    texts = [r.getMessage() for r in caplog.records]
    assert not [t for t in texts if "joining its group" in t], texts
    assert len([t for t in texts if "waiting for a topic matching" in t]) == 1, texts
    # The regex sink's only topic comes and goes: no "waiting for its topics" about it.
    _topics(broker, bootstrap_servers, {topic_name: "t"})
    out = tmp_path / "a.txt"
    wait_for(lambda: len(_lines(out)) >= RECORDS, 60, f"{RECORDS} lines in {out}")
    broker.delete_topics([topic_name])
    time.sleep(QUIET_S)
    texts = [r.getMessage() for r in caplog.records]
    assert not [t for t in texts if "joining its group" in t], texts
    assert not [t for t in texts if "waiting for its topics to be created" in t and "-ny" not in t]
    assert _state(worker, "no-match") is State.RUNNING


def _produce_to(bootstrap: str, topic: str, partition: int, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value.encode(), partition=partition)
    assert producer.flush(30) == 0


def test_regex_sink_follows_topics_created_grown_and_recreated(
    worker: Worker, broker: KafkaCluster, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    a, b = f"{topic_name}-a", f"{topic_name}-b"
    _topics(broker, bootstrap_servers, {a: "a"})
    out = tmp_path / "out.txt"
    _start(worker, "follows", {"file": str(out), "topics.regex": rf"{topic_name}-\w"})
    seen = _expected("a")
    wait_for(lambda: sorted(_lines(out)) == sorted(seen), 60, "a's records")
    _topics(broker, bootstrap_servers, {b: "b"})  # created after the sink started
    seen += _expected("b")
    wait_for(lambda: sorted(_lines(out)) == sorted(seen), 60, "b's records")
    broker.add_partitions(a, 2)
    _produce_to(bootstrap_servers, a, 1, ["a1-0", "a1-1"])
    seen += ["a1-0", "a1-1"]
    wait_for(lambda: sorted(_lines(out)) == sorted(seen), 60, "records of a's new partition")
    broker.delete_topics([b])
    wait_for(lambda: _recreated(broker, b), 60, f"{b} created again")
    _produce_to(bootstrap_servers, b, 0, ["b2-0"])
    seen += ["b2-0"]
    wait_for(lambda: sorted(_lines(out)) == sorted(seen), 60, "records of b created again")
    assert _state(worker, "follows") is State.RUNNING


def _recreated(broker: KafkaCluster, topic: str) -> bool:
    try:
        broker.create_topic(topic, 1)
    except KafkaException:  # the deletion is still under way
        time.sleep(0.5)
        return False
    return True
