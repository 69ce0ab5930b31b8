"""SyncGroup and pending-sync expiry (C43-C50), Heartbeat (C52), LeaveGroup (C53)."""
from __future__ import annotations

from coord_harness import E, RANGE, RANGE_RR, S, Harness, tie, hs  # noqa: F401 (fixtures)

from kafkagroup.coordinator import ClassicGroup, ClassicGroupMember, GroupState


def _completing(h: Harness) -> str:
    a, reply = h.two_step_join()
    h.advance(50)
    assert reply.result().generation_id == 1 and h.group.state is S.COMPLETING_REBALANCE
    return a


def test_C43_sync_group_validation_errors(hs: Harness) -> None:
    assert hs.sync("memberId", 1).result().error_code == E.UNKNOWN_MEMBER_ID
    a = _completing(hs)
    assert hs.sync(a, 2).result().error_code == E.ILLEGAL_GENERATION
    r = hs.sync(a, 1, {}).result()
    assert (r.error_code, r.assignment) == (E.NONE, b"")
    assert hs.group.members[a].assignment == b"" and hs.group.state is S.STABLE
    assert hs.heartbeat(a, 1) == E.NONE
    assert hs.sync("blah", 1).result().error_code == E.UNKNOWN_MEMBER_ID
    hs.coord.add_group(ClassicGroup("deadGroupId", now_ms=0, state=GroupState.DEAD))
    assert hs.coord.partition_for("deadGroupId") == 0
    assert hs.sync("memberId", 1, group="deadGroupId").result().error_code == E.COORDINATOR_NOT_AVAILABLE


def test_sync_error_shape_and_states(hs: Harness) -> None:
    a = hs.fx_single()
    b_reply = hs.join_v3("")                 # PreparingRebalance
    r = hs.sync(a, 1).result()
    assert (r.error_code, r.protocol_type, r.protocol_name, r.assignment) == (E.REBALANCE_IN_PROGRESS, None, None, b"")
    hs.join(a)
    b = b_reply.result().member_id
    stable = hs.sync(a, 2, [(a, b"x"), (b, b"y"), ("stranger", b"z")]).result()
    assert (stable.error_code, stable.assignment) == (E.NONE, b"x")
    again = hs.sync(b, 2).result()           # Stable: current assignment
    assert (again.error_code, again.assignment, again.protocol_name) == (E.NONE, b"y", "range")


def _static_pair_completing(h: Harness) -> tuple[str, str]:
    lr = h.join("", instance="leader", protocols=RANGE_RR)
    fr = h.join("", instance="follower", protocols=RANGE_RR)
    h.advance(50)
    h.advance(50)
    assert lr.result().protocol_name == "range" and h.group.state is S.COMPLETING_REBALANCE
    return lr.result().member_id, fr.result().member_id


def test_C44_sync_group_protocol_type_mismatch(hs: Harness) -> None:
    l, f = _static_pair_completing(hs)
    rl = hs.sync(l, 1, [(l, b"")], instance="leader", protocol_type="whatever").result()
    rf = hs.sync(f, 1, instance="follower", protocol_type="whatever").result()
    for r in (rl, rf):
        assert (r.error_code, r.protocol_type, r.protocol_name) == (E.INCONSISTENT_GROUP_PROTOCOL, None, None)


def test_C44_sync_group_protocol_name_mismatch(hs: Harness) -> None:
    l, f = _static_pair_completing(hs)
    assert hs.sync(l, 1, [(l, b"")], instance="leader", protocol_name="whatever").result().error_code == \
        E.INCONSISTENT_GROUP_PROTOCOL
    assert hs.sync(f, 1, instance="follower", protocol_name="whatever").result().error_code == \
        E.INCONSISTENT_GROUP_PROTOCOL


def test_C44_sync_group_protocol_fields_absent(hs: Harness) -> None:
    l, f = _static_pair_completing(hs)
    rl = hs.sync(l, 1, [(l, b"")], instance="leader").result()
    rf = hs.sync(f, 1, instance="follower").result()
    for r in (rl, rf):
        assert (r.error_code, r.protocol_type, r.protocol_name) == (E.NONE, "consumer", "range")


