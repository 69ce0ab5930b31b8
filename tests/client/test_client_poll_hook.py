"""GroupMember's next_poll_ms hook: an application with its own poll timeline decides when each needed poll
happens (the simulator's poll loop uses it); without it, poll_delay_ms does."""
from __future__ import annotations

from kafkagroup.client.cluster import ClusterMetadata
from kafkagroup.client.member import GroupMember, MemberState
from kafkagroup.coordinator import GroupCoordinator
from kafkagroup.messages.clock import ManualClock


def _member(clock: ManualClock, coordinator: GroupCoordinator, **kw) -> GroupMember:
    return GroupMember(coordinator, clock=clock, cluster=ClusterMetadata({"t": 4}), topics=["t"],
                       config={"group.id": "g", "session.timeout.ms": 10_000, "heartbeat.interval.ms": 1_000},
                       **kw)


def test_each_needed_poll_waits_for_the_applications_next_poll() -> None:
    clock = ManualClock()
    coordinator = GroupCoordinator(clock=clock, store=":memory:", group_initial_rebalance_delay_ms=0)
    asked: list[int] = []

    def next_poll_ms() -> int:
        """Owning partitions, the application polls at every multiple of 700 ms (it processes a batch in
        between); owning nothing, it waits inside poll() and acts at once -- as the simulator's poll loop."""
        asked.append(clock.now_ms())
        if not a.assignment and clock.now_ms() > 0:
            return 0
        return 700 - clock.now_ms() % 700

    a = _member(clock, coordinator, next_poll_ms=next_poll_ms, poll_delay_ms=5)
    joins: list[int] = []
    send = a.transport.join_group
    a.transport.join_group = lambda req, cb: (joins.append(clock.now_ms()), send(req, cb))  # type: ignore[method-assign]
    a.start()
    clock.advance(699)
    assert joins == [] and asked == [0]        # started at 0 inside a batch: the first poll is at 700
    clock.advance(1)
    assert joins == [700, 700]                 # MEMBER_ID_REQUIRED; owning nothing, it joins again at once
    clock.advance(100)
    assert a.state is MemberState.STABLE and len(a.assignment) == 4
    b = _member(clock, coordinator)
    b.start()                                  # the coordinator starts a rebalance; A hears of it by heartbeat
    for _ in range(3_000):                     # 1 ms steps: every timer runs at its own deadline
        clock.advance(1)
    heard = next(t for t in asked if t > 800)  # when A asked for a poll to rejoin
    assert joins[2:] == [heard + 700 - heard % 700]   # ... and rejoined at its application's next poll
    assert a.state is b.state is MemberState.STABLE and a.generation.generation_id == 2
    assert len(a.assignment) == len(b.assignment) == 2


def test_without_the_hook_poll_delay_ms_applies() -> None:
    clock = ManualClock()
    coordinator = GroupCoordinator(clock=clock, store=":memory:", group_initial_rebalance_delay_ms=0)
    a = _member(clock, coordinator, poll_delay_ms=250)
    joins: list[int] = []
    send = a.transport.join_group
    a.transport.join_group = lambda req, cb: (joins.append(clock.now_ms()), send(req, cb))  # type: ignore[method-assign]
    a.start()
    clock.advance(0)
    assert joins == [0, 0]                      # start and the MEMBER_ID_REQUIRED retry: at once
    for _ in range(100):
        clock.advance(1)
    b = _member(clock, coordinator, poll_delay_ms=250)
    b.start()
    for _ in range(3_000):
        clock.advance(1)
    heartbeat = a.stats["heartbeats_sent"]
    assert heartbeat >= 1 and len(joins) == 3
    assert joins[2] % 1_000 == 250              # heartbeats at whole seconds; a requested rejoin waits 250 ms
