"""Client override values parsed as Kafka's ConfigDef.parseType parses them (the cases were
run against Kafka 4.1.1's kafka-clients jar; the one difference kept is marked)."""

from __future__ import annotations

import pytest
from plugin_api.errors import ConfigException

from core.client_key_types import check_client_override_types, parse_client_value
from core.client_overrides import java_hash_order


@pytest.mark.parametrize(
    ("client", "key", "value"),
    [
        ("consumer", "max.poll.records", " 5 "),  # Java's trim
        ("consumer", "max.poll.records", "+5"),
        ("consumer", "max.poll.records", "-2147483648"),
        ("producer", "linger.ms", "99999999999"),
        ("producer", "enable.idempotence", "TRUE"),
        ("producer", "enable.idempotence", "\tfalse "),
        ("producer", "sasl.login.refresh.window.factor", "1d"),
        ("producer", "sasl.login.refresh.window.factor", ".5e3"),
        ("producer", "sasl.login.refresh.window.factor", "-Infinity"),
        ("producer", "sasl.login.refresh.window.factor", "0x1p3"),
        ("producer", "acks", "maybe"),  # STRING: the client's validator, at task start
        ("producer", "no.such.key", "x"),  # unknown: ignored, as Java's clients do
        ("consumer", "linger.ms", "soon"),  # a producer key: not the consumer's
    ],
)
def test_values_kafka_parses(client: str, key: str, value: str) -> None:
    parse_client_value(client, key, value)


@pytest.mark.parametrize(
    ("client", "key", "value", "reason"),
    [
        ("consumer", "max.poll.records", "lots", "Not a number of type INT"),
        ("consumer", "max.poll.records", "", "Not a number of type INT"),
        ("consumer", "max.poll.records", "2147483648", "Not a number of type INT"),
        ("consumer", "max.poll.records", "1_000", "Not a number of type INT"),
        # Arabic-Indic 5: Kafka reads 5 (Java reads any decimal digit), Copycat refuses it
        # (librdkafka would get it as written): a difference kept, docs/rest.md.
        ("consumer", "max.poll.records", "\u0665", "Not a number of type INT"),
        ("consumer", "max.poll.records", "\u00a05", "Not a number of type INT"),  # no-break
        ("producer", "linger.ms", "1.5", "Not a number of type LONG"),
        ("producer", "enable.idempotence", "yes", "Expected value to be either true or false"),
        ("producer", "sasl.login.refresh.window.factor", "nan", "Not a number of type DOUBLE"),
        ("admin", "request.timeout.ms", "1e3", "Not a number of type INT"),
    ],
)
def test_values_kafka_refuses_with_its_message(
    client: str, key: str, value: str, reason: str
) -> None:
    with pytest.raises(ConfigException) as caught:
        parse_client_value(client, key, value)
    assert str(caught.value) == f"Invalid value {value} for configuration {key}: {reason}"


def test_only_the_clients_a_connector_uses_are_parsed_producer_first() -> None:
    props = {
        "consumer.override.max.poll.records": "lots",
        "producer.override.linger.ms": "soon",
        "admin.override.retries": "many",
    }
    check_client_override_types(["producer"], {"consumer.override.max.poll.records": "lots"})
    with pytest.raises(ConfigException, match="linger.ms"):
        check_client_override_types(["consumer", "admin", "producer"], props)
    with pytest.raises(ConfigException, match="retries"):
        check_client_override_types(["consumer", "admin"], props)


def test_overrides_come_in_the_order_of_javas_hash_map() -> None:
    """The orders Java 17's HashMap iterates these keys in, put in this order (16 keys: the
    table has grown to 32 buckets)."""
    assert java_hash_order(["linger.ms", "sasl.mechanism"]) == ["sasl.mechanism", "linger.ms"]
    keys = (
        "max.poll.records,linger.ms,retries,fetch.min.bytes,sasl.jaas.config,security.protocol,"
        "request.timeout.ms,acks,batch.size,compression.type,client.id,bootstrap.servers,a,b,"
        "zz.top,\u00e9"
    ).split(",")
    assert ",".join(java_hash_order(keys)) == (
        "compression.type,a,b,max.poll.records,request.timeout.ms,acks,batch.size,"
        "bootstrap.servers,\u00e9,security.protocol,retries,sasl.jaas.config,fetch.min.bytes,"
        "zz.top,linger.ms,client.id"
    )
