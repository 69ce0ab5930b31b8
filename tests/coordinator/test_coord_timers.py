"""Pending members (C28-C32), new-member / session / rebalance timeouts (C34-C41)."""
from __future__ import annotations

from coord_harness import E, S, Harness, tie, hs, hj  # noqa: F401 (fixtures)

from kafkagroup.coordinator import MemberIdentity


def test_C28_pending_member_in_a_stable_group_times_out_without_disturbing_it(hs: Harness) -> None:
    a = hs.fx_single()
    hs.advance(100)
    assert hs.now == 150
    first = hs.join("").result()
    assert first.error_code == E.MEMBER_ID_REQUIRED
    p = first.member_id
    assert hs.group.state is S.STABLE and p in hs.group.pending_members
    hs.advance(300)
    assert hs.heartbeat(a, 1) == E.NONE
    hs.advance(300)
    g = hs.group
    assert p not in g.pending_members and set(g.members) == {a} and g.state is S.STABLE
    assert hs.heartbeat(a, 1) == E.NONE


def test_C29_rebalance_waits_for_pending_members_and_completes_when_one_joins(hs: Harness) -> None:
    a, b, p, a_reply, b_reply = hs.fx_pending()
    hs.advance(50)
    assert not a_reply.done()                      # waiting for P
    p_reply = hs.join(p, session=100)
    g = hs.group
    assert g.state is S.COMPLETING_REBALANCE and len(g.members) == 3 and not g.pending_members
    assert g.generation_id == 3
    assert {r.result().generation_id for r in (a_reply, b_reply, p_reply)} == {3}


def test_pending_member_expiry_completes_the_waiting_rebalance(hs: Harness) -> None:
    a, b, p, a_reply, b_reply = hs.fx_pending()
    hs.advance(99)
    assert not a_reply.done()
    hs.advance(1)                                   # P's pending timer (100 ms) fires
    assert a_reply.result().generation_id == 3 and hs.group.state is S.COMPLETING_REBALANCE
    assert len(hs.group.members) == 2


def test_pending_member_cannot_heartbeat_or_sync_but_can_leave(hs: Harness) -> None:
    a, b, p, _, _ = hs.fx_pending()
    assert hs.heartbeat(p, 2) == E.UNKNOWN_MEMBER_ID
    assert hs.sync(p, 2).result().error_code == E.UNKNOWN_MEMBER_ID
    assert hs.leave(p).members[0].error_code == E.NONE


def test_C31_leave_of_a_pending_member_completes_the_rebalance(hs: Harness) -> None:
    a, b, p, a_reply, b_reply = hs.fx_pending()
    r = hs.leave(p)
    assert r.error_code == E.NONE and [(m.member_id, m.error_code) for m in r.members] == [(p, E.NONE)]
    g = hs.group
    assert g.state is S.COMPLETING_REBALANCE and len(g.members) == 2 and not g.pending_members
    assert not g.static_members
    assert a_reply.result().error_code == E.NONE and b_reply.result().error_code == E.NONE


def test_C32_batch_leave_mixing_joined_pending_and_unknown_members(hs: Harness) -> None:
    a, b, p, a_reply, b_reply = hs.fx_pending()
    r = hs.leave(MemberIdentity("", "unknown-instance"), MemberIdentity(p))
    assert r.error_code == E.NONE
    assert [m.error_code for m in r.members] == [E.UNKNOWN_MEMBER_ID, E.NONE]
    assert [(m.member_id, m.group_instance_id) for m in r.members] == [("", "unknown-instance"), (p, None)]


def test_C32_variant_leave_everyone(hs: Harness) -> None:
    a, b, p, a_reply, b_reply = hs.fx_pending()
    r = hs.leave(a, b, p, "unknown-member-id")
    assert r.error_code == E.NONE
    assert [m.error_code for m in r.members] == [E.NONE, E.NONE, E.NONE, E.UNKNOWN_MEMBER_ID]
    for reply in (a_reply, b_reply):
        assert (reply.result().error_code, reply.result().member_id) == (E.UNKNOWN_MEMBER_ID, "")
    g = hs.group
    assert g.state is S.EMPTY and not g.members and not g.pending_members


def test_C34_new_member_timeout_no_longer_applies_after_the_join_phase(hs: Harness) -> None:
    reply = hs.join_v3("", session=305_000)
    hs.advance(50)
    r = reply.result()
    assert (r.error_code, r.generation_id) == (E.NONE, 1)
    assert not hs.group.members[r.member_id].is_new
    assert hs.sync(r.member_id, 1, [(r.member_id, b"")]).result().error_code == E.NONE
    assert hs.group.state is S.STABLE and len(hs.group.members) == 1
    hs.advance(300_100)
    assert set(hs.group.members) == {r.member_id}
    hs.advance(305_100)
    assert not hs.group.members and hs.group.state is S.EMPTY


def test_new_member_join_timeout_removes_a_parked_new_member(hs: Harness) -> None:
    """GroupCoordinatorTest.testNewMemberJoinExpiration: a new member parked in a long rebalance expires
    after 300000 ms with UNKNOWN_MEMBER_ID even though it is parked."""
    session, rebalance = 305_000, 600_000
    first = hs.join_v3("", session=session, rebalance=rebalance)
    hs.advance(50)
    hs.advance(50)
    a = first.result().member_id
    assert hs.sync(a, 1, [(a, b"")]).result().error_code == E.NONE
    newcomer = hs.join_v3("", session=session, rebalance=rebalance)
    assert not newcomer.done() and len(hs.group.members) == 2
    hs.advance(300_000)
    r = newcomer.result()
    assert (r.error_code, r.member_id) == (E.UNKNOWN_MEMBER_ID, "")
    assert set(hs.group.members) == {a}


