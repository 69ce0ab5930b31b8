"""librdkafka's "all topics" Metadata request is answered, as Kafka's broker answers it (issue 20, item 1).

librdkafka 2.x writes the null topic array of a flexible Metadata request as one varint and leaves 3 reserved
bytes behind the body.  Kafka's broker reads the body and ignores what remains of the frame, for every API
(checked on Apache Kafka 4.4.0: Metadata v1 and v12, ApiVersions v3 and Heartbeat v4 with bytes appended are
all answered); before this fix ``serve`` closed the connection ("MetadataRequest v12 ends at byte 22 of a
25-byte frame"), so ``list_topics()`` failed on every confluent-kafka handle, a regex subscription consumed
nothing, and ``kcat -L`` failed.
"""
from __future__ import annotations

import shutil
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from kafka import KafkaProducer

from server_support import wait_until
from server_wire import KafkaWire, ServerThread, body, encode_request

NONE = 0


@pytest.fixture
def server():
    s = ServerThread(topics={"orders": 3, "audit": 1}, config={"group.initial.rebalance.delay.ms": 0})
    yield s
    s.stop()


@pytest.mark.parametrize("handle", ["admin", "consumer", "producer"])
def test_list_topics_on_every_confluent_handle(server, handle):
    conf = {"bootstrap.servers": server.bootstrap}
    if handle == "consumer":
        client = Consumer({**conf, "group.id": "lister"})
    elif handle == "producer":
        client = Producer(conf)
    else:
        client = AdminClient(conf)
    try:
        metadata = client.list_topics(timeout=10)     # all topics: the null-array request
        assert {name: len(t.partitions) for name, t in metadata.topics.items()} == {"orders": 3, "audit": 1}
        assert [b.id for b in metadata.brokers.values()] == [0]
        assert all(t.error is None for t in metadata.topics.values())
    finally:
        if handle == "consumer":
            client.close()


def test_regex_subscription_picks_up_a_topic_created_later(server):
    """A confluent consumer subscribed to ``^events-.*`` reads a topic that appears after it joined (the
    seed's second rebalance trigger: the subscribed topics change); librdkafka finds it with its all-topics
    Metadata request every ``topic.metadata.refresh.interval.ms``."""
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": f"regex-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 500,
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    producer = KafkaProducer(bootstrap_servers=server.bootstrap)
    try:
        producer.send("events-a", b"first").get(timeout=10)
        assigned: list[list[tuple[str, int]]] = []
        consumer.subscribe(["^events-.*"], on_assign=lambda c, ps: assigned.append(
            sorted((p.topic, p.partition) for p in ps)))
        got: list[tuple[str, bytes]] = []

        def poll_for(topic: str) -> bool:
            message = consumer.poll(0.2)
            if message is not None:
                assert message.error() is None, message.error()
                got.append((message.topic(), message.value()))
            return any(t == topic for t, _ in got)

        wait_until(lambda: poll_for("events-a"), 30, lambda: f"events-a read (got {got}, assigned {assigned})")
        producer.send("events-b", b"later").get(timeout=10)      # created (auto) after the consumer joined
        wait_until(lambda: poll_for("events-b"), 30, lambda: f"events-b read (got {got}, assigned {assigned})")
        assert ("events-b", b"later") in got
        assert ("events-b", 0) in assigned[-1]
    finally:
        producer.close()
        consumer.close()


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat not installed (make kcat)")
def test_kcat_lists_the_topics(server):
    out = subprocess.run(["kcat", "-b", server.bootstrap, "-L", "-J"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    import json
    listed = json.loads(out.stdout)
    assert {t["topic"]: len(t["partitions"]) for t in listed["topics"]} == {"orders": 3, "audit": 1}


def test_bytes_after_the_body_are_ignored_for_every_api(server):
    """Heartbeat v4 and Metadata v1 with bytes appended are answered as without them (Kafka 4.4.0 does)."""
    def with_tail(frame: bytes, tail: bytes) -> bytes:
        payload = frame[4:] + tail
        return len(payload).to_bytes(4, "big") + payload

    with KafkaWire(server.address) as wire:
        hb = body(12, 4, group_id="nobody", generation_id=1, member_id="m", group_instance_id=None)
        wire.send_raw(with_tail(encode_request(12, 4, 1, hb), b"\x00" * 5))
        wire.pending.append((12, 4, 1))
        assert wire.receive().error_code == 25            # UNKNOWN_MEMBER_ID: answered, not closed
        meta = body(3, 1, topics=None)
        wire.send_raw(with_tail(encode_request(3, 1, 2, meta), b"abc"))
        wire.pending.append((3, 1, 2))
        assert sorted(t.name for t in wire.receive().topics) == ["audit", "orders"]
