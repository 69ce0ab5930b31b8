"""Issue 20 items 1, 3, 4 and 5 on both servers, where clients and raw requests can compare them:

- timestamp lookups inside compressed batches: 100 records with timestamps T0, T0+1s, ... in one batch per
  codec (librdkafka's producer); offsets-for-times at T0+50s through confluent-kafka and kafka-python, and
  MAX_TIMESTAMP through confluent's AdminClient;
- record size limits: raw batches at and over ``message.max.bytes`` and a topic's ``max.message.bytes``;
  a confluent producer sending a 2,000,000-byte record;
- bytes after a request's body (librdkafka's all-topics Metadata request has them) for several APIs, and an
  API neither server advertises: answered, and closed, alike.

Item 5's client scenarios (a confluent consumer with group.protocol=consumer, a transactional producer) cannot
be compared here: the broker implements both; tests/server/test_server_unimplemented.py holds them.
"""
from __future__ import annotations

import socket
import struct

from server_support import wait_until
from server_wire import batch_of_size, body, encode_request, produce_raw

T0 = 1_700_000_000_000
CODECS = ("gzip", "snappy", "lz4", "zstd")
KAFKA_DEFAULT = 1_048_588


def _create(run, topics: dict[str, tuple[int, dict[str, str]]]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": run.bootstrap})
    for future in admin.create_topics([NewTopic(t, n, 1, config=c) for t, (n, c) in topics.items()]).values():
        future.result(timeout=60)

    def led() -> bool:
        meta = admin.list_topics(timeout=30)
        return all(t in meta.topics and all(p.leader >= 0 for p in meta.topics[t].partitions.values())
                   for t in topics)

    wait_until(led, 30, f"the topics {sorted(topics)} to be led")


def test_timestamp_lookups_inside_compressed_batches(conformance):
    def scenario(run):
        from confluent_kafka import Consumer, Producer, TopicPartition
        from confluent_kafka.admin import AdminClient, OffsetSpec
        from kafka import KafkaConsumer
        from kafka import TopicPartition as KPTopicPartition

        p = run.group("")
        _create(run, {p + c: (1, {}) for c in CODECS})
        for codec in CODECS:
            producer = Producer({"bootstrap.servers": run.bootstrap, "compression.type": codec, "linger.ms": 1000,
                                 "batch.num.messages": 1000})
            for i in range(100):
                producer.produce(p + codec, value=b"record %d " % i * 20, timestamp=T0 + 1000 * i, partition=0)
            assert producer.flush(30) == 0
        seen: dict = {}
        consumer = Consumer({"bootstrap.servers": run.bootstrap, "group.id": run.group()})
        run.on_close(consumer.close)
        for at in (T0 + 50_000, T0 + 49_500, T0 + 200_000):
            found = consumer.offsets_for_times([TopicPartition(p + c, 0, at) for c in CODECS], timeout=30)
            seen[f"confluent@{at - T0}"] = {tp.topic[len(p):]: tp.offset for tp in found}
        kp = KafkaConsumer(bootstrap_servers=run.bootstrap)
        run.on_close(kp.close)
        answer = kp.offsets_for_times({KPTopicPartition(p + c, 0): T0 + 50_000 for c in CODECS})
        seen["kafka-python@50000"] = {tp.topic[len(p):]: [o.offset, o.timestamp - T0] for tp, o in answer.items()}
        admin = AdminClient({"bootstrap.servers": run.bootstrap})
        tops = admin.list_offsets({TopicPartition(p + c, 0): OffsetSpec.max_timestamp() for c in CODECS})
        seen["max_timestamp"] = {tp.topic[len(p):]: [f.result(timeout=30).offset, f.result(timeout=30).timestamp - T0]
                                 for tp, f in tops.items()}
        return seen

    conformance(scenario)


# Errors a producer retries: the broker's metadata can name a leader before its replica manager has become
# leader of a new topic (seen on Kafka 4.4.0 under load: NOT_LEADER_OR_FOLLOWER for the first produce).
_RETRIABLE = {3, 5, 6}    # UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER


def _produce_raw(wire, topic: str, records: bytes) -> list:
    seen: list = []

    def answered() -> bool:
        answer = produce_raw(wire, topic, records)
        seen[:] = [answer.error_code.value, answer.error_message, answer.base_offset]
        return seen[0] not in _RETRIABLE

    wait_until(answered, 30, f"a produce to {topic} answered with other than a retriable leadership error")
    return seen


def test_record_size_limits(conformance):
    def scenario(run):
        from confluent_kafka import KafkaError, Producer

        p = run.group("")
        _create(run, {p + "plain": (1, {}), p + "small": (1, {"max.message.bytes": "5000"})})
        wire = run.wire()
        seen = {
            "at_limit": _produce_raw(wire, p + "plain", batch_of_size(KAFKA_DEFAULT)),
            "over_limit": _produce_raw(wire, p + "plain", batch_of_size(KAFKA_DEFAULT + 1)),
            "small_fits": _produce_raw(wire, p + "small", batch_of_size(5_000)),
            "small_over": _produce_raw(wire, p + "small", batch_of_size(5_001)),
        }
        errors: list = []
        producer = Producer({"bootstrap.servers": run.bootstrap, "message.max.bytes": 3_000_000,
                             "compression.type": "none", "message.send.max.retries": 0})
        producer.produce(p + "plain", value=b"v" * 2_000_000, on_delivery=lambda err, msg: errors.append(err))
        producer.produce(p + "plain", value=b"fits", on_delivery=lambda err, msg: errors.append(err))
        assert producer.flush(30) == 0
        seen["confluent"] = [None if e is None else e.code() for e in errors]
        assert seen["confluent"] == [KafkaError.MSG_SIZE_TOO_LARGE, None], errors
        return seen

    conformance(scenario)


def test_bytes_after_the_body_and_an_unadvertised_api(conformance):
    def scenario(run):
        seen = {}
        wire = run.wire()

        def with_tail(frame: bytes, tail: bytes) -> bytes:
            payload = frame[4:] + tail
            return struct.pack(">i", len(payload)) + payload

        cases = {
            "metadata_v12_null": (3, 12, body(3, 12, topics=None, allow_auto_topic_creation=False,
                                              include_topic_authorized_operations=False)),
            "metadata_v1_null": (3, 1, body(3, 1, topics=None)),
            "heartbeat_v4": (12, 4, body(12, 4, group_id=run.group(), generation_id=1, member_id="m",
                                         group_instance_id=None)),
            "find_coordinator_v3": (10, 3, body(10, 3, key=run.group(), key_type=0)),
        }
        for i, (name, (key, version, entity)) in enumerate(cases.items(), start=1):
            wire.send_raw(with_tail(encode_request(key, version, 1000 + i, entity), b"\x00\x01\x02"))
            wire.pending.append((key, version, 1000 + i))
            answer = wire.receive()
            if key == 3:                 # the session's topics only (Kafka also lists __consumer_offsets)
                seen[name] = sorted([t.name, len(t.partitions), t.error_code.value] for t in answer.topics
                                    if t.name.startswith("c."))
            else:
                seen[name] = answer.error_code.value
        # An API neither server advertises on this listener (Envelope, 58: controller-only) and an API key that
        # does not exist: the connection is closed without an answer.
        for name, key in (("envelope", 58), ("unknown_key", 9999)):
            with socket.create_connection(run.server.address) as raw:
                payload = struct.pack(">hhih", key, 0, 7, -1) + b"\x00"
                raw.sendall(struct.pack(">i", len(payload)) + payload)
                raw.settimeout(30)
                seen[name] = raw.recv(100)
        return seen

    conformance(scenario)
