"""The member's session guard (kafkagroup/client/session_guard.py): a member owns partitions only while an answer
proves that the coordinator restarted its session within the last session.timeout.ms, counted from the proving
request's *send* time; at R + S - 1 it reports them lost, resets its generation (keeping its member id) and
rejoins.

Scripted transport (the test answers every request, or does not): the exact deadline, what proves a session and
what does not, a long parked JoinGroup.  Real coordinator on a ManualClock: a member whose requests stop arriving
reports its partitions lost before the group hands them on, under both tie-breaks; a static instance fenced by
its crashed predecessor's JoinGroup stops owning at once (issue 10's two causes).
"""
from __future__ import annotations

import pytest

from churn_model import advance_timer_by_timer
from client_support import MockAssignor, heartbeat, join_error, join_ok, recording_member, sync_ok, tp
from kafkagroup.client import ClusterMetadata, GroupMember, MemberState, RebalanceProtocol
from kafkagroup.coordinator import GroupCoordinator
from kafkagroup.messages.clock import ManualClock
from kafkagroup.messages.error_codes import ErrorCode as E
from kafkagroup.protocol import decode_subscription

T1P = tp("test1", 0)
SESSION = 10_000        # the scripted fixture's session.timeout.ms (heartbeat.interval.ms 5,000 -> every 3,333 ms)


def _member(scripted, protocol="COOPERATIVE"):
    return scripted(strategy=[MockAssignor([RebalanceProtocol[protocol]])])


def _stable(member, transport, *, generation=1):
    """Join and sync answered at once, at the current time: the SyncGroup's send time is the proof."""
    member.poll()
    transport.answer("join_group", join_ok(generation, "m", "other-leader", "mock"))
    transport.answer("sync_group", sync_ok([T1P], "mock"))
    assert member.state is MemberState.STABLE and member.assignment == {T1P}


