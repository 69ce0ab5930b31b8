"""Bytes no client sends: each closes its own connection with a logged reason (as a Kafka broker does) or
gets Kafka's answer; the server, the other connections, the groups and the commits are untouched."""
from __future__ import annotations

import logging
import socket
import struct
import time

from hypothesis import HealthCheck, given, settings, strategies as st
from kafka import KafkaConsumer, TopicPartition

from server_wire import KafkaWire, ServerThread, body, encode_request, nested, record_batch
from test_server_groups import commit, fetch_offsets, join_fully, sync

NONE = 0


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def heartbeat_frame(correlation_id: int = 1) -> bytes:
    return encode_request(12, 4, correlation_id, body(12, 4, group_id="g", generation_id=1, member_id="m",
                                                      group_instance_id=None))


def wait_for_log(caplog, needle: str, deadline_s: float = 10.0) -> str:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        for record in caplog.records:
            if record.name == "kafkagroup.server" and needle in record.getMessage():
                return record.getMessage()
        time.sleep(0.02)
    raise AssertionError(f"no server log line containing {needle!r}: {[r.getMessage() for r in caplog.records]}")


BAD = {
    "absurd size": (struct.pack(">i", 2**31 - 1) + b"xx", "outside 0..4096"),
    "negative size": (struct.pack(">i", -5), "outside 0..4096"),
    "unknown api key": (frame(struct.pack(">hhih", 9999, 0, 7, -1)), "unsupported API key 9999"),
    "unsupported version": (frame(struct.pack(">hhih", 11, 10, 7, -1)), "unsupported API key 11 version 10"),
    "short header": (frame(b"\x00\x0c"), "shorter than a request header"),
    "truncated body": (frame(heartbeat_frame()[4:-3]), "malformed HeartbeatRequest v4"),
    "garbage string length": (frame(struct.pack(">hhih", 12, 0, 7, 3000) + b"abc"), "malformed request header"),
    "frame cut by close": (struct.pack(">i", 100) + b"\x00" * 10, "closed after 10 of a frame's 100 bytes"),
}


def test_each_bad_frame_closes_only_its_connection(caplog):
    caplog.set_level(logging.INFO, logger="kafkagroup.server")
    s = ServerThread(topics={"t": 2}, config={"group.initial.rebalance.delay.ms": 0, "socket.request.max.bytes": 4096})
    member = KafkaWire(s.address)
    try:
        joined = join_fully(member, 9, "steady")
        mid = joined.member_id
        assert sync(member, 5, "steady", 1, mid, [(mid, b"a")]).error_code == NONE
        assert commit(member, 9, "steady", {("t", 0): 42}, 1, mid).topics[0].partitions[0].error_code == NONE
        for name, (data, reason) in BAD.items():
            caplog.clear()
            bad = socket.create_connection(s.address)
            bad.sendall(data)
            if name == "frame cut by close":
                bad.shutdown(socket.SHUT_WR)
            bad.settimeout(10)
            assert bad.recv(100) == b"", name            # closed without an answer
            bad.close()
            assert reason in wait_for_log(caplog, "closing connection"), name
            hb = member.request(12, 4, body(12, 4, group_id="steady", generation_id=1, member_id=mid,
                                            group_instance_id=None))
            assert hb.error_code == NONE, name
        assert fetch_offsets(member, 8, "steady", [("t", 0)])[("t", 0)][0] == 42
    finally:
        member.close()
        s.stop()


def test_a_frame_at_the_size_limit_is_read(caplog):
    s = ServerThread(config={"socket.request.max.bytes": 4096})
    wire = KafkaWire(s.address)
    try:
        big = record_batch([b"x" * 3000])
        r = wire.request(0, 9, body(0, 9, transactional_id=None, acks=-1, timeout=1000, topic_data=(
            nested(0, 9, "TopicProduceData", name="lim", partition_data=(
                nested(0, 9, "PartitionProduceData", index=0, records=big),)),)))
        assert r.responses[0].partition_responses[0].error_code == NONE
    finally:
        wire.close()
        s.stop()


