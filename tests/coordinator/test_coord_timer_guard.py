"""No coordinator timer callback raises out of the clock (issue 10, defect 3, second half), and no
request that fails inside a join completion leaves its group without a join timer.

A failure is injected into the work a timer does (the vote, a session expiry, the pending-sync expiry, the
retention task); the clock must not raise, the failure is logged, every parked request is answered
UNKNOWN_SERVER_ERROR, and the group is left Empty at the next generation and usable by well-formed members.
"""
from __future__ import annotations

import asyncio
import logging

import pytest

from coord_harness import Harness
from coord_virtual_loop import VirtualTimeLoop
from kafkagroup.coordinator import (
    ErrorCode, GroupCoordinator, GroupState, JoinGroupRequest, ManualClock, SyncGroupRequest,
)
from kafkagroup.coordinator.aio import AsyncGroupCoordinator
from kafkagroup.coordinator.errors import IllegalGroupStateError
from kafkagroup.coordinator.group import ClassicGroup
from kafkagroup.coordinator.rebalance import RebalanceEngine

E = ErrorCode
S = GroupState


def fail_once(monkeypatch: pytest.MonkeyPatch, owner: type, name: str) -> list[int]:
    """Make ``owner.name`` raise on its next call only; returns a list counting the injected failures."""
    real = getattr(owner, name)
    fired: list[int] = []

    def broken(*args, **kwargs):
        if not fired:
            fired.append(1)
            raise IllegalGroupStateError(f"injected failure in {name}")
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, broken)
    return fired


def assert_reset(h: Harness, handed_out: int) -> None:
    """Empty, no members or timers, at a generation above every one handed out before the failure."""
    g = h.group
    assert g.state is S.EMPTY and g.generation_id > handed_out and not g.members and not g.pending_members
    assert g.join_timer is None and g.sync_timer is None and g.supported_protocols == {}
    assert g.num_members_awaiting_join == 0


def assert_usable(h: Harness) -> None:
    """A well-formed member joins, syncs and is Stable afterwards."""
    member, reply = h.two_step_join()
    while not reply.done():
        h.advance(50)
    joined = reply.result()
    assert joined.error_code == E.NONE and joined.leader == member
    assert h.sync(member, joined.generation_id, [(member, b"a")]).result().error_code == E.NONE
    assert h.group.state is S.STABLE


def test_a_failing_join_completion_answers_and_resets_the_group(monkeypatch, caplog) -> None:
    h = Harness("S")
    a, a_reply = h.two_step_join()
    fired = fail_once(monkeypatch, ClassicGroup, "select_protocol")
    with caplog.at_level(logging.ERROR, logger="kafkagroup.coordinator"):
        h.advance(50)                                         # the join completes on the initial-delay timer
    assert fired and "a coordinator timer of group groupId failed" in caplog.text
    assert "injected failure in select_protocol" in caplog.text  # the traceback is in the log
    assert a_reply.result().error_code == E.UNKNOWN_SERVER_ERROR
    assert_reset(h, 0)
    assert h.heartbeat(a, 1) == E.UNKNOWN_MEMBER_ID
    assert_usable(h)


def test_a_failing_session_expiry_answers_parked_syncs(monkeypatch, caplog) -> None:
    h = Harness("S")
    a, a_reply = h.two_step_join()
    b, b_reply = h.two_step_join()
    for _ in range(3):
        h.advance(50)
    gen = a_reply.result().generation_id
    leader = a_reply.result().leader
    follower = b if leader == a else a
    parked = h.sync(follower, gen)                            # the follower waits for the leader's assignment
    assert not parked.done()
    fail_once(monkeypatch, RebalanceEngine, "remove_member_and_update_group")
    with caplog.at_level(logging.ERROR, logger="kafkagroup.coordinator"):
        h.advance(10_000)                                     # the leader's session (500 ms) expires: fails
    assert parked.result().error_code == E.UNKNOWN_SERVER_ERROR
    assert "timer of group groupId failed" in caplog.text
    assert_reset(h, gen)
    assert_usable(h)


