"""build_group keeps what it derived from the last plain metadata (topic -> partition count) and reuses it when
the next call's metadata is equal topic for topic, in the same order. Reuse must never be visible: each call
answers what a first call over the same input answers (a fresh process, simulated by clearing the kept
metadata), whatever the call before it was -- the same dict changed in place, reordered, grown, shrunk, or
equal but holding bools, floats or numpy integers, which are errors or conversions of their own."""
from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkagroup
import kafkagroup.model as model
from kafkagroup.errors import InvalidGroupError
from kafkagroup.java_order import java_string_key
from kafkagroup.model import build_group
from kafkagroup.protocol.codec_harness import outcome as group_outcome

NAMES = ["t0", "t1", "t2", "t3"]


def outcome(call):
    """What `call` answered, or the error it raised (type and message)."""
    try:
        return call()
    except InvalidGroupError as exc:
        return type(exc).__name__, str(exc)


def fresh(call):
    """The outcome of `call` with nothing kept from earlier calls."""
    model._last_metadata = ((), None)
    return outcome(call)


def answer(strategy, topics, members):
    """The group build_group makes (every array, by dtype and contents) and the assignment made from it."""
    group = group_outcome(lambda: build_group(topics, members, strict=False))[0]
    r = kafkagroup.assign(strategy, topics, members, strict=False)
    return group, (r.members, r.owner.tolist(), r.unknown_topics, r.dropped, r.metrics)


metadata = st.dictionaries(st.sampled_from(NAMES), st.integers(0, 5), max_size=4)
groups = st.dictionaries(
    st.sampled_from(["C0", "C1", "C2"]),
    st.fixed_dictionaries({"topics": st.lists(st.sampled_from(NAMES + ["gone"]), max_size=3, unique=True),
                           "owned": st.lists(st.tuples(st.sampled_from(NAMES + ["gone"]), st.integers(-1, 5)),
                                             max_size=3)}),
    max_size=3)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(metadata, groups), min_size=2, max_size=4), st.sampled_from(["server-uniform", "server-range",
                                                                                         "cooperative-sticky"]))
def test_a_call_answers_what_a_first_call_answers(calls, strategy):
    wants = [fresh(lambda: answer(strategy, topics, members)) for topics, members in calls]
    model._last_metadata = ((), None)
    for (topics, members), want in zip(calls, wants):   # each call after the one before it
        assert outcome(lambda: answer(strategy, dict(reversed(list(topics.items()))), members)) == want
        assert outcome(lambda: answer(strategy, topics, members)) == want
        assert outcome(lambda: answer(strategy, topics, members)) == want


def test_the_same_dict_changed_in_place_is_read_again():
    topics = {"t0": 4, "t1": 2}
    members = {"C0": {"topics": ["t0", "t1"]}, "C1": {"topics": ["t0", "t1"]}}
    assert kafkagroup.assign("server-range", topics, members).owner.size == 6
    topics["t1"] = 5
    assert kafkagroup.assign("server-range", topics, members).owner.size == 9
    topics["t2"] = 1
    members["C0"]["topics"].append("t2")
    r = kafkagroup.assign("server-range", topics, members)
    assert r.owner.size == 10 and r.assignment._group.topics == ["t0", "t1", "t2"]
    del topics["t0"]
    r = kafkagroup.assign("server-range", topics, members)
    assert r.unknown_topics == ["t0"] and r.assignment._group.topics == ["t1", "t2"]


@pytest.mark.parametrize("count,message", [
    (True, "partition count must be an integer"),
    (3.0, "expected a partition count or a list of replica racks"),
    (-1, "negative partition count"),
])
def test_counts_equal_to_the_kept_ones_but_not_ints_are_still_refused(count, message):
    members = {"C0": {"topics": ["t0"]}}
    kafkagroup.assign("server-uniform", {"t0": 1 if count is True else 3, "t1": 2}, members)   # kept
    with pytest.raises(kafkagroup.InvalidGroupError, match=message):
        kafkagroup.assign("server-uniform", {"t0": count, "t1": 2}, members)


def test_numpy_counts_equal_to_the_kept_ones_are_read_as_ints():
    members = {"C0": {"topics": ["t0", "t1"]}, "C1": {"topics": ["t1"]}}
    want = fresh(lambda: answer("server-uniform", {"t0": np.int64(3), "t1": np.int32(2)}, members))
    kafkagroup.assign("server-uniform", {"t0": 3, "t1": 2}, members)
    assert outcome(lambda: answer("server-uniform", {"t0": np.int64(3), "t1": np.int32(2)}, members)) == want


