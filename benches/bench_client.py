"""End-to-end rebalances of a 200-member group on the test clock: EAGER (range, sticky) vs COOPERATIVE
(cooperative-sticky), with the real coordinator, members, wire bytes and native assignors.

Timed (wall clock): the whole rebalance -- every JoinGroup / SyncGroup / Heartbeat, callbacks, the leader's
decode + assign + encode -- from the membership change until the group is stable again; the settled 200-member
group is built outside the timed region.  The note column gives what the simulated group went through
(simulated ms to stable, generations, partitions moved, member-ms with nothing owned, partition-ms without an
owner, longest partition pause).  There is no Python client that runs a whole group against a coordinator
in-process, so these rows have no peer; the leader's assignment step is compared with kafka-python 3.0.12's
assignors on the same JoinGroup bytes (their decode + assign + encode vs ours).
"""
from __future__ import annotations

import os
from types import SimpleNamespace

import pytest
from conftest import time_peer

from kafkagroup.bench.peers import KafkaPythonCluster
from kafkagroup.client.cluster import ClusterMetadata
from kafkagroup.client.leader import perform_assignment
from kafkagroup.client.rebalance_protocol import select_rebalance_protocol
from kafkagroup.sim.harness import GroupHarness
from kafkagroup.messages.api import JoinGroupResponseMember
from kafkagroup.protocol import Subscription, encode_subscription, sticky_user_data

MEMBERS = 200
TOPICS = {"events": 2_000, "audit": 400}            # 12 partitions per member
CONFIG = {"session.timeout.ms": 10_000, "heartbeat.interval.ms": 3_000, "max.poll.interval.ms": 60_000}
STRATEGIES = ["range", "sticky", "cooperative-sticky"]
CAP_S = float(os.environ.get("KAFKAGROUP_PEER_CAP_S", "60"))


def settled_group(strategy: str) -> GroupHarness:
    h = GroupHarness(TOPICS, coordinator_config={"group.initial.rebalance.delay.ms": 3_000},
                     member_config={**CONFIG, "partition.assignment.strategy": strategy},
                     network_latency_ms=1, poll_delay_ms=(5, 200), seed=1, check_every_ms=1_000)
    for _ in range(MEMBERS):
        h.add()
    assert h.settle() is not None
    h.ledger.reset_window()
    return h


def figures(h: GroupHarness, start_ms: int, start_gen: int, existing: set[str]) -> str:
    h.ledger.close_window()
    parts = h.ledger.partitions.values()
    stopped = [st.owned_nothing_ms for n, st in h.ledger.members.items() if n in existing and st.owned_nothing_ms]
    return (f"sim {h.clock.now_ms() - start_ms} ms to stable, {h.generation() - start_gen} gen, "
            f"moved {sum(p.moves for p in parts)}, {len(stopped)} of {len(existing)} members stopped "
            f"({sum(stopped) / 1000:,.1f} member-s), "
            f"unowned {sum(p.unowned_ms for p in parts) / 1000:,.1f} partition-s, "
            f"max pause {max(p.max_pause_ms for p in parts)} ms, violations {h.ledger.violation_count}")


def _run(benchmark, report, strategy: str, change: str) -> None:
    notes: list[str] = []

    def setup():
        return (settled_group(strategy),), {}

    def rebalance(h: GroupHarness) -> None:
        start, gen, existing = h.clock.now_ms(), h.generation(), {m.name for m in h.running}
        if change == "scale 200 -> 210":
            for _ in range(10):
                h.add()
        else:
            h.stop("member-7")
            h.remove("member-7")
        assert h.settle() is not None
        notes.append(figures(h, start, gen, existing - {"member-7"} if change.startswith("member leaves") else existing))

    benchmark.pedantic(rebalance, setup=setup, rounds=3, warmup_rounds=0)
    protocol = select_rebalance_protocol([strategy]).name
    benchmark.extra_info["simulated"] = notes[-1]
    report.add(f"client e2e: {change} ({strategy}, {protocol})", benchmark, "-", "n/a", CAP_S, notes[-1])


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_rebalance_200_members_scale_out(benchmark, report, strategy):
    _run(benchmark, report, strategy, "scale 200 -> 210")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_rebalance_200_members_one_leaves(benchmark, report, strategy):
    _run(benchmark, report, strategy, "member leaves 200 -> 199")


# -------------------------------------------------------------------- the leader's step vs kafka-python
def join_members(strategy: str, members: int = MEMBERS + 10):
    """JoinGroup member list: the first 200 members own a balanced share (as after a stable generation 5)."""
    owned: dict[str, list] = {f"consumer-{i:04d}": [] for i in range(members)}
    names = list(owned)
    k = 0
    for topic, n in TOPICS.items():
        for p in range(n):
            owned[names[k % MEMBERS]].append((topic, p))
            k += 1
    out = []
    for mid in names:
        from kafkagroup.structs import TopicPartition as TP

        tps = [TP(t, p) for t, p in owned[mid]]
        user = sticky_user_data(tps, 5) if strategy == "sticky" and tps else None
        if strategy == "cooperative-sticky":
            user = b"\x00\x00\x00\x05"
        sub = Subscription(sorted(TOPICS), user, tps, 5 if tps else -1)
        out.append(JoinGroupResponseMember(mid, None, encode_subscription(sub)))
    return out


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_leader_assignment_step_vs_kafka_python(benchmark, report, strategy):
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

    members = join_members(strategy)
    snapshot = ClusterMetadata(TOPICS).snapshot()
    protocol = select_rebalance_protocol([strategy])
    result = benchmark.pedantic(lambda: perform_assignment(strategy, members, snapshot, protocol),
                                rounds=10, warmup_rounds=1)
    assert len(result.assignments) == len(members)

    peer_cls = {"range": RangePartitionAssignor, "sticky": StickyPartitionAssignor,
                "cooperative-sticky": CooperativeStickyAssignor}[strategy]

    def peer():
        decoded = [SimpleNamespace(member_id=m.member_id, group_instance_id=None,
                                   metadata=ConsumerProtocolSubscription.decode(m.metadata)) for m in members]
        out = peer_cls().assign(KafkaPythonCluster(TOPICS), decoded)
        return {mid: a.encode() for mid, a in out.items()}

    peer_ms = time_peer(peer, rounds=1, cap_s=CAP_S)
    m = result.metrics
    report.add(f"client leader step: {len(members)} members x {sum(TOPICS.values())} partitions ({strategy})",
               benchmark, "kafka-python 3.0.12", peer_ms, CAP_S,
               f"decode+assign+encode; moved={m.moved} withheld={result.withheld} gap={m.balance_gap}")
