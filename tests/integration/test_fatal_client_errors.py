"""A fenced transactional producer, on Apache Kafka: its fatal error reaches the caller as a
KafkaException, through the producers every task gets (core.runtime.services.ConfluentClients).

confluent-kafka 2.16 on Python 3.11 runs the delivery reports that follow a fatal error with
that error still set, and the call serving them raised a SystemError (or the bare KafkaError
object, which ``except Exception`` misses) instead: an exactly-once task then failed without
saying it was fenced, or its thread died without the task being marked failed.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, Message

from core.runtime.services import ConfluentClients
from tests.support.apache_kafka import KafkaCluster

pytestmark = [
    pytest.mark.integration,
    pytest.mark.apache_kafka_only(reason="transactions and fencing"),
]

CLIENT_TIMEOUT_S = 30
RECORDS = 200


def test_a_fenced_producer_raises_its_fatal_error_as_a_kafka_exception(
    broker: KafkaCluster, topic_name: str
) -> None:
    first, second = f"{topic_name}-a", f"{topic_name}-b"
    broker.create_topic(first, 1)
    broker.create_topic(second, 1)
    clients = ConfluentClients()
    config = {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": topic_name}
    zombie = clients.producer(config)
    zombie.init_transactions(CLIENT_TIMEOUT_S)
    zombie.begin_transaction()
    zombie.produce(first, b"before")
    zombie.flush(CLIENT_TIMEOUT_S)
    newer = clients.producer(config)
    newer.init_transactions(CLIENT_TIMEOUT_S)  # fences the zombie

    reports: list[int] = []

    def delivered(err: KafkaError | None, msg: Message) -> None:
        reports.append(err.code() if err is not None else 0)  # a call into the C extension

    for i in range(RECORDS):  # a partition new to the transaction: AddPartitionsToTxn is refused
        zombie.produce(second, b"%d" % i, on_delivery=delivered)
    with pytest.raises(KafkaException) as raised:
        zombie.flush(CLIENT_TIMEOUT_S)
    error = raised.value.args[0]
    assert isinstance(error, KafkaError) and error.fatal(), error
    assert error.code() == KafkaError._FENCED, error
    with pytest.raises(KafkaException):
        zombie.abort_transaction(CLIENT_TIMEOUT_S)
    zombie.purge()
    zombie.close()
    newer.close()
