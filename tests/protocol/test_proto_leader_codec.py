"""The leader's bulk codec: Cython and pure-Python twins agree (results and error messages), and both
agree with decoding member by member and building the group with kafkagroup.build_group."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kafkagroup.errors import InvalidGroupError, InvariantError, ProtocolError
from kafkagroup.model import build_group
from kafkagroup.protocol import (
    Subscription,
    cooperative_sticky_user_data,
    decode_assignment,
    encode_subscription,
    sticky_user_data,
)
from kafkagroup.protocol.codec_harness import decode_both
from kafkagroup.protocol.leader import decode_group, encode_assignments, native_available
from kafkagroup.structs import TopicPartition

# The Cython codec is part of every build: its absence is a failure, not a reason to skip.
assert native_available(), "kafkagroup._codec is not built (run make build)"

TOPICS = ["t0", "t1", "t2", "a-long-topic-name", "é", "\U0001F600x", "\ue000"]
ASSIGNORS = ["range", "roundrobin", "sticky", "cooperative-sticky"]




def _same_group(a, b) -> None:
    for name, value in vars(a).items():
        if name == "dropped":   # build_group's names of dropped claims; the leader counts them (dropped_claims)
            continue
        other = getattr(b, name)
        if isinstance(value, np.ndarray) or isinstance(other, np.ndarray):
            assert value is not None and other is not None, name
            assert value.dtype == other.dtype and np.array_equal(value, other), name
        else:
            assert value == other, name


def _compare(members, metadata, assignor, strict):
    twin, native, _ = decode_both(members, metadata, assignor=assignor, strict=strict)
    assert twin == native


tps = st.builds(TopicPartition, st.sampled_from(TOPICS + ["gone"]), st.integers(-2, 6))


@st.composite
def member_blob(draw):
    topics = draw(st.lists(st.sampled_from(TOPICS + ["gone"]), max_size=5, unique=True))
    owned = draw(st.lists(tps, max_size=6))
    kind = draw(st.sampled_from(["none", "sticky", "coop", "raw"]))
    user_data = {
        "none": None,
        "sticky": sticky_user_data(draw(st.lists(tps, max_size=5)), draw(st.integers(-1, 9))),
        "coop": cooperative_sticky_user_data(draw(st.integers(-1, 9))),
        "raw": draw(st.binary(max_size=12)),
    }[kind]
    sub = Subscription(topics, user_data, owned, draw(st.integers(-1, 9)),
                       draw(st.sampled_from([None, "", "r1", "r2"])))
    return encode_subscription(sub, draw(st.integers(0, 4)))


@st.composite
def group_case(draw, mutate=False):
    n = draw(st.integers(1, 5))
    blobs = [draw(member_blob()) for _ in range(n)]
    if mutate:
        i = draw(st.integers(0, n - 1))
        blob = bytearray(blobs[i])
        how = draw(st.sampled_from(["truncate", "flip", "append", "insert"]))
        if how == "truncate" and blob:
            del blob[draw(st.integers(0, len(blob) - 1)):]
        elif how == "flip" and blob:
            blob[draw(st.integers(0, len(blob) - 1))] = draw(st.integers(0, 255))
        elif how == "append":
            blob += draw(st.binary(min_size=1, max_size=4))
        else:
            at = draw(st.integers(0, len(blob)))
            blob[at:at] = draw(st.binary(min_size=1, max_size=4))
        blobs[i] = bytes(blob)
    instances = draw(st.lists(st.sampled_from([None, "i0", "i1", "i2", "i3", "i4"]), min_size=n, max_size=n))
    assume(len({i for i in instances if i}) == len([i for i in instances if i]))
    members = [(f"C{k}", inst, blob) for k, (inst, blob) in enumerate(zip(instances, blobs))]
    metadata = draw(st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 5), max_size=len(TOPICS)))
    return members, metadata


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group_case(), st.sampled_from(ASSIGNORS), st.booleans())
def test_codecs_agree_on_valid_groups(case, assignor, strict):
    members, metadata = case
    _compare(members, metadata, assignor, strict)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group_case(mutate=True), st.sampled_from(ASSIGNORS), st.booleans())
def test_codecs_agree_on_corrupted_bytes(case, assignor, strict):
    members, metadata = case
    _compare(members, metadata, assignor, strict)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=40), min_size=1, max_size=3), st.sampled_from(ASSIGNORS), st.booleans())
def test_codecs_agree_on_random_bytes(blobs, assignor, strict):
    members = [(f"m{i}", None, b) for i, b in enumerate(blobs)]
    _compare(members, {"t0": 2}, assignor, strict)


def test_matches_build_group_of_decoded_subscriptions():
    sub0 = Subscription(["t1", "t0", "nope"], owned_partitions=[TopicPartition("t0", 1), TopicPartition("t9", 0)],
                        generation_id=4, rack_id="r1")
    sub1 = Subscription(["t0"], rack_id="r2")
    members = [("b", None, encode_subscription(sub1)), ("a", "static-1", encode_subscription(sub0))]
    group = decode_group(members, {"t0": 2, "t1": 1}, codec="native")
    expected = build_group({"t0": 2, "t1": 1}, {
        "a": {"topics": ["nope", "t0", "t1"], "owned": [("t0", 1), ("t9", 0)], "generation": 4, "rack": "r1",
              "instance": "static-1"},
        "b": {"topics": ["t0"], "rack": "r2"}}, strict=False)
    _same_group(group, expected)
    assert group.members == ["a", "b"] and group.unknown_topics == ["nope"] and group.dropped_claims == 1


def test_strict_claim_error_names_member_and_partition():
    blob = encode_subscription(Subscription(["t0"], owned_partitions=[TopicPartition("t0", 7)]))
    for codec in ("python", "native"):
        with pytest.raises(InvalidGroupError, match=r"member 'C0' claims partition t0-7 of a topic with 2 partitions"):
            decode_group([("C0", None, blob)], {"t0": 2}, strict=True, codec=codec)
        group = decode_group([("C0", None, blob)], {"t0": 2}, codec=codec)
        assert group.dropped_claims == 1 and group.owned_partitions.tolist() == []


def test_sticky_reads_owned_from_user_data_and_cooperative_from_fields():
    ud = sticky_user_data([TopicPartition("t0", 1)], 6)
    blob = encode_subscription(Subscription(["t0"], ud, [TopicPartition("t0", 0)], 9))
    for codec in ("python", "native"):
        sticky = decode_group([("C0", None, blob)], {"t0": 2}, assignor="sticky", codec=codec)
        assert sticky.owned_partitions.tolist() == [1] and sticky.generation.tolist() == [6]
        coop = decode_group([("C0", None, blob)], {"t0": 2}, assignor="cooperative-sticky", codec=codec)
        assert coop.owned_partitions.tolist() == [0] and coop.generation.tolist() == [9]
    # cooperative-sticky: no generation field (v1) -> the generation in the user data
    blob = encode_subscription(Subscription(["t0"], cooperative_sticky_user_data(5), [TopicPartition("t0", 0)]), 1)
    for codec in ("python", "native"):
        coop = decode_group([("C0", None, blob)], {"t0": 2}, assignor="cooperative-sticky", codec=codec)
        assert coop.generation.tolist() == [5]


def test_malformed_error_names_member_field_and_offset():
    blob = encode_subscription(Subscription(["t0", "t1"]))[:-7]
    for codec in ("python", "native"):
        with pytest.raises(ProtocolError, match=r"member 'C0' subscription: .* at byte offset \d+"):
            decode_group([("C0", None, blob)], {"t0": 2}, codec=codec)
    huge = b"\x00\x00" + (0x7FFFFFFF).to_bytes(4, "big")
    for codec in ("python", "native"):
        with pytest.raises(ProtocolError, match=r"topics at byte offset 2: array count 2147483647 needs at least"):
            decode_group([("C0", None, huge)], {"t0": 2}, codec=codec)


@st.composite
def owner_case(draw):
    counts = draw(st.lists(st.integers(0, 6), min_size=1, max_size=4))
    metadata = {f"t{i}": c for i, c in enumerate(counts)}
    n = draw(st.integers(1, 4))
    subs = {f"C{k}": list(metadata) for k in range(n)}
    group = build_group(metadata, subs)
    total = int(group.topic_base[-1])
    owner = draw(st.lists(st.integers(-1, n - 1), min_size=total, max_size=total))
    return group, np.array(owner, dtype=np.int32)


@settings(max_examples=200, deadline=None)
@given(owner_case(), st.integers(0, 5), st.sampled_from([None, b"", b"\x01\x02"]))
def test_encode_assignments_codecs_agree_and_decode_back(case, version, user_data):
    group, owner = case
    py = encode_assignments(group, owner, version=version, user_data=user_data, codec="python")
    nat = encode_assignments(group, owner, version=version, user_data=user_data, codec="native")
    assert py == nat
    for index, member in enumerate(group.members):
        decoded = decode_assignment(nat[member])
        expected_ids = np.flatnonzero(owner == index)
        topics, partitions = group.partition_names(expected_ids)
        assert list(decoded.partitions) == [TopicPartition(t, p) for t, p in zip(topics, partitions)]
        assert decoded.user_data == user_data
        assert nat[member][:2] == min(version, 3).to_bytes(2, "big")


def test_encode_rejects_owner_outside_members():
    group = build_group({"t0": 2}, {"C0": ["t0"]})
    for codec in ("python", "native"):
        with pytest.raises(InvariantError, match=r"owner\[1\] = 3 is not a member index"):
            encode_assignments(group, [0, 3], codec=codec)


def test_encode_rejects_owner_values_a_cast_would_wrap():
    group = build_group({"t0": 3}, {"C0": ["t0"], "C1": ["t0"]})
    for codec in ("python", "native"):
        with pytest.raises(InvariantError, match="value 4294967296 does not fit in int32"):
            encode_assignments(group, np.array([0, 2**32, 1], dtype=np.int64), codec=codec)
        with pytest.raises(InvariantError, match="expected integers"):
            encode_assignments(group, np.array([0.0, 1.5, 1.0]), codec=codec)
    # in-range wider integers are fine
    assert encode_assignments(group, np.array([0, 1, 1], dtype=np.int64)) == encode_assignments(group, [0, 1, 1])


@pytest.mark.parametrize("codec", ["python", "native"])
def test_member_order_is_java_order_with_astral_characters(codec):
    # Java compares UTF-16 units: U+1F600 is 0xD83D 0xDE00, so it sorts before U+E000 and U+FFFF (after
    # them by code point, which is what a plain Python sort would give).
    ids = ["a\uffff", "a\U0001F600", "a", "b", "a\ue000x"]
    blob = encode_subscription(Subscription(["t0"]))
    members = [(m, None, blob) for m in ids] + [("s\uffff", "i\uffff", blob), ("s\U0001F600", "i\U0001F600", blob)]
    group = decode_group(members, {"t0": 1}, codec=codec)
    expected = build_group({"t0": 1}, {m: {"topics": ["t0"], "instance": i} for m, i, _ in members})
    assert group.members == expected.members
    assert group.members[:2] == ["s\U0001F600", "s\uffff"]
    assert group.members[2:] == ["a", "a\U0001F600", "a\ue000x", "a\uffff", "b"]
    ascii_only = decode_group([(m, None, blob) for m in ["b", "a", "c"]], {"t0": 1}, codec=codec)
    assert ascii_only.members == ["a", "b", "c"]
