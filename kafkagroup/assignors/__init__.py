"""Assignor classes by Kafka protocol name, with kafka-python's plug-in interface (see base.py).

- :mod:`.base` -- :class:`PartitionAssignor` (the interface, and the home of an assignor's state), the registry;
- :mod:`.native` -- :class:`NativeAssignor`, the base of the built-ins (:mod:`.range`, :mod:`.roundrobin`,
  :mod:`.sticky`) run by the native engine;
- :mod:`.group_assignment` -- :class:`GroupAssignment`, an assignor's answer for a decoded group;
- :mod:`.configured` -- :func:`as_assignor`: a ``partition.assignment.strategy`` entry as an assignor object.
"""
from kafkagroup.assignors.base import (
    PartitionAssignor, RebalanceProtocol, assignor_names, cluster_topics, get_assignor, partition_counts, register,
)
from kafkagroup.assignors.configured import PluginAssignor, as_assignor, assignor_name
from kafkagroup.assignors.group_assignment import GroupAssignment
from kafkagroup.assignors.native import NativeAssignor
from kafkagroup.assignors.range import RangePartitionAssignor
from kafkagroup.assignors.roundrobin import RoundRobinPartitionAssignor
from kafkagroup.assignors.sticky import CooperativeStickyAssignor, StickyPartitionAssignor

__all__ = [
    "CooperativeStickyAssignor", "GroupAssignment", "NativeAssignor", "PartitionAssignor", "PluginAssignor",
    "RangePartitionAssignor", "RebalanceProtocol", "RoundRobinPartitionAssignor", "StickyPartitionAssignor",
    "as_assignor", "assignor_name", "assignor_names", "cluster_topics", "get_assignor", "partition_counts",
    "register",
]
