"""Produce, Fetch, ListOffsets, InitProducerId and Metadata through the wire, read back with kafka-python's
own record parser (an implementation independent of the server's)."""
from __future__ import annotations

import threading
import uuid

from kafka.record.memory_records import MemoryRecords

from server_wire import KafkaWire, ServerThread, body, nested, record_batch

PRODUCE, FETCH, LIST_OFFSETS, METADATA, INIT_PID, API_VERSIONS = 0, 1, 2, 3, 22, 18
NONE, OFFSET_OUT_OF_RANGE, CORRUPT, UNKNOWN, INVALID_TOPIC, INVALID_REQUEST, UNSUPPORTED = 0, 1, 2, 3, 17, 42, 35

# The issue's list (restated here, not imported: the test checks the server against it).
ADVERTISED = {0: (3, 9), 1: (4, 12), 2: (1, 7), 3: (0, 12), 8: (2, 9), 9: (1, 9), 10: (0, 6), 11: (0, 9),
              12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 18: (0, 4), 22: (0, 4), 42: (0, 2),
              47: (0, 0),
              # issue 20: the topic admin APIs, at Apache Kafka 4.4.0's ranges
              19: (2, 7), 20: (1, 6), 21: (0, 2), 32: (1, 4), 37: (0, 3),
              # issue 22: the consumer group protocol (KIP-848)
              68: (0, 1), 69: (0, 1)}


def produce(wire, version, topic, partition, records, acks=-1):
    return wire.request(PRODUCE, version, body(PRODUCE, version, transactional_id=None, acks=acks, timeout=5000,
                        topic_data=(nested(PRODUCE, version, "TopicProduceData", name=topic, partition_data=(
                            nested(PRODUCE, version, "PartitionProduceData", index=partition, records=records),)),)))


def fetch(wire, version, topic, partition, offset, *, max_bytes=1 << 20, partition_max_bytes=1 << 20,
          max_wait=0, min_bytes=0):
    r = wire.request(FETCH, version, body(
        FETCH, version, replica_id=-1, max_wait=max_wait, min_bytes=min_bytes, max_bytes=max_bytes,
        isolation_level=0, session_id=0, session_epoch=-1, rack_id="", cluster_id=None,
        forgotten_topics_data=(),
        topics=(nested(FETCH, version, "FetchTopic", topic=topic, partitions=(
            nested(FETCH, version, "FetchPartition", partition=partition, current_leader_epoch=-1,
                   fetch_offset=offset, last_fetched_epoch=-1, log_start_offset=-1,
                   partition_max_bytes=partition_max_bytes),)),)))
    assert r.error_code == NONE if hasattr(r, "error_code") else True
    (t,) = r.responses
    (p,) = t.partitions
    return p


def values(records: bytes) -> list[tuple[int, bytes]]:
    out = []
    mr = MemoryRecords(records)
    while mr.has_next():
        batch = mr.next_batch()
        assert batch.validate_crc()
        out += [(rec.offset, rec.value) for rec in batch]
    return out


def list_offset(wire, version, topic, partition, timestamp):
    r = wire.request(LIST_OFFSETS, version, body(LIST_OFFSETS, version, replica_id=-1, isolation_level=0, topics=(
        nested(LIST_OFFSETS, version, "ListOffsetsTopic", name=topic, partitions=(
            nested(LIST_OFFSETS, version, "ListOffsetsPartition", partition_index=partition, current_leader_epoch=-1,
                   timestamp=timestamp),)),)))
    return r.topics[0].partitions[0]


def test_api_versions_lists_the_issue_ranges_and_answers_newer_with_v0(server):
    with KafkaWire(server.address) as wire:
        for v in range(5):
            r = wire.request(API_VERSIONS, v, body(API_VERSIONS, v, client_software_name="t",
                                                   client_software_version="1"))
            assert r.error_code == NONE
            assert {k.api_key: (k.min_version, k.max_version) for k in r.api_keys} == ADVERTISED
        # a version above 4: the header is parsed as the newest version's (v2: an empty tagged-field section
        # here), whatever follows is ignored, the answer is a v0 body listing ApiVersions' own range (Kafka 4)
        import struct
        frame = struct.pack(">hhih", 18, 77, 4242, 1) + b"x" + b"\x00garbage-of-a-future-version"
        wire.send_raw(struct.pack(">i", len(frame)) + frame)
        wire.pending.append((API_VERSIONS, 77, 4242))
        r = wire.receive(response_version=0)
        assert r.error_code == UNSUPPORTED and [(k.api_key, k.min_version, k.max_version) for k in r.api_keys] == [
            (API_VERSIONS, *ADVERTISED[API_VERSIONS])]
        # KIP-511: v3+ must name the client software with [a-zA-Z0-9] at both ends, '.' and '-' inside
        bad = wire.request(API_VERSIONS, 3, body(API_VERSIONS, 3, client_software_name="-x",
                                                 client_software_version="1"))
        assert bad.error_code == INVALID_REQUEST and bad.api_keys == ()
        # and the connection stays usable
        assert wire.request(API_VERSIONS, 3, body(API_VERSIONS, 3, client_software_name="t",
                                                  client_software_version="1")).error_code == NONE


