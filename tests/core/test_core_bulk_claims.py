"""build_group reads owned claims in bulk (kafkagroup._claims + numpy); these tests hold it to the plain
per-claim procedure it replaced, restated here as the oracle, on random groups with every kind of claim a
caller can send: tuples, lists, TopicPartitions, numpy integers, unknown topics, partitions out of range
(negative, past the count, past int64), topics nobody subscribes to, and malformed claims."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import kafkagroup
from kafkagroup.errors import InvalidGroupError
from kafkagroup.model import build_group
from kafkagroup.structs import TopicPartition

TOPICS = {"a": 3, "b": 0, "c": 5, "d": 2}  # d: in the metadata, subscribed by nobody


def oracle_claims(group, members_by_id, strict):
    """The per-claim rules: (owned CSR as lists, dropped) or the error message."""
    specs = TOPICS
    topic_id = {t: i for i, t in enumerate(group.topics)}
    kept_all, dropped = [], 0
    for member_id in group.members:
        kept = []
        for topic, partition in members_by_id[member_id].get("owned", ()):
            count = specs.get(topic)
            if count is None or not 0 <= partition < count:
                if strict:
                    what = "an unknown topic" if count is None else f"a topic with {count} partitions"
                    return f"member {member_id!r} claims partition {topic}-{partition} of {what}"
                dropped += 1
                continue
            if topic not in topic_id:
                dropped += 1
                continue
            kept.append(int(group.topic_base[topic_id[topic]]) + int(partition))
        kept_all.append(kept)
    return kept_all, dropped


claim_topic = st.sampled_from(["a", "b", "c", "d", "zz"])
claim_partition = st.one_of(st.integers(-2, 7), st.sampled_from([2**31, 2**63, 2**70, -2**64]))


@st.composite
def claims(draw):
    topic, partition = draw(claim_topic), draw(claim_partition)
    form = draw(st.sampled_from(["tuple", "list", "tp", "np"]))
    if form == "list":
        return [topic, partition]
    if form == "tp":
        return TopicPartition(topic, partition)
    if form == "np" and -2**63 <= partition < 2**63:
        return (topic, np.int64(partition))
    return (topic, partition)


members_strategy = st.dictionaries(
    st.text(alphabet="CMx", min_size=1, max_size=3),
    st.fixed_dictionaries({"topics": st.lists(st.sampled_from(["a", "b", "c", "zz"]), unique=True, max_size=3),
                           "owned": st.lists(claims(), max_size=6)}),
    min_size=1, max_size=5)


@settings(max_examples=400, deadline=None)
@given(members=members_strategy, strict=st.booleans())
def test_bulk_claims_equal_the_per_claim_rules(members, strict):
    try:
        group = build_group(TOPICS, members, strict=strict)
        outcome = None
    except InvalidGroupError as e:
        outcome = str(e)
    reference = build_group(TOPICS, {m: {"topics": s["topics"]} for m, s in members.items()})
    expected = oracle_claims(reference, members, strict)
    if isinstance(expected, str):
        assert outcome == expected
        return
    assert outcome is None
    kept, dropped = expected
    if not any(s["owned"] for s in members.values()):
        assert group.owned_offsets is None
        return
    offsets = np.cumsum([0] + [len(k) for k in kept])
    assert group.owned_offsets.tolist() == offsets.tolist()
    assert group.owned_partitions.tolist() == [p for k in kept for p in k]
    assert group.dropped_claims == dropped


@pytest.mark.parametrize("claim", [("a",), ("a", 1, 2), "a1", ("a", True), ("a", 1.0), (3, 1), ("a", "1"), None])
def test_a_malformed_claim_is_named(claim):
    members = {"C0": {"topics": ["a"], "owned": [("a", 0)]}, "C1": {"topics": ["a"], "owned": [("a", 1), claim]}}
    with pytest.raises(InvalidGroupError) as e:
        build_group(TOPICS, members)
    assert str(e.value) == f"member 'C1': owned partition {claim!r} is not (topic, partition)"


def test_a_claim_past_int64_is_out_of_range_not_wrapped():
    members = {"C0": {"topics": ["a"], "owned": [("a", 2**64)]}}
    with pytest.raises(InvalidGroupError, match=r"claims partition a-18446744073709551616 of a topic with 3"):
        build_group(TOPICS, members)
    assert build_group(TOPICS, members, strict=False).dropped_claims == 1


def test_claims_from_a_generator_are_read():
    members = {"C0": {"topics": ["a"], "owned": (("a", p) for p in range(3))}}
    assert build_group(TOPICS, members).owned_partitions.tolist() == [0, 1, 2]


def test_member_assignment_is_a_read_only_mapping_built_on_read():
    members = {"C1": {"topics": ["a", "c"]}, "C0": {"topics": ["a", "c"], "instance": "i0"}}
    r = kafkagroup.assign("range", TOPICS, members)
    assert list(r.assignment) == ["C0", "C1"] == r.members   # MemberInfo order: static member first
    assert r.assignment._lists == {}                          # nothing built yet
    assert r.assignment.counts() == {"C0": 5, "C1": 3}
    assert r.assignment["C1"] == [TopicPartition("a", 2), TopicPartition("c", 3), TopicPartition("c", 4)]
    assert list(r.assignment._lists) == ["C1"]                 # built on read, cached
    assert r.assignment == dict(r.assignment.items())
    assert {tp for tps in r.assignment.values() for tp in tps} == {TopicPartition(t, p) for t in "ac"
                                                                    for p in range(TOPICS[t])}
    assert "C9" not in r.assignment
    with pytest.raises(KeyError):
        r.assignment["C9"]
    assert r.owner.shape == (8,) and set(r.owner.tolist()) == {0, 1}


def test_claims_whose_topics_are_made_afresh_are_read_by_name():
    """intern_claims looks a tuple claim's topic up by the str object's address; a claim of another kind may
    hand out a new string on each read (freed after it, its address reused by the next one), so its topic
    is looked up by name: equal answers whatever the address."""

    class Claim:   # a (topic, partition) sequence building its topic string on every read
        def __init__(self, topic, partition):
            self.parts = (topic, partition)

        def __len__(self):
            return 2

        def __getitem__(self, i):
            return "".join(self.parts[0]) if i == 0 else self.parts[1]

    names = ["t0", "t1", "t2"]
    members = {f"m{i}": {"topics": names, "owned": [Claim(names[(i + k) % 3], i) for k in range(3)]} for i in range(4)}
    plain = {m: {"topics": names, "owned": [("".join(c.parts[0]), c.parts[1]) for c in s["owned"]]} for m, s in members.items()}
    a = build_group({"t0": 5, "t1": 5, "t2": 5}, members)
    b = build_group({"t0": 5, "t1": 5, "t2": 5}, plain)
    assert a.owned_partitions.tolist() == b.owned_partitions.tolist()
    assert a.owned_offsets.tolist() == b.owned_offsets.tolist()
