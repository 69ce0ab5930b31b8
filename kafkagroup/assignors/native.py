"""Kafka's built-in assignors, run by the native engine (csrc/): the base of range, roundrobin, sticky and
cooperative-sticky.

Two entry points over the same engine call: :meth:`NativeAssignor.assign` (kafka-python's interface,
Subscription objects in, Assignment objects out) and :meth:`NativeAssignor.assign_group` (the group
leader's bytes: members' metadata decoded straight into the engine's arrays, ``owner[]`` out, with no
per-partition Python object on the way).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kafkagroup.api import assign as assign_names
from kafkagroup.assignors.base import PartitionAssignor, cluster_topics
from kafkagroup.assignors.group_assignment import GroupAssignment
from kafkagroup import engine
from kafkagroup.model import TopicSpec
from kafkagroup.protocol import Assignment
from kafkagroup.protocol.leader import JoinedMember, decode_group


class NativeAssignor(PartitionAssignor):
    """An assignor whose ``name`` is one of the native engine's strategies."""

    def assign(self, cluster: Any, members: Mapping[str, Any], *,
               group_instance_ids: Mapping[str, str] | None = None) -> dict[str, Assignment]:
        """Every member's Assignment. Owned claims that no longer fit the metadata are dropped, as a Java
        leader drops them."""
        instance = group_instance_ids or {}
        parsed = {mid: self.member(mid, sub, instance.get(mid)) for mid, sub in members.items()}
        topics = {t for m in parsed.values() for t in m.topics}
        result = assign_names(self.name, cluster_topics(cluster, topics), parsed, strict=False)
        return {mid: Assignment(tps) for mid, tps in result.assignment.items()}

    def assign_group(self, members: Sequence[JoinedMember], partitions_per_topic: Mapping[str, TopicSpec], *,
                     partition_racks: Mapping[str, Any] | None = None) -> GroupAssignment:
        if type(self).assign is not NativeAssignor.assign:
            # a subclass computing its own assignment: its assign() must run, not the engine
            return super().assign_group(members, partitions_per_topic, partition_racks=partition_racks)
        group = decode_group(members, partitions_per_topic, assignor=self, partition_racks=partition_racks)
        result = engine.assign_arrays(self.name, **group.arrays())   # looked up per call: tests may swap it
        return GroupAssignment(group, owner=result.owner, withheld=int(result.withheld.shape[0]),
                               metrics=result.metrics, engine_us=result.engine_us)
