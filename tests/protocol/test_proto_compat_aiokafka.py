"""kafkagroup.compat.aiokafka, driven the way aiokafka's group coordinator drives an assignor:
metadata(topics) (bytes) in JoinGroup; the leader decodes every member with ConsumerProtocol.METADATA
and calls assign(cluster, {member_id: metadata}); each member decodes its ConsumerProtocol.ASSIGNMENT
and calls on_assignment(assignment)."""
from __future__ import annotations

import pytest

import aiokafka  # the test extra installs it; a missing client must fail, not skip

from aiokafka.cluster import ClusterMetadata  # noqa: E402
from aiokafka.coordinator.protocol import ConsumerProtocol  # noqa: E402
from aiokafka.protocol.metadata import MetadataResponse_v0  # noqa: E402

from kafkagroup.compat.aiokafka import RangeAssignor, RoundRobinAssignor, StickyAssignor  # noqa: E402
from kafkagroup.protocol import Subscription, decode_subscription, encode_subscription, sticky_user_data  # noqa: E402
from kafkagroup.structs import TopicPartition  # noqa: E402


def cluster(partitions: dict[str, int]) -> ClusterMetadata:
    metadata = ClusterMetadata()
    metadata.update_metadata(MetadataResponse_v0(
        brokers=[(0, "localhost", 9092)],
        topics=[(0, topic, [(0, p, 0, [0], [0]) for p in range(count)]) for topic, count in partitions.items()]))
    return metadata


def rebalance(assignors: dict[str, object], topics: dict[str, list[str]], partitions: dict[str, int]):
    joined = {m: a.metadata(set(topics[m])) for m, a in assignors.items()}
    joined = {m: (b if isinstance(b, bytes) else b.encode()) for m, b in joined.items()}
    member_metadata = {m: ConsumerProtocol.METADATA.decode(b) for m, b in joined.items()}
    leader = next(iter(assignors.values()))
    sync = {m: a.encode() for m, a in leader.assign(cluster(partitions), member_metadata).items()}
    out = {}
    for member_id, assignor in assignors.items():
        assignment = ConsumerProtocol.ASSIGNMENT.decode(sync[member_id])
        assignor.on_assignment(assignment)
        out[member_id] = [TopicPartition(tp.topic, tp.partition) for tp in assignment.partitions()]
    return out


def tps(*pairs):
    return [TopicPartition(t, p) for t, p in pairs]


def test_metadata_is_a_java_subscription_aiokafka_can_read():
    blob = RoundRobinAssignor().metadata({"foo", "bar"})
    assert blob == encode_subscription(Subscription(["bar", "foo"]), 3)
    assert ConsumerProtocol.METADATA.decode(blob).subscription == ["bar", "foo"]


def test_range_roundrobin_through_aiokafka_objects():
    subs = {"C0": ["t0", "t1"], "C1": ["t0", "t1"]}
    parts = {"t0": 3, "t1": 3}
    assert rebalance({m: RangeAssignor() for m in subs}, subs, parts) == {
        "C0": tps(("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)), "C1": tps(("t0", 2), ("t1", 2))}
    # different subscriptions: Java's roundrobin skips members not subscribed to a topic
    subs = {"C0": ["t0"], "C1": ["t0", "t1"]}
    assert rebalance({m: RoundRobinAssignor() for m in subs}, subs, {"t0": 3, "t1": 2}) == {
        "C0": tps(("t0", 0), ("t0", 2)), "C1": tps(("t0", 1), ("t1", 0), ("t1", 1))}


def test_sticky_state_per_instance_and_user_data():
    group = {m: StickyAssignor() for m in ("C0", "C1", "C2")}
    subs = {m: ["t0"] for m in group}
    first = rebalance(group, subs, {"t0": 6})
    group["C0"].on_generation_assignment(4)
    sent = decode_subscription(group["C0"].metadata({"t0"}))
    assert sent.user_data == sticky_user_data(first["C0"], 4)
    del group["C2"]
    second = rebalance(group, subs, {"t0": 6})
    for member in group:
        assert set(first[member]) <= set(second[member]) and len(second[member]) == 3


def test_used_as_classes_like_aiokafka_default():
    class Sticky(StickyAssignor):  # a fresh subclass: class-level state of its own
        pass
    assert decode_subscription(Sticky.metadata({"t0"})).user_data is None
    Sticky.on_assignment(ConsumerProtocol.ASSIGNMENT(3, [("t0", [1])], None))
    assert decode_subscription(Sticky.metadata({"t0"})).user_data == sticky_user_data(tps(("t0", 1)), -1)
    assert decode_subscription(Sticky().metadata({"t0"})).user_data is None  # instances do not share it
