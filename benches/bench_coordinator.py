"""Coordinator throughput: a 10,000-member group joining to Stable, heartbeats/s, offset commits/s into SQLite.

All in-process on the manual clock (time advances only where the protocol waits: the initial rebalance
delay), the store a SQLite file on disk in WAL mode with ``synchronous=FULL`` (every acknowledged write
fsync'ed).  Targets from the task: join to Stable <= 1 s, >= 100k heartbeats/s, >= 50k committed
partitions/s.  There is no Python group coordinator to compare against (kafka-python and aiokafka are
clients only), so the table shows the targets in the peer column.

The join round includes the leader's work as a consumer leader does it: decode every member's
Subscription bytes, run the range assignor of the native engine, encode every Assignment, then SyncGroup --
once through the public ``kafkagroup.assign`` dict API, once through the bulk codec that
``kafkagroup.client``'s leader uses (``decode_group`` -> ``assign_arrays`` -> ``encode_assignments``).
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

import kafkagroup
from kafkagroup.coordinator import (
    ErrorCode, GroupCoordinator, GroupState, GroupStore, HeartbeatRequest, JoinGroupRequest, ManualClock, OffsetCommitRequest,
    OffsetCommitRequestPartition, OffsetCommitRequestTopic, SyncGroupRequest,
)
from kafkagroup.protocol import (
    Assignment, Subscription, decode_assignment, decode_subscription, encode_assignment, encode_subscription,
)
from kafkagroup.protocol.leader import decode_group, encode_assignments

MEMBERS = 10_000
TOPICS = {f"topic-{i:02d}": 1_000 for i in range(20)}          # 20k partitions, two per member
DELAY_MS = 3_000
CONFIG = {"group.initial.rebalance.delay.ms": DELAY_MS, "offsets.topic.num.partitions": 1}


def _coordinator(path: Path) -> tuple[GroupCoordinator, ManualClock]:
    clock = ManualClock()
    return GroupCoordinator(CONFIG, clock=clock, store=str(path), enable_offset_expiration=False), clock


def leader_via_assign(members) -> list[tuple[str, bytes]]:
    """A leader using the public dict API: decode each Subscription, ``kafkagroup.assign``, encode each
    Assignment (per-member Python objects)."""
    subscriptions = {m.member_id: decode_subscription(m.metadata) for m in members}
    result = kafkagroup.assign("range", TOPICS, subscriptions)
    return [(member_id, encode_assignment(Assignment(tps))) for member_id, tps in result.assignment.items()]


def leader_via_bulk_codec(members) -> list[tuple[str, bytes]]:
    """The leader path of ``kafkagroup.client``: bytes -> engine arrays -> ``assign_arrays`` -> bytes."""
    group = decode_group([(m.member_id, m.group_instance_id, m.metadata) for m in members], TOPICS, assignor="range")
    result = kafkagroup.assign_arrays("range", **group.arrays())
    return list(encode_assignments(group, result.owner).items())


LEADERS = {"assign": leader_via_assign, "bulk-codec": leader_via_bulk_codec}


def _join_to_stable(coord: GroupCoordinator, clock: ManualClock, metadata: bytes,
                    leader_fn=leader_via_bulk_codec) -> GroupCoordinator:
    protocols = [("range", metadata)]
    first = [coord.join_group(JoinGroupRequest("big", protocols=protocols, session_timeout_ms=30_000,
                                               rebalance_timeout_ms=60_000, client_id="c")).result()
             for _ in range(MEMBERS)]
    replies = [coord.join_group(JoinGroupRequest("big", r.member_id, protocols=protocols, session_timeout_ms=30_000,
                                                 rebalance_timeout_ms=60_000, client_id="c")) for r in first]
    clock.advance(DELAY_MS)          # initial delay, extended once: members joined during it
    clock.advance(DELAY_MS)
    joined = [r.result() for r in replies]
    leader = next(r for r in joined if r.members)
    followers = [coord.sync_group(SyncGroupRequest("big", r.generation_id, r.member_id))
                 for r in joined if r.member_id != leader.member_id]
    done = coord.sync_group(SyncGroupRequest("big", leader.generation_id, leader.member_id,
                                             assignments=leader_fn(leader.members)))
    assert done.result().error_code == ErrorCode.NONE
    assert all(f.result().error_code == ErrorCode.NONE for f in followers)
    return coord


@pytest.mark.parametrize("leader", sorted(LEADERS))
def test_join_10k_members_to_stable(benchmark, report, tmp_path: Path, leader: str) -> None:
    metadata = encode_subscription(Subscription(sorted(TOPICS)))
    counter = iter(range(1_000_000))

    def setup():
        coord, clock = _coordinator(tmp_path / f"join-{next(counter)}.db")
        return (coord, clock, metadata, LEADERS[leader]), {}

    coord = benchmark.pedantic(_join_to_stable, setup=setup, rounds=3, iterations=1)
    group = coord.group("big")
    assert group is not None and group.state is GroupState.STABLE and len(group.members) == MEMBERS
    assigned = sum(len(decode_assignment(m.assignment).partitions) for m in group.members.values())
    assert assigned == sum(TOPICS.values())
    report.add(f"coordinator: 10k members join -> Stable, leader {leader}", benchmark, "target", "<= 1000 ms",
               0, "20k joins, initial delay, range assignment, 10k SyncGroup, group row fsync'ed")


@pytest.fixture(scope="module")
def stable_group(tmp_path_factory) -> tuple[GroupCoordinator, list[str], int]:
    coord, clock = _coordinator(tmp_path_factory.mktemp("hb") / "hb.db")
    _join_to_stable(coord, clock, encode_subscription(Subscription(sorted(TOPICS))))
    group = coord.group("big")
    assert group is not None
    return coord, list(group.members), group.generation_id


def test_heartbeats_per_second(benchmark, report, stable_group) -> None:
    coord, members, generation = stable_group
    requests = [HeartbeatRequest("big", generation, m) for m in members] * 10     # 100k heartbeats
    heartbeat = coord.heartbeat

    def run() -> None:
        for req in requests:
            heartbeat(req)

    benchmark.pedantic(run, rounds=5, iterations=1)
    assert all(heartbeat(r).error_code == ErrorCode.NONE for r in requests[:100])
    rate = len(requests) / benchmark.stats.stats.median
    benchmark.extra_info["heartbeats_per_s"] = round(rate)
    report.add(f"coordinator: {len(requests):,} heartbeats ({rate / 1000:,.0f}k/s)", benchmark, "target",
               ">= 100k/s", 0, "10k-member Stable group, session restart per heartbeat")


@pytest.mark.parametrize(("per_request", "synchronous"), [(1_000, "FULL"), (100, "FULL"), (100, "NORMAL")])
def test_offset_commits_partitions_per_second(benchmark, report, tmp_path: Path, per_request: int,
                                              synchronous: str) -> None:
    """One transaction per OffsetCommit request; FULL fsyncs the WAL at every commit (an acknowledged
    offset survives power loss), NORMAL only at checkpoints (it survives a process crash)."""
    store = GroupStore(str(tmp_path / f"commit-{per_request}-{synchronous}.db"), synchronous=synchronous)
    coord = GroupCoordinator(CONFIG, clock=ManualClock(), store=store, enable_offset_expiration=False)
    total = 50_000
    topics = [f"t{i}" for i in range(total // per_request)]
    requests = [OffsetCommitRequest("manual", topics=[OffsetCommitRequestTopic(
        t, [OffsetCommitRequestPartition(p, 1000 + p, 3, "") for p in range(per_request)])]) for t in topics]
    commit = coord.offset_commit

    def run() -> None:
        for req in requests:
            commit(req)

    benchmark.pedantic(run, rounds=3, iterations=1)
    assert all(code == ErrorCode.NONE for code in commit(requests[0]).errors().values())
    rate = total / benchmark.stats.stats.median
    benchmark.extra_info["partitions_per_s"] = round(rate)
    report.add(f"coordinator: commit 50k partitions, {per_request}/request, {synchronous} ({rate / 1000:,.0f}k/s)",
               benchmark, "target", ">= 50k/s", 0, f"SQLite file, WAL, synchronous={synchronous}")
    store.close()
