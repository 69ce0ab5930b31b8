"""Timestamp lookups inside compressed batches, through real clients (issue 20, item 3).

confluent-kafka's producer writes 100 records with timestamps T0, T0+1s, ... T0+99s into one batch with each
codec librdkafka has (gzip, snappy, lz4, zstd); every client's offsets-for-times at T0+50s gets offset 50 and
ListOffsets MAX_TIMESTAMP (KIP-734, through confluent's AdminClient) offset 99 with T0+99s -- what Apache
Kafka 4.4.0 answers.  Before, ``serve`` answered the batch's base offset (0) for both: a consumer seeking
there read 50 records again.
"""
from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from kafka import KafkaConsumer
from kafka import TopicPartition as KPTopicPartition

from server_wire import ServerThread

T0 = 1_700_000_000_000
CODECS = ("gzip", "snappy", "lz4", "zstd")


@pytest.fixture(scope="module")
def server():
    s = ServerThread(topics={c: 1 for c in CODECS})
    producers = []
    for codec in CODECS:
        producer = Producer({"bootstrap.servers": s.bootstrap, "compression.type": codec, "linger.ms": 1000,
                             "batch.num.messages": 1000})
        for i in range(100):
            producer.produce(codec, value=b"record %d " % i * 20, timestamp=T0 + 1000 * i, partition=0)
        assert producer.flush(30) == 0
        producers.append(producer)
    yield s
    s.stop()


def test_the_records_went_in_as_one_compressed_batch(server):
    batches = server.call(lambda: {c: len(server.server.log.topics[c][0].batches) for c in CODECS})
    codecs = server.call(lambda: {c: server.server.log.topics[c][0].batches[0][22] & 0x07 for c in CODECS})
    assert batches == {c: 1 for c in CODECS}
    assert codecs == {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_offsets_for_times_and_max_timestamp(server, codec):
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "ts"})
    try:
        (found,) = consumer.offsets_for_times([TopicPartition(codec, 0, T0 + 50_000)], timeout=10)
        assert found.offset == 50
        (between,) = consumer.offsets_for_times([TopicPartition(codec, 0, T0 + 49_500)], timeout=10)
        assert between.offset == 50
    finally:
        consumer.close()
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    (future,) = admin.list_offsets({TopicPartition(codec, 0): OffsetSpec.max_timestamp()}).values()
    top = future.result(timeout=30)
    assert (top.offset, top.timestamp) == (99, T0 + 99_000)


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_offsets_for_times(server, codec):
    consumer = KafkaConsumer(bootstrap_servers=server.bootstrap)
    try:
        tp = KPTopicPartition(codec, 0)
        found = consumer.offsets_for_times({tp: T0 + 50_000})[tp]
        assert (found.offset, found.timestamp) == (50, T0 + 50_000)
    finally:
        consumer.close()


def test_aiokafka_offsets_for_times(server):
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition as AIOTopicPartition

    async def look() -> dict[str, tuple[int, int]]:
        consumer = AIOKafkaConsumer(bootstrap_servers=server.bootstrap)
        await consumer.start()
        try:
            wanted = {AIOTopicPartition(c, 0): T0 + 50_000 for c in CODECS}
            found = await consumer.offsets_for_times(wanted)
            return {tp.topic: (o.offset, o.timestamp) for tp, o in found.items()}
        finally:
            await consumer.stop()

    assert asyncio.run(look()) == {c: (50, T0 + 50_000) for c in CODECS}
