"""What the elected leader does with the JoinGroup member list (spec §6.5, ``ConsumerCoordinator.onLeaderElected``).

1. decode every member's subscription bytes (owned partitions and generation read per assignor, §6.6);
2. run the selected assignor through the engine, ``kafkagroup.assign(name, partitions_per_topic,
   subscriptions, strict=False)`` -- the cooperative-sticky result already withholds every partition that
   changes owner (§6.6 step 4);
3. under COOPERATIVE with any other assignor, check that no partition is assigned while it is revoked from
   another member in the same round (``validateCooperativeAssignment``);
4. encode one ConsumerProtocol Assignment per member, members without partitions included.

A plug-in assignor object whose ``name`` is not a built-in protocol is called through kafka-python's
interface (``kafkagroup.assignors.PartitionAssignor``): ``assign(partitions_per_topic, {member_id:
Subscription}, group_instance_ids=...) -> {member_id: Assignment}``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from kafkagroup.client.cluster import MetadataSnapshot
from kafkagroup.client.ownership import validate_cooperative_assignment
from kafkagroup.client.rebalance_protocol import BUILTIN_ASSIGNOR_PROTOCOLS, RebalanceProtocol, assignor_name
from kafkagroup.client.wire import MemberSubscription, build_assignment_bytes, parse_member_subscription
from kafkagroup.errors import InvalidGroupError
from kafkagroup.structs import TopicPartition

__all__ = ["LeaderAssignment", "decode_members", "perform_assignment"]


@dataclass
class LeaderAssignment:
    """The leader's output for one generation."""

    assignments: dict[str, bytes]                    # member id -> ConsumerProtocol Assignment bytes
    partitions: dict[str, list[TopicPartition]]      # the same, decoded
    withheld: list[TopicPartition] = field(default_factory=list)
    subscriptions: dict[str, MemberSubscription] = field(default_factory=dict)
    metrics: Any = None                              # kafkagroup.Metrics for built-in assignors
    engine_us: float = 0.0


def decode_members(protocol: str, members: Sequence[Any]) -> dict[str, MemberSubscription]:
    """JoinGroupResponse members (member_id, group_instance_id, metadata) to subscriptions, in list order."""
    out: dict[str, MemberSubscription] = {}
    for m in members:
        if m.member_id in out:
            raise InvalidGroupError(f"JoinGroup member list names member {m.member_id!r} twice")
        out[m.member_id] = parse_member_subscription(protocol, m.member_id, m.group_instance_id, m.metadata)
    return out


def perform_assignment(
    assignor: Any,
    members: Sequence[Any],
    snapshot: MetadataSnapshot,
    rebalance_protocol: RebalanceProtocol,
    *,
    use_racks: bool = False,
) -> LeaderAssignment:
    """Run ``assignor`` over the JoinGroup member list with the leader's metadata snapshot."""
    name = assignor_name(assignor)
    subscriptions = decode_members(name, members)
    subscribed: set[str] = set()
    for sub in subscriptions.values():
        subscribed.update(sub.topics)
    # Kafka's assignors skip subscribed topics that are missing from the metadata.
    partitions_per_topic = {t: snapshot.partitions[t] for t in sorted(subscribed) if t in snapshot.partitions}
    racks: Optional[Mapping[str, Any]] = None
    if use_racks and snapshot.racks:
        racks = {t: [list(r) for r in snapshot.racks[t]] for t in partitions_per_topic if t in snapshot.racks}
    engine_subs = {mid: sub.as_engine_dict() for mid, sub in subscriptions.items()}

    withheld: list[TopicPartition] = []
    user_data: dict[str, bytes] = {}
    metrics: Any = None
    engine_us = 0.0
    if isinstance(assignor, str) or name in BUILTIN_ASSIGNOR_PROTOCOLS:
        from kafkagroup.api import assign  # the engine; imported here so the client loads without _core

        result = assign(name, partitions_per_topic, engine_subs, partition_racks=racks or None, strict=False)
        partitions = {mid: list(result.assignment.get(mid, ())) for mid in subscriptions}
        withheld, metrics, engine_us = list(result.withheld), result.metrics, result.engine_us
    else:
        plugin = getattr(assignor, "assign", None)
        if plugin is None:
            raise InvalidGroupError(f"assignor {name!r} is not built in and has no assign(cluster, members)")
        instances = {mid: s.instance for mid, s in subscriptions.items() if s.instance is not None}
        raw = plugin(partitions_per_topic, {mid: s.raw for mid, s in subscriptions.items()},
                     group_instance_ids=instances)
        unknown = set(raw) - set(subscriptions)
        if unknown:
            raise InvalidGroupError(f"assignor {name!r} assigned to unknown member(s) {sorted(unknown)}")
        partitions = {}
        for mid in subscriptions:
            got = raw.get(mid)
            partitions[mid] = [TopicPartition(t, p) for t, p in (got.partitions if got is not None else ())]
            if got is not None and got.user_data is not None:
                user_data[mid] = got.user_data

    if rebalance_protocol is RebalanceProtocol.COOPERATIVE and name != "cooperative-sticky":
        # the built-in cooperative-sticky assignor already handles ownership transfer; others are checked
        validate_cooperative_assignment({m: s.owned for m, s in subscriptions.items()}, partitions)

    assignments = {mid: build_assignment_bytes(parts, user_data.get(mid)) for mid, parts in partitions.items()}
    return LeaderAssignment(assignments, partitions, withheld, subscriptions, metrics, engine_us)
