"""Requests and responses of the consumer group protocol (KIP-848): ConsumerGroupHeartbeat (API 68) and
ConsumerGroupDescribe (API 69), with Kafka's field names.  Topics are named by topic id (``uuid.UUID``)
in heartbeats, as on the wire; the describe answer carries both id and name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from kafkagroup.messages.error_codes import ErrorCode

__all__ = ["TopicPartitions", "ConsumerGroupHeartbeatRequest", "ConsumerGroupHeartbeatResponse",
           "ConsumerGroupDescribeRequest", "ConsumerGroupDescribeResponse", "DescribedConsumerGroup",
           "DescribedConsumerGroupMember", "DescribedTopicPartitions", "MEMBER_TYPE_CONSUMER", "MEMBER_TYPE_CLASSIC"]

MEMBER_TYPE_CLASSIC = 0      # ConsumerGroupDescribe v1 MemberType
MEMBER_TYPE_CONSUMER = 1


@dataclass(slots=True)
class TopicPartitions:
    topic_id: UUID
    partitions: list[int]


@dataclass(slots=True)
class ConsumerGroupHeartbeatRequest:
    """``None`` for a field means "not sent / unchanged" (Kafka's nullable fields); -1 for the timeout."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: list[TopicPartitions] | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 1


@dataclass(slots=True)
class ConsumerGroupHeartbeatResponse:
    error_code: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: list[TopicPartitions] | None = None     # None: unchanged (not sent)


@dataclass(slots=True)
class ConsumerGroupDescribeRequest:
    group_ids: list[str]
    include_authorized_operations: bool = False


@dataclass(slots=True)
class DescribedTopicPartitions:
    topic_id: UUID
    topic_name: str
    partitions: list[int]


@dataclass(slots=True)
class DescribedConsumerGroupMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    assignment: list[DescribedTopicPartitions]
    target_assignment: list[DescribedTopicPartitions]
    member_type: int = MEMBER_TYPE_CONSUMER


@dataclass(slots=True)
class DescribedConsumerGroup:
    error_code: ErrorCode
    group_id: str
    error_message: str | None = None
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: list[DescribedConsumerGroupMember] = field(default_factory=list)


@dataclass(slots=True)
class ConsumerGroupDescribeResponse:
    groups: list[DescribedConsumerGroup]
