"""The member's JoinGroup metadata and SyncGroup assignments as real Kafka bytes (ConsumerProtocol v3).

What a Java consumer puts in its JoinGroup protocol metadata for each configured assignor (spec §6.2):
``Subscription(topics, user_data, owned_partitions, generation_id, rack_id)`` where ``user_data`` is the
assignor's own (:mod:`kafkagroup.protocol.user_data`): none for range/roundrobin, the previous assignment and
generation for sticky, the generation for cooperative-sticky.  The assignor-side state behind the user data
(last assignment, last generation) is what Java keeps in the assignor object and updates in
``onAssignment``; here it is :class:`AssignorState`, one per configured assignor.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import AbstractSet, Any, Optional, Sequence

from kafkagroup.protocol import (
    NO_GENERATION,
    Assignment,
    Subscription,
    cooperative_sticky_user_data,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    member_owned_and_generation,
    sticky_user_data,
)
from kafkagroup.structs import TopicPartition

__all__ = [
    "AssignorState",
    "MemberSubscription",
    "build_subscription_bytes",
    "parse_member_subscription",
    "build_assignment_bytes",
    "parse_assignment",
]


@dataclass
class AssignorState:
    """What an assignor remembers between rebalances (Java: fields set in ``onAssignment``).

    For a built-in protocol name the state is kept here; a plug-in assignor object (``plugin``, kafka-python's
    interface) keeps its own and is asked through ``subscription_user_data(topics)`` / ``on_assignment``.
    """

    name: str
    plugin: Any = None
    last_assignment: Optional[tuple[TopicPartition, ...]] = None   # sticky: None until the first assignment
    generation: int = NO_GENERATION

    def on_assignment(self, partitions: Sequence[TopicPartition], generation: int) -> None:
        self.last_assignment = tuple(partitions)
        self.generation = generation
        hook = getattr(self.plugin, "on_assignment", None)
        if hook is not None:
            hook(Assignment(list(partitions)), generation)

    def user_data(self, topics: AbstractSet[str]) -> Optional[bytes]:
        """``subscriptionUserData`` of the Java assignor with this name (or of the plug-in object)."""
        hook = getattr(self.plugin, "subscription_user_data", None)
        if hook is not None:
            return hook(sorted(topics))
        if self.name == "sticky":
            return sticky_user_data(self.last_assignment, self.generation)
        if self.name == "cooperative-sticky":
            return cooperative_sticky_user_data(self.generation)
        return None


@dataclass(frozen=True)
class MemberSubscription:
    """A member's subscription as the leader's assignor reads it (owned/generation per the assignor's rule)."""

    member_id: str
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()
    generation: int = NO_GENERATION
    rack: Optional[str] = None
    instance: Optional[str] = None
    raw: Optional[Subscription] = field(default=None, compare=False, repr=False)


def build_subscription_bytes(
    state: AssignorState,
    topics: AbstractSet[str],
    owned: AbstractSet[TopicPartition],
    generation: int,
    rack: Optional[str],
) -> bytes:
    """JoinGroup metadata for one assignor: ``ConsumerProtocol.serializeSubscription`` (v3) bytes."""
    subscription = Subscription(
        topics=sorted(topics),
        user_data=state.user_data(topics),
        owned_partitions=tuple(owned),          # any order: the encoder writes them in Java's order
        generation_id=generation,
        rack_id=rack,
    )
    return encode_subscription(subscription)


def parse_member_subscription(
    protocol: str, member_id: str, instance: Optional[str], metadata: bytes
) -> MemberSubscription:
    """Decode one member's metadata on the leader; ProtocolError names the member when the bytes are bad."""
    subscription = decode_subscription(metadata, f"JoinGroup metadata of member {member_id!r}")
    owned, generation = member_owned_and_generation(subscription, protocol)
    return MemberSubscription(
        member_id=member_id,
        topics=tuple(subscription.topics),
        owned=tuple(owned),
        generation=generation,
        rack=subscription.rack_id,
        instance=instance,
        raw=subscription,
    )


def build_assignment_bytes(partitions: Sequence[TopicPartition], user_data: Optional[bytes] = None) -> bytes:
    """SyncGroup assignment of one member (``serializeAssignment`` v3; Java's built-in assignors send no user data)."""
    return encode_assignment(Assignment(list(partitions), user_data))


def parse_assignment(data: bytes, member_id: str) -> list[TopicPartition]:
    """Partitions of a SyncGroup assignment (ProtocolError names the member and byte offset if malformed)."""
    return list(decode_assignment(data, f"SyncGroup assignment of member {member_id!r}").partitions)