def test_C44_sync_group_protocol_fields_consistent(hs: Harness) -> None:
    l, f = _static_pair_completing(hs)
    rl = hs.sync(l, 1, [(l, b"")], instance="leader", protocol_type="consumer", protocol_name="range").result()
    rf = hs.sync(f, 1, instance="follower", protocol_type="consumer", protocol_name="range").result()
    for r in (rl, rf):
        assert (r.error_code, r.protocol_type, r.protocol_name) == (E.NONE, "consumer", "range")


def test_C46_leader_never_syncs_parked_followers_get_rebalance_in_progress(hs: Harness) -> None:
    a, b, b_sync = hs.fx_follower_parked()
    hs.advance(600)
    r = b_sync.result()
    assert (r.error_code, r.assignment) == (E.REBALANCE_IN_PROGRESS, b"")
    assert a not in hs.group.members


def test_C47_pending_sync_expiry_removes_every_member_that_did_not_sync(hs: Harness) -> None:
    members = hs.fx_join_n(3)
    hs.advance(250)
    assert [hs.heartbeat(m, 1) for m, _ in members] == [E.NONE] * 3
    hs.advance(251)
    assert [hs.heartbeat(m, 1) for m, _ in members] == [E.UNKNOWN_MEMBER_ID] * 3
    g = hs.group
    assert g.state is S.EMPTY and g.generation_id == 2 and not g.members


def test_C49_pending_sync_expiry_removes_a_leader_that_did_not_sync(hs: Harness) -> None:
    members = hs.fx_join_n(3)
    leader, followers = members[0][0], [m for m, _ in members[1:]]
    hs.advance(250)
    assert [hs.heartbeat(m, 1) for m, _ in members] == [E.NONE] * 3
    parked = [hs.sync(f, 1) for f in followers]
    assert not any(p.done() for p in parked)
    hs.advance(251)
    assert [p.result().error_code for p in parked] == [E.REBALANCE_IN_PROGRESS] * 2
    assert hs.heartbeat(leader, 1) == E.UNKNOWN_MEMBER_ID
    assert hs.heartbeat(followers[0], 1) == E.REBALANCE_IN_PROGRESS
    g = hs.group
    assert g.state is S.PREPARING_REBALANCE and set(g.members) == set(followers)


def test_C50_no_expiry_when_every_member_synced(hs: Harness) -> None:
    members = hs.fx_join_n(3)
    leader, followers = members[0][0], [m for m, _ in members[1:]]
    hs.advance(250)
    assert [hs.heartbeat(m, 1) for m, _ in members] == [E.NONE] * 3
    assert hs.sync(leader, 1, [(m, m.encode()) for m, _ in members]).result().error_code == E.NONE
    assert [hs.sync(f, 1).result().assignment for f in followers] == [f.encode() for f in followers]
    hs.advance(251)
    assert [hs.heartbeat(m, 1) for m, _ in members] == [E.NONE] * 3
    hs.advance(250)
    assert [hs.heartbeat(m, 1) for m, _ in members] == [E.NONE] * 3
    g = hs.group
    assert g.state is S.STABLE and g.generation_id == 1 and len(g.members) == 3


def test_C52_heartbeat_per_group_state(hs: Harness) -> None:
    assert hs.heartbeat("memberId", -1) == E.UNKNOWN_MEMBER_ID
    hs.coord.add_group(ClassicGroup("deadGroupId", now_ms=0, state=GroupState.DEAD))
    assert hs.heartbeat("memberId", 1, group="deadGroupId") == E.COORDINATOR_NOT_AVAILABLE
    empty = ClassicGroup("emptyGroup", now_ms=0)
    empty.add(ClassicGroupMember("M", protocols=RANGE))
    assert hs.coord.partition_for("emptyGroup") in hs.coord.owned_partitions
    hs.coord.add_group(empty)
    assert hs.heartbeat("M", 0, group="emptyGroup") == E.UNKNOWN_MEMBER_ID
    a = _completing(hs)
    assert hs.heartbeat(a, 1) == E.NONE                 # CompletingRebalance answers NONE, not 27
    assert hs.sync(a, 1, [(a, b"")]).result().error_code == E.NONE
    assert hs.heartbeat(a, 2) == E.ILLEGAL_GENERATION
    assert hs.heartbeat("memberId", 1) == E.UNKNOWN_MEMBER_ID
    assert hs.heartbeat(a, 1) == E.NONE
    hs.join_v3("")
    assert hs.group.state is S.PREPARING_REBALANCE
    assert hs.heartbeat(a, 1) == E.REBALANCE_IN_PROGRESS


