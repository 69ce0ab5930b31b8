"""One name->problem path: the leader's native decode, kafkagroup.build_group on the same subscriptions and
the pure-Python twin (protocol.leader.reference_build_group) build the same group -- member order, topics,
claims kept and dropped, racks -- and refuse the same groups with the same message, on random groups with
repeated ids and instance ids, static and dynamic members, topics listed twice, unknown topics, stale and
out-of-range claims, racks, and names that Java orders differently from code points (U+E000 sorts after a
character beyond U+FFFF in UTF-16). Then a long seeded run through one pooled decoder, each group fed
back as the next round's claims."""
from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkagroup
from kafkagroup.errors import InvalidGroupError, ProtocolError
from kafkagroup.model import Member, build_group
from kafkagroup.protocol import Subscription, decode_subscription, encode_subscription
from kafkagroup.protocol.codec_harness import decode_both, outcome
from kafkagroup.protocol.leader import decode_group, native_available, reference_member_info_order
from kafkagroup.structs import TopicPartition

assert native_available(), "kafkagroup._codec is not built (run make build)"

TOPICS = ["t0", "t1", "é", "\U0001F600x", "\ue000", "\U0001F600", "gone"]   # "gone" is never in the metadata
IDS = ["C0", "C1", "c0", "é", "\U0001F600", "\ue000"]
INSTANCES = [None, None, "i0", "i1", "\U0001F600", "\ue000"]
RACKS = [None, "r1", "r2", "\U0001F600r"]


def _outcome(fn):
    return outcome(fn)[0]


@st.composite
def groups(draw):
    n = draw(st.integers(0, 6))
    members = []
    for _ in range(n):
        topics = draw(st.lists(st.sampled_from(TOPICS), max_size=5))          # a topic may repeat
        owned = draw(st.lists(st.tuples(st.sampled_from(TOPICS), st.integers(-1, 6)), max_size=6))
        members.append(Member(draw(st.sampled_from(IDS)), tuple(topics), tuple(owned), draw(st.integers(-1, 9)),
                              draw(st.sampled_from(RACKS)), draw(st.sampled_from(INSTANCES))))
    metadata = draw(st.dictionaries(st.sampled_from(TOPICS[:-1]), st.integers(0, 5)))
    racks = None
    if draw(st.booleans()):
        racks = {t: [draw(st.sampled_from([None, [], ["r1"], ["r2", "r9"], ["\U0001F600r", None]])) for _ in range(c)]
                 for t, c in metadata.items() if draw(st.booleans())}
    return members, metadata, racks


def _joined(members):
    return [(m.member_id, m.instance_id, encode_subscription(
        Subscription(list(m.topics), None, [TopicPartition(t, p) for t, p in m.owned], m.generation, m.rack), 3))
        for m in members]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups(), st.booleans(), st.sampled_from(["range", "cooperative-sticky"]))
def test_decode_build_group_and_twin_agree(case, strict, assignor):
    members, metadata, racks = case
    joined = _joined(members)
    twin, native, _ = decode_both(joined, metadata, assignor=assignor, strict=strict, partition_racks=racks)
    sent = [decode_subscription(blob) for _, _, blob in joined]   # what the members send (topics sorted)
    decoded = [Member(mid, tuple(sub.topics), tuple((tp.topic, tp.partition) for tp in sub.owned_partitions),
                      sub.generation_id, sub.rack_id, inst) for (mid, inst, _), sub in zip(joined, sent)]
    try:   # the leader reports in MemberInfo order; build_group in the order it is given
        decoded = [decoded[i] for i in reference_member_info_order([m.member_id for m in decoded],
                                                                   [m.instance_id for m in decoded])]
    except InvalidGroupError:
        pass
    built = _outcome(lambda: build_group(metadata, decoded, partition_racks=racks, strict=strict))
    assert native == twin
    assert native == built


