"""A JoinGroup that names one protocol twice (issue 10, defect 3).

Kafka's decoder keeps both entries (JoinGroupRequestData's protocols are an
``ImplicitLinkedHashMultiCollection``) and a member reads the first of them (``ClassicGroupMember.metadata`` /
``vote``); the protocol-support map counts *members* listing a name, once each.  Counting list entries made
a lone member's duplicated protocol count 2 != 1, so the vote found no candidate and raised out of the join
timer, wedging the group in PreparingRebalance with no timer and the JoinGroup never answered.
"""
from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from coord_harness import RANGE, Harness
from kafkagroup.coordinator import ErrorCode, GroupState, MemberIdentity

E = ErrorCode
S = GroupState
DUP = [("range", b"first"), ("range", b"second")]


def test_lone_member_naming_a_protocol_twice_completes_its_join() -> None:
    h = Harness("S")
    member, reply = h.two_step_join(protocols=DUP)
    h.advance(50)                                             # the initial delay ends on a timer: no raise
    joined = reply.result()
    assert (joined.error_code, joined.generation_id, joined.protocol_name) == (E.NONE, 1, "range")
    assert [m.metadata for m in joined.members] == [b"first"]  # the first entry, as Kafka's member reads it
    assert h.group.state is S.COMPLETING_REBALANCE and h.group.supported_protocols == {"range": 1}
    assert h.sync(member, 1, [(member, b"a")]).result().error_code == E.NONE
    assert h.group.state is S.STABLE


def test_well_formed_members_join_a_group_with_a_duplicating_member() -> None:
    h = Harness("S")
    a, a_reply = h.two_step_join(protocols=[("roundrobin", b"x"), ("range", b"r1"), ("roundrobin", b"y")])
    b, b_reply = h.two_step_join(protocols=RANGE)
    for _ in range(3):                                        # the initial delay, extended once for b
        h.advance(50)
    assert h.group.supported_protocols == {"roundrobin": 1, "range": 2}
    ra, rb = a_reply.result(), b_reply.result()
    assert ra.error_code == rb.error_code == E.NONE and ra.protocol_name == "range"
    leader = ra if ra.leader == a else rb
    assert {m.member_id: m.metadata for m in leader.members} == {a: b"r1", b: b""}
    # the duplicating member leaves: the counts are exactly those of the member left
    h.leave(MemberIdentity(a))
    assert h.group.supported_protocols == {"range": 1}


def test_rejoining_with_the_same_duplicated_list_is_the_same_protocols() -> None:
    h = Harness("S")
    member, reply = h.two_step_join(protocols=DUP)
    h.advance(50)
    h.sync(member, 1, [(member, b"a")])
    again = h.join(member, protocols=DUP)                      # the leader rejoins: everyone has joined
    assert again.done() and again.result().error_code == E.NONE and again.result().generation_id == 2
    assert h.group.supported_protocols == {"range": 1} and h.group.state is S.COMPLETING_REBALANCE


def _expected_counts(h: Harness) -> dict[str, int]:
    return dict(Counter(name for m in h.group.members.values() for name in {n for n, _ in m.protocols}))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["join", "rejoin", "leave", "tick"]),
                          st.lists(st.sampled_from(["range", "roundrobin", "sticky"]), min_size=1, max_size=4),
                          st.integers(0, 3)),
                min_size=1, max_size=25))
def test_protocol_counts_track_members_under_churn(steps: list[tuple[str, list[str], int]]) -> None:
    """Joins, rejoins with other lists, leaves and timers, with duplicates anywhere: the clock never raises,
    every answered JoinGroup is a Kafka error code, the support map always equals an independent count of
    the members' distinct names, and a completed join selects a protocol every member lists."""
    h = Harness("S")
    members: list[str] = []
    for op, names, pick in steps:
        protocols = [(n, n.encode()) for n in names]
        if op == "join" or not members:
            first = h.join(protocols=protocols).result()
            if first.error_code == E.MEMBER_ID_REQUIRED:
                h.join(first.member_id, protocols=protocols)
                members.append(first.member_id)
        elif op == "rejoin":
            h.join(members[pick % len(members)], protocols=protocols)
        elif op == "leave":
            h.leave(MemberIdentity(members.pop(pick % len(members))))
        else:
            h.advance(200)
        group = h.coord.group(h.group_id)
        if group is not None and group.state is not S.DEAD:
            assert group.supported_protocols == _expected_counts(h)
            if group.state is S.COMPLETING_REBALANCE:
                assert all(group.protocol_name in m.protocol_names() for m in group.members.values())
    h.advance(10_000)
    group = h.coord.group(h.group_id)
    if group is not None:
        assert group.supported_protocols == _expected_counts(h)
        assert group.state is not S.PREPARING_REBALANCE or group.join_timer is not None


def test_the_repro_script_runs_healthy() -> None:
    """/work/shared/repro/dup_protocols.py step by step (initial delay 0, retention task on)."""
    from kafkagroup.coordinator import GroupCoordinator, JoinGroupRequest, ManualClock

    clock = ManualClock()
    c = GroupCoordinator({"group.initial.rebalance.delay.ms": 0}, clock=clock, store=":memory:")
    req = JoinGroupRequest("g", protocols=[("range", b"a"), ("range", b"b")], session_timeout_ms=10_000,
                           client_id="c")
    req.member_id = c.join_group(req).result().member_id
    reply = c.join_group(req)
    clock.advance(0)                                          # no exception out of the clock
    assert reply.result().error_code == E.NONE and c.group("g").state is S.COMPLETING_REBALANCE
    clock.advance(60_000)                                     # it never syncs: removed, the group is Empty
    assert c.group("g").state is S.EMPTY and not c.group("g").members
    ok = JoinGroupRequest("g", protocols=[("range", b"")], session_timeout_ms=10_000, client_id="ok")
    ok.member_id = c.join_group(ok).result().member_id
    later = c.join_group(ok)
    clock.advance(0)
    assert later.result().error_code == E.NONE and later.result().protocol_name == "range"
    for _ in range(60):
        clock.advance(10_000)
    # it never synced either; the Empty group without offsets is deleted by the retention task, as in Kafka
    assert c.group("g") is None
    fresh = JoinGroupRequest("g", protocols=[("range", b"")], session_timeout_ms=10_000, client_id="fresh")
    fresh.member_id = c.join_group(fresh).result().member_id
    r = c.join_group(fresh)
    clock.advance(0)
    assert r.result().error_code == E.NONE and c.group("g").supported_protocols == {"range": 1}