def test_produce_then_fetch_every_version(server):
    """Offsets accumulate across batches and versions; fetch returns whole batches from the one holding the
    offset, with valid CRCs after the base-offset rewrite; at the high watermark the records are empty."""
    with KafkaWire(server.address) as wire:
        expected: list[tuple[int, bytes]] = []
        for i, v in enumerate(range(3, 10)):
            vals = [b"v%d-%d" % (v, j) for j in range(i + 1)]
            r = produce(wire, v, "t", 1, record_batch(vals, timestamp=1_700_000_000_000 + 100 * i))
            p = r.responses[0].partition_responses[0]
            assert (p.error_code, p.base_offset) == (NONE, len(expected))
            expected += [(len(expected) + j, x) for j, x in enumerate(vals)]
        hw = len(expected)
        for v in range(4, 13):
            p = fetch(wire, v, "t", 1, 0)
            assert (p.error_code, p.high_watermark, p.log_start_offset if v >= 5 else 0) == (NONE, hw, 0)
            assert values(p.records) == expected
            mid = fetch(wire, v, "t", 1, 4)             # offset 4 lies in the batch starting at 3
            assert values(mid.records)[0] == expected[3]
            at_end = fetch(wire, v, "t", 1, hw)
            assert at_end.error_code == NONE and at_end.records == b""
            beyond = fetch(wire, v, "t", 1, hw + 1)
            assert beyond.error_code == OFFSET_OUT_OF_RANGE
        for v in range(1, 8):
            assert list_offset(wire, v, "t", 1, -2).offset == 0
            assert list_offset(wire, v, "t", 1, -1).offset == hw
        top = list_offset(wire, 7, "t", 1, -3)             # the last record holds the largest timestamp
        assert (top.offset, top.timestamp) == (27, 1_700_000_000_606)
        found = list_offset(wire, 5, "t", 1, 1_700_000_000_201)   # batch 2: offsets 3-5 at ...200, 201, 202
        assert (found.offset, found.timestamp) == (4, 1_700_000_000_201)
        assert list_offset(wire, 5, "t", 1, 1_800_000_000_000).offset == -1
        assert list_offset(wire, 5, "nope", 0, -1).error_code == UNKNOWN


def test_fetch_max_bytes_still_returns_one_batch(server):
    with KafkaWire(server.address) as wire:
        for i in range(3):
            produce(wire, 9, "t", 2, record_batch([b"x" * 1000]))
        one = fetch(wire, 12, "t", 2, 0, max_bytes=10, partition_max_bytes=10)
        assert [o for o, _ in values(one.records)] == [0]
        two = fetch(wire, 12, "t", 2, 0, max_bytes=2300)
        assert [o for o, _ in values(two.records)] == [0, 1]


def test_log_bound_moves_the_start_offset():
    s = ServerThread(topics={"small": 1}, config={"log.retention.bytes": 3000})
    wire = KafkaWire(s.address)
    try:
        for i in range(10):
            produce(wire, 9, "small", 0, record_batch([b"%04d" % i + b"y" * 1000]))
        start = list_offset(wire, 7, "small", 0, -2).offset
        assert 0 < start < 10 and list_offset(wire, 7, "small", 0, -1).offset == 10
        assert fetch(wire, 12, "small", 0, start - 1).error_code == OFFSET_OUT_OF_RANGE
        kept = fetch(wire, 12, "small", 0, start)
        assert kept.log_start_offset == start
        assert [o for o, _ in values(kept.records)] == list(range(start, 10))
    finally:
        wire.close()
        s.stop()


def test_produce_rejects_bad_batches_and_keeps_the_log(server):
    with KafkaWire(server.address) as wire:
        good = record_batch([b"a"])
        bad_crc = bytearray(good)
        bad_crc[-1] ^= 0xFF
        for records, code in ((bytes(bad_crc), CORRUPT), (good[:30], CORRUPT), (good[:16] + b"\x01" + good[17:], 87),
                              (None, 87)):
            p = produce(wire, 9, "t", 0, records).responses[0].partition_responses[0]
            assert p.error_code == code and p.error_message
        p = produce(wire, 9, "t", 0, good).responses[0].partition_responses[0]
        assert (p.error_code, p.base_offset) == (NONE, 0)
        assert produce(wire, 9, "t", 7, good).responses[0].partition_responses[0].error_code == UNKNOWN
        assert produce(wire, 9, "bad/name", 0, good).responses[0].partition_responses[0].error_code == INVALID_TOPIC