def test_big_group_fed_back_through_one_pooled_decoder(monkeypatch):
    """Eight rounds of a 300-member group through one decoder, each round claiming what the previous
    assignment gave (read back from the encoded assignments), with members leaving and joining, a few
    static members, racks, and stale claims on a topic deleted halfway; every round matches the twin, and
    a small group decoded between rounds leaves nothing behind."""
    from kafkagroup import _codec
    from kafkagroup.protocol import decode_assignment
    from kafkagroup.protocol import leader

    monkeypatch.setattr(leader, "_DECODERS", [_codec.GroupDecoder()])
    rng = random.Random(11)
    topics = [f"orders-{i:02d}" for i in range(30)] + ["\U0001F600events", "\ue000audit"]
    metadata = {t: rng.randint(1, 9) for t in topics}
    alive = {f"consumer-{i:03d}": (f"host-{i}" if i % 10 == 0 else None) for i in range(300)}
    owned: dict[str, list[TopicPartition]] = {}
    small = [("x", None, encode_subscription(Subscription(["orders-00"], owned_partitions=[TopicPartition("orders-00", 0)])))]
    for rnd in range(8):
        if rnd == 4:
            del metadata["orders-07"]   # claims on it are now stale (dropped, not an error)
        joined = []
        for mid, inst in alive.items():
            subscribed = sorted(topics) if rng.random() < 0.9 else sorted(rng.sample(topics, 20))
            sub = Subscription(subscribed, None, owned.get(mid, []), rnd, f"rack-{hash(mid) % 3}")
            joined.append((mid, inst, encode_subscription(sub, 3)))
        rng.shuffle(joined)
        group = decode_group(joined, metadata, assignor="cooperative-sticky")
        twin = decode_group(joined, metadata, assignor="cooperative-sticky", codec="python")
        assert _outcome(lambda: group) == _outcome(lambda: twin)
        assert _outcome(lambda: decode_group(small, metadata)) == _outcome(lambda: decode_group(small, metadata, codec="python"))
        result = kafkagroup.assign_arrays("cooperative-sticky", **group.arrays())
        blobs = leader.encode_assignments(group, result.owner)
        owned = {mid: list(decode_assignment(blob).partitions) for mid, blob in blobs.items()}
        for mid in rng.sample(sorted(alive), 15):
            del alive[mid]
        for k in range(15):
            alive[f"joiner-{rnd}-{k}"] = None


@pytest.mark.parametrize("codec", ["native", "python"])
def test_id_errors_come_before_byte_errors_and_byte_errors_before_group_rules(codec):
    ok = encode_subscription(Subscription(["a"]))
    twice = encode_subscription(Subscription(["a", "a"]))
    broken = ok[:-2]
    with pytest.raises(InvalidGroupError, match="duplicate member id 'm0'"):
        decode_group([("m0", None, broken), ("m0", None, ok)], {"a": 1}, codec=codec)
    with pytest.raises(InvalidGroupError, match=r"members 'm1' and 'm0' share group.instance.id 'i'"):
        decode_group([("m1", "i", ok), ("m0", "i", broken)], {"a": 1}, codec=codec)
    with pytest.raises(ProtocolError, match="member 'm1' subscription"):
        decode_group([("m0", None, twice), ("m1", None, broken)], {"a": 1}, codec=codec)
    # MemberInfo order decides which malformed member is reported: static "z" sorts before dynamic "a"
    with pytest.raises(ProtocolError, match="member 'z' subscription"):
        decode_group([("a", None, broken), ("z", "inst", b"\x00")], {"a": 1}, codec=codec)
    with pytest.raises(InvalidGroupError, match="over the engine's limit of 268435456"):
        decode_group([("m0", None, encode_subscription(Subscription(["a", "b"])))], {"a": 2**28, "b": 1}, codec=codec)


@pytest.mark.parametrize("codec", ["native", "python"])
def test_claim_errors_are_reported_in_member_info_order_whatever_the_join_order(codec):
    # the native codec reads the members' claims in join order (where their bytes lie) and lays them out
    # in MemberInfo order; a malformed claim is still reported for the first member in MemberInfo order
    def claiming(partition: int) -> bytes:
        return encode_subscription(Subscription(["a"], None, [TopicPartition("a", partition)], 4), 3)

    truncated = claiming(0)[:-12]   # inside the owned partitions: the topics and user data still parse
    with pytest.raises(ProtocolError, match="member 'b' subscription"):
        decode_group([("c", None, truncated), ("a", None, claiming(1)), ("b", None, truncated)], {"a": 3},
                     codec=codec)
    group = decode_group([("c", None, claiming(2)), ("a", None, claiming(0)), ("b", None, claiming(1))],
                         {"a": 3}, codec=codec)
    assert group.members == ["a", "b", "c"]
    assert group.owned_offsets.tolist() == [0, 1, 2, 3] and group.owned_partitions.tolist() == [0, 1, 2]


def test_equal_subscriptions_apart_in_member_info_order():
    # The codec marks members whose topic bytes repeat their JoinGroup neighbour's (sub_same); the builder
    # numbers such runs and, walking MemberInfo order, copies the previous member's list only for a member
    # of the same run (or after comparing the lists). Here runs interleave in MemberInfo order: m0 m2 m4
    # (one run), m1 m3 (another), m5 (equal to m0's list but a run of its own, after m3).
    big, small = ["t0", "t1"], ["t1"]
    rows = [("m0", big), ("m2", big), ("m4", big), ("m1", small), ("m3", small), ("m5", big)]
    joined = [(mid, None, encode_subscription(Subscription(topics), 3)) for mid, topics in rows]
    for strategy in ("range", "cooperative-sticky"):
        group = decode_group(joined, {"t0": 2, "t1": 2}, assignor=strategy)
        assert group.members == ["m0", "m1", "m2", "m3", "m4", "m5"]
        lists = {m: [group.topics[t] for t in group.sub_topics[group.sub_offsets[i]:group.sub_offsets[i + 1]].tolist()]
                 for i, m in enumerate(group.members)}
        assert lists == dict(rows)
        twin, native, _ = decode_both(joined, {"t0": 2, "t1": 2}, assignor=strategy)
        assert native == twin
