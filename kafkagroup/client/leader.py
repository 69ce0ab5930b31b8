"""What the elected leader does with the JoinGroup member list (spec §6.5, ``ConsumerCoordinator.onLeaderElected``).

Built-in assignors (range, roundrobin, sticky, cooperative-sticky) take the bulk path, with no
per-partition Python object:

1. :func:`kafkagroup.protocol.leader.decode_group` turns every member's Subscription bytes into the engine's
   compact arrays (owned partitions and generation read by each assignor's own rule, §6.6; bad claims
   dropped as a Java leader drops them);
2. :func:`kafkagroup.assign_arrays` runs the assignor -- the cooperative-sticky result already withholds every
   partition that changes owner (§6.6 step 4);
3. under COOPERATIVE with any other assignor, no partition may be assigned while it is revoked from another
   member in the same round (``validateCooperativeAssignment``, checked on the arrays);
4. :func:`kafkagroup.protocol.leader.encode_assignments` writes one ConsumerProtocol Assignment per member.

A plug-in assignor object whose ``name`` is not a built-in protocol is called through kafka-python's
interface (``kafkagroup.assignors.PartitionAssignor``): ``assign(partitions_per_topic, {member_id:
Subscription}, group_instance_ids=...) -> {member_id: Assignment}``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from kafkagroup.client.cluster import MetadataSnapshot
from kafkagroup.client.ownership import (
    CooperativeAssignmentViolation,
    cooperative_violations,
    validate_cooperative_assignment,
)
from kafkagroup.client.rebalance_protocol import BUILTIN_ASSIGNOR_PROTOCOLS, RebalanceProtocol, assignor_name
from kafkagroup.client.wire import build_assignment_bytes, parse_member_subscription
from kafkagroup.errors import InvalidGroupError
from kafkagroup.structs import TopicPartition

__all__ = ["LeaderAssignment", "perform_assignment"]


@dataclass
class LeaderAssignment:
    """The leader's output for one generation."""

    assignments: dict[str, bytes]                  # member id -> ConsumerProtocol Assignment bytes
    group_topics: frozenset[str]                   # every topic some member subscribes to
    withheld: int = 0                              # partitions held back (cooperative-sticky)
    metrics: Any = None                            # kafkagroup.Metrics (built-in assignors)
    engine_us: float = 0.0
    unknown_topics: list[str] = field(default_factory=list)


def perform_assignment(
    assignor: Any,
    members: Sequence[Any],
    snapshot: MetadataSnapshot,
    rebalance_protocol: RebalanceProtocol,
    *,
    use_racks: bool = False,
) -> LeaderAssignment:
    """Run ``assignor`` over the JoinGroup member list (objects with member_id, group_instance_id, metadata)."""
    name = assignor_name(assignor)
    joined = [(m.member_id, m.group_instance_id, bytes(m.metadata)) for m in members]
    racks: Optional[Mapping[str, Any]] = None
    if use_racks and snapshot.racks:
        racks = {t: [list(r) for r in per_p] for t, per_p in snapshot.racks.items()}
    check = rebalance_protocol is RebalanceProtocol.COOPERATIVE and name != "cooperative-sticky"
    if isinstance(assignor, str) or name in BUILTIN_ASSIGNOR_PROTOCOLS:
        return _assign_builtin(name, joined, snapshot, racks, check)
    return _assign_plugin(assignor, name, joined, snapshot, check)


def _assign_builtin(name: str, joined: list, snapshot: MetadataSnapshot, racks: Any, check: bool) -> LeaderAssignment:
    from kafkagroup.engine import assign_arrays       # native engine, loaded on first use
    from kafkagroup.protocol.leader import decode_group, encode_assignments

    group = decode_group(joined, dict(snapshot.partitions), assignor=name, partition_racks=racks)
    result = assign_arrays(name, **group.arrays())
    if check:
        bad = cooperative_violations(group.owned_offsets, group.owned_partitions, result.owner)
        if bad.size:
            topics, partitions = group.partition_names(bad[:10])
            sample = ", ".join(f"{t}-{p}" for t, p in zip(topics, partitions))
            raise CooperativeAssignmentViolation(
                "Assignor supporting the COOPERATIVE protocol violates its requirements: "
                f"{bad.size} partition(s) assigned while being revoked from another member in the same "
                f"rebalance ({sample})"
            )
    assignments = encode_assignments(group, result.owner)
    return LeaderAssignment(
        assignments=assignments,
        group_topics=frozenset(group.topics) | frozenset(group.unknown_topics),
        withheld=int(result.withheld.shape[0]),
        metrics=result.metrics,
        engine_us=result.engine_us,
        unknown_topics=list(group.unknown_topics),
    )


def _assign_plugin(assignor: Any, name: str, joined: list, snapshot: MetadataSnapshot, check: bool) -> LeaderAssignment:
    plugin = getattr(assignor, "assign", None)
    if plugin is None:
        raise InvalidGroupError(f"assignor {name!r} is not built in and has no assign(cluster, members)")
    subscriptions = {}
    for member_id, instance, metadata in joined:
        if member_id in subscriptions:
            raise InvalidGroupError(f"JoinGroup member list names member {member_id!r} twice")
        subscriptions[member_id] = parse_member_subscription(name, member_id, instance, metadata)
    topics = frozenset(t for s in subscriptions.values() for t in s.topics)
    cluster = {t: snapshot.partitions[t] for t in sorted(topics) if t in snapshot.partitions}
    instances = {mid: s.instance for mid, s in subscriptions.items() if s.instance is not None}
    raw = plugin(cluster, {mid: s.raw for mid, s in subscriptions.items()}, group_instance_ids=instances)
    unknown = set(raw) - set(subscriptions)
    if unknown:
        raise InvalidGroupError(f"assignor {name!r} assigned to unknown member(s) {sorted(unknown)}")
    partitions: dict[str, list[TopicPartition]] = {}
    user_data: dict[str, bytes] = {}
    for mid in subscriptions:
        got = raw.get(mid)
        partitions[mid] = [TopicPartition(t, p) for t, p in (got.partitions if got is not None else ())]
        if got is not None and got.user_data is not None:
            user_data[mid] = got.user_data
    if check:
        validate_cooperative_assignment({m: s.owned for m, s in subscriptions.items()}, partitions)
    assignments = {mid: build_assignment_bytes(parts, user_data.get(mid)) for mid, parts in partitions.items()}
    return LeaderAssignment(assignments=assignments, group_topics=topics,
                            unknown_topics=sorted(topics - set(snapshot.partitions)))
