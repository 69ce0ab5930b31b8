"""Consumer groups (KIP-848) at 10,000 members, in-process on the manual clock.

* join -> Stable: 10,000 members heartbeat in (epoch 0), the batched target (group.consumer.assignment.
  interval.ms, 1 s) is computed once, and every member heartbeats until it holds its target; peer: the
  classic coordinator's 10,000-member join -> Stable of the same topics in the same run (benches/
  bench_coordinator.py's path: JoinGroup x2, range assignment by the leader, SyncGroup).
* one member joins a Stable 10,000-member group: the heartbeat that computes the new target (the time it would
  hold serve's event loop without the offload; serve runs it on a worker thread) -- uniform and range, homogeneous
  subscriptions and 10 distinct ones.  Peer: Kafka's 461 ms for a heterogeneous 10,000-member group is issue 22's
  figure, not measured in this run (no JVM here); the table shows it as text.
* the longest stall of an asyncio loop (1 ms ticks) while that target is computed on the loop's executor, as
  serve does, next to computing it inline (same run; printed, and in the benchmark's extra_info).
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from kafkagroup.coordinator import GroupCoordinator, ManualClock
from kafkagroup.messages.consumer_api import ConsumerGroupHeartbeatRequest, TopicPartitions
from kafkagroup.messages.topics import StaticTopics

from bench_coordinator import TOPICS, _coordinator, _join_to_stable
from kafkagroup.protocol import Subscription, encode_subscription

MEMBERS = 10_000
NAMES = sorted(TOPICS)
CONFIG = {"group.consumer.session.timeout.ms": 3_600_000, "group.consumer.max.session.timeout.ms": 3_600_000,
          "offsets.topic.num.partitions": 1,
          "group.consumer.assignment.interval.ms": 1_000}   # Kafka's batching (serve's default is 0): one target


class Member:
    __slots__ = ("member_id", "topics", "epoch", "owned")

    def __init__(self, member_id: str, topics: tuple[str, ...]) -> None:
        self.member_id, self.topics, self.epoch, self.owned = member_id, topics, 0, []

    def heartbeat(self, coord: GroupCoordinator, assignor: str) -> None:
        first = self.epoch == 0
        r = coord.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
            "big", self.member_id, self.epoch, rebalance_timeout_ms=60_000 if first else -1,
            subscribed_topic_names=list(self.topics) if first else None, server_assignor=assignor if first else None,
            topic_partitions=[] if first else self.owned))
        assert r.error_code == 0, r
        self.epoch = r.member_epoch
        if r.assignment is not None:
            self.owned = [TopicPartitions(tp.topic_id, tp.partitions) for tp in r.assignment]


def subscriptions(kind: str) -> list[tuple[str, ...]]:
    if kind == "homogeneous":
        return [tuple(NAMES)] * MEMBERS
    return [tuple(NAMES[(i % 10):(i % 10) + 10]) for i in range(MEMBERS)]     # 10 distinct, overlapping


def consumer_coordinator(tmp: Path) -> tuple[GroupCoordinator, ManualClock]:
    clock = ManualClock()
    return GroupCoordinator(CONFIG, clock=clock, store=str(tmp), topics=StaticTopics(TOPICS),
                            enable_offset_expiration=False), clock


def join_to_stable(coord: GroupCoordinator, clock: ManualClock, subs: list[tuple[str, ...]],
                   assignor: str) -> list[Member]:
    members = [Member(f"member-{i:05d}", s) for i, s in enumerate(subs)]
    for m in members:
        m.heartbeat(coord, assignor)
    clock.advance(1_000)                     # the assignment interval: one target for the 10,000 joins
    for _ in range(3):                       # revoke (the first member held everything), then assign
        for m in members:
            m.heartbeat(coord, assignor)
    return members


@pytest.mark.parametrize("kind", ["homogeneous", "heterogeneous"])
def test_consumer_group_10k_join_to_stable(benchmark, report, tmp_path: Path, kind: str) -> None:
    subs = subscriptions(kind)
    counter = iter(range(1_000))

    def setup():
        coord, clock = consumer_coordinator(tmp_path / f"kip848-{next(counter)}.db")
        return (coord, clock, subs, "uniform"), {}

    benchmark.pedantic(join_to_stable, setup=setup, rounds=2, iterations=1)
    coord, clock = consumer_coordinator(tmp_path / "check.db")
    join_to_stable(coord, clock, subs, "uniform")
    assert coord.consumer_group("big").state_name == "Stable"
    peer_times = []
    for i in range(2):
        classic, classic_clock = _coordinator(tmp_path / f"classic-{kind}-{i}.db")
        start = time.perf_counter()
        _join_to_stable(classic, classic_clock, encode_subscription(Subscription(NAMES)))
        peer_times.append((time.perf_counter() - start) * 1000)
    report.add(f"KIP-848: 10k members join -> Stable ({kind}, uniform)", benchmark,
               "classic join (same run)", sorted(peer_times)[0], 0,
               "10k joins, one batched target, 30k reconciling heartbeats, offsets store on disk")


@pytest.mark.parametrize("assignor", ["uniform", "range"])
@pytest.mark.parametrize("kind", ["homogeneous", "heterogeneous"])
def test_target_after_one_join_in_a_10k_group(benchmark, report, tmp_path: Path, kind: str, assignor: str) -> None:
    coord, clock = consumer_coordinator(tmp_path / "one-join.db")
    members = join_to_stable(coord, clock, subscriptions(kind), assignor)
    counter = iter(range(1_000))

    def setup():
        newcomer = Member(f"new-{next(counter)}", members[0].topics)
        newcomer.heartbeat(coord, assignor)          # bumps the group epoch; the target waits for the interval
        clock.advance(1_000)
        return (coord, assignor), {}

    benchmark.pedantic(members[1].heartbeat, setup=setup, rounds=5, iterations=1)
    assert coord.consumer_group("big").assignment_epoch == coord.consumer_group("big").group_epoch
    report.add(f"KIP-848: new target after one join, 10k members ({kind}, {assignor})", benchmark,
               "Kafka 4.4 (issue 22, not this run)", "461 ms heterogeneous", 0,
               "the heartbeat that computes it; serve offloads it to a worker thread")


def _loop_stall(offload: bool) -> float:
    """The longest gap between 1 ms ticks of an asyncio loop while a 10,000-member group's new target (one
    member joined) is computed inline, or on the loop's executor as serve does (seconds)."""
    import asyncio

    from kafkagroup.coordinator.consumer.target import compute_target
    from kafkagroup.messages.topics import topic_id_for

    topics = {name: (topic_id_for(name), count) for name, count in TOPICS.items()}
    members = {f"m{i:05d}": (tuple(NAMES), None, None) for i in range(MEMBERS)}
    previous = compute_target("uniform", topics, members, {})
    members["new"] = (tuple(NAMES), None, None)

    async def run() -> float:
        gaps: list[float] = []
        done = False

        async def ticker() -> None:
            last = time.perf_counter()
            while not done:
                await asyncio.sleep(0.001)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0.02)
        gaps.clear()
        if offload:
            await asyncio.get_running_loop().run_in_executor(None, compute_target, "uniform", topics, members,
                                                             previous)
        else:
            compute_target("uniform", topics, members, previous)
        await asyncio.sleep(0.005)
        done = True
        await task
        return max(gaps)

    return asyncio.run(run())


def test_event_loop_stall_while_a_10k_target_is_computed(benchmark) -> None:
    """The benchmark times whole loop runs (offloaded); the figures are the stalls, in extra_info and printed:
    the median longest stall offloaded next to inline in the same run."""
    benchmark.pedantic(_loop_stall, args=(True,), rounds=3, iterations=1)
    inline = sorted(_loop_stall(False) for _ in range(5))[2] * 1000
    offloaded = sorted(_loop_stall(True) for _ in range(5))[2] * 1000
    benchmark.extra_info.update(offloaded_stall_ms=round(offloaded, 1), inline_stall_ms=round(inline, 1))
    print(f"\nlongest event-loop stall while a 10k-member target is computed: offloaded {offloaded:.1f} ms, "
          f"inline {inline:.1f} ms (median of 5 each, same run)")
