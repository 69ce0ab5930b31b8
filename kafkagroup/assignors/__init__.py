"""Assignor classes by Kafka protocol name, with kafka-python's plug-in interface (see base.py)."""
from kafkagroup.assignors.base import (
    PartitionAssignor, RebalanceProtocol, assignor_names, cluster_topics, get_assignor, register,
)
from kafkagroup.assignors.range import RangePartitionAssignor
from kafkagroup.assignors.roundrobin import RoundRobinPartitionAssignor
from kafkagroup.assignors.sticky import CooperativeStickyAssignor, StickyPartitionAssignor

__all__ = [
    "CooperativeStickyAssignor", "PartitionAssignor", "RangePartitionAssignor", "RebalanceProtocol",
    "RoundRobinPartitionAssignor", "StickyPartitionAssignor",
    "assignor_names", "cluster_topics", "get_assignor", "register",
]