def test_a_failing_pending_sync_expiry_resets_a_group_and_the_store(monkeypatch, tmp_path) -> None:
    path = str(tmp_path / "g.db")
    h = Harness("S", store=path)
    a, a_reply = h.two_step_join()
    h.advance(50)
    assert a_reply.result().error_code == E.NONE               # nobody syncs: the pending-sync timer fires
    fail_once(monkeypatch, RebalanceEngine, "prepare_rebalance")
    h.advance(500)
    assert_reset(h, 1)
    generation = h.group.generation_id
    h.coord.shutdown()
    restarted = Harness("S", store=path)                       # what was written is the empty generation
    assert restarted.group.state is S.EMPTY and restarted.group.generation_id == generation


def test_a_failing_recovery_is_logged_and_never_raised(monkeypatch, caplog) -> None:
    h = Harness("S")
    h.two_step_join()
    fail_once(monkeypatch, ClassicGroup, "select_protocol")
    def broken_recovery(group: ClassicGroup) -> None:
        raise IllegalGroupStateError("injected failure of the recovery")

    monkeypatch.setattr(h.coord.engine.clock, "_on_failure", broken_recovery)
    with caplog.at_level(logging.ERROR, logger="kafkagroup.coordinator"):
        h.advance(50)
    assert "could not be reset after its timer failed" in caplog.text


def test_a_failing_retention_pass_keeps_the_retention_task(monkeypatch) -> None:
    clock = ManualClock()
    coord = GroupCoordinator({"offsets.retention.check.interval.ms": 1000}, clock=clock, store=":memory:")
    runs: list[int] = []
    real = coord.expire_offsets

    def flaky() -> int:
        runs.append(clock.now_ms())
        if len(runs) == 1:
            raise RuntimeError("injected retention failure")
        return real()

    monkeypatch.setattr(coord, "expire_offsets", flaky)
    clock.advance(1000)
    clock.advance(1000)
    assert runs == [1000, 2000]


def test_under_asyncio_no_exception_reaches_the_loop(monkeypatch) -> None:
    """The live clock: a failing join timer is not an asyncio "Exception in callback"; the join is answered."""
    fail_once(monkeypatch, ClassicGroup, "select_protocol")
    unhandled: list[dict] = []

    async def scenario() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: unhandled.append(context))
        coord = AsyncGroupCoordinator.create({"group.initial.rebalance.delay.ms": 5,
                                              "offsets.topic.num.partitions": 1}, store=":memory:")
        req = JoinGroupRequest("g", protocols=[("range", b"")], client_id="live", session_timeout_ms=10_000)
        first = await coord.join_group(req)
        req.member_id = first.member_id
        answer = await asyncio.wait_for(coord.join_group(req), timeout=60)
        assert answer.error_code == E.UNKNOWN_SERVER_ERROR
        again = await asyncio.wait_for(coord.join_group(req), timeout=60)   # removed: rejoin from scratch
        assert again.error_code == E.UNKNOWN_MEMBER_ID

    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        runner.run(scenario())
    assert unhandled == []


def test_a_join_completion_failing_inside_a_request_does_not_wedge_the_group(monkeypatch) -> None:
    """The leader of a one-member Stable group rejoins: the join completes inside the JoinGroup itself."""
    h = Harness("S")
    a = h.fx_single()
    fail_once(monkeypatch, ClassicGroup, "select_protocol")
    answer = h.join(a)
    assert answer.result().error_code == E.UNKNOWN_SERVER_ERROR
    assert_reset(h, 1)
    assert_usable(h)


def test_a_refusal_raised_before_any_change_leaves_a_healthy_group_alone() -> None:
    """A pending member id re-used with a group.instance.id is Kafka's IllegalStateException: -1, nothing reset."""
    h = Harness("S")
    a = h.fx_single()
    first = h.join().result()
    assert first.error_code == E.MEMBER_ID_REQUIRED
    refused = h.join(first.member_id, instance="i-1").result()
    assert refused.error_code == E.UNKNOWN_SERVER_ERROR
    assert h.group.state is S.STABLE and a in h.group.members and h.heartbeat(a, 1) == E.NONE
