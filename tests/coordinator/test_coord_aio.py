"""The coordinator live on an asyncio loop.

The loop is a :class:`VirtualTimeLoop`: its time jumps to the next timer instead of waiting, so the
coordinator's real ``loop.call_at`` timers fire at exactly their deadlines, ``await advance(ms)`` lets a
known amount of loop time pass, and no test waits on wall time.
"""
from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Coroutine

import pytest

from coord_virtual_loop import VirtualTimeLoop
from kafkagroup.coordinator import (
    ErrorCode, GroupCoordinator, GroupState, HeartbeatRequest, JoinGroupRequest, ManualClock, NotReadyError,
    OffsetCommitRequest, OffsetFetchRequest, SyncGroupRequest,
)
from kafkagroup.coordinator.aio import AsyncGroupCoordinator

E = ErrorCode
CONFIG = {"group.initial.rebalance.delay.ms": 5, "group.min.session.timeout.ms": 1,
          "offsets.topic.num.partitions": 1}


def run(main: Coroutine[Any, Any, None]) -> None:
    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        runner.run(main)


async def advance(ms: int) -> None:
    """Let ``ms`` of (virtual) loop time pass; every timer due meanwhile fires in deadline order."""
    await asyncio.sleep(ms / 1000.0)


async def _join(coord: AsyncGroupCoordinator, **kw) -> tuple[str, asyncio.Task]:
    req = JoinGroupRequest("g", protocols=[("range", b"")], client_id="live", **kw)
    first = await coord.join_group(req)
    assert first.error_code == E.MEMBER_ID_REQUIRED
    return first.member_id, asyncio.ensure_future(coord.join_group(dataclasses.replace(req, member_id=first.member_id)))


def test_live_group_joins_syncs_heartbeats_and_expires(tmp_path) -> None:
    async def scenario() -> None:
        coord = AsyncGroupCoordinator.create(CONFIG, store=str(tmp_path / "live.db"), request_timeout_ms=5000)
        # generous session/rebalance timeouts except B's session, which the test lets expire
        a, a_join = await _join(coord, session_timeout_ms=3000, rebalance_timeout_ms=3000)
        b, b_join = await _join(coord, session_timeout_ms=300, rebalance_timeout_ms=3000)
        ra, rb = await asyncio.gather(a_join, b_join)      # the initial-delay timers fire on the loop
        assert ra.error_code == E.NONE and ra.generation_id == 1 and rb.leader == ra.leader == a
        follower_sync = asyncio.ensure_future(coord.sync_group(SyncGroupRequest("g", 1, b)))
        leader_sync = await coord.sync_group(SyncGroupRequest("g", 1, a, assignments=[(a, b"A"), (b, b"B")]))
        assert leader_sync.assignment == b"A" and (await follower_sync).assignment == b"B"
        group = coord.coordinator.group("g")
        assert group is not None and group.state is GroupState.STABLE
        commit = await coord.offset_commit(OffsetCommitRequest.of("g", {("t", 0): 7}, generation_id=1, member_id=a))
        assert commit.errors() == {("t", 0): E.NONE}

        # A keeps heartbeating, B goes silent: B's session timer (300 ms from now) removes it and the group
        # rebalances
        async def heartbeats() -> None:
            while True:
                await coord.heartbeat(HeartbeatRequest("g", group.generation_id, a))
                await advance(10)
        beating = asyncio.ensure_future(heartbeats())
        await advance(295)
        assert b in group.members and group.state is GroupState.STABLE
        await advance(10)
        assert b not in group.members
        assert a in group.members and group.state is GroupState.PREPARING_REBALANCE
        rejoin = await coord.join_group(JoinGroupRequest("g", a, protocols=[("range", b"")], session_timeout_ms=3000,
                                                         rebalance_timeout_ms=3000))
        assert (rejoin.error_code, rejoin.generation_id, rejoin.leader) == (E.NONE, 2, a)
        beating.cancel()
        await coord.close()

        # a new coordinator on the same file still has the acknowledged offset
        again = AsyncGroupCoordinator.create(CONFIG, store=str(tmp_path / "live.db"))
        fetched = await again.offset_fetch(OffsetFetchRequest.of("g", [("t", 0)]))
        assert fetched.offsets()[("t", 0)].committed_offset == 7
        await again.close()

    run(scenario())


def test_superseded_join_raises_instead_of_hanging() -> None:
    async def scenario() -> None:
        coord = AsyncGroupCoordinator.create({**CONFIG, "group.initial.rebalance.delay.ms": 50}, store=":memory:")
        m, first = await _join(coord, session_timeout_ms=1000)
        await asyncio.sleep(0)                              # one loop iteration: the first join is parked
        second = asyncio.ensure_future(coord.join_group(JoinGroupRequest(
            "g", m, protocols=[("range", b"")], session_timeout_ms=1000)))
        with pytest.raises(NotReadyError):
            await first
        assert (await second).generation_id == 1
        await coord.close()

    run(scenario())


def test_create_requires_an_explicit_store() -> None:
    async def scenario() -> None:
        with pytest.raises(TypeError, match="store"):
            AsyncGroupCoordinator.create(CONFIG)   # type: ignore[call-arg]

    run(scenario())


def test_async_driver_requires_a_loop_clock() -> None:
    with pytest.raises(TypeError):
        AsyncGroupCoordinator(GroupCoordinator(clock=ManualClock(), store=":memory:"))


def test_asyncio_clock_is_epoch_based_and_fires_timers() -> None:
    import time

    from kafkagroup.coordinator import AsyncioClock

    async def scenario() -> None:
        clock = AsyncioClock()
        now = clock.now_ms()
        assert abs(now - time.time() * 1000) < 60_000          # epoch ms (stored timestamps survive restarts)
        fired = asyncio.get_running_loop().create_future()
        clock.call_at(now + 5, lambda: fired.set_result(clock.now_ms()))
        assert await asyncio.wait_for(fired, 5) >= now + 5     # a callback never sees itself early

    run(scenario())
