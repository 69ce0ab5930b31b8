"""What the elected leader does with the JoinGroup member list (spec §6.5, ``ConsumerCoordinator.onLeaderElected``).

One path for every assignor, built-in or written in Python:

1. the assignor object's :meth:`~kafkagroup.assignors.PartitionAssignor.assign_group` decodes the members'
   Subscription bytes into the compact group (owned partitions and generation read by the assignor's own
   ``member_data_rule``, §6.6; bad claims dropped as a Java leader drops them) and assigns -- the native
   built-ins on the engine's arrays (``owner[]``, no per-partition Python object; the cooperative-sticky
   result already withholds every partition that changes owner, §6.6 step 4), a Python assignor through its
   ``assign(cluster, {member_id: Subscription})``, with as many owners per partition as it likes;
2. under COOPERATIVE, unless the assignor checks its own moves (Java's cooperative-sticky), no partition may be
   assigned while it is revoked from another member in the same round (``validateCooperativeAssignment``),
   revoked meaning owned *as the member's Subscription sent it* (partitions of topics it no longer subscribes
   to included, as Java's leader compares). Kafka checks nothing more: a partition given to several members
   is sent as assigned;
3. one ConsumerProtocol Assignment per member is encoded.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from kafkagroup.assignors.configured import as_assignor
from kafkagroup.client.cluster import MetadataSnapshot
from kafkagroup.client.ownership import validate_cooperative_assignment
from kafkagroup.client.rebalance_protocol import RebalanceProtocol
from kafkagroup.protocol import decode_subscription

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
    """Run ``assignor`` (an assignor object, or anything :func:`~kafkagroup.assignors.as_assignor` takes) over
    the JoinGroup member list (objects with member_id, group_instance_id, metadata)."""
    assignor = as_assignor(assignor)
    joined = [(m.member_id, m.group_instance_id, bytes(m.metadata)) for m in members]
    racks: Optional[Mapping[str, Any]] = None
    if use_racks and snapshot.racks:
        racks = {t: [list(r) for r in per_p] for t, per_p in snapshot.racks.items()}
    result = assignor.assign_group(joined, dict(snapshot.partitions), partition_racks=racks)
    if rebalance_protocol is RebalanceProtocol.COOPERATIVE and not assignor.checks_own_cooperative_moves:
        subscriptions = result.subscriptions or {
            member_id: decode_subscription(metadata, f"JoinGroup metadata of member {member_id!r}")
            for member_id, _, metadata in joined}
        validate_cooperative_assignment({m: s.owned_partitions for m, s in subscriptions.items()}, result)
    group = result.group
    return LeaderAssignment(
        assignments=result.encode(),
        group_topics=frozenset(group.topics) | frozenset(group.unknown_topics),
        withheld=result.withheld,
        metrics=result.metrics,
        engine_us=result.engine_us,
        unknown_topics=list(group.unknown_topics),
    )