def test_heartbeat_answers_none_while_loading() -> None:
    h = Harness("S", owned=[])
    h.coord.load_partition(0, defer=True)
    assert h.heartbeat("m", 1) == E.NONE


def test_C53_leave_group_basics(hs: Harness) -> None:
    r = hs.leave("memberId")
    assert r.error_code == E.NONE and [m.error_code for m in r.members] == [E.UNKNOWN_MEMBER_ID]
    assert hs.coord.group("groupId") is None
    hs.coord.add_group(ClassicGroup("deadGroupId", now_ms=0, state=GroupState.DEAD))
    r = hs.leave("memberId", group="deadGroupId")
    assert (r.error_code, r.members) == (E.COORDINATOR_NOT_AVAILABLE, [])
    r = hs.leave("memberId", "other", group="deadGroupId")
    assert (r.error_code, r.members) == (E.COORDINATOR_NOT_AVAILABLE, [])
    a = _completing(hs)
    r = hs.leave("consumerId")
    assert r.error_code == E.NONE and [m.error_code for m in r.members] == [E.UNKNOWN_MEMBER_ID]
    r = hs.leave(a)
    assert r.error_code == E.NONE and [m.error_code for m in r.members] == [E.NONE]
    g = hs.group
    assert g.state is S.EMPTY and g.generation_id == 2 and not g.members
    # testCommitOffsetsAfterGroupIsEmpty: the Empty group takes manual commits
    assert hs.commit({("t", 0): 1}) == {("t", 0): E.NONE}


def test_leave_cancels_the_session_timer_and_rebalances_stable_group(hs: Harness) -> None:
    a, b = hs.fx_two()
    r = hs.leave(b)
    assert r.members[0].error_code == E.NONE
    g = hs.group
    assert g.state is S.PREPARING_REBALANCE and set(g.members) == {a}
    assert hs.clock.pending() >= 1
    reply = hs.join(a)
    assert reply.result().generation_id == 3


def test_failed_assignment_write_fails_parked_syncs_and_rebalances(hs: Harness) -> None:
    a, b, b_sync = hs.fx_follower_parked()
    hs.coord.store.inject_failure(E.NOT_ENOUGH_REPLICAS, kind="group")
    r = hs.sync(a, 2, [(a, b"a"), (b, b"b")]).result()
    assert (r.error_code, r.assignment) == (E.COORDINATOR_NOT_AVAILABLE, b"")  # §2.9 mapping
    assert b_sync.result().error_code == E.COORDINATOR_NOT_AVAILABLE
    g = hs.group
    assert g.state is S.PREPARING_REBALANCE and all(m.assignment == b"" for m in g.members.values())


def test_write_failure_codes_of_the_leader_sync_follow_section_2_9(hs: Harness) -> None:
    cases = {E.UNKNOWN_TOPIC_OR_PARTITION: E.COORDINATOR_NOT_AVAILABLE, E.NOT_LEADER_OR_FOLLOWER: E.NOT_COORDINATOR,
             E.KAFKA_STORAGE_ERROR: E.NOT_COORDINATOR, E.REQUEST_TIMED_OUT: E.REBALANCE_IN_PROGRESS,
             E.MESSAGE_TOO_LARGE: E.UNKNOWN_SERVER_ERROR, E.RECORD_LIST_TOO_LARGE: E.UNKNOWN_SERVER_ERROR,
             E.INVALID_FETCH_SIZE: E.UNKNOWN_SERVER_ERROR, E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: E.COORDINATOR_NOT_AVAILABLE}
    a = hs.fx_single()
    generation = 1
    for append_error, response_error in cases.items():
        reply = hs.join(a)                        # leader rejoin: new generation at once
        generation += 1
        assert reply.result().generation_id == generation
        hs.coord.store.inject_failure(append_error)
        assert hs.sync(a, generation, [(a, b"x")]).result().error_code == response_error
        assert hs.group.state is S.PREPARING_REBALANCE
        reply = hs.join(a)
        generation += 1
        assert reply.result().generation_id == generation
        assert hs.sync(a, generation, [(a, b"x")]).result().error_code == E.NONE
