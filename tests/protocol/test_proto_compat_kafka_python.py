"""kafkagroup.compat.kafka_python, driven the way kafka-python 3.0.12's ConsumerCoordinator drives an
assignor: metadata() -> JoinGroup bytes; leader decodes them into JoinGroupResponseMembers and calls
assign(ClusterMetadata, members); every assignment is encoded for SyncGroup, decoded by its member and
passed to on_assignment(assignment, generation)."""
from __future__ import annotations

import pytest

import kafka  # the test extra installs it; a missing client must fail, not skip

from kafka.cluster import ClusterMetadata  # noqa: E402
from kafka.coordinator.assignors.range import RangePartitionAssignor  # noqa: E402
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor  # noqa: E402
from kafka.protocol.consumer.group import JoinGroupResponse  # noqa: E402
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription  # noqa: E402
from kafka.protocol.metadata import MetadataResponse  # noqa: E402

from kafkagroup.compat.kafka_python import (  # noqa: E402
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
)
from kafkagroup.protocol import (  # noqa: E402
    Subscription,
    decode_subscription,
    encode_subscription,
    sticky_user_data,
)
from kafkagroup.structs import TopicPartition  # noqa: E402


def cluster(partitions: dict[str, int]) -> ClusterMetadata:
    """A kafka-python ClusterMetadata filled from a MetadataResponse, as the client fills it."""
    topic, part = MetadataResponse.MetadataResponseTopic, MetadataResponse.MetadataResponseTopic.MetadataResponsePartition
    broker = MetadataResponse.MetadataResponseBroker(version=1, node_id=0, host="localhost", port=9092, rack=None)
    response = MetadataResponse(version=1, brokers=[broker], controller_id=0, topics=[
        topic(version=1, error_code=0, name=name, is_internal=False, partitions=[
            part(version=1, error_code=0, partition_index=p, leader_id=0, replica_nodes=[0], isr_nodes=[0])
            for p in range(count)])
        for name, count in partitions.items()])
    metadata = ClusterMetadata()
    metadata.update_metadata(response)
    return metadata


def rebalance(assignors: dict[str, object], topics: dict[str, list[str]], partitions: dict[str, int],
              generation: int, instances: dict[str, str] | None = None) -> dict[str, list[TopicPartition]]:
    """One JoinGroup/SyncGroup round; the first member leads. Returns each member's assignment."""
    instances = instances or {}
    Member = JoinGroupResponse.JoinGroupResponseMember
    joined = [Member(version=5, member_id=m, group_instance_id=instances.get(m),
                     metadata=a.metadata(set(topics[m])).encode()) for m, a in assignors.items()]
    for member in joined:  # ConsumerCoordinator._perform_assignment
        member.metadata = ConsumerProtocolSubscription.decode(member.metadata)
    leader = next(iter(assignors.values()))
    sync = {m: a.encode() for m, a in leader.assign(cluster(partitions), joined).items()}
    out = {}
    for member_id, assignor in assignors.items():  # _on_join_complete on every member
        assignment = ConsumerProtocolAssignment.decode(sync[member_id])
        assignor.on_assignment(assignment, generation)
        out[member_id] = assignment.partitions()
    return out


def tps(*pairs):
    return [TopicPartition(t, p) for t, p in pairs]


def test_metadata_bytes_are_java_subscriptions():
    rr = RoundRobinAssignor(client_rack="r1")
    assert rr.metadata({"foo", "bar"}).encode() == encode_subscription(
        Subscription(["bar", "foo"], rack_id="r1"), 3)
    sticky = StickyAssignor()
    assert sticky.metadata({"t"}).user_data is None  # Java sends null before the first assignment
    sticky.on_assignment(ConsumerProtocolAssignment(version=3, assigned_partitions=[("t", [0, 2])], user_data=None), 5)
    sub = decode_subscription(sticky.metadata({"t"}).encode())
    assert sub.user_data == sticky_user_data(tps(("t", 0), ("t", 2)), 5) and sub.generation_id == 5
    assert sub.owned_partitions == ()  # eager: everything is revoked before JoinGroup
    coop = CooperativeStickyAssignor()
    coop.on_assignment(ConsumerProtocolAssignment(version=3, assigned_partitions=[("t", [1])], user_data=None), 7)
    sub = decode_subscription(coop.metadata({"t"}).encode())
    assert sub.user_data == (7).to_bytes(4, "big") and sub.owned_partitions == tuple(tps(("t", 1)))
    assert sub.generation_id == 7


