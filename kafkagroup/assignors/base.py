"""The assignor plug-in interface, shaped like kafka-python's ``AbstractPartitionAssignor``.

An assignor has a protocol ``name`` (what JoinGroup carries), ``supported_protocols()`` (KIP-429
rebalance protocols), ``metadata(topics)`` (the Subscription a Java consumer of the same assignor sends),
``assign(cluster, members)`` (the leader's job) and ``on_assignment(assignment, generation)`` (what a
member remembers for the next round). The work itself is one call into the native engine.

>>> from kafkagroup.assignors import get_assignor
>>> a = get_assignor("range")
>>> a.assign({"t0": 2}, {"C0": Subscription(["t0"]), "C1": Subscription(["t0"])})["C1"].partitions
(t0-1,)
"""
from __future__ import annotations

from abc import ABC
from collections.abc import Iterable, Mapping
from enum import IntEnum
from typing import Any, ClassVar

from kafkagroup.api import assign as assign_names
from kafkagroup.errors import InvalidGroupError
from kafkagroup.model import Member, TopicSpec, normalize_member
from kafkagroup.protocol import Assignment, Subscription
from kafkagroup.protocol.user_data import member_owned_and_generation
from kafkagroup.structs import TopicPartition


class RebalanceProtocol(IntEnum):
    """KIP-429 rebalance protocols (Java's ConsumerPartitionAssignor.RebalanceProtocol ids)."""

    EAGER = 0
    COOPERATIVE = 1


_REGISTRY: dict[str, type[PartitionAssignor]] = {}


def register(cls: type[PartitionAssignor]) -> type[PartitionAssignor]:
    """Class decorator: make an assignor available by its protocol name."""
    _REGISTRY[cls.name] = cls
    return cls


def get_assignor(name: str) -> PartitionAssignor:
    """A new assignor instance for a protocol name ("range", "roundrobin", ...)."""
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise InvalidGroupError(f"unknown assignor {name!r}; known: {sorted(_REGISTRY)}") from None


def assignor_names() -> list[str]:
    return list(_REGISTRY)


def cluster_topics(cluster: Any, topics: Iterable[str]) -> dict[str, TopicSpec]:
    """Partition counts (or replica racks) of `topics` from a mapping or a kafka-python-like ClusterMetadata.

    Topics the cluster does not know are left out, as Kafka's AbstractPartitionAssignor does.
    """
    out: dict[str, TopicSpec] = {}
    if isinstance(cluster, Mapping):
        for t in topics:
            if t in cluster:
                out[t] = cluster[t]
        return out
    partitions_for_topic = getattr(cluster, "partitions_for_topic", None)
    if partitions_for_topic is None:
        raise InvalidGroupError("cluster must be a mapping topic -> partitions or have partitions_for_topic()")
    for t in topics:
        parts = partitions_for_topic(t)
        if parts:
            out[t] = len(parts)
    return out


class PartitionAssignor(ABC):
    """Base of kafkagroup's assignors; subclasses set ``name`` and, if needed, override the hooks."""

    name: ClassVar[str]
    version: ClassVar[int] = 0

    def supported_protocols(self) -> list[RebalanceProtocol]:
        return [RebalanceProtocol.EAGER]

    def subscription_user_data(self, topics: Iterable[str]) -> bytes | None:
        """User data a Java consumer of this assignor puts in its Subscription (none by default)."""
        return None

    def metadata(self, topics: Iterable[str]) -> Subscription:
        """The Subscription this member sends in JoinGroup (its owned partitions are the member's to add)."""
        return Subscription(sorted(topics), user_data=self.subscription_user_data(topics))

    def on_assignment(self, assignment: Assignment, generation: int = -1) -> None:
        """Remember what the next Subscription needs (nothing for stateless assignors)."""

    def member(self, member_id: str, subscription: Any, instance_id: str | None = None) -> Member:
        """How this assignor reads a member: topics, and owned partitions + generation by its own rules."""
        if isinstance(subscription, Subscription):
            owned, generation = member_owned_and_generation(subscription, self.name)
            return Member(member_id, tuple(subscription.topics), tuple((tp.topic, tp.partition) for tp in owned),
                          generation, subscription.rack_id or None, instance_id)
        m = normalize_member(member_id, subscription)
        return m if instance_id is None else Member(m.member_id, m.topics, m.owned, m.generation, m.rack, instance_id)

    def assign(self, cluster: Any, members: Mapping[str, Any], *,
               group_instance_ids: Mapping[str, str] | None = None) -> dict[str, Assignment]:
        """The leader's assignment: member id -> Assignment, for every member.

        `cluster` maps topic -> partition count (or replica racks), or is a ClusterMetadata-like object;
        `members` maps member id -> Subscription (or the dict form of :func:`kafkagroup.assign`).
        Owned claims that no longer fit the metadata are dropped, as a Java leader does.
        """
        instance = group_instance_ids or {}
        parsed = {mid: self.member(mid, sub, instance.get(mid)) for mid, sub in members.items()}
        topics = {t for m in parsed.values() for t in m.topics}
        result = assign_names(self.name, cluster_topics(cluster, topics), parsed, strict=False)
        return {mid: Assignment(tps, user_data=self.assignment_user_data(tps))
                for mid, tps in result.assignment.items()}

    def assignment_user_data(self, partitions: list[TopicPartition]) -> bytes | None:
        """User data in each member's Assignment (none for Kafka's built-in assignors)."""
        return None
