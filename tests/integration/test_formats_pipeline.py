"""Converters and SMTs inside real pipelines: the deep-dive SMT chain, and Avro schema
evolution against the dev Schema Registry, with plugins loaded from their own venvs."""

from __future__ import annotations

import io
import json
import struct
import time
from pathlib import Path

import fastavro
import httpx
import pytest

from core.dev.schema_registry import BasicAuth, SchemaRegistry
from core.offsets import MemoryOffsetStore
from core.plugins import PluginCatalogue
from core.status import State
from core.worker import Worker
from tests.support.kafka import committed, header_text, produce, read_all, wait_for
from tests.support.plugins import catalogue_with

pytestmark = pytest.mark.integration

SOURCES = '''
from plugin_api import (STRING_SCHEMA, ConfigDef, SchemaBuilder, SourceConnector, SourceRecord,
                        SourceTask, Struct)

CUSTOMER = (SchemaBuilder.struct().name("customer")
            .field("id", SchemaBuilder.int32().build())
            .field("email", SchemaBuilder.string().build())
            .field("phone", SchemaBuilder.string().build())
            .field("credit_card", SchemaBuilder.string().build())
            .field("city", SchemaBuilder.string().build()).build())

V1 = SchemaBuilder.struct().name("reading").field("n", SchemaBuilder.int32().build()).build()
V2 = (SchemaBuilder.struct().name("reading").field("n", SchemaBuilder.int32().build())
      .field("note", SchemaBuilder.string().optional().build()).build())
V3 = SchemaBuilder.struct().name("reading").field("n", SchemaBuilder.string().build()).build()


class CustomersTask(SourceTask):
    def start(self, props):
        self.sent = False
    def poll(self):
        if self.sent:
            return []
        self.sent = True
        out = []
        for i in range(5):
            s = Struct(CUSTOMER).put("id", i).put("email", f"u{i}@example.com")
            s.put("phone", "555-0100").put("credit_card", "4111111111111111").put("city", "Oslo")
            out.append(SourceRecord({"db": "mysql"}, {"row": i + 1}, "mysql.customers",
                                    value_schema=CUSTOMER, value=s,
                                    timestamp=1_700_000_000_000 + i))
        return out
    def stop(self):
        pass


class EvolvingTask(SourceTask):
    """Polls 100 records with schema v1, then 100 with v2 (compatible), then v3 (not)."""
    def start(self, props):
        self.topic = props["topic"]
        stored = self.context.offset_storage_reader().offset({"stream": "readings"})
        self.n = stored["n"] if stored else 0
    def poll(self):
        if self.n >= 300:
            return []
        out = []
        for n in range(self.n, self.n + 100):
            if n < 100:
                value = Struct(V1).put("n", n)
            elif n < 200:
                value = Struct(V2).put("n", n).put("note", f"note {n}")
            else:
                value = Struct(V3).put("n", str(n))
            out.append(SourceRecord({"stream": "readings"}, {"n": n + 1}, self.topic,
                                    value_schema=value.schema, value=value))
        self.n += 100
        return out
    def stop(self):
        pass


class LinesTask(SourceTask):
    """Three string lines, as FileStreamSource gives them."""
    def start(self, props):
        self.topic = props["topic"]
        self.sent = False
    def poll(self):
        if self.sent:
            return []
        self.sent = True
        return [SourceRecord({"f": "x"}, {"line": i + 1}, self.topic,
                             value_schema=STRING_SCHEMA, value=f"line {i}") for i in range(3)]
    def stop(self):
        pass


def _connector(task):
    class _C(SourceConnector):
        def start(self, props):
            self.props = dict(props)
        def task_class(self):
            return task
        def task_configs(self, n):
            return [self.props]
        def stop(self):
            pass
        def config(self):
            return ConfigDef()
    return _C


class Customers(_connector(CustomersTask)):
    pass


class Evolving(_connector(EvolvingTask)):
    pass


class Lines(_connector(LinesTask)):
    pass
'''


