"""kafkagroup: Kafka consumer-group rebalancing with a native engine.

>>> import kafkagroup
>>> kafkagroup.assign("roundrobin", {"t0": 3}, {"C0": {"topics": ["t0"]}, "C1": {"topics": ["t0"]}}).assignment
{'C0': [t0-0, t0-2], 'C1': [t0-1]}

The Spark layer (``kafkagroup.spark``) is optional and never imported from here.
"""
from kafkagroup.api import AssignmentResult, assign
from kafkagroup.batch import BatchResult, GroupBatch, assign_many
from kafkagroup.engine import ArrayResult, Metrics, assign_arrays, strategies
from kafkagroup.errors import InvalidGroupError, InvariantError, KafkaGroupError, ProtocolError
from kafkagroup.model import CompactGroup, Member, build_group
from kafkagroup.structs import TopicPartition

__version__ = "0.1.0"

__all__ = [
    "ArrayResult", "AssignmentResult", "BatchResult", "CompactGroup", "GroupBatch", "InvalidGroupError", "InvariantError", "KafkaGroupError",
    "Member", "Metrics", "ProtocolError", "TopicPartition", "assign", "assign_arrays", "assign_many", "build_group", "strategies",
]
