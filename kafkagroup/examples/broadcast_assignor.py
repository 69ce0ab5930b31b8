"""A broadcast assignor: every member gets every partition of every topic it subscribes to.

Each member then reads the whole topic while still being a member of a group (liveness, a list of who is
there, rebalance callbacks) -- e.g. every instance of a service loading a full cache or config topic.
One partition has many owners, which Kafka's classic protocol allows: the leader sends what the assignor
returns, and only the COOPERATIVE protocol's check (no partition added to one member while revoked from
another) applies.  This assignor supports only EAGER, as the classic examples do.

The catch: committed offsets belong to the group, one per partition.  Members that commit to the group
overwrite each other's offsets, and a member that restarts resumes from whichever member committed last.
Keep offsets per member instead (README: "Writing your own assignor" shows two ways)::

    >>> from kafkagroup.protocol import Subscription
    >>> result = BroadcastAssignor().assign({"t0": 2, "t1": 1},
    ...                                     {"C0": Subscription(["t0", "t1"]), "C1": Subscription(["t0"])})
    >>> result["C0"].partitions, result["C1"].partitions
    ((t0-0, t0-1, t1-0), (t0-0, t0-1))
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from kafkagroup.assignors.base import PartitionAssignor, partition_counts
from kafkagroup.protocol import Assignment
from kafkagroup.structs import TopicPartition


class BroadcastAssignor(PartitionAssignor):
    """Every partition of a member's topics to that member (topics the metadata does not know are skipped)."""

    name = "broadcast"

    def assign(self, cluster: Any, members: Mapping[str, Any], *,
               group_instance_ids: Optional[Mapping[str, str]] = None) -> dict[str, Assignment]:
        counts = partition_counts(cluster, {t for subscription in members.values() for t in subscription.topics})
        return {
            member_id: Assignment([TopicPartition(topic, p) for topic in sorted(set(subscription.topics))
                                   if topic in counts for p in range(counts[topic])])
            for member_id, subscription in members.items()
        }