def test_C35_variant1_after_the_join_new_members_follow_normal_session_expiry(hs: Harness) -> None:
    a = hs.fx_single()
    b_reply = hs.join_v3("")
    a_reply = hs.join(a)
    assert a_reply.result().generation_id == 2 and b_reply.result().generation_id == 2
    hs.advance(501)
    g = hs.group
    assert g.state is S.EMPTY and not g.members


def test_C35_variant2_after_sync_new_members_follow_normal_session_expiry(hs: Harness) -> None:
    a, b, b_sync = hs.fx_follower_parked()
    assert hs.sync(a, 2, [(a, b""), (b, b"")]).result().error_code == E.NONE
    assert b_sync.result().error_code == E.NONE and hs.group.state is S.STABLE
    hs.advance(501)
    g = hs.group
    assert g.state is S.EMPTY and not g.members


def _single_member_stable(h: Harness, *, session: int, rebalance: int) -> str:
    a, reply = h.two_step_join(session=session, rebalance=rebalance)
    h.advance(50)
    assert reply.result().generation_id == 1
    assert h.sync(a, 1, [(a, b"")]).result().error_code == E.NONE
    return a


def test_C37_heartbeats_keep_a_member_alive(hs: Harness) -> None:
    a = _single_member_stable(hs, session=1000, rebalance=1000)
    hs.advance(500)
    assert hs.heartbeat(a, 1) == E.NONE
    hs.advance(600)
    assert hs.heartbeat(a, 1) == E.NONE


def test_C37_variant_offset_commits_keep_a_member_alive(hs: Harness) -> None:
    a = _single_member_stable(hs, session=1000, rebalance=1000)
    hs.advance(500)
    assert hs.commit({("topic", 0): 0}, member_id=a, generation=1) == {("topic", 0): E.NONE}
    hs.advance(600)
    assert hs.heartbeat(a, 1) == E.NONE


def test_session_expires_without_heartbeats(hs: Harness) -> None:
    a = _single_member_stable(hs, session=1000, rebalance=1000)
    hs.advance(999)
    assert a in hs.group.members
    hs.advance(1)
    assert a not in hs.group.members and hs.group.state is S.EMPTY
    assert hs.heartbeat(a, 1) == E.UNKNOWN_MEMBER_ID


def test_C38_member_that_stops_heartbeating_during_preparing_rebalance_is_expired(hs: Harness) -> None:
    a = _single_member_stable(hs, session=1000, rebalance=2000)
    assert hs.now == 50
    b_reply = hs.join_v3("", session=500, rebalance=500)
    assert hs.group.state is S.PREPARING_REBALANCE
    hs.advance(500)
    assert hs.heartbeat(a, 1) == E.REBALANCE_IN_PROGRESS
    hs.advance(1100)
    assert hs.heartbeat(a, 1) == E.UNKNOWN_MEMBER_ID
    r = b_reply.result()
    assert (r.error_code, r.generation_id, r.leader) == (E.NONE, 2, r.member_id)


def test_C40_dynamic_members_that_did_not_rejoin_before_the_rebalance_timeout_are_removed(hj: Harness) -> None:
    a, reply = hj.two_step_join(session=1000, rebalance=1000)
    hj.advance(3000)
    assert reply.result().generation_id == 1 and hj.group.state is S.COMPLETING_REBALANCE
    b_reply = hj.join_v3("", session=1000, rebalance=1000)
    assert hj.group.state is S.PREPARING_REBALANCE
    hj.advance(1000)
    r = b_reply.result()
    assert r.error_code == E.NONE and r.generation_id == 2
    assert set(hj.group.members) == {r.member_id}


def test_C41_no_member_rejoined_extends_the_join_phase_static_members_kept(hj: Harness) -> None:
    kw = dict(session=30_000, rebalance=10_000)
    s1_reply = hj.join("", instance="first-instance-id", **kw)
    hj.advance(3000)
    s1 = s1_reply.result().member_id
    assert s1_reply.result().generation_id == 1
    s2_reply = hj.join("", instance="second-instance-id", **kw)
    s1_again = hj.join(s1, instance="first-instance-id", **kw)
    assert s1_again.result().generation_id == 2 and s2_reply.result().generation_id == 2
    s2 = s2_reply.result().member_id
    assert hj.group.state is S.COMPLETING_REBALANCE
    assert hj.coord.force_rebalance(hj.group_id)
    g = hj.group
    assert g.state is S.PREPARING_REBALANCE and g.num_members_awaiting_join == 0
    start = hj.now
    hj.advance(10_000)
    assert g.state is S.PREPARING_REBALANCE and len(g.members) == 2 and g.generation_id == 2
    assert g.join_timer is not None and hj.clock.next_deadline() == start + 20_000
    hj.advance(10_000)
    assert g.state is S.PREPARING_REBALANCE and len(g.members) == 2 and g.generation_id == 2
    r1 = hj.join(s1, instance="first-instance-id", **kw)
    assert not r1.done()
    r2 = hj.join(s2, instance="second-instance-id", **kw)
    assert (r1.result().error_code, r1.result().generation_id) == (E.NONE, 3)
    assert (r2.result().error_code, r2.result().generation_id) == (E.NONE, 3)
    assert g.state is S.COMPLETING_REBALANCE
