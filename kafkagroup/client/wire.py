"""The member's JoinGroup metadata and SyncGroup assignments as real Kafka bytes (ConsumerProtocol v3).

What a Java consumer puts in its JoinGroup protocol metadata for each configured assignor (spec §6.2):
``Subscription(topics, user_data, owned_partitions, generation_id, rack_id)``, built by the assignor object
(:meth:`kafkagroup.assignors.PartitionAssignor.metadata`), which also keeps what its user data needs (the
sticky assignors' last assignment and generation, updated in ``on_assignment`` as Java's ``onAssignment``
does). This module only turns it into bytes and reads the SyncGroup answer.
"""
from __future__ import annotations

from typing import AbstractSet, Optional

from kafkagroup.assignors.base import PartitionAssignor
from kafkagroup.protocol import Assignment, decode_assignment, decode_subscription, encode_subscription
from kafkagroup.structs import TopicPartition

__all__ = ["build_subscription_bytes", "parse_assignment", "subscribed_topics_of"]


def build_subscription_bytes(
    assignor: PartitionAssignor,
    topics: AbstractSet[str],
    owned: AbstractSet[TopicPartition],
    generation: int,
    rack: Optional[str],
) -> bytes:
    """JoinGroup metadata for one assignor: ``ConsumerProtocol.serializeSubscription`` (v3) bytes."""
    return encode_subscription(assignor.metadata(topics, owned, generation, rack))


def subscribed_topics_of(member_id: str, metadata: bytes) -> tuple[str, ...]:
    """The topics in one member's JoinGroup metadata (ProtocolError names the member when the bytes are bad)."""
    return tuple(decode_subscription(metadata, f"JoinGroup metadata of member {member_id!r}").topics)


def parse_assignment(data: bytes, member_id: str) -> Assignment:
    """A SyncGroup assignment, partitions in the order sent (ProtocolError names the member and byte offset if
    malformed); the member's assignor gets it as is in ``on_assignment``, as Java's ``onAssignment`` does."""
    return decode_assignment(data, f"SyncGroup assignment of member {member_id!r}")
