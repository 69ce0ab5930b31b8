"""JoinGroup validation and (re)join semantics: scenarios C04-C17 (spec §7.3)."""
from __future__ import annotations

from coord_harness import E, RANGE, RANGE_RR, S, Harness, tie, hs, hj  # noqa: F401 (fixtures)

from kafkagroup.coordinator import ClassicGroup, GroupState


def test_C04_first_dynamic_member_two_step_join_initial_delay_generation_1(hs: Harness) -> None:
    first = hs.join("").result()
    assert first.error_code == E.MEMBER_ID_REQUIRED
    m = first.member_id
    assert m.startswith("client-") and len(m) == len("client-") + 36
    assert (first.generation_id, first.leader, first.members, first.protocol_type) == (-1, "", [], None)
    g = hs.group
    assert g.state is S.EMPTY and len(g.members) == 0 and set(g.pending_members) == {m}
    reply = hs.join(m)
    assert not reply.done()
    assert hs.group.state is S.PREPARING_REBALANCE and hs.group.generation_id == 0
    hs.advance(49)
    assert not reply.done()
    hs.advance(1)
    r = reply.result()
    assert (r.error_code, r.generation_id, r.member_id, r.leader) == (E.NONE, 1, m, m)
    assert (r.protocol_type, r.protocol_name, r.skip_assignment) == ("consumer", "range", False)
    assert [(x.member_id, x.group_instance_id, x.metadata) for x in r.members] == [(m, None, b"")]
    assert hs.group.state is S.COMPLETING_REBALANCE


def test_C05_known_member_id_against_a_missing_group(hs: Harness) -> None:
    r = hs.join("memberId").result()
    assert (r.error_code, r.member_id) == (E.UNKNOWN_MEMBER_ID, "memberId")
    r = hs.join("memberId", instance="groupInstanceId").result()
    assert (r.error_code, r.member_id) == (E.UNKNOWN_MEMBER_ID, "memberId")
    assert hs.coord.group("groupId") is None


def test_C07_empty_protocol_type_or_empty_protocol_list(hs: Harness) -> None:
    assert hs.join("", protocol_type="").result().error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert hs.join("", protocol_type="", instance="groupInstanceId").result().error_code == E.INCONSISTENT_GROUP_PROTOCOL
    r = hs.join("", protocols=[]).result()
    assert (r.error_code, r.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")


def test_C08_new_member_must_share_a_protocol_with_all_members(hs: Harness) -> None:
    a_reply = hs.join_v3("")
    assert hs.group.state is S.PREPARING_REBALANCE
    r = hs.join("", protocols=[("roundrobin", b"")]).result()
    assert (r.error_code, r.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")
    hs.advance(50)
    a = a_reply.result()
    assert (a.error_code, a.generation_id) == (E.NONE, 1)


def test_C10_unknown_member_id_against_an_existing_group(hs: Harness) -> None:
    _, reply = hs.two_step_join()
    hs.advance(50)
    assert reply.result().generation_id == 1 and hs.group.state is S.COMPLETING_REBALANCE
    r = hs.join("memberId").result()
    assert (r.error_code, r.generation_id, r.leader, r.protocol_type, r.protocol_name, r.members) == (
        E.UNKNOWN_MEMBER_ID, -1, "", None, None, [])


def test_C11_join_on_a_dead_group(hs: Harness) -> None:
    dead = ClassicGroup("groupId", now_ms=0, state=GroupState.DEAD)
    hs.coord.add_group(dead)
    r = hs.join("").result()
    assert (r.error_code, r.member_id) == (E.COORDINATOR_NOT_AVAILABLE, "")
    r = hs.join("some-member").result()
    assert (r.error_code, r.member_id) == (E.COORDINATOR_NOT_AVAILABLE, "some-member")
    r = hs.join("", instance="groupInstanceId").result()
    assert r.error_code == E.COORDINATOR_NOT_AVAILABLE


def test_C13_unchanged_follower_in_stable_gets_the_current_generation(hs: Harness) -> None:
    a, b = hs.fx_two()
    r = hs.join(b).result()   # identical protocols
    assert (r.error_code, r.generation_id, r.leader, r.members, r.member_id) == (E.NONE, 2, a, [], b)
    assert (r.protocol_type, r.protocol_name) == ("consumer", "range")
    assert hs.group.state is S.STABLE and hs.group.generation_id == 2


def test_C14_leader_join_in_stable_always_rebalances(hs: Harness) -> None:
    a = hs.fx_single()
    r = hs.join(a).result()   # completes at once: the only member has rejoined
    assert (r.error_code, r.generation_id, r.leader) == (E.NONE, 2, a)
    assert [m.member_id for m in r.members] == [a]
    assert hs.group.state is S.COMPLETING_REBALANCE


def test_C16_follower_with_changed_metadata_in_stable_triggers_a_rebalance(hs: Harness) -> None:
    a, b = hs.fx_two()
    b_reply = hs.join(b, protocols=RANGE_RR)
    assert not b_reply.done() and hs.group.state is S.PREPARING_REBALANCE
    a_reply = hs.join(a)
    ra, rb = a_reply.result(), b_reply.result()
    assert (ra.error_code, ra.generation_id, rb.error_code, rb.generation_id) == (E.NONE, 3, E.NONE, 3)
    assert hs.group.state is S.COMPLETING_REBALANCE and len(hs.group.members) == 2


def test_C17_pending_member_id_reused_with_a_group_instance_id_is_an_internal_error(hj: Harness) -> None:
    first = hj.join("").result()
    assert first.error_code == E.MEMBER_ID_REQUIRED
    r = hj.join(first.member_id, instance="group-instance-id").result()
    assert r.error_code == E.UNKNOWN_SERVER_ERROR
    g = hj.group
    assert first.member_id in g.pending_members and not g.members and not g.static_members


def test_join_v0_uses_the_session_timeout_as_rebalance_timeout(hs: Harness) -> None:
    hs.join_v3("", rebalance=-1, session=700)
    assert hs.group.rebalance_timeout_ms() == 700


def test_completing_rebalance_rejoin_with_same_metadata_returns_current_generation_to_leader_with_members(hs: Harness) -> None:
    a, reply = hs.two_step_join()
    hs.advance(50)
    assert reply.result().generation_id == 1
    r = hs.join(a).result()
    assert (r.error_code, r.generation_id, r.leader) == (E.NONE, 1, a)
    assert [m.member_id for m in r.members] == [a]
    assert hs.group.state is S.COMPLETING_REBALANCE


def test_rejoin_of_a_known_member_in_an_empty_group_is_unknown_member(hs: Harness) -> None:
    g = ClassicGroup("groupId", now_ms=0)
    hs.coord.add_group(g)
    from kafkagroup.coordinator import ClassicGroupMember
    g.add(ClassicGroupMember("m", protocols=RANGE))
    r = hs.join("m").result()
    assert (r.error_code, r.member_id) == (E.UNKNOWN_MEMBER_ID, "m")