def _advance(clock, transport, ms, *, answer=None, step=100):
    """Advance ``ms`` in steps, answering every heartbeat sent with ``answer`` (None: never answered)."""
    for _ in range(ms // step):
        clock.advance(step)
        while answer is not None and transport.pending("heartbeat"):
            transport.answer("heartbeat", heartbeat(answer))


def test_lapses_exactly_one_ms_before_a_session_after_the_last_proof(scripted, clock):
    member, transport, rec = _member(scripted)
    _stable(member, transport)                          # SyncGroup sent and answered at 0
    clock.advance(SESSION - 2)                          # heartbeats go out, none is answered
    assert member.assignment == {T1P} and rec.lost == []
    clock.advance(1)                                    # 0 + S - 1
    assert rec.lost == [frozenset({T1P})] and member.assignment == frozenset()
    assert member.stats["session_lapses"] == 1
    # the member id is kept (the coordinator may still count it); the generation is reset; it rejoins at once
    assert member.generation.member_id == "m" and member.generation.generation_id == -1
    clock.advance(0)
    join = transport.pending("join_group")[-1].request
    subscription = decode_subscription(join.protocols[0][1])
    assert join.member_id == "m" and list(subscription.owned_partitions) == [] and subscription.generation_id == -1
    assert rec.revoked == []


def test_the_proof_is_the_send_time_not_the_answer_time(scripted, clock):
    member, transport, rec = _member(scripted)
    _stable(member, transport)
    clock.advance(3_333)                                # first heartbeat sent
    assert len(transport.pending("heartbeat")) == 1
    clock.advance(6_000)                                # answered late, at 9,333
    transport.answer("heartbeat", heartbeat(E.NONE))
    clock.advance(3_332 + SESSION - 1 - 9_333)          # up to 3,333 + S - 2
    assert rec.lost == []
    clock.advance(1)
    assert rec.lost == [frozenset({T1P})]


@pytest.mark.parametrize("code", [E.NONE, E.REBALANCE_IN_PROGRESS])
def test_answered_heartbeats_keep_the_partitions(scripted, clock, code):
    member, transport, rec = _member(scripted)
    _stable(member, transport)
    _advance(clock, transport, 120_000, answer=code)
    assert member.assignment == {T1P} and rec.lost == [] and member.stats["session_lapses"] == 0


@pytest.mark.parametrize("code", [E.ILLEGAL_GENERATION, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR])
def test_heartbeat_errors_prove_nothing(scripted, clock, code):
    member, transport, rec = _member(scripted)
    _stable(member, transport)
    member.request_rejoin()
    clock.advance(0)                                    # JoinGroup parked: 22 is left to its answer
    _advance(clock, transport, SESSION, answer=code)
    assert rec.lost == [frozenset({T1P})]


def test_a_long_parked_join_keeps_the_partitions_while_heartbeats_are_answered(scripted, clock):
    """A cooperative member waits in a rebalance far longer than its session: its JoinGroup is parked (the
    coordinator spares it), and its heartbeats, answered 27, prove the session meanwhile."""
    member, transport, rec = _member(scripted)
    _stable(member, transport)
    member.request_rejoin()
    clock.advance(0)
    assert member.state is MemberState.PREPARING_REBALANCE
    _advance(clock, transport, 60_000, answer=E.REBALANCE_IN_PROGRESS)   # 6 sessions (request timeout: 65 s)
    assert member.assignment == {T1P} and rec.lost == [] and len(transport.pending("join_group")) == 1
    transport.answer("join_group", join_ok(2, "m", "other-leader", "mock"))
    transport.answer("sync_group", sync_ok([T1P], "mock"))
    assert member.state is MemberState.STABLE and member.assignment == {T1P} and rec.lost == []


def test_an_eager_member_in_a_long_parked_join_sends_no_heartbeats(scripted, clock):
    """It revoked everything before joining: nothing to protect, so it behaves as Kafka's clients do."""
    member, transport, rec = _member(scripted, "EAGER")
    _stable(member, transport)
    member.request_rejoin()
    clock.advance(0)
    n = len(transport.requests("heartbeat"))
    _advance(clock, transport, 120_000, answer=E.REBALANCE_IN_PROGRESS)
    assert len(transport.requests("heartbeat")) == n and member.stats["session_lapses"] == 0
    assert rec.revoked == [frozenset({T1P})] and rec.lost == []


def test_a_silent_coordinator_during_a_parked_join_makes_the_member_lose_and_join_again(scripted, clock):
    member, transport, rec = _member(scripted)
    _stable(member, transport)                          # proof at 0
    member.request_rejoin()
    clock.advance(0)
    first_join = transport.pending("join_group")[0]
    clock.advance(SESSION - 1)
    assert rec.lost == [frozenset({T1P})]
    clock.advance(0)
    assert len(transport.pending("join_group")) == 2     # a new JoinGroup supersedes the parked one
    transport.sent.remove(first_join)                    # the superseded one is never answered; if it were,
    transport.answer("join_group", join_ok(2, "m", "other-leader", "mock"))   # the member id still matches
    transport.answer("sync_group", sync_ok([T1P], "mock"))
    assert member.assignment == {T1P} and rec.assigned[-1] == frozenset({T1P})


def test_a_repeated_join_in_the_same_generation_proves_nothing(scripted, clock):
    """A JoinGroup answered NONE restarted the session only if a join phase completed it; the coordinator
    answers a repeated JoinGroup with byte-identical metadata at once, restarting nothing (spec §3.5), and the
    metadata encodes the generation, so only the first JoinGroup carrying it is sure to have been parked."""
    member, transport, rec = _member(scripted)
    _stable(member, transport)                          # proof at 0
    clock.advance(5_000)
    member.request_rejoin()
    clock.advance(0)
    transport.answer("join_group", join_error(E.REBALANCE_IN_PROGRESS))   # retried at once: JoinGroup #2
    clock.advance(0)
    assert [r.member_id for r in transport.requests("join_group")] == ["", "m", "m"]
    transport.answer("join_group", join_ok(2, "m", "other-leader", "mock"))
    clock.advance(SESSION - 1 - 5_000 - 1)
    assert rec.lost == []
    clock.advance(1)                                    # 0 + S - 1: JoinGroup #2 proved nothing
    assert rec.lost == [frozenset({T1P})]


def test_the_first_join_of_a_generation_moves_the_deadline_to_its_send_time(scripted, clock):
    member, transport, rec = _member(scripted)
    _stable(member, transport)                          # proof at 0
    clock.advance(5_000)
    member.request_rejoin()
    clock.advance(0)                                    # JoinGroup of generation 1 sent at 5,000
    clock.advance(4_000)
    transport.answer("join_group", join_ok(2, "m", "other-leader", "mock"))   # answered at 9,000: proof 5,000
    clock.advance(5_000 + SESSION - 1 - 9_000 - 1)
    assert rec.lost == []                               # past 0 + S - 1
    clock.advance(1)                                    # 5,000 + S - 1 (the SyncGroup is never answered)
    assert rec.lost == [frozenset({T1P})]


# ------------------------------------------------------------------------------------ on the real coordinator
def _group(clock, names):
    coordinator = GroupCoordinator({"group.initial.rebalance.delay.ms": 0}, clock=clock, store=":memory:",
                                   enable_offset_expiration=False,
                                   member_id_factory=lambda prefix: f"{prefix}-{next(names)}")
    return coordinator, ClusterMetadata({"t": 4})


@pytest.mark.parametrize("tie_break", ["fifo", "lifo"])
def test_a_member_cut_off_loses_before_the_group_hands_its_partitions_on(tie_break):
    """A's requests stop arriving (a 100 s network delay).  B rejoins and waits parked for A, until the
    coordinator expires A's session at D = R + S; at that very instant, with zero latency, the join phase
    completes, B leads, syncs and is assigned A's partitions.  A's guard runs at R + S - 1, before all of that,
    whatever the order among timers due at D (under lifo the newest run first)."""
    clock = ManualClock(tie_break=tie_break)
    coordinator, cluster = _group(clock, iter(range(1, 100)))
    events = []

    def member(name):
        return recording_member(coordinator, clock, cluster, events, name, heartbeat_ms=500)

    a, b = member("A"), member("B")
    advance_timer_by_timer(clock, 10_000)
    held = a.assignment
    assert len(held) == 2 and len(b.assignment) == 2
    a.transport.latency_ms = 100_000
    b.request_rejoin()
    advance_timer_by_timer(clock, 10_000)
    lost = [i for i, e in enumerate(events) if e[1] == "A" and e[2] == "lost"]
    handed = [i for i, e in enumerate(events) if e[1] == "B" and e[2] == "assigned" and e[3] & held
              and e[0] > 10_000]
    assert lost and handed and lost[0] < handed[0]
    assert events[lost[0]][3] == held and events[lost[0]][0] < events[handed[0]][0]
    assert b.assignment == frozenset(tp("t", p) for p in range(4))


def test_a_static_instance_fenced_by_its_crashed_predecessor_stops_owning_at_once():
    """Issue 10's cause B: a crashed static process's JoinGroup, still in flight, reaches the coordinator after
    the restarted process joined, and takes the instance id over (a static replacement, as in Kafka).  The
    restarted process learns it from its next heartbeat (FENCED_INSTANCE_ID, fatal) and reports its partitions
    lost then -- long before the replacement's session lapses and the group hands them to X."""
    clock = ManualClock()
    coordinator, cluster = _group(clock, iter(range(1, 100)))
    events = []

    def member(name, instance=None, latency=0):
        def record(what):
            return lambda p: events.append((clock.now_ms(), name, what, frozenset(p)))
        config = {"group.id": "g", "partition.assignment.strategy": ["cooperative-sticky"],
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
        if instance:
            config["group.instance.id"] = instance
        m = GroupMember(coordinator, clock=clock, cluster=cluster, topics=["t"], name=name, client_id=name,
                        config=config, network_latency_ms=latency,
                        on_assign=record("assigned"), on_revoke=record("revoked"), on_lost=record("lost"))
        m.start()
        return m

    x = member("X")
    advance_timer_by_timer(clock, 5_000)
    old = member("s#1", "s", latency=2_500)
    advance_timer_by_timer(clock, 1)                    # its JoinGroup is on the wire
    old.crash()
    new = member("s#2", "s")
    advance_timer_by_timer(clock, 2_000)
    held = new.assignment
    assert held and new.alive
    advance_timer_by_timer(clock, 30_000)
    assert new.fatal_error is not None and new.fatal_error.code is E.FENCED_INSTANCE_ID
    fenced = [e for e in events if e[1] == "s#2" and e[2] == "lost"]
    assert [e[3] for e in fenced] == [held] and new.assignment == frozenset()
    held_at = max(e[0] for e in events if e[1] == "s#2" and e[2] == "assigned")
    handed = [e for e in events if e[1] == "X" and e[2] == "assigned" and e[3] & held and e[0] > held_at]
    assert handed and fenced[0][0] < handed[0][0]
    assert x.assignment == frozenset(tp("t", p) for p in range(4))
