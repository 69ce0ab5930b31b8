"""Unit tests of the member's building blocks: config, ownership algebra, callbacks, ledger, cluster, wire."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkagroup.client import ClusterMetadata, MemberConfig, RebalanceProtocol
from kafkagroup.client.ledger import OwnershipLedger
from kafkagroup.client.listener import CallbackSet, FirstError, RebalanceCallbackError
from kafkagroup.assignors import GroupAssignment, get_assignor
from kafkagroup.client.ownership import (
    AssignedPartitions,
    CooperativeAssignmentViolation,
    assignment_delta,
    cooperative_violations,
    partitions_of_unsubscribed_topics,
    topics_outside_subscription,
    validate_cooperative_assignment,
)
from kafkagroup.client.wire import build_subscription_bytes
from kafkagroup.messages.clock import ManualClock
from kafkagroup.errors import InvalidGroupError, InvariantError
from kafkagroup.model import build_group
from kafkagroup.protocol import Assignment, decode_assignment, decode_subscription, encode_assignment
from kafkagroup.structs import TopicPartition as TP


# ------------------------------------------------------------------------------------------ config
def test_config_accepts_kafka_and_python_spellings():
    a = MemberConfig.from_kafka({"group.id": "g", "session.timeout.ms": 10_000, "group.instance.id": "h-1"},
                                heartbeat_interval_ms=1_000, client_rack="r1")
    assert (a.group_id, a.session_timeout_ms, a.heartbeat_interval_ms, a.group_instance_id, a.client_rack) == (
        "g", 10_000, 1_000, "h-1", "r1")
    assert a.rebalance_timeout_ms == a.max_poll_interval_ms == 300_000
    assert a.assignor_names == ("range", "cooperative-sticky") and a.rebalance_protocol is RebalanceProtocol.EAGER
    b = MemberConfig.from_kafka(group_id="g", partition_assignment_strategy="roundrobin, sticky")
    assert b.assignor_names == ("roundrobin", "sticky")


@pytest.mark.parametrize("kw, match", [
    ({"group.id": "g", "session.timeout.mz": 1}, "unknown member config key"),
    ({"session.timeout.ms": 1000}, "group.id is required"),
    ({"group.id": "g", "heartbeat.interval.ms": 50_000}, "lower than"),
    ({"group.id": "g", "group.instance.id": "bad id!"}, "group.instance.id"),
    ({"group.id": "g", "group.instance.id": ""}, "group.instance.id"),
    ({"group.id": "g", "max.poll.interval.ms": -1}, "at least 1"),
    ({"group.id": "g", "retry.backoff.ms": -1}, "at least 0"),
    ({"group.id": "g", "partition.assignment.strategy": "range,range"}, "more than once"),
    ({"group.id": "g", "partition.assignment.strategy": "nope"}, "unknown assignor"),
    ({"group.id": "g", "partition.assignment.strategy": []}, "empty"),
])
def test_config_rejects_bad_values(kw, match):
    with pytest.raises(InvalidGroupError, match=match):
        MemberConfig.from_kafka(kw)


def test_config_key_given_twice_must_agree():
    with pytest.raises(InvalidGroupError, match="twice"):
        MemberConfig.from_kafka({"group.id": "g"}, group_id="h")


# ------------------------------------------------------------------------------------------ ownership
def test_assignment_delta_and_subscription_filters():
    d = assignment_delta({TP("t", 0), TP("t", 1)}, {TP("t", 1), TP("t", 2)})
    assert (d.added, d.revoked, d.kept) == ({TP("t", 2)}, {TP("t", 0)}, {TP("t", 1)})
    assert partitions_of_unsubscribed_topics({TP("a", 0), TP("b", 1)}, {"a"}) == {TP("b", 1)}
    assert topics_outside_subscription({TP("a", 0), TP("b", 1)}, {"a"}) == {"b"}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 5)), max_size=8),
       st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 5)), max_size=8),
       st.sets(st.sampled_from("abc")), st.booleans())
def test_delta_and_filters_of_a_decoded_assignment_are_the_set_algebra(owned, assigned, topics, owned_decoded):
    """A member's decoded assignment (AssignedPartitions, with its per-topic numbers) gives what plain sets give,
    fed back as the next owned set; its shortcuts (owning nothing, nothing changed) included."""
    def decoded(pairs):
        return AssignedPartitions.of(decode_assignment(encode_assignment(Assignment([TP(*p) for p in pairs]))))

    plain_owned, plain_assigned = frozenset(TP(*p) for p in owned), frozenset(TP(*p) for p in assigned)
    mine = decoded(owned) if owned_decoded else plain_owned
    for new in (decoded(assigned), decoded(owned)):
        d = assignment_delta(mine, new)
        assert d == (new - mine, mine - new, mine & new)
        assert partitions_of_unsubscribed_topics(mine, frozenset(topics)) == {tp for tp in mine if tp.topic not in topics}
        mine = new
    assert plain_assigned == decoded(assigned)


def _claimed_group(claims: dict[str, list[int]], total: int):
    """Members m0.. on topic t (``total`` partitions), each claiming the given partitions."""
    return build_group({"t": total}, {m: {"topics": ["t"], "owned": [("t", p) for p in c]}
                                      for m, c in claims.items()})


def _java_violations(owned: dict[str, list[TP]], assigned: dict[str, list[TP]]) -> set[TP]:
    """Kafka's validateCooperativeAssignment in set algebra, the oracle: added in one member's assignment and
    revoked in another's (every member is in both maps, as in Java's leader)."""
    added: set[TP] = set()
    revoked: set[TP] = set()
    for member, new in assigned.items():
        added |= set(new) - set(owned[member])
        revoked |= set(owned[member]) - set(new)
    return added & revoked


def test_validate_cooperative_assignment():
    group = _claimed_group({"A": [0], "B": []}, 2)
    owned = {"A": [TP("t", 0)], "B": []}
    def check(assigned):
        validate_cooperative_assignment(owned, GroupAssignment.from_assignments(
            group, {m: Assignment([TP("t", p) for p in ps]) for m, ps in assigned.items()}, "x"))
    check({"A": [0], "B": [1]})          # only additions
    check({"A": [], "B": []})            # only a revocation
    check({"A": [0], "B": [0, 1]})       # one partition, two owners, nobody loses it: Kafka accepts it
    with pytest.raises(CooperativeAssignmentViolation, match="t-0"):
        check({"A": [], "B": [0]})
    with pytest.raises(CooperativeAssignmentViolation, match="t-0"):
        check({"A": [], "B": [0, 1]})


def test_cooperative_check_compares_the_claims_as_sent_not_as_decoded():
    """A's Subscription lists t-0 as owned but no member subscribes to t any more: the decoded group drops
    that claim (t has no ids in it), Java's leader does not -- it compares with ``ownedPartitions()`` as
    sent, so t-0 given to B in the same round is refused (issue 20, item 6)."""
    group = build_group({"t": 2, "u": 1}, {"A": {"topics": ["u"], "owned": [("t", 0)]},
                                           "B": {"topics": ["u"], "owned": []}})
    assert group.dropped_claims == 1 and len(group.owned_partitions) == 0    # the decoded claims lost A's t-0
    result = GroupAssignment.from_assignments(group, {"A": Assignment([TP("u", 0)]),
                                                      "B": Assignment([TP("t", 0)])}, "x")
    with pytest.raises(CooperativeAssignmentViolation, match=r"1 partition\(s\).*\(t-0\)"):
        validate_cooperative_assignment({"A": [TP("t", 0)], "B": []}, result)
    validate_cooperative_assignment({"A": [], "B": []}, result)    # nothing owned: only additions


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_cooperative_check_on_both_shapes_matches_the_set_version(data):
    members, total = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 12))
    claims = {f"m{i}": sorted(data.draw(st.sets(st.integers(0, total - 1), max_size=total)))
              for i in range(members)}
    group = _claimed_group(claims, total)
    # owned as sent: the group's claims plus claims the group drops (out of range, a topic nobody subscribes to)
    owned = {m: [TP("t", p) for p in c] + [TP(t, p) for t, p in data.draw(st.lists(
        st.tuples(st.sampled_from(["t", "gone"]), st.integers(total, total + 2)), max_size=2))]
        for m, c in claims.items()}
    # one owner per partition: owner[] (the native assignors' shape) and the same as member lists
    owner = np.array([data.draw(st.integers(-1, members - 1)) for _ in range(total)], dtype=np.int32)
    single = {m: [TP("t", p) for p in range(total) if owner[p] == group.members.index(m)] for m in claims}
    # any number of owners per partition (a Python assignor's shape), partitions outside the group included
    many = {m: [TP(t, p) for t, p in sorted(data.draw(st.sets(
        st.tuples(st.sampled_from(["t", "gone"]), st.integers(0, total + 2)), max_size=total + 3)))]
            for m in claims}
    for result, assigned in ((GroupAssignment(group, owner=owner), single),
                             (GroupAssignment.from_assignments(group, {m: Assignment(v) for m, v in single.items()},
                                                               "x"), single),
                             (GroupAssignment.from_assignments(group, {m: Assignment(v) for m, v in many.items()},
                                                               "x"), many)):
        assert set(cooperative_violations(owned, result)) == _java_violations(owned, assigned)


# ------------------------------------------------------------------------------------------ callbacks
def test_callback_set_defaults_lost_to_revoked_and_first_error_wins():
    seen = []
    cbs = CallbackSet(on_revoke=lambda p: seen.append(("revoked", p)))
    assert cbs.on_lost is cbs.on_revoke
    errs = FirstError()
    errs.call(lambda p: 1 / 0, frozenset())
    errs.call(lambda p: [][1], frozenset())
    wrapped = errs.wrapped()
    assert isinstance(wrapped, RebalanceCallbackError) and isinstance(wrapped.__cause__, ZeroDivisionError)
    errs2 = FirstError()
    errs2.keep(InvalidGroupError("ours"))
    assert isinstance(errs2.wrapped(), InvalidGroupError)    # kafkagroup errors are not wrapped


# ------------------------------------------------------------------------------------------ ledger
def test_ledger_flags_double_ownership_and_accounts_pauses():
    clock = ManualClock()
    ledger = OwnershipLedger(clock)
    ledger.add_partitions([TP("t", 0), TP("t", 1)])
    a, b = ledger.callbacks("a"), ledger.callbacks("b")
    a["on_assign"](frozenset({TP("t", 0), TP("t", 1)}))
    clock.advance(100)
    a["on_revoke"](frozenset({TP("t", 1)}))
    clock.advance(50)
    b["on_assign"](frozenset({TP("t", 1)}))
    assert ledger.violations == [] and ledger.partitions[TP("t", 1)].max_pause_ms == 50
    assert ledger.partitions[TP("t", 1)].moves == 1 and ledger.members["b"].moved_in == 1
    b["on_assign"](frozenset({TP("t", 0)}))                   # a still owns t-0
    assert ledger.violations[0].owners == ("a", "b")
    with pytest.raises(InvariantError, match="double ownership"):
        ledger.assert_exclusive()
    ledger.crashed("a")
    assert ledger.owner_of(TP("t", 0)) == {"b"} and ledger.members["a"].lost == 1


def test_ledger_owned_nothing_time():
    clock = ManualClock()
    ledger = OwnershipLedger(clock)
    cb = ledger.callbacks("m")
    clock.advance(300)
    cb["on_assign"](frozenset({TP("t", 0)}))
    clock.advance(200)
    cb["on_revoke"](frozenset({TP("t", 0)}))
    clock.advance(50)
    ledger.close_window()
    assert ledger.members["m"].owned_nothing_ms == 350


def test_ledger_clean_stop_releases_leftovers_as_revoked_not_lost():
    clock = ManualClock()
    ledger = OwnershipLedger(clock)
    ledger.add_partitions([TP("t", 0), TP("t", 1)])
    cb = ledger.callbacks("m")
    cb["on_assign"](frozenset({TP("t", 0), TP("t", 1)}))
    ledger.stopped("m")                         # clean close whose callbacks did not report everything
    st = ledger.members["m"]
    assert (st.lost, st.revoked, st.alive) == (0, 2, False)
    assert ledger.unowned() == {TP("t", 0), TP("t", 1)}
    ledger.crashed("m")                         # nothing left to lose
    assert st.lost == 0


def test_ledger_counts_partitions_without_a_single_owner_per_topic():
    clock = ManualClock()
    ledger = OwnershipLedger(clock)
    ledger.add_partitions([TP("t", 0), TP("t", 1), TP("t", 2), TP("u", 0)])
    assert (ledger.unsettled("t"), ledger.unsettled("u"), ledger.unsettled("absent")) == (3, 1, 0)
    assert ledger.partition_count("t") == 3
    a, b = ledger.callbacks("a"), ledger.callbacks("b")
    a["on_assign"](frozenset({TP("t", 0), TP("t", 1)}))
    assert ledger.unsettled("t") == 1
    b["on_assign"](frozenset({TP("t", 1), TP("t", 2)}))     # t-1 owned twice
    assert ledger.unsettled("t") == 1
    a["on_revoke"](frozenset({TP("t", 1)}))
    assert ledger.unsettled("t") == 0
    ledger.crashed("b")
    assert ledger.unsettled("t") == 2
    ledger.remove_partitions([TP("t", 1), TP("t", 2)])     # the topic shrank to one partition
    assert (ledger.unsettled("t"), ledger.partition_count("t")) == (0, 1)
    b2 = ledger.callbacks("b")
    b2["on_revoke"](frozenset({TP("t", 2)}))              # a late callback about a removed partition is harmless
    assert ledger.unsettled("t") == 0


def test_ledger_memory_is_bounded():
    clock = ManualClock()
    ledger = OwnershipLedger(clock)
    ledger.add_partitions([TP("t", 0)])
    a, b = ledger.callbacks("a"), ledger.callbacks("b")
    a["on_assign"](frozenset({TP("t", 0)}))
    for _ in range(1_000):
        b["on_assign"](frozenset({TP("t", 0)}))
        b["on_revoke"](frozenset({TP("t", 0)}))
    assert ledger.violation_count == 1_000
    assert len(ledger.violations) == OwnershipLedger.KEPT_VIOLATIONS < 1_000
    assert ledger.violations[0].owners == ("a", "b")
    assert not hasattr(ledger, "events")        # no per-callback history: the report does not use it


# ------------------------------------------------------------------------------------------ cluster / wire
def test_cluster_snapshots_and_patterns():
    import re

    c = ClusterMetadata({"orders": 3, "audit": 1})
    s1 = c.snapshot()
    c.set_partitions("orders", 4)
    assert s1.partitions["orders"] == 3 and c.snapshot().partitions["orders"] == 4 and c.version == 1
    assert s1.restricted({"orders"}, with_racks=False) != c.snapshot().restricted({"orders"}, with_racks=False)
    assert s1.matching(re.compile("o.*")) == {"orders"}
    with pytest.raises(InvalidGroupError, match="partition count"):
        c.set_partitions("x", -1)
    with pytest.raises(InvalidGroupError, match="rack lists"):
        c.set_racks("audit", [["r1"], ["r2"]])


@pytest.mark.parametrize("name", ["range", "sticky", "cooperative-sticky"])
def test_subscription_bytes_round_trip_per_assignor(name):
    assignor = get_assignor(name)
    assignor.on_assignment(Assignment([TP("t", 2), TP("t", 0)]), 7)
    data = build_subscription_bytes(assignor, {"t", "u"}, {TP("t", 0), TP("t", 2)}, 7, "rack-1")
    sub = decode_subscription(data)
    assert list(sub.topics) == ["t", "u"] and sub.generation_id == 7 and sub.rack_id == "rack-1"
    owned, generation = get_assignor(name).member_data(sub)    # the leader's reading, by the assignor's rule
    assert set(owned) == {TP("t", 0), TP("t", 2)} and generation == 7
    assert (sub.user_data is None) == (name == "range")


def test_sticky_state_before_first_assignment_sends_no_user_data():
    assert get_assignor("sticky").metadata({"t"}).user_data is None
    assert get_assignor("cooperative-sticky").metadata({"t"}).user_data == b"\xff\xff\xff\xff"   # generation -1
