"""Group model: protocol vote (C79), state transitions (C80), manual clock semantics (§7.1)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkagroup.coordinator import ClassicGroup, ClassicGroupMember, GroupState, IllegalGroupStateError, ManualClock
from kafkagroup.coordinator.group import VALID_PREVIOUS_STATES

S = GroupState


def _member(member_id: str, *names: str) -> ClassicGroupMember:
    return ClassicGroupMember(member_id, protocols=[(n, b"") for n in names])


def test_C79_protocol_vote() -> None:
    g = ClassicGroup("g", now_ms=0)
    g.add(_member("m1", "range", "roundrobin"))
    assert g.select_protocol() == "range"
    g.add(_member("m2", "roundrobin", "range"))
    assert g.select_protocol() in {"range", "roundrobin"}          # 1-1 tie: unspecified
    g.add(_member("m3", "roundrobin", "range"))
    assert g.select_protocol() == "roundrobin"
    h = ClassicGroup("h", now_ms=0)
    h.add(_member("m1", "range", "roundrobin"))
    h.add(_member("m2", "roundrobin", "blah"))
    assert h.select_protocol() == "roundrobin"
    with pytest.raises(IllegalGroupStateError):
        ClassicGroup("e", now_ms=0).select_protocol()


def test_C79_supports_protocols() -> None:
    g = ClassicGroup("g", now_ms=0)
    assert g.supports_protocols("consumer", ["anything"])
    assert not g.supports_protocols("", ["range"]) and not g.supports_protocols("consumer", [])
    g.add(_member("m1", "range", "roundrobin"))
    g.transition_to(S.PREPARING_REBALANCE, 0)
    assert g.supports_protocols("consumer", ["roundrobin", "foo"])
    assert g.supports_protocols("consumer", ["range", "foo"])
    assert not g.supports_protocols("consumer", ["foo", "bar"])
    g.add(_member("m2", "roundrobin", "blah"))
    assert g.supports_protocols("consumer", ["roundrobin", "foo"])
    assert not g.supports_protocols("invalid_type", ["roundrobin", "foo"])
    assert not g.supports_protocols("consumer", ["range", "foo"])


def test_vote_counts_follow_updates_and_removals() -> None:
    g = ClassicGroup("g", now_ms=0)
    a, b = _member("a", "range"), _member("b", "range", "roundrobin")
    g.add(a)
    g.add(b)
    assert g.supported_protocols == {"range": 2, "roundrobin": 1}
    g.update_member(a, [("roundrobin", b"")], 1, 1, None)
    assert g.supported_protocols == {"range": 1, "roundrobin": 2} and g.select_protocol() == "roundrobin"
    g.remove("b")
    assert g.supported_protocols == {"roundrobin": 1} and g.leader_id == "a"


LEGAL = {(S.EMPTY, S.PREPARING_REBALANCE), (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE),
         (S.PREPARING_REBALANCE, S.EMPTY), (S.PREPARING_REBALANCE, S.DEAD),
         (S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE), (S.COMPLETING_REBALANCE, S.STABLE),
         (S.COMPLETING_REBALANCE, S.DEAD), (S.STABLE, S.PREPARING_REBALANCE), (S.STABLE, S.DEAD),
         (S.EMPTY, S.DEAD), (S.DEAD, S.DEAD)}


def test_C80_legal_and_illegal_transitions() -> None:
    for source in S:
        for target in S:
            g = ClassicGroup("g", now_ms=0, state=source)
            if (source, target) in LEGAL:
                g.transition_to(target, 7)
                assert g.state is target and g.previous_state is source and g.state_timestamp == 7
            else:
                with pytest.raises(IllegalGroupStateError):
                    g.transition_to(target, 7)
                assert g.state is source


def test_C80_can_rebalance() -> None:
    expected = {S.EMPTY: True, S.STABLE: True, S.COMPLETING_REBALANCE: True,
                S.PREPARING_REBALANCE: False, S.DEAD: False}
    for state, can in expected.items():
        assert ClassicGroup("g", now_ms=0, state=state).can_rebalance() is can


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list(S)), max_size=30))
def test_transition_sequences_follow_the_table(targets: list[GroupState]) -> None:
    g = ClassicGroup("g", now_ms=0)
    for target in targets:
        before = g.state
        legal = before in VALID_PREVIOUS_STATES[target]
        assert legal == ((before, target) in LEGAL)
        if legal:
            g.transition_to(target, 0)
            assert g.state is target
        else:
            with pytest.raises(IllegalGroupStateError):
                g.transition_to(target, 0)
            assert g.state is before


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "remove", "update", "join", "unjoin"]),
                          st.integers(0, 5), st.lists(st.sampled_from(["range", "rr", "sticky"]), min_size=1,
                                                      max_size=3, unique=True)), max_size=60))
def test_group_counters_match_a_recount(ops: list) -> None:
    """The O(1) counters (awaiting join, protocol support, static map, leader) equal a full recount."""
    from kafkagroup.coordinator import Deferred
    g = ClassicGroup("g", now_ms=0)
    for op, i, names in ops:
        mid = f"m{i}"
        protocols = [(n, b"") for n in names]
        if op == "add" and mid not in g.members:
            g.add(ClassicGroupMember(mid, group_instance_id=f"i{i}" if i % 2 else None, protocols=protocols),
                  Deferred() if i % 3 else None)
        elif op == "remove":
            g.remove(mid)
        elif op == "update" and mid in g.members:
            g.update_member(g.members[mid], protocols, 1, 1, g.members[mid].awaiting_join)
        elif op == "join" and mid in g.members:
            g.update_member(g.members[mid], g.members[mid].protocols, 1, 1, Deferred())
        elif op == "unjoin" and mid in g.members:
            g.detach_join(g.members[mid])
        assert g.num_members_awaiting_join == sum(m.awaiting_join is not None for m in g.members.values())
        counts: dict[str, int] = {}
        for m in g.members.values():
            for n, _ in m.protocols:
                counts[n] = counts.get(n, 0) + 1
        assert g.supported_protocols == counts
        assert g.static_members == {m.group_instance_id: m.member_id for m in g.members.values()
                                    if m.group_instance_id is not None}
        assert (g.leader_id is None) == (not g.members) and (g.leader_id is None or g.leader_id in g.members)
        if g.members and g.candidate_protocols():
            assert g.select_protocol() in g.candidate_protocols()


# ------------------------------------------------------------------------------------ ManualClock §7.1

def test_manual_clock_fires_at_deadline_inclusive_and_sees_the_new_now() -> None:
    clock = ManualClock()
    seen = []
    clock.call_at(50, lambda: seen.append(("a", clock.now_ms())))
    clock.advance(49)
    assert seen == []
    clock.advance(1)
    assert seen == [("a", 50)]

    def rearm() -> None:
        seen.append(("late", clock.now_ms()))
        clock.call_at(clock.now_ms() + 10, lambda: seen.append(("rearmed", clock.now_ms())))

    clock.call_at(60, rearm)
    clock.advance(100)             # fires at now=150; the re-armed timer is due at 160
    assert seen[-1] == ("late", 150)
    clock.advance(10)
    assert seen[-1] == ("rearmed", 160)


def test_manual_clock_runs_timers_scheduled_while_firing_if_due() -> None:
    clock = ManualClock()
    seen = []
    clock.call_at(10, lambda: clock.call_at(5, lambda: seen.append("past")))
    clock.advance(20)
    assert seen == ["past"]


def test_manual_clock_tie_break_orders_and_cancel() -> None:
    for mode, expected in (("fifo", [1, 2, 3]), ("lifo", [3, 2, 1])):
        clock = ManualClock(tie_break=mode)  # type: ignore[arg-type]
        seen: list[int] = []
        for i in (1, 2, 3):
            clock.call_at(5, lambda i=i: seen.append(i))
        clock.call_at(4, lambda: seen.append(0)).cancel()
        clock.advance(5)
        assert seen == expected and clock.pending() == 0
    with pytest.raises(ValueError):
        ManualClock().advance(-1)


def test_manual_clock_compacts_cancelled_timers() -> None:
    clock = ManualClock()
    for i in range(10_000):
        clock.call_at(1000 + i, lambda: None).cancel()
    assert len(clock._heap) < 200 and clock.pending() == 0


def test_unit_our_vote_tie_rule_is_java_hashmap_order() -> None:
    """Unit test of OUR documented choice, not an acceptance test: spec §4.1/§8 leave vote ties open (Kafka's
    tests accept either winner).  We break them as the Java coordinator's HashMap iteration over the votes
    does; the JDK-verified winners: range over roundrobin and cooperative-sticky, sticky over range."""
    for first, second, winner in [("range", "roundrobin", "range"), ("roundrobin", "range", "range"),
                                  ("cooperative-sticky", "range", "range"), ("range", "sticky", "sticky")]:
        g = ClassicGroup("g", now_ms=0)
        g.add(_member("m1", first, second))
        g.add(_member("m2", second, first))
        assert g.select_protocol() == winner, (first, second)


def test_unit_our_replacement_leader_rule_is_java_hashmap_order() -> None:
    """Unit test of OUR documented choice, not an acceptance test: which member replaces a leader that did not
    rejoin is left open by spec §4.2/§8.  We take the first member in the Java coordinator's HashMap order of
    the members map.  "a", "b", "c" hash to buckets 1, 2, 3 of a 16-bucket table: Java iterates a, b, c
    whatever the insertion order was."""
    g = ClassicGroup("g", now_ms=0)
    for m in ("c", "b", "a"):
        g.add(_member(m, "range"))
    assert g.leader_id == "c"
    g.remove("c")
    assert g.leader_id == "a"            # not "b", the next in insertion order
    assert g.first_in_java_order(["b", "a"]) == "a"


def test_unit_java_member_order_within_a_bucket_is_insertion_order_and_survives_resizes() -> None:
    """Unit test of the HashMap-order helper behind our replacement-leader choice (spec §8 leaves it open)."""
    from kafkagroup.java_order import hashmap_spread
    g = ClassicGroup("g", now_ms=0)
    ids = [f"member-{i}" for i in range(40)]             # grows the table 16 -> 32 -> 64
    for m in ids:
        g.add(_member(m, "range"))
    assert g._java_capacity == 64
    expected = sorted(ids, key=lambda m: (hashmap_spread(m) & 63, ids.index(m)))
    assert g.first_in_java_order(ids) == expected[0]
    g.remove(expected[0])
    assert g.first_in_java_order(g.members) == expected[1]