def _valid_frames() -> list[bytes]:
    """Requests real clients send, as mutation seeds."""
    out = [heartbeat_frame()]
    for v in (0, 5, 9):
        out.append(encode_request(11, v, 1, body(11, v, group_id="fz", session_timeout=6000, rebalance_timeout=6000,
                                                 member_id="", group_instance_id=None, protocol_type="consumer",
                                                 reason=None, protocols=(nested(11, v, "JoinGroupRequestProtocol",
                                                                                name="range", metadata=b"m"),))))
    out.append(encode_request(14, 5, 2, body(14, 5, group_id="fz", generation_id=1, member_id="m",
                                             group_instance_id=None, protocol_type="consumer", protocol_name="range",
                                             assignments=(nested(14, 5, "SyncGroupRequestAssignment", member_id="m",
                                                                 assignment=b"a"),))))
    out.append(encode_request(8, 9, 3, body(8, 9, group_id="fz", generation_id_or_member_epoch=-1, member_id="",
                                            group_instance_id=None, topics=(nested(8, 9, "OffsetCommitRequestTopic",
                                            name="t", partitions=(nested(8, 9, "OffsetCommitRequestPartition",
                                            partition_index=0, committed_offset=1, committed_leader_epoch=-1,
                                            committed_metadata=None),)),))))
    out.append(encode_request(3, 12, 4, body(3, 12, topics=None, allow_auto_topic_creation=True,
                                             include_topic_authorized_operations=False)))
    out.append(encode_request(0, 9, 5, body(0, 9, transactional_id=None, acks=1, timeout=100, topic_data=(
        nested(0, 9, "TopicProduceData", name="fz", partition_data=(
            nested(0, 9, "PartitionProduceData", index=0, records=record_batch([b"r"])),)),))))
    out.append(encode_request(18, 3, 6, body(18, 3, client_software_name="c", client_software_version="1")))
    out.append(encode_request(13, 2, 7, body(13, 2, group_id="fz", member_id="m")))
    return out


SEEDS = _valid_frames()


