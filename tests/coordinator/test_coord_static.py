"""Static membership (KIP-345, KIP-814): scenarios C55-C73."""
from __future__ import annotations

from coord_harness import E, RANGE_RR, S, Harness, tie, hs, hj  # noqa: F401 (fixtures)

from kafkagroup.coordinator import MemberIdentity


def test_C55_static_member_joins_first_and_a_wrong_member_id_is_fenced(hs: Harness) -> None:
    reply = hs.join("", instance="groupInstanceId")
    assert not reply.done()                    # no MEMBER_ID_REQUIRED for static members
    hs.advance(50)
    r = reply.result()
    assert (r.error_code, r.generation_id) == (E.NONE, 1) and r.member_id.startswith("groupInstanceId-")
    fenced = hs.join("unknown_member", instance="groupInstanceId").result()
    assert (fenced.error_code, fenced.member_id) == (E.FENCED_INSTANCE_ID, "unknown_member")


def test_C56_duplicate_static_follower_fences_the_old_one_parked_in_join(hs: Harness) -> None:
    l, f = hs.fx_static()
    hs.join_v3("")                                              # N: PreparingRebalance
    assert hs.group.state is S.PREPARING_REBALANCE
    old = hs.join(f, instance="follower", protocols=RANGE_RR)
    assert not old.done()
    duplicate = hs.join("", instance="follower", protocols=RANGE_RR)
    r = old.result()
    assert (r.error_code, r.generation_id, r.members, r.protocol_type, r.member_id) == (
        E.FENCED_INSTANCE_ID, -1, [], None, f)
    assert hs.group.state is S.PREPARING_REBALANCE
    assert not duplicate.done()                                 # L has not rejoined yet
    f2 = hs.group.static_members["follower"]
    assert f2 != f and f not in hs.group.members


def test_C58_old_static_follower_rejoining_after_replacement_is_fenced(hs: Harness) -> None:
    l, f = hs.fx_static()
    leader_join = hs.join(l, instance="leader", protocols=RANGE_RR)
    assert hs.group.state is S.PREPARING_REBALANCE
    duplicate = hs.join("", instance="follower", protocols=RANGE_RR)
    rl, rf2 = leader_join.result(), duplicate.result()
    assert (rl.error_code, rl.generation_id, rl.member_id) == (E.NONE, 2, l)
    assert {m.group_instance_id for m in rl.members} == {"leader", "follower"}
    assert (rf2.error_code, rf2.generation_id, rf2.members) == (E.NONE, 2, [])
    assert rf2.member_id != f
    old = hs.join(f, instance="follower", protocols=RANGE_RR).result()
    assert (old.error_code, old.generation_id) == (E.FENCED_INSTANCE_ID, -1)
    assert hs.group.state is S.COMPLETING_REBALANCE


def test_C59_static_leader_restart_in_stable_no_rebalance_v9(hs: Harness) -> None:
    l, f = hs.fx_static()
    r = hs.join("", instance="leader", protocols=RANGE_RR, version=9).result()
    l2 = r.member_id
    assert l2 != l and l2.startswith("leader-")
    assert (r.error_code, r.generation_id, r.leader, r.skip_assignment) == (E.NONE, 1, l2, True)
    assert {m.group_instance_id for m in r.members} == {"leader", "follower"}
    assert {m.member_id for m in r.members} == {l2, f}
    assert hs.group.state is S.STABLE and hs.group.leader_id == l2
    _fencing_after_leader_replacement(hs, l)


def test_C59_variant_static_leader_restart_before_v9_reports_the_old_leader(hs: Harness) -> None:
    l, f = hs.fx_static()
    r = hs.join("", instance="leader", protocols=RANGE_RR, version=5).result()
    l2 = r.member_id
    assert (r.error_code, r.generation_id, r.leader, r.members, r.skip_assignment) == (E.NONE, 1, l, [], False)
    assert l2 != l and hs.group.state is S.STABLE
    _fencing_after_leader_replacement(hs, l)


def _fencing_after_leader_replacement(hs: Harness, old_leader: str) -> None:
    assert hs.join(old_leader, instance="leader", protocols=RANGE_RR).result().error_code == E.FENCED_INSTANCE_ID
    assert hs.sync(old_leader, 1, instance="leader").result().error_code == E.FENCED_INSTANCE_ID
    assert hs.sync(old_leader, 1).result().error_code == E.UNKNOWN_MEMBER_ID


def test_static_replacement_keeps_the_assignment_and_is_persisted(hs: Harness) -> None:
    l, f = hs.fx_static()
    f2 = hs.join("", instance="follower", protocols=RANGE_RR).result().member_id
    assert hs.group.members[f2].assignment == b"2"
    s = hs.sync(f2, 1, instance="follower").result()
    assert (s.error_code, s.assignment) == (E.NONE, b"2")
    snapshot = hs.coord.store.load_partition(0)
    assert {m.member_id for m in snapshot.groups["groupId"].members} == {l, f2}


