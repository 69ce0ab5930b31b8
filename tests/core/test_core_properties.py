"""Native range/roundrobin against the pure-Python reference on random groups (hypothesis)."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkagroup
from kafkagroup._reference import REFERENCE
from assignment_checks import owned_once_by_subscribers

# Names that exercise Java's UTF-16 order: ASCII, BMP, and non-BMP characters (surrogate pairs sort
# below U+E000..U+FFFF in Java, above them in Python).
NAME_CHARS = st.sampled_from(["a", "b", "z", "A", "0", "é", "\uffef", "\ue000", "𝄞", "😀", "-"])
names = st.text(NAME_CHARS, min_size=1, max_size=4)
racks = st.sampled_from(["r0", "r1", "r2"])


@st.composite
def groups(draw, with_racks: bool):
    topic_names = draw(st.lists(names, min_size=1, max_size=5, unique=True))
    topics = {}
    for t in topic_names:
        count = draw(st.integers(0, 9))
        if with_racks and draw(st.booleans()):
            topics[t] = [draw(st.lists(st.one_of(st.none(), racks), max_size=3)) for _ in range(count)]
        else:
            topics[t] = count
    member_ids = draw(st.lists(names, min_size=1, max_size=7, unique=True))
    instance_ids = iter(draw(st.lists(names, min_size=len(member_ids), max_size=len(member_ids), unique=True)))
    members = {}
    for m in member_ids:
        spec = {"topics": draw(st.lists(st.sampled_from(topic_names + ["unknown-topic"]), unique=True, max_size=5))}
        inst = next(instance_ids)
        if draw(st.booleans()):
            spec["instance"] = inst
        if with_racks and draw(st.booleans()):
            spec["rack"] = draw(racks)
        members[m] = spec
    return topics, members


def native(strategy, topics, members):
    r = kafkagroup.assign(strategy, topics, members)
    return {m: sorted((tp.topic, tp.partition) for tp in tps) for m, tps in r.assignment.items()}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups(with_racks=False))
def test_roundrobin_matches_reference(group):
    topics, members = group
    assert native("roundrobin", topics, members) == REFERENCE["roundrobin"](topics, members)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups(with_racks=False))
def test_range_matches_reference(group):
    topics, members = group
    assert native("range", topics, members) == REFERENCE["range"](topics, members)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups(with_racks=True))
def test_rack_aware_range_matches_reference(group):
    topics, members = group
    assert native("range", topics, members) == REFERENCE["range"](topics, members)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups(with_racks=True), st.sampled_from(["range", "roundrobin"]))
def test_every_subscribed_partition_assigned_once_to_a_subscriber(group, strategy):
    topics, members = group
    r = kafkagroup.assign(strategy, topics, members)
    seen = owned_once_by_subscribers(r, members)
    subscribed = {t for spec in members.values() for t in spec["topics"] if t in topics}
    expected = {(t, p) for t in subscribed for p in range(topics[t] if isinstance(topics[t], int) else len(topics[t]))}
    assert {(tp.topic, tp.partition) for tp in seen} == expected
    assert r.metrics.unassigned == 0