def test_range_and_roundrobin_are_javas():
    parts = {"t0": 3, "t1": 3}
    subs = {"C0": ["t0", "t1"], "C1": ["t0", "t1"]}
    assert rebalance({m: RangeAssignor() for m in subs}, subs, parts, 1) == {
        "C0": tps(("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)), "C1": tps(("t0", 2), ("t1", 2))}
    assert rebalance({m: RoundRobinAssignor() for m in subs}, subs, parts, 1) == {
        "C0": tps(("t0", 0), ("t0", 2), ("t1", 1)), "C1": tps(("t0", 1), ("t1", 0), ("t1", 2))}


def test_roundrobin_with_different_subscriptions_regression():
    # kafka-python 3.0.12's RoundRobinPartitionAssignor raises KeyError here.
    subs = {"C0": ["t0"], "C1": ["t0", "t1"]}
    parts = {"t0": 3, "t1": 2}
    with pytest.raises(KeyError):
        rebalance({m: RoundRobinPartitionAssignor() for m in subs}, subs, parts, 1)
    assert rebalance({m: RoundRobinAssignor() for m in subs}, subs, parts, 1) == {
        "C0": tps(("t0", 0), ("t0", 2)), "C1": tps(("t0", 1), ("t1", 0), ("t1", 1))}


@pytest.mark.parametrize("ours, theirs", [(RangeAssignor, RangePartitionAssignor),
                                          (RoundRobinAssignor, RoundRobinPartitionAssignor)])
def test_static_and_dynamic_members_interleaved_regression(ours, theirs):
    # [static a, dynamic b, static c] on one 3-partition topic: Java orders static members first (by
    # group.instance.id), then dynamic ones, and gives everyone one partition; kafka-python 3.0.12 gives
    # member a nothing.
    subs = {"a": ["t0"], "b": ["t0"], "c": ["t0"]}
    instances = {"a": "ia", "c": "ic"}
    theirs_out = rebalance({m: theirs() for m in subs}, subs, {"t0": 3}, 1, instances)
    assert theirs_out["a"] == []
    assert rebalance({m: ours() for m in subs}, subs, {"t0": 3}, 1, instances) == {
        "a": tps(("t0", 0)), "b": tps(("t0", 2)), "c": tps(("t0", 1))}


def test_sticky_keeps_partitions_across_rebalances():
    parts = {"t0": 4, "t1": 2}
    group = {m: StickyAssignor() for m in ("C0", "C1", "C2")}
    subs = {m: ["t0", "t1"] for m in group}
    first = rebalance(group, subs, parts, 1)
    assert sorted(tp for a in first.values() for tp in a) == sorted(tps(*[(t, p) for t, n in parts.items() for p in range(n)]))
    del group["C2"]  # C2 leaves: the survivors keep everything they had
    second = rebalance(group, subs, parts, 2)
    for member in group:
        assert set(first[member]) <= set(second[member])
    assert {len(a) for a in second.values()} == {3}


def test_cooperative_sticky_withholds_then_completes():
    parts = {"t0": 4}
    group = {"C0": CooperativeStickyAssignor()}
    subs = {"C0": ["t0"], "C1": ["t0"]}
    assert rebalance(group, subs, parts, 1) == {"C0": tps(("t0", 0), ("t0", 1), ("t0", 2), ("t0", 3))}
    group["C1"] = CooperativeStickyAssignor()
    round1 = rebalance(group, subs, parts, 2)
    assert len(round1["C0"]) == 2 and round1["C1"] == []  # the moving partitions are withheld first
    round2 = rebalance(group, subs, parts, 3)
    assert set(round2["C0"]) == set(round1["C0"]) and len(round2["C1"]) == 2


def test_cooperative_owned_partitions_follow_javas_join_prepare():
    """Seeded rounds of subscription changes: each JoinGroup carries what a Java consumer still owns after its
    COOPERATIVE onJoinPrepare (its last assignment minus the partitions of topics it no longer subscribes to),
    tracked here from the SyncGroup answers alone; an eager-only assignor carries none."""
    import random

    rng = random.Random(13)
    parts = {"t0": 3, "t1": 2, "t2": 4}
    group = {m: CooperativeStickyAssignor() for m in ("C0", "C1", "C2")}
    eager = StickyAssignor()
    held = {m: [] for m in group}
    for generation in range(1, 30):
        subs = {m: sorted(rng.sample(sorted(parts), rng.randint(1, 3))) for m in group}
        for m, assignor in group.items():
            sent = decode_subscription(assignor.metadata(set(subs[m])).encode())
            expected = sorted(tp for tp in held[m] if tp.topic in subs[m])
            assert sorted(sent.owned_partitions) == expected, (generation, m)
        eager.on_assignment(ConsumerProtocolAssignment(version=3, assigned_partitions=[("t0", [0])], user_data=None),
                            generation)
        assert decode_subscription(eager.metadata({"t1"}).encode()).owned_partitions == ()
        held = rebalance(group, subs, parts, generation)
        owners = [tp for a in held.values() for tp in a]
        assert len(owners) == len(set(owners)), generation  # no partition handed to two members