def test_static_replacement_fences_a_parked_sync_of_the_old_id(hs: Harness) -> None:
    lr = hs.join("", instance="leader", protocols=RANGE_RR)
    fr = hs.join("", instance="follower", protocols=RANGE_RR)
    hs.advance(50)
    hs.advance(50)
    f = fr.result().member_id
    parked = hs.sync(f, 1, instance="follower")
    assert not parked.done()
    replacement = hs.join("", instance="follower", protocols=RANGE_RR)   # CompletingRebalance: rebalance
    assert parked.result().error_code == E.FENCED_INSTANCE_ID
    assert hs.group.state is S.PREPARING_REBALANCE and not replacement.done()


def test_C61_static_follower_rejoins_with_changed_protocols_leader_does_not_rejoin(hj: Harness) -> None:
    l, f = hj.fx_static(session=15_000, rebalance=10_000)
    reply = hj.join(f, instance="follower", protocols=[("roundrobin", b"")], session=15_000, rebalance=10_000)
    assert hj.group.state is S.PREPARING_REBALANCE and not reply.done()
    hj.advance(10_000)
    r = reply.result()
    assert (r.error_code, r.generation_id, r.member_id, r.leader, r.protocol_name) == (E.NONE, 2, f, f, "roundrobin")
    assert {m.group_instance_id for m in r.members} == {"leader", "follower"}
    g = hj.group
    assert g.state is S.COMPLETING_REBALANCE and l in g.members


def test_C62_static_restart_changing_the_selected_protocol_rebalances(hj: Harness) -> None:
    l, f = hj.fx_static(session=15_000, rebalance=10_000)
    reply = hj.join("", instance="follower", protocols=[("roundrobin", b"")], session=15_000, rebalance=10_000)
    f2 = hj.group.static_members["follower"]
    assert f2 != f and hj.group.state is S.PREPARING_REBALANCE and not reply.done()
    hj.advance(10_000)
    r = reply.result()
    assert (r.error_code, r.generation_id, r.member_id, r.leader, r.protocol_name) == (E.NONE, 2, f2, f2, "roundrobin")
    assert {m.group_instance_id for m in r.members} == {"leader", "follower"}
    assert l in hj.group.members


def test_C64_static_replacement_is_reverted_when_the_group_write_fails(hs: Harness) -> None:
    l, f = hs.fx_static()
    hs.coord.store.inject_failure(E.MESSAGE_TOO_LARGE, kind="group")
    r = hs.join("", instance="follower", protocols=RANGE_RR, session=1000, rebalance=1000).result()
    assert (r.error_code, r.member_id, r.generation_id, r.leader) == (E.UNKNOWN_SERVER_ERROR, "", 1, l)
    assert (r.protocol_type, r.protocol_name, r.members) == ("consumer", "range", [])
    g = hs.group
    assert g.state is S.STABLE and g.static_members["follower"] == f
    member = g.members[f]
    assert (member.session_timeout_ms, member.rebalance_timeout_ms) == (500, 500)
    assert member.protocols == RANGE_RR and g.num_members_awaiting_join == 0
    ok = hs.join(f, instance="follower", protocols=RANGE_RR).result()
    assert (ok.error_code, ok.generation_id) == (E.NONE, 1)
    assert hs.sync(f, 1, instance="follower").result().error_code == E.NONE
    # the store still holds the pre-restart membership
    assert {m.member_id for m in hs.coord.store.load_partition(0).groups["groupId"].members} == {l, f}


def test_C64_variant_unknown_topic_or_partition_maps_to_coordinator_not_available(hs: Harness) -> None:
    l, f = hs.fx_static()
    hs.coord.store.inject_failure(E.UNKNOWN_TOPIC_OR_PARTITION)
    r = hs.join("", instance="follower", protocols=RANGE_RR).result()
    assert (r.error_code, r.member_id, r.generation_id, r.leader) == (E.COORDINATOR_NOT_AVAILABLE, "", 1, l)


def test_C65_static_restarts_update_timeouts_without_a_rebalance(hs: Harness) -> None:
    l, f = hs.fx_static()
    rf = hs.join("", instance="follower", protocols=RANGE_RR, session=1000, rebalance=1000).result()
    assert (rf.error_code, rf.generation_id, rf.members) == (E.NONE, 1, [])
    assert hs.group.state is S.STABLE
    rl = hs.join("", instance="leader", protocols=RANGE_RR, session=1000, rebalance=1000, version=9).result()
    assert (rl.error_code, rl.generation_id, rl.skip_assignment) == (E.NONE, 1, True)
    assert rl.member_id == rl.leader and len(rl.members) == 2
    g = hs.group
    assert g.state is S.STABLE
    assert all((m.session_timeout_ms, m.rebalance_timeout_ms) == (1000, 1000) for m in g.members.values())


