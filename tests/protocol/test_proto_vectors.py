"""Every vector Apache Kafka's own classes produced, both directions, byte for byte."""
from __future__ import annotations

import pytest

from proto_support import load_vectors
from kafkagroup.protocol import (
    Assignment,
    Subscription,
    cooperative_sticky_user_data,
    decode_assignment,
    decode_cooperative_sticky_user_data,
    decode_sticky_user_data,
    decode_subscription,
    encode_assignment,
    encode_sticky_user_data,
    encode_subscription,
)
from kafkagroup.errors import ProtocolError
from kafkagroup.structs import TopicPartition

V = load_vectors()


def _hex(b):
    return None if b is None else bytes.fromhex(b)


def _sub(d) -> Subscription:
    return Subscription(
        d["topics"], _hex(d["user_data_hex"]), [TopicPartition(t, p) for t, p in d["owned_partitions"]],
        d["generation_id"], d["rack_id"],
    )


def _asg(d) -> Assignment:
    return Assignment([TopicPartition(t, p) for t, p in d["partitions"]], _hex(d["user_data_hex"]))


def _id(v):
    return f"{v['name']}-v{v.get('requested_version', '')}"


@pytest.mark.parametrize("v", V["subscription"], ids=_id)
def test_subscription_vector(v):
    data = bytes.fromhex(v["hex"])
    assert encode_subscription(_sub(v["input"]), v["requested_version"]) == data
    assert decode_subscription(data) == _sub(v["decoded"])


@pytest.mark.parametrize("v", V["assignment"], ids=_id)
def test_assignment_vector(v):
    data = bytes.fromhex(v["hex"])
    assert encode_assignment(_asg(v["input"]), v["requested_version"]) == data
    decoded = decode_assignment(data)
    assert decoded == _asg(v["decoded"])
    # the topics the decoder records (per topic, only those with a partition) are the partitions' topics
    assert decoded.topics == _asg(v["decoded"]).topics == frozenset(tp.topic for tp in decoded.partitions)


def test_assignment_topics_skip_a_topic_sent_without_partitions():
    data = encode_assignment(Assignment([TopicPartition("a", 0)]))
    # a second topic entry with an empty partition array: [2 topics] "a" [0] "b" []
    empty_b = data[:2] + (2).to_bytes(4, "big") + data[6:-4] + b"\x00\x01b" + (0).to_bytes(4, "big") + data[-4:]
    decoded = decode_assignment(empty_b)
    assert decoded.partitions == (TopicPartition("a", 0),)
    assert decoded.topics == frozenset({"a"}) == Assignment(decoded.partitions).topics


def test_forward_compatible_versions():
    sub, asg = V["forward_compatibility"]
    assert decode_subscription(bytes.fromhex(sub["hex"])) == _sub(sub["decoded"])
    assert decode_assignment(bytes.fromhex(asg["hex"])) == _asg(asg["decoded"])


@pytest.mark.parametrize("v", V["sticky_user_data"], ids=lambda v: v["name"])
def test_sticky_user_data_vector(v):
    data = bytes.fromhex(v["hex"])
    partitions = tuple(TopicPartition(t, p) for t, p in v["partitions"])
    assert encode_sticky_user_data(partitions, v["generation"]) == data
    decoded = decode_sticky_user_data(data)
    assert decoded.generation == v["generation"]
    # Java groups by topic (HashMap order), so compare as a multiset per topic in partition order.
    assert sorted(decoded.partitions) == sorted(partitions)
    for topic in {tp.topic for tp in partitions}:
        assert [tp for tp in decoded.partitions if tp.topic == topic] == [tp for tp in partitions if tp.topic == topic]


@pytest.mark.parametrize("v", V["cooperative_sticky_user_data"], ids=lambda v: str(v["generation"]))
def test_cooperative_sticky_user_data_vector(v):
    data = bytes.fromhex(v["hex"])
    assert cooperative_sticky_user_data(v["generation"]) == data
    assert decode_cooperative_sticky_user_data(data) == v["generation"]


def test_vector_file_is_complete():
    # The suite must keep covering every vector the file holds.
    assert len(V["subscription"]) == 55 and len(V["assignment"]) == 30
    assert len(V["sticky_user_data"]) == 6 and len(V["cooperative_sticky_user_data"]) == 5


def test_partition_lists_become_topic_partitions_once():
    """Assignment and Subscription hold TopicPartitions whatever pairs they are given; a list of them is
    taken as it is (an assignor's result), anything else is converted, and a mix converts the rest."""
    TP = TopicPartition
    own = [TP("b", 1), TP("a", 0)]
    for value in (Assignment(own).partitions, Subscription(["a"], owned_partitions=own).owned_partitions):
        assert value == tuple(own) and all(a is b for a, b in zip(value, own))
    for given in ([("b", 1), ("a", 0)], [TP("b", 1), ("a", 0)], (["b", 1], ("a", 0)), iter([("b", 1), TP("a", 0)])):
        value = Assignment(given).partitions
        assert value == (TP("b", 1), TP("a", 0)) and all(type(tp) is TP for tp in value)
    again = decode_assignment(encode_assignment(Assignment([("b", 1), ("a", 0), ("b", 0)])))
    assert again.partitions == (TP("b", 1), TP("b", 0), TP("a", 0)) and all(type(tp) is TP for tp in again.partitions)


@pytest.mark.parametrize("data, message", [
    (bytes.fromhex("0000 00000001 0003 61ff62 ffffffff"), "topics[0] at byte offset 6: invalid UTF-8 at byte 9"),
    (bytes.fromhex("0000 00000001 0005 61"), "topics[0] at byte offset 6: string length 5 exceeds the 1 bytes left"),
    (bytes.fromhex("0000 00000001 ffff ffffffff"), "topics[0] at byte offset 6: invalid string length -1"),
    (bytes.fromhex("0000 00000000 fffffffe"), "user_data at byte offset 6: invalid bytes length -2"),
    (bytes.fromhex("0000 00000000 00000005 01"), "user_data at byte offset 6: bytes length 5 exceeds the 1 bytes left"),
])
def test_length_prefixed_fields_fail_naming_field_and_offset(data, message):
    with pytest.raises(ProtocolError) as info:
        decode_subscription(data)
    assert str(info.value) == f"ConsumerProtocolSubscription: {message}"


def test_null_user_data_and_rack_read_as_none():
    sub = decode_subscription(bytes.fromhex("0003 00000001 0001 61 ffffffff 00000000 ffffffff ffff"))
    assert (sub.topics, sub.user_data, sub.generation_id, sub.rack_id) == (("a",), None, -1, None)
