"""Strings and other values a ConsumerProtocolSubscription / Assignment cannot carry.

Kafka's rules, restated: the generated ``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment`` classes
(clients/src/main/resources/common/message/ConsumerProtocol*.json, written by ``ConsumerProtocol
.serializeSubscription``) refuse a STRING of more than 0x7fff UTF-8 bytes ("field is too long to be serialized")
-- topics from v0, owned partitions' topic from v1, rack_id from v3, assignment topics in every version --
and BYTES (user_data) carry an int32 length.  Java encodes a lone surrogate as ``?`` (``getBytes(UTF_8)``);
kafkagroup refuses it instead of sending a different name.  Fields a version does not carry are not checked.
"""
from __future__ import annotations

import pytest

from kafkagroup.errors import ProtocolError
from kafkagroup.protocol import Assignment, Subscription, decode_subscription, encode_assignment, encode_subscription
from kafkagroup.protocol.consumer_protocol import MAX_STRING_BYTES, string_problem
from kafkagroup.structs import TopicPartition

LONE = "\ud800"
LONGEST = "é" * (MAX_STRING_BYTES // 2) + "x"      # 32,767 UTF-8 bytes in 16,384 characters
TOO_LONG = "é" * (MAX_STRING_BYTES // 2 + 1)       # 32,768 bytes


def test_string_problem_limits() -> None:
    assert len(LONGEST.encode()) == MAX_STRING_BYTES and string_problem(LONGEST) is None
    assert string_problem("a" * MAX_STRING_BYTES) is None
    assert string_problem("a" * (MAX_STRING_BYTES + 1)) == "is 32768 UTF-8 bytes, over Kafka's STRING limit of 32767"
    assert string_problem(TOO_LONG) == "is 32768 UTF-8 bytes, over Kafka's STRING limit of 32767"
    assert string_problem("ab\udfff") == "is not encodable as UTF-8 (lone surrogate U+DFFF at index 2)"
    assert string_problem("😀") is None       # a surrogate *pair* in Java, one code point here: 4 bytes


def test_longest_strings_round_trip() -> None:
    sub = Subscription(["b", LONGEST], owned_partitions=[TopicPartition(LONGEST, 3)], generation_id=2,
                       rack_id=LONGEST)    # topics in wire order ("b" < "é"), as the decoder returns them
    assert decode_subscription(encode_subscription(sub)) == sub


@pytest.mark.parametrize("kwargs, field, value", [
    ({"topics": ["t" + LONE, "a"]}, "topics[1]", "'t\\ud800'"),             # wire (sorted) order
    ({"topics": ["zz", TOO_LONG]}, "topics[1]", "'éééé"),
    ({"topics": ["a"], "owned_partitions": [TopicPartition("o" + LONE, 0)]}, "owned_partitions topic", "'o\\ud800'"),
    ({"topics": ["a"], "rack_id": "r" + LONE}, "rack_id", "'r\\ud800'"),
    ({"topics": ["a"], "rack_id": TOO_LONG}, "rack_id", "'éééé"),
    ({"topics": ["a"], "generation_id": 2**31}, "generation_id", "2147483648"),
    ({"topics": ["a"], "owned_partitions": [TopicPartition("a", -(2**31) - 1)]}, "owned_partitions 'a' partition",
     "-2147483649"),
])
def test_encoder_names_the_field_and_the_value(kwargs: dict, field: str, value: str) -> None:
    with pytest.raises(ProtocolError) as info:
        encode_subscription(Subscription(**kwargs))
    message = str(info.value)
    assert message.startswith(f"ConsumerProtocolSubscription v3: {field}={value}"), message


def test_long_value_is_shortened_in_the_message() -> None:
    with pytest.raises(ProtocolError) as info:
        encode_subscription(Subscription(["x" * 40_000]))
    assert "(40002 chars) is 40000 UTF-8 bytes" in str(info.value) and len(str(info.value)) < 200


@pytest.mark.parametrize("version, fails", [(0, False), (1, False), (2, False), (3, True), (7, True)])
def test_rack_is_checked_only_where_the_version_carries_it(version: int, fails: bool) -> None:
    sub = Subscription(["a"], rack_id="r" + LONE)
    if fails:
        with pytest.raises(ProtocolError, match=r"v3: rack_id="):
            encode_subscription(sub, version)
    else:
        assert decode_subscription(encode_subscription(sub, version)).topics == ("a",)


@pytest.mark.parametrize("version, fails", [(0, False), (1, True), (3, True)])
def test_owned_partitions_are_checked_from_v1(version: int, fails: bool) -> None:
    sub = Subscription(["a"], owned_partitions=[TopicPartition(TOO_LONG, 0)])
    if fails:
        with pytest.raises(ProtocolError, match=rf"v{version}: owned_partitions topic="):
            encode_subscription(sub, version)
    else:
        encode_subscription(sub, version)


@pytest.mark.parametrize("user_data", ["text", 5, [1, 2]])
def test_user_data_must_be_bytes(user_data: object) -> None:
    """``bytes(5)`` would silently be five zero bytes; a str has no bytes at all."""
    with pytest.raises(ProtocolError, match=r"ConsumerProtocolSubscription: user_data must be bytes or None"):
        Subscription(["a"], user_data=user_data)  # type: ignore[arg-type]
    with pytest.raises(ProtocolError, match=r"ConsumerProtocolAssignment: user_data must be bytes or None"):
        Assignment([], user_data=user_data)  # type: ignore[arg-type]


def test_bytes_like_user_data_is_kept() -> None:
    assert Subscription(["a"], user_data=bytearray(b"\x01")).user_data == b"\x01"
    assert Subscription(["a"], user_data=memoryview(b"\x02")).user_data == b"\x02"


def test_assignment_encoder_names_the_topic() -> None:
    with pytest.raises(ProtocolError, match=r"^ConsumerProtocolAssignment v3: assigned_partitions topic='q\\ud800' "
                                            r"is not encodable as UTF-8"):
        encode_assignment(Assignment([TopicPartition("ok", 0), TopicPartition("q" + LONE, 1)]))
    with pytest.raises(ProtocolError, match=r"assigned_partitions 'ok' partition=2147483648 is outside int32"):
        encode_assignment(Assignment([TopicPartition("ok", 2**31)]))


def test_errors_are_value_errors_not_unicode_errors() -> None:
    """Callers catching ValueError (or kafkagroup's ProtocolError) see the failure; no UnicodeEncodeError leaks."""
    # A raw UnicodeEncodeError (the defect this guards against) is not a ProtocolError and fails the test, and so
    # does no error at all.
    with pytest.raises(ProtocolError):
        encode_subscription(Subscription(["t" + LONE]))
