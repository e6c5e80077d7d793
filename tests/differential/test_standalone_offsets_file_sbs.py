"""A standalone worker's offsets file (``offset.storage.file.filename``), on Copycat and on
Apache Kafka Connect 4.1.1 ``connect-standalone``.

Found by an exploratory comparison: Kafka Connect keeps its standalone offsets as a Java
serialized ``HashMap<byte[], byte[]>`` (the keys and values are the ``connect-offsets`` JSON),
and Copycat, pointed at such a file by a user moving a standalone worker over, died with a
Python traceback (``UnicodeDecodeError``) instead of resuming. An empty file (``touch``, or
what Kafka's in-place rewrite leaves after a crash) is no offsets on Kafka Connect; Copycat
refused it as "not a Copycat offsets file".

The move both ways is checked with a FileStreamSource whose lines must each reach the topic
once: Kafka Connect (from an empty file), then Copycat on Kafka's file, then Kafka Connect again
on the file Copycat wrote.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from plugin_api import ConnectException
from tests.support.apache_kafka import KafkaCluster
from tests.support.differential import create, read_records
from tests.support.jvm import run_owner_pid
from tests.support.kafka import wait_for
from tests.support.kafka_connect import KafkaConnect
from tests.support.rest import RestWorker

pytestmark = [pytest.mark.integration, pytest.mark.kafka_connect]

SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
STRINGS = "org.apache.kafka.connect.storage.StringConverter"

# The first bytes of an offsets file Kafka Connect 4.1.1 wrote for one FileStreamSource
# partition: a serialized java.util.HashMap whose first key array is cut off.
KAFKA_FILE_CUT_SHORT = bytes.fromhex(
    "aced0005737200116a6176612e7574696c2e48617368"
    "4d61700507dac1c31660d103000246000a6c6f6164466163746f7249000974687265"
    "73686f6c6478703f4000000000000c770800000010000000017572"
    "00025b42acf317f8060854e0020000787000000046"
    "5b226d6967222c7b2266696c65"
)


def _append(path: Path, lines: range) -> None:
    with path.open("a") as fh:
        fh.write("".join(f"line{i}\n" for i in lines))


def _copies_to_the_end(url: str, name: str, config: dict[str, str], source: Path) -> None:
    """Create the connector and wait until its committed offset is the end of ``source``."""

    def position() -> int | None:
        response = httpx.get(f"{url}/connectors/{name}/offsets", timeout=30)
        if response.status_code != 200:
            return None
        offsets = response.json()["offsets"]
        return offsets[0]["offset"]["position"] if offsets else None

    with httpx.Client(base_url=url, timeout=60) as client:
        create(client, name, config)
    size = source.stat().st_size
    wait_for(lambda: position() == size, 60, f"{name}'s offset at {size} on {url}")


def _on_kafka_connect(tmp: Path, bootstrap: str, offsets: Path, run: Callable[[str], None]) -> None:
    connect = KafkaConnect(
        tmp, bootstrap, overrides={"offset.storage.file.filename": str(offsets)}
    ).start(run_owner_pid())
    try:
        run(connect.url)
    finally:
        connect.stop()


def test_a_standalone_offsets_file_moves_from_kafka_connect_to_copycat_and_back(
    apache_kafka: KafkaCluster, bundled_plugin_path: Path, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    name = topic = f"offsets-file-{suffix}"
    apache_kafka.create_topic(topic, 1)
    source = tmp_path / "in.txt"
    config = {
        "connector.class": SOURCE,
        "file": str(source),
        "topic": topic,
        "tasks.max": "1",
        "value.converter": STRINGS,
    }
    offsets = tmp_path / "connect.offsets"
    offsets.touch()  # Kafka Connect starts on an empty file as on none
    bootstrap = apache_kafka.bootstrap_servers

    _append(source, range(5))
    _on_kafka_connect(
        tmp_path / "kafka-1",
        bootstrap,
        offsets,
        lambda url: _copies_to_the_end(url, name, config, source),
    )
    assert offsets.read_bytes()[:2] == b"\xac\xed"  # Java serialization

    _append(source, range(5, 8))
    worker = RestWorker(
        tmp_path / "copycat",
        bootstrap,
        bundled_plugin_path,
        {"offset.storage.file.filename": str(offsets), "value.converter": STRINGS},
    )
    with worker:
        _copies_to_the_end(worker.url, name, config, source)

    _append(source, range(8, 10))
    _on_kafka_connect(
        tmp_path / "kafka-2",
        bootstrap,
        offsets,
        lambda url: _copies_to_the_end(url, name, config, source),
    )

    values = [value for _key, value, _headers in read_records(bootstrap, topic, 10)]
    assert values == [f"line{i}".encode() for i in range(10)]


def test_an_empty_offsets_file_is_no_offsets_as_on_kafka_connect(
    apache_kafka: KafkaCluster, bundled_plugin_path: Path, tmp_path: Path
) -> None:
    offsets = tmp_path / "connect.offsets"
    offsets.touch()
    name = topic = f"offsets-empty-{uuid.uuid4().hex[:8]}"
    source = tmp_path / "in.txt"
    _append(source, range(3))
    config = {"connector.class": SOURCE, "file": str(source), "topic": topic, "tasks.max": "1"}
    extra = {"offset.storage.file.filename": str(offsets), "value.converter": STRINGS}
    with RestWorker(
        tmp_path / "copycat", apache_kafka.bootstrap_servers, bundled_plugin_path, extra
    ) as worker:
        _copies_to_the_end(worker.url, name, {**config, "value.converter": STRINGS}, source)
    assert offsets.stat().st_size > 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        # Kafka Connect: "java.io.StreamCorruptedException: invalid stream header: 89504E47"
        # and exit 3.
        (b"\x89PNG\r\n\x1a\n", "is neither a Copycat nor a Kafka Connect offsets file"),
        # Kafka Connect takes a file cut short (EOFException) for no offsets and sends every
        # partition again from its start; Copycat refuses it.
        (KAFKA_FILE_CUT_SHORT, "is a Kafka Connect offsets file cut short"),
    ],
    ids=["foreign-binary", "kafka-cut-short"],
)
def test_an_unreadable_offsets_file_stops_the_start_with_one_line_naming_it(
    apache_kafka: KafkaCluster,
    bundled_plugin_path: Path,
    tmp_path: Path,
    content: bytes,
    message: str,
) -> None:
    offsets = tmp_path / "connect.offsets"
    offsets.write_bytes(content)
    worker = RestWorker(
        tmp_path / "copycat",
        apache_kafka.bootstrap_servers,
        bundled_plugin_path,
        {"offset.storage.file.filename": str(offsets)},
    )
    try:
        with pytest.raises(ConnectException) as raised:
            worker.__enter__()
    finally:
        worker.__exit__(None, None, None)
    assert str(offsets) in str(raised.value)
    assert message in str(raised.value)
    assert "move it away" in str(raised.value)
    assert offsets.read_bytes() == content  # left as it was
