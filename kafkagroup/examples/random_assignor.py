"""A random assignor: each partition to a member drawn at random among the members subscribed to its topic.

It shows the least a custom assignor needs -- a ``name`` and ``assign`` -- and is the usual baseline when
judging an assignment algorithm (no balance, no stickiness: after a rebalance about (n-1)/n of the partitions
move). Seeded, it is reproducible::

    >>> from kafkagroup.protocol import Subscription
    >>> a = RandomAssignor(seed=7)
    >>> result = a.assign({"t0": 4}, {"C0": Subscription(["t0"]), "C1": Subscription(["t0"])})
    >>> sorted(tp for asg in result.values() for tp in asg.partitions)      # each partition exactly once
    [t0-0, t0-1, t0-2, t0-3]
"""
from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, Optional

from kafkagroup.assignors.base import PartitionAssignor, partition_counts
from kafkagroup.protocol import Assignment
from kafkagroup.structs import TopicPartition


class RandomAssignor(PartitionAssignor):
    """Each partition to a random subscriber of its topic; ``seed`` makes the draws reproducible.

    Members are drawn from in member-id order and topics are visited in name order, so the same seed and the
    same group give the same assignment whatever order the leader lists the members in.
    """

    name = "random"

    def __init__(self, seed: Optional[int] = None) -> None:
        self.random = random.Random(seed)

    def assign(self, cluster: Any, members: Mapping[str, Any], *,
               group_instance_ids: Optional[Mapping[str, str]] = None) -> dict[str, Assignment]:
        subscribers: dict[str, list[str]] = {}
        for member_id in sorted(members):
            for topic in set(members[member_id].topics):
                subscribers.setdefault(topic, []).append(member_id)
        assigned: dict[str, list[TopicPartition]] = {member_id: [] for member_id in members}
        for topic, count in sorted(partition_counts(cluster, subscribers).items()):
            for partition in range(count):
                assigned[self.random.choice(subscribers[topic])].append(TopicPartition(topic, partition))
        return {member_id: Assignment(partitions) for member_id, partitions in assigned.items()}
