"""Record size limits (issue 20, item 4): a record batch larger than the topic's ``max.message.bytes`` (else the
node's ``message.max.bytes``, Kafka's default 1,048,588) is answered MESSAGE_TOO_LARGE with no error message,
the partition's records not appended -- what an Apache Kafka 4.4.0 broker answered for the same bytes (a
batch of 1,048,588 bytes accepted, 1,048,589 refused: Kafka compares the batch's size as sent).  Before, a
2,000,000-byte record was accepted.
"""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer
from kafka.errors import MessageSizeTooLargeError

from server_wire import KafkaWire, ServerThread, batch_of_size, produce_raw, record_batch

NONE, MESSAGE_TOO_LARGE = 0, 10
KAFKA_DEFAULT = 1_048_588


@pytest.fixture
def server():
    s = ServerThread(topics={"t": 1})
    yield s
    s.stop()


def test_the_batch_size_is_compared_with_message_max_bytes(server):
    with KafkaWire(server.address) as wire:
        at_limit = produce_raw(wire, "t", batch_of_size(KAFKA_DEFAULT))
        assert (at_limit.error_code, at_limit.base_offset) == (NONE, 0)
        over = produce_raw(wire, "t", batch_of_size(KAFKA_DEFAULT + 1))
        assert (over.error_code, over.error_message, over.base_offset) == (MESSAGE_TOO_LARGE, None, -1)
        # two batches, the second too large: nothing of the partition's records is appended
        both = produce_raw(wire, "t", record_batch([b"small"]) + batch_of_size(KAFKA_DEFAULT + 100))
        assert both.error_code == MESSAGE_TOO_LARGE
        assert produce_raw(wire, "t", record_batch([b"next"])).base_offset == 1


def test_confluent_producer_gets_msg_size_too_large(server):
    errors: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": server.bootstrap, "message.max.bytes": 3_000_000,
                         "compression.type": "none", "message.send.max.retries": 0})
    producer.produce("t", value=b"v" * 2_000_000, on_delivery=lambda err, msg: errors.append(err))
    producer.produce("t", value=b"fits", on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(30) == 0
    assert [e.code() if e else None for e in errors] == [KafkaError.MSG_SIZE_TOO_LARGE, None]


def test_kafka_python_producer_gets_message_size_too_large(server):
    producer = KafkaProducer(bootstrap_servers=server.bootstrap, max_request_size=3_000_000, retries=0)
    try:
        with pytest.raises(MessageSizeTooLargeError):
            producer.send("t", b"v" * 2_000_000).get(timeout=30)
        assert producer.send("t", b"fits").get(timeout=30).offset == 0
    finally:
        producer.close()


def test_topic_max_message_bytes_and_the_serve_config_set_the_limit():
    s = ServerThread(config={"message.max.bytes": 5_000})
    try:
        admin = AdminClient({"bootstrap.servers": s.bootstrap})
        for future in admin.create_topics([NewTopic("roomy", 1, 1, config={"max.message.bytes": "50000"})]).values():
            future.result(timeout=30)
        with KafkaWire(s.address) as wire:
            assert produce_raw(wire, "auto", batch_of_size(5_001)).error_code == MESSAGE_TOO_LARGE   # the node's
            assert produce_raw(wire, "auto", batch_of_size(5_000)).error_code == NONE
            assert produce_raw(wire, "roomy", batch_of_size(20_000)).error_code == NONE          # the topic's
            assert produce_raw(wire, "roomy", batch_of_size(50_001)).error_code == MESSAGE_TOO_LARGE
    finally:
        s.stop()
