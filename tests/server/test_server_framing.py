"""Framing and the kio round trip of every advertised (API, version), request and response, plus
structurally valid but absurd requests of every API against a live server."""
from __future__ import annotations

import datetime
import logging
import socket
import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from kio.index import load_request_schema, load_response_schema
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader
from kio.static.primitive import Records, i64Timedelta

from kafkagroup.server.framing import FrameError, decode_request, encode_response
from server_wire import ServerThread, encode_request
from test_server_data import ADVERTISED

# kio registers strategies for its primitives but not for record sets: opaque bytes (or null) here.
st.register_type_strategy(Records, st.binary(max_size=64).map(Records.parse))
# kio's own strategy for INT64 millisecond durations reaches timedelta's maximum, but its reader refuses values
# near it ("timedelta milliseconds overflow"; the server answers such a frame as undecodable: the connection is
# closed with the reason logged). kio writes a duration as round(total_seconds() * 1000), a float product whose
# error is about |ms| * 2**-52 ms: exact (error < 0.5 ms) below 2**51 ms. Durations here stay within 2**50 ms
# (35,000 years).
st.register_type_strategy(i64Timedelta, st.integers(-2**50, 2**50).map(
    lambda ms: i64Timedelta.parse(datetime.timedelta(milliseconds=ms))))

EVERY_VERSION = [(key, v) for key, (lo, hi) in sorted(ADVERTISED.items()) for v in range(lo, hi + 1)]


@pytest.mark.parametrize("api_key,version", EVERY_VERSION)
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), correlation_id=st.integers(-2**31, 2**31 - 1),
       client_id=st.none() | st.text(max_size=20))
def test_request_and_response_round_trip(api_key, version, data, correlation_id, client_id):
    request = data.draw(st.from_type(load_request_schema(api_key, version)))
    frame = encode_request(api_key, version, correlation_id, request, client_id)
    decoded = decode_request(frame[4:])
    assert (decoded.api_key, decoded.api_version, decoded.correlation_id, decoded.client_id, decoded.body) == (
        api_key, version, correlation_id, client_id, request)

    response_cls = load_response_schema(api_key, version)
    response = data.draw(st.from_type(response_cls))
    out = encode_response(api_key, version, correlation_id, response)
    assert struct.unpack_from(">i", out)[0] == len(out) - 4
    header_cls = ResponseHeaderV1 if response_cls.__flexible__ and api_key != 18 else ResponseHeaderV0
    header, used = entity_reader(header_cls)(out, 4)
    body, body_used = entity_reader(response_cls)(out, 4 + used)
    assert header.correlation_id == correlation_id and body == response and 4 + used + body_used == len(out)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=120) | st.sampled_from(EVERY_VERSION).flatmap(
    lambda kv: st.tuples(st.just(kv), st.binary(max_size=60))).map(
        lambda t: struct.pack(">hhih", t[0][0], t[0][1], 1, -1) + t[1]))
def test_decode_request_raises_only_frame_error(frame):
    try:
        decode_request(frame)
    except FrameError:
        pass


def test_response_header_is_v0_for_api_versions_and_old_responses():
    from kio.schema.api_versions.v3.response import ApiVersionsResponse
    from kio.schema.heartbeat.v4.response import HeartbeatResponse
    from kio.schema.heartbeat.v3.response import HeartbeatResponse as HeartbeatResponseV3
    import datetime
    from kio.schema.errors import ErrorCode
    av = encode_response(18, 3, 9, ApiVersionsResponse(error_code=ErrorCode.none, api_keys=(),
                                                       throttle_time=datetime.timedelta(0)))
    assert av[4:8] == struct.pack(">i", 9) and av[8:10] == b"\x00\x00"     # no tagged-field byte after the id
    hb4 = encode_response(12, 4, 9, HeartbeatResponse(throttle_time=datetime.timedelta(0), error_code=ErrorCode.none))
    assert hb4[4:9] == struct.pack(">i", 9) + b"\x00"                       # header v1: empty tagged fields
    hb3 = encode_response(12, 3, 9, HeartbeatResponseV3(throttle_time=datetime.timedelta(0),
                                                        error_code=ErrorCode.none))
    assert len(hb3) == 4 + 4 + 4 + 2


def test_absurd_but_well_formed_requests_of_every_api(caplog):
    """Any value kio can encode, for every API and version: the server answers or closes with a reason,
    never fails inside a handler, and still answers afterwards."""
    caplog.set_level(logging.INFO)
    s = ServerThread(topics={"t": 2}, config={"group.initial.rebalance.delay.ms": 0})
    try:
        @settings(max_examples=150, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(st.sampled_from(EVERY_VERSION).flatmap(
            lambda kv: st.tuples(st.just(kv), st.from_type(load_request_schema(*kv)))))
        def send(case):
            (api_key, version), request = case
            sock = socket.create_connection(s.address)
            sock.settimeout(0.5)
            try:
                sock.sendall(encode_request(api_key, version, 1, request))
                try:
                    sock.recv(1 << 16)        # an answer, a close, or (a parked join / waiting fetch) nothing yet
                except (socket.timeout, ConnectionResetError):
                    pass
            finally:
                sock.close()

        send()
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert errors == []
        probe = socket.create_connection(s.address)
        probe.sendall(encode_request(18, 0, 5, load_request_schema(18, 0)()))
        probe.settimeout(10)
        assert struct.unpack(">ii", probe.recv(8))[1] == 5
        probe.close()
    finally:
        s.stop()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=20), st.data())
def test_frame_buffer_cuts_any_chunking_into_the_frames_sent(payloads, data):
    from kafkagroup.server.framing import FrameBuffer
    stream = b"".join(struct.pack(">i", len(p)) + p for p in payloads)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    buffer, got = FrameBuffer(300), []
    for start, end in zip([0, *cuts], [*cuts, len(stream)]):
        buffer.feed(stream[start:end])
        while (frame := buffer.next_frame()) is not None:
            got.append(frame)
    buffer.check_end()
    assert got == payloads
    partial = FrameBuffer(300)
    partial.feed(stream + b"\x00\x00")
    while partial.next_frame() is not None:
        pass
    with pytest.raises(FrameError, match="size prefix"):
        partial.check_end()
    with pytest.raises(FrameError, match="outside 0..300"):
        too_big = FrameBuffer(300)
        too_big.feed(struct.pack(">i", 301))
        too_big.next_frame()