@pytest.fixture(scope="module")
def catalogue(
    bundled_plugin_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> PluginCatalogue:
    return catalogue_with(
        bundled_plugin_path,
        tmp_path_factory.mktemp("format-plugins"),
        "format-sources",
        {"format_sources.py": SOURCES},
        {
            "Customers": "format_sources:Customers",
            "Evolving": "format_sources:Evolving",
            "Lines": "format_sources:Lines",
        },
    )


def _worker(catalogue: PluginCatalogue, bootstrap: str) -> Worker:
    return Worker(
        "w1",
        {
            "key.converter": "StringConverter",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "offset.flush.interval.ms": "100",
        },
        catalogue,
        MemoryOffsetStore(),
        client_props={"bootstrap.servers": bootstrap},
    )


def _run(worker: Worker, name: str, props: dict[str, str]) -> None:
    worker.start_connector(
        name,
        {
            "name": name,
            "topic.creation.default.partitions": "1",
            "topic.creation.default.replication.factor": "1",
            **props,
        },
    )
    worker.start_task(name, 0, worker.task_configs(name)[0])


def test_deep_dive_smt_chain_runs_in_a_pipeline(
    catalogue: PluginCatalogue, bootstrap_servers: str
) -> None:
    worker = _worker(catalogue, bootstrap_servers)
    name = f"chain-{time.time_ns()}"
    _run(
        worker,
        name,
        {
            "connector.class": "Customers",
            "transforms": "route,maskPII,addTimestamp",
            "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
            "transforms.route.regex": "mysql\\.(.*)",  # the seed's JSON "mysql\\\\.(.*)"
            "transforms.route.replacement": "processed.$1",
            "transforms.maskPII.type": "org.apache.kafka.connect.transforms.MaskField$Value",
            "transforms.maskPII.fields": "email,phone,credit_card",
            "transforms.addTimestamp.type": "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.addTimestamp.timestamp.field": "ingested_at",
        },
    )
    try:
        wait_for(
            lambda: [o for _, o in worker.offsets.connector_offsets(name)] == [{"row": 5}],
            30,
            "all five rows acknowledged",
        )
        assert worker.status.task(name, 0).state is State.RUNNING
    finally:
        worker.stop()
    records = [json.loads(m.value()) for m in read_all(bootstrap_servers, "processed.customers", 5)]
    assert len(records) >= 5
    for i, record in enumerate(records[-5:]):
        payload = record["payload"]
        assert payload["id"] == i and payload["city"] == "Oslo"
        assert payload["email"] == payload["phone"] == payload["credit_card"] == ""
        assert payload["ingested_at"] == 1_700_000_000_000 + i  # the record's timestamp
        fields = {f["field"]: f for f in record["schema"]["fields"]}
        assert fields["ingested_at"]["name"] == "org.apache.kafka.connect.data.Timestamp"


def test_a_config_error_of_a_transforms_configure_names_its_key_and_alias(
    catalogue: PluginCatalogue,
    bootstrap_servers: str,
    topic_name: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Ours checks RegexRouter's group references at configure (Kafka only on the first
    # match); the task's status and log said "No group 1", naming neither key nor transform.
    worker = _worker(catalogue, bootstrap_servers)
    route, header = f"route-{topic_name}", f"header-{topic_name}"
    base = {"connector.class": "Customers", "transforms": "route"}
    _run(
        worker,
        route,
        {
            **base,
            "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
            "transforms.route.regex": "zzz",
            "transforms.route.replacement": "$1",
        },
    )
    _run(
        worker,
        header,
        {
            **base,
            "transforms.route.type": "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.route.static.field": "f",
            "transforms.route.static.value": "v",
            "transforms.route.predicate": "has",
            "predicates": "has",
            "predicates.has.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
        },
    )
    try:

        def failed(name: str) -> bool:
            status = worker.status.task(name, 0)
            return status is not None and status.state is State.FAILED

        wait_for(lambda: failed(route) and failed(header), 60, "both tasks FAILED")
        traces = {n: worker.status.task(n, 0).trace or "" for n in (route, header)}
    finally:
        worker.stop()
    first = traces[route].splitlines()[0]
    assert "transform 'route' (copycat_transforms.regex_router.RegexRouter)" in first, first
    assert "Invalid value $1 for configuration transforms.route.replacement: No group 1" in first
    first = traces[header].splitlines()[0]
    assert "predicate 'has' of transform 'route'" in first, first
    assert 'Missing required configuration "predicates.has.name"' in first, first
    # A transform that cannot be configured is a task Kafka's Worker could not set up.
    logged = [r.getMessage() for r in caplog.records if "Failed to start task" in r.getMessage()]
    assert any("transforms.route.replacement" in m and "'route'" in m for m in logged), logged


def test_avro_schema_evolution_compatible_accepted_incompatible_fails_the_task(
    catalogue: PluginCatalogue, bootstrap_servers: str, schema_registry, topic_name: str
) -> None:
    worker = _worker(catalogue, bootstrap_servers)
    name = f"evolve-{topic_name}"
    _run(
        worker,
        name,
        {
            "connector.class": "Evolving",
            "topic": topic_name,
            "value.converter": "io.confluent.connect.avro.AvroConverter",
            "value.converter.schema.registry.url": schema_registry.url,
        },
    )
    try:
        wait_for(lambda: worker.status.task(name, 0).state is State.FAILED, 60, "task FAILED")
        trace = worker.status.task(name, 0).trace
        assert f"{topic_name}-value" in trace and "409" in trace, trace
        # As Confluent's converter names it (a 4xx error code: InvalidConfigurationException,
        # a ConfigException to Connect): no Python class
        # (copycat_avro.registry_client.SchemaRegistryError) in the trace.
        refused = (
            "org.apache.kafka.common.config.ConfigException: Failed to access Avro data "
            f"from topic '{topic_name}' : "
        )
        assert refused in trace, trace
        assert "SchemaRegistryError" not in trace, trace
        time.sleep(0.5)
        # Nothing of the failing batch was written: offsets stop at the last good record.
        assert [o for _, o in worker.offsets.connector_offsets(name)] == [{"n": 200}]
    finally:
        worker.stop()
    messages = read_all(bootstrap_servers, topic_name, 200)
    assert len(messages) == 200
    ids = {int.from_bytes(m.value()[1:5], "big") for m in messages}
    assert len(ids) == 2 and all(m.value()[0] == 0 for m in messages)
    versions = httpx.get(f"{schema_registry.url}/subjects/{topic_name}-value/versions").json()
    assert versions == [1, 2]


# HoistField twice then Flatten: the value becomes a struct with the field "outer.line".
_FLATTENED_LINES = {
    "connector.class": "Lines",
    "value.converter": "io.confluent.connect.avro.AvroConverter",
    "transforms": "hoist,h2,fl",
    "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
    "transforms.hoist.field": "line",
    "transforms.h2.type": "org.apache.kafka.connect.transforms.HoistField$Value",
    "transforms.h2.field": "outer",
    "transforms.fl.type": "org.apache.kafka.connect.transforms.Flatten$Value",
    "transforms.fl.delimiter": ".",
}


def test_avro_field_name_java_refuses_fails_the_task_unless_scrubbed(
    catalogue: PluginCatalogue, bootstrap_servers: str, schema_registry, topic_name: str
) -> None:
    """Flatten's "outer.line" is no Avro name: as with Confluent's converter the task fails
    naming the field and nothing reaches the registry or the topic (a Java consumer could not
    parse the schema); with scrub.invalid.names=true the field is "outer_line"."""
    worker = _worker(catalogue, bootstrap_servers)
    strict, scrubbed = f"strict-{topic_name}", f"scrub-{topic_name}"
    strict_topic, scrubbed_topic = f"{topic_name}-strict", f"{topic_name}-scrubbed"
    url = {"value.converter.schema.registry.url": schema_registry.url}
    _run(worker, strict, {**_FLATTENED_LINES, **url, "topic": strict_topic})
    _run(
        worker,
        scrubbed,
        {
            **_FLATTENED_LINES,
            **url,
            "topic": scrubbed_topic,
            "value.converter.scrub.invalid.names": "true",
        },
    )
    try:
        wait_for(lambda: worker.status.task(strict, 0).state is State.FAILED, 60, "task FAILED")
        trace = worker.status.task(strict, 0).trace or ""
        assert "'outer.line'" in trace and "Illegal character in: outer.line" in trace, trace
        assert "io.confluent.connect.avro.ConnectDefault" in trace, trace
        assert repr(strict_topic) in trace, trace
        messages = read_all(bootstrap_servers, scrubbed_topic, 3)
        assert worker.status.task(scrubbed, 0).state is State.RUNNING
    finally:
        worker.stop()
    subjects = httpx.get(f"{schema_registry.url}/subjects").json()
    assert f"{strict_topic}-value" not in subjects
    latest = httpx.get(
        f"{schema_registry.url}/subjects/{scrubbed_topic}-value/versions/latest"
    ).json()
    assert json.loads(latest["schema"])["fields"] == [{"name": "outer_line", "type": "string"}]
    assert [m.value()[5:] for m in messages] == [b"\x0cline %d" % i for i in range(3)]


_ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "com.acme",
    "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}],
}


def _register_order(url: str, auth: tuple[str, str] | None = None) -> int:
    """Register the Order schema under com.acme.Order (RecordNameStrategy's subject); its id."""
    response = httpx.post(
        f"{url}/subjects/com.acme.Order/versions",
        json={"schema": json.dumps(_ORDER)},
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
        auth=auth,
    )
    assert response.status_code == 200, response.text
    return int(response.json()["id"])


def _orders(schema_id: int, start: int, count: int) -> list[bytes]:
    """Confluent wire format written by hand with fastavro (a non-Connect producer)."""
    parsed = fastavro.parse_schema(_ORDER)
    values = []
    for i in range(start, start + count):
        out = io.BytesIO()
        out.write(struct.pack(">bI", 0, schema_id))
        fastavro.schemaless_writer(out, parsed, {"id": i, "item": f"n{i}"})
        values.append(out.getvalue())
    return values


def test_avro_sink_reading_another_subjects_schema_asks_the_registry_once_and_survives_it_down(
    catalogue: PluginCatalogue, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    """Data registered under com.acme.Order (RecordNameStrategy), read by a FileStreamSink
    whose AvroConverter keeps TopicNameStrategy: one lookup of <topic>-value for the id, not
    one per record, and the task goes on converting with the registry stopped."""
    registry = SchemaRegistry(bootstrap_servers, topic=f"_schemas-{topic_name}").start()
    try:
        schema_id = _register_order(registry.url)
        produce(bootstrap_servers, topic_name, _orders(schema_id, 0, 3000))
        out = tmp_path / "orders.txt"
        worker = _worker(catalogue, bootstrap_servers)
        name = f"orders-{topic_name}"
        worker.start_connector(
            name,
            {
                "name": name,
                "connector.class": "FileStreamSink",
                "topics": topic_name,
                "file": str(out),
                "value.converter": "io.confluent.connect.avro.AvroConverter",
                "value.converter.schema.registry.url": registry.url,
            },
        )
        worker.start_task(name, 0, worker.task_configs(name)[0])

        def lines() -> int:
            return len(out.read_text().splitlines()) if out.exists() else 0

        try:
            wait_for(lambda: lines() >= 3000, 60, "3000 records in the file")
            assert registry.requests[f"POST /subjects/{topic_name}-value"] == 1
            assert registry.requests[f"GET /schemas/ids/{schema_id}"] == 1
            registry.stop()
            produce(bootstrap_servers, topic_name, _orders(schema_id, 3000, 500))
            wait_for(lambda: lines() >= 3500, 60, "3500 records in the file")
            assert worker.status.task(name, 0).state is State.RUNNING
        finally:
            worker.stop()
        written = out.read_text().splitlines()
        assert len(written) == 3500 and "n3499" in written[-1], written[-1]
    finally:
        registry.stop()


def test_avro_sink_refused_by_the_registry_fails_the_task_or_dead_letters_naming_the_401(
    catalogue: PluginCatalogue, bootstrap_servers: str, topic_name: str, tmp_path: Path
) -> None:
    """A registry with basic auth: a sink whose AvroConverter has the wrong password fails
    its task naming the registry and the 401 (nothing written); with errors.tolerance=all
    every record goes to the dead letter queue, untouched, with the 401 in its headers; the
    right credentials (in the URL) read every record."""
    registry = SchemaRegistry(
        bootstrap_servers,
        topic=f"_schemas-{topic_name}",
        basic_auth=BasicAuth({"alice": "s3cret"}),
    ).start()
    worker = _worker(catalogue, bootstrap_servers)
    try:
        schema_id = _register_order(registry.url, auth=("alice", "s3cret"))
        values = _orders(schema_id, 0, 5)
        produce(bootstrap_servers, topic_name, values)
        wrong = {
            "value.converter.schema.registry.url": registry.url,
            "value.converter.basic.auth.credentials.source": "USER_INFO",
            "value.converter.basic.auth.user.info": "alice:wrong",
        }
        files = {n: tmp_path / f"{n}.txt" for n in ("failing", "dlq", "right")}
        dlq_topic = f"{topic_name}-dlq"
        configs = {
            "failing": wrong,
            "dlq": {
                **wrong,
                "errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": dlq_topic,
                "errors.deadletterqueue.topic.replication.factor": "1",
                "errors.deadletterqueue.context.headers.enable": "true",
            },
            "right": {
                "value.converter.schema.registry.url": registry.url.replace(
                    "http://", "http://alice:s3cret@"
                )
            },
        }
        names = {n: f"{n}-{topic_name}" for n in configs}
        for key, extra in configs.items():
            worker.start_connector(
                names[key],
                {
                    "name": names[key],
                    "connector.class": "FileStreamSink",
                    "topics": topic_name,
                    "file": str(files[key]),
                    "value.converter": "io.confluent.connect.avro.AvroConverter",
                    **extra,
                },
            )
            worker.start_task(names[key], 0, worker.task_configs(names[key])[0])

        def lines(key: str) -> list[str]:
            return files[key].read_text().splitlines() if files[key].exists() else []

        failing = names["failing"]
        wait_for(lambda: worker.status.task(failing, 0).state is State.FAILED, 60, "task FAILED")
        trace = worker.status.task(failing, 0).trace or ""
        assert f"Schema registry at {registry.url} " in trace and "HTTP 401" in trace, trace
        assert f"schema for id {schema_id}" in trace, trace
        wait_for(lambda: len(lines("right")) == 5, 60, "5 records written with the right password")
        wait_for(
            lambda: committed(bootstrap_servers, f"connect-{names['dlq']}", topic_name) == 5,
            60,
            "the tolerant task committed all 5 offsets",
        )
        assert worker.status.task(names["dlq"], 0).state is State.RUNNING
        assert committed(bootstrap_servers, f"connect-{failing}", topic_name) < 1
    finally:
        worker.stop()
        registry.stop()
    assert lines("failing") == [] and lines("dlq") == []
    assert "n4" in lines("right")[-1]
    dead = read_all(bootstrap_servers, dlq_topic, 5)
    assert [m.value() for m in dead] == values  # nothing lost, the bytes untouched
    for message in dead:
        headers = header_text(message)
        assert headers["__connect.errors.stage"] == "VALUE_CONVERTER"
        text = headers["__connect.errors.exception.message"]
        assert "HTTP 401" in text and registry.url in text, text
        # Kafka's class, as Kafka Connect with Confluent's converter writes it (401 is a client
        # error: ConfigException), not copycat_avro.registry_client.SchemaRegistryError.
        exception = headers["__connect.errors.exception.class.name"]
        assert exception == "org.apache.kafka.common.config.ConfigException", exception
        trace = headers["__connect.errors.exception.stacktrace"]
        assert trace.startswith(exception + ": Failed to access Avro data from topic "), trace
        assert "SchemaRegistryError" not in trace, trace
