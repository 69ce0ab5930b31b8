"""The same member objects run live on an asyncio loop (AsyncioClock): no test clock, real timers.

Nothing here asserts on wall time; the only timing is a generous guard so a regression cannot hang the suite.
"""
from __future__ import annotations

import asyncio

from kafkagroup.client import ClusterMetadata, GroupMember, MemberState
from kafkagroup.coordinator import AsyncioClock, GroupCoordinator


def test_group_forms_live_on_asyncio():
    async def main() -> None:
        clock = AsyncioClock()
        coordinator = GroupCoordinator({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 10},
                                       clock=clock, store=":memory:", enable_offset_expiration=False)
        cluster = ClusterMetadata({"t": 6})
        done = asyncio.Event()
        members: list[GroupMember] = []

        def check(*_: object) -> None:
            g = coordinator.group("live")
            owned = [tp for m in members for tp in m.assignment]
            if (len(members) == 3 and g is not None and str(g.state) == "Stable"
                    and all(m.state is MemberState.STABLE and m.generation.generation_id == g.generation_id
                            and not m.rejoin_pending for m in members)
                    and len(owned) == len(set(owned)) == 6):
                done.set()

        for i in range(3):
            m = GroupMember(coordinator, clock=clock, cluster=cluster, topics=["t"], name=f"m{i}",
                            config={"group.id": "live", "partition.assignment.strategy": "cooperative-sticky",
                                    "session.timeout.ms": 5_000, "heartbeat.interval.ms": 50},
                            on_assign=check)
            m.observer = check
            members.append(m)
        for m in members:
            m.start()
        await asyncio.wait_for(done.wait(), timeout=30)
        assert sorted(len(m.assignment) for m in members) == [2, 2, 2]
        for m in members:
            m.close()

    asyncio.run(main())
