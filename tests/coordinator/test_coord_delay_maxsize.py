"""Initial rebalance delay (C19, C20) and group.max.size (C22-C26)."""
from __future__ import annotations

from coord_harness import E, RANGE, S, Harness, tie, hs  # noqa: F401 (fixtures)

from kafkagroup.coordinator import ClassicGroup, ClassicGroupMember, GroupState


def test_C19_initial_delay_is_extended_when_a_new_member_joins_during_it(hs: Harness) -> None:
    a = hs.join_v3("", rebalance=150)
    hs.advance_to(49)
    b = hs.join_v3("", rebalance=150)
    assert hs.group.new_member_added
    hs.advance_to(50)
    assert not hs.group.new_member_added      # T1 fired and extended
    hs.advance_to(99)
    assert not a.done() and not b.done()
    hs.advance_to(100)
    ra, rb = a.result(), b.result()
    assert (ra.error_code, ra.generation_id, rb.error_code, rb.generation_id) == (E.NONE, 1, E.NONE, 1)


def test_C20_initial_delay_extensions_are_capped_by_the_rebalance_timeout(hs: Harness) -> None:
    a = hs.join_v3("", rebalance=100)
    b = hs.join_v3("", rebalance=100)
    hs.advance_to(50)                  # T1: B was added -> T2 delay 50, remaining 0
    c = hs.join_v3("", rebalance=100)  # newMemberAdded again
    assert hs.group.new_member_added
    hs.advance_to(99)
    assert not (a.done() or b.done() or c.done())
    hs.advance_to(100)                 # remaining == 0: no further extension
    for reply in (a, b, c):
        r = reply.result()
        assert (r.error_code, r.generation_id) == (E.NONE, 1)


def test_initial_delay_never_completes_early_even_when_everyone_joined(hs: Harness) -> None:
    m, reply = hs.two_step_join()
    assert hs.group.has_all_members_joined()
    hs.advance(49)
    assert not reply.done()


def test_initial_delay_rebalance_timeout_below_delay_completes_after_exactly_the_delay(hs: Harness) -> None:
    a = hs.join_v3("", rebalance=30)
    b = hs.join_v3("", rebalance=30)  # added during the delay, but remaining = max(30-50, 0) = 0
    hs.advance(49)
    assert not a.done()
    hs.advance(1)
    assert a.result().generation_id == 1 and b.result().generation_id == 1


def test_initial_delay_total_wait_is_bounded_by_the_rebalance_timeout(hs: Harness) -> None:
    first = hs.join_v3("", rebalance=500)
    joined_at = []
    # a new member arrives in every tick: ticks at 50, 100, ... the group waits at most 500 ms
    for t in range(25, 1000, 50):
        hs.advance_to(t)
        if first.done():
            break
        hs.join_v3("", rebalance=500)
        joined_at.append(t)
    assert first.done() and hs.now <= 525
    assert first.result().generation_id == 1


def test_C22_max_size_reached_for_a_brand_new_member(hs: Harness) -> None:
    replies = [hs.join_v3("") for _ in range(4)]
    hs.advance(50)
    hs.advance(50)
    assert all(r.result().generation_id == 1 for r in replies)
    assert hs.group.state is S.COMPLETING_REBALANCE
    r = hs.join("").result()
    assert (r.error_code, r.member_id) == (E.GROUP_MAX_SIZE_REACHED, "")
    r = hs.join_v3("").result()
    assert r.error_code == E.GROUP_MAX_SIZE_REACHED


def test_C23_max_size_with_two_step_joins(hs: Harness) -> None:
    ids = []
    for _ in range(5):
        r = hs.join("").result()
        assert r.error_code == E.MEMBER_ID_REQUIRED
        ids.append(r.member_id)
    assert hs.group.state is S.EMPTY and len(hs.group.pending_members) == 5
    replies = [hs.join(m) for m in ids[:4]]
    assert hs.group.state is S.PREPARING_REBALANCE
    r5 = hs.join(ids[4]).result()
    assert (r5.error_code, r5.member_id) == (E.GROUP_MAX_SIZE_REACHED, "")
    assert not any(r.done() for r in replies)
    hs.advance(50)
    assert not any(r.done() for r in replies)
    hs.advance(50)
    for r in replies:
        assert (r.result().error_code, r.result().generation_id) == (E.NONE, 1)
    g = hs.group
    assert g.state is S.COMPLETING_REBALANCE and len(g.members) == 4 and not g.pending_members
    again = [hs.join(m) for m in ids]
    for r in again[:4]:
        assert (r.result().error_code, r.result().generation_id) == (E.NONE, 1)
    assert again[4].result().error_code == E.GROUP_MAX_SIZE_REACHED


def test_C25_members_awaiting_join_may_resend_join_while_the_group_is_full(hs: Harness) -> None:
    ids = [hs.join("").result().member_id for _ in range(5)]
    first = [hs.join(m) for m in ids]
    assert first[4].result().error_code == E.GROUP_MAX_SIZE_REACHED
    second = [hs.join(m) for m in ids]
    assert second[4].result().error_code == E.GROUP_MAX_SIZE_REACHED
    assert all(r.superseded() and not r.done() for r in first[:4])  # only the latest JoinGroup is answered
    hs.advance(50)
    hs.advance(50)
    for r in second[:4]:
        assert (r.result().error_code, r.result().generation_id) == (E.NONE, 1)
    assert not any(r.done() for r in first[:4])


def test_C26_after_max_size_was_lowered_the_last_rejoining_members_are_kicked_out(hs: Harness) -> None:
    g = ClassicGroup("groupId", now_ms=0)
    ids = [f"M{i}" for i in range(1, 7)]
    for m in ids:
        g.add(ClassicGroupMember(m, client_id="client", session_timeout_ms=600_000, rebalance_timeout_ms=500,
                                 protocols=RANGE))
    g.state = GroupState.STABLE       # constructed directly (e.g. loaded before group.max.size was lowered)
    hs.coord.add_group(g)
    assert hs.coord.force_rebalance("groupId")
    assert g.state is S.PREPARING_REBALANCE
    replies = [hs.join(m) for m in ids[:4]]
    assert not any(r.done() for r in replies)            # M1..M4 parked
    replies += [hs.join(m) for m in ids[4:]]
    for r in replies[4:]:
        assert (r.result().error_code, r.result().member_id) == (E.GROUP_MAX_SIZE_REACHED, "")
    assert set(g.members) == set(ids[:4])
    # Scala completes the join right after M6's removal (everyone left has joined); Java at the timer.
    hs.advance(501)
    for r in replies[:4]:
        assert (r.result().error_code, r.result().generation_id) == (E.NONE, 1)
    assert g.state is S.COMPLETING_REBALANCE and set(g.members) == set(ids[:4])


def test_loaded_group_over_capacity_rebalances(tmp_path) -> None:
    path = str(tmp_path / "g.db")
    h = Harness("S", store=path, **{"group.max.size": 10})
    replies = [h.join_v3("") for _ in range(5)]
    h.advance(50)
    h.advance(50)
    ids = [r.result().member_id for r in replies]
    leader = replies[0].result().leader
    assert h.sync(leader, 1, [(m, m.encode()) for m in ids]).result().error_code == E.NONE
    h.coord.shutdown()
    h2 = Harness("S", store=path, clock=h.clock, **{"group.max.size": 4})
    g = h2.group
    assert g.state is S.PREPARING_REBALANCE and len(g.members) == 5