def test_C67_static_follower_rejoins_with_known_id_and_same_protocols_in_stable(hs: Harness) -> None:
    l, f = hs.fx_static()
    r = hs.join(f, instance="follower", protocols=RANGE_RR).result()
    assert (r.error_code, r.generation_id, r.leader, r.member_id, r.members) == (E.NONE, 1, l, f, [])
    assert hs.group.state is S.STABLE and l in hs.group.members


def test_C68_static_identity_mismatches(hs: Harness) -> None:
    l, f = hs.fx_static()
    assert hs.join(f, instance="leader", protocols=RANGE_RR).result().error_code == E.FENCED_INSTANCE_ID
    assert hs.join(l, instance="follower", protocols=RANGE_RR).result().error_code == E.FENCED_INSTANCE_ID
    assert hs.sync("invalid", 1, instance="leader").result().error_code == E.FENCED_INSTANCE_ID
    assert hs.heartbeat(l, 1) == E.NONE
    assert hs.heartbeat("invalidMember", 1, instance="leader") == E.FENCED_INSTANCE_ID
    assert hs.commit({("topic", 0): 0}, member_id=l, generation=1) == {("topic", 0): E.NONE}
    assert hs.commit({("topic", 0): 0}, member_id="invalidMember", generation=1, instance="leader") == {
        ("topic", 0): E.FENCED_INSTANCE_ID}
    assert hs.join(l, instance="unknown_instance", protocols=RANGE_RR).result().error_code == E.UNKNOWN_MEMBER_ID
    assert hs.group.state is S.STABLE


def test_C70_static_follower_that_does_not_rejoin_stays_in_the_group(hs: Harness) -> None:
    l, f = hs.fx_static(session=1000, rebalance=500)
    n_reply = hs.join("", instance="newMember", protocols=RANGE_RR, session=500, rebalance=500)
    assert hs.group.state is S.PREPARING_REBALANCE
    l_reply = hs.join(l, instance="leader", protocols=RANGE_RR, session=1000, rebalance=500)
    hs.advance(501)
    rl, rn = l_reply.result(), n_reply.result()
    assert (rl.error_code, rl.generation_id, rl.leader) == (E.NONE, 2, l)
    assert {m.group_instance_id for m in rl.members} == {"leader", "follower", "newMember"}
    assert (rn.error_code, rn.generation_id, rn.members, rn.leader) == (E.NONE, 2, [], l)
    assert f in hs.group.members


def test_C71_static_leader_that_does_not_rejoin_loses_leadership_but_stays(hs: Harness) -> None:
    l, f = hs.fx_static(session=1000, rebalance=500)
    n_reply = hs.join("", instance="newMember", protocols=RANGE_RR, session=500, rebalance=500)
    hs.advance(1)
    f_reply = hs.join(f, instance="follower", protocols=RANGE_RR, session=1000, rebalance=500)
    hs.advance(501)
    rn, rf = n_reply.result(), f_reply.result()
    assert rn.generation_id == 2 and rf.generation_id == 2
    leader = rn.leader
    assert leader == rf.leader and leader in {rn.member_id, rf.member_id}
    lead, other = (rn, rf) if leader == rn.member_id else (rf, rn)
    assert {m.group_instance_id for m in lead.members} == {"leader", "follower", "newMember"}
    assert other.members == []
    assert l in hs.group.members and hs.group.leader_id == leader


def test_C73_static_restart_during_completing_rebalance_forces_a_new_rebalance(hj: Harness) -> None:
    reply = hj.join("", instance="group-instance-id")
    hj.advance(3000)
    old = reply.result()
    assert old.generation_id == 1 and hj.group.state is S.COMPLETING_REBALANCE
    r = hj.join("", instance="group-instance-id").result()
    assert (r.error_code, r.generation_id) == (E.NONE, 2) and r.member_id != old.member_id
    g = hj.group
    assert len(g.members) == 1 and g.state is S.COMPLETING_REBALANCE


def test_static_member_removed_by_leave_with_instance_id_only(hs: Harness) -> None:
    l, f = hs.fx_static()
    r = hs.leave(MemberIdentity("", "follower"))
    assert [m.error_code for m in r.members] == [E.NONE]
    g = hs.group
    assert f not in g.members and "follower" not in g.static_members and g.state is S.PREPARING_REBALANCE


def test_static_members_are_removed_by_session_expiry(hs: Harness) -> None:
    l, f = hs.fx_static()
    hs.advance(400)
    assert hs.heartbeat(l, 1, instance="leader") == E.NONE
    hs.advance(100)          # F's session (restarted at t=100) expires at t=600
    g = hs.group
    assert f not in g.members and "follower" not in g.static_members
