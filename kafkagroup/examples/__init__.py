"""Custom assignors written in Python, the two classic examples (README: "Writing your own assignor").

- :class:`~kafkagroup.examples.random_assignor.RandomAssignor` -- each partition to a random member
  subscribed to its topic;
- :class:`~kafkagroup.examples.broadcast_assignor.BroadcastAssignor` -- every member gets every partition
  of its topics (one partition, many owners; EAGER only).

Hand either to a member as ``partition.assignment.strategy`` (a class or an instance); the group's leader
runs it through the same call as the built-in assignors (:meth:`kafkagroup.assignors.PartitionAssignor.assign_group`).
"""
from kafkagroup.examples.broadcast_assignor import BroadcastAssignor
from kafkagroup.examples.random_assignor import RandomAssignor

__all__ = ["BroadcastAssignor", "RandomAssignor"]