def test_produce_acks_zero_gets_no_answer(server):
    with KafkaWire(server.address) as wire:
        wire.send(PRODUCE, 9, body(PRODUCE, 9, transactional_id=None, acks=0, timeout=5000, topic_data=(
            nested(PRODUCE, 9, "TopicProduceData", name="t", partition_data=(
                nested(PRODUCE, 9, "PartitionProduceData", index=0, records=record_batch([b"z"])),)),)))
        wire.pending.pop()                          # Kafka sends nothing for acks=0
        assert list_offset(wire, 7, "t", 0, -1).offset == 1   # the next answer is the next request's


def test_fetch_waits_for_data_and_wakes_on_produce(server):
    waiting = KafkaWire(server.address)
    producer = KafkaWire(server.address)
    try:
        result = {}
        t = threading.Thread(target=lambda: result.update(p=fetch(waiting, 12, "t", 0, 0, max_wait=20_000,
                                                                 min_bytes=1)))
        t.start()
        produce(producer, 9, "t", 0, record_batch([b"wake"]))
        t.join(30)
        assert values(result["p"].records) == [(0, b"wake")]
    finally:
        waiting.close()
        producer.close()


def test_metadata_topics_auto_creation_and_ids():
    s = ServerThread(topics={"fixed": 4}, config={"num.partitions": 2})
    wire = KafkaWire(s.address)
    try:
        def md(v, names, allow=True):
            topics = None if names is None else tuple(
                nested(METADATA, v, "MetadataRequestTopic", name=n, topic_id=uuid.UUID(int=0)) for n in names)
            return wire.request(METADATA, v, body(METADATA, v, topics=topics, allow_auto_topic_creation=allow,
                                                  include_cluster_authorized_operations=False,
                                                  include_topic_authorized_operations=False))
        r = md(12, None)
        assert [(b.node_id, b.host, b.port) for b in r.brokers] == [(0, *s.address)] and r.controller_id == 0
        assert [(t.name, len(t.partitions)) for t in r.topics] == [("fixed", 4)]
        fixed_id = r.topics[0].topic_id
        assert fixed_id != uuid.UUID(int=0)
        assert [p.leader_id for p in r.topics[0].partitions] == [0, 0, 0, 0]
        assert md(1, ()).topics == ()                       # v1+: an empty list asks for no topic
        assert {t.name for t in md(0, ()).topics} == {"fixed"}   # v0: empty means all
        r = md(9, ["fresh", "bad name", "fixed"])
        assert [(t.name, t.error_code, len(t.partitions)) for t in r.topics] == [
            ("fresh", NONE, 2), ("bad name", INVALID_TOPIC, 0), ("fixed", NONE, 4)]
        assert md(4, ["not-created"], allow=False).topics[0].error_code == UNKNOWN
        assert md(12, ["fixed"]).topics[0].topic_id == fixed_id
        by_id = wire.request(METADATA, 12, body(METADATA, 12, topics=(
            nested(METADATA, 12, "MetadataRequestTopic", name=None, topic_id=fixed_id),),
            allow_auto_topic_creation=False, include_topic_authorized_operations=False))
        assert [(t.name, t.error_code) for t in by_id.topics] == [("fixed", NONE)]
        # the Java client 4.x builds its by-id request with the name left at its default, "" (not null):
        # Kafka's broker looks a topic up by id whenever the id is not all-zero
        by_id = wire.request(METADATA, 12, body(METADATA, 12, topics=(
            nested(METADATA, 12, "MetadataRequestTopic", name="", topic_id=fixed_id),),
            allow_auto_topic_creation=False, include_topic_authorized_operations=False))
        assert [(t.name, t.topic_id, t.error_code) for t in by_id.topics] == [("fixed", fixed_id, NONE)]
    finally:
        wire.close()
        s.stop()
    again = ServerThread(topics={"fixed": 4})
    wire = KafkaWire(again.address)
    try:   # the id of a name is the same on another server run
        r = wire.request(METADATA, 12, body(METADATA, 12, topics=None, allow_auto_topic_creation=False,
                                            include_topic_authorized_operations=False))
        assert r.topics[0].topic_id == fixed_id
    finally:
        wire.close()
        again.stop()


def test_init_producer_id(server):
    with KafkaWire(server.address) as wire:
        ids = set()
        for v in range(5):
            r = wire.request(INIT_PID, v, body(INIT_PID, v, transactional_id=None, transaction_timeout=60_000,
                                               producer_id=-1, producer_epoch=-1))
            assert r.error_code == NONE and r.producer_epoch == 0
            ids.add(r.producer_id)
        assert len(ids) == 5
        pid = max(ids)
        bumped = wire.request(INIT_PID, 4, body(INIT_PID, 4, transactional_id=None, transaction_timeout=60_000,
                                                producer_id=pid, producer_epoch=0))
        assert (bumped.producer_id, bumped.producer_epoch) == (pid, 1)
        txn = wire.request(INIT_PID, 4, body(INIT_PID, 4, transactional_id="tx", transaction_timeout=60_000,
                                             producer_id=-1, producer_epoch=-1))
        assert txn.error_code == 53        # TRANSACTIONAL_ID_AUTHORIZATION_FAILED: final for every client