@st.composite
def hostile_bytes(draw) -> bytes:
    kind = draw(st.sampled_from(["random", "mutated", "resized", "truncated"]))
    if kind == "random":
        return draw(st.binary(max_size=200))
    seed = bytearray(draw(st.sampled_from(SEEDS)))
    if kind == "truncated":
        return bytes(seed[:draw(st.integers(0, len(seed) - 1))])
    if kind == "resized":
        struct.pack_into(">i", seed, 0, draw(st.integers(-2**31, 2**31 - 1)))
        return bytes(seed)
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(4, len(seed) - 1))
        op = draw(st.sampled_from(["flip", "insert", "delete"]))
        if op == "flip":
            seed[at] ^= draw(st.integers(1, 255))
        elif op == "insert":
            seed[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif len(seed) > 5:
            del seed[at]
    struct.pack_into(">i", seed, 0, len(seed) - 4)       # keep the frame consistent: the body is what is bad
    return bytes(seed)


def test_hostile_frames_then_a_real_client_still_joins(caplog, kafka_python_finishes_pending_joins):
    """After 300 hostile connections the server still serves a real client: kafka-python joins, is assigned
    both partitions, commits and reads its commit back.

    kafka-python 3.0.12 joins in two rounds here (its first assignment runs before it has the topic's
    metadata; the metadata then starts a second round), and ``poll(timeout_ms=200)`` may give up with that
    second round in flight; shipped kafka-python then never finishes the round (the leader stays rebalancing,
    heartbeats off, no partitions), whatever the server answers -- serve answers the round's SyncGroup at
    once.  That failed 2 runs in 36 here (most with a CPU hog running), and every run in which serve's
    SyncGroup answers were held 300 ms (longer than the poll).  The fixture
    ``kafka_python_finishes_pending_joins`` applies the test driver's workaround for that client defect, so
    that the client's defect cannot decide the outcome; what is asserted is unchanged."""
    caplog.set_level(logging.INFO)
    thrown = []
    s = ServerThread(topics={"t": 2}, config={"group.initial.rebalance.delay.ms": 0,
                                              "socket.request.max.bytes": 1 << 20})
    try:
        keeper = KafkaWire(s.address)
        assert commit(keeper, 9, "kept", {("t", 1): 77}).topics[0].partitions[0].error_code == NONE

        @settings(max_examples=300, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(st.lists(hostile_bytes(), min_size=1, max_size=3))
        def throw(chunks: list[bytes]) -> None:
            thrown.append(len(chunks))
            sock = socket.create_connection(s.address)
            try:
                sock.sendall(b"".join(chunks))
            except OSError:
                pass                                     # the server may close before all is sent
            finally:
                sock.close()
            # the loop still answers
            assert keeper.request(18, 3, body(18, 3, client_software_name="k",
                                              client_software_version="1")).error_code == NONE

        throw()
        assert len(thrown) >= 200
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert errors == []                              # every close had a reason; no handler failed
        closes = [r.getMessage() for r in caplog.records if "closing connection" in r.getMessage()]
        assert len(closes) > 50
        assert fetch_offsets(keeper, 8, "kept", [("t", 1)])[("t", 1)][0] == 77
        keeper.close()

        consumer = KafkaConsumer(bootstrap_servers=s.bootstrap, group_id="after-fuzz", enable_auto_commit=False,
                                 auto_offset_reset="earliest", consumer_timeout_ms=500)
        try:
            consumer.subscribe(["t"])
            deadline = time.monotonic() + 30
            while not consumer.assignment() and time.monotonic() < deadline:
                consumer.poll(timeout_ms=200)
            assert consumer.assignment() == {TopicPartition("t", 0), TopicPartition("t", 1)}
            consumer.commit({TopicPartition("t", 0): __import__("kafka").OffsetAndMetadata(3, "", -1)})
            assert consumer.committed(TopicPartition("t", 0)) == 3
        finally:
            consumer.close()
    finally:
        s.stop()


def _nulled(frame: bytes, after: bytes, width: int, null: bytes) -> bytes:
    """``frame`` with the length prefix (``width`` bytes) that follows ``after`` replaced by ``null``, the
    rest of that field's bytes left in place (they are then trailing bytes or garbage: either way the
    request must be refused)."""
    i = frame.index(after) + len(after)
    out = frame[4:i] + null + frame[i + width:]
    return struct.pack(">i", len(out)) + out


NULL_CASES = {
    # JoinGroup v9: protocols (compact array) null: varint 0
    "join v9 protocols": (encode_request(11, 9, 1, body(11, 9, group_id="g", session_timeout=6000,
        rebalance_timeout=6000, member_id="", group_instance_id=None, protocol_type="consumer", protocols=(),
        reason=None)), b"consumer", 1, b"\x00"),
    # JoinGroup v0: protocols (int32 array) null: -1
    "join v0 protocols": (encode_request(11, 0, 1, body(11, 0, group_id="g", session_timeout=6000, member_id="",
        protocol_type="consumer", protocols=())), b"consumer", 4, b"\xff\xff\xff\xff"),
    # Heartbeat v0: group id (int16 string) null: -1
    "heartbeat v0 group id": (encode_request(12, 0, 1, body(12, 0, group_id="gg", generation_id=1, member_id="m")),
                              b"test", 2, b"\xff\xff"),
    # OffsetCommit v8: topics null
    "commit v8 topics": (encode_request(8, 8, 1, body(8, 8, group_id="g", generation_id_or_member_epoch=-1,
        member_id="mm", group_instance_id=None, topics=())), b"mm\x00", 1, b"\x00"),
}


def test_null_where_kafka_forbids_it_closes_with_the_field_named(caplog):
    caplog.set_level(logging.INFO, logger="kafkagroup.server")
    s = ServerThread()
    try:
        for name, (frame_, after, width, null) in NULL_CASES.items():
            caplog.clear()
            sock = socket.create_connection(s.address)
            sock.sendall(_nulled(frame_, after, width, null))
            sock.settimeout(10)
            assert sock.recv(100) == b"", name
            sock.close()
            line = wait_for_log(caplog, "closing connection")
            assert "is null" in line or "malformed" in line, (name, line)
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    finally:
        s.stop()