def test_racks_are_never_taken_from_kept_metadata():
    members = {"C0": {"topics": ["t0"], "rack": "r0"}, "C1": {"topics": ["t0"], "rack": "r1"}}
    plain = {"t0": 4}
    kafkagroup.assign("range", plain, members)   # kept: no racks
    with_racks = kafkagroup.assign("range", {"t0": [["r1"], ["r1"], ["r0"], ["r0"]]}, members)
    want = fresh(lambda: answer("range", {"t0": [["r1"], ["r1"], ["r0"], ["r0"]]}, members))
    assert (with_racks.members, with_racks.owner.tolist()) == (want[1][0], want[1][1])
    racked = kafkagroup.assign("range", plain, members, partition_racks={"t0": [["r1"], ["r1"], ["r0"], ["r0"]]})
    assert racked.owner.tolist() == with_racks.owner.tolist()


# Names whose Java order (UTF-16 code units) differs from Python's: a character above U+FFFF sorts before U+FFFD.
ODD_NAMES = ["b", "a", "\U0001f600x", "\ufffdy", "a\U0001f600", "a\ufffd", "Z", "é"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.permutations(ODD_NAMES), st.lists(st.permutations(ODD_NAMES + ["gone"]).map(lambda t: t[:4]), min_size=1,
                                            max_size=4), st.sampled_from(["server-range", "server-uniform", "range"]))
def test_kept_metadata_in_java_order_orders_topics_as_the_names_do(order, lists, strategy):
    """Kept (plain) metadata is laid out in Java order and the builder then orders a group's topics by catalog row;
    metadata read afresh (a mapping that is not a dict is never kept) orders them by comparing names. Both give
    the same group, whatever order the metadata and the members' lists come in."""
    topics = {name: 2 for name in order}
    members = {f"C{i}": {"topics": list(t), "owned": [(t[0], 1)] if i == 0 else []} for i, t in enumerate(lists)}
    kept = outcome(lambda: answer(strategy, topics, members))
    assert outcome(lambda: answer(strategy, MappingProxyType(topics), members)) == kept
    subscribed = {t for t in topics if any(t in m["topics"] for m in members.values())}
    assert build_group(topics, members, strict=False).topics == sorted(subscribed, key=java_string_key)


@pytest.mark.parametrize("count", [2**31, 2**63, 2**80, -2**80])
def test_a_partition_count_past_every_int_size_is_an_invalid_group_naming_the_topic(count):
    """Plain metadata is checked natively before it is kept (kafkagroup._members.plain_counts); a count too big
    for a C long long must reach the general path's error like any other bad count, not an OverflowError."""
    members = {"C0": {"topics": ["t0"]}}
    with pytest.raises(InvalidGroupError, match="topic 't0': .*partition count"):
        kafkagroup.assign("range", {"t0": count}, members)
    assert kafkagroup.assign("range", {"t0": 2}, members).owner.tolist() == [0, 0]   # the next call is unaffected


def test_names_known_by_address_are_only_the_kept_metadata_objects():
    """Kept metadata also keeps its names by str address (no dict lookup for a member's topic that is the very
    object). An equal metadata dict of other str objects reuses the kept entry: its names, and the members' equal
    names made afresh, must still be coded by value -- every form gives the first call's group."""
    def copy(name):
        return "".join(list(name))   # an equal str, another object
    names = [f"topic-{i}" for i in range(6)][::-1]
    first = {n: 3 for n in names}
    members = {f"C{i}": {"topics": names[i:], "owned": [(names[i], 1), (names[-1], i % 3)]} for i in range(3)}
    expected = fresh(lambda: answer("server-range", first, members))
    assert outcome(lambda: answer("server-range", first, members)) == expected
    other = {copy(n): 3 for n in names}
    fresh_members = {m: {"topics": [copy(t) for t in s["topics"]], "owned": [(copy(t), p) for t, p in s["owned"]]}
                     for m, s in members.items()}
    assert all(a is not b for a, b in zip(other, first))
    assert outcome(lambda: answer("server-range", other, fresh_members)) == expected
    assert outcome(lambda: answer("server-range", first, fresh_members)) == expected
    assert outcome(lambda: answer("server-range", other, members)) == expected
