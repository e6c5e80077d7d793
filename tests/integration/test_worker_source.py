"""Source task shutdown on a real broker: prompt, and with every acked offset stored."""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any

import pytest

from core.offsets import MemoryOffsetStore
from core.plugins import PluginCatalogue
from core.worker import Worker
from tests.support.kafka import librdkafka_threads, wait_for_librdkafka_threads

pytestmark = pytest.mark.integration


def _file_source(
    plugin_path: Path,
    bootstrap_servers: str,
    name: str,
    data: Path,
    topic: str,
    worker_props: dict[str, str] | None = None,
    connector_props: dict[str, str] | None = None,
) -> tuple[Worker, Any]:
    """A worker running one FileStreamSource task on ``data`` (StringConverters), and that
    task's loop once started; ``*_props`` are added to the worker's and connector's config."""
    worker = Worker(
        "w1",
        {
            "key.converter": "StringConverter",
            "value.converter": "StringConverter",
            **(worker_props or {}),
        },
        PluginCatalogue.scan([plugin_path]),
        MemoryOffsetStore(),
        client_props={"bootstrap.servers": bootstrap_servers},
    )
    worker.start_connector(
        name,
        {
            "name": name,
            "connector.class": "FileStreamSource",
            "file": str(data),
            "topic": topic,
            **(connector_props or {}),
        },
    )
    assert worker.start_task(name, 0, worker.task_configs(name)[0]).wait_started(60)
    return worker, worker.connectors[name].tasks[0].loop


@pytest.mark.also_on_dev_broker
def test_stopping_a_source_stores_its_last_offset_without_waiting_out_the_timeout(
    bundled_plugin_path: Path, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    data = tmp_path / "in.txt"
    data.write_text("".join(f"line {i}\n" for i in range(1000)))
    name = f"stop-{topic_name}"
    worker, loop = _file_source(
        bundled_plugin_path,
        bootstrap_servers,
        name,
        data,
        topic_name,
        worker_props={
            "offset.flush.interval.ms": "600000",  # only the shutdown flush stores offsets
            "task.shutdown.graceful.timeout.ms": "60000",
        },
    )
    deadline = time.monotonic() + 30
    while loop.records_moved < 1000 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert loop.records_moved == 1000
    started = time.monotonic()
    worker.stop_connector(name)
    took = time.monotonic() - started
    assert worker.offsets.connector_offsets(name) == [
        ({"filename": str(data)}, {"position": data.stat().st_size})
    ]
    # A graceful stop waits for outstanding acks, not for the whole graceful timeout.
    assert took < 30, f"stop took {took:.1f} s of a 60 s graceful timeout"


def test_a_stalled_broker_stops_polling_and_the_task_can_still_be_stopped(
    bundled_plugin_path: Path, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    import socket

    with socket.socket() as probe:  # a local port where no broker answers
        probe.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{probe.getsockname()[1]}"
    data = tmp_path / "in.txt"
    data.write_text("".join(f"line {i}\n" for i in range(50_000)))
    name = f"stalled-{topic_name}"
    worker, loop = _file_source(
        bundled_plugin_path,
        bootstrap_servers,
        name,
        data,
        topic_name,
        worker_props={
            "offset.flush.interval.ms": "200",
            "task.shutdown.graceful.timeout.ms": "2000",
        },
        connector_props={
            "batch.size": "1000",
            "producer.override.bootstrap.servers": dead,
            "producer.override.queue.buffering.max.messages": "5000",
        },
    )
    runner = worker.connectors[name].tasks[0]
    time.sleep(3)
    sent_then = loop.records_moved
    time.sleep(3)
    # Polling stopped at what the producer could hold: the rest of the file waits in the file.
    assert loop.records_moved == sent_then <= 5000
    assert worker.status.task(name, 0).state.value == "RUNNING"
    started = time.monotonic()
    worker.stop_connector(name)
    assert time.monotonic() - started < 15  # not stuck waiting for room that never comes
    assert not runner.is_alive()  # the task thread ended, it was not abandoned
    assert worker.offsets.connector_offsets(name) == []  # nothing was acknowledged


@pytest.mark.also_on_dev_broker
def test_a_paused_source_reports_paused_only_once_no_record_moves_any_more(
    bundled_plugin_path: Path, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    """PAUSED in the task's status means nothing moves (Kafka's WorkerTask reports onPause
    from the task's thread). The file grows all along, so a status written before the loop
    had paused shows up as records moved after it."""
    import threading

    from core.status import State

    data = tmp_path / "in.txt"
    data.write_text("")
    done = threading.Event()

    def append() -> None:
        written = 0
        with data.open("a") as fh:
            while not done.is_set():
                fh.write("".join(f"line {written + i}\n" for i in range(200)))
                fh.flush()
                written += 200
                time.sleep(0.002)

    name = f"pause-{topic_name}"
    worker, loop = _file_source(
        bundled_plugin_path,
        bootstrap_servers,
        name,
        data,
        topic_name,
        connector_props={"batch.size": "100"},
    )
    appender = threading.Thread(target=append, daemon=True)
    appender.start()
    try:
        assert loop is not None

        def task_state() -> State | None:
            status = worker.status.task(name, 0)
            return None if status is None else status.state

        for _ in range(3):
            moving = loop.records_moved
            deadline = time.monotonic() + 30
            while loop.records_moved <= moving + 1000 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert loop.records_moved > moving + 1000, "the source does not move records"
            worker.pause(name, True)
            deadline = time.monotonic() + 30
            while task_state() is not State.PAUSED and time.monotonic() < deadline:
                time.sleep(0.001)
            assert task_state() is State.PAUSED
            at_pause = loop.records_moved
            time.sleep(1.0)
            assert loop.records_moved == at_pause, "records moved after the task said PAUSED"
            worker.pause(name, False)
            deadline = time.monotonic() + 30
            while task_state() is not State.RUNNING and time.monotonic() < deadline:
                time.sleep(0.01)
            assert task_state() is State.RUNNING
    finally:
        done.set()
        appender.join()
        worker.stop_connector(name)


@pytest.mark.also_on_dev_broker
def test_a_stopped_source_closes_its_producers_at_once(
    bundled_plugin_path: Path, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    """Stopping a task ends its producer's and its DLQ producer's threads and connections,
    without waiting for a garbage collection: the producer's delivery callback and the task's
    loop refer to each other, and such a producer kept reconnecting to its brokers (and
    logging every failure once they were gone) long after its task stopped. Garbage
    collection is off here, so that only an explicit close can end them."""
    data = tmp_path / "in.txt"
    data.write_text("".join(f"line {i}\n" for i in range(1000)))
    name = f"closes-{topic_name}"
    gc.collect()
    before = librdkafka_threads()
    gc.disable()
    try:
        worker, loop = _file_source(
            bundled_plugin_path,
            bootstrap_servers,
            name,
            data,
            topic_name,
            worker_props={"task.data.path": "worker"},  # the clients in this process
            connector_props={
                "errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": f"{topic_name}-dlq",
                "errors.deadletterqueue.topic.replication.factor": "1",
            },
        )
        deadline = time.monotonic() + 30
        while loop.records_moved < 1000 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert loop.records_moved == 1000
        assert len(librdkafka_threads()) > len(before)  # the task's clients are running
        worker.stop_connector(name)
        with pytest.raises(RuntimeError, match="closed"):
            loop.producer.poll(0)
        worker.stop()
        wait_for_librdkafka_threads(len(before))
    finally:
        gc.enable()
