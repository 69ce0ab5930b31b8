"""Kafka's RoundRobinAssignor ("roundrobin"), native: all partitions in (topic, partition) order dealt
to members in MemberInfo order, skipping members not subscribed to the partition's topic.

C0, C1 on t0, t1 with 3 partitions each: ``C0: t0-0 t0-2 t1-1``, ``C1: t0-1 t1-0 t1-2``.
"""
from __future__ import annotations

from kafkagroup.assignors.base import register
from kafkagroup.assignors.native import NativeAssignor


@register
class RoundRobinPartitionAssignor(NativeAssignor):
    name = "roundrobin"
