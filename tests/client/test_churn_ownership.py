"""Exclusive ownership under churn: the KIP-429 promise (cooperative) and the eager protocol's, judged only by
the members' rebalance callbacks (model and assumptions: churn_model.py).

Every seed runs the real coordinator, members and assignor through joins, clean leaves, crashes, static
restarts, subscription changes, added partitions, rejoin requests, network latency and poll delays.  It fails
at the first partition assigned while another member owns it, and after every quiet period unless each
subscribed partition has exactly one owner.  The in-suite run is small; more with
``KAFKAGROUP_CHURN_SEEDS=200 KAFKAGROUP_CHURN_STEPS=400``.

Each seed runs twice: with the clock moved timer by timer, and in coarse steps of up to 5 s as issue 10's repro
moves it (every network hop then takes up to a whole step, and the coordinator expires members whose answers are
merely late; the members' session guard must report their partitions lost first).

Also here: the property has teeth (an assignor that does not withhold, a member that does not revoke, a member
without its session guard under the coarse clock: all caught), and the interleaving behind issue 10's incidents,
pinned down: a member whose session expires while its requests are slow reports its partitions *lost* before the
coordinator hands them on.
"""
from __future__ import annotations

import os

import pytest

from churn_model import ChurnFailure, advance_timer_by_timer, run_churn
from client_support import recording_member
from kafkagroup.client import ClusterMetadata, GroupMember, MemberState
from kafkagroup.coordinator import GroupCoordinator
from kafkagroup.messages.clock import ManualClock

SEEDS = int(os.environ.get("KAFKAGROUP_CHURN_SEEDS", "8"))
STEPS = int(os.environ.get("KAFKAGROUP_CHURN_STEPS", "240"))


@pytest.mark.parametrize("clock_mode", ["timer", "coarse"])
@pytest.mark.parametrize("membership", ["dynamic", "static"])
@pytest.mark.parametrize("strategy", ["cooperative-sticky", "range"])
@pytest.mark.parametrize("seed", range(SEEDS))
def test_one_owner_per_partition_under_churn(strategy, membership, seed, clock_mode):
    """Both clock modes: timer by timer (the session guard never fires), and coarse 0-5 s steps as in issue 10's
    repro (the guard fires, and no partition is ever owned twice nor lost in a settled quiet period)."""
    stats = run_churn(seed, STEPS, strategy, membership, clock_mode)
    assert stats.quiet_checks == STEPS // 60
    assert stats.assigned > 0 and sum(stats.actions.values()) > STEPS // 10


# --------------------------------------------------------------------------------- the property has teeth
def _first_failure(strategy: str, seeds: int = 20, steps: int = 200, clock_mode: str = "timer") -> str:
    for seed in range(seeds):
        try:
            run_churn(seed, steps, strategy, "dynamic", clock_mode)
        except ChurnFailure as failure:
            return str(failure)
    return ""


def test_catches_a_cooperative_assignor_that_does_not_withhold(monkeypatch):
    """cooperative-sticky computed as plain sticky: a moved partition goes to its new owner in the same round
    its old owner revokes it."""
    import kafkagroup.engine as engine

    real = engine.assign_arrays
    monkeypatch.setattr(engine, "assign_arrays", lambda strategy, *a, **kw: real(
        "sticky" if strategy == "cooperative-sticky" else strategy, *a, **kw))
    message = _first_failure("cooperative-sticky")
    assert "assigned to" in message and "still own it" in message and message.startswith("seed ")


def test_catches_an_eager_member_that_does_not_revoke_before_joining(monkeypatch):
    from kafkagroup.client.rebalance_protocol import RebalanceProtocol

    real = GroupMember._on_join_prepare

    def keep_everything(self):
        if self.rebalance_protocol is RebalanceProtocol.EAGER and not self.generation.is_reset:
            self.is_leader = False
            self.assignment_snapshot = None
            return
        real(self)

    monkeypatch.setattr(GroupMember, "_on_join_prepare", keep_everything)
    assert "still own it" in _first_failure("range")


def test_catches_a_member_without_its_session_guard_under_the_coarse_clock(monkeypatch):
    """Issue 10's incidents: with the guard's check disabled, a member expelled while its answers are late keeps
    owning partitions the group has handed on."""
    monkeypatch.setattr(GroupMember, "_session_check", lambda self: self._timers.fired("session"))
    message = _first_failure("cooperative-sticky", clock_mode="coarse")
    assert "still own it" in message and "coarse clock" in message


# ------------------------------------------------------------------- issue 10: the zombie, pinned down
def test_member_expelled_while_its_requests_are_slow_reports_lost_before_the_handover():
    """Issue 10's repro moved its ManualClock in steps of up to 5 s, and a ManualClock runs every due timer at
    the end of the step, so each network hop of a member took up to 5 s.  The interleaving that produced,
    replayed with an explicit 2.5 s latency: N joins, L rejoins slowly, and its JoinGroup answer (which
    restarted its session) is still on its way when M starts another rebalance; L's SyncGroup then meets
    PreparingRebalance (answered 27, no session restart), its next heartbeat is too late, the coordinator
    expires it and hands its two partitions to M and N.  Kafka documents this case for onPartitionsLost ("if
    the session times out, then the partitions may be reassigned before we have a chance to revoke them") and
    Java's consumer leaves L owning them until it hears UNKNOWN_MEMBER_ID.  L's session guard reports them lost
    as soon as no answer proves its session for session.timeout.ms -- before the coordinator can expire it, so
    before M and N get them -- and never revoked."""
    clock = ManualClock()
    names = iter(range(1, 100))
    coordinator = GroupCoordinator({"group.initial.rebalance.delay.ms": 0}, clock=clock, store=":memory:",
                                   enable_offset_expiration=False,
                                   member_id_factory=lambda prefix: f"{prefix}-{next(names)}")
    cluster = ClusterMetadata({"t": 4})
    events: list[tuple[int, str, str, frozenset]] = []

    def member(name: str) -> GroupMember:
        return recording_member(coordinator, clock, cluster, events, name, heartbeat_ms=3000)

    leader = member("L")
    member("F")
    advance_timer_by_timer(clock, 20_000)
    held = leader.assignment
    assert len(held) == 2 and leader.is_leader

    leader.transport.latency_ms = 2500
    member("N")
    advance_timer_by_timer(clock, 9000)
    assert leader.state is MemberState.PREPARING_REBALANCE        # its JoinGroup answer is on its way
    member("M")
    advance_timer_by_timer(clock, 5500)
    group = coordinator.group("g")
    assert leader.member_id not in group.members                  # expired at 34,500 ms
    handed = [(t, i) for i, (t, who, what, parts) in enumerate(events)
              if what == "assigned" and who in "MN" and parts & held]
    assert {tp for _, who, what, parts in events if what == "assigned" and who in "MN" for tp in parts} == held
    lost = [(t, i, parts) for i, (t, who, what, parts) in enumerate(events) if who == "L" and what != "assigned"]
    assert [(parts, ) for _, _, parts in lost] == [(held, )] and leader.stats["session_lapses"] == 1
    assert lost[0][:2] < min(handed)                              # reported lost before anyone got them
    assert leader.assignment == frozenset()

    advance_timer_by_timer(clock, 5000)
    assert [(what, parts) for _, who, what, parts in events if who == "L" and what != "assigned"] == [("lost", held)]
